package service

import (
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// A session whose pack prepares lines due at second 0 (a window opening
// at 00:00) does not start its clock at once. The actor gives the engine
// its prepare input, which asks the model for those lines, and waits for
// the answers: at most the longest lead they were asked with, less when
// every one is in. Answers that came are handed in at engine time 0; the
// ones still out are failed (engine.NotReady) and their turns ask again
// when due. Then engine time 0 is placed on the wall clock, and that
// placement is logged with the step that starts the clock, so recovery
// counts session time from it and not from the log's creation. A client
// input that arrives meanwhile ends the wait: the session has begun, with
// whatever is prepared by then.

// appendStep logs a step record; the one that places the clock is
// synced at once, as recovery needs it to know when the session started.
func (s *session) appendStep(seq uint64, st wal.Step) error {
	if err := s.wl.AppendStep(seq, st); err != nil || st.StartWall == nil {
		return err
	}
	return s.wl.Flush()
}

// preparing is the actor's state while it waits for prepared lines.
type preparing struct {
	until time.Time // when the actor stops waiting
	// startWall, once set, goes out with the next step record: the wall
	// time of engine time 0.
	startWall *time.Time
}

// prepare runs the prepare input if the engine wants one, and reports
// whether the session's clock is still waiting for prepared lines; if so,
// when to look again.
func (s *session) prepare() (waiting bool, until time.Time, err error) {
	if s.eng.NeedsPrepare() {
		if err := s.apply(engine.Input{T: 0, Type: engine.InputPrepare}, false, nil); err != nil {
			return false, time.Time{}, err
		}
	}
	if !s.eng.Preparing() {
		return false, time.Time{}, nil
	}
	now := s.srv.clock.Now()
	if s.prep.until.IsZero() {
		// Asked now, or asked again after a restart: either way the
		// wait is the longest lead of the requests still out.
		var lead int64
		for _, id := range s.eng.Waiting() {
			if r := s.requests[id]; r != nil && r.Prepare != nil {
				lead = max(lead, r.Prepare.LeadMS)
			}
		}
		s.prep.until = now.Add(time.Duration(lead) * time.Millisecond)
	}
	waitingFor := s.eng.Waiting()
	if len(waitingFor) > 0 && now.Before(s.prep.until) {
		return true, s.prep.until, nil
	}
	for _, id := range waitingFor {
		if cancel, ok := s.inflight[id]; ok {
			cancel()
			delete(s.inflight, id)
		}
		res := engine.NotReady(id)
		if err := s.apply(engine.Input{T: 0, Type: engine.InputLLMResult, LLM: &res}, false, nil); err != nil {
			return false, time.Time{}, err
		}
	}
	s.base = s.srv.clock.Now()
	start := s.base.UTC()
	s.prep.startWall = &start
	if err := s.apply(engine.Input{T: 0, Type: engine.InputAdvance}, false, nil); err != nil {
		return false, time.Time{}, err
	}
	s.prep.until = time.Time{}
	return false, time.Time{}, nil
}
