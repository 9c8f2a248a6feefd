package engine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
)

// A session's inputs reach every place the pack names them: a template's
// {{NAME}} and ${expression}, a script's inputs, a context file, an
// anchor's time and the scenario context a request carries; and the
// request carries the session's id.
func TestInputsReachTheSession(t *testing.T) {
	p := loadPack(t, "inputs")
	run := func(opts engine.Options) (*engine.LLMRequest, []engine.Effect) {
		t.Helper()
		s, err := engine.Open(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		var all []engine.Effect
		var req *engine.LLMRequest
		for _, at := range []int64{0, 60_000, 240_000} {
			out, err := s.Step(engine.Input{T: at, Type: engine.InputAdvance}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range out {
				if e.Type == engine.EffectLLMRequest && req == nil {
					req = e.Request
				}
			}
			all = append(all, out...)
		}
		if req == nil {
			t.Fatal("no model request")
		}
		return req, all
	}
	anchorAt := func(effs []engine.Effect) int64 {
		for _, e := range effs {
			if e.Type == engine.EffectAnchor {
				return e.T
			}
		}
		return -1
	}
	emitted := func(effs []engine.Effect) string {
		for _, e := range effs {
			if e.Type == engine.EffectNote {
				return e.Text
			}
		}
		return ""
	}

	req, effs := run(engine.Options{Seed: 1})
	files := func(req *engine.LLMRequest) string {
		var b strings.Builder
		for _, f := range req.Files {
			b.WriteString(f.Path + ":" + f.Text + "|")
		}
		return b.String()
	}
	if !strings.Contains(req.System, "You interview the candidate. Wrap at 02:00.0.") || files(req) != "shared/notes.md:# Notes\nThe pack's own notes.\n|" {
		t.Fatalf("defaults: system %q files %q", req.System, files(req))
	}
	ctx, _ := json.Marshal(req.ScenarioContext)
	if string(ctx) != `{"team":"payments","bug_summary":"double charge","business_pressure":"launch today"}` {
		t.Fatalf("default scenario context: %s", ctx)
	}
	if req.SessionID != "" || anchorAt(effs) != 120_000 || emitted(effs) != "hello the candidate with 1 note file(s)" {
		t.Fatalf("defaults: session %q, anchor at %d, emit %q", req.SessionID, anchorAt(effs), emitted(effs))
	}

	req, effs = run(engine.Options{Seed: 1, SessionID: "sess_001", Inputs: rules.Supplied{
		"CANDIDATE": json.RawMessage(`"Ada"`),
		"WRAP_AT":   json.RawMessage(`"03:30"`),
		"CONTEXT":   json.RawMessage(`{"team": "ledger", "bug_summary": "lost refund"}`),
		"notes":     json.RawMessage(`[{"name": "cv.md", "text": "Ada led the ledger rewrite."}, {"name": "job.md", "text": "Staff engineer."}]`),
	}})
	if !strings.Contains(req.System, "You interview Ada. Wrap at 03:30.0.") || files(req) != "shared/notes.md:## cv.md\n\nAda led the ledger rewrite.\n\n## job.md\n\nStaff engineer.|" {
		t.Fatalf("supplied: system %q files %q", req.System, files(req))
	}
	ctx, _ = json.Marshal(req.ScenarioContext)
	if string(ctx) != `{"team":"ledger","bug_summary":"lost refund"}` {
		t.Fatalf("supplied scenario context: %s", ctx)
	}
	if req.SessionID != "sess_001" || anchorAt(effs) != 210_000 || emitted(effs) != "hello Ada with 2 note file(s)" {
		t.Fatalf("supplied: session %q, anchor at %d, emit %q", req.SessionID, anchorAt(effs), emitted(effs))
	}
	var raw map[string]any
	b, _ := json.Marshal(req)
	if err := json.Unmarshal(b, &raw); err != nil || raw["session_id"] != "sess_001" {
		t.Fatalf("request JSON: %s", b)
	}
}

// A session whose inputs the pack refuses takes no input, and says why.
func TestRefusedInputsStopTheSession(t *testing.T) {
	p := loadPack(t, "inputs")
	s, err := engine.Open(p, engine.Options{Inputs: rules.Supplied{"WRAP_AT": json.RawMessage(`"09:00"`)}})
	var list rules.InputErrors
	if !errors.As(err, &list) || list.Code() != rules.CodeInputRange {
		t.Fatalf("open: %v", err)
	}
	if _, err := s.Step(engine.Input{T: 0, Type: engine.InputAdvance}, nil); !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "WRAP_AT") {
		t.Fatalf("step: %v", err)
	}
}

// A pack that requires an input and a session that does not give it: the
// session exists, refuses every input and says why, rather than panic.
func TestMissingRequiredInputRefusesTheSession(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte("name: req\nduration: 1m\ninputs:\n  who: {type: text, required: true}\nroles: [{id: qa, persona: p}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(p, engine.Options{})
	var list rules.InputErrors
	if !errors.As(err, &list) || list.Code() != rules.CodeInputMissing {
		t.Fatalf("open: %v", err)
	}
	if _, err := engine.New(p, engine.Options{}).Step(engine.Input{Type: engine.InputAdvance}, nil); !errors.Is(err, engine.ErrBadInput) {
		t.Fatalf("step: %v", err)
	}
	_ = s
}
