package engine

import "strings"

// Model requests and their owners. Every request the engine asks of a
// model has exactly one owner, recorded where its id is made: the floor
// (the turn holding it, its regenerations included; turns.go), a
// preparation asked before its turn is due (prepare.go), a background
// job or setup phase (jobs.go), or a sequence step (sequence.go). A
// result or a timeout is handed to that owner with one lookup; a request
// nobody owns any more (superseded, dropped, timed out) is ignored,
// deterministically. Ownership moves in two places only: a turn that
// adopts the request its preparation still has out, and a turn that
// gives way and hands that request back (prepare.go).
//
// A request is open exactly while its timeout is in the timer table:
// openRequest arms it, and a result, the timeout or dropRequest ends it.
// A feature that asks a model implements requestOwner in its own file;
// nothing here changes.

// requestOwner is a feature that waits for model requests. Each call
// gets a request it opened and still owned; the owner checks that it
// still wants it (a turn that gave way does not).
type requestOwner interface {
	answered(s *Session, r *LLMResult)
	timedOut(s *Session, id string)
}

// requests holds the open model requests. A session has a handful open
// at once, so a slice searched in order beats a map and allocates only
// when it grows.
type requests struct {
	open []openRequest
}

type openRequest struct {
	id    string
	owner requestOwner
}

func (rq *requests) find(id string) int {
	for i := range rq.open {
		if rq.open[i].id == id {
			return i
		}
	}
	return -1
}

// own records (or moves) id's owner.
func (rq *requests) own(id string, o requestOwner) {
	if i := rq.find(id); i >= 0 {
		rq.open[i].owner = o
		return
	}
	rq.open = append(rq.open, openRequest{id: id, owner: o})
}

// take forgets id and returns who owned it (nil: nobody waits).
func (rq *requests) take(id string) requestOwner {
	i := rq.find(id)
	if i < 0 {
		return nil
	}
	o := rq.open[i].owner
	rq.open = append(rq.open[:i], rq.open[i+1:]...)
	return o
}

// openRequest records a request made for owner o and arms its timeout.
func (s *Session) openRequest(id string, o requestOwner, deadline int64) {
	s.reqs.own(id, o)
	s.reask.opened(id, deadline)
	s.addTimer(timer{at: deadline, kind: tLLMTimeout, key: id})
}

// dropRequest ends a request nobody will wait for: its answer, if it
// comes, is ignored.
func (s *Session) dropRequest(id string) {
	if id == "" {
		return
	}
	s.timers.cancel(tLLMTimeout, 0, id)
	s.reqs.take(id)
	s.reask.forget(id)
}

func (r *LLMResult) apply(s *Session) {
	s.timers.cancel(tLLMTimeout, 0, r.ID)
	if o := s.reqs.take(r.ID); o != nil {
		if r = s.reask.answered(s, r, o); r != nil {
			o.answered(s, r)
		}
		return
	}
	s.unowned(r)
}

// unowned notes the tool calls of a result nobody waits for (its turn
// was superseded, interrupted or ended; or a duplicate of one already
// answered): a call is owned by the request that produced it and runs
// only while that request is waited for, so none of them runs. One note
// says so; tool results under those ids would read as answers to calls
// that may already have been answered.
func (s *Session) unowned(r *LLMResult) {
	if len(r.ToolCalls) == 0 {
		return
	}
	names := make([]string, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		names[i] = c.Name
	}
	s.note("", "not run: "+strings.Join(names, ", ")+": request "+r.ID+" is no longer waited for (its turn was superseded, interrupted or ended, or it was answered already)")
}

// requestTimedOut hands a request's timeout to its owner.
func (s *Session) requestTimedOut(id string) {
	s.reask.forget(id)
	if o := s.reqs.take(id); o != nil {
		o.timedOut(s, id)
	}
}
