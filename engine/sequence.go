package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/batonhq/baton/rules"
)

// sequences run the exchanges of the pack's sequences (rules/sequence.go):
// a prompt goes to the steps' roles in order, round after round, each
// call carrying what came before, until the agents agree there is
// nothing to add or a limit ends it. Every exchange has a run id; its
// effects carry it, a second start while it runs is refused, a cancel
// naming another run is ignored, and an answer for a call that no longer
// waits (cancelled, timed out) is dropped like any stale answer.
type sequences struct {
	runs []*seqRun // by pack sequence: its running exchange, or nil
	// done are the finished exchanges by pack sequence, oldest first,
	// at most the sequence's history; history is their text as calls
	// carry it, laid out once when an exchange ends, not on every call.
	done          [][]exchange
	history       []string
	historyStarts [][]int
	// ended are exchanges whose sequence:ID rules have yet to run.
	ended    []endedRun
	draining bool
	// started counts exchanges by pack sequence; runIDs are every run id
	// used in the session, so a retried start is refused, not rerun.
	started []int
	runIDs  map[string]bool
	// shown is the exchange the sequence view shows: the one being run,
	// else the last one started.
	shown *seqRun
}

type seqRun struct {
	seq      *rules.Sequence
	idx      int
	runID    string
	prompt   string
	rule     string
	round    int // 1-based
	step     int // the step being asked, or the next
	calls    int
	deadline int64 // the exchange's, 0 for none
	flags    []flagValue
	flagMap  map[string]any // flags as expressions see them
	// roundsText is the finished rounds as the rounds part carries them.
	roundsText  string
	roundStarts []int // where each round begins in it
	gated       bool
	rounds      []SequenceRound
	reqID       string
	done        bool
}

type flagValue struct {
	id string
	v  any
}

// exchange is a finished exchange as later calls see it.
type exchange struct {
	runID  string
	prompt string
	reason string
	rounds []SequenceRound
	text   string // as the history part lays it out
}

// Kinds of sequence effects: the exchange's life, each agent's call, and
// what the engine decided on the way.
const (
	SeqStart          = "SEQUENCE_START"
	SeqAgentStarted   = "AGENT_STARTED"
	SeqAgentCompleted = "AGENT_COMPLETED"
	SeqCancelled      = "SEQUENCE_CANCELLED"
	SeqTimeout        = "SEQUENCE_TIMEOUT"
	SeqCompleted      = "SEQUENCE_COMPLETED"
	// SeqRound closes a round; SeqGate reports the flags read from a
	// reply (or the fallback used); SeqRefused a start refused (an
	// exchange is running, the run id was used, the prompt is empty);
	// SeqIgnored a cancel for a run that is not running.
	SeqRound   = "ROUND_COMPLETED"
	SeqGate    = "GATE"
	SeqRefused = "SUBMIT_REFUSED"
	SeqIgnored = "CANCEL_IGNORED"
)

// Agent statuses and error codes, as the exchange's consumers know them.
const (
	StatusSuccess   = "success"
	StatusTimeout   = "timeout"
	StatusCancelled = "cancelled"
	StatusError     = "error"
	StatusSkipped   = "skipped"
)

// Why an exchange ended, in its closing effect.
const (
	EndUnanimous  = "unanimous"
	EndMaxRounds  = "max_rounds"
	EndMaxCalls   = "max_calls"
	EndNoAgents   = "no_agents"
	EndAgentError = "agent_error"
	EndTimeout    = "timeout"
	EndCancelled  = "cancelled"
	EndSession    = "session_end"
)

// AgentResponse is one agent's answer in an exchange: an AGENT_COMPLETED
// effect's data, and (without agent and run id) an entry of a round.
// Content is set on success and may be on other statuses; ErrorCode is
// set on error only.
type AgentResponse struct {
	Agent        string `json:"agent,omitempty"`
	RunID        string `json:"run_id,omitempty"`
	Round        int    `json:"round,omitempty"`
	Status       string `json:"status"`
	Content      string `json:"content,omitempty"`
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// AgentStarted is an AGENT_STARTED effect's data.
type AgentStarted struct {
	Agent string `json:"agent"`
	RunID string `json:"run_id"`
	Round int    `json:"round"`
	// Call counts the exchange's agent calls, this one included.
	Call int `json:"call"`
}

// SequenceRound is one round of an exchange.
type SequenceRound struct {
	Number    int       `json:"roundNumber"`
	Responses Responses `json:"responsesByAgent"`
}

// Responses are a round's answers by agent, in the order asked; they
// marshal as an object keyed by agent, in that order.
type Responses []AgentResponse

// UnmarshalJSON reads what MarshalJSON writes. Object keys have no order
// in JSON; the result is sorted by agent.
func (r *Responses) UnmarshalJSON(data []byte) error {
	var m map[string]AgentResponse
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*r = (*r)[:0]
	for k, v := range m {
		v.Agent = k
		*r = append(*r, v)
	}
	slices.SortFunc(*r, func(a, b AgentResponse) int { return strings.Compare(a.Agent, b.Agent) })
	return nil
}

// Exchange is the data of a sequence effect about a whole exchange: its
// start, its end (with its rounds), a refused start or an ignored cancel.
type Exchange struct {
	RunID    string `json:"run_id"`
	Sequence string `json:"sequence"`
	Prompt   string `json:"prompt,omitempty"`
	// Reason says why it ended or was refused; Running names the
	// exchange that kept a start or cancel from applying.
	Reason  string          `json:"reason,omitempty"`
	Running string          `json:"running,omitempty"`
	Calls   int             `json:"calls,omitempty"`
	Rounds  []SequenceRound `json:"rounds,omitempty"`
}

// GateRead is a GATE effect's data: the flags in force after the gate
// role's reply, and where they came from (block: read from it; fallback:
// no valid block, so the fallbacks; kept: no block in a later round, so
// the flags stay). Why says what was wrong with a block.
type GateRead struct {
	RunID  string `json:"run_id"`
	Round  int    `json:"round"`
	Source string `json:"source"`
	Flags  Flags  `json:"flags"`
	Why    string `json:"why,omitempty"`
}

// SequenceCall is what an llm_request of a sequence carries besides the
// role's prompt: the exchange it is for.
type SequenceCall struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	Round int    `json:"round"`
	Call  int    `json:"call"`
}

func (q *sequences) init(s *Session) {
	p := s.p
	n := len(p.Sequences)
	q.runs, q.done, q.started, q.history, q.historyStarts = make([]*seqRun, n), make([][]exchange, n), make([]int, n), make([]string, n), make([][]int, n)
	q.runIDs = map[string]bool{}
}

func (s *Session) seqEmit(kind string, r *seqRun, agent string, data any) {
	e := Effect{Type: EffectSequence, Kind: kind, Agent: agent, Rule: r.seq.ID, Data: seqData(data)}
	if agent != "" {
		e.ID = r.reqID
	}
	s.emit(e)
}

// start begins an exchange of sequence seq for rule, unless one is
// running or the run id was used.
func (q *sequences) start(s *Session, a *rules.SequenceAction, rule string) {
	seq := a.Target()
	if seq == nil {
		return
	}
	idx := slices.IndexFunc(s.p.Sequences, func(x rules.Sequence) bool { return x.ID == seq.ID })
	// The defaults are the event being handled's; a start from anything
	// else (a timer, another exchange's end) names what it asks.
	var prompt, runID string
	if ev := s.cand.handling; ev != nil {
		// As the input checks left it: redacted, if they redacted it.
		prompt, runID = s.env.Msg.Text, ev.RunID
		if ev.Type == EventMessage && s.input.refused != nil && !a.Prompt.Set() {
			raw, _ := json.Marshal(Exchange{RunID: runID, Sequence: seq.ID, Reason: "an input check refused the prompt (" + s.input.refuser + ")"})
			s.emit(Effect{Type: EffectSequence, Kind: SeqRefused, Rule: rule, Reason: "an input check refused the prompt", Data: raw})
			return
		}
	}
	if a.Prompt.Set() {
		prompt, _ = s.evalString(&a.Prompt, rule)
	}
	if a.RunID.Set() {
		runID, _ = s.evalString(&a.RunID, rule)
	}
	refuse := func(why, running string) {
		raw, _ := json.Marshal(Exchange{RunID: runID, Sequence: seq.ID, Reason: why, Running: running})
		s.emit(Effect{Type: EffectSequence, Kind: SeqRefused, Rule: rule, Reason: why, Data: raw})
	}
	switch {
	case q.runs[idx] != nil:
		refuse("exchange "+q.runs[idx].runID+" is still running", q.runs[idx].runID)
		return
	case strings.TrimSpace(prompt) == "":
		refuse("the prompt is empty", "")
		return
	case len(runID) > MaxRunID:
		refuse(fmt.Sprintf("run id is longer than %d bytes", MaxRunID), "")
		return
	case strings.ContainsFunc(runID, func(c rune) bool { return unicode.IsControl(c) || c == '\u2028' || c == '\u2029' }):
		refuse("a run id is one line of text", "")
		return
	case runID != "" && q.runIDs[runID]:
		refuse("run "+runID+" has already run", "")
		return
	}
	for runID == "" {
		// Made by the engine: never one a client has used.
		if id := s.nextID('r'); !q.runIDs[id] {
			runID = id
		}
	}
	q.runIDs[runID] = true
	q.started[idx]++
	r := &seqRun{seq: seq, idx: idx, runID: runID, prompt: prompt, rule: rule, round: 1}
	if seq.Timeout.IsSet() {
		r.deadline = s.now + seq.Timeout.MS
	}
	if g := seq.Gate; g != nil {
		r.setFlags(fallbackFlags(g))
	}
	r.rounds = []SequenceRound{{Number: 1}}
	q.runs[idx], q.shown = r, r
	s.seqEmit(SeqStart, r, "", &Exchange{RunID: runID, Sequence: seq.ID, Prompt: prompt})
	q.advance(s, r)
}

// seconds writes a budget as people say it: 30s, 1.5s.
func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s" }

// MaxRunID bounds a run id a client gives.
const MaxRunID = 128

// setFlags puts flags in force, and the map expressions read them from:
// made once per change, not on every evaluation.
func (r *seqRun) setFlags(flags []flagValue) {
	r.flags = flags
	r.flagMap = make(map[string]any, len(flags))
	for _, f := range flags {
		r.flagMap[f.id] = f.v
	}
}

func fallbackFlags(g *rules.Gate) []flagValue {
	out := make([]flagValue, len(g.Flags))
	for i := range g.Flags {
		out[i] = flagValue{g.Flags[i].ID, g.Flags[i].Fallback}
	}
	return out
}

// advance asks the next step whose condition holds, closing rounds on
// the way; it ends the exchange when a round or a limit says so.
func (q *sequences) advance(s *Session, r *seqRun) {
	for !r.done && !s.ended {
		q.shown = r
		seq := r.seq
		if r.step >= len(seq.Steps) {
			if q.closeRound(s, r) {
				return
			}
			continue
		}
		st := &seq.Steps[r.step]
		if st.When.Set() && !s.evalBool(&st.When, st.Role) {
			q.skip(s, r, StatusSkipped)
			if g := seq.Gate; g != nil && g.Role == st.Role {
				q.gateMissed(s, r, g, st.Role+" was not asked this round")
			}
			continue
		}
		if s.ended || r.done {
			return
		}
		if r.calls >= seq.CallLimit() {
			q.finish(s, r, SeqCompleted, EndMaxCalls)
			return
		}
		q.ask(s, r, st.Role)
		return
	}
}

// closeRound ends the round just run; it reports whether the exchange
// ended with it.
func (q *sequences) closeRound(s *Session, r *seqRun) bool {
	cur := r.rounds[len(r.rounds)-1]
	s.seqEmit(SeqRound, r, "", &roundDone{runID: r.runID, round: &cur})
	asked, agreed := 0, 0
	for _, a := range cur.Responses {
		if a.Status == StatusSkipped {
			continue
		}
		asked++
		if a.Status == StatusSuccess && r.seq.UntilAll != "" && strings.TrimSpace(a.Content) == r.seq.UntilAll {
			agreed++
		}
	}
	switch {
	case asked == 0:
		q.finish(s, r, SeqCompleted, EndNoAgents)
	case agreed == asked:
		q.finish(s, r, SeqCompleted, EndUnanimous)
	case r.round >= r.seq.RoundLimit():
		q.finish(s, r, SeqCompleted, EndMaxRounds)
	case r.calls >= r.seq.CallLimit():
		// No round is begun that could ask nobody.
		q.finish(s, r, SeqCompleted, EndMaxCalls)
	default:
		// The finished round joins what later calls read, laid out once.
		var b strings.Builder
		b.WriteString(r.roundsText)
		s.writeRound(&b, cur, true)
		if b.Len() > len(r.roundsText) {
			r.roundStarts = append(r.roundStarts, len(r.roundsText))
		}
		r.roundsText = b.String()
		r.round++
		r.step = 0
		r.rounds = append(r.rounds, SequenceRound{Number: r.round})
		return false
	}
	return true
}

// skip gives the current step status without asking it.
func (q *sequences) skip(s *Session, r *seqRun, status string) {
	role := r.seq.Steps[r.step].Role
	a := AgentResponse{Agent: role, RunID: r.runID, Round: r.round, Status: status}
	s.seqEmit(SeqAgentCompleted, r, role, &a)
	r.answer(a)
	r.step++
}

func (r *seqRun) answer(a AgentResponse) {
	cur := &r.rounds[len(r.rounds)-1]
	cur.Responses = append(cur.Responses, a)
}

// ask calls role for the exchange's current step.
func (q *sequences) ask(s *Session, r *seqRun, role string) {
	seq := r.seq
	r.calls++
	r.reqID = s.nextID('q')
	timeout := seq.CallTimeout.MS
	if r.deadline > 0 {
		timeout = min(timeout, r.deadline-s.now)
	}
	req := &LLMRequest{
		SessionID: s.opts.SessionID, Role: role, Kind: "sequence", TurnGoal: seq.ID, System: s.injected(role, s.persona(role), true),
		Prompt: r.prompt, TimeoutMS: timeout,
		Sequence: &SequenceCall{ID: seq.ID, RunID: r.runID, Round: r.round, Call: r.calls},
	}
	s.modelFor(req)
	req.Assembly, req.Files = s.files.assemble(s, role, &contextParts{
		words:     defaultSequenceAssembly,
		text:      func(part string) string { return q.part(s, r, part) },
		starts:    func(part string) []int { return q.starts(r, part) },
		protected: len(r.prompt),
	})
	s.seqEmit(SeqAgentStarted, r, role, &AgentStarted{Agent: role, RunID: r.runID, Round: r.round, Call: r.calls})
	s.emit(Effect{Type: EffectLLMRequest, ID: r.reqID, Agent: role, Kind: "sequence", Rule: seq.ID, Request: req})
	s.openRequest(r.reqID, &s.seqs, s.now+timeout)
}

// defaultSequenceAssembly is a sequence call's prompt when the pack
// orders none: the persona, then what came before.
var defaultSequenceAssembly = append([]string{"persona"}, rules.SequenceParts...)

func (q *sequences) waiting(id string) *seqRun {
	for _, r := range q.runs {
		if r != nil && r.reqID == id {
			return r
		}
	}
	return nil
}

// answered takes an agent's answer, if the call is still waited for.
func (q *sequences) answered(s *Session, res *LLMResult) {
	r := q.waiting(res.ID)
	if r == nil {
		return
	}
	role := r.seq.Steps[r.step].Role
	a := AgentResponse{Agent: role, RunID: r.runID, Round: r.round}
	read := false // the gate read this answer, whatever it found
	switch e := res.Err; {
	case e != nil && e.Kind == "timeout":
		a.Status, a.ErrorMessage = StatusTimeout, e.Message
	case e != nil:
		a.Status, a.ErrorCode, a.ErrorMessage = StatusError, errorCode(e.Kind), adapterReason(e)
	default:
		text := res.Text
		if g := r.seq.Gate; g != nil && g.Role == role {
			text, read = q.gate(s, r, g, text), true
		} else if g != nil {
			// Another agent copying the block's form routes nothing, and
			// its flags are no more content than the gate role's.
			text, _ = stripFlags(g, text)
		}
		a.Status, a.Content = StatusSuccess, strings.TrimSpace(text)
		if a.Content == "" {
			a.Status, a.ErrorCode, a.ErrorMessage = StatusError, "unknown", "empty reply"
		}
	}
	q.took(s, r, a, read)
}

// errorCode sorts an adapter failure into the codes an exchange's
// consumers handle.
func errorCode(kind string) string {
	switch kind {
	case "network", "rate_limit":
		return kind
	case "server", "bad_request":
		return "api"
	}
	return "unknown"
}

// took records a's answer and moves on as the failure policy says.
func (q *sequences) took(s *Session, r *seqRun, a AgentResponse, read bool) {
	if g := r.seq.Gate; g != nil && g.Role == a.Agent && !read {
		// Before the answer, as a read block's GATE is.
		q.gateMissed(s, r, g, a.Agent+" gave no answer ("+a.Status+")")
	}
	s.seqEmit(SeqAgentCompleted, r, a.Agent, &a)
	r.reqID = ""
	r.answer(a)
	r.step++
	switch {
	case a.Status == StatusTimeout && r.seq.OnTimeout == rules.FailEnd:
		q.finish(s, r, SeqTimeout, EndTimeout)
	case a.Status == StatusError && r.seq.OnError == rules.FailEnd:
		q.finish(s, r, SeqCompleted, EndAgentError)
	default:
		q.advance(s, r)
	}
}

// timedOut handles the timer of a sequence call: the agent's budget or
// the exchange's; it reports whether id was a sequence call.
func (q *sequences) timedOut(s *Session, id string) {
	r := q.waiting(id)
	if r == nil {
		return
	}
	role := r.seq.Steps[r.step].Role
	if r.deadline > 0 && s.now >= r.deadline {
		a := AgentResponse{Agent: role, RunID: r.runID, Round: r.round, Status: StatusTimeout,
			ErrorMessage: "the exchange's " + seconds(r.seq.Timeout.MS) + " ran out"}
		s.seqEmit(SeqAgentCompleted, r, role, &a)
		r.reqID = ""
		r.answer(a)
		r.step++
		q.finish(s, r, SeqTimeout, EndTimeout)
		return
	}
	q.took(s, r, AgentResponse{Agent: role, RunID: r.runID, Round: r.round, Status: StatusTimeout,
		ErrorMessage: "no answer within " + seconds(r.seq.CallTimeout.MS)}, false)
}

// cancel ends the running exchange of a's sequence if the run id fits.
func (q *sequences) cancel(s *Session, a *rules.CancelSequenceAction, rule string) {
	seq := a.Target()
	if seq == nil {
		return
	}
	idx := slices.IndexFunc(s.p.Sequences, func(x rules.Sequence) bool { return x.ID == seq.ID })
	var runID string
	if ev := s.cand.handling; ev != nil {
		runID = ev.RunID
	}
	if a.RunID.Set() {
		runID, _ = s.evalString(&a.RunID, rule)
	}
	r := q.runs[idx]
	if r == nil || runID != "" && runID != r.runID {
		why, running := "no exchange is running", ""
		if r != nil {
			why, running = "run "+runID+" is not the running exchange", r.runID
		} else if runID != "" {
			why = "run " + runID + " is not running"
		}
		raw, _ := json.Marshal(Exchange{RunID: runID, Sequence: seq.ID, Reason: why, Running: running})
		s.emit(Effect{Type: EffectSequence, Kind: SeqIgnored, Rule: rule, Reason: why, Data: raw})
		return
	}
	q.finish(s, r, SeqCancelled, EndCancelled)
}

// finish ends exchange r: the agent being asked and those not yet asked
// in this round are cancelled (for a cancel or the session's end) or
// skipped; the exchange is kept for later calls and its rules run.
func (q *sequences) finish(s *Session, r *seqRun, kind, reason string) {
	if r.done {
		return
	}
	r.done = true
	left := StatusSkipped
	if kind == SeqCancelled {
		left = StatusCancelled
	}
	if r.reqID != "" {
		// Only a cancel (or the session's end) stops a call midway.
		s.dropRequest(r.reqID)
		q.skip(s, r, StatusCancelled)
		r.reqID = ""
	}
	// The rest of a round under way get their status; a round not yet
	// begun (the call budget ran out at its start) is left out.
	if len(r.rounds[len(r.rounds)-1].Responses) > 0 {
		for r.step < len(r.seq.Steps) {
			q.skip(s, r, left)
		}
	}
	rounds := r.rounds
	if last := rounds[len(rounds)-1]; len(last.Responses) == 0 {
		rounds = rounds[:len(rounds)-1]
	}
	data := seqData(&Exchange{RunID: r.runID, Sequence: r.seq.ID, Prompt: r.prompt, Reason: reason, Calls: r.calls, Rounds: rounds})
	s.emit(Effect{Type: EffectSequence, Kind: kind, Rule: r.seq.ID, Data: data})
	q.runs[r.idx] = nil
	if h := r.seq.HistoryLimit(); h > 0 {
		x := exchange{runID: r.runID, prompt: r.prompt, reason: reason, rounds: rounds}
		x.text = s.exchangeText(&x)
		d := append(q.done[r.idx], x)
		if len(d) > h {
			d = slices.Delete(d, 0, len(d)-h)
		}
		q.done[r.idx] = d
		q.layOutHistory(r.idx)
	}
	if reason != EndSession && len(s.p.RulesOn(rules.SequenceTrigger(r.seq.ID))) > 0 {
		// Its rules run once this step has settled, not from inside it:
		// a rule that starts the sequence again gets a fresh call stack,
		// and one that keeps doing so is the settle loop's to stop.
		q.ended = append(q.ended, endedRun{r, data})
	}
}

type endedRun struct {
	r    *seqRun
	data json.RawMessage
}

// abandon drops the ended exchanges whose rules have not run: the settle
// bound stopped a pack that keeps restarting one, and the next step must
// not pick the loop up again.
func (q *sequences) abandon() { q.ended = nil }

// drain runs the rules of every ended exchange before the session ends,
// as a step that settled would have; draining is set meanwhile, so an end
// they cause does not drain again.
func (q *sequences) drain(s *Session) {
	if q.draining || len(q.ended) == 0 {
		return
	}
	q.draining = true
	defer func() { q.draining = false }()
	if !converge(maxSettle, func() bool { return !s.ended && q.fireEnded(s) }) {
		q.abandon()
	}
}

// fireEnded runs the sequence:ID rules of the first exchange ended and
// not yet reported, with its record as result; it reports whether it ran
// any.
func (q *sequences) fireEnded(s *Session) bool {
	if len(q.ended) == 0 || s.ended {
		return false
	}
	e := q.ended[0]
	q.ended = q.ended[1:]
	dec := json.NewDecoder(bytes.NewReader(e.data))
	dec.UseNumber()
	var result any
	_ = dec.Decode(&result)
	shown := q.shown
	q.shown = e.r
	// The rules see the scope the exchange ended in, with the exchange's
	// outcome as their result.
	sc := s.env.Current()
	sc.Result = normalizeJSON(result)
	pop := s.env.Scope(sc)
	s.fireRules(rules.SequenceTrigger(e.r.seq.ID))
	pop()
	if q.shown == e.r {
		q.shown = shown
	}
	return true
}

// layOutHistory lays out sequence i's kept exchanges as the history part
// carries them, once per change, and where each begins so the budget can
// drop the oldest whole.
func (q *sequences) layOutHistory(i int) {
	d := q.done[i]
	n := len(d)
	for j := range d {
		n += len(d[j].text)
	}
	var b strings.Builder
	b.Grow(n)
	starts := q.historyStarts[i][:0]
	for j := range d {
		if j > 0 {
			b.WriteByte('\n')
		}
		starts = append(starts, b.Len())
		b.WriteString(d[j].text)
	}
	q.history[i], q.historyStarts[i] = b.String(), starts
}

// endAll closes every running exchange when the session ends.
func (q *sequences) endAll(s *Session) {
	for _, r := range q.runs {
		if r != nil {
			q.finish(s, r, SeqCancelled, EndSession)
		}
	}
}

// gate reads the gate's flags from the end of text and returns text
// without them.
func (q *sequences) gate(s *Session, r *seqRun, g *rules.Gate, text string) string {
	var flags []flagValue
	var rest, why string
	var found bool
	if g.Script.Set() {
		flags, rest, why, found = q.gateScript(s, r, g, text)
		rest, _ = stripFlags(g, rest)
	} else {
		flags, rest, why, found = parseGate(g, text)
	}
	read := GateRead{RunID: r.runID, Round: r.round, Why: why}
	switch {
	case flags != nil:
		r.gated, read.Source = true, "block"
		r.setFlags(flags)
	case r.round > 1 && !found:
		// A later answer without a block keeps the flags in force; an
		// invalid one calls everyone, as in the first round.
		read.Source = "kept"
	default:
		read.Source = "fallback"
		r.setFlags(fallbackFlags(g))
	}
	read.Flags = r.flagList()
	s.seqEmit(SeqGate, r, g.Role, &read)
	return rest
}

// gateMissed reports the flags in force when the gate role gave no
// answer to read them from (it failed, or its when: kept it out): the
// fallbacks until a block has been read, then the flags as they were.
func (q *sequences) gateMissed(s *Session, r *seqRun, g *rules.Gate, why string) {
	read := GateRead{RunID: r.runID, Round: r.round, Source: "kept", Why: why, Flags: r.flagList()}
	if !r.gated {
		read.Source = "fallback"
	}
	s.seqEmit(SeqGate, r, g.Role, &read)
}

func (r *seqRun) flagList() Flags {
	out := make(Flags, len(r.flags))
	for i, f := range r.flags {
		out[i] = Flag{f.id, f.v}
	}
	return out
}

// parseGate reads the block at the end of text: a fence line, KEY=VALUE
// lines, a closing fence. A block that is there but wrong (unclosed, a
// flag missing, twice, unknown or of the wrong type) gives no flags and
// says why. found reports whether there was a block at all. Whatever it
// finds, the flags never reach a reader: the block, a block elsewhere
// in the text and any line keyed by a declared flag are taken out of
// rest.
func parseGate(g *rules.Gate, text string) (flags []flagValue, rest, why string, found bool) {
	flags, rest, why, found = endBlock(g, text)
	stripped, more := stripFlags(g, rest)
	if more && !found {
		found, why = true, "the flag block is not at the end of the reply"
	}
	return flags, stripped, why, found
}

func endBlock(g *rules.Gate, text string) (flags []flagValue, rest, why string, found bool) {
	lines := strings.Split(strings.TrimRight(text, " \t\r\n"), "\n")
	end := len(lines)
	closed := end > 0 && strings.TrimSpace(lines[end-1]) == g.Fence
	if closed {
		end--
	}
	open := -1
	for i := end - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == g.Fence {
			open = i
			break
		}
		if l != "" && !blockLine(g, l) {
			break
		}
	}
	if open < 0 {
		return nil, text, "no flag block at the end of the reply", false
	}
	rest = strings.TrimRight(strings.Join(lines[:open], "\n"), " \t\r\n")
	if !closed {
		return nil, rest, "the flag block is not closed with " + g.Fence, true
	}
	vals := make([]any, len(g.Flags))
	seen := make([]bool, len(g.Flags))
	for _, l := range lines[open+1 : end] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, rest, fmt.Sprintf("%q: write KEY=VALUE", l), true
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		i := slices.IndexFunc(g.Flags, func(f rules.GateFlag) bool { return f.ID == k })
		switch {
		case i < 0:
			return nil, rest, "unknown flag " + k, true
		case seen[i]:
			return nil, rest, k + " is given twice", true
		}
		x, err := g.Flags[i].Parse(v)
		if err != nil {
			return nil, rest, err.Error(), true
		}
		vals[i], seen[i] = x, true
	}
	for i, f := range g.Flags {
		if !seen[i] {
			return nil, rest, f.ID + " is missing", true
		}
		flags = append(flags, flagValue{f.ID, vals[i]})
	}
	return flags, rest, "", true
}

// blockLine says whether a line can belong to a flag block: KEY=VALUE,
// or a declared flag written another way (KEY: VALUE). Prose such as
// "Note: ..." or a URL ends the block.
func blockLine(g *rules.Gate, l string) bool {
	if i := strings.IndexByte(l, '='); i > 0 && rules.IsIdent(strings.TrimSpace(l[:i])) {
		return true
	}
	return declaredFlag(g, l)
}

// declaredFlag says whether a line sets one of g's flags, either way.
func declaredFlag(g *rules.Gate, l string) bool {
	i := strings.IndexAny(l, "=:")
	if i <= 0 {
		return false
	}
	k := strings.TrimSpace(l[:i])
	return slices.ContainsFunc(g.Flags, func(f rules.GateFlag) bool { return f.ID == k })
}

// stripFlags takes out of text every fenced run of flag lines that sets
// a declared flag, and, anywhere else, every line that sets one
// (KEY=...); it reports whether it took anything out. A fenced run with
// prose in it keeps the prose.
func stripFlags(g *rules.Gate, text string) (string, bool) {
	// Most answers name no flag at all.
	if !slices.ContainsFunc(g.Flags, func(f rules.GateFlag) bool { return strings.Contains(text, f.ID) }) {
		return text, false
	}
	lines := strings.Split(text, "\n")
	drop := make([]bool, len(lines))
	any := false
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != g.Fence {
			continue
		}
		declared, prose := false, false
		j := i + 1
		for ; j < len(lines); j++ {
			l := strings.TrimSpace(lines[j])
			if l == g.Fence {
				break
			}
			switch {
			case l == "":
			case declaredFlag(g, l):
				declared = true
			case !blockLine(g, l):
				prose = true
			}
		}
		if !declared || prose {
			continue
		}
		last := j - 1
		if j < len(lines) {
			last = j // the closing fence
		}
		for k := i; k <= last; k++ {
			drop[k] = true
		}
		any = true
		i = last
	}
	for i, l := range lines {
		if !drop[i] && setsFlag(g, strings.TrimSpace(l)) {
			drop[i], any = true, true
		}
	}
	if !any {
		return text, false
	}
	kept := lines[:0:0]
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	return strings.TrimRight(strings.Join(kept, "\n"), " \t\r\n"), true
}

// setsFlag says whether a line outside a block sets a declared flag:
// KEY=VALUE only, as a short id followed by a colon is as likely prose.
func setsFlag(g *rules.Gate, l string) bool {
	i := strings.IndexByte(l, '=')
	if i <= 0 {
		return false
	}
	k := strings.TrimSpace(l[:i])
	return slices.ContainsFunc(g.Flags, func(f rules.GateFlag) bool { return f.ID == k })
}

// gateScript asks the gate's script for the flags: it gets {text, flags:
// [ids]} and returns {text, flags: {...}}, or null for no valid block.
func (q *sequences) gateScript(s *Session, r *seqRun, g *rules.Gate, text string) (flags []flagValue, rest, why string, found bool) {
	ids := make([]any, len(g.Flags))
	for i := range g.Flags {
		ids[i] = g.Flags[i].ID
	}
	arg := s.scriptArg(g.Role)
	arg.set("text", text)
	arg.set("flags", ids)
	out, ok := s.callScript(&g.Script, arg, r.seq.ID)
	if !ok {
		return nil, text, "the gate script failed", false
	}
	if out == nil {
		return nil, text, "the gate script found no valid block", false
	}
	m, isMap := out.(map[string]any)
	rest, hasText := m["text"].(string)
	got, hasFlags := m["flags"].(map[string]any)
	if !isMap || !hasText || !hasFlags {
		s.badResult(&g.Script, r.seq.ID, "want {text, flags: {...}} or null, got %s", rules.Describe(out))
		return nil, text, "the gate script's result is not {text, flags}", false
	}
	for i := range g.Flags {
		f := &g.Flags[i]
		v, ok := got[f.ID]
		if !ok {
			return nil, rest, f.ID + " is missing", true
		}
		if err := f.Check(v); err != nil {
			return nil, rest, err.Error(), true
		}
		flags = append(flags, flagValue{f.ID, v})
	}
	return flags, rest, "", true
}

// starts are where the entries of a context part begin (exchanges,
// rounds), so the budget drops the oldest whole; offsets, not a search
// for headers an answer could contain.
func (q *sequences) starts(r *seqRun, part string) []int {
	switch part {
	case rules.PartHistory:
		return q.historyStarts[r.idx]
	case rules.PartRounds:
		return r.roundStarts
	}
	return nil
}

const (
	exchangeHeader = "## exchange "
	roundHeader    = "### round "
)

// part is the text of a sequence's context part for r's next call.
func (q *sequences) part(s *Session, r *seqRun, name string) string {
	var b strings.Builder
	switch name {
	case rules.PartHistory:
		return q.history[r.idx]
	case rules.PartRounds:
		return r.roundsText
	case rules.PartRound:
		s.writeRound(&b, r.rounds[len(r.rounds)-1], false)
	}
	return b.String()
}

// exchangeText lays out a finished exchange as later calls read it.
func (s *Session) exchangeText(x *exchange) string {
	var b strings.Builder
	n := 64 + len(x.runID) + len(x.prompt)
	for _, rd := range x.rounds {
		n += 16
		for _, a := range rd.Responses {
			n += 24 + len(a.Content)
		}
	}
	b.Grow(n)
	b.WriteString(exchangeHeader)
	b.WriteString(x.runID)
	b.WriteString("\nuser: ")
	b.WriteString(x.prompt)
	b.WriteByte('\n')
	for _, rd := range x.rounds {
		s.writeRound(&b, rd, true)
	}
	if x.reason != EndUnanimous && x.reason != EndMaxRounds && x.reason != EndMaxCalls {
		b.WriteString("(the exchange ended early: ")
		b.WriteString(x.reason)
		b.WriteString(")\n")
	}
	return b.String()
}

// writeRound lays out a round's answers, one per agent asked, by role
// name; a failed call says so, a skipped agent is left out.
func (s *Session) writeRound(b *strings.Builder, rd SequenceRound, header bool) {
	for _, a := range rd.Responses {
		if header && a.Status != StatusSkipped && a.Status != StatusCancelled {
			b.WriteString(roundHeader)
			b.WriteString(strconv.Itoa(rd.Number))
			b.WriteByte('\n')
			header = false
		}
		name := a.Agent
		if pr, ok := s.p.Role(a.Agent); ok && pr.Name != "" {
			name = pr.Name
		}
		switch a.Status {
		case StatusSkipped, StatusCancelled:
			continue
		case StatusSuccess:
			b.WriteString(name)
			b.WriteString(": ")
			b.WriteString(a.Content)
			b.WriteByte('\n')
		default:
			b.WriteString(name)
			b.WriteString(": (no answer: ")
			b.WriteString(a.Status)
			b.WriteString(")\n")
		}
	}
}

// view is the exchange expressions see as `sequence`.
func (q *sequences) view(v *rules.SequenceView) {
	r := q.shown
	if r == nil {
		*v = rules.SequenceView{}
		return
	}
	*v = rules.SequenceView{ID: r.seq.ID, RunID: r.runID, Running: !r.done, Prompt: r.prompt, Round: r.round, Calls: r.calls,
		Gated: r.gated, Exchanges: q.started[r.idx]}
	v.Flags = r.flagMap
}
