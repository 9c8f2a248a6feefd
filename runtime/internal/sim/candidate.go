package sim

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// Defaults of a candidate model's keys (docs/sweep.md lists them).
var (
	DefaultAnswerLatency = rules.Dist{Kind: rules.DistLognormal, Median: 2500, P90: 8000}
	DefaultAnswerWords   = rules.Dist{Kind: rules.DistLognormal, Median: 18, P90: 45, Min: 1, HasMin: true}
	DefaultPauseLength   = rules.Dist{Kind: rules.DistUniform, Min: 400, Max: 2000, HasMin: true, HasMax: true}
)

// Default chances and rates of a candidate model.
const (
	DefaultSilence       = 0.05
	DefaultTalkOver      = 0.03
	DefaultTyping        = 0.15
	DefaultLowConfidence = 0.05
	DefaultAddressed     = 0.1
	DefaultPause         = 0.15
	DefaultSpeakingWPM   = 150
	DefaultTypingWPM     = 40
)

// yes and no are what events point at: the engine only reads them.
var yes, no = true, false

// messageDelayMS is how long after speech ends its transcript arrives, as
// in the bundled candidates' files.
const messageDelayMS = 200

// CandidateModel is a pack's candidate_model made ready to play: resolved
// once, then shared read-only by every run (and every goroutine) that
// plays it.
type CandidateModel struct {
	pack                     *rules.Pack
	latency, words, pause    rules.Dist
	silence, talkOver        float64
	typing, lowConf, addr    float64
	pauseP                   float64
	speakWPM, typeWPM        float64
	threshold                float64
	answers                  [][]string // each answer's words
	events                   []modelEvent
	mentions                 map[string]string // role -> its first @mention
	mentionRole              map[string]bool   // every @mention
	addressField             bool              // an addressed route reads addressed_to
	typingKeepMS, durationMS int64
}

type modelEvent struct {
	typ   string
	perMS float64 // events a millisecond
	data  rules.EventData
}

// NewCandidateModel resolves p's candidate_model. fallback are the texts
// answers are made of when the model lists none (the candidate_message
// texts of dryrun.candidate). Problems come back as a rules.ErrorList at
// file:line:col.
func NewCandidateModel(p *rules.Pack, fallback []string) (*CandidateModel, error) {
	m := p.DryRun.CandidateModel
	if m == nil {
		return nil, errors.New("the pack has no dryrun.candidate_model")
	}
	prob := func(n rules.Number, def float64) float64 {
		if n.IsSet() {
			return n.Value
		}
		return def
	}
	dist := func(set bool, d func() rules.Dist, def rules.Dist) rules.Dist {
		if set {
			return d()
		}
		return def
	}
	c := &CandidateModel{
		pack:      p,
		latency:   dist(m.AnswerLatency.IsSet(), m.AnswerLatency.Resolved, DefaultAnswerLatency),
		words:     dist(m.AnswerWords.IsSet(), m.AnswerWords.Resolved, DefaultAnswerWords),
		pause:     dist(m.PauseLength.IsSet(), m.PauseLength.Resolved, DefaultPauseLength),
		silence:   prob(m.Silence, DefaultSilence),
		talkOver:  prob(m.TalkOver, DefaultTalkOver),
		typing:    prob(m.Typing, DefaultTyping),
		lowConf:   prob(m.LowConfidence, DefaultLowConfidence),
		addr:      prob(m.Addressed, DefaultAddressed),
		pauseP:    prob(m.Pause, DefaultPause),
		speakWPM:  prob(m.SpeakingWPM, DefaultSpeakingWPM),
		typeWPM:   prob(m.TypingWPM, DefaultTypingWPM),
		mentions:  map[string]string{},
		threshold: -1,
	}
	if t := p.SpeechConfidence.Threshold; t.IsSet() {
		c.threshold = t.Value
	} else if !m.LowConfidence.IsSet() {
		c.lowConf = 0 // nothing is low without a threshold
	}
	c.mentionRole = map[string]bool{}
	for i := range p.Routing {
		for _, e := range p.Routing[i].Mentions {
			c.mentionRole[e.Key] = true
		}
	}
	texts := m.Answers
	if len(texts) == 0 {
		texts = fallback
	}
	for _, t := range texts {
		// A mention in a text is the model's to add (addressed): kept, it
		// would address every answer made of that text.
		w := slices.DeleteFunc(strings.Fields(t), func(w string) bool {
			_, ok := c.mentionRole[w]
			return ok
		})
		if len(w) > 0 {
			c.answers = append(c.answers, w)
		}
	}
	if len(c.answers) == 0 {
		c.answers = [][]string{{"I", "would", "check", "that", "first."}}
	}
	for _, e := range m.Events {
		c.events = append(c.events, modelEvent{typ: e.Type, perMS: e.Rate.Value / 60000, data: e.Data})
	}
	for i := range p.Routing {
		r := &p.Routing[i]
		if r.Type != rules.RouteAddressed {
			continue
		}
		if r.Field == "" || r.Field == "addressed_to" {
			c.addressField = true
		}
		for _, e := range r.Mentions {
			if _, ok := c.mentions[e.Value]; !ok {
				c.mentions[e.Value] = e.Key
			}
		}
	}
	c.typingKeepMS = max(p.TurnTaking.TypingDebounce.MS/2, 500)
	if p.TurnTaking.TypingDebounce.MS == 0 {
		c.typingKeepMS = 1500
	}
	c.durationMS = p.Duration.MS
	return c, nil
}

// Candidate is one seeded run of a CandidateModel: it watches what the
// session says (Observe) and answers with candidate events at simulated
// times (Next, Pop). Same model, same seed, same effects: same events.
type Candidate struct {
	m          *CandidateModel
	durationMS int64 // the session's length: no event is made past it
	rng        *rand.Rand
	// pending events, in time order (seq breaks ties in arrival order).
	pending []timedEvent
	// room is the array pending is a window on: Pop moves the window's
	// start instead of the events, and add moves them back to the start
	// only when the window reaches the end.
	room []timedEvent
	seq  int
	// plan is the answer planned and not started yet; started the one
	// under way until busyUntil.
	plan      int
	started   bool
	busyUntil int64
	ended     bool
	counts    []int // per modelled event kind: how many so far
}

type timedEvent struct {
	t    int64
	seq  int
	plan int // 0: not part of an answer
	// starts marks an answer's first event: from it the answer is under way.
	starts bool
	ev     engine.CandidateEvent
}

// candidateStream keeps the candidate's draws apart from the scripts'
// Math.random, which the same seed seeds.
const candidateStream = 0x63616e6469646174 // "candidat"

// NewCandidate starts a run of m with seed.
func (m *CandidateModel) NewCandidate(seed uint64) *Candidate {
	return m.NewCandidateFor(seed, m.durationMS)
}

// NewCandidateFor starts a run of m with seed in a session that lasts
// durationMS: a session whose inputs set its length runs on a pack
// compiled for them, longer or shorter than the one m was built from.
func (m *CandidateModel) NewCandidateFor(seed uint64, durationMS int64) *Candidate {
	c := &Candidate{m: m, durationMS: durationMS, rng: rand.New(rand.NewPCG(seed, candidateStream)), counts: make([]int, len(m.events))}
	c.room = make([]timedEvent, 16)
	c.pending = c.room[:0]
	for i := range m.events {
		c.scheduleEvent(i, 0)
	}
	return c
}

func (c *Candidate) add(te timedEvent) {
	c.seq++
	te.seq = c.seq
	if len(c.pending) == cap(c.pending) {
		c.makeRoom()
	}
	i, _ := slices.BinarySearchFunc(c.pending, te, func(a, b timedEvent) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.seq, b.seq))
	})
	c.pending = slices.Insert(c.pending, i, te)
}

// makeRoom moves the pending events to the start of their array, or to
// a larger one when they fill it.
func (c *Candidate) makeRoom() {
	n := len(c.pending)
	if cap(c.pending) == cap(c.room) {
		c.room = make([]timedEvent, 2*cap(c.room))
	}
	copy(c.room, c.pending)
	clear(c.room[n:])
	c.pending = c.room[:n]
}

// scheduleEvent plans the next event of kind i after from: exponential
// gaps make a Poisson process. None is planned past the session's end.
func (c *Candidate) scheduleEvent(i int, from int64) {
	e := &c.m.events[i]
	gap := c.rng.ExpFloat64() / e.perMS
	t := from + int64(math.Ceil(gap))
	if math.IsInf(gap, 0) || gap > 1e12 || (c.durationMS > 0 && t >= c.durationMS) {
		return
	}
	c.counts[i]++
	n := strconv.Itoa(c.counts[i])
	fill := func(s string) string { return strings.ReplaceAll(s, "{n}", n) }
	ev := engine.CandidateEvent{Type: e.typ, Text: fill(e.data.Text), Source: fill(e.data.Source), Code: fill(e.data.Code),
		AddressedTo: fill(e.data.AddressedTo), RunID: fill(e.data.RunID), Line: e.data.Line}
	c.add(timedEvent{t: t, ev: ev, plan: -1 - i})
}

// Next is when the candidate's next event is due; ok is false when none
// is planned.
func (c *Candidate) Next() (t int64, ok bool) {
	if c.ended || len(c.pending) == 0 {
		return 0, false
	}
	return c.pending[0].t, true
}

// Pop takes the next event (Next says when).
func (c *Candidate) Pop() (int64, engine.CandidateEvent) {
	te := c.pending[0]
	// The window moves, not the events: shifting moved every pending
	// event, each with its strings, a write barrier apiece while the
	// collector runs (5% of a sweep's CPU).
	c.pending[0] = timedEvent{}
	c.pending = c.pending[1:]
	switch {
	case te.plan < 0:
		c.scheduleEvent(-1-te.plan, te.t)
	case te.starts && te.plan == c.plan:
		c.started = true
	}
	return te.t, te.ev
}

// Observe shows the candidate one effect of the session; speechMS is how
// long an agent message plays.
func (c *Candidate) Observe(e *engine.Effect, speechMS int64) {
	switch e.Type {
	case engine.EffectSessionEnd:
		c.ended = true
		clear(c.pending)
		c.pending = c.room[:0]
	case engine.EffectAgentMessage:
		if e.Kind == rules.KindCover {
			return // a filler before the reply: the question is still to come
		}
		if c.started && e.T < c.busyUntil {
			return // mid-answer: the candidate talks on
		}
		c.drop()
		c.answer(e, speechMS)
	}
}

// drop forgets the planned answer that has not started.
func (c *Candidate) drop() {
	if c.plan == 0 || c.started {
		c.plan, c.started = 0, false
		return
	}
	c.pending = slices.DeleteFunc(c.pending, func(te timedEvent) bool { return te.plan == c.plan })
	c.plan = 0
}

// answer plans the answer to agent message e. The draws are made in one
// fixed order whatever the answer turns out to be, so one chance changed
// in the model changes only what it decides.
func (c *Candidate) answer(e *engine.Effect, speechMS int64) {
	m, r := c.m, c.rng
	silent := r.Float64() < m.silence
	over := r.Float64() < m.talkOver
	typed := r.Float64() < m.typing
	low := r.Float64() < m.lowConf
	addressed := r.Float64() < m.addr
	paused := r.Float64() < m.pauseP
	latency := int64(sample(r, m.latency))
	words := max(1, int(math.Round(sample(r, m.words))))
	overAt := r.Float64()
	pauseAt := 0.2 + 0.6*r.Float64()
	pauseMS := int64(sample(r, m.pause))
	conf := r.Float64()
	mention := r.Float64() < 0.5
	text := c.compose(words)
	if silent {
		return
	}
	c.plan++
	c.started = false
	plan := c.plan
	start := e.T + speechMS + latency
	if over && !typed {
		start = e.T + int64(float64(speechMS)*(0.2+0.6*overAt))
	}
	ev := engine.CandidateEvent{Type: engine.EventMessage, Text: text}
	if addressed && e.Agent != "" {
		tag, hasTag := m.mentions[e.Agent]
		switch {
		case hasTag && (mention || !m.addressField):
			ev.Text = tag + " " + ev.Text
		default:
			ev.AddressedTo = e.Agent
		}
	}
	on, off := &yes, &no
	if typed {
		ev.Source = "text"
		took := int64(float64(words) * 60000 / m.typeWPM)
		end := start + took
		for t := start; t < end; t += m.typingKeepMS {
			c.add(timedEvent{t: t, plan: plan, starts: t == start, ev: engine.CandidateEvent{Type: engine.EventTypingState, Typing: on}})
		}
		c.add(timedEvent{t: end, plan: plan, starts: took == 0, ev: ev})
		c.busyUntil = end
		return
	}
	ev.Source = "voice"
	sc := 0.85 + 0.14*conf
	if low && m.threshold > 0 {
		sc = m.threshold * (0.4 + 0.55*conf)
	}
	sc = math.Round(sc*100) / 100
	ev.STTConfidence = &sc
	took := max(int64(float64(words)*60000/m.speakWPM), MinSpeechMS)
	c.add(timedEvent{t: start, plan: plan, starts: true, ev: engine.CandidateEvent{Type: engine.EventMicState, MicActive: on}})
	end := start + took
	if paused {
		at := start + int64(float64(took)*pauseAt)
		c.add(timedEvent{t: at, plan: plan, ev: engine.CandidateEvent{Type: engine.EventMicState, MicActive: off}})
		c.add(timedEvent{t: at + pauseMS, plan: plan, ev: engine.CandidateEvent{Type: engine.EventMicState, MicActive: on}})
		end += pauseMS
	}
	c.add(timedEvent{t: end, plan: plan, ev: engine.CandidateEvent{Type: engine.EventMicState, MicActive: off}})
	c.add(timedEvent{t: end, plan: plan, ev: engine.CandidateEvent{Type: engine.EventSpeechEnd}})
	c.add(timedEvent{t: end + messageDelayMS, plan: plan, ev: ev})
	c.busyUntil = end + messageDelayMS
}

// compose makes an answer of about n words from whole answers drawn at
// random, so the keywords in them stay whole; an answer shorter than the
// first drawn is its first n words.
func (c *Candidate) compose(n int) string {
	var b strings.Builder
	b.Grow(n * 8) // most answer words are shorter than seven letters
	got := 0
	for got < n {
		a := c.m.answers[c.rng.IntN(len(c.m.answers))]
		if got == 0 && len(a) > n {
			a = a[:n]
		}
		for _, w := range a {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		got += len(a)
	}
	return b.String()
}

// sample draws from d: never below 0, and within Min and Max when given.
func sample(r *rand.Rand, d rules.Dist) float64 {
	var v float64
	switch d.Kind {
	case rules.DistConstant:
		v = d.Value
	case rules.DistUniform:
		v = d.Min + r.Float64()*(d.Max-d.Min)
	case rules.DistNormal:
		v = d.Mean + d.SD*r.NormFloat64()
	case rules.DistLognormal:
		// The 90th percentile of a standard normal.
		const z90 = 1.2815515655446004
		sigma := math.Log(d.P90/d.Median) / z90
		v = math.Exp(math.Log(d.Median) + sigma*r.NormFloat64())
	}
	if d.HasMin && v < d.Min {
		v = d.Min
	}
	if d.HasMax && v > d.Max {
		v = d.Max
	}
	if !(v >= 0) || math.IsInf(v, 0) {
		return 0
	}
	return min(v, 1e12)
}
