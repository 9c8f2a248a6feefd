package rules

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Trigger is what makes a rule run: a candidate event of some type, or a
// moment of the engine's own (the session starting, a tool being called).
// The two are different kinds, not two spellings of one string, so an event
// a client sends can never fire an engine trigger, whatever it is called.
type Trigger struct {
	Kind TriggerKind
	// Name is the event type (TriggerEvent), or what a named engine
	// trigger names (the tool of TriggerTool, the job of TriggerJob).
	Name string
}

// TriggerKind says which namespace a Trigger is in.
type TriggerKind uint8

// The trigger kinds. TriggerEvent is the candidate's namespace; every other
// kind is the engine's. Adding a kind means adding it here and to
// engineTriggers, and firing it from the engine.
const (
	TriggerEvent TriggerKind = iota
	TriggerSessionStart
	TriggerLiveStart
	TriggerToolLoop
	TriggerAgentMessage
	TriggerAgentTranscript
	TriggerSpeechDone
	TriggerStalled
	TriggerTool
	TriggerJob
	TriggerSequence
)

// engineTriggers is the one list of the engine's own trigger names, as a
// rule's trigger: spells them. A name ending in ':' is written with what it
// names after it: "tool:NAME", "job:NAME". A trigger's scope is the
// scoped views (views.go) its rules' expressions have.
var engineTriggers = [...]struct {
	kind  TriggerKind
	name  string
	doc   string
	scope viewScope
}{
	{TriggerSessionStart, "session_start", "the session's first step", 0},
	{TriggerLiveStart, "live_start", "setup phases are done and the panel is live", 0},
	{TriggerToolLoop, "tool_loop", "a role had too many tool calls refused in a row (tool in scope)", scopeTool},
	{TriggerAgentMessage, "agent_message", "an agent line was sent", 0},
	{TriggerAgentTranscript, "agent_transcript", "a live speech session finished a line", 0},
	{TriggerSpeechDone, "speech_done", "an agent line finished playing", 0},
	{TriggerStalled, "stalled", "nothing was pending for liveness.stall_after", 0},
	{TriggerTool, "tool:", "an agent called the named tool (tool in scope)", scopeTool},
	{TriggerJob, "job:", "the named job's result landed, after its on_result (args and result in scope)", 0},
	{TriggerSequence, "sequence:", "an exchange of the named sequence ended (sequence and result in scope)", 0},
}

func named(name string) bool { return strings.HasSuffix(name, ":") }

// EventTrigger is the trigger of candidate events of type typ.
func EventTrigger(typ string) Trigger { return Trigger{Kind: TriggerEvent, Name: typ} }

// EngineTrigger is one of the engine's own triggers.
func EngineTrigger(k TriggerKind) Trigger { return Trigger{Kind: k} }

// ToolTrigger fires when an agent calls tool name.
func ToolTrigger(name string) Trigger { return Trigger{Kind: TriggerTool, Name: name} }

// JobTrigger fires when a result of job name lands.
func JobTrigger(name string) Trigger { return Trigger{Kind: TriggerJob, Name: name} }

// SequenceTrigger fires when an exchange of sequence name ends.
func SequenceTrigger(name string) Trigger { return Trigger{Kind: TriggerSequence, Name: name} }

func (t Trigger) String() string {
	if t.Kind == TriggerEvent {
		return t.Name
	}
	for _, e := range engineTriggers {
		if e.kind == t.Kind {
			if named(e.name) {
				return e.name + t.Name
			}
			return e.name
		}
	}
	return fmt.Sprintf("trigger(%d)", t.Kind)
}

// ParseTrigger reads a rule's trigger: value.
func ParseTrigger(s string) (Trigger, error) {
	for _, e := range engineTriggers {
		if !named(e.name) {
			if e.name == s {
				return EngineTrigger(e.kind), nil
			}
			continue
		}
		if name, ok := strings.CutPrefix(s, e.name); ok {
			if !isName(name) {
				return Trigger{}, fmt.Errorf("%s: write %sNAME, naming a %s of this pack", s, e.name, strings.TrimSuffix(e.name, ":"))
			}
			return Trigger{Kind: e.kind, Name: name}, nil
		}
	}
	if err := CheckEventType(s); err != nil {
		return Trigger{}, err
	}
	return EventTrigger(s), nil
}

// isName says whether s can name a tool or a job in a trigger: what
// their ids may be (letters, digits, '_' and '-').
func isName(s string) bool {
	if s == "" || len(s) > MaxEventType {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// MaxEventType bounds the length of a candidate event type.
const MaxEventType = 64

// CheckEventType says whether typ can name a candidate event: short
// snake_case, and not one of the engine's own trigger names.
func CheckEventType(typ string) error {
	if typ == "" {
		return fmt.Errorf("missing event type")
	}
	if len(typ) > MaxEventType {
		return fmt.Errorf("event type %.20q... is longer than %d characters", typ, MaxEventType)
	}
	for i, r := range typ {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("event type %q: use snake_case (a-z, 0-9 and _, starting with a letter)", typ)
		}
	}
	if ReservedEventType(typ) {
		return fmt.Errorf("%q is one of the engine's own triggers, not a candidate event type", typ)
	}
	return nil
}

// ReservedEventType reports whether typ is spelled like an engine trigger.
func ReservedEventType(typ string) bool {
	for _, e := range engineTriggers {
		if e.name == typ || named(e.name) && strings.HasPrefix(typ, e.name) {
			return true
		}
	}
	return false
}

// EngineTriggerNames lists the engine's trigger names as trigger: spells them,
// for documentation and schemas.
func EngineTriggerNames() []string {
	out := make([]string, 0, len(engineTriggers))
	for _, e := range engineTriggers {
		name := e.name
		if named(name) {
			name += "NAME"
		}
		out = append(out, name)
	}
	return out
}

// TriggerSpec is a rule's trigger: as written, with its position.
type TriggerSpec struct {
	Pos
	Trigger
	set bool
}

// Set reports whether trigger: was written (a pack with a bad one does not load).
func (t *TriggerSpec) Set() bool { return t.set }

func (t *TriggerSpec) decodeNode(d *decoder, n *yaml.Node) {
	// Written, even if wrong: the error below is the one to report, not a
	// rule without a trigger.
	t.Pos, t.set = d.pos(n), true
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		d.errorf(n, "trigger: names a candidate event type or one of %s", strings.Join(EngineTriggerNames(), ", "))
		return
	}
	if n.Tag == "!!bool" || n.Tag == "!!null" || (n.Style == 0 && yaml11Bool(n.Value)) {
		// Read by YAML 1.1 tools (and by this loader, for !!bool) as a
		// boolean, not the event type it looks like.
		d.errorf(n, "trigger: %s is a boolean to YAML tools, not an event type; quote it (\"%s\") or choose another name", n.Value, n.Value)
		return
	}
	tr, err := ParseTrigger(n.Value)
	if err != nil {
		d.errorf(n, "trigger: %v", err)
		return
	}
	t.Trigger = tr
}

// yaml11Bool reports the plain words YAML 1.1 reads as booleans, which
// YAML 1.2 (this loader) reads as text: PyYAML, most JavaScript YAML
// libraries and the editors built on them would see a different pack.
func yaml11Bool(v string) bool {
	switch strings.ToLower(v) {
	case "y", "yes", "n", "no", "on", "off", "true", "false":
		return true
	}
	return false
}
