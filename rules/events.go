package rules

import "slices"

// The candidate event types the engine itself gives meaning to. A pack's
// rules may handle any other snake_case type; a client sends it by name.
const (
	EventMessage       = "candidate_message"
	EventMicState      = "mic_state_changed"
	EventSpeechEnd     = "speech_end"
	EventTypingState   = "typing_state_changed"
	EventCodeSubmitted = "code_submitted"
)

// builtinEvents is the one list of them: the engine checks their data
// (engine/check.go), and the loader warns of a rule on a near miss.
var builtinEvents = [...]string{EventMessage, EventMicState, EventSpeechEnd, EventTypingState, EventCodeSubmitted}

// BuiltinEventTypes lists the candidate event types the engine itself
// understands.
func BuiltinEventTypes() []string { return slices.Clone(builtinEvents[:]) }

// IsBuiltinEvent reports whether typ is one of BuiltinEventTypes.
func IsBuiltinEvent(typ string) bool { return slices.Contains(builtinEvents[:], typ) }
