package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/runtime/archive"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = (&cli{stdout: &out, stderr: &errb}).run(context.Background(), args)
	return code, out.String(), errb.String()
}

func TestDryrunText(t *testing.T) {
	code, out, errs := runCLI(t, "dryrun", "../../scenarios/dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"00:00.0  qa         window",
		"03:00.0  ba         anchor",
		"repeat_request",
		"[regenerated(2): max_questions,sentences]",
		"10:00.0  -          session_end",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestDryrunJSONL(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "silent.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dryrun", "-format", "jsonl", "-events", empty, "dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sawMessage, sawAdvance, sawEnd bool
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", l, err)
		}
		if _, ok := m["t_ms"]; !ok {
			t.Fatalf("no t_ms: %s", l)
		}
		switch m["type"] {
		case "agent_message":
			sawMessage = true
			for _, k := range []string{"agent", "kind", "text", "intent_tag", "speech_ms", "rule"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("agent_message without %s: %s", k, l)
				}
			}
		case "auto_advance":
			sawAdvance = true
		case "session_end":
			sawEnd = true
		case "reply":
			t.Fatalf("a silent candidate got a reply: %s", l)
		}
	}
	if !sawMessage || !sawAdvance || !sawEnd {
		t.Fatalf("message=%v advance=%v end=%v", sawMessage, sawAdvance, sawEnd)
	}
}

func TestDryrunBadEvents(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, pack, content, want string }{
		{"malformed", "dayone", "{\"event_type\":\"speech_end\",\"ts_sec\":1}\n{\"event_type\":\n", "malformed.jsonl:2:15: invalid JSON"},
		{"backwards", "dayone", "{\"event_type\":\"speech_end\",\"ts_sec\":5}\n{\"event_type\":\"speech_end\",\"ts_sec\":4}\n", "backwards.jsonl:2:37: time goes backwards"},
		// A client event spelled like an engine trigger once ended a
		// Hot Seat panel at 00:31 with an undecided verdict.
		{"engine trigger", "hotseat", "{\"event_type\":\"speech_end\",\"ts_sec\":5}\n{\"event_type\":\"tool_loop\",\"ts_sec\":30,\"data\":{}}\n", "engine trigger.jsonl:2:15: unknown event type: \"tool_loop\" is one of the engine's own triggers"},
		{"typo", "dayone", "\n{\"event_type\":\"candidate_mesage\",\"ts_sec\":5,\"data\":{\"text\":\"hi\"}}\n", "typo.jsonl:2:15: unknown event type: \"candidate_mesage\" is not handled by pack dayone (did you mean candidate_message?)"},
		{"missing text", "dayone", "{\"event_type\":\"candidate_message\",\"ts_sec\":5}\n", "missing text.jsonl:1:15: candidate_message needs data.text"},
	}
	for _, c := range cases {
		f := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(f, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "dryrun", "-events", f, c.pack)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q: want non-zero with %q", c.name, code, errs, c.want)
		}
		if out != "" {
			t.Errorf("%s: a refused events file still printed a timeline:\n%s", c.name, out)
		}
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	pack := "name: bad\nduration: 1m\nroles: {a: {persona: x}}\nsilence: {steps: [{after: NOPE, action: auto_advance}]}\nend: [{id: e, when: 'now( >'}]\n"
	if err := os.WriteFile(filepath.Join(dir, "pack.yaml"), []byte(pack), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "check", dir)
	if code == 0 {
		t.Fatal("check passed a broken pack")
	}
	for _, want := range []string{filepath.Join(dir, "pack.yaml") + ":4:", "unknown constant \"NOPE\"", filepath.Join(dir, "pack.yaml") + ":5:"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestPackTestsCommand(t *testing.T) {
	code, out, errs := runCLI(t, "test", "dayone")
	if code != 0 || !strings.Contains(out, " passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// A path names a folder and nothing else: a mistyped one fails with the
// reason instead of testing the bundled pack that shares its last element.
func TestPackPathNeverFallsBackToBundled(t *testing.T) {
	for _, cmd := range []string{"test", "dryrun", "check"} {
		code, out, errs := runCLI(t, cmd, "/typo/dayone")
		if code != 1 || !strings.Contains(out+errs, "/typo/dayone: no pack.yaml there (a path names a folder; for the bundled pack write dayone)") {
			t.Errorf("baton %s /typo/dayone: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, code, out, errs)
		}
		if strings.Contains(out, "ok ") || strings.Contains(out, "passed") || strings.Contains(out, "session_end") {
			t.Errorf("baton %s /typo/dayone ran something:\n%s", cmd, out)
		}
	}
	code, _, errs := runCLI(t, "test", "dayon")
	if code != 1 || !strings.Contains(errs, "dayon: no bundled pack of that name (bundled: boardroom, brain, dayone, hotseat, training)") {
		t.Errorf("baton test dayon: exit %d, stderr %q", code, errs)
	}
}

// The usage lists the bundled packs the binary carries.
func TestUsageNamesBundledPacks(t *testing.T) {
	code, _, errs := runCLI(t)
	if code != 2 || !strings.Contains(errs, "bundled pack (boardroom, brain, dayone, hotseat, training)") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
}

// The dry run drives the real genai SDK against a local endpoint that
// speaks the public generateContent wire format.
func TestDryrunWithGeminiEndpoint(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ":generateContent") {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			SystemInstruction struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"systemInstruction"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.SystemInstruction.Parts) == 0 {
			http.Error(w, "no system instruction", http.StatusBadRequest)
			return
		}
		// Calls 2 and 3 are the first nudge's: its preparation, and the
		// request it makes again when due.
		n := calls.Add(1)
		if n == 2 || n == 3 {
			http.Error(w, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"text\":\"Which log shows the second capture and the risk?\",\"intent_tag\":\"from_model\"}"}]},"finishReason":"STOP"}]}`)
	}))
	defer srv.Close()
	t.Setenv("GEMINI_API_KEY", "test-key")
	code, out, errs := runCLI(t, "dryrun", "-llm", "gemini", "-base-url", srv.URL, "-format", "jsonl", "-events", os.DevNull, "dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if calls.Load() < 5 {
		t.Fatalf("only %d model calls", calls.Load())
	}
	if !strings.Contains(out, `"intent_tag":"from_model"`) || !strings.Contains(out, "Which log shows the second capture") {
		t.Errorf("model replies missing:\n%s", out)
	}
	if !strings.Contains(out, `"type":"adapter_error"`) || !strings.Contains(out, "bad_request") || !strings.Contains(out, `"fallback":true`) {
		t.Errorf("the 400 should give an adapter_error and a fallback line:\n%s", out)
	}
}

// Hot Seat against a local endpoint speaking the Gemini wire format: jobs
// come back as JSON for their response schema, juror turns as function
// calls; the whole panel, tools and JSON output included, goes through the
// real genai SDK.
func TestHotSeatWithGeminiEndpoint(t *testing.T) {
	order := []string{"marcus", "priya", "james"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			SystemInstruction struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"systemInstruction"`
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					Text             string         `json:"text"`
					FunctionResponse map[string]any `json:"functionResponse"`
					InlineData       *struct {
						MIMEType string `json:"mimeType"`
						Data     []byte `json:"data"`
					} `json:"inlineData"`
				} `json:"parts"`
			} `json:"contents"`
			Tools []struct {
				FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
			} `json:"tools"`
			GenerationConfig struct {
				ResponseMIMEType   string `json:"responseMimeType"`
				ResponseJSONSchema any    `json:"responseJsonSchema"`
			} `json:"generationConfig"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var system, last string
		for _, p := range req.SystemInstruction.Parts {
			system += p.Text
		}
		var lastResponse map[string]any
		var files []string
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.Text != "" {
					last = p.Text
				}
				if p.InlineData != nil && len(p.InlineData.Data) > 0 {
					files = append(files, p.InlineData.MIMEType)
				}
				if p.FunctionResponse != nil {
					lastResponse = p.FunctionResponse
				}
			}
		}
		reply := func(parts string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[`+parts+`]},"finishReason":"STOP"}]}`)
		}
		text := func(s string) string { b, _ := json.Marshal(map[string]string{"text": s}); return string(b) }
		call := func(name string, args map[string]any) string {
			b, _ := json.Marshal(map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
			return string(b)
		}
		if req.GenerationConfig.ResponseJSONSchema != nil && req.GenerationConfig.ResponseMIMEType != "application/json" {
			http.Error(w, "schema without JSON MIME type", http.StatusBadRequest)
			return
		}
		var tools []string
		for _, t := range req.Tools {
			for _, d := range t.FunctionDeclarations {
				tools = append(tools, d.Name)
			}
		}
		followUp := strings.Contains(last, "[Turn goal: follow_up]")
		switch {
		case strings.Contains(last, "[PHASE 1 START]"):
			// The scenario's files arrive as parts: the PDF and the CSV.
			if !slices.Contains(files, "application/pdf") || !slices.Contains(files, "text/csv") {
				http.Error(w, fmt.Sprintf("phase 1 without the attachments: %v", files), http.StatusBadRequest)
				return
			}
			reply(text("Weak points: token migration, no rollback."))
		case strings.Contains(last, "[PHASE 2 START]"):
			b, _ := json.Marshal(map[string]string{"persona": "sharp", "context_section": "doubts", "question": "Why one night?", "voice": "Kore"})
			reply(text(string(b)))
		case strings.Contains(last, "[PHASE 3: SUPERVISION]"):
			reply(text(`{"grade": 72, "critique": "direct", "memory_update": "said flags", "next_question": "And then?", "topic_covered": false}`))
		case strings.Contains(last, "[PHASE 4: DELIBERATION]"):
			reply(text(`{"verdict": "pass", "score": 72, "reasons": ["consistent answers"]}`))
		case followUp && slices.Contains(tools, "endPanel"):
			reply(text("Thank you, that concludes the panel.") + "," + call("endPanel", map[string]any{}))
		case followUp && slices.Contains(tools, "transfer"):
			me := ""
			for _, o := range order {
				if strings.Contains(system, "Your role: "+o) {
					me = o
				}
			}
			// Always try the next juror in a fixed order first; a refusal
			// lists who is available, and the retry takes the first.
			next := order[(slices.Index(order, me)+1)%len(order)]
			if lastResponse != nil {
				b, _ := json.Marshal(lastResponse)
				if i := strings.Index(string(b), "Available jurors: "); i >= 0 {
					rest := string(b)[i+len("Available jurors: "):]
					next = strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == '.' || r == ' ' })[0]
				}
			}
			reply(call("transfer", map[string]any{"colleague": next, "reason": "answered", "summary": "ok"}))
		default:
			reply(text("Why a single night, and what is your rollback?"))
		}
	}))
	defer srv.Close()
	t.Setenv("GEMINI_API_KEY", "test-key")
	code, out, errs := runCLI(t, "dryrun", "-llm", "gemini", "-base-url", srv.URL, "hotseat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"tickets", "job_result           configure", "transfer  from marcus", "endPanel", `"verdict":"pass"`, "session_end"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "job_error") || strings.Contains(out, "adapter_error") {
		t.Errorf("unexpected failure:\n%s", out)
	}
}

// A dry run recorded to a session log replays offline with every step
// verified; the seed travels in the log. A pack with context files gets
// its archive beside the log, and only such a pack.
func TestRecordThenReplay(t *testing.T) {
	for _, pack := range []string{"dayone", "hotseat", "boardroom"} {
		dir := t.TempDir()
		code, _, errs := runCLI(t, "dryrun", "-seed", "7", "-record", dir, pack)
		if code != 0 || !strings.Contains(errs, "recorded ") {
			t.Fatalf("%s: exit %d: %s", pack, code, errs)
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.done"))
		if len(logs) != 1 {
			t.Fatalf("%s: logs %v", pack, logs)
		}
		code, out, errs := runCLI(t, "replay", logs[0])
		if code != 0 || !strings.Contains(out, " 0 differ") || !strings.Contains(out, "seed 7") {
			t.Fatalf("%s: replay exit %d\n%s\n%s", pack, code, out, errs)
		}
		archives, _ := filepath.Glob(filepath.Join(dir, "archive", "*"))
		if pack != "boardroom" {
			if len(archives) != 0 {
				t.Fatalf("%s has no context files, yet archived %v", pack, archives)
			}
			continue
		}
		t.Cleanup(func() {
			for _, a := range archives {
				_ = archive.Unlock(a) // its folders are read-only
			}
		})
		if len(archives) != 1 || filepath.Base(archives[0]) != strings.TrimSuffix(filepath.Base(logs[0]), ".done") {
			t.Fatalf("archives %v for log %s", archives, logs[0])
		}
		m, err := archive.Verify(archives[0])
		if err != nil || m.Reason != "session_complete" || len(m.Files) < 20 {
			t.Fatalf("archive: %v, %+v", err, m)
		}
		// The log alone rebuilds the same archive, byte for byte.
		again := t.TempDir()
		if code, out, errs := runCLI(t, "replay", "-archive", again, logs[0]); code != 0 || !strings.Contains(out, "# archived ") {
			t.Fatalf("replay -archive: exit %d\n%s\n%s", code, out, errs)
		}
		rebuilt := filepath.Join(again, filepath.Base(archives[0]))
		t.Cleanup(func() { _ = archive.Unlock(rebuilt) })
		for _, f := range append(m.Files, archive.File{Path: archive.ManifestFile}) {
			a, errA := os.ReadFile(filepath.Join(archives[0], f.Path))
			b, errB := os.ReadFile(filepath.Join(rebuilt, f.Path))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s differs when rebuilt from the log (%v, %v)", f.Path, errA, errB)
			}
		}
	}
}
