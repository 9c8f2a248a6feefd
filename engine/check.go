package engine

import (
	"fmt"
	"math"

	"github.com/batonhq/baton/rules"
)

// MaxReason bounds the reason a host gives for ending a session.
const MaxReason = 512

// eventChecks says what each built-in candidate event type (the list is
// rules.BuiltinEventTypes, which the loader shares) must carry; a type
// without an entry needs nothing. Any other type must be handled by a rule
// of the pack (trigger: TYPE), or nobody would notice it arrive.
var eventChecks = map[string]func(*CandidateEvent) error{
	rules.EventMessage: func(ev *CandidateEvent) error {
		if ev.Text == "" {
			return fmt.Errorf("%s needs data.text", rules.EventMessage)
		}
		return nil
	},
	rules.EventMicState: func(ev *CandidateEvent) error {
		if ev.MicActive == nil {
			return fmt.Errorf("%s needs data.mic_active", rules.EventMicState)
		}
		return nil
	},
	rules.EventTypingState: func(ev *CandidateEvent) error {
		if ev.Typing == nil {
			return fmt.Errorf("%s needs data.typing", rules.EventTypingState)
		}
		return nil
	},
}

// BuiltinEventTypes lists the candidate event types the engine itself
// understands.
func BuiltinEventTypes() []string { return rules.BuiltinEventTypes() }

// EventField is a data field of a candidate event the engine itself
// reads, named as the wire's data object spells it.
type EventField struct {
	Name string `json:"name"`
	// Required: eventChecks refuses the event without it.
	Required bool `json:"required,omitempty"`
	// Why says what the engine does with it.
	Why string `json:"why"`
}

// eventData is the one table of what the engine reads of each built-in
// type's data (candidate.go, confidence.go, routing.go), whatever the
// pack's rules read besides; a type without an entry is read for
// nothing but its arrival. The required ones are eventChecks'.
var eventData = map[string][]EventField{
	rules.EventMessage: {
		{"text", true, "the transcript, routing (mentions, intents) and a sequence's prompt"},
		{"stt_confidence", false, "speech_confidence: a low one is asked again, not routed"},
		{"addressed_to", false, "addressed routes: the role the message is for"},
	},
	rules.EventMicState:    {{"mic_active", true, "holds turns back and pauses the silence ladder while open"}},
	rules.EventTypingState: {{"typing", true, "holds turns back and pauses the silence ladder while typing"}},
}

// Sequence defaults: a rule on any event that starts a sequence without
// a prompt or run_id, or cancels one without a run_id, takes them from
// the event being handled (sequence.go).
var (
	SequencePromptField = EventField{Name: "text", Why: "the prompt of the exchange a rule starts"}
	SequenceRunField    = EventField{Name: "run_id", Why: "the run id of the exchange a rule starts or cancels"}
)

// EventData lists the data fields the engine itself reads of a built-in
// event type, in the order of the table.
func EventData(typ string) []EventField { return append([]EventField(nil), eventData[typ]...) }

// EventTypes lists every candidate event type a session of p accepts: the
// built-in ones, then those the pack's rules name, in pack order.
func EventTypes(p *rules.Pack) []string {
	out := BuiltinEventTypes()
	for i := range p.Rules {
		if on := p.Rules[i].On; on.Set() && on.Kind == rules.TriggerEvent && !contains(out, on.Name) {
			out = append(out, on.Name)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// CheckInput is the one check of an input against the contract of a
// session of pack p. Hosts call it before they log an input, so that what
// is logged and acknowledged is what the engine will apply; Step calls it
// again. Errors wrap ErrBadInput.
func CheckInput(p *rules.Pack, in *Input) error {
	if err := checkInput(p, in); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return nil
}

func checkInput(p *rules.Pack, in *Input) error {
	if in.T < 0 {
		return fmt.Errorf("input at %dms, before the session started", in.T)
	}
	k, ok := kindOf(in.Type)
	if !ok {
		return fmt.Errorf("unknown input type %q", in.Type)
	}
	carried := 0
	for _, other := range inputKinds {
		if in.payload(other.typ) != nil {
			carried++
		}
	}
	if k.field == "" {
		if carried > 0 {
			return fmt.Errorf("%s input carries a payload", in.Type)
		}
		return nil
	}
	pl := in.payload(k.typ)
	switch {
	case pl == nil && k.absent != nil:
		return nil
	case pl == nil:
		return fmt.Errorf("%s input without its %s", in.Type, k.field)
	case carried != 1:
		return fmt.Errorf("%s input carries %d payloads, want its %s only", in.Type, carried, k.field)
	}
	return pl.check(p)
}

func (ev *CandidateEvent) check(p *rules.Pack) error { return CheckEvent(p, ev) }

func (r *LLMResult) check(*rules.Pack) error {
	if r.ID == "" {
		return fmt.Errorf("llm_result without an id")
	}
	return nil
}

func (d *SpeechDone) check(*rules.Pack) error {
	if d.ID == "" {
		return fmt.Errorf("speech_done without an id")
	}
	return nil
}

func (c *ToolCall) check(p *rules.Pack) error {
	if c.ID == "" || c.Name == "" {
		return fmt.Errorf("tool_call needs an id and a name")
	}
	if c.Role != "" {
		return knownRole(p, "tool_call", c.Role)
	}
	return nil
}

func (a *AgentLine) check(p *rules.Pack) error {
	if a.Role == "" {
		return fmt.Errorf("agent_transcript needs a role")
	}
	return knownRole(p, "agent_transcript", a.Role)
}

func (e *EndRequest) check(*rules.Pack) error {
	if len(e.Reason) > MaxReason {
		return fmt.Errorf("end reason is longer than %d bytes", MaxReason)
	}
	return nil
}

func knownRole(p *rules.Pack, what, role string) error {
	if _, ok := p.Role(role); !ok {
		return fmt.Errorf("%s from role %q, which pack %s does not have%s", what, role, p.Name, rules.DidYouMean(role, p.RoleIDs()))
	}
	return nil
}

// CheckEvent checks a candidate event against pack p: its type is a
// built-in one or one the pack's rules handle, and its data is what the
// type needs.
func CheckEvent(p *rules.Pack, ev *CandidateEvent) error {
	if err := rules.CheckEventType(ev.Type); err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownEventType, err)
	}
	if c := ev.STTConfidence; c != nil && (math.IsNaN(*c) || *c < 0 || *c > 1) {
		return fmt.Errorf("stt_confidence %v must be between 0 and 1", *c)
	}
	if rules.IsBuiltinEvent(ev.Type) {
		if check := eventChecks[ev.Type]; check != nil {
			return check(ev)
		}
		return nil
	}
	if len(p.RulesOn(rules.EventTrigger(ev.Type))) > 0 {
		return nil
	}
	return fmt.Errorf("%w: %q is not handled by pack %s%s (it takes %s)", ErrUnknownEventType, ev.Type, p.Name,
		rules.DidYouMean(ev.Type, EventTypes(p)), joinTypes(EventTypes(p)))
}

func joinTypes(list []string) string {
	out := ""
	for i, s := range list {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
