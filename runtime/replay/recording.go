package replay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/record"
)

// Recording is a session log replayed with the pack it was written with:
// what really happened, as a what-if's baseline. A log stores its inputs
// and only digests of its effects, so the effects are recomputed, and
// checked against the digests, with that pack.
type Recording struct {
	// Path is the log's file.
	Path    string
	Session Session
	// Pack is the pack the log was written with.
	Pack *rules.Pack
	// Result is the recorded session as a dry run reports one: every
	// input with the step it made, every effect, where the clock ended.
	// An agent message's SpeechMS is how long it played (its speech_done
	// came that much later), or the simulated voice's time for one whose
	// speech_done the log does not hold.
	Result *record.Result
}

// ErrNotReproduced marks a log that does not replay with the pack it was
// written with: its effects cannot be recomputed, so there is no baseline
// to compare a what-if with.
var ErrNotReproduced = errors.New("the log does not replay with its own pack")

// OpenRecording replays the log at path with the pack open returns for its
// session, which must be the content the log was written with (the same
// hash) on this engine version. Any step that replays differently is an
// error wrapping ErrNotReproduced.
func OpenRecording(path string, open func(s *Session) (*rules.Pack, error)) (*Recording, error) {
	rec, err := wal.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := sessionOf(rec)
	p, err := open(&s)
	if err != nil {
		return nil, err
	}
	if err := wal.CheckHeader(&rec.Header, p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	res := &record.Result{}
	replayed, err := wal.Replay(p, rec, func(_ uint64, in *engine.Input, effects []engine.Effect, stepErr error) {
		res.Inputs = append(res.Inputs, *in)
		own := slices.Clone(effects)
		res.Steps = append(res.Steps, record.Step{Effects: own, Err: stepErr})
		for _, e := range own {
			res.Records = append(res.Records, record.Record{Effect: e})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n := len(replayed.Mismatches); n > 0 {
		return nil, fmt.Errorf("%s: %w: %d step(s) differ, the first %s", path, ErrNotReproduced, n, replayed.Mismatches[0].String())
	}
	res.EndMS = replayed.Session.Now()
	res.Files = replayed.Session.ContextFiles()
	res.Coverage = replayed.Session.Coverage()
	spoken(p, res)
	return &Recording{Path: path, Session: s, Pack: p, Result: res}, nil
}

// spoken sets each agent message's SpeechMS from the speech_done that
// reported its end; a message the log holds none for (the session ended
// while it played, or a torn tail) gets the simulated voice's time.
func spoken(p *rules.Pack, res *record.Result) {
	done := map[string]int64{}
	for _, in := range res.Inputs {
		if in.Type == engine.InputSpeechDone && in.Speech != nil {
			if _, seen := done[in.Speech.ID]; !seen {
				done[in.Speech.ID] = in.T
			}
		}
	}
	voice := sim.NewVoice(p)
	for i := range res.Records {
		r := &res.Records[i]
		if r.Type != engine.EffectAgentMessage {
			continue
		}
		if t, ok := done[r.ID]; ok && t >= r.T {
			r.SpeechMS = t - r.T
		} else {
			r.SpeechMS = voice.Duration(r.Agent, r.Text)
		}
	}
}
