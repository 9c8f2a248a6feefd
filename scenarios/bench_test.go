package scenarios_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/batonhq/baton/engine"

	"github.com/batonhq/baton/runtime/dryrun"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/script"
)

// BenchmarkDayOneRewriteScript calls DayOne's guardrail rewrite on the
// seed's §11 reply, on a pooled runtime, with the argument the engine
// builds.
func BenchmarkDayOneRewriteScript(b *testing.B) {
	p, err := rules.Load(os.DirFS("dayone"), ".")
	if err != nil {
		b.Fatal(err)
	}
	tl, _ := p.Role("tech_lead")
	focus := make([]any, len(tl.Focus))
	for i, f := range tl.Focus {
		focus[i] = f
	}
	rewrite := map[string]any{}
	for _, e := range tl.Rewrite {
		list := []any{}
		for _, l := range e.Text {
			list = append(list, l)
		}
		rewrite[e.ID] = list
	}
	arg := map[string]any{
		"now_ms": int64(210000), "role": "tech_lead",
		"text":       "What is priority? What is rollback? What monitoring do you add?",
		"violations": []any{"max_questions"},
		"turn":       map[string]any{"kind": "reply", "goal": "respond_to_candidate", "rule": "R3_INTENT", "role": "tech_lead"},
		"role_info":  map[string]any{"id": "tech_lead", "name": tl.Name, "focus": focus, "rewrite": rewrite},
		"transcript": []any{map[string]any{"t_ms": int64(200000), "speaker": "candidate", "text": "Hotfix first."}},
	}
	out, err := p.Scripts.Run(script.Call{Func: "rewrite", Arg: arg})
	if err != nil || out != "What is priority?" {
		b.Fatalf("rewrite = %v, %v", out, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		// The call runs under the replay bound: a GC pause on a loaded
		// machine would otherwise cross the 20 ms budget of a 10 µs call
		// and fail the benchmark; what is measured is the call.
		if _, err := p.Scripts.Run(script.Call{Func: "rewrite", Arg: arg, Replay: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExprCondition evaluates DayOne's defer condition.
func BenchmarkExprCondition(b *testing.B) {
	p, err := rules.Load(os.DirFS("dayone"), ".")
	if err != nil {
		b.Fatal(err)
	}
	env := p.NewEnv()
	env.Candidate.Typing = true
	cond := &p.TurnTaking.Defer.When
	b.ReportAllocs()
	for b.Loop() {
		ok, err := env.EvalBool(cond)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkHotSeatPanel plays the whole Hot Seat panel: four setup jobs,
// five questions, four background supervisions, the verdict; the jurors
// and the Brain are played by the pack's dry-run model script.
func BenchmarkHotSeatPanel(b *testing.B) {
	p, evs := loadBundled(b, "hotseat")
	b.ReportAllocs()
	for b.Loop() {
		res, err := dryrun.Run(p, dryrun.Options{Events: evs})
		if err != nil {
			b.Fatal(err)
		}
		if res.Records[len(res.Records)-1].Type != "session_end" {
			b.Fatal("panel did not end")
		}
	}
}

// BenchmarkBrainExchange is one exchange of The Brain through the engine
// alone: a prompt, GPT gating both others in, three agents answering in
// round 1 and all three agreeing in round 2, six model answers. The
// session keeps running, so from the eleventh exchange on every call
// carries a full window of ten earlier ones, the budget at work.
func BenchmarkBrainExchange(b *testing.B) {
	p, err := rules.Load(os.DirFS("brain"), ".")
	if err != nil {
		b.Fatal(err)
	}
	answers := map[string][2]string{
		"gpt":    {"I am GPT. Keep the tag out of state; log it.\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=logging\n---", "[NO_FURTHER_INPUT]\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=done\n---"},
		"claude": {"I am Claude. Agreed, and tie the log line to the run id.", "[NO_FURTHER_INPUT]"},
		"gemini": {"I am Gemini. One sink at the edge, one retention policy.", "[NO_FURTHER_INPUT]"},
	}
	var s *engine.Session
	var out []engine.Effect
	var t int64
	step := func(in engine.Input) {
		var err error
		out, err = s.Step(in, out[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	exchange := func() {
		n++
		t += 100
		step(engine.Input{T: t, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{
			Type: "user_prompt", Text: "Should we keep the routing tag out of state?", RunID: "r" + strconv.Itoa(n)}})
		for calls := 0; ; calls++ {
			var req *engine.Effect
			for i := range out {
				if out[i].Type == engine.EffectLLMRequest {
					req = &out[i]
				}
			}
			if req == nil {
				if calls != 6 {
					b.Fatalf("exchange %d ended after %d calls", n, calls)
				}
				return
			}
			round := min(req.Request.Sequence.Round, 2) - 1
			t += 100
			step(engine.Input{T: t, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: req.ID, Text: answers[req.Agent][round]}})
		}
	}
	// A session with a full window; a new one before the pack's hour
	// is up.
	fresh := func() {
		s, t = engine.New(p, engine.Options{}), 0
		for range 10 {
			exchange()
		}
	}
	fresh()
	b.ReportAllocs()
	for b.Loop() {
		if t > 55*60_000 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		exchange()
	}
}

// BenchmarkLoadPack is what every command pays before it can run a pack:
// read, decode, check and compile it, the scripts' load check included.
func BenchmarkLoadPack(b *testing.B) {
	for _, name := range []string{"dayone", "hotseat", "boardroom", "brain"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rules.Load(os.DirFS(name), "."); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
