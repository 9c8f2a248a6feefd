package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/batonhq/baton/rules"
)

// Inputs and effects are the engine's whole interface with the world. They are
// plain data with stable JSON forms so a host can log them, replay them, and
// compare two runs byte for byte.

// InputType names what an Input carries.
type InputType string

const (
	// InputAdvance only moves the clock; timers due by T fire.
	InputAdvance InputType = "advance"
	// InputCandidate is one candidate event (seed §5.2 shape).
	InputCandidate InputType = "candidate"
	// InputLLMResult answers an earlier llm_request effect.
	InputLLMResult InputType = "llm_result"
	// InputSpeechDone reports that a spoken agent message finished playing.
	InputSpeechDone InputType = "speech_done"
	// InputToolCall is a tool call made outside an llm_request, by a live
	// speech-to-speech session speaking as a role.
	InputToolCall InputType = "tool_call"
	// InputAgentTranscript is what a live session said as a role.
	InputAgentTranscript InputType = "agent_transcript"
	// InputClientToolResult answers an earlier client_tool_call effect.
	InputClientToolResult InputType = "client_tool_result"
	// InputPrepare, before the session's clock starts, asks for the lines
	// of turns due within their lead of second 0 (prepare.go); a host
	// feeds their answers at T 0 and then starts the clock.
	InputPrepare InputType = "prepare"
	// InputEnd ends the session early (the candidate left, an operator
	// cancelled it); End.Reason says why.
	InputEnd InputType = "end"
)

// Input is one thing that happened at engine time T (ms since session start).
// Exactly one payload matching Type is set (none for advance; end's is
// optional).
type Input struct {
	T         int64           `json:"t_ms"`
	Type      InputType       `json:"type"`
	Candidate *CandidateEvent `json:"candidate,omitempty"`
	LLM       *LLMResult      `json:"llm,omitempty"`
	Speech    *SpeechDone     `json:"speech,omitempty"`
	Tool      *ToolCall       `json:"tool,omitempty"`
	Agent     *AgentLine      `json:"agent,omitempty"`
	// ClientTool answers a client_tool_call.
	ClientTool *ClientToolResult `json:"client_tool,omitempty"`
	End        *EndRequest       `json:"end,omitempty"`
	// Scripts, when set, is what a replay knows of the script calls this
	// input made when it was first applied; live hosts leave it nil.
	Scripts *ScriptFacts `json:"scripts,omitempty"`
}

// ScriptFacts record the script calls of one step that were stopped at
// their time budget (in a live session, or at script.ReplayBudget in any
// other). With facts, those calls are stopped again without running and
// every other call runs to completion (under script.ReplayBudget): a
// replay makes the same effects whatever the machine.
type ScriptFacts struct {
	Stopped []ScriptStop `json:"stopped"`
}

// ScriptStop is one call stopped at its budget: its ordinal among the
// step's script calls, how long it had run, where it was, and how many
// numbers it had drawn from the session's random source (Math.random).
type ScriptStop struct {
	Call   int    `json:"call"`
	TookUS int64  `json:"took_us"`
	At     string `json:"at,omitempty"`
	Draws  int    `json:"draws,omitempty"`
}

func (f *ScriptFacts) stopped(call int) (ScriptStop, bool) {
	for _, st := range f.Stopped {
		if st.Call == call {
			return st, true
		}
	}
	return ScriptStop{}, false
}

// FactsOf collects, from one step's effects, the facts a replay of that
// step needs; nil when no script call ran out of time.
func FactsOf(effects []Effect) *ScriptFacts {
	var f *ScriptFacts
	for i := range effects {
		e := &effects[i]
		if e.Type != EffectScriptError || e.Kind != ScriptBudget {
			continue
		}
		var st ScriptStop
		if json.Unmarshal(e.Data, &st) != nil {
			continue
		}
		if f == nil {
			f = &ScriptFacts{}
		}
		f.Stopped = append(f.Stopped, st)
	}
	return f
}

// ScriptBudget is the Kind of a script_error effect for a call stopped at
// its time budget; its Data is the ScriptStop.
const ScriptBudget = "budget"

// payload is what an input of one kind carries. Each kind is its own type
// that checks itself against a pack (check.go) and applies itself to a
// session (in the file of the feature it drives).
type payload interface {
	check(p *rules.Pack) error
	apply(s *Session)
}

// inputKind is one kind of input: its type, what its payload is called in
// messages, and whether it carries one.
type inputKind struct {
	typ   InputType
	field string // "" for a kind that carries nothing
	// absent, if set, makes the payload optional and stands in for it.
	absent payload
}

// inputKinds is the one list of input kinds: adding one is a payload type,
// a field of Input, a line here and a case in Input.payload.
var inputKinds = [...]inputKind{
	{InputAdvance, "", nil},
	{InputCandidate, "candidate event", nil},
	{InputLLMResult, "llm result", nil},
	{InputSpeechDone, "speech", nil},
	{InputToolCall, "tool call", nil},
	{InputAgentTranscript, "agent line", nil},
	{InputClientToolResult, "client tool result", nil},
	{InputEnd, "end request", &EndRequest{}},
	{InputPrepare, "", nil},
}

// payload is the field of in that carries kind t's payload, or nil. It is
// a method, not a table of functions, so an Input does not escape to the
// heap on every Step.
func (in *Input) payload(t InputType) payload {
	switch t {
	case InputCandidate:
		return some(in.Candidate)
	case InputLLMResult:
		return some(in.LLM)
	case InputSpeechDone:
		return some(in.Speech)
	case InputToolCall:
		return some(in.Tool)
	case InputAgentTranscript:
		return some(in.Agent)
	case InputClientToolResult:
		return some(in.ClientTool)
	case InputEnd:
		return some(in.End)
	}
	return nil
}

func kindOf(t InputType) (inputKind, bool) {
	for _, k := range inputKinds {
		if k.typ == t {
			return k, true
		}
	}
	return inputKind{}, false
}

// some turns a nil pointer into a nil interface, not a non-nil interface
// holding a nil pointer.
func some[T any, P interface {
	*T
	payload
}](p P) payload {
	if p == nil {
		return nil
	}
	return p
}

// EndRequest ends a session from outside.
type EndRequest struct {
	Reason string `json:"reason"`
}

// AgentLine is a finished utterance of a live session speaking as Role.
type AgentLine struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ToolCall is a call an agent made to a pack tool.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	// Role is the calling role; set on tool_call inputs (an llm_result's
	// calls belong to the request's role).
	Role string `json:"role,omitempty"`
	// Signature is opaque vendor data the model attached to the call (a
	// Gemini thought signature). It is recorded with the result and sent
	// back unchanged with the call in the turn's later requests: some
	// models refuse a history whose calls lack it.
	Signature []byte `json:"signature,omitempty"`
}

// ToolDecl is a tool offered to a model.
type ToolDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolRound is one reply of the model inside a turn that called tools:
// what it said with the calls, and each call with its result. Rounds are
// sent back to the model as it gave them (one model message with all its
// calls) so it can act on a refusal; baton runs the tool loop.
type ToolRound struct {
	Text string `json:"text,omitempty"`
	// Withheld: Text was not said, as a call of the round was refused.
	Withheld bool `json:"withheld,omitempty"`
	// Said is the line said for Text, as the transcript holds it (the
	// guardrails may have cleaned or cut it); empty when nothing was.
	Said  string     `json:"said,omitempty"`
	Steps []ToolStep `json:"steps"`
}

// ToolStep is one call and its result inside a tool round.
type ToolStep struct {
	Call    ToolCall        `json:"call"`
	Result  json.RawMessage `json:"result"`
	IsError bool            `json:"is_error,omitempty"`
	// pending marks a client tool call not answered yet (clienttools.go).
	pending bool
}

// CandidateEvent is a candidate-side event. Event types are open: the pack
// decides which it reacts to; the engine itself understands the seed's five.
type CandidateEvent struct {
	Type string `json:"event_type"`
	// Text and the fields below come from the event's data object.
	Text          string   `json:"text,omitempty"`
	Source        string   `json:"source,omitempty"`
	STTConfidence *float64 `json:"stt_confidence,omitempty"`
	AddressedTo   string   `json:"addressed_to,omitempty"`
	MicActive     *bool    `json:"mic_active,omitempty"`
	Typing        *bool    `json:"typing,omitempty"`
	Code          string   `json:"code,omitempty"`
	// RunID names the exchange a prompt starts or a cancel is for.
	RunID string `json:"run_id,omitempty"`
	// Line is a 1-based line the event is about (an editor's cursor).
	Line int `json:"line,omitempty"`
}

// Candidate event types the engine gives built-in meaning to; the names
// are defined once, in rules (rules/events.go), which the loader checks
// packs against.
const (
	EventMessage       = rules.EventMessage
	EventMicState      = rules.EventMicState
	EventSpeechEnd     = rules.EventSpeechEnd
	EventTypingState   = rules.EventTypingState
	EventCodeSubmitted = rules.EventCodeSubmitted
)

// SpeechDone reports the end of playback of the agent message with ID.
type SpeechDone struct {
	ID string `json:"id"`
	// Interrupted is set when playback was cut short (barge-in).
	Interrupted bool `json:"interrupted,omitempty"`
}

// EffectType names what an Effect asks the host to do or reports.
type EffectType string

const (
	// EffectAgentMessage: say Text as Agent (display and speak it). The host
	// answers with a speech_done input carrying the same ID.
	EffectAgentMessage EffectType = "agent_message"
	// EffectLLMRequest: generate text for a turn; answer with llm_result.
	EffectLLMRequest EffectType = "llm_request"
	// EffectAnchor reports that a hard timeline anchor fired.
	EffectAnchor EffectType = "anchor"
	// EffectDeferred reports that a turn is held while the candidate talks or types.
	EffectDeferred EffectType = "deferred"
	// EffectDeferCap reports that a held turn hit the defer cap.
	EffectDeferCap EffectType = "defer_cap"
	// EffectPreempted reports that a scheduled turn gave way to a routed reply.
	EffectPreempted EffectType = "preempted"
	// EffectWindowSkipped reports a window that closed without its turn.
	EffectWindowSkipped EffectType = "window_skipped"
	// EffectRouted reports where a candidate message was routed and why.
	EffectRouted EffectType = "routed"
	// EffectAutoAdvance reports that the silence ladder gave up waiting.
	EffectAutoAdvance EffectType = "auto_advance"
	// EffectAdapterError reports a failed or timed-out adapter call.
	EffectAdapterError EffectType = "adapter_error"
	// EffectScriptError reports a pack script that threw, ran out of time
	// or stack, or returned the wrong shape; Reason has file:line:col.
	EffectScriptError EffectType = "script_error"
	// EffectGuardrail reports a generated line that broke the guardrails
	// (Guardrail) and what is done about it (Kind: regenerate, rewritten,
	// fallback, pass); Text is the line, ID its request.
	EffectGuardrail EffectType = "guardrail"
	// EffectFlag is something an operator should look at now: a pack's
	// flag action (Rule, Reason), from a tripwire or an input check.
	EffectFlag EffectType = "flag"
	// EffectNote is a notice: from the pack (rules' emit action) or the
	// engine. Kind NoteWarning marks one an operator should see.
	EffectNote EffectType = "note"
	// EffectToolResult answers a tool call (ID is the call's id); Data holds
	// the result and IsError marks a refusal the agent should act on.
	EffectToolResult EffectType = "tool_result"
	// EffectClientToolCall asks the session's client to run a tool
	// (executor: client): ID is the call's id, Kind the tool, Agent the
	// caller, Data the parameters. The client answers with a
	// client_tool_result input; the answer is then reported as a
	// tool_result effect.
	EffectClientToolCall EffectType = "client_tool_call"
	// EffectSlot reports that a declared slot (a prompt variable) took a
	// new value: Text is its name, Data its size in bytes, whether its
	// caps cut it and how long a debounce held it.
	EffectSlot EffectType = "slot"
	// EffectHandoff reports that the floor passed to Agent.
	EffectHandoff EffectType = "handoff"
	// EffectTickets reports the ticket split (Data: {role: count}).
	EffectTickets EffectType = "tickets"
	// EffectJobResult reports a finished job (Rule: the job; Data: result).
	EffectJobResult EffectType = "job_result"
	// EffectJobError reports a failed or invalid job.
	EffectJobError EffectType = "job_error"
	// EffectReport is a pack report such as a verdict (Kind; Data).
	EffectReport EffectType = "report"
	// EffectLiveSession asks the host to (re)connect the live speech
	// session for Agent: Text is its system instruction, Voice its voice,
	// Data the tools offered (a list of declarations).
	EffectLiveSession EffectType = "live_session"
	// EffectLive reports that setup phases finished and the session is live.
	EffectLive EffectType = "live"
	// EffectStale reports a prepared line whose request changed before it
	// was said: Reason names what changed; Kind is what was done:
	// asked_again (before its due time), or the turn's on_stale
	// (regenerate, speak, drop) at its due time.
	EffectStale EffectType = "stale"
	// EffectContext reports a write to a context file: Text is its path,
	// Agent the role whose copy it is, Kind write or append, Data what
	// was written and the file's size and write count after it.
	EffectContext EffectType = "context"
	// EffectContextViolation reports a write the file's class (Kind)
	// refused: Text is the path, Rule who tried, Reason why. The session
	// goes on without the write.
	EffectContextViolation EffectType = "context_violation"
	// EffectSequence reports an exchange of a sequence (sequence.go):
	// Kind is what happened (SEQUENCE_START, AGENT_STARTED,
	// AGENT_COMPLETED, ...), Rule the sequence, Agent the role asked,
	// Data the run id and the rest, in the field names exchange
	// consumers use.
	EffectSequence EffectType = "sequence"
	// EffectEngineError reports that the engine stopped doing something
	// it should not need to stop (a pack whose rules keep making progress
	// forever); tests and dry runs treat it as a failure.
	EffectEngineError EffectType = "engine_error"
	// EffectSessionEnd ends the session; nothing follows it.
	EffectSessionEnd EffectType = "session_end"
)

// NoteWarning is the Kind of a note emitted with level: warning.
const NoteWarning = "warning"

// Effect is one output of the engine at time T.
type Effect struct {
	T    int64      `json:"t_ms"`
	Type EffectType `json:"type"`
	// ID identifies an agent message or adapter request.
	ID        string `json:"id,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Text      string `json:"text,omitempty"`
	Voice     string `json:"voice,omitempty"`
	IntentTag string `json:"intent_tag,omitempty"`
	// Rule is the pack rule that caused the effect (anchor, window, route...).
	Rule string `json:"rule,omitempty"`
	// Reason explains notices, errors and the end of a session.
	Reason string `json:"reason,omitempty"`
	// Fallback marks an agent message that replaced a failed generation.
	Fallback bool `json:"fallback,omitempty"`
	// Guardrail lists the guardrails a message violated before rewriting.
	Guardrail []string `json:"guardrail,omitempty"`
	// Original is the generated text before a guardrail rewrite.
	Original string `json:"original,omitempty"`
	// Outcome is what the guardrails did with a generated agent message:
	// pass, regenerated(N), rewritten, fallback or tripped.
	Outcome string `json:"outcome,omitempty"`
	// Cleaned, on a generated agent message, says what was removed from
	// the model's line before it was checked: markdown, a speaker label.
	Cleaned string `json:"cleaned,omitempty"`
	// Lateness, on every agent message, is when it was due and how late
	// it was said.
	*Lateness
	// Data carries structured payloads (tool results, job results, reports).
	Data json.RawMessage `json:"data,omitempty"`
	// IsError marks a tool result that refuses the call.
	IsError bool `json:"is_error,omitempty"`
	// Request is set on llm_request effects.
	Request *LLMRequest `json:"request,omitempty"`
}

// Lateness is how late an agent message was: DueMS is when its turn
// could first be said (made, reaching the floor, or let go by the defer
// rule), LateMS how long after that it was said: the wait for the model,
// its regenerations and any cover line.
type Lateness struct {
	DueMS  int64 `json:"due_ms"`
	LateMS int64 `json:"late_ms"`
}

// lateness is the lateness of a line due at due and said now. Effects
// outlive the step that made them, so each has its own, taken from a
// block of sixteen the session allocates at a time.
func (s *Session) lateness(due int64) *Lateness {
	if len(s.lates) == 0 {
		s.lates = make([]Lateness, 16)
	}
	l := &s.lates[0]
	s.lates = s.lates[1:]
	*l = Lateness{DueMS: due, LateMS: s.now - due}
	return l
}

// Preparation marks a request that prepares a scheduled turn's line
// ahead of its due time; the answer is held until then.
type Preparation struct {
	DueMS  int64 `json:"due_ms"`
	LeadMS int64 `json:"lead_ms"`
}

// LLMRequest is everything an LLM adapter needs for one turn. It mirrors the
// seed's agent-workflow input (§5.3) and adds the persona and limits.
type LLMRequest struct {
	// SessionID is the session's id (Options.SessionID), if the host set one.
	SessionID string `json:"session_id,omitempty"`
	Role      string `json:"role"`
	Kind      string `json:"kind"`
	TurnGoal  string `json:"turn_goal"`
	// Provider, Model and MaxTokens are the role's model choice
	// (rules.ModelChoice): the vendor ("" for the host's), the model
	// name and the answer's token cap (0: the vendor's default).
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	System    string `json:"system"`
	// Human is who the person is when not the candidate (scenario.human):
	// their lines in TranscriptTail go by that name.
	Human string `json:"human,omitempty"`
	// CandidateLastMessage is the newest candidate message, if any.
	CandidateLastMessage string `json:"candidate_last_message"`
	// TranscriptTail shares the session's transcript, which only grows:
	// read it, never change it.
	TranscriptTail  []TranscriptLine `json:"transcript_tail"`
	ScenarioContext Context          `json:"scenario_context"`
	Constraints     Constraints      `json:"constraints"`
	TimeoutMS       int64            `json:"timeout_ms"`
	// Assembly is the role's order of the system prompt's parts: the
	// built-in persona, role, goal, context and constraints, and context
	// files by name (carried in Files); empty means the default.
	Assembly []string `json:"assembly,omitempty"`
	// Tools offered for this turn, and the rounds of calls made so far in it.
	Tools      []ToolDecl  `json:"tools,omitempty"`
	ToolRounds []ToolRound `json:"tool_rounds,omitempty"`
	// Sequence is set on a sequence's agent calls: the exchange and
	// round it is for; Prompt is then the exchange's prompt, which the
	// budget never cuts.
	Sequence *SequenceCall `json:"sequence,omitempty"`
	// Job requests: the job id, its rendered prompt and output schema.
	// Background jobs never hold the floor.
	Job        string          `json:"job,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Background bool            `json:"background,omitempty"`
	// Attachments are files the job sends to the model as parts.
	Attachments []Attachment `json:"attachments,omitempty"`
	// Correction, on a regeneration, is the answer the guardrails refused
	// and the instruction that says why; adapters send it as the model's
	// turn followed by the instruction.
	Correction *Correction `json:"correction,omitempty"`
	// Prepare is set on a request made ahead of its turn's due time.
	Prepare *Preparation `json:"prepare,omitempty"`
	// Files are the role's context files its assembly names, in that
	// order, cut to the pack's budgets; empty ones are left out.
	Files []FilePart `json:"files,omitempty"`
}

// FilePart is a context file as a request carries it: its path
// (shared/ID or ROLE/ID), the text sent and how many characters of the
// file were left out to fit the budget (the text marks where).
type FilePart struct {
	Path    string `json:"path"`
	Text    string `json:"text"`
	Trimmed int    `json:"trimmed,omitempty"`
}

// Correction asks the model again for a line it got wrong.
type Correction struct {
	Rejected    string `json:"rejected"`
	Instruction string `json:"instruction"`
	// Attempt counts regenerations for the line: 1, 2...
	Attempt int `json:"attempt"`
}

// Attachment is a file from the pack handed to the model.
type Attachment struct {
	Name string `json:"name"`
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// TranscriptLine is one utterance in the shared transcript.
type TranscriptLine struct {
	T       int64  `json:"t_ms"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
	// Unclear marks candidate speech below the confidence threshold.
	Unclear bool `json:"unclear,omitempty"`
}

// KV is an ordered key/value pair; ordered so requests serialize identically.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Context is the scenario context: a JSON object whose keys keep the
// pack's order, so requests serialize identically and read as written.
type Context []KV

// MarshalJSON writes the context as an object, in order.
func (c Context) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, kv := range c {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object in its order (or the older list of
// {key, value} pairs).
func (c *Context) UnmarshalJSON(data []byte) error {
	var list []KV
	if err := json.Unmarshal(data, &list); err == nil {
		*c = list
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("scenario_context: want an object")
	}
	out := Context{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("scenario_context %q: %w", t, err)
		}
		out = append(out, KV{Key: t.(string), Value: v})
	}
	*c = out
	return nil
}

// Constraints are the output limits the guardrails will enforce.
type Constraints struct {
	MaxSentences     int `json:"max_sentences,omitempty"`
	MaxQuestionCount int `json:"max_question_count,omitempty"`
	// MaxWords is the role's length bound in words (guardrails max_words
	// and max_speech at its pace): a longer line is not said as it is.
	MaxWords int `json:"max_words,omitempty"`
}

// LLMResult answers one llm_request. Err set means the call failed.
type LLMResult struct {
	ID        string     `json:"id"`
	Text      string     `json:"text,omitempty"`
	IntentTag string     `json:"intent_tag,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Finish says why the model stopped when that is not the ordinary
	// end of an answer: FinishTruncated or FinishBlocked, each vendor's
	// spelling already mapped by its adapter. Empty is a normal stop.
	Finish string        `json:"finish,omitempty"`
	Err    *AdapterError `json:"error,omitempty"`
}

// Finish reasons an adapter reports in LLMResult.Finish.
const (
	// FinishTruncated: the answer was cut by the token limit (Gemini
	// MAX_TOKENS, OpenAI length, Anthropic max_tokens).
	FinishTruncated = "truncated"
	// FinishBlocked: the vendor withheld the answer (a safety block,
	// a content filter, a refusal stop).
	FinishBlocked = "blocked"
)

// AdapterError is a failed adapter call, classified so packs can react.
type AdapterError struct {
	// Kind is timeout | rate_limit | server | bad_request | network |
	// canceled | unknown, or, from the engine when an answer asked again
	// was no better (reask.go), truncated | empty | blocked.
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
}
