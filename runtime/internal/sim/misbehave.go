package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
	"github.com/batonhq/baton/runtime/llm"
)

// The misbehaviours the simulated model can show, each by its name. They
// stand for what real models do to a session: the engine's guardrails,
// retries and tool checks are tested against them.
const (
	// MisLong answers a turn with a runaway line of thousands of words.
	MisLong = "long"
	// MisLabel starts a turn's line with a speaker label ("qa: ",
	// "**Marcus:** ").
	MisLabel = "label"
	// MisMarkdown answers a turn in markdown: a heading, bold, a list and
	// a code fence.
	MisMarkdown = "markdown"
	// MisBadTools makes three bad tool calls in a turn offered tools: a
	// value outside a parameter's choices, a required argument missing
	// and a tool that does not exist.
	MisBadTools = "bad_tools"
	// MisRefusedEnd says a closing sentence with a call to a pack tool
	// not offered now (or one likely to be refused).
	MisRefusedEnd = "refused_end"
	// MisTruncated cuts an answer mid-way and says so (FinishTruncated).
	MisTruncated = "truncated"
	// MisRateLimit hits a rate limit on the first attempt: the answer
	// comes after latency + RetryAfterMS + latency, or the call fails
	// with rate_limit when the hint exceeds the request's timeout.
	MisRateLimit = "rate_limit"
	// MisEmpty answers with nothing: no text, no calls.
	MisEmpty = "empty"
	// MisSafety has the answer withheld (FinishBlocked, no text).
	MisSafety = "safety"
	// MisOffRole answers a turn with small talk that ignores its goal and
	// the role's focus, unless asked again about role fidelity.
	MisOffRole = "off_role"
	// MisSlow answers after SlowMS (or just after a prepared turn's lead
	// when that is longer).
	MisSlow = "slow"
)

// MisbehaviourNames lists every misbehaviour, in the order a call applies
// them.
var MisbehaviourNames = []string{
	MisRateLimit, MisSafety, MisEmpty, MisOffRole, MisLong, MisMarkdown, MisLabel,
	MisBadTools, MisRefusedEnd, MisTruncated, MisSlow,
}

// jobMisbehaviours are the ones that apply to jobs as well as turns.
var jobMisbehaviours = []string{MisTruncated, MisEmpty, MisRateLimit, MisSlow}

const (
	// RetryAfterMS is the rate limit's retry-after hint.
	RetryAfterMS = 2000
	// SlowMS is how long a slow answer takes.
	SlowMS = 2000
	// DefaultRate is how often a misbehaviour strikes a call it applies
	// to, off_role excepted (DefaultOffRoleRate).
	DefaultRate = 0.5
	// DefaultOffRoleRate: an off-role model is off role on every turn.
	DefaultOffRoleRate = 1.0
	// ComplyRate is how often an off-role model, asked again about role
	// fidelity, complies.
	ComplyRate = 0.6
)

// Misbehave says how the simulated model misbehaves: which of
// MisbehaviourNames (all when empty) and how often, each call drawing
// its own from a source seeded by Seed and the call's number, so the
// same seed and requests give the same answers.
type Misbehave struct {
	Names []string
	// Rate is the probability that a misbehaviour strikes a call it
	// applies to; 0 means each one's default.
	Rate float64
	Seed uint64
}

// Chaos is the prefix of a misbehaving model's spelling: "chaos",
// "chaos:long,label", "chaos@0.3", "chaos:long,label@0.3".
const Chaos = "chaos"

// IsChaos says whether spec spells a misbehaving model.
func IsChaos(spec string) bool {
	return spec == Chaos || strings.HasPrefix(spec, Chaos+":") || strings.HasPrefix(spec, Chaos+"@")
}

// ParseChaos reads a misbehaving model's spelling: "chaos" for every
// misbehaviour, "chaos:NAME,NAME" for some, either with "@RATE" (0 < RATE
// <= 1) for how often. A wrong name is refused with the valid names and
// the nearest one.
func ParseChaos(spec string) (Misbehave, error) {
	var m Misbehave
	if !IsChaos(spec) {
		return m, fmt.Errorf("%q is not a misbehaving model (chaos, chaos:NAME,NAME or either @RATE)", spec)
	}
	rest := strings.TrimPrefix(spec, Chaos)
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		r, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil || !(r > 0 && r <= 1) {
			return m, fmt.Errorf("chaos rate %q must be a number above 0 and at most 1", rest[i+1:])
		}
		m.Rate, rest = r, rest[:i]
	}
	if rest == "" {
		return m, nil
	}
	rest = strings.TrimPrefix(rest, ":")
	for _, n := range strings.Split(rest, ",") {
		n = strings.TrimSpace(n)
		if err := CheckMisbehaviour(n); err != nil {
			return Misbehave{}, err
		}
		if !slices.Contains(m.Names, n) {
			m.Names = append(m.Names, n)
		}
	}
	return m, nil
}

// CheckMisbehaviour refuses a name that is not a misbehaviour, naming the
// valid ones and the nearest.
func CheckMisbehaviour(name string) error {
	if slices.Contains(MisbehaviourNames, name) {
		return nil
	}
	return fmt.Errorf("%q is not a misbehaviour%s (misbehaviours: %s)", name, rules.DidYouMean(name, MisbehaviourNames), strings.Join(MisbehaviourNames, ", "))
}

// Misbehave makes the model misbehave as m says on every call after this
// one; the reply script's own misbehave lists still apply to their
// replies.
func (f *Model) Misbehave(m Misbehave) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mis = &m
}

func (m *Misbehave) rate(name string) float64 {
	switch {
	case m.Rate > 0:
		return m.Rate
	case name == MisOffRole:
		return DefaultOffRoleRate
	}
	return DefaultRate
}

// struck draws, for call, which of the model's misbehaviours strike it;
// forced (a reply's misbehave list) always do.
func (f *Model) struck(call int, forced []string) (map[string]bool, *rand.Rand) {
	seed := uint64(0)
	if f.mis != nil {
		seed = f.mis.Seed
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d69736265686176^uint64(call)))
	hit := map[string]bool{}
	for _, n := range MisbehaviourNames {
		// One draw per name whatever is chosen: a name added to the set
		// does not move the others' draws.
		x := rng.Float64()
		if f.mis != nil && (len(f.mis.Names) == 0 || slices.Contains(f.mis.Names, n)) && x < f.mis.rate(n) {
			hit[n] = true
		}
	}
	for _, n := range forced {
		hit[n] = true
	}
	return hit, rng
}

// misbehave turns an ordinary answer into a misbehaving one. It returns
// the misbehaviours that struck the call, in MisbehaviourNames order.
func (f *Model) misbehave(call int, forced []string, req *engine.LLMRequest, res *engine.LLMResult, delay *int64) (struck []string) {
	if f.mis == nil && len(forced) == 0 {
		return nil
	}
	hit, rng := f.struck(call, forced)
	if len(hit) == 0 || res.Err != nil {
		return nil
	}
	job := req.Job != ""
	on := func(name string) bool {
		return hit[name] && (!job || slices.Contains(jobMisbehaviours, name))
	}
	for _, n := range MisbehaviourNames {
		if on(n) {
			struck = append(struck, n)
		}
	}
	firstRound := len(req.ToolRounds) == 0
	if on(MisRateLimit) {
		if req.TimeoutMS > 0 && RetryAfterMS > req.TimeoutMS {
			*res = engine.LLMResult{ID: res.ID, Err: &engine.AdapterError{Kind: "rate_limit", Message: fmt.Sprintf("rate limited; retry after %dms, past the %dms timeout", RetryAfterMS, req.TimeoutMS)}}
			return struck
		}
		*delay = *delay + RetryAfterMS + *delay
	}
	if on(MisSlow) {
		slow := int64(SlowMS)
		if p := req.Prepare; p != nil {
			slow = max(slow, p.LeadMS+500)
		}
		*delay = max(*delay, slow)
	}
	if on(MisSafety) {
		*res = engine.LLMResult{ID: res.ID, Finish: engine.FinishBlocked}
		return struck
	}
	if on(MisEmpty) {
		*res = engine.LLMResult{ID: res.ID}
		return struck
	}
	if on(MisOffRole) {
		res.Text = f.offRole(req, res.Text, rng)
	}
	if res.Text != "" {
		if on(MisLong) {
			res.Text = runaway(res.Text, rng)
		}
		if on(MisMarkdown) {
			res.Text = markdown(res.Text)
		}
		if on(MisLabel) {
			res.Text = f.label(req.Role, rng) + res.Text
		}
	}
	if on(MisBadTools) && firstRound && len(req.Tools) > 0 {
		res.ToolCalls = badCalls(res.ID, req.Tools)
	}
	if on(MisRefusedEnd) && firstRound && len(f.pack.Tools) > 0 {
		res.Text = "Thank you, that concludes the panel."
		res.ToolCalls = append(res.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("%s-end", res.ID), Name: f.refusedTool(req), Args: json.RawMessage(`{}`)})
	}
	if on(MisTruncated) && res.Text != "" {
		res.Text = cut(res.Text)
		res.Finish = engine.FinishTruncated
	}
	return struck
}

// smallTalk is what an off-role model says: nothing of any turn's goal.
var smallTalk = []string{
	"Lovely weather today, isn't it? I was just thinking about lunch.",
	"Did you catch the match at the weekend? What a finish that was.",
	"I have been meaning to try that new bakery around the corner.",
	"My cat knocked a plant off the windowsill this morning, quite the mess.",
	"Honestly, I could do with a holiday somewhere warm and quiet.",
}

// offRole is an off-role answer, or, when the request is a regeneration
// about role fidelity, base, complying with ComplyRate and then
// answering the candidate's last message: a few of its content words
// lead the line ("On replay, staging: which log ...").
func (f *Model) offRole(req *engine.LLMRequest, base string, rng *rand.Rand) string {
	if c := req.Correction; c != nil && aboutFidelity(c.Instruction) && rng.Float64() < ComplyRate {
		// Like a model answering the turn in front of it, it answers
		// the candidate only if the correction it is read (the last
		// message of the request an adapter sends) says what they said.
		last := req.CandidateLastMessage
		if msgs := llm.FromTurn(req).Messages; last == "" || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Text, last) {
			last = ""
		}
		if ws := ContentWords(last); len(ws) > 0 && base != "" {
			// A clause, not a sentence of its own: the line keeps its
			// count of sentences.
			ws = ws[:min(3, len(ws))]
			r := []rune(base)
			return "On " + strings.Join(ws, ", ") + ": " + string(unicode.ToLower(r[0])) + string(r[1:])
		}
		return base
	}
	return smallTalk[rng.IntN(len(smallTalk))]
}

func aboutFidelity(instruction string) bool {
	s := strings.ToLower(instruction)
	return strings.Contains(s, rules.GuardRoleFidelity) || strings.Contains(s, "role fidelity")
}

// stopWords are left out of ContentWords.
var stopWords = strings.Fields(`about above after again against also always because been before being
below between both cannot could does doing down during each from further have having here hers herself
himself into itself just know like make more most much must myself once only other ours ourselves over
really same should some such than that their theirs them themselves then there these they this those
through under until very want well were what when where which while whom will with would your yours
yourself yourselves think going thing things said says okay yeah sure maybe right`)

// ContentWords are the words of s that carry its content: lower case, four
// letters or more, no common words, each once, in order.
func ContentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 4 || slices.Contains(stopWords, w) || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// filler makes up a runaway answer's paragraphs.
var filler = strings.Fields(`furthermore it is worth considering the broader context of everything we
have discussed so far including the various perspectives stakeholders might bring to the table and
the many ways in which each consideration interacts with every other consideration over time`)

// runaway is base followed by several paragraphs, some 2,400 words in all.
func runaway(base string, rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString(base)
	for p := 0; p < 6; p++ {
		b.WriteString("\n\n")
		for i := 0; i < 400; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(filler[rng.IntN(len(filler))])
			if i%20 == 19 {
				b.WriteByte('.')
			}
		}
		b.WriteByte('.')
	}
	return b.String()
}

// markdown dresses base as a markdown answer.
func markdown(base string) string {
	return "### My question\n\n**" + base + "**\n\n- first, the context\n- second, the risk\n\n```\nstep 1: answer\n```"
}

// SpeakerNames are what a line of a role may be labelled with: its id,
// its display name and, for a name of several words, its first when that
// can be a name (text.SpeakerNames: "Theo" of "Theo (Tech Lead)", not
// "The" of "The Brain").
func SpeakerNames(r *rules.Role) []string { return text.SpeakerNames(r.ID, r.Name) }

// label is a speaker label for a line of role: its id, its name or
// another role's, in a varied case and dress.
func (f *Model) label(role string, rng *rand.Rand) string {
	var names []string
	if r, ok := f.pack.Role(role); ok {
		names = append(names, SpeakerNames(r)...)
	}
	for i := range f.pack.Roles {
		if r := &f.pack.Roles[i]; r.ID != role {
			names = append(names, SpeakerNames(r)...)
		}
	}
	names = slices.DeleteFunc(names, func(s string) bool { return s == "" })
	if len(names) == 0 {
		names = []string{role}
	}
	n := names[rng.IntN(len(names))]
	switch rng.IntN(3) {
	case 1:
		n = strings.ToLower(n)
	case 2:
		n = strings.ToUpper(n)
	}
	if rng.IntN(2) == 0 {
		return "**" + n + ":** "
	}
	return n + ": "
}

// badCalls are three bad calls to tools offered: a value outside a
// parameter's choices, a required argument missing, and a tool that
// does not exist.
func badCalls(id string, tools []engine.ToolDecl) []engine.ToolCall {
	type schema struct {
		Properties map[string]struct {
			Enum []any `json:"enum"`
			Type string
		} `json:"properties"`
		Required []string `json:"required"`
	}
	decl := func(t engine.ToolDecl) schema {
		var s schema
		_ = json.Unmarshal(t.Parameters, &s)
		return s
	}
	// full fills every property of s, in name order, with a plain value.
	full := func(s schema) map[string]any {
		args := map[string]any{}
		for k := range s.Properties {
			args[k] = "something"
		}
		return args
	}
	call := func(n int, name string, args map[string]any) engine.ToolCall {
		b, _ := json.Marshal(args)
		return engine.ToolCall{ID: fmt.Sprintf("%s-bad-%d", id, n), Name: name, Args: b}
	}
	var out []engine.ToolCall
	// A value outside the choices: the first parameter with an enum, else
	// the first string parameter.
	for _, pass := range []bool{true, false} {
		for _, t := range tools {
			s := decl(t)
			keys := sortedKeys(s.Properties)
			for _, k := range keys {
				p := s.Properties[k]
				if (pass && len(p.Enum) > 0) || (!pass && p.Type == "string") {
					args := full(s)
					args[k] = "nobody_of_that_name"
					out = append(out, call(1, t.Name, args))
					break
				}
			}
			if len(out) > 0 {
				break
			}
		}
		if len(out) > 0 {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, call(1, tools[0].Name, map[string]any{"nobody_of_that_name": true}))
	}
	// A required argument missing.
	missing := call(2, tools[0].Name, map[string]any{})
	for _, t := range tools {
		if s := decl(t); len(s.Required) > 0 {
			args := full(s)
			delete(args, s.Required[0])
			missing = call(2, t.Name, args)
			break
		}
	}
	return append(out, missing, call(3, "no_such_tool", map[string]any{"x": 1}))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// refusedTool is a pack tool not offered to req, the one whose name
// sounds like an end first; when every tool is offered, the end-like one,
// which its rules may refuse.
func (f *Model) refusedTool(req *engine.LLMRequest) string {
	offered := func(name string) bool {
		return slices.ContainsFunc(req.Tools, func(t engine.ToolDecl) bool { return t.Name == name })
	}
	endish := func(name string) bool {
		n := strings.ToLower(name)
		return strings.Contains(n, "end") || strings.Contains(n, "close") || strings.Contains(n, "conclude") || strings.Contains(n, "finish")
	}
	var notOffered, ends []string
	for _, t := range f.pack.Tools {
		if !offered(t.Name) {
			notOffered = append(notOffered, t.Name)
		}
		if endish(t.Name) {
			ends = append(ends, t.Name)
		}
	}
	for _, n := range notOffered {
		if endish(n) {
			return n
		}
	}
	if len(notOffered) > 0 {
		return notOffered[0]
	}
	if len(ends) > 0 {
		return ends[0]
	}
	return f.pack.Tools[0].Name
}

// cut cuts s about half way, inside a word's run, with no closing
// punctuation.
func cut(s string) string {
	r := []rune(s)
	if len(r) < 2 {
		return s
	}
	out := strings.TrimRightFunc(string(r[:len(r)/2]), func(c rune) bool { return unicode.IsSpace(c) || c == '.' || c == '?' || c == '!' })
	if out == "" {
		return string(r[:1])
	}
	return out
}
