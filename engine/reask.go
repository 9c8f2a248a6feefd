package engine

import "strings"

// DefaultReaskMaxTokens is the output cap of a request asked again after
// its answer was cut by the token limit when the request set none (0: the
// vendor's default, whose size the engine cannot know). Otherwise the cap
// is doubled.
const DefaultReaskMaxTokens = 8192

// reask asks a model again, once, when an answer came back unusable: cut
// by the token limit (Finish truncated), withheld by the vendor (Finish
// blocked) or empty (no text and no tool calls). The new request is the
// same one with a new id, owned by the same owner, with the same deadline:
// a truncated answer's cap is doubled (DefaultReaskMaxTokens when unset).
// A second such answer, or one with no time left to ask again, is handed
// to the owner as an adapter error of kind truncated, blocked or empty:
// a job's on_error runs, a turn says its fallback line.
//
// Only owners that take a new id for their request (reasker: the floor,
// jobs) are asked again; any other result passes through as it came.
type reask struct {
	// asked are the model requests still open, with what re-asking one
	// needs: its effect and deadline, and whether it already is a re-ask.
	asked []askedRequest
}

type askedRequest struct {
	effect   Effect
	deadline int64
	again    bool
}

// reasker is a request owner that can follow its request to a new id. It
// reports whether it still wants an answer (for why, "truncated",
// "blocked" or "empty"); when it does not, the result goes to it as it
// came.
type reasker interface {
	// accepts reports whether the owner takes the answer as it came
	// (asked again, or not, it is not a failure).
	accepts(s *Session, old, why string) bool
	reasked(s *Session, old, id, why string) bool
}

func (rk *reask) find(id string) int {
	for i := range rk.asked {
		if rk.asked[i].effect.ID == id {
			return i
		}
	}
	return -1
}

// emitted records a model request as it goes out.
func (rk *reask) emitted(e *Effect) {
	if e.Type != EffectLLMRequest || e.Request == nil {
		return
	}
	rk.asked = append(rk.asked, askedRequest{effect: *e})
}

// opened records the deadline of a request, as openRequest arms it.
func (rk *reask) opened(id string, deadline int64) {
	if i := rk.find(id); i >= 0 {
		rk.asked[i].deadline = deadline
	}
}

// forget drops a request that ended.
func (rk *reask) forget(id string) (askedRequest, bool) {
	i := rk.find(id)
	if i < 0 {
		return askedRequest{}, false
	}
	a := rk.asked[i]
	rk.asked = append(rk.asked[:i], rk.asked[i+1:]...)
	return a, true
}

// unusable says why an answer cannot be used as it came, or "".
func unusable(r *LLMResult) string {
	switch {
	case r.Err != nil:
		return ""
	case r.Finish == FinishTruncated:
		return FinishTruncated
	case r.Finish == FinishBlocked:
		return FinishBlocked
	case len(r.ToolCalls) == 0 && strings.TrimSpace(r.Text) == "":
		return "empty"
	}
	return ""
}

// answered looks at a result before its owner o does. It returns nil
// when the request was asked again, and the result is spent; otherwise
// what o is to take: r, or an adapter error when a re-ask failed too.
func (rk *reask) answered(s *Session, r *LLMResult, o requestOwner) *LLMResult {
	a, ok := rk.forget(r.ID)
	why := unusable(r)
	if f := &s.floor; why == "" && o == requestOwner(f) && f.active != nil && f.active.reqID == r.ID {
		why = s.unusableLine(f.active.role, r)
	}
	if !ok || why == "" {
		return r
	}
	ro, canAsk := o.(reasker)
	if !canAsk || ro.accepts(s, r.ID, why) {
		return r
	}
	if a.again || s.now >= a.deadline {
		return &LLMResult{ID: r.ID, Finish: r.Finish, Err: &AdapterError{Kind: why, Message: failedAgain(why, a.again)}}
	}
	e := a.effect
	id := s.nextID(e.ID[0])
	if !ro.reasked(s, r.ID, id, why) {
		return r
	}
	req := *e.Request
	req.TimeoutMS = a.deadline - s.now
	if why == FinishTruncated {
		req.MaxTokens = reaskCap(req.MaxTokens)
	}
	e.ID, e.Request, e.Reason = id, &req, "asked again: "+reaskReason(why)
	s.emit(e)
	rk.asked[len(rk.asked)-1].again = true
	s.openRequest(id, o, a.deadline)
	return nil
}

// unusableLine is unusable for an answer to be said by role: an answer
// that is all markdown is empty once cleaned for speech.
func (s *Session) unusableLine(role string, r *LLMResult) string {
	if why := unusable(r); why != "" || r.Err != nil || len(r.ToolCalls) > 0 {
		return why
	}
	if out, _ := s.speech(role, r.Text); out == "" {
		return "empty"
	}
	return ""
}

// reaskCap is the output cap of a request asked again after its answer
// was cut: double the one it had, DefaultReaskMaxTokens when it had none.
func reaskCap(had int) int {
	if had > 0 {
		return had * 2
	}
	return DefaultReaskMaxTokens
}

func reaskReason(why string) string {
	switch why {
	case FinishTruncated:
		return "the answer was cut by the token limit"
	case FinishBlocked:
		return "the vendor withheld the answer"
	}
	return "the answer was empty"
}

func failedAgain(why string, again bool) string {
	msg := reaskReason(why)
	if again {
		return msg + ", asked again"
	}
	return msg + ", no time left to ask again"
}

// reasked follows the turn holding the floor to its new request.
func (f *floor) reasked(s *Session, old, id, why string) bool {
	a := f.active
	if a == nil || a.reqID != old || a.state != tsGenerating {
		return false
	}
	a.reqID = id
	return true
}

// accepts takes an empty answer from a turn that already said its line
// in an earlier round: after a refused call, nothing more to say is an
// answer.
func (f *floor) accepts(_ *Session, old, why string) bool {
	a := f.active
	return why == "empty" && a != nil && a.reqID == old && a.spokeInRounds()
}

// accepts: a job's answer is its output, never taken cut or empty.
func (j *jobs) accepts(*Session, string, string) bool { return false }

// reasked follows a job to its new request.
func (j *jobs) reasked(_ *Session, old, id, _ string) bool {
	for i := range j.running {
		if j.running[i].id == old {
			j.running[i].id = id
			return true
		}
	}
	return false
}
