package rules

import (
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// CandidateModel is dryrun.candidate_model: a seeded, simulated candidate
// that answers the panel, so one pack can be played as many different
// sessions (baton sweep, baton dryrun -seed). Probabilities are numbers
// from 0 to 1, or a numeric constant's name; times and counts are
// distributions (DurationDist, NumberDist). A key left out takes the
// default the simulator documents (docs/sweep.md).
type CandidateModel struct {
	Pos
	// misread is set when decoding it reported a problem: the checks
	// that need the whole pack then stay quiet rather than add knock-on
	// errors about the same values.
	misread bool
	// AnswerLatency is how long after a question finishes speaking the
	// candidate starts to answer.
	AnswerLatency DurationDist `yaml:"answer_latency"`
	// AnswerWords is how many words an answer has.
	AnswerWords NumberDist `yaml:"answer_words"`
	// Silence is the chance that a question gets no answer at all.
	Silence Number `yaml:"silence"`
	// TalkOver is the chance that the candidate starts answering while
	// the agent is still speaking (a barge-in).
	TalkOver Number `yaml:"talk_over"`
	// Typing is the chance that an answer is typed rather than spoken.
	Typing Number `yaml:"typing"`
	// LowConfidence is the chance that a spoken answer is heard with a
	// speech confidence below the pack's speech_confidence.threshold.
	LowConfidence Number `yaml:"low_confidence"`
	// Addressed is the chance that an answer names the role that asked
	// (addressed_to, or the pack's @mention for it).
	Addressed Number `yaml:"addressed"`
	// Pause is the chance that a spoken answer stops for a while (mic off,
	// then on again) before it is finished; PauseLength is how long.
	Pause       Number       `yaml:"pause"`
	PauseLength DurationDist `yaml:"pause_length"`
	// SpeakingWPM and TypingWPM set how long an answer of so many words
	// takes to say or to type.
	SpeakingWPM Number `yaml:"speaking_wpm"`
	TypingWPM   Number `yaml:"typing_wpm"`
	// Answers are the texts answers are made of; left out, the
	// candidate_message texts of dryrun.candidate are, so the pack's
	// intent keywords still fire.
	Answers []string `yaml:"answers"`
	// Events are the pack's own event kinds, each arriving at random at
	// its rate.
	Events []ModelEvent `yaml:"events"`
}

// ModelEvent is one of a pack's own event kinds played by the candidate
// model: Rate events a minute on average (a Poisson process), each with
// Data, in which {n} is the event's number (1, 2, ...).
type ModelEvent struct {
	Pos
	Type string    `yaml:"type"`
	Rate Number    `yaml:"rate"`
	Data EventData `yaml:"data"`
}

// EventData is the data object of a modelled event, as the events file
// writes it; {n} in a text field is the event's number.
type EventData struct {
	Text        string `yaml:"text"`
	Source      string `yaml:"source"`
	Code        string `yaml:"code"`
	AddressedTo string `yaml:"addressed_to"`
	RunID       string `yaml:"run_id"`
	Line        int    `yaml:"line"`
}

// DistKind names a distribution.
type DistKind uint8

// Distributions. DistAuto, the zero value, is the one the keys given
// imply: value a constant, min and max uniform, mean and sd normal,
// median and p90 lognormal.
const (
	DistAuto DistKind = iota
	DistConstant
	DistUniform
	DistNormal
	DistLognormal
)

var distWords = []string{"", "constant", "uniform", "normal", "lognormal"}

func (k DistKind) String() string                       { return word(distWords, uint8(k)) }
func (DistKind) enumWords() []string                    { return distWords }
func (k *DistKind) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, k, distWords) }

// DurationDist is a distribution of times: a duration (or a duration
// constant) for a constant, or a mapping: {dist: uniform, min, max},
// {dist: normal, mean, sd} (clamped to min and max, and never below 0),
// {dist: lognormal, median, p90} (p90 at least the median; clamped to min
// and max when given). dist may be left out when the keys say which.
type DurationDist struct {
	Pos
	Dist   DistKind `yaml:"dist"`
	Value  Duration `yaml:"value"`
	Min    Duration `yaml:"min"`
	Max    Duration `yaml:"max"`
	Mean   Duration `yaml:"mean"`
	SD     Duration `yaml:"sd"`
	Median Duration `yaml:"median"`
	P90    Duration `yaml:"p90"`
	set    bool
}

// NumberDist is DurationDist for plain numbers (an answer's words).
type NumberDist struct {
	Pos
	Dist   DistKind `yaml:"dist"`
	Value  Number   `yaml:"value"`
	Min    Number   `yaml:"min"`
	Max    Number   `yaml:"max"`
	Mean   Number   `yaml:"mean"`
	SD     Number   `yaml:"sd"`
	Median Number   `yaml:"median"`
	P90    Number   `yaml:"p90"`
	set    bool
}

// IsSet reports whether the distribution was written in the pack.
func (x DurationDist) IsSet() bool { return x.set }

// IsSet reports whether the distribution was written in the pack.
func (x NumberDist) IsSet() bool { return x.set }

func (x *DurationDist) decodeNode(d *decoder, n *yaml.Node) {
	x.Pos, x.set = d.pos(n), true
	if n.Kind == yaml.ScalarNode {
		x.setShorthand(d, n)
		return
	}
	d.decodeStruct(n, refValue(x))
	x.check(func(p Pos, f string, a ...any) { d.errs.add(p, f, a...) }, true)
}

func (x *DurationDist) setShorthand(d *decoder, n *yaml.Node) {
	x.Pos, x.set = d.pos(n), true
	x.Value.decodeNode(d, n)
}

func (x *NumberDist) decodeNode(d *decoder, n *yaml.Node) {
	x.Pos, x.set = d.pos(n), true
	if n.Kind == yaml.ScalarNode {
		x.setShorthand(d, n)
		return
	}
	d.decodeStruct(n, refValue(x))
	x.check(func(p Pos, f string, a ...any) { d.errs.add(p, f, a...) }, true)
}

func (x *NumberDist) setShorthand(d *decoder, n *yaml.Node) {
	x.Pos, x.set = d.pos(n), true
	x.Value.decodeNode(d, n)
}

// param is one key of a distribution as the checks and the sampler see
// it, whatever its unit.
type param struct {
	key   string
	pos   Pos
	set   bool
	ref   bool // a constant's name, not known before compile
	value float64
	ms    bool // a time, in milliseconds
}

// String is the value as the pack writes it.
func (p param) String() string {
	if p.ms {
		return (time.Duration(p.value) * time.Millisecond).String()
	}
	return strconv.FormatFloat(p.value, 'g', -1, 64)
}

func durParam(key string, v Duration) param {
	return param{key: key, pos: v.Pos, set: v.IsSet() && !v.broken, ref: v.Ref != "", value: float64(v.MS), ms: true}
}

func numParam(key string, v Number) param {
	return param{key: key, pos: v.Pos, set: v.IsSet(), ref: v.Ref != "", value: v.Value}
}

// Dist is a distribution resolved to numbers (milliseconds for times),
// ready to sample.
type Dist struct {
	Kind                  DistKind
	Value, Min, Max       float64
	Mean, SD, Median, P90 float64
	// HasMin and HasMax say whether Min and Max bound the draws.
	HasMin, HasMax bool
}

func (x *DurationDist) params() []param {
	return []param{durParam("value", x.Value), durParam("min", x.Min), durParam("max", x.Max), durParam("mean", x.Mean),
		durParam("sd", x.SD), durParam("median", x.Median), durParam("p90", x.P90)}
}

func (x *NumberDist) params() []param {
	return []param{numParam("value", x.Value), numParam("min", x.Min), numParam("max", x.Max), numParam("mean", x.Mean),
		numParam("sd", x.SD), numParam("median", x.Median), numParam("p90", x.P90)}
}

func (x *DurationDist) check(add adder, literal bool) {
	checkDist(add, x.Pos, x.Dist, x.params(), literal)
}
func (x *NumberDist) check(add adder, literal bool) {
	checkDist(add, x.Pos, x.Dist, x.params(), literal)
}

// Resolved is the distribution with its constants' values: call it on a
// loaded pack's model.
func (x *DurationDist) Resolved() Dist { return resolveDist(x.Dist, x.params()) }

// Resolved is the distribution with its constants' values: call it on a
// loaded pack's model.
func (x *NumberDist) Resolved() Dist { return resolveDist(x.Dist, x.params()) }

type adder func(p Pos, format string, args ...any)

// distKeys are the keys each distribution takes; min and max bound any
// that is not a constant.
var distKeys = map[DistKind][]string{
	DistConstant:  {"value"},
	DistUniform:   {"min", "max"},
	DistNormal:    {"mean", "sd", "min", "max"},
	DistLognormal: {"median", "p90", "min", "max"},
}

// distNeeds are the keys each distribution cannot go without.
var distNeeds = map[DistKind][]string{
	DistConstant:  {"value"},
	DistUniform:   {"min", "max"},
	DistNormal:    {"mean", "sd"},
	DistLognormal: {"median", "p90"},
}

// impliedDist is the distribution the keys given name, when dist is not.
func impliedDist(ps []param) DistKind {
	has := map[string]bool{}
	for _, p := range ps {
		has[p.key] = p.set
	}
	switch {
	case has["value"]:
		return DistConstant
	case has["median"] || has["p90"]:
		return DistLognormal
	case has["mean"] || has["sd"]:
		return DistNormal
	case has["min"] || has["max"]:
		return DistUniform
	}
	return DistAuto
}

// checkDist reports every problem of one distribution. With literal (at
// decode), values that name constants are not known yet and are left for
// CandidateModel.Check.
func checkDist(add adder, at Pos, kind DistKind, ps []param, literal bool) {
	if kind == badEnum {
		return // reported where it is written
	}
	if kind == DistAuto {
		kind = impliedDist(ps)
		if kind == DistAuto {
			add(at, "a distribution needs value, min and max, mean and sd, or median and p90 (dist: %s)", listWords(distWords))
			return
		}
	}
	by := map[string]param{}
	for _, p := range ps {
		by[p.key] = p
		if p.set && !contains(distKeys[kind], p.key) {
			add(p.pos, "%s does not take %s (it takes %s)", kind, p.key, joinKeys(distKeys[kind]))
		}
	}
	for _, k := range distNeeds[kind] {
		if !by[k].set {
			add(at, "%s needs %s", kind, k)
		}
	}
	known := func(k string) (float64, bool) {
		p := by[k]
		if !p.set || (literal && p.ref) {
			return 0, false
		}
		return p.value, true
	}
	for _, k := range []string{"value", "min", "max", "mean", "sd", "median", "p90"} {
		if v, ok := known(k); ok && (v < 0 || math.IsNaN(v)) {
			add(by[k].pos, "%s %s is negative", k, by[k])
		}
	}
	if lo, ok := known("min"); ok {
		if hi, ok := known("max"); ok && lo > hi {
			add(by["max"].pos, "max %s is below min %s", by["max"], by["min"])
		}
	}
	if kind == DistLognormal {
		med, ok1 := known("median")
		p90, ok2 := known("p90")
		if ok1 && ok2 && p90 < med {
			add(by["p90"].pos, "p90 %s is below the median %s", by["p90"], by["median"])
		}
		if ok1 && med == 0 {
			add(by["median"].pos, "a lognormal's median must be above 0")
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinKeys(keys []string) string {
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}

func resolveDist(kind DistKind, ps []param) Dist {
	if kind == DistAuto {
		kind = impliedDist(ps)
	}
	d := Dist{Kind: kind}
	for _, p := range ps {
		if !p.set {
			continue
		}
		switch p.key {
		case "value":
			d.Value = p.value
		case "min":
			d.Min, d.HasMin = p.value, true
		case "max":
			d.Max, d.HasMax = p.value, true
		case "mean":
			d.Mean = p.value
		case "sd":
			d.SD = p.value
		case "median":
			d.Median = p.value
		case "p90":
			d.P90 = p.value
		}
	}
	return d
}

// probabilities are the model's chances, by key.
func (m *CandidateModel) probabilities() []param {
	return []param{numParam("silence", m.Silence), numParam("talk_over", m.TalkOver), numParam("typing", m.Typing),
		numParam("low_confidence", m.LowConfidence), numParam("addressed", m.Addressed), numParam("pause", m.Pause)}
}

func (m *CandidateModel) decodeNode(d *decoder, n *yaml.Node) {
	before := len(*d.errs)
	d.decodeStruct(n, refValue(m))
	m.check(nil, func(p Pos, f string, a ...any) { d.errs.add(p, f, a...) }, true)
	m.misread = len(*d.errs) > before
}

// check reports the model's own problems; the distributions report theirs
// as they are decoded, and again (constants resolved) from Check. p is
// nil at decode, when the rest of the pack is not known.
func (m *CandidateModel) check(p *Pack, add adder, literal bool) {
	for _, pr := range m.probabilities() {
		if !pr.set || (literal && pr.ref) {
			continue
		}
		if pr.value < 0 || pr.value > 1 || math.IsNaN(pr.value) {
			add(pr.pos, "%s %v is a probability: between 0 and 1", pr.key, pr.value)
		}
	}
	for _, r := range []param{numParam("speaking_wpm", m.SpeakingWPM), numParam("typing_wpm", m.TypingWPM)} {
		if r.set && !(literal && r.ref) && !(r.value > 0) {
			add(r.pos, "%s %v must be above 0", r.key, r.value)
		}
	}
	for i := range m.Events {
		e := &m.Events[i]
		if e.Type == "" {
			add(e.Pos, "candidate_model event %d needs a type", i+1)
		} else if err := CheckEventType(e.Type); err != nil {
			add(e.Pos, "%v", err)
		} else if p != nil && !IsBuiltinEvent(e.Type) && len(p.RulesOn(EventTrigger(e.Type))) == 0 {
			add(e.Pos, "event %s: no rule of the pack has trigger: %s, so the session would refuse it", e.Type, e.Type)
		}
		if !e.Rate.IsSet() {
			add(e.Pos, "event %s needs a rate (events a minute)", e.Type)
		} else if !(literal && e.Rate.Ref != "") && !(e.Rate.Value > 0) {
			add(e.Rate.Pos, "rate %v must be above 0 (events a minute)", e.Rate.Value)
		}
	}
	if p == nil {
		return
	}
	if m.LowConfidence.Value > 0 && !p.SpeechConfidence.Threshold.IsSet() {
		add(m.LowConfidence.Pos, "low_confidence needs speech_confidence.threshold: it is what low means")
	}
	for _, d := range []interface{ check(adder, bool) }{&m.AnswerLatency, &m.AnswerWords, &m.PauseLength} {
		switch x := d.(type) {
		case *DurationDist:
			if x.IsSet() {
				x.check(add, false)
			}
		case *NumberDist:
			if x.IsSet() {
				x.check(add, false)
			}
		}
	}
}

// checkWhole reports, when the pack compiles, what only the constants'
// values and the rest of the pack show: a probability given as a
// constant, the threshold low_confidence is below, rules for the model's
// own events. A model that cannot play is a pack error, so baton check
// finds it rather than the first sweep.
func (m *CandidateModel) checkWhole(c *compiler) {
	if m.misread {
		return
	}
	m.check(c.p, func(at Pos, f string, a ...any) {
		if at.File == "" {
			at = m.Pos
		}
		c.errorf(at, f, a...)
	}, false)
}
