package rules

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// A pack setting that takes one of a closed set of words is a small integer
// type whose words are listed once, in a slice indexed by value. The loader
// decodes the word (and reports a wrong one where it is written, with the
// words it could be), the JSON Schema lists them, and the engine compares
// typed constants. The zero value is the default, so a setting left out
// needs no defaulting code; where there is no default, word 0 is "" and
// the checker asks for one.

// enum is implemented by every such type, for the JSON Schema.
type enum interface{ enumWords() []string }

func decodeEnum[T ~uint8](d *decoder, n *yaml.Node, v *T, words []string) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, "expected one of %s, found %s", listWords(words), kindName(n))
		return
	}
	for i, w := range words {
		if w != "" && w == n.Value {
			*v = T(i)
			return
		}
	}
	d.errorf(n, "%q is not one of %s%s", n.Value, listWords(words), DidYouMean(n.Value, words))
	// Not the default either: checks that ask for a value stay quiet, the
	// error above being the one to fix.
	*v = badEnum
}

// badEnum marks a setting whose word was wrong; such a pack never loads.
const badEnum = 255

func listWords(words []string) string {
	var out []string
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

func word(words []string, i uint8) string {
	if int(i) < len(words) {
		return words[i]
	}
	return "?"
}

// AnchorAction is what an anchor does at its time.
type AnchorAction uint8

// Anchor actions.
const (
	AnchorSay AnchorAction = iota
	AnchorEnd
)

var anchorActionWords = []string{"say", "end"}

func (a AnchorAction) String() string                       { return word(anchorActionWords, uint8(a)) }
func (AnchorAction) enumWords() []string                    { return anchorActionWords }
func (a *AnchorAction) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, a, anchorActionWords) }

// WindowClose is what a window does when it closes with its turn untaken.
type WindowClose uint8

// Window close policies.
const (
	CloseFire WindowClose = iota
	CloseSkip
)

var windowCloseWords = []string{"fire", "skip"}

func (w WindowClose) String() string                       { return word(windowCloseWords, uint8(w)) }
func (WindowClose) enumWords() []string                    { return windowCloseWords }
func (w *WindowClose) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, w, windowCloseWords) }

// RouteType is how a route picks the role that answers.
type RouteType uint8

// Route types; a route must name one.
const (
	routeUnset RouteType = iota
	RouteAnchor
	RouteAddressed
	RouteIntent
	RouteRole
	RouteScript
)

var routeTypeWords = []string{"", "anchor", "addressed", "intent", "role", "script"}

func (r RouteType) String() string                       { return word(routeTypeWords, uint8(r)) }
func (RouteType) enumWords() []string                    { return routeTypeWords }
func (r *RouteType) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, r, routeTypeWords) }

// StartAfter says which agent lines start the silence ladder.
type StartAfter uint8

// Silence ladder starts.
const (
	AfterQuestion StartAfter = iota
	AfterAny
	AfterNone
)

var startAfterWords = []string{"question", "any", "none"}

func (s StartAfter) String() string                       { return word(startAfterWords, uint8(s)) }
func (StartAfter) enumWords() []string                    { return startAfterWords }
func (s *StartAfter) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, s, startAfterWords) }

// SilenceAction is what a silence step does.
type SilenceAction uint8

// Silence step actions.
const (
	SilenceSay SilenceAction = iota
	SilenceAutoAdvance
	SilenceEnd
)

var silenceActionWords = []string{"say", "auto_advance", "end"}

func (s SilenceAction) String() string                       { return word(silenceActionWords, uint8(s)) }
func (SilenceAction) enumWords() []string                    { return silenceActionWords }
func (s *SilenceAction) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, s, silenceActionWords) }

// OnViolation is what happens to an agent line that breaks the guardrails.
type OnViolation uint8

// Guardrail policies.
const (
	// ViolationRewrite replaces the line: the rewrite script, the role's
	// rewrite lines for the goal, or the line trimmed.
	ViolationRewrite OnViolation = iota
	// ViolationFallback says the role's fallback line for the turn kind.
	ViolationFallback
	// ViolationPass says the line anyway (its violations are reported).
	ViolationPass
	// ViolationRegenerate asks the model again with the violations named.
	ViolationRegenerate
)

var onViolationWords = []string{"rewrite", "fallback", "pass", "regenerate"}

func (o OnViolation) String() string                       { return word(onViolationWords, uint8(o)) }
func (OnViolation) enumWords() []string                    { return onViolationWords }
func (o *OnViolation) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, o, onViolationWords) }

// OnError is what happens when a pack script throws, runs out of time or
// returns the wrong shape. Each hook allows a subset.
type OnError uint8

// Script failure policies.
const (
	// ErrorSkip carries on as if the hook were absent.
	ErrorSkip OnError = iota
	// ErrorFallback uses the role's fallback line, where a line is made.
	ErrorFallback
	// ErrorEnd ends the session.
	ErrorEnd
)

var onErrorWords = []string{"skip", "fallback", "end"}

func (o OnError) String() string                       { return word(onErrorWords, uint8(o)) }
func (OnError) enumWords() []string                    { return onErrorWords }
func (o *OnError) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, o, onErrorWords) }

// Level is how loud an emitted note is.
type Level uint8

// Note levels.
const (
	// LevelInfo is a notice on the timeline.
	LevelInfo Level = iota
	// LevelWarning is something an operator should see: the dry run
	// lists it in its summary and the service counts it.
	LevelWarning
)

var levelWords = []string{"info", "warning"}

func (l Level) String() string                       { return word(levelWords, uint8(l)) }
func (Level) enumWords() []string                    { return levelWords }
func (l *Level) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, l, levelWords) }

// VoiceMode is how agents speak.
type VoiceMode uint8

// Voice modes.
const (
	// VoiceTTS: agent lines are generated turns, then spoken.
	VoiceTTS VoiceMode = iota
	// VoiceLive: the floor holder talks through a live speech-to-speech
	// session; the engine emits live_session effects when the floor moves
	// and takes transcripts and tool calls as inputs.
	VoiceLive
)

var voiceModeWords = []string{"tts", "live"}

func (v VoiceMode) String() string                       { return word(voiceModeWords, uint8(v)) }
func (VoiceMode) enumWords() []string                    { return voiceModeWords }
func (v *VoiceMode) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, v, voiceModeWords) }

// ParseVoiceMode reads a voice mode word, as hosts take it per session.
func ParseVoiceMode(s string) (VoiceMode, bool) {
	for i, w := range voiceModeWords {
		if w == s {
			return VoiceMode(i), true
		}
	}
	return 0, false
}

// StalePolicy is what happens to a prepared line whose request has
// changed by the time it is due (a new candidate message, another role
// speaking, a memory written).
type StalePolicy uint8

// Stale policies.
const (
	// StaleRegenerate asks again, at once when the change happens before
	// the due time, else at the due time.
	StaleRegenerate StalePolicy = iota
	// StaleSpeak says the held line anyway, reported as stale.
	StaleSpeak
	// StaleDrop says nothing for the turn.
	StaleDrop
)

var stalePolicyWords = []string{"regenerate", "speak", "drop"}

func (s StalePolicy) String() string                       { return word(stalePolicyWords, uint8(s)) }
func (StalePolicy) enumWords() []string                    { return stalePolicyWords }
func (s *StalePolicy) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, s, stalePolicyWords) }

// ToolExecutor is who carries out a tool call the engine has accepted.
type ToolExecutor uint8

// Tool executors.
const (
	// ExecPack: the pack's rules (trigger: tool:NAME) answer the call.
	ExecPack ToolExecutor = iota
	// ExecClient: the session's client runs it and sends the result.
	ExecClient
)

var toolExecutorWords = []string{"pack", "client"}

func (e ToolExecutor) String() string                       { return word(toolExecutorWords, uint8(e)) }
func (ToolExecutor) enumWords() []string                    { return toolExecutorWords }
func (e *ToolExecutor) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, e, toolExecutorWords) }
