package engine

// Model requests and their owners. Every request the engine asks of a
// model has exactly one owner, recorded where its id is made: the turn
// on the floor (its regenerations included), a preparation asked before
// its turn is due, a background job or setup phase, or a sequence step.
// A result or a timeout is handed to that owner with one lookup; a
// request nobody owns any more (superseded, dropped, timed out) is
// ignored, deterministically. Ownership moves in two places only: a turn
// that adopts the request its preparation still has out, and a turn
// that gives way and hands that request back (prepare.go).
//
// A request is open exactly while its timeout is in the timer table:
// openRequest arms it, and closeRequest, dropRequest and the timeout
// itself end it.

// reqOwner says which feature waits for a model request.
type reqOwner uint8

const (
	ownNone reqOwner = iota
	ownTurn          // turns.go, guardrail.go: the turn holding the floor
	ownPrep          // prepare.go: a line asked for before it is due
	ownJob           // jobs.go: a background job or a setup phase
	ownSeq           // sequence.go: one step of an exchange
)

// requests holds the open model requests. A session has a handful open
// at once, so a slice searched in order beats a map and allocates only
// when it grows.
type requests struct {
	open []openRequest
}

type openRequest struct {
	id    string
	owner reqOwner
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
func (rq *requests) own(id string, o reqOwner) {
	if i := rq.find(id); i >= 0 {
		rq.open[i].owner = o
		return
	}
	rq.open = append(rq.open, openRequest{id: id, owner: o})
}

// take forgets id and returns who owned it (ownNone: nobody waits).
func (rq *requests) take(id string) reqOwner {
	i := rq.find(id)
	if i < 0 {
		return ownNone
	}
	o := rq.open[i].owner
	rq.open = append(rq.open[:i], rq.open[i+1:]...)
	return o
}

// openRequest records a request made for owner o and arms its timeout.
func (s *Session) openRequest(id string, o reqOwner, deadline int64) {
	s.reqs.own(id, o)
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
}

func (r *LLMResult) apply(s *Session) {
	s.timers.cancel(tLLMTimeout, 0, r.ID)
	switch s.reqs.take(r.ID) {
	case ownTurn:
		s.turnAnswered(r)
	case ownPrep:
		s.prep.result(s, r)
	case ownJob:
		s.jobs.result(s, r, false)
	case ownSeq:
		s.seqs.result(s, r)
	}
}

// requestTimedOut hands a request's timeout to its owner.
func (s *Session) requestTimedOut(id string) {
	switch s.reqs.take(id) {
	case ownTurn:
		s.turnTimedOut(id)
	case ownPrep:
		s.prep.timedOut(s, id)
	case ownJob:
		s.jobs.result(s, &LLMResult{ID: id}, true)
	case ownSeq:
		s.seqs.timedOut(s, id)
	}
}
