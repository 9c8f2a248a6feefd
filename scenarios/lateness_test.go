package scenarios_test

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

var variations = flag.Int("variations", 50, "seeded variations of DayOne's candidate in TestScheduledTurnsOnTime (BENCHMARKS.md uses 1000)")

// scheduled are the turn kinds whose time DayOne knows ahead: prepared.
var scheduled = []string{"window", "anchor", "nudge"}

func slowModel(ms int64) []dryrun.Reply { return []dryrun.Reply{{Repeat: true, DelayMS: &ms}} }

func dayone(t testing.TB) (*rules.Pack, []events.Timed) { return loadBundled(t, "dayone") }

// vary moves each burst of the candidate's events (events within 1.5 s of
// each other: a mic, its speech end and its message) by the same seeded
// offset of up to ±20 s, keeping their order, and drops one burst in ten.
func vary(evs []events.Timed, seed uint64, end int64) []events.Timed {
	rng := rand.New(rand.NewPCG(seed, 0x7661727931))
	var out []events.Timed
	var shift, last, floor int64
	drop := false
	for i, ev := range evs {
		if i == 0 || ev.T-last > 1500 {
			shift = rng.Int64N(40_001) - 20_000
			drop = rng.IntN(10) == 0
		}
		last = ev.T
		if drop {
			continue
		}
		t := max(ev.T+shift, floor)
		if t >= end {
			break
		}
		ev.T, floor = t, t
		out = append(out, ev)
	}
	return out
}

// TestScheduledTurnsOnTime: with a model that takes 2 s per call, every
// DayOne window opener, nudge and anchor is said at its due time (within a
// tick), in the built-in run and in seeded variations of its candidate,
// except a line whose context changed less than the model's latency
// before it was due (the candidate spoke, another role did): that line is
// asked for again and waits for its answer, as on_stale: regenerate
// says, and is late by no more than the model's latency.
func TestScheduledTurnsOnTime(t *testing.T) {
	p, evs := dayone(t)
	const latency = 2000
	tick := p.Tick.MS
	var total, late, builtInLate int
	var worst int64
	for v := 0; v <= *variations; v++ {
		run := evs
		if v > 0 {
			run = vary(evs, uint64(v), p.Duration.MS)
		}
		res, err := dryrun.Run(p, dryrun.Options{Events: run, Replies: slowModel(latency), Seed: uint64(v)})
		if err != nil {
			t.Fatalf("variation %d: %v", v, err)
		}
		// When each scheduled turn's line was last asked for.
		asked := map[string]int64{}
		onTime := 0
		for _, r := range res.Records {
			switch {
			case r.Type == engine.EffectLLMRequest && r.Request.Prepare != nil:
				asked[r.Rule+"/"+r.Kind] = r.T
			case r.Type == engine.EffectAgentMessage && slices.Contains(scheduled, r.Kind):
				l := r.Lateness
				if l == nil {
					t.Fatalf("variation %d: %s at %s has no lateness", v, r.Rule, rules.FormatClock(r.T))
				}
				if r.T != l.DueMS+l.LateMS {
					t.Fatalf("variation %d: %s said at %d, due %d late %d", v, r.Rule, r.T, l.DueMS, l.LateMS)
				}
				total++
				if l.LateMS <= tick {
					onTime++
					continue
				}
				late++
				worst = max(worst, l.LateMS)
				if v == 0 {
					builtInLate++
				}
				at, ok := asked[r.Rule+"/"+r.Kind]
				if !ok || l.DueMS-at >= latency || l.LateMS > latency+tick {
					t.Errorf("variation %d: %s %s due %s said %s late (last asked %s)", v, r.Kind, r.Rule,
						rules.FormatClock(l.DueMS), rules.FormatClock(l.LateMS), rules.FormatClock(at))
				}
			}
		}
		if v == 0 {
			checkBuiltIn(t, res, latency)
		}
		if onTime == 0 {
			t.Fatalf("variation %d: no scheduled turn on time", v)
		}
	}
	if builtInLate > 0 {
		t.Errorf("%d scheduled turns late in the built-in run", builtInLate)
	}
	t.Logf("%d runs, %d scheduled turns: %d within a tick, %d late (context changed under %dms before due), worst %dms",
		*variations+1, total, total-late, late, latency, worst)
}

// checkBuiltIn checks the built-in run against the pack's own numbers,
// not the lateness the engine reports: the anchor at 03:00.0, every
// window opener at its open time or when the floor it waited for freed,
// every nudge its silence timeout after the question finished.
func checkBuiltIn(t *testing.T, res *record.Result, latency int64) {
	t.Helper()
	p, _ := dayone(t)
	opens := map[string]int64{}
	for _, w := range p.Timeline.Windows {
		opens[w.ID] = w.Open.MS
	}
	var lastDone, lastFree int64
	for i, in := range res.Inputs {
		if in.Type == engine.InputSpeechDone {
			lastDone = in.T / p.Tick.MS * p.Tick.MS // the engine's clock is in ticks
		}
		for _, e := range res.Steps[i].Effects {
			switch {
			case e.Type == engine.EffectAutoAdvance:
				lastFree = e.T
			case e.Type == engine.EffectAgentMessage && e.Kind == "anchor":
				if e.T != 180_000 {
					t.Errorf("BA anchor said at %s, want 03:00.0", rules.FormatClock(e.T))
				}
			case e.Type == engine.EffectAgentMessage && e.Kind == "window":
				if e.T != opens[e.Rule] && e.T != lastFree && e.T != lastDone {
					t.Errorf("%s said at %s: not at its open time (%s) nor when the floor freed", e.Rule, rules.FormatClock(e.T), rules.FormatClock(opens[e.Rule]))
				}
			case e.Type == engine.EffectAgentMessage && e.Kind == "nudge":
				if e.T-lastDone != p.Silence.Steps[0].After.MS {
					t.Errorf("nudge at %s, %s after the question ended at %s", rules.FormatClock(e.T), rules.FormatClock(e.T-lastDone), rules.FormatClock(lastDone))
				}
			}
		}
	}
	_ = latency
}

// TestModelSlowerThanLead: a model slower than the 3 s lead does not
// make the hard anchor late: it says its fallback at 03:00.0 and says
// why in a warning, and the late answer is not said.
func TestModelSlowerThanLead(t *testing.T) {
	p, evs := dayone(t)
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Replies: slowModel(3700)})
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, r := range res.Records {
		if r.Type == engine.EffectNote && r.Kind == engine.NoteWarning && r.Rule == "A1_BA_INTERRUPT" {
			warned = true
		}
		if r.Type == engine.EffectAgentMessage && r.Kind == "anchor" {
			if r.T != 180_000 || !r.Fallback || (r.Lateness != nil && r.Lateness.LateMS != 0) {
				t.Fatalf("anchor at %d, fallback %v, %+v; want its fallback at 03:00.0, on time", r.T, r.Fallback, r.Lateness)
			}
			if !warned {
				t.Fatal("the anchor fell back with no warning saying why")
			}
			return
		}
	}
	t.Fatal("no anchor line")
}

// TestCoverLines: with a 3 s model every reply starts with one cover
// line 1.2 s after it was due (DayOne's llm.cover.after), never more than
// one per turn, and no other kind gets one. (Cover lines keep to
// guardrails.max_repeats like every line: DayOne has enough for a
// session of slow replies.)
func TestCoverLines(t *testing.T) {
	p, evs := dayone(t)
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Replies: slowModel(3000)})
	if err != nil {
		t.Fatal(err)
	}
	after := p.LLM.Cover.After.MS
	covers, replies := 0, 0
	var cover *record.Record
	for i := range res.Records {
		r := &res.Records[i]
		if r.Type != engine.EffectAgentMessage {
			continue
		}
		switch r.Kind {
		case rules.KindCover:
			if cover != nil {
				t.Errorf("two cover lines in a row at %s", rules.FormatClock(r.T))
			}
			if r.Lateness.LateMS != after {
				t.Errorf("cover at %s is %dms after its turn was due, want %d", rules.FormatClock(r.T), r.Lateness.LateMS, after)
			}
			covers++
			cover = r
		case "reply":
			replies++
			if cover == nil || cover.Rule != r.Rule || cover.Lateness.DueMS != r.Lateness.DueMS {
				t.Errorf("reply at %s without its cover line", rules.FormatClock(r.T))
			}
			cover = nil
		default:
			if cover != nil && r.Kind != "anchor" {
				t.Errorf("%s at %s followed a cover line", r.Kind, rules.FormatClock(r.T))
			}
			cover = nil
		}
	}
	if covers == 0 || replies == 0 {
		t.Fatalf("%d covers, %d replies", covers, replies)
	}
}

// TestFirstAudioAfterSpeech: with a 3 s model, after the candidate stops
// speaking the first agent audio (a cover line or the reply) comes no
// later than speech end + the resume buffer + llm.cover.after + a tick,
// in the built-in run and in seeded variations, unless the turn itself
// was held (the defer rule while the candidate types or talks on, another
// agent holding the floor), the candidate was typing when the cover was
// due, or another turn's cover line was still playing (its end is then
// the first silence, and the turn's own cover follows it).
func TestFirstAudioAfterSpeech(t *testing.T) {
	p, evs := dayone(t)
	resume, after, tick := p.TurnTaking.SpeechResume.MS, p.LLM.Cover.After.MS, p.Tick.MS
	var replies, held, typing, coverPlaying int
	var worstFree int64
	for v := 0; v <= *variations; v++ {
		run := evs
		if v > 0 {
			run = vary(evs, uint64(v), p.Duration.MS)
		}
		res, err := dryrun.Run(p, dryrun.Options{Events: run, Replies: slowModel(3000), Seed: uint64(v)})
		if err != nil {
			t.Fatal(err)
		}
		speechEnd, typedAt, doneAt := int64(-1), int64(-1), int64(-1)
		for i, in := range res.Inputs {
			switch {
			case in.Type == engine.InputCandidate && in.Candidate.Type == engine.EventSpeechEnd:
				speechEnd = in.T
			case in.Type == engine.InputCandidate && in.Candidate.Typing != nil && *in.Candidate.Typing:
				typedAt = in.T
			case in.Type == engine.InputSpeechDone:
				doneAt = in.T / tick * tick
			}
			for _, e := range res.Steps[i].Effects {
				if e.Type != engine.EffectAgentMessage || speechEnd < 0 {
					continue
				}
				first := e
				end := speechEnd
				speechEnd = -1
				if first.Kind != rules.KindCover && first.Kind != "reply" {
					continue
				}
				replies++
				due := first.Lateness.DueMS
				switch {
				case due > end+resume+tick:
					held++
				case first.T-due <= after+tick:
					worstFree = max(worstFree, first.T-(end+resume+after))
				case typedAt >= due:
					typing++
				case first.Kind == rules.KindCover && first.T == doneAt:
					coverPlaying++
				default:
					t.Errorf("variation %d: after speech ending %s, first audio %s %s at %s (due %s)", v,
						rules.FormatClock(end), first.Kind, first.Rule, rules.FormatClock(first.T), rules.FormatClock(due))
				}
			}
		}
	}
	if worstFree > tick {
		t.Errorf("first audio up to %dms past speech end + resume + cover", worstFree)
	}
	t.Logf("%d replies: %d first heard within speech end + %dms + %dms + a tick (worst %+dms), %d held by the turn-taking rules, %d while the candidate typed, %d behind another turn's cover line",
		replies, replies-held-typing-coverPlaying, resume, after, worstFree, held, typing, coverPlaying)
}
