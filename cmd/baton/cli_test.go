package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

// Flags go before or after operands, in either spelling; the line that
// once ran the tests without updating them now updates them.
func TestFlagsAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"dryrun", "dayone", "-format", "jsonl"},
		{"dryrun", "dayone", "--format", "jsonl"},
		{"dryrun", "--format=jsonl", "dayone"},
		{"dryrun", "-format=jsonl", "dayone", "-v"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, `{"t_ms":`) {
			t.Errorf("%v: exit %d, stdout starts %.40q, stderr %s", args, code, out, errs)
		}
	}
	dir := copyPack(t, "dayone")
	golden := filepath.Join(dir, "tests", "builtin_candidate.golden")
	if err := os.WriteFile(golden, []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "test", dir, "-update")
	if code != 0 || !strings.Contains(out, "(golden updated)") {
		t.Fatalf("test DIR -update: exit %d\n%s\n%s", code, out, errs)
	}
	if b, _ := os.ReadFile(golden); string(b) == "stale\n" {
		t.Error("test DIR -update did not rewrite the golden file")
	}
}

func TestUnknownFlagSuggests(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dryrun", "dayone", "--formt", "jsonl"}, "unknown flag --formt (did you mean --format?)"},
		{[]string{"test", "-updte", "dayone"}, "unknown flag -updte (did you mean --update?)"},
		{[]string{"dryrun", "dayone", "--format"}, "flag --format needs a value"},
		{[]string{"dryon", "dayone"}, `unknown command "dryon" (did you mean dryrun?)`},
		{[]string{"dryrun", "--seed", "x", "dayone"}, `invalid value "x" for --seed`},
	} {
		code, out, errs := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errs, tt.want)
		}
	}
}

// Help that was asked for is on stdout with exit 0, for every command;
// help that explains a mistake is on stderr with exit 2.
func TestHelp(t *testing.T) {
	for _, cmd := range commands {
		for _, args := range [][]string{{cmd.name, "-h"}, {cmd.name, "--help"}, {"help", cmd.name}} {
			code, out, errs := runCLI(t, args...)
			if code != 0 || !strings.HasPrefix(out, "Usage: baton "+cmd.name) || errs != "" {
				t.Errorf("%v: exit %d, stdout %.60q, stderr %q", args, code, out, errs)
			}
		}
	}
	code, out, _ := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "baton dryrun PACK") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	code, out, errs := runCLI(t, "dryrun")
	if code != 2 || out != "" || !strings.Contains(errs, "baton dryrun: needs PACK") || !strings.Contains(errs, "Usage: baton dryrun") {
		t.Errorf("dryrun with no pack: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "schema", "extra")
	if code != 2 || !strings.Contains(errs, "takes no operands") {
		t.Errorf("schema extra: exit %d, stderr %q", code, errs)
	}
}

func TestCheckCountsFailures(t *testing.T) {
	code, out, errs := runCLI(t, "check", "nope1", "dayone", "nope2", "nope3")
	if code != 1 || !strings.Contains(errs, "3 of 4 pack(s) failed") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "dayone: ok") {
		t.Errorf("the good pack is not reported ok:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "baton ") || !strings.Contains(out, "baton-engine/") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: exit %d: %q", args, code, out)
		}
	}
}

// From a checkout, a bundled name runs the folder being edited, and the
// header says which copy ran.
func TestWorkspaceFolderWins(t *testing.T) {
	root := t.TempDir()
	dst := filepath.Join(root, "scenarios", "dayone")
	copyDir(t, "../../scenarios/dayone", dst)
	code, out, _ := runCLI(t, "dryrun", "dayone")
	if code != 0 || !strings.HasPrefix(out, "# dayone (bundled, ") {
		t.Fatalf("outside a checkout: exit %d, header %.60q", code, out)
	}
	t.Chdir(root)
	code, out, errs := runCLI(t, "dryrun", "dayone")
	if code != 0 || !strings.HasPrefix(out, "# dayone ("+filepath.Join("scenarios", "dayone")+", ") || strings.Contains(firstLine(out), "bundled copy") {
		t.Fatalf("in a checkout: exit %d, header %q, stderr %s", code, firstLine(out), errs)
	}
	editFile(t, filepath.Join(dst, "pack.yaml"), "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 20s")
	_, out, _ = runCLI(t, "dryrun", "dayone")
	if !strings.Contains(firstLine(out), "; the bundled copy is ") {
		t.Errorf("an edited folder does not say it differs from the bundled copy: %q", firstLine(out))
	}
}

// Two identical runs print identical bytes: wall-clock figures go to
// stderr.
func TestDryrunOutputIsStable(t *testing.T) {
	_, a, errs := runCLI(t, "dryrun", "hotseat")
	_, b, _ := runCLI(t, "dryrun", "hotseat")
	if a != b {
		t.Error("two dry runs of the same pack printed different timelines")
	}
	if !strings.Contains(errs, "real time") {
		t.Errorf("stderr lacks the timing line: %q", errs)
	}
}

// A model that refuses every call (a wrong key) stops the run after the
// first calls, with the reason, instead of playing ten minutes of fallback
// lines and exiting 0; with --fail-fast=false it plays on, and --strict
// turns the errors into a failure.
func TestDryrunRefusingModel(t *testing.T) {
	clearVendorEnv(t)
	t.Setenv("GEMINI_API_KEY", "wrong-key")
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`)
	}))
	defer srv.Close()
	code, out, errs := runCLI(t, "dryrun", "-llm", "gemini", "-base-url", srv.URL, "dayone")
	if code != 1 || !strings.Contains(errs, "the model's first 3 calls all failed") || !strings.Contains(errs, "API key not valid") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the model was called %d times before giving up, want 3", n)
	}
	if strings.Contains(out, "session_end") {
		t.Errorf("the run went on to the end:\n%s", out)
	}
	code, out, errs = runCLI(t, "dryrun", "-llm", "gemini", "-base-url", srv.URL, "--fail-fast=false", "-events", os.DevNull, "dayone")
	if code != 0 || !strings.Contains(out, "# errors: adapter_error") || !strings.Contains(out, "#   adapter_error x") || !strings.Contains(out, "session_end") {
		t.Fatalf("--fail-fast=false: exit %d, stderr %q\n%s", code, errs, out)
	}
	code, _, errs = runCLI(t, "dryrun", "-llm", "gemini", "-base-url", srv.URL, "--fail-fast=false", "--strict", "-events", os.DevNull, "dayone")
	if code != 1 || !strings.Contains(errs, "--strict: the run reported") {
		t.Fatalf("--strict: exit %d, stderr %q", code, errs)
	}
}

// Giving up takes the first calls all failing to reach the model; one
// answer, or a slow model, keeps the run going.
func TestModelWatchGivesUp(t *testing.T) {
	refused := &engine.AdapterError{Kind: "network", Message: "dial tcp 127.0.0.1:9: connection refused"}
	slow := &engine.AdapterError{Kind: "timeout", Message: "deadline exceeded"}
	for _, tt := range []struct {
		name    string
		results []*engine.AdapterError
		giveUp  bool
	}{
		{"all refused", []*engine.AdapterError{refused, refused, refused}, true},
		{"first answered", []*engine.AdapterError{nil, refused, refused, refused}, false},
		{"one answered", []*engine.AdapterError{refused, nil, refused, refused}, false},
		{"timeouts", []*engine.AdapterError{slow, slow, slow}, false},
		{"two refused", []*engine.AdapterError{refused, refused}, false},
	} {
		var gave error
		answers := scriptedAnswers(tt.results)
		m := newModelWatch(&answers, &cli{stdout: io.Discard, stderr: io.Discard})
		m.giveUp = func(err error) { gave = err }
		for range tt.results {
			m.Answer(context.Background(), "x", &engine.LLMRequest{Role: "qa"})
		}
		if (gave != nil) != tt.giveUp {
			t.Errorf("%s: gave up = %v, want %v", tt.name, gave, tt.giveUp)
		}
	}
}

type scriptedAnswers []*engine.AdapterError

func (s *scriptedAnswers) Answer(context.Context, string, *engine.LLMRequest) llm.Answer {
	e := (*s)[0]
	*s = (*s)[1:]
	return llm.Answer{Result: engine.LLMResult{Text: "ok", Err: e}}
}

func TestReplayRecordFolder(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "dryrun", "-record", dir, "dayone"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, "replay", dir)
	if code != 0 || !strings.Contains(out, "0 differ") {
		t.Fatalf("replay FOLDER: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "replay", t.TempDir())
	if code != 1 || !strings.Contains(errs, "holds no session log") {
		t.Errorf("empty folder: exit %d, stderr %q", code, errs)
	}
}

// The completion scripts are valid shell and offer what the parser takes.
func TestCompletion(t *testing.T) {
	code, out, _ := runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "--update") || !strings.Contains(out, "dayone") {
		t.Fatalf("bash: exit %d\n%s", code, out)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "baton.bash")
		if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		// What bash offers: flags for a dash, files for a flag's value.
		for _, tt := range []struct{ words, want string }{
			{"baton dryrun --fo", "--format"},
			{"baton dry", "dryrun"},
			{"baton dryrun dayone --events ../../examples/files/my", "../../examples/files/my-candidate.jsonl"},
			{"baton test --up", "--update"},
		} {
			prog := fmt.Sprintf("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _baton; echo \"${COMPREPLY[*]}\"", script, tt.words, len(strings.Fields(tt.words))-1)
			b, err := exec.Command(bash, "-c", prog).CombinedOutput()
			if err != nil || strings.TrimSpace(string(b)) != tt.want {
				t.Errorf("completing %q: %q (%v), want %q", tt.words, b, err, tt.want)
			}
		}
	}
	code, out, _ = runCLI(t, "completion", "zsh")
	if code != 0 || !strings.HasPrefix(out, "#compdef baton") || !strings.Contains(out, "--fail-fast") {
		t.Fatalf("zsh: exit %d\n%s", code, out)
	}
	if code, _, errs := runCLI(t, "completion", "fish"); code != 2 || !strings.Contains(errs, "bash or zsh") {
		t.Errorf("fish: exit %d, %q", code, errs)
	}
}

func TestInitScaffoldsAWorkingPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mypanel")
	code, out, errs := runCLI(t, "init", dir)
	if code != 0 || !strings.Contains(out, "wrote ") {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	for _, args := range [][]string{{"check", "--strict", dir}, {"test", dir}, {"dryrun", dir}} {
		if code, out, errs := runCLI(t, args...); code != 0 {
			t.Errorf("%v on the scaffold: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	if code, _, errs := runCLI(t, "init", dir); code != 1 || errs == "" {
		t.Errorf("init over an existing pack: exit %d, stderr %q", code, errs)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// copyPack copies bundled pack name's source folder into a temporary
// folder and returns it.
func copyPack(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	copyDir(t, filepath.Join("../../scenarios", name), dst)
	return dst
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// baton test reports for machines: JSON, and JUnit XML that CI systems
// read; --run picks tests by name.
func TestTestReports(t *testing.T) {
	code, out, errs := runCLI(t, "test", "dayone", "--format", "json", "--run", "silent")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var rep struct {
		Suites []struct {
			Name  string
			Cases []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json report: %v\n%s", err, out)
	}
	if len(rep.Suites) != 1 || len(rep.Suites[0].Cases) != 1 || !strings.Contains(rep.Suites[0].Cases[0].Name, "silent") {
		t.Errorf("--run silent picked %+v", rep)
	}
	code, out, errs = runCLI(t, "test", "--format=junit", "dayone")
	if code != 0 {
		t.Fatalf("junit: exit %d: %s", code, errs)
	}
	var suites struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Tests int `xml:"tests,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil {
		t.Fatalf("junit report: %v\n%s", err, out)
	}
	if len(suites.Suites) != 1 || len(suites.Suites[0].Cases) < 10 || suites.Suites[0].Tests != len(suites.Suites[0].Cases) {
		t.Errorf("junit: %+v", suites)
	}
	if code, _, errs := runCLI(t, "test", "dayone", "--run", "("); code != 2 || !strings.Contains(errs, "--run") {
		t.Errorf("bad --run: exit %d, %q", code, errs)
	}
}

// A .done asked for while the session still runs points at its .wal.
func TestReplayDonePointsAtWal(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "s1.wal")
	if err := os.WriteFile(wal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "replay", filepath.Join(dir, "s1.done"))
	if code != 1 || !strings.Contains(errs, "the session has not ended") || !strings.Contains(errs, wal) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestHelpUnknownCommand(t *testing.T) {
	code, out, errs := runCLI(t, "help", "dryon")
	if code != 2 || out != "" || !strings.Contains(errs, `no command "dryon" (did you mean dryrun?)`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// A report for CI lists every pack asked for, a pack that does not open
// as a failure; a --run that matches nothing is not a pass; a broken case
// is never filtered out.
func TestTestReportsFailures(t *testing.T) {
	code, out, _ := runCLI(t, "test", "dayone", "nope", "--format", "junit")
	if code != 1 || !strings.Contains(out, `<testsuite name="dayone"`) || !strings.Contains(out, "<failure") || !strings.Contains(out, "nope") {
		t.Errorf("junit with a missing pack: exit %d\n%s", code, out)
	}
	if code, _, errs := runCLI(t, "test", "dayone", "--run", "^no such test$"); code != 1 || !strings.Contains(errs, "no test matches --run") {
		t.Errorf("--run matching nothing: exit %d, %q", code, errs)
	}
	dir := copyPack(t, "dayone")
	bad := "name: checkout flow\nevents:\n  - {event_type: candidate_mesage, ts_sec: 1, data: {text: hi}}\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "test", dir, "--run", "checkout")
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, filepath.Join(dir, "tests", "bad.yaml")+":3:") {
		t.Errorf("a broken case under --run: exit %d\n%s", code, out)
	}
}

// A log recorded with the binary's copy of a pack replays in a checkout
// whose scenarios/ folder holds an edited copy of the same name.
func TestReplayBundledInCheckout(t *testing.T) {
	runs := t.TempDir()
	if code, _, errs := runCLI(t, "dryrun", "--record", runs, "dayone"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	root := t.TempDir()
	dst := filepath.Join(root, "scenarios", "dayone")
	copyDir(t, "../../scenarios/dayone", dst)
	editFile(t, filepath.Join(dst, "pack.yaml"), "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 20s")
	t.Chdir(root)
	code, out, errs := runCLI(t, "replay", runs)
	if code != 0 || !strings.Contains(out, "replayed with the bundled copy") || !strings.Contains(out, "0 differ") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// editFile replaces old with new in the file at name, which must hold it.
func editFile(t *testing.T, name, old, new string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	if err := os.WriteFile(name, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// baton describe prints a bundled pack's contract as text and as JSON.
func TestDescribeCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"describe", "training"}, "open_file  timeout 0:03"},
		{[]string{"describe", "--format", "json", "brain"}, `"event_type": "user_prompt"`},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, stdout lacks %q:\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
	if code, _, _ := runCLI(t, "describe", "--format", "yaml", "brain"); code == 0 {
		t.Error("--format yaml: exit 0")
	}
}
