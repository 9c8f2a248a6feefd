package service

import (
	"sync/atomic"
	"time"
)

// An input's answer is decided once, by whichever comes first: the
// session (an ack, or an error) or the ack deadline (Config.AckDeadline).
// Where the input stands when the deadline passes says what the client
// may be told:
//
//   - still queued (waiting for room in the inbox, behind a stalled write,
//     or read just before the process was paused): it is answered
//     unavailable, not applied, and the session drops it unwritten;
//   - being written: the write cannot be called back (a journal fsync, a
//     JetStream publish retried under its message id), so it is answered
//     unavailable with the outcome unknown and the log position it takes
//     if the write lands. The session applies it if the write succeeds,
//     but never acknowledges it; a resume says whether it is in the log
//     (SessionState.LastInputSeq).
const (
	ansQueued  int32 = iota // not yet written
	ansWriting              // its log write has begun
	ansDone                 // answered
)

// Outcomes of an input answered unavailable (ErrorFrame.Outcome).
const (
	OutcomeNotApplied = "not_applied"
	OutcomeUnknown    = "unknown"
)

// answerOnce is an input's answer state, shared by the session and the
// deadline's timer.
type answerOnce struct {
	state atomic.Int32
	seq   atomic.Uint64 // the log position of its write, once begun
	// deadline is when the answer is due, on the kernel's clock (it
	// guards the client's wait, not session time); zero for none.
	deadline time.Time
	timer    *time.Timer
}

// claim takes the right to answer, before the write or after it began.
func (a *answerOnce) claim() bool {
	if a.state.CompareAndSwap(ansQueued, ansDone) || a.state.CompareAndSwap(ansWriting, ansDone) {
		a.stop()
		return true
	}
	return false
}

// begin marks the input's write as begun at log position seq. It fails if
// the input was answered already (its deadline passed): it must then not
// be written at all.
func (a *answerOnce) begin(seq uint64) bool {
	a.seq.Store(seq)
	return a.state.CompareAndSwap(ansQueued, ansWriting)
}

// overdue reports whether the deadline has passed, whether or not its
// timer has fired yet: a process paused and resumed runs its goroutines
// and timers in no set order.
func (a *answerOnce) overdue() bool {
	return !a.deadline.IsZero() && !time.Now().Before(a.deadline)
}

func (a *answerOnce) stop() {
	if a.timer != nil {
		a.timer.Stop()
	}
}

// expire answers an input at its deadline: the error the client gets, or
// nil if it was answered already.
func (a *answerOnce) expire(limit time.Duration) *ProtoError {
	if a.state.CompareAndSwap(ansQueued, ansDone) {
		pe := perr(CodeUnavailable, "input not applied: not acknowledged within %s; reconnect and resume", limit)
		pe.Outcome = OutcomeNotApplied
		return pe
	}
	if a.state.CompareAndSwap(ansWriting, ansDone) {
		seq := a.seq.Load()
		pe := perr(CodeUnavailable, "outcome unknown: the log write of input %d did not complete within %s; reconnect and resume: the input was applied if the resume's last_input_seq is %d", seq, limit, seq)
		pe.Outcome, pe.InputSeq = OutcomeUnknown, seq
		return pe
	}
	return nil
}

// expireAfter arms the deadline of an input read now: when it passes
// unanswered, send gets its error.
func (a *answerOnce) expireAfter(limit time.Duration, send func(*ProtoError)) {
	if limit <= 0 {
		return
	}
	a.deadline = time.Now().Add(limit)
	a.timer = time.AfterFunc(limit, func() {
		if pe := a.expire(limit); pe != nil {
			send(pe)
		}
	})
}
