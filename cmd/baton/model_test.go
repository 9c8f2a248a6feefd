package main

import (
	"strings"
	"testing"
)

func clearVendorEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"} {
		t.Setenv(k, "")
	}
}

// -llm live checks, before any call, that every vendor the pack's roles
// name has its key, and names each role and variable that is missing.
func TestDryrunLiveNamesMissingKeys(t *testing.T) {
	clearVendorEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	code, _, errs := runCLI(t, "dryrun", "-llm", "live", "brain")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"role claude uses anthropic: no API key: set ANTHROPIC_API_KEY", "role gemini uses gemini: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
	if strings.Contains(errs, "role gpt") {
		t.Errorf("stderr names a role whose key is set: %s", errs)
	}
}

func TestDryrunVendorFlags(t *testing.T) {
	clearVendorEnv(t)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-llm", "live", "-model", "x"}, 2, "--base-url and --model go with one vendor"},
		{[]string{"-llm", "openai"}, 1, "openai: no API key: set OPENAI_API_KEY"},
		{[]string{"-llm", "anthropic", "-base-url", "localhost:9"}, 1, `anthropic: base URL "localhost:9": want an http(s)`},
		{[]string{"-model", "x"}, 2, "--base-url and --model go with --llm gemini|openai|anthropic"},
	} {
		code, _, errs := runCLI(t, append(append([]string{"dryrun"}, tt.args...), "dayone")...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, errs, tt.want)
		}
	}
}

// --llm chaos plays the scripted model misbehaving, the same bytes for the
// same seed and other bytes for another (with the candidate's events
// fixed, the seed changes nothing else in DayOne); a misspelt
// misbehaviour is a usage error that names the nearest.
func TestDryrunChaos(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"dryrun", "--events", "../../scenarios/dayone/candidate.jsonl"}, args...)...)
	}
	code, out, errs := run("--llm", "chaos:label,markdown@1", "--seed", "3", "dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// What the model wrote is cleaned before it is said: the run shows
	// that it was.
	if !strings.Contains(out, "cleaned: markdown, speaker label") {
		t.Errorf("no line cleaned of markdown and a label in a run of chaos:label,markdown@1:\n%s", out)
	}
	if _, again, _ := run("--llm", "chaos:label,markdown@1", "--seed", "3", "dayone"); again != out {
		t.Error("the same seed printed different bytes")
	}
	if _, other, _ := run("--llm", "chaos:label,markdown@1", "--seed", "4", "dayone"); other == out {
		t.Error("seeds 3 and 4 printed the same bytes")
	}
	if _, plain, _ := run("--seed", "3", "dayone"); strings.Contains(plain, "cleaned:") {
		t.Error("markdown or labels without --llm chaos")
	}
	for _, tt := range []struct{ spec, want string }{
		{"chaos:lable", `"lable" is not a misbehaviour (did you mean label?) (misbehaviours: rate_limit,`},
		{"chaos@1.5", "above 0 and at most 1"},
	} {
		code, out, errs := runCLI(t, "dryrun", "--llm", tt.spec, "dayone")
		if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
			t.Errorf("--llm %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.spec, code, out, errs, tt.want)
		}
	}
}
