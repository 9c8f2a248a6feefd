// Package sweep plays a population of sessions of one pack (by default N
// seeds of its candidate model) on the simulated clock and sums what
// they did: how often each thing the pack declares was exercised, the
// spread of turns, talk time, deferrals, nudges, lateness and endings,
// and the most extreme sessions with the command that plays each again.
//
// Sessions are summed as they finish, never kept, so memory does not grow
// with N; and every sum is a count or an integer total, so the report is
// the same bytes whatever the number of workers.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/record"
)

// A Session is one member of a population: the options that play it, and
// how the report names it.
type Session struct {
	Options dryrun.Options
	// Seed names the session and orders it: of two equally extreme
	// sessions the report shows the lower seed.
	Seed uint64
	// Repro is a command that plays the session again on its own.
	Repro string
	// Group is the session's value of the input a sweep varies: an index
	// into the values a Grouped population names.
	Group int
}

// Grouped is a population whose sessions take one input at several
// values: the report breaks its figures down by value.
type Grouped interface {
	Groups() (input string, values []string)
}

// Population is what a sweep plays: Len sessions, Session(i) being the
// i-th. Session is called from several goroutines at once, and must
// return the same session for the same i every time. Options.Lean and
// Options.OnRecord are the sweep's own and are overwritten.
type Population interface {
	Len() int
	Session(i int) (Session, error)
}

// Model is the population of a pack's candidate model: session i plays
// seed SessionSeed(Seed, i).
type Model struct {
	pack *rules.Pack
	ref  string
	seed uint64
	n    int
	m    *dryrun.CandidateModel
	// inputs every session supplies, args the words that supply them,
	// and vary the input that varies (Vary).
	inputs rules.Supplied
	args   []string
	vary   *Vary
}

// NewModel is n sessions of p's candidate model from seed; ref is how a
// command line names the pack (for the commands that reproduce them).
func NewModel(p *rules.Pack, ref string, seed uint64, n int) (*Model, error) {
	if p.DryRun.CandidateModel == nil {
		return nil, fmt.Errorf("pack %s has no dryrun.candidate_model to sweep (docs/sweep.md)", p.Name)
	}
	m, err := dryrun.NewCandidateModel(p)
	if err != nil {
		return nil, err
	}
	return &Model{pack: p, ref: ref, seed: seed, n: n, m: m}, nil
}

// Len is the number of sessions.
func (m *Model) Len() int { return m.n }

// Session is seed SessionSeed(seed, i) of the model: the options baton
// dryrun -seed plays for that seed.
func (m *Model) Session(i int) (Session, error) {
	s := SessionSeed(m.seed, i)
	sup, group, flags := m.sessionInputs(i)
	repro := ReproCommand(m.ref, s)
	if len(flags) > 0 {
		repro = ReproCommand(strings.Join(flags, " ")+" "+m.ref, s)
	}
	return Session{Options: dryrun.Options{Seed: s, Candidate: m.m, Inputs: sup}, Seed: s, Repro: repro, Group: group}, nil
}

// String describes the population for the report.
func (m *Model) String() string {
	desc := fmt.Sprintf("candidate model, %d sessions from seed %d", m.n, m.seed)
	if len(m.args) > 0 {
		desc += ", " + strings.Join(m.args, " ")
	}
	if m.vary != nil {
		desc += fmt.Sprintf(", %s in turn %s", m.vary.Input, strings.Join(m.vary.Values, ", "))
	}
	return desc
}

// ReproCommand is the command that plays seed of pack ref on its own.
func ReproCommand(ref string, seed uint64) string {
	return "baton dryrun -seed " + strconv.FormatUint(seed, 10) + " " + ref
}

// SessionSeed is session i's seed in a sweep from seed: splitmix64 of the
// two, so neighbouring sessions' seeds share nothing.
func SessionSeed(seed uint64, i int) uint64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Options configure a sweep.
type Options struct {
	// Parallel is how many sessions are played at once; 0 is GOMAXPROCS.
	Parallel int
	// Progress, if set, is told how many sessions are done after each
	// one, from whichever goroutine finished it.
	Progress func(done int)
}

// maxFailures bounds the failed sessions a report names.
const maxFailures = 10

// topK is how many sessions each extreme names.
const topK = 3

// Run plays every session of pop and sums them into a report.
func Run(ctx context.Context, p *rules.Pack, pop Population, opt Options) (*Report, error) {
	workers := opt.Parallel
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	n := pop.Len()
	if n <= 0 {
		return nil, ErrNoSessions
	}
	workers = max(1, min(workers, n))
	sh := newShape(p)
	groups := 1
	var varied string
	var values []string
	if g, ok := pop.(Grouped); ok {
		if varied, values = g.Groups(); len(values) > 0 {
			groups = len(values)
		}
	}
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		aggs       = make([][]*agg, workers) // per worker, per group
		errMu      sync.Mutex
		firstErr   error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := range workers {
		own := make([]*agg, groups)
		for g := range own {
			own[g] = sh.newAgg()
		}
		aggs[w] = own
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := play(ctx, own, p, pop, i); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					cancel()
					return
				}
				d := done.Add(1)
				if opt.Progress != nil {
					opt.Progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	// Each group's sums over the workers, then all of them: every sum is
	// a count or a total, so neither depends on who played what.
	total := sh.newAgg()
	byGroup := make([]*agg, groups)
	for g := range groups {
		byGroup[g] = aggs[0][g]
		for _, own := range aggs[1:] {
			byGroup[g].merge(own[g])
		}
		total.merge(byGroup[g])
	}
	rep := total.report(p)
	if s, ok := pop.(fmt.Stringer); ok {
		rep.Population = s.String()
	}
	if len(values) > 0 {
		rep.Varied = &Varied{Input: varied}
		for g, v := range values {
			rep.Varied.Values = append(rep.Varied.Values, byGroup[g].valueStat(p, v))
		}
	}
	return rep, nil
}

// play plays session i into its group's sums.
func play(ctx context.Context, own []*agg, p *rules.Pack, pop Population, i int) error {
	s, err := pop.Session(i)
	if err != nil {
		return fmt.Errorf("session %d: %w", i, err)
	}
	if s.Group < 0 || s.Group >= len(own) {
		return fmt.Errorf("session %d: group %d of %d", i, s.Group, len(own))
	}
	return own[s.Group].play(ctx, p, s, i)
}

// shape is what every worker needs to know of the pack, worked out once.
type shape struct {
	roles     []string       // agent roles, then the human
	roleIdx   map[string]int // role id -> index in roles
	scheduled map[string]bool
	items     []rules.CoverItem
	tickets   bool
}

func newShape(p *rules.Pack) *shape {
	sh := &shape{roleIdx: map[string]int{}, scheduled: map[string]bool{}, items: p.CoverItems(), tickets: p.Tickets != nil}
	for i := range p.Roles {
		sh.roleIdx[p.Roles[i].ID] = len(sh.roles)
		sh.roles = append(sh.roles, p.Roles[i].ID)
	}
	sh.roles = append(sh.roles, p.HumanName())
	for _, it := range sh.items {
		if it.Kind == rules.CoverAnchor || it.Kind == rules.CoverWindow {
			sh.scheduled[it.ID] = true
		}
	}
	return sh
}

// Metric names, in the order reports list them after the per-role ones.
const (
	mDeferrals  = "deferrals"
	mDeferCaps  = "defer caps"
	mNudges     = "nudges"
	mAutoAdv    = "auto-advances"
	mLateSched  = "lateness of scheduled turns"
	mLateAll    = "lateness of all agent lines"
	mLength     = "session length"
	mTickets    = "tickets left"
	mCandTalkMS = "candidate talk time"
)

// Extreme criteria, in report order.
var criteria = []struct {
	name   string
	lowest bool
}{
	{"most lateness (a scheduled turn)", false},
	{"most nudges", false},
	{"most deferrals", false},
	{"most defer caps", false},
	{"most auto-advances", false},
	{"shortest", true},
	{"longest", false},
	{"fewest items covered", true},
}

// agg is one worker's sums; merge adds another's.
type agg struct {
	sh       *shape
	sessions int64
	hits     []uint64 // per cover item: total hits
	sessHit  []int64  // per cover item: sessions that hit it
	hists    map[string]*Hist
	order    []string
	ends     map[string]int64
	picks    [][]Pick // per criterion, the topK
	spans    []span   // per criterion, the values' range
	failures []Failure
	failed   int64
	cur      session
}

// span is the range of a criterion's values over the sessions offered.
type span struct {
	lo, hi int64
	n      int64 // sessions offered
}

func (s *span) add(v int64) {
	if s.n == 0 {
		s.lo, s.hi = v, v
	}
	s.lo, s.hi, s.n = min(s.lo, v), max(s.hi, v), s.n+1
}

func (s *span) merge(o span) {
	if o.n == 0 {
		return
	}
	if s.n == 0 {
		*s = o
		return
	}
	s.lo, s.hi, s.n = min(s.lo, o.lo), max(s.hi, o.hi), s.n+o.n
}

// session is what one session did, summed as its records stream by.
type session struct {
	turns                        []int64
	talk                         []int64
	deferrals, caps, nudges, adv int64
	maxLate                      int64
	// late holds each agent line's lateness, negated for a scheduled
	// turn's, until the session is known to have finished.
	late []int64
}

func (sh *shape) newAgg() *agg {
	a := &agg{sh: sh, hits: make([]uint64, len(sh.items)), sessHit: make([]int64, len(sh.items)),
		hists: map[string]*Hist{}, ends: map[string]int64{}, picks: make([][]Pick, len(criteria)), spans: make([]span, len(criteria))}
	for _, r := range sh.roles {
		a.hist("turns: "+r, "", 1)
	}
	for _, r := range sh.roles {
		a.hist("talk share: "+r, "%", 1)
	}
	for _, m := range []string{mDeferrals, mDeferCaps, mNudges, mAutoAdv} {
		a.hist(m, "", 1)
	}
	a.hist(mLateSched, "ms", 100)
	a.hist(mLateAll, "ms", 100)
	a.hist(mLength, "ms", 1000)
	a.hist(mCandTalkMS, "ms", 1000)
	if sh.tickets {
		a.hist(mTickets, "", 1)
	}
	a.cur.turns = make([]int64, len(sh.roles))
	a.cur.talk = make([]int64, len(sh.roles))
	return a
}

func (a *agg) hist(name, unit string, step int64) *Hist {
	h := &Hist{Name: name, Unit: unit, Step: step, counts: map[int64]int64{}}
	a.hists[name] = h
	a.order = append(a.order, name)
	return h
}

func (a *agg) play(ctx context.Context, p *rules.Pack, s Session, i int) error {
	c := &a.cur
	clear(c.turns)
	clear(c.talk)
	c.deferrals, c.caps, c.nudges, c.adv, c.maxLate = 0, 0, 0, 0, -1
	c.late = c.late[:0]
	opt := s.Options
	opt.Lean = true
	opt.OnRecord = a.record
	res, err := dryrun.RunContext(ctx, p, opt)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.failed++
		a.keepFailure(Failure{Seed: s.Seed, Err: err.Error(), Command: s.Repro})
		return nil
	}
	a.sessions++
	covered := int64(0)
	for j, h := range res.Coverage {
		if h > 0 {
			a.sessHit[j]++
			a.hits[j] += uint64(h)
			covered++
		}
	}
	a.ends[res.EndReason()]++
	human := len(a.sh.roles) - 1
	c.turns[human] = int64(res.Candidate.Messages)
	c.talk[human] = res.Candidate.TalkMS
	for r, name := range a.sh.roles[:human] {
		c.talk[r] -= res.Candidate.CutMS[name] // speech the candidate talked over was never heard
	}
	var talkAll int64
	for _, t := range c.talk {
		talkAll += t
	}
	for r, name := range a.sh.roles {
		a.hists["turns: "+name].add(c.turns[r])
		if talkAll > 0 {
			a.hists["talk share: "+name].add(c.talk[r] * 100 / talkAll)
		}
	}
	for _, l := range c.late {
		if l < 0 {
			l = -1 - l
			a.hists[mLateSched].add(l)
		}
		a.hists[mLateAll].add(l)
	}
	a.hists[mDeferrals].add(c.deferrals)
	a.hists[mDeferCaps].add(c.caps)
	a.hists[mNudges].add(c.nudges)
	a.hists[mAutoAdv].add(c.adv)
	a.hists[mLength].add(res.EndMS)
	a.hists[mCandTalkMS].add(res.Candidate.TalkMS)
	if a.sh.tickets {
		a.hists[mTickets].add(int64(res.TicketsLeft))
	}
	values := []int64{c.maxLate, c.nudges, c.deferrals, c.caps, c.adv, res.EndMS, res.EndMS, covered}
	for k, v := range values {
		if k == 0 && v < 0 {
			continue // no scheduled turn was said
		}
		a.spans[k].add(v)
		a.offer(k, Pick{Seed: s.Seed, Value: v, Command: s.Repro, index: i})
	}
	return nil
}

// record sums one effect of the session being played.
func (a *agg) record(r *record.Record) error {
	c := &a.cur
	switch r.Type {
	case engine.EffectAgentMessage:
		if i, ok := a.sh.roleIdx[r.Agent]; ok {
			c.turns[i]++
			c.talk[i] += r.SpeechMS
		}
		if r.Rule == "silence" {
			c.nudges++
		}
		if r.Lateness != nil {
			l := max(r.LateMS, 0)
			if a.sh.scheduled[r.Rule] {
				c.maxLate = max(c.maxLate, l)
				l = -1 - l
			}
			c.late = append(c.late, l)
		}
	case engine.EffectDeferred:
		c.deferrals++
	case engine.EffectDeferCap:
		c.caps++
	case engine.EffectAutoAdvance:
		c.adv++
	}
	return nil
}

func cmpSeed(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// offer keeps pick if it is among criterion k's topK: the highest values
// (the lowest for a lowest criterion), ties to the lower seed.
func (a *agg) offer(k int, pick Pick) {
	lowest := criteria[k].lowest
	better := func(x, y Pick) int {
		if x.Value != y.Value {
			if (x.Value > y.Value) != lowest {
				return -1
			}
			return 1
		}
		return cmpSeed(x.Seed, y.Seed)
	}
	l := a.picks[k]
	if len(l) == topK && better(pick, l[topK-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(l, pick, better)
	l = slices.Insert(l, i, pick)
	a.picks[k] = l[:min(len(l), topK)]
}

func (a *agg) merge(b *agg) {
	a.sessions += b.sessions
	a.failed += b.failed
	for i := range a.hits {
		a.hits[i] += b.hits[i]
		a.sessHit[i] += b.sessHit[i]
	}
	for name, h := range b.hists {
		a.hists[name].merge(h)
	}
	for k, v := range b.ends {
		a.ends[k] += v
	}
	for k, l := range b.picks {
		a.spans[k].merge(b.spans[k])
		for _, p := range l {
			a.offer(k, p)
		}
	}
	for _, f := range b.failures {
		a.keepFailure(f)
	}
}

// keepFailure keeps f if it is among the maxFailures lowest seeds seen.
// The list stays in seed order as it is built, so which worker played
// which seed never shows in the report, and memory stays flat however
// many sessions fail.
func (a *agg) keepFailure(f Failure) {
	i, _ := slices.BinarySearchFunc(a.failures, f, func(x, y Failure) int { return cmpSeed(x.Seed, y.Seed) })
	if i >= maxFailures {
		return
	}
	a.failures = slices.Insert(a.failures, i, f)
	a.failures = a.failures[:min(len(a.failures), maxFailures)]
}

// ErrNoSessions is a population with nothing to play.
var ErrNoSessions = errors.New("no sessions to play")
