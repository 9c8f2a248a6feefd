package engine_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
)

// BenchmarkDayOneSession plays the full ten-minute DayOne interview with the
// built-in candidate, scripted LLM and simulated voice: as shipped, with
// its scheduled lines prepared 3 s ahead, and with preparation off, to
// price it.
func BenchmarkDayOneSession(b *testing.B) {
	evs := dayOneCandidate(b)
	for _, c := range []struct {
		name string
		pack *rules.Pack
	}{{"prepared", loadDayOne(b)}, {"unprepared", loadDayOneUnprepared(b)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dryrun.Run(c.pack, dryrun.Options{Events: evs}); err != nil {
					b.Fatal(err)
				}
			}
			perSession := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(600e9/perSession, "x_realtime")
		})
	}
}

// loadDayOneUnprepared is DayOne without llm.prepare.
func loadDayOneUnprepared(b *testing.B) *rules.Pack {
	fsys := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS("../scenarios/dayone"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(os.DirFS("../scenarios/dayone"), path)
		if path == "pack.yaml" {
			data = bytes.Replace(data, []byte("\n  prepare: 3s\n"), []byte("\n"), 1)
		}
		fsys[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	p, err := rules.Load(fsys, ".")
	if err != nil {
		b.Fatal(err)
	}
	if plan, ok := p.Timeline.Windows[0].Turn.Preparation(); ok {
		b.Fatalf("still prepared: %+v", plan)
	}
	return p
}

// BenchmarkCandidateEvent measures one confident candidate message through
// routing and defer (producing the LLM request), then its reply through
// the guardrails (producing the agent message), and the end of its speech.
// Three engine steps per op. A fresh session is started
// every 20 events, so session setup is included, amortized.
func BenchmarkCandidateEvent(b *testing.B) {
	p := loadDayOne(b)
	// The engine's own path, and the pack as shipped: DayOne screens every
	// message with its input checks (a script and an expression) and
	// every reply with its tripwire.
	bare := *p
	bare.Guardrails.Input, bare.Guardrails.Tripwires = nil, nil
	b.Run("engine", func(b *testing.B) { candidateEvents(b, &bare) })
	b.Run("dayone", func(b *testing.B) { candidateEvents(b, p) })
}

func candidateEvents(b *testing.B, p *rules.Pack) {
	conf := 0.92
	ev := &engine.CandidateEvent{Type: engine.EventMessage, Source: "voice", Text: "I would check the gateway logs and replay the failed payment.", STTConfidence: &conf}
	// A different answer each time: the pack says no line more than
	// three times, and this measures lines that pass.
	var answers [20]string
	for i := range answers {
		answers[i] = fmt.Sprintf("Good. Which log line would confirm retry %d fired twice?", i+1)
	}
	var (
		s   *engine.Session
		out []engine.Effect
		t   int64
		n   int
	)
	b.ReportAllocs()
	for b.Loop() {
		if n%20 == 0 {
			s = engine.New(p, engine.Options{})
			t = 0
			out, _ = s.Step(engine.Input{T: 0, Type: engine.InputAdvance}, out[:0])
		}
		answer := answers[n%20]
		n++
		t += 5000
		var err error
		out, err = s.Step(engine.Input{T: t, Type: engine.InputCandidate, Candidate: ev}, out[:0])
		if err != nil {
			b.Fatal(err)
		}
		var id string
		// The message also makes the opener's request stale, and the
		// request asked again comes after the reply's: answer the reply.
		for i := range out {
			if out[i].Type == engine.EffectLLMRequest && out[i].Kind == "reply" {
				id = out[i].ID
			}
		}
		if id == "" {
			b.Fatalf("no reply llm_request at %d: %+v", t, out)
		}
		out, err = s.Step(engine.Input{T: t + 700, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: id, Text: answer}}, out[:0])
		if err != nil {
			b.Fatal(err)
		}
		id = ""
		for i := range out {
			if out[i].Type == engine.EffectAgentMessage {
				id = out[i].ID
			}
		}
		if id == "" {
			b.Fatalf("no agent_message at %d: %+v", t+700, out)
		}
		if out, err = s.Step(engine.Input{T: t + 4000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: id}}, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadDayOne(b *testing.B) {
	fsys := os.DirFS("../scenarios/dayone")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rules.Load(fsys, "."); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoardroomSession plays the whole Boardroom session with its
// built-in presenter, dry-run model and simulated voice: phases, some 150
// buffer refreshes, six exchanges and the debrief, every model call
// assembled from up to eleven context files. "dryrun" is baton dryrun's
// work (the dry-run model script answering every call included);
// "engine" replays the same recorded inputs through the engine alone.
func BenchmarkBoardroomSession(b *testing.B) {
	p, evs := loadBoardroom(b)
	rec, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		b.Fatal(err)
	}
	realtime := func(b *testing.B) {
		perSession := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(rec.EndMS)*1e6/perSession, "x_realtime")
	}
	b.Run("dryrun", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dryrun.Run(p, dryrun.Options{Events: evs}); err != nil {
				b.Fatal(err)
			}
		}
		realtime(b)
	})
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		var out []engine.Effect
		for b.Loop() {
			s := engine.New(p, engine.Options{})
			for _, in := range rec.Inputs {
				out, _ = s.Step(in, out[:0])
			}
			if !s.Ended() {
				b.Fatal("the replayed session did not end")
			}
		}
		realtime(b)
		// What a session holds in its context files at its end, beyond
		// the pack's texts every session shares.
		owned := 0
		for _, f := range rec.Files {
			if f.Class != "immutable" && !(f.Writes == 1 && f.UpdatedMS == 0) {
				owned += len(f.Text)
			}
		}
		b.ReportMetric(float64(owned), "context_B/session")
	})
}

func loadBoardroom(b *testing.B) (*rules.Pack, []events.Timed) {
	fsys := os.DirFS("../scenarios/boardroom")
	p, err := rules.Load(fsys, ".")
	if err != nil {
		b.Fatal(err)
	}
	f, err := fsys.Open("candidate.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	evs, err := events.ReadAll(f)
	if err != nil {
		b.Fatal(err)
	}
	return p, evs
}

// BenchmarkAssembleMemberRequest builds a board member's request from
// its eleven context files, as they stand late in a Boardroom session.
func BenchmarkAssembleMemberRequest(b *testing.B) {
	p, evs := loadBoardroom(b)
	res, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		b.Fatal(err)
	}
	// The session as it stood at 09:00, just before a buffer refresh.
	s := engine.New(p, engine.Options{})
	var out []engine.Effect
	for _, in := range res.Inputs {
		if in.T > 9*60_000 {
			break
		}
		out, _ = s.Step(in, out[:0])
	}
	b.ReportAllocs()
	var req *engine.LLMRequest
	for b.Loop() {
		req = engine.AssembleForBench(s, "skeptic")
	}
	if len(req.Files) != 11 {
		b.Fatalf("%d files: %v", len(req.Files), req.Files)
	}
}
