package packtest_test

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

// pack is a one-role pack whose tests/ folder holds cases that must pass
// and cases that must fail; a harness that stops reporting a failure shows
// up here as a case that passes.
const pack = "testdata/pack"

// want is, for each case file in pack/tests, the exact error it fails with
// ("" for a case that passes). For a case that ran, that is the part
// before the timeline the harness prints after the problems.
var want = map[string]string{
	"pass_conversation.yaml":  "",
	"pass_model_failure.yaml": "",
	"pass_files.yaml":         "",

	"fail_expect.yaml": `tests/fail_expect.yaml:
expect[1] {type=agent_message kind=window}: not found after 00:13.5
expect[3] {type=agent_message kind=reply}: not found after 00:21.5`,

	"fail_then_nothing.yaml": `tests/fail_then_nothing.yaml:
expect[0] {at=00:00.5 type=agent_message kind=window}: then nothing until 00:20, but: 00:13.5  host       nudge                Take your time. Any first step?  (silence, 3.0s, late 0.5s)`,

	"fail_forbid.yaml": `tests/fail_forbid.yaml:
forbid[1] {type=agent_message agent=host kind=nudge}: found 00:13.5  host       nudge                Take your time. Any first step?  (silence, 3.0s, late 0.5s)`,

	"fail_golden_missing.yaml": `tests/fail_golden_missing.yaml:
golden tests/fail_golden_missing.golden missing (run with -update to create it)`,

	// A unified diff: both changes, each with up to three lines of context
	// and a hunk header, and the unchanged line between them left out.
	"fail_golden_differs.yaml": `tests/fail_golden_differs.yaml:
golden tests/fail_golden_differs.golden differs (run with -update and review the diff):
diff tests/fail_golden_differs.golden got
--- tests/fail_golden_differs.golden
+++ got
@@ -1,4 +1,4 @@
-00:00.5  host       window               What would you check first, and why?  (OPEN, 2.5s, late 0.5s)
+00:00.5  host       window               What would you check first?  (OPEN, 2.5s, late 0.5s)
 00:05.5  host       reply                Why that one?  (TO_HOST, 1.5s, late 0.5s)
 00:17.5  host       nudge                Take your time. Any first step?  (silence, 3.0s, late 0.5s)
 00:25.5  host       auto_advance         silence
@@ -6,4 +6,4 @@
 00:42.5  host       nudge                Take your time. Any first step?  (silence, 3.0s, late 0.5s)
 00:50.5  host       auto_advance         silence
 01:00.0  -          anchor               END  end
-01:00.0  -          session_end          END  timeout
+01:00.0  -          session_end          END  time_up`,

	"fail_unknown_keys.yaml": `tests/fail_unknown_keys.yaml:3:1: unknown field "event": did you mean events? (known: about, events, events_file, expect, forbid, golden, inputs, llm, llm_file, name)
tests/fail_unknown_keys.yaml:6:69: unknown field "txt": did you mean text? (known: addressed_to, code, language, line, mic_active, run_id, source, stt_confidence, text, typing)
tests/fail_unknown_keys.yaml:8:42: unknown field "txt": did you mean text? (known: after, agent, at, before, data_contains, fallback, guardrail, intent_tag, is_error, kind, outcome, reason_contains, request_contains, rule, text, text_contains, then_nothing_until, type)
tests/fail_unknown_keys.yaml:10:5: unknown field "then_nothing_untill": did you mean then_nothing_until? (known: after, agent, at, before, data_contains, fallback, guardrail, intent_tag, is_error, kind, outcome, reason_contains, request_contains, rule, text, text_contains, then_nothing_until, type)
tests/fail_unknown_keys.yaml:12:40: field "kind" given twice
tests/fail_unknown_keys.yaml:14:60: unknown field "argz": did you mean args? (known: args, name)
tests/fail_unknown_keys.yaml:15:1: unknown field "goldne": did you mean golden? (known: about, events, events_file, expect, forbid, golden, inputs, llm, llm_file, name)`,

	"fail_bad_values.yaml": `tests/fail_bad_values.yaml:5:5: time goes backwards (00:05.0 after 00:30.0)
tests/fail_bad_values.yaml:6:5: missing ts_sec or ts_ms
tests/fail_bad_values.yaml:7:45: expected a number, found "soon"
tests/fail_bad_values.yaml:8:68: expected true or false, found "maybe"
tests/fail_bad_values.yaml:10:10: at: bad duration "soon": want a number with a unit (800ms, 12s, 1m30s) or mm:ss
tests/fail_bad_values.yaml:11:35: before: bad time "00:70": want mm:ss, mm:ss.f or hh:mm:ss
tests/fail_bad_values.yaml:11:54: expected true or false, found "perhaps"
tests/fail_bad_values.yaml:12:47: then_nothing_until: bad duration "-1s": negative
tests/fail_bad_values.yaml:13:9: expected a list, found a mapping
tests/fail_bad_values.yaml:14:9: expected true or false, found "yes please"`,

	"fail_events_and_file.yaml": `tests/fail_events_and_file.yaml:5:1: give events or events_file, not both
tests/fail_events_and_file.yaml:8:1: give llm or llm_file, not both`,

	// The engine's check of an event, at the event, with the nearest type
	// the pack takes.
	"fail_unknown_event.yaml": `tests/fail_unknown_event.yaml:4:5: unknown event type: "candidate_mesage" is not handled by pack packtest (did you mean candidate_message?) (it takes candidate_message, mic_state_changed, speech_end, typing_state_changed, code_submitted)
tests/fail_unknown_event.yaml:5:5: candidate_message needs data.text
tests/fail_unknown_event.yaml:6:5: stt_confidence 2 must be between 0 and 1`,

	// The files a case names, each problem at its own line and column
	// (an event's check at its event_type), sorted with the case's own.
	"fail_files.yaml": `fixtures/bad_candidate.jsonl:1:70: unknown field "txt": did you mean text? (known: addressed_to, code, language, line, mic_active, run_id, source, stt_confidence, text, typing)
fixtures/bad_candidate.jsonl:2:15: unknown event type: "candidate_mesage" is not handled by pack packtest (did you mean candidate_message?) (it takes candidate_message, mic_state_changed, speech_end, typing_state_changed, code_submitted)
fixtures/bad_candidate.jsonl:3:44: time goes backwards (00:04.0 after 00:06.0)
fixtures/bad_candidate.jsonl:4:15: candidate_message needs data.text
fixtures/bad_replies.yaml:3:32: unknown field "txt": did you mean text? (known: call, delay_ms, error, goal, intent_tag, job, json, kind, misbehave, no_reply, repeat, role, text, tool_calls)
fixtures/bad_replies.yaml:4:27: expected a whole number, found "soon"
fixtures/bad_replies.yaml:6:17: unknown field "nme": did you mean name? (known: args, name)
tests/fail_files.yaml:8:10: at: bad duration "later": want a number with a unit (800ms, 12s, 1m30s) or mm:ss`,

	"fail_missing_files.yaml": `tests/fail_missing_files.yaml:3:14: events_file: no file fixtures/nothing.jsonl in the pack (names are from the pack's folder)
tests/fail_missing_files.yaml:4:11: llm_file: "../outside.yaml" is not a path inside the pack (write a/b.jsonl, from the pack's folder)`,

	"fail_syntax.yaml": `tests/fail_syntax.yaml:5:12: YAML syntax: did not find expected ',' or '}'`,

	"fail_empty.yaml": `tests/fail_empty.yaml: empty test case`,
}

func load(t *testing.T, dir string) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	results, err := packtest.Run(load(t, pack), packtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range results {
		file := path.Base(r.File)
		files = append(files, file)
		t.Run(file, func(t *testing.T) {
			w, ok := want[file]
			switch {
			case !ok:
				t.Fatalf("%s has no entry in want", r.File)
			case w == "" && r.Err != nil:
				t.Fatalf("want a pass, got:\n%v", r.Err)
			case w == "":
				return
			case r.Err == nil:
				t.Fatalf("passed; want:\n%s", w)
			}
			got := r.Err.Error()
			problems, timeline, ran := strings.Cut(got, "\ntimeline:\n")
			if problems != w {
				t.Fatalf("error:\n%s\n\nwant:\n%s", problems, w)
			}
			// A case that ran shows the whole verbose timeline, model
			// requests included, after its problems; one that did not
			// load has none to show.
			if wantRun := strings.HasPrefix(w, "tests/"+file+":\n"); ran != wantRun {
				t.Fatalf("timeline shown: %v, want %v:\n%s", ran, wantRun, got)
			}
			if ran && (!strings.HasPrefix(timeline, "00:00.0  host       llm_request") ||
				!strings.HasSuffix(timeline, "01:00.0  -          session_end          END  time_up\n")) {
				t.Fatalf("timeline:\n%s", timeline)
			}
		})
	}
	for file := range want {
		if !slices.Contains(files, file) {
			t.Errorf("want names %s, which is not in %s/tests", file, pack)
		}
	}
}

// Result names come from the case, falling back to the file name when the
// case has none or does not load.
func TestResultNames(t *testing.T) {
	results, err := packtest.Run(load(t, pack), packtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range results {
		names[r.File] = r.Name
	}
	for file, name := range map[string]string{
		"tests/pass_conversation.yaml": "conversation",
		"tests/fail_forbid.yaml":       "forbid found",
		"tests/fail_unknown_keys.yaml": "fail_unknown_keys",
	} {
		if names[file] != name {
			t.Errorf("%s: name %q, want %q", file, names[file], name)
		}
	}
}

func TestUpdateRewritesGoldens(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(pack)); err != nil {
		t.Fatal(err)
	}
	results, err := packtest.Run(load(t, dir), packtest.Options{Update: true, WriteDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var updated []string
	for _, r := range results {
		if r.Updated {
			updated = append(updated, r.File)
		}
	}
	// The current golden (pass_conversation) is left alone.
	if w := []string{"tests/fail_golden_differs.yaml", "tests/fail_golden_missing.yaml"}; !slices.Equal(updated, w) {
		t.Fatalf("updated %v, want %v", updated, w)
	}

	results, err = packtest.Run(load(t, dir), packtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if strings.Contains(r.File, "golden") && r.Err != nil {
			t.Errorf("after -update: %v", r.Err)
		}
	}
	// Same events as pass_conversation, so the rewritten golden is its
	// timeline.
	got, err := os.ReadFile(filepath.Join(dir, "tests", "fail_golden_differs.golden"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(filepath.Join(pack, "tests", "pass_conversation.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, w) {
		t.Errorf("rewritten golden:\n%s\nwant:\n%s", got, w)
	}
}

// Without a folder to write to, -update cannot fix a golden and says so.
func TestUpdateNeedsWriteDir(t *testing.T) {
	results, err := packtest.Run(load(t, pack), packtest.Options{Update: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Updated {
			t.Errorf("%s: updated without a write folder", r.File)
		}
		if path.Base(r.File) == "fail_golden_missing.yaml" && (r.Err == nil || !strings.Contains(r.Err.Error(), "golden tests/fail_golden_missing.golden missing")) {
			t.Errorf("%s: %v", r.File, r.Err)
		}
	}
}

func TestNoTests(t *testing.T) {
	fsys := fstest.MapFS{}
	data, err := os.ReadFile(filepath.Join(pack, "pack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fsys["pack.yaml"] = &fstest.MapFile{Data: data}
	p, err := rules.LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	_, err = packtest.Run(p, packtest.Options{})
	if w := "pack packtest has no tests (tests/*.yaml)"; err == nil || err.Error() != w {
		t.Fatalf("err = %v, want %q", err, w)
	}
}
