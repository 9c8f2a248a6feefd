package rules

import (
	"reflect"
	"slices"
	"strings"

	"io/fs"

	"github.com/batonhq/baton/rules/script"

	"github.com/batonhq/baton/rules/text"

	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"
)

// Pack is a rule pack: decoded from YAML, checked, and compiled by Load.
// After Load returns it is immutable and shared by every session.
//
// The sections map one to one onto what scenario authors talk about
// (anchors, windows, routing, defer, silence, speech confidence,
// guardrails); Rules is the escape hatch for everything else. See
// docs/packs.md for how each seed system maps onto them.
type Pack struct {
	Pos
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Schema is the pack format version; only 1 exists.
	Schema  int      `yaml:"schema"`
	Include []string `yaml:"include"`
	// Tick quantizes time: deadlines round up to it, inputs round down.
	Tick Duration `yaml:"tick"`
	// Duration is the longest a session may run; it ends there regardless.
	Duration  Duration   `yaml:"duration"`
	Constants []Constant `yaml:"constants"`
	// Inputs are what each session may or must bring (inputs.go).
	Inputs           []Input          `yaml:"inputs"`
	Vars             []Var            `yaml:"vars"`
	Scenario         Scenario         `yaml:"scenario"`
	LLM              LLMConfig        `yaml:"llm"`
	Voice            VoiceConfig      `yaml:"voice"`
	Roles            []Role           `yaml:"roles"`
	Timeline         Timeline         `yaml:"timeline"`
	Routing          []Route          `yaml:"routing"`
	TurnTaking       TurnTaking       `yaml:"turn_taking"`
	Silence          Silence          `yaml:"silence"`
	SpeechConfidence SpeechConfidence `yaml:"speech_confidence"`
	Guardrails       Guardrails       `yaml:"guardrails"`
	Rules            []Rule           `yaml:"rules"`
	Templates        []TemplateDef    `yaml:"templates"`
	Tickets          *Tickets         `yaml:"tickets"`
	Tools            []Tool           `yaml:"tools"`
	Slots            []SlotDecl       `yaml:"slots"`
	Workspace        Workspace        `yaml:"workspace"`
	Files            []ContextFile    `yaml:"files"`
	Jobs             []Job            `yaml:"jobs"`
	Sequences        []Sequence       `yaml:"sequences"`
	Phases           []Phase          `yaml:"phases"`
	Scripting        Scripting        `yaml:"scripting"`
	Liveness         Liveness         `yaml:"liveness"`
	End              []EndRule        `yaml:"end"`
	DryRun           DryRun           `yaml:"dryrun"`

	// Set by Load.
	Dir  string `yaml:"-"`
	FS   fs.FS  `yaml:"-"` // the pack folder, for sibling files
	Hash string `yaml:"-"` // sha256 over every file the pack was read from
	// Warnings are what loads but is probably a mistake (warnings.go),
	// each at file:line:col, sorted. They never stop a pack loading;
	// a pack that does not load has none.
	Warnings ErrorList `yaml:"-"`
	*boundCache
	// over are input values compiled in where durations and numbers name
	// them (Bind); nil in a pack as loaded.
	over  map[string]any
	roles map[string]int
	// speakers are every role's label names, for a line of no role.
	speakers []string
	// Context files (context.go, assembly.go).
	fileByID   map[string]int
	fileByPath map[string]int
	fileSlots  []FileSlot
	fileFirst  []int // by file: its first slot
	assemblies []Assembly
	tools      map[string]int
	jobs       map[string]int
	tpls       map[string]int
	env        *envSpec
	ruleOn     map[Trigger][]*Rule
	cover      coverIndex
	// Scripts runs the pack's scripts/*.js; nil when there are none.
	Scripts     *script.Pool `yaml:"-"`
	scriptFiles []*script.File
}

// Constant is a named value that the rest of the pack refers to by name.
// Durations ("12s", "03:00") become milliseconds.
type Constant struct {
	Pos
	ID    string `yaml:"id"`
	Value any    `yaml:"value"`
	// Set by Load: the value normalized to int64 (durations, whole numbers),
	// float64, bool or string.
	Norm       any  `yaml:"-"`
	IsDuration bool `yaml:"-"`
	// badDuration marks text used as a duration that is not one, reported
	// once where the constant is defined.
	badDuration bool
}

func (c *Constant) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&c.Value)) }

// Var is a session variable that rules may set and expressions read. Its
// initial value fixes its type.
type Var struct {
	Pos
	ID      string `yaml:"id"`
	Initial any    `yaml:"initial"`
}

func (v *Var) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&v.Initial)) }

// Scenario is the shared situation all roles know about.
type Scenario struct {
	ID      string `yaml:"id"`
	Title   string `yaml:"title"`
	Context StrMap `yaml:"context"`
	// ContextFrom, input:NAME, names an object input whose entries join
	// the context for each session (ScenarioContext).
	ContextFrom At[string] `yaml:"context_from"`
	// Attachments are files in the pack folder (documents, slides, images)
	// that jobs with attachments: true send to the model as parts.
	Attachments []Attachment `yaml:"attachments"`
	// Human is who the person in the session is (the candidate, or an
	// interviewer when the agents play the candidate): the name their
	// lines go by in the transcript, prompts and timelines.
	Human string `yaml:"human"`
}

// DefaultHuman is the person's name when the scenario gives none.
const DefaultHuman = "candidate"

// HumanName is what the person in the session is called.
func (p *Pack) HumanName() string {
	if p.Scenario.Human != "" {
		return p.Scenario.Human
	}
	return DefaultHuman
}

// Attachment is a file handed to the model: a pack file, or input:NAME
// for the files a session supplies.
type Attachment struct {
	Pos
	ID   string `yaml:"id"`
	File string `yaml:"file"`
	// MIME defaults from the file's extension.
	MIME string `yaml:"mime"`
	Data []byte `yaml:"-"`
}

func (a *Attachment) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.File)) }

// LLMConfig sets the model and limits for generated turns.
type LLMConfig struct {
	// Provider is the model vendor calls go to (gemini, openai,
	// anthropic); unset, the host's model. Model is the vendor's model
	// name; MaxTokens caps each answer (0: the vendor's default).
	Provider  Provider `yaml:"provider"`
	Model     string   `yaml:"model"`
	MaxTokens int      `yaml:"max_tokens"`
	// Timeout is the whole budget for one turn's text, retries included;
	// past it the engine uses the role's fallback line.
	Timeout Duration `yaml:"timeout"`
	// AttemptTimeout bounds one call to the model (default: Timeout).
	AttemptTimeout Duration `yaml:"attempt_timeout"`
	// Retries after a retryable failure (rate limit, server, network).
	Retries *int `yaml:"retries"`
	// Backoff before each retry; the last entry repeats.
	Backoff []Duration `yaml:"backoff"`
	// TranscriptTail is how many transcript lines a request carries.
	TranscriptTail int `yaml:"transcript_tail"`
	// Assembly orders the parts of each model call's system prompt: the
	// built-in parts persona, role, goal, context, constraints (the
	// default, in that order) and context files by name. Parts left out
	// are not sent. A role's own assembly replaces it.
	Assembly []AssemblyItem `yaml:"assembly"`
	// ContextBudget bounds the context files a call carries.
	ContextBudget ContextBudget `yaml:"context_budget"`
	// Shape, if set, is a script that may reshape each turn's request: it
	// returns the system instruction as text, or {system, turn_goal,
	// context: {key: value}} to replace or add parts.
	Shape *Hook `yaml:"shape"`
	// Prepare is how long before it is due a scheduled turn's line is
	// asked for (unset: only when due); OnStale is what happens to one
	// that went stale. A turn's own prepare: overrides both.
	Prepare Duration    `yaml:"prepare"`
	OnStale StalePolicy `yaml:"on_stale"`
	// Cover, if set, fills a slow model's silence with a short line.
	Cover *Cover `yaml:"cover"`
}

// VoiceConfig sets defaults for simulated speech.
type VoiceConfig struct {
	WordsPerMinute int `yaml:"words_per_minute"`
	// Mode is tts (default) or live; a host may override it per session.
	Mode VoiceMode `yaml:"mode"`
	// Default is the voice of roles that name none for a vendor.
	Default Voice `yaml:"default"`
}

// Role is one agent on the panel. Its persona is immutable; what it knows
// lives in the session.
type Role struct {
	Pos
	ID      string `yaml:"id"`
	Name    string `yaml:"name"`
	Persona string `yaml:"persona"`
	// Template, if set, names a pack template rendered as the persona, with
	// the role's slots filling its {{SLOT}} placeholders.
	Template string `yaml:"template"`
	// Slots are the role's named values; phases and jobs may replace them.
	Slots StrMap `yaml:"slots"`
	// Voice is the role's voice per speech vendor (Voice): one name is
	// Gemini's.
	Voice Voice `yaml:"voice"`
	// Provider, Model and MaxTokens, where set, replace llm's for this
	// role's calls: a panel may mix vendors.
	Provider  Provider `yaml:"provider"`
	Model     string   `yaml:"model"`
	MaxTokens int      `yaml:"max_tokens"`
	// WordsPerMinute overrides the pack's voice rate for this role.
	WordsPerMinute int `yaml:"words_per_minute"`
	// MaxWords and MaxSpeech override guardrails.max_words and
	// guardrails.max_speech for this role's generated lines.
	MaxWords  int      `yaml:"max_words"`
	MaxSpeech Duration `yaml:"max_speech"`
	// Focus words make a line recognisably this role's (role fidelity).
	Focus []string `yaml:"focus"`
	// Fallback lines by turn kind ("default" for any) when generation
	// fails or every other guardrail policy did. Each is one line or a
	// list, used in a seeded order without repeating.
	Fallback []LineSet `yaml:"fallback"`
	// Rewrite lines by turn goal ("default" for any) replace output that
	// breaks the guardrails; one line or a list, like Fallback.
	Rewrite []LineSet `yaml:"rewrite"`
	// Cover lines by turn kind ("default" for any) fill the wait for a
	// slow model when llm.cover is set.
	Cover []LineSet `yaml:"cover"`
	// Lines by goal or kind feed the scripted LLM in dry runs and tests.
	Lines []LineSet `yaml:"lines"`
	// Assembly, if set, replaces llm.assembly for this role's calls.
	Assembly []AssemblyItem `yaml:"assembly"`

	focus  *text.Keywords
	limits string
	// ownNames and otherNames are what a line of this role may be
	// labelled with (Pack.SpeakerLabels).
	ownNames, otherNames []string
}

// FocusWords is the compiled Focus list.
func (r *Role) FocusWords() *text.Keywords { return r.focus }

// GuardLimits is the pack's guardrail limits for this role in words
// (Guardrails.Limits), worked out once at load.
func (r *Role) GuardLimits() string { return r.limits }

// LineSet is the scripted lines for one goal, used in rotation.
type LineSet struct {
	Pos
	ID   string   `yaml:"id"`
	Text []string `yaml:"text"`
}

// FindLines returns the lines of the set named key.
func FindLines(sets []LineSet, key string) ([]string, bool) {
	for i := range sets {
		if sets[i].ID == key && len(sets[i].Text) > 0 {
			return sets[i].Text, true
		}
	}
	return nil, false
}

func (l *LineSet) setShorthand(d *decoder, n *yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		d.decode(n, refValue(&l.Text))
		return
	}
	var s string
	d.decode(n, refValue(&s))
	l.Text = []string{s}
}

// Timeline holds the fixed-time parts of a session.
type Timeline struct {
	Anchors []Anchor `yaml:"anchors"`
	Windows []Window `yaml:"windows"`
}

// Anchor is a hard time: it fires exactly then, is never deferred or
// skipped, and preempts anything pending.
type Anchor struct {
	Pos
	ID string   `yaml:"id"`
	At Duration `yaml:"at"`
	// Action is say (default) or end.
	Action AnchorAction `yaml:"action"`
	Turn   TurnSpec     `yaml:"turn"`
	Reason string       `yaml:"reason"`
}

// Window is an adaptive slot: its turn fires at the first moment in
// [Open, Close] when the floor is free.
type Window struct {
	Pos
	ID    string   `yaml:"id"`
	Open  Duration `yaml:"open"`
	Close Duration `yaml:"close"`
	Turn  TurnSpec `yaml:"turn"`
	// When is an extra condition for the window to fire.
	When Expr `yaml:"when"`
	// OnClose is fire (default: take the turn even if the floor is busy)
	// or skip.
	OnClose WindowClose `yaml:"on_close"`
}

// TurnSpec describes an agent turn. Text comes from Line if set, otherwise
// from the LLM with Goal.
type TurnSpec struct {
	Pos
	// Role is a role id, or "last" (the last agent to speak), "same" (the
	// role of the turn being replaced) or "addressed" (the role the
	// candidate named, else last).
	Role      string `yaml:"role"`
	Kind      string `yaml:"kind"`
	Goal      string `yaml:"goal"`
	Line      string `yaml:"line"`
	IntentTag string `yaml:"intent_tag"`
	// Prepare overrides llm.prepare for a scheduled turn (prepare.go).
	Prepare *Prepare `yaml:"prepare"`
	// Hard makes the turn hard, like an anchor's: it goes before other
	// turns, is not deferred, and is said when due with the best line it
	// has rather than asked again by the guardrails.
	Hard bool `yaml:"hard"`

	// Who is Role as the checker resolved it.
	Who  RoleRef `yaml:"-"`
	prep Prep
}

// RoleRef is a turn's role: a fixed role, or one resolved when the turn is
// made.
type RoleRef struct {
	Kind RoleRefKind
	// Role is the role id of a RoleFixed reference.
	Role string
}

// RoleRefKind says how a RoleRef is resolved.
type RoleRefKind uint8

// Role reference kinds, spelled in packs as a role id or as RoleLast,
// RoleSame, RoleAddressed and RoleActive.
const (
	RoleFixed RoleRefKind = iota
	RoleRefLast
	RoleRefSame
	RoleRefAddressed
	RoleRefActive
)

// Route is one step of message routing. Routes are tried in order; the
// first that matches decides who replies.
type Route struct {
	Pos
	ID string `yaml:"id"`
	// Type is anchor, addressed, intent, role or script.
	Type RouteType `yaml:"type"`
	// When guards the route.
	When Expr `yaml:"when"`
	// Field (addressed) is the event data field naming a role.
	Field string `yaml:"field"`
	// Mentions (addressed) maps text mentions such as "@qa" to role ids.
	Mentions StrMap `yaml:"mentions"`
	// Intents (intent) maps keywords to roles.
	Intents []Intent `yaml:"intents"`
	// Role (role) is the fixed target.
	Role string `yaml:"role"`
	// Script (script) returns a role id, null for no match, or
	// {role, intent_tag, goal}.
	Script  ScriptRef `yaml:"script"`
	OnError OnError   `yaml:"on_error"`
	// Kind and Goal of the reply turn.
	Kind string `yaml:"kind"`
	Goal string `yaml:"goal"`

	// Who is Role (type role) as the checker resolved it.
	Who RoleRef `yaml:"-"`
}

// Intent is a keyword class. The class with the most keyword hits wins;
// ties go to the earlier class.
type Intent struct {
	Pos
	Role     string   `yaml:"role"`
	Tag      string   `yaml:"tag"`
	Goal     string   `yaml:"goal"`
	Keywords []string `yaml:"keywords"`

	words *text.Keywords
}

// Words is the compiled keyword list.
func (in *Intent) Words() *text.Keywords { return in.words }

// TurnTaking defines when the candidate holds the floor and how agent
// turns wait for them.
type TurnTaking struct {
	// TypingDebounce keeps candidate.typing true this long after a keystroke.
	TypingDebounce Duration `yaml:"typing_debounce"`
	// SpeechResume keeps candidate.speaking true this long after speech ends.
	SpeechResume Duration `yaml:"speech_resume"`
	Defer        Defer    `yaml:"defer"`
}

// Defer holds non-anchor turns while When is true, at most Max; at the cap
// the turn becomes OnCap.
type Defer struct {
	When  Expr     `yaml:"when"`
	Max   Duration `yaml:"max"`
	OnCap TurnSpec `yaml:"on_cap"`
}

// Silence is the ladder that runs while an agent waits for an answer.
type Silence struct {
	// StartAfter is question (default: agent lines containing '?'), any
	// (every agent line) or none.
	StartAfter StartAfter    `yaml:"start_after"`
	Steps      []SilenceStep `yaml:"steps"`
}

// SilenceStep fires After the previous step (or the end of the agent's
// speech) if the candidate stays silent.
type SilenceStep struct {
	Pos
	After Duration `yaml:"after"`
	// Action is say (default), auto_advance or end.
	Action SilenceAction `yaml:"action"`
	Turn   TurnSpec      `yaml:"turn"`
}

// SpeechConfidence handles low speech-to-text confidence.
type SpeechConfidence struct {
	Threshold Number `yaml:"threshold"`
	// Steps by consecutive low-confidence count; the highest step whose
	// Count is reached applies.
	Steps []ConfidenceStep `yaml:"steps"`
}

// ConfidenceStep is the turn taken at the Count-th low-confidence message
// in a row.
type ConfidenceStep struct {
	Pos
	Count Number   `yaml:"count"`
	Turn  TurnSpec `yaml:"turn"`
}

// Rule is the generic escape hatch: on a trigger, if When holds, run Do.
// Rules with higher Priority run first; ties go by id.
type Rule struct {
	Pos
	ID string `yaml:"id"`
	// On is a candidate event type or one of the engine's triggers
	// (session_start, tool:NAME...); unset with At/Every for time triggers.
	On       TriggerSpec `yaml:"trigger"`
	At       Duration    `yaml:"at"`
	Every    Duration    `yaml:"every"`
	When     Expr        `yaml:"when"`
	Priority int         `yaml:"priority"`
	Do       Actions     `yaml:"do"`

	// strayTrigger is set when the rule has a key it does not take that
	// is spelt like trigger, at or every (on: for trigger:): reported as
	// unknown already, it is why the rule seems to have no trigger.
	strayTrigger bool
}

// ruleTriggers are the keys that say when a rule runs.
var ruleTriggers = []string{"trigger", "at", "every"}

// decodeNode decodes a rule as any other mapping, then notes a stray key
// spelt like a trigger, so that check does not report the missing trigger
// as a second problem.
func (r *Rule) decodeNode(d *decoder, n *yaml.Node) {
	d.decodeStruct(n, refValue(r))
	if n.Kind != yaml.MappingNode {
		return
	}
	idx, _ := fieldIndex(reflect.TypeFor[Rule]())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, known := idx[k]; known {
			continue
		}
		_, near := Nearest(k, ruleTriggers)
		if near || slices.Contains(ruleTriggers, renamedKeys[k]) {
			r.strayTrigger = true
		}
	}
}

// EndRule ends the session as soon as When holds.
type EndRule struct {
	Pos
	ID     string `yaml:"id"`
	When   Expr   `yaml:"when"`
	Reason string `yaml:"reason"`
}

// DryRun holds what a dry run needs that a live session does not.
type DryRun struct {
	Pos
	// Candidate is an events file (JSON lines) played when none is given.
	Candidate string `yaml:"candidate"`
	// LLMLatency is the scripted LLM's delay per call.
	LLMLatency Duration `yaml:"llm_latency"`
	// Model, if set, is a script that plays the model in dry runs and pack
	// tests (for calls no test script answers). It receives the request
	// and returns {text, intent_tag, tool_calls: [{name, args}], error}.
	Model ScriptRef `yaml:"model"`
	// CandidateModel, if set, is a simulated candidate that answers the
	// panel, seeded: baton sweep plays many sessions of it.
	CandidateModel *CandidateModel `yaml:"candidate_model"`
}

// Expr is an expr-lang expression compiled at load, or a script returning
// a boolean.
type Expr struct {
	Pos
	Src    string
	Script ScriptRef
	prog   *vm.Program
	// clock is set for a condition that only compares now() with a
	// number fixed at load (clockcond.go).
	clock *clockCond
	// lit is the value of an expression a script returned: scripts compute
	// values, they do not write expressions.
	lit   any
	isLit bool
	// broken marks an expression already reported as wrong where it was
	// written; it counts as written, so "needs a value" stays quiet.
	broken bool
}

// Set reports whether the condition was written.
func (e *Expr) Set() bool { return e.Src != "" || e.Script.Set() || e.isLit || e.broken }

// Value is an expression of any type (what set, record and report store,
// a job's arguments), where an Expr is a condition and must be boolean.
type Value struct{ Expr }

func (v *Value) decodeNode(d *decoder, n *yaml.Node) {
	if !d.literal && n.Kind != yaml.ScalarNode {
		// Conditions may be scripts; values are computed by expressions
		// (a script that computes values returns actions from run:).
		v.Pos, v.broken = d.pos(n), true
		d.errorf(n, "expected an expression, found %s", kindName(n))
		return
	}
	v.Expr.decodeNode(d, n)
}

// ScriptRef names a function in the pack's scripts/ folder, written
// "file.js#function" (or just "function": names are unique pack-wide).
type ScriptRef struct {
	Pos
	File string
	Func string
}

// Set reports whether the reference was written.
func (r ScriptRef) Set() bool { return r.Func != "" }

func (r ScriptRef) String() string {
	if r.File == "" {
		return r.Func
	}
	return r.File + "#" + r.Func
}

func (r *ScriptRef) decodeNode(d *decoder, n *yaml.Node) {
	r.Pos = d.pos(n)
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		d.errorf(n, "expected a script reference such as guard.js#rewrite")
		return
	}
	file, fn, ok := strings.Cut(n.Value, "#")
	if !ok {
		file, fn = "", n.Value
	}
	if fn == "" || !isIdent(strings.ReplaceAll(fn, "$", "_")) {
		d.errorf(n, "bad script reference %q: want file.js#function", n.Value)
		return
	}
	r.File, r.Func = file, fn
}

// Hook is a script a pack plugs into the engine, with what to do when it
// throws, times out or returns the wrong shape: "skip" (carry on as if the
// hook were absent), "fallback" (the role's fallback line, where a line is
// being made) or "end" (end the session).
type Hook struct {
	Script  ScriptRef `yaml:"script"`
	OnError OnError   `yaml:"on_error"`
}

// Liveness keeps a session from idling silently. When no turn, job,
// silence step or timer (other than the session's duration) is pending
// and the candidate is neither talking nor typing for StallAfter, the
// rules trigger: stalled run, once, until something happens again.
type Liveness struct {
	Pos
	StallAfter Duration `yaml:"stall_after"`
}

// Scripting configures the pack's scripts.
type Scripting struct {
	// Budget is each call's time limit (default 20ms).
	Budget Duration `yaml:"budget"`
}

// Program is the compiled expression, nil when unset.
func (e *Expr) Program() *vm.Program { return e.prog }

func (e *Expr) decodeNode(d *decoder, n *yaml.Node) {
	e.Pos = d.pos(n)
	if d.literal {
		if err := n.Decode(&e.lit); err != nil {
			d.errorf(n, "%v", err)
		}
		e.isLit = true
		return
	}
	if n.Kind == yaml.MappingNode {
		// {script: file.js#fn}: the condition is a script returning a boolean.
		var h struct {
			Script ScriptRef `yaml:"script"`
		}
		d.decode(n, refValue(&h))
		if !h.Script.Set() {
			d.errorf(n, "a condition is an expression or {script: file.js#function}")
		}
		e.Script = h.Script
		return
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, "expected an expression, found %s", kindName(n))
		return
	}
	e.Src = n.Value
	// Quoted scalars start one column after the quote.
	if n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle {
		e.Col++
	}
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		e.Line++
	}
}

// StrMap is an ordered string-to-string mapping.
type StrMap []StrEntry

// StrEntry is one StrMap entry.
type StrEntry struct {
	Pos
	Key   string
	Value string
}

func (m *StrMap) decodeNode(d *decoder, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "expected a mapping, found %s", kindName(n))
		return
	}
	for _, kv := range d.pairs(n) {
		k, v := kv[0], resolve(kv[1])
		if v == nil || v.Kind != yaml.ScalarNode {
			d.errorf(kv[1], "expected text for %q", k.Value)
			continue
		}
		*m = append(*m, StrEntry{Pos: d.pos(k), Key: k.Value, Value: v.Value})
	}
}

// Get returns the value for key and whether it exists.
func (m StrMap) Get(key string) (string, bool) {
	for _, e := range m {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}
