package scenarios_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/llm/gemini/geminifake"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/runtime/replay"
)

// drifter is a model that has drifted off role and into a rut: whoever
// it is asked to be, and whatever it is told after a violation, it asks
// the same QA question.
type drifter struct {
	mu          sync.Mutex
	corrections []string // the instructions it was given after a violation
}

const qaQuestion = "How would you reproduce the double charge, and which logs prove it?"

func (d *drifter) behave(req *geminifake.Request) geminifake.Reply {
	d.mu.Lock()
	defer d.mu.Unlock()
	if last := lastText(req); strings.Contains(last, "broke the panel's rules") {
		d.corrections = append(d.corrections, last)
	}
	return geminifake.Text(qaQuestion)
}

func runDayOneDrifting(t *testing.T) (*rules.Pack, *record.Result, *drifter) {
	t.Helper()
	d := &drifter{}
	srv := geminifake.New(d.behave)
	t.Cleanup(srv.Close)
	p, res := runBundled(t, "dayone", srv)
	srv.RequireValid(t)
	return p, res, d
}

// TestDayOneDriftingModel runs DayOne's ten minutes through the official
// SDK against a stand-in of the Gemini API whose model answers every
// request, for every role, with a QA question. The panel still sounds
// like three people: no line is said more than three times, every line a
// panelist says keeps its role's guardrails, the model is asked again
// with the broken rules named, and the recorded run replays byte for
// byte.
func TestDayOneDriftingModel(t *testing.T) {
	p, res, d := runDayOneDrifting(t)
	tl := timeline(res.Records)
	said := map[string]int{}
	distinct := map[string]map[string]bool{}
	outcomes := map[string]int{}
	for _, r := range res.Records {
		if r.Type != engine.EffectAgentMessage {
			continue
		}
		said[r.Text]++
		if distinct[r.Agent] == nil {
			distinct[r.Agent] = map[string]bool{}
		}
		distinct[r.Agent][r.Text] = true
		if r.Outcome == "" {
			continue // a line the pack wrote for the turn, not the model
		}
		outcomes[r.Outcome]++
		role, _ := p.Role(r.Agent)
		if v := p.Guardrails.Violations(role, r.Text); len(v) > 0 {
			t.Errorf("%s %s said %q, which breaks %v", rules.FormatClock(r.T), r.Agent, r.Text, v)
		}
	}
	for text, n := range said {
		if n > 3 {
			t.Errorf("said %d times: %q", n, text)
		}
	}
	for _, role := range []string{"qa", "ba", "tech_lead"} {
		if len(distinct[role]) < 4 {
			t.Errorf("%s said only %d distinct lines", role, len(distinct[role]))
		}
	}
	// The drift was corrected, not only replaced: the model was told
	// what it broke, and QA, whose questions these are, was let through.
	if len(d.corrections) == 0 || !strings.Contains(d.corrections[0], "role_fidelity") {
		t.Errorf("no corrective instruction naming role_fidelity reached the model: %q", d.corrections)
	}
	if outcomes[engine.OutcomePass] == 0 || outcomes[engine.OutcomeRewritten] == 0 {
		t.Errorf("outcomes %v: want lines passed (QA) and rewritten (the others)", outcomes)
	}
	requests, lines := 0, 0
	for _, r := range res.Records {
		switch r.Type {
		case engine.EffectLLMRequest:
			requests++
		case engine.EffectAgentMessage:
			lines++
		}
	}
	t.Logf("%d model calls, %d lines, outcomes %v", requests, lines, outcomes)
	if t.Failed() {
		t.Log(tl)
	}

	replaysByteForByte(t, p, res)

	// The same model, the same inputs: the same bytes.
	_, again, _ := runDayOneDrifting(t)
	if a, b := jsonl(t, res.Records), jsonl(t, again.Records); a != b {
		t.Fatalf("two runs against the same drifting model differ:\n%s\n----\n%s", a, b)
	}
}

// replaysByteForByte saves a dry run as a session log and replays it,
// recorded model answers and all, checking every step.
func replaysByteForByte(t *testing.T, p *rules.Pack, res *record.Result) {
	t.Helper()
	path, err := replay.SaveDryRun(t.TempDir(), p.Name, p, 0, time.Unix(0, 0), res)
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.File(path, func(string) (*rules.Pack, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.Verified == 0 {
		t.Fatalf("the recorded run does not replay (%d verified): %v", got.Verified, got.Diffs)
	}
}

// runBundled dry-runs a bundled pack with its built-in candidate, on its
// scripted model or, given a Gemini stand-in, through the official SDK.
func runBundled(t *testing.T, pack string, gem *geminifake.Server) (*rules.Pack, *record.Result) {
	t.Helper()
	p, evs := loadBundled(t, pack)
	opt := dryrun.Options{Events: evs}
	if gem != nil {
		model, err := gemini.New(context.Background(), gemini.Config{APIKey: gem.APIKey, BaseURL: gem.URL})
		if err != nil {
			t.Fatal(err)
		}
		opt.Model = llm.ForPack(model, p, nil)
	}
	res, err := dryrun.Run(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p, res
}

func jsonl(t *testing.T, recs []record.Record) string {
	t.Helper()
	var b strings.Builder
	if err := record.WriteJSONL(&b, recs, record.FormatOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// DayOne's own dry run, with its scripted model and built-in candidate,
// never says a line more than three times either.
func TestDayOneBuiltInRunIsVaried(t *testing.T) {
	_, res := runBundled(t, "dayone", nil)
	said := map[string]int{}
	for _, r := range res.Records {
		if r.Type == engine.EffectAgentMessage {
			said[r.Text]++
		}
	}
	if len(said) < 20 {
		t.Errorf("only %d distinct lines in the built-in run", len(said))
	}
	for text, n := range said {
		if n > 3 {
			t.Errorf("said %d times: %q", n, text)
		}
	}
}
