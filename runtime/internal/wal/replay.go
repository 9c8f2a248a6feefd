package wal

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// ErrPackChanged marks a log written with other pack contents than the
// pack given to replay it.
var ErrPackChanged = errors.New("the pack changed")

// CheckHeader reports whether a log can be replayed on this engine with p:
// a different engine version or pack content would make the replay mean
// something else, so both are refused rather than trusted.
func CheckHeader(h *Header, p *rules.Pack) error {
	var probs []string
	var changed error
	if h.Engine != engine.Version {
		probs = append(probs, fmt.Sprintf("log written by engine %q, this is %q", h.Engine, engine.Version))
	}
	if h.PackHash != p.Hash {
		probs = append(probs, fmt.Sprintf("pack %s has hash %.12s, log was written with %.12s", p.Name, p.Hash, h.PackHash))
		changed = ErrPackChanged
	}
	if len(probs) > 0 {
		return &headerError{msg: fmt.Sprintf("cannot replay session %s: %s", h.SessionID, strings.Join(probs, "; ")), changed: changed != nil}
	}
	return nil
}

// headerError is a log CheckHeader refuses; errors.Is tells a changed
// pack (which another copy of the pack may replay) from the rest.
type headerError struct {
	msg     string
	changed bool
}

func (e *headerError) Error() string        { return e.msg }
func (e *headerError) Is(target error) bool { return e.changed && target == ErrPackChanged }

// Mismatch is one input whose replayed effects differ from the recorded
// digests: a nondeterminism, never to be silently accepted.
type Mismatch struct {
	Seq   uint64
	Input engine.Input
	// Index is the first differing effect, or -1 when only the engine's
	// error differs.
	Index       int
	Recorded    *EffectDigest
	Replayed    *EffectDigest
	RecordedN   int
	ReplayedN   int
	RecordedErr string
	ReplayedErr string
}

func (m *Mismatch) String() string {
	in := fmt.Sprintf("input %d (%s at %s)", m.Seq, m.Input.Type, rules.FormatClock(m.Input.T))
	if m.Index < 0 {
		return fmt.Sprintf("%s: engine error %q, recorded %q", in, m.ReplayedErr, m.RecordedErr)
	}
	desc := func(d *EffectDigest) string {
		if d == nil {
			return "nothing"
		}
		s := fmt.Sprintf("%s at %s", d.Type, rules.FormatClock(d.T))
		if d.ID != "" {
			s += " id " + d.ID
		}
		return s + " #" + d.Hash
	}
	return fmt.Sprintf("%s: effect %d differs: replayed %s, recorded %s (%d effects replayed, %d recorded)",
		in, m.Index, desc(m.Replayed), desc(m.Recorded), m.ReplayedN, m.RecordedN)
}

// StepFunc sees each replayed input with the effects it produced.
type StepFunc func(seq uint64, in *engine.Input, effects []engine.Effect, err error)

// ReplayResult summarizes a replay.
type ReplayResult struct {
	Session    *engine.Session
	Mismatches []Mismatch
	// Unverified counts inputs whose step record was lost (torn tail).
	Unverified int
	Effects    int
}

// Replay folds rec's inputs through a new session of p, comparing each
// step's effects with the recorded digests. fn, if set, sees every step.
// An engine panic is returned as an error naming the input.
func Replay(p *rules.Pack, rec *Recovered, fn StepFunc) (res *ReplayResult, err error) {
	res = &ReplayResult{Session: engine.New(p, rec.Header.Options)}
	var seq uint64
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine panicked replaying input %d: %v\n%s", seq, r, debug.Stack())
		}
	}()
	var buf []engine.Effect
	for i := range rec.Inputs {
		seq = uint64(i + 1)
		in := &rec.Inputs[i]
		step := *in
		if st := rec.Steps[i]; st != nil {
			// The step's recorded script outcomes: calls stopped live stop
			// again, every other call runs to completion. Without a step
			// record (a torn tail) the input replays as it first ran.
			step.Scripts = st.Scripts
			if step.Scripts == nil {
				step.Scripts = &engine.ScriptFacts{}
			}
		}
		var stepErr error
		buf, stepErr = res.Session.Step(step, buf[:0])
		res.Effects += len(buf)
		if st := rec.Steps[i]; st == nil {
			res.Unverified++
		} else if m, ok := compare(seq, in, st, buf, stepErr); !ok {
			res.Mismatches = append(res.Mismatches, m)
		}
		if fn != nil {
			fn(seq, in, buf, stepErr)
		}
	}
	return res, nil
}

func compare(seq uint64, in *engine.Input, rec *Step, got []engine.Effect, stepErr error) (Mismatch, bool) {
	m := Mismatch{Seq: seq, Input: *in, Index: -1, RecordedN: len(rec.Effects), ReplayedN: len(got), RecordedErr: rec.Err}
	if stepErr != nil {
		m.ReplayedErr = stepErr.Error()
	}
	n := max(len(got), len(rec.Effects))
	for i := range n {
		var r, g *EffectDigest
		if i < len(rec.Effects) {
			r = &rec.Effects[i]
		}
		if i < len(got) {
			d := DigestEffect(&got[i])
			g = &d
		}
		if r == nil || g == nil || *r != *g {
			m.Index, m.Recorded, m.Replayed = i, r, g
			return m, false
		}
	}
	if m.RecordedErr != m.ReplayedErr {
		return m, false
	}
	return m, true
}
