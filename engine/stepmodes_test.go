package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

// A host may sleep through several deadlines (a slow machine, a paused
// process, a replay that only kept the inputs that carry data) and then
// step once. That step must fire every timer due, each at its own
// deadline and in order, exactly as if the host had woken for each.

var (
	bundledOnce  sync.Once
	bundledPacks map[string]*rules.Pack
	bundledErr   error
)

// bundled loads the bundled packs once per process: the fuzz target
// would otherwise spend most of its time compiling packs.
func bundled(t testing.TB) map[string]*rules.Pack {
	t.Helper()
	bundledOnce.Do(func() {
		bundledPacks = map[string]*rules.Pack{}
		for _, name := range stepPacks {
			p, err := rules.Load(os.DirFS("../scenarios/"+name), ".")
			if err != nil {
				bundledErr = err
				return
			}
			bundledPacks[name] = p
		}
	})
	if bundledErr != nil {
		t.Fatal(bundledErr)
	}
	return bundledPacks
}

// stepPacks are the packs the step-mode tests play.
var stepPacks = []string{"dayone", "hotseat", "boardroom", "brain"}

// fuzzSpanMS is how long FuzzStepModes' sessions run. The bundled packs
// run for 10 to 60 minutes, and ticking through an hour is 36,000
// steps per input; the first twenty seconds already hold opening turns,
// windows, silence ladders, jobs and model answers, at a small part of
// the cost. TestCatchUpEqualsJump plays whole sessions.
const fuzzSpanMS = 20_000

var (
	fuzzPacksOnce sync.Once
	fuzzPacks     map[string]*rules.Pack
)

// shortPacks are the bundled packs cut to end at fuzzSpanMS, made once:
// a copy of a loaded pack shares its compiled rules.
func shortPacks(t testing.TB) map[string]*rules.Pack {
	full := bundled(t)
	fuzzPacksOnce.Do(func() {
		fuzzPacks = map[string]*rules.Pack{}
		for name, p := range full {
			q := *p
			q.Duration.MS = min(q.Duration.MS, fuzzSpanMS)
			fuzzPacks[name] = &q
		}
	})
	return fuzzPacks
}

func readCandidate(t testing.TB, file string) []events.Timed {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := events.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// effectLines is one JSON object per effect, the form logs and replays
// compare.
func effectLines(t testing.TB, effs []engine.Effect) []string {
	t.Helper()
	out := make([]string, len(effs))
	for i := range effs {
		b, err := json.Marshal(&effs[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// diffEffects is cmp.Diff over effects as JSON lines, empty when they are
// the same. Request bodies run to kilobytes each, so they are left out of
// the report whenever the difference shows without them.
func diffEffects(t testing.TB, want, got []engine.Effect) string {
	full := cmp.Diff(effectLines(t, want), effectLines(t, got))
	if full == "" {
		return ""
	}
	if short := cmp.Diff(effectLines(t, withoutRequests(want)), effectLines(t, withoutRequests(got))); short != "" {
		return short
	}
	return full
}

func withoutRequests(effs []engine.Effect) []engine.Effect {
	out := make([]engine.Effect, len(effs))
	for i, e := range effs {
		e.Request = nil
		out[i] = e
	}
	return out
}

func recordEffects(recs []record.Record) []engine.Effect {
	out := make([]engine.Effect, len(recs))
	for i := range recs {
		out[i] = recs[i].Effect
	}
	return out
}

// withoutAdvances keeps the inputs that carry data. A trailing advance
// stays: it is what carries the session to an end that no input causes.
func withoutAdvances(ins []engine.Input) []engine.Input {
	var out []engine.Input
	for i, in := range ins {
		if in.Type == engine.InputAdvance && i < len(ins)-1 {
			continue
		}
		out = append(out, in)
	}
	return out
}

// catchUp replays ins through a fresh session and returns its effects and
// how many steps fired timers at two or more distinct deadlines.
func catchUp(p *rules.Pack, opts engine.Options, ins []engine.Input) ([]engine.Effect, int, error) {
	s := engine.New(p, opts)
	var out []engine.Effect
	multi := 0
	for _, in := range ins {
		n := len(out)
		var err error
		out, err = s.Step(in, out)
		if err != nil && !errors.Is(err, engine.ErrEnded) {
			return out, multi, fmt.Errorf("input at %dms (%s): %w", in.T, in.Type, err)
		}
		deadlines := map[int64]bool{}
		for _, e := range out[n:] {
			if e.T < in.T {
				deadlines[e.T] = true
			}
		}
		if len(deadlines) >= 2 {
			multi++
		}
	}
	return out, multi, nil
}

func TestCatchUpEqualsJump(t *testing.T) {
	packs := bundled(t)
	dayone := readCandidate(t, "../scenarios/dayone/candidate.jsonl")
	hotseat := readCandidate(t, "../scenarios/hotseat/candidate.jsonl")
	boardroom := readCandidate(t, "../scenarios/boardroom/candidate.jsonl")
	noReply, slow, slower, slowest := int64(0), int64(2000), int64(4000), int64(19000)
	cases := []struct {
		name string
		pack string
		opt  dryrun.Options
	}{
		{"dayone/candidate", "dayone", dryrun.Options{Events: dayone}},
		{"dayone/silent", "dayone", dryrun.Options{}},
		// Timeouts and failures put adapter timers in the table too.
		{"dayone/flaky_model", "dayone", dryrun.Options{Events: dayone, Replies: []dryrun.Reply{
			{Call: 2, NoReply: true},
			{Call: 4, Error: "server"},
			{Call: 6, DelayMS: &noReply, Text: "Instantly: which log line shows the retry?"},
		}}},
		// A model slower than the preparation lead and one slower than
		// the cover threshold: prepared, re-asked and cover lines all
		// have timers of their own.
		{"dayone/slow_model", "dayone", dryrun.Options{Events: dayone, Replies: []dryrun.Reply{{Repeat: true, DelayMS: &slow}}}},
		{"dayone/slower_than_lead", "dayone", dryrun.Options{Events: dayone, Replies: []dryrun.Reply{{Repeat: true, DelayMS: &slower}}}},
		{"hotseat/candidate", "hotseat", dryrun.Options{Events: hotseat, Seed: 7}},
		{"hotseat/silent", "hotseat", dryrun.Options{Seed: 7}},
		// Jobs on a period, reruns and context writes; and a model slower
		// than the period, so starts meet runs in flight.
		{"boardroom/candidate", "boardroom", dryrun.Options{Events: boardroom}},
		{"boardroom/slow_jobs", "boardroom", dryrun.Options{Events: boardroom, Replies: []dryrun.Reply{{Job: "question", Repeat: true, DelayMS: &slowest}}}},
	}
	caughtUp := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := packs[c.pack]
			res, err := dryrun.Run(p, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			want := recordEffects(res.Records)
			ins := withoutAdvances(res.Inputs)
			got, multi, err := catchUp(p, engine.Options{Seed: c.opt.Seed}, ins)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffEffects(t, want, got); diff != "" {
				t.Errorf("catching up over dropped advances changed the effects (-stepped +caught up):\n%s", diff)
			}
			caughtUp += multi
			t.Logf("%d of %d inputs kept; %d steps fired timers at two or more deadlines", len(ins), len(res.Inputs), multi)
		})
	}
	// Without a step that fired several deadlines at once this test would
	// compare a run with itself. Hot Seat's sessions have too few timers to
	// be sure of one; DayOne's have plenty.
	if caughtUp == 0 {
		t.Error("no step fired timers at two or more deadlines")
	}
}

// Texts the fuzzer picks from: keywords that route to each DayOne role,
// none, and the mentions both packs know.
var fuzzTexts = []string{
	"I would reproduce it from the logs first.",
	"The launch deadline matters more to the business.",
	"Hotfix first, then a rollback plan.",
	"Not sure yet.",
	"@qa which replay test would you trust?",
	"@ba what is the scope?",
	"@techlead is the hotfix risky?",
	"@marcus, the export is tested on staging.",
}

var fuzzRoles = []string{"qa", "ba", "tech_lead", "marcus", "priya", "james", "nobody"}

// fuzzEvents turns fuzz bytes into candidate events, three bytes each:
// what, how long after the previous event, and a choice of text or role.
// Sixteen events fill a fuzzed session (fuzzSpanMS); more would only
// make each input slower.
func fuzzEvents(data []byte, durationMS int64) []events.Timed {
	var out []events.Timed
	var t int64
	for i := 0; i+3 <= len(data) && len(out) < 16; i += 3 {
		what, gap, arg := data[i], int64(data[i+1]), int(data[i+2])
		t += gap * 250
		if t >= durationMS {
			break
		}
		ev := engine.CandidateEvent{}
		on := arg%2 == 0
		switch what % 8 {
		case 0, 1:
			ev.Type, ev.Text, ev.Source = engine.EventMessage, fuzzTexts[arg%len(fuzzTexts)], "text"
		case 2:
			ev.Type, ev.Text, ev.Source = engine.EventMessage, fuzzTexts[arg%len(fuzzTexts)], "voice"
			conf := float64(arg%101) / 100
			ev.STTConfidence = &conf
		case 3:
			ev.Type, ev.Text = engine.EventMessage, fuzzTexts[arg%len(fuzzTexts)]
			ev.AddressedTo = fuzzRoles[arg%len(fuzzRoles)]
		case 4:
			ev.Type, ev.MicActive = engine.EventMicState, &on
		case 5:
			ev.Type, ev.Typing = engine.EventTypingState, &on
		case 6:
			ev.Type = engine.EventSpeechEnd
		case 7:
			ev.Type, ev.Code = engine.EventCodeSubmitted, "fix()"
		}
		out = append(out, events.Timed{T: t, Event: ev})
	}
	return out
}

// FuzzStepModes plays random candidates through three hosts that differ
// only in when they step: at each deadline, every tick, and only when an
// input carries data. All three must see the same effects. Sessions are
// cut to fuzzSpanMS, so that an input costs milliseconds, not tenths of
// a second.
func FuzzStepModes(f *testing.F) {
	f.Add(byte(0), []byte{0, 8, 0, 4, 20, 0, 2, 4, 3, 4, 12, 1, 3, 40, 2})
	f.Add(byte(0), []byte{5, 4, 0, 1, 2, 0, 5, 30, 1, 6, 0, 0, 0, 200, 4, 0, 255, 5})
	f.Add(byte(0), []byte{})
	f.Add(byte(1), []byte{0, 100, 0, 0, 100, 1, 0, 100, 7, 0, 100, 2})
	f.Add(byte(1), []byte{4, 80, 0, 1, 8, 3, 6, 4, 0, 4, 8, 1, 0, 120, 2})
	f.Add(byte(2), []byte{0, 8, 0, 4, 20, 0, 2, 4, 3, 4, 12, 1, 3, 40, 2})
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		name := stepPacks[int(which)%len(stepPacks)]
		p := shortPacks(t)[name]
		evs := fuzzEvents(data, p.Duration.MS)
		opt := dryrun.Options{Events: evs, Seed: uint64(which)}
		jump, err := dryrun.Run(p, opt)
		if err != nil {
			// Every event fuzzEvents makes is valid for every pack.
			t.Fatalf("%s refused the events: %v", name, err)
		}
		want := recordEffects(jump.Records)
		for _, r := range jump.Records {
			if r.Type == engine.EffectEngineError {
				t.Fatalf("%s: %s", name, r.Reason)
			}
		}

		opt.StepMS = p.Tick.MS
		tick, err := dryrun.Run(p, opt)
		if err != nil {
			t.Fatalf("ticking: %v", err)
		}
		if diff := sameEffects(t, want, recordEffects(tick.Records)); diff != "" {
			t.Errorf("%s: ticking every %dms differs from jumping (-jump +tick):\n%s", name, opt.StepMS, diff)
		}

		got, _, err := catchUp(p, engine.Options{Seed: opt.Seed}, withoutAdvances(jump.Inputs))
		if err != nil {
			t.Fatalf("catching up: %v", err)
		}
		if diff := sameEffects(t, want, got); diff != "" {
			t.Errorf("%s: catching up differs from jumping (-jump +catch-up):\n%s", name, diff)
		}
	})
}

// sameEffects is diffEffects, without encoding every effect when the two
// are deeply equal (they almost always are): encoding was most of an
// input's cost.
func sameEffects(t testing.TB, want, got []engine.Effect) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return diffEffects(t, want, got)
}
