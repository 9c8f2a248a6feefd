package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

// clientTools are the calls to tools the session's client executes
// (executor: client): the engine has checked a call and its gate rules,
// asked the client with a client_tool_call effect, and waits for a
// client_tool_result input or the tool's timeout, whichever comes first.
// The answer goes back as a tool_result effect and, for a call made in a
// model reply, into that reply's round, so the model is asked again with
// it once every call of the round is answered.
type clientTools struct {
	pending []*clientCall // in the order they were made
	// done remembers answered and timed-out calls, so a late or repeated
	// result is told apart from one naming no call at all.
	done map[string]string
}

// clientCall is one call waiting for its client.
type clientCall struct {
	call ToolCall
	role string
	// cont is the continuation of the turn whose round made the call (nil
	// for a live session's call); step is the call's place in that
	// turn's last round.
	cont *turn
	step int
}

// Client tool states, as ClientToolState reports them.
const (
	ClientToolUnknown  = "unknown"
	ClientToolPending  = "pending"
	ClientToolAnswered = "answered"
	ClientToolTimedOut = "timed_out"
)

// ClientToolState says where the client tool call id stands: pending,
// answered, timed_out or unknown. A host asks before it logs a
// client_tool_result, so a late or stray result is refused with the
// reason instead of being logged.
func (s *Session) ClientToolState(id string) string {
	if s.clientTools.find(id) >= 0 {
		return ClientToolPending
	}
	if st, ok := s.clientTools.done[id]; ok {
		return st
	}
	return ClientToolUnknown
}

// PendingClientTools lists the ids of the client tool calls waiting for
// their results, in the order they were made.
func (s *Session) PendingClientTools() []string {
	var out []string
	for _, c := range s.clientTools.pending {
		out = append(out, c.call.ID)
	}
	return out
}

func (ct *clientTools) find(id string) int {
	return slices.IndexFunc(ct.pending, func(c *clientCall) bool { return c.call.ID == id })
}

// ask hands an accepted call to the client and starts its timeout.
func (ct *clientTools) ask(s *Session, role string, call ToolCall, tool *rules.Tool) *clientCall {
	params := call.Args
	var buf bytes.Buffer
	if len(bytes.TrimSpace(params)) == 0 || json.Compact(&buf, params) != nil {
		params = json.RawMessage(`{}`)
	} else {
		params = buf.Bytes()
	}
	c := &clientCall{call: call, role: role, step: -1}
	ct.pending = append(ct.pending, c)
	s.emit(Effect{Type: EffectClientToolCall, ID: call.ID, Agent: role, Kind: call.Name, Data: params})
	s.addTimer(timer{at: s.now + tool.Timeout.MS, kind: tClientTool, key: call.ID})
	return c
}

// wait ties the round's pending calls to the turn that goes on after them.
func (ct *clientTools) wait(cont *turn) {
	round := &cont.toolRounds[len(cont.toolRounds)-1]
	for i := range round.Steps {
		st := &round.Steps[i]
		if !st.pending {
			continue
		}
		if j := ct.find(st.Call.ID); j >= 0 {
			ct.pending[j].cont, ct.pending[j].step = cont, i
			cont.waiting++
		}
	}
}

func (r *ClientToolResult) apply(s *Session) {
	j := s.clientTools.find(r.ID)
	if j < 0 {
		why := "no call with that id was made"
		switch s.clientTools.done[r.ID] {
		case ClientToolAnswered:
			why = "the call was already answered"
		case ClientToolTimedOut:
			why = "the call had timed out"
		}
		s.emit(Effect{Type: EffectNote, Kind: NoteWarning, ID: r.ID, Reason: "client_tool_result for " + r.ID + " ignored: " + why})
		return
	}
	s.timers.cancel(tClientTool, 0, r.ID)
	content := clientContent(r.Result, r.IsError)
	reason := ""
	if r.IsError {
		reason = "client: " + clientError(content)
	}
	s.clientTools.answer(s, j, content, r.IsError, reason, ClientToolAnswered)
}

// maxClientReason bounds the client's words a tool_result's reason
// repeats; the whole answer is in its data.
const maxClientReason = 200

// clientError is the words of a client's error result, for the effect's
// reason: its "error" string when it has one, else the JSON.
func clientError(content json.RawMessage) string {
	var e struct {
		Error any `json:"error"`
	}
	msg := string(content)
	if json.Unmarshal(content, &e) == nil {
		if s, ok := e.Error.(string); ok {
			msg = s
		}
	}
	if len(msg) > maxClientReason {
		cut := maxClientReason
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// timedOut answers a call its client left unanswered past the tool's
// timeout.
func (ct *clientTools) timedOut(s *Session, id string) {
	j := ct.find(id)
	if j < 0 {
		return
	}
	c := ct.pending[j]
	tool, _ := s.p.Tool(c.call.Name)
	msg := fmt.Sprintf("timeout: the client did not answer %s within %s", c.call.Name, formatMS(tool.Timeout.MS))
	res, _ := json.Marshal(map[string]string{"error": msg})
	ct.answer(s, j, res, true, msg, ClientToolTimedOut)
}

// answer settles pending call j with content: a tool_result effect, then
// the round it belongs to or, for a live session's call, the loop count.
func (ct *clientTools) answer(s *Session, j int, content json.RawMessage, isError bool, reason, state string) {
	c := ct.pending[j]
	ct.pending = slices.Delete(ct.pending, j, j+1)
	if ct.done == nil {
		ct.done = map[string]string{}
	}
	ct.done[c.call.ID] = state
	s.emit(Effect{Type: EffectToolResult, ID: c.call.ID, Agent: c.role, Kind: c.call.Name, Data: content, IsError: isError, Reason: reason})
	if c.cont == nil {
		if isError {
			s.refusedRound(c.role, c.call)
		} else {
			s.madeProgress(c.role)
		}
		return
	}
	round := &c.cont.toolRounds[len(c.cont.toolRounds)-1]
	st := &round.Steps[c.step]
	st.Result, st.IsError, st.pending = content, isError, false
	if c.cont.waiting--; c.cont.waiting > 0 {
		return
	}
	s.roundAnswered(c.cont, round)
}

// roundAnswered goes on with a turn whose round's client calls are all
// answered: a round with a refusal counts towards the tool loop, and a
// looping role's turn goes no further.
func (s *Session) roundAnswered(cont *turn, round *ToolRound) {
	refused := slices.IndexFunc(round.Steps, func(st ToolStep) bool { return st.IsError })
	if refused < 0 {
		s.madeProgress(cont.role)
		return
	}
	if !s.refusedRound(cont.role, round.Steps[refused].Call) {
		return
	}
	// A loop: the turn goes no further. As when the calls came back
	// refused at once (turnTools), a turn that has said nothing says the
	// role's fallback line, if the floor is free for it.
	f := &s.floor
	queued := slices.Contains(f.queue, cont)
	f.queue = slices.DeleteFunc(f.queue, func(t *turn) bool { return t == cont })
	if queued && !s.ended && f.active == nil && !cont.spokeInRounds() {
		f.active = cont
		s.deliver(cont, s.fallback(cont), true)
	}
}

// clientContent is what the model sees of a client's result: an object
// as sent; anything else wrapped, under "error" for an error and
// "result" otherwise, as vendors take objects.
func clientContent(raw json.RawMessage, isError bool) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil && buf.Len() > 0 && buf.Bytes()[0] == '{' {
		return buf.Bytes()
	}
	key := "result"
	if isError {
		key = "error"
	}
	v := buf.Bytes()
	if buf.Len() == 0 {
		v = []byte("null")
	}
	return json.RawMessage(`{` + strconv.Quote(key) + `:` + string(v) + `}`)
}

// ClientToolResult answers a client_tool_call: the call's id, what the
// client's tool returned (any JSON) and whether that is an error. The
// field names are those of ElevenLabs' conversational agent protocol, so
// a client written for it answers unchanged.
type ClientToolResult struct {
	ID      string          `json:"tool_call_id"`
	Result  json.RawMessage `json:"result"`
	IsError bool            `json:"is_error,omitempty"`
}

func (r *ClientToolResult) check(*rules.Pack) error {
	if r.ID == "" {
		return fmt.Errorf("%w: client_tool_result needs tool_call_id", ErrBadInput)
	}
	if len(bytes.TrimSpace(r.Result)) == 0 || !json.Valid(r.Result) {
		return fmt.Errorf("%w: client_tool_result %s: result must be a JSON value (a string or an object)", ErrBadInput, r.ID)
	}
	return nil
}
