package dryrun

import (
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
)

// CandidateModelFor is p's candidate model, or, for a pack that declares
// none, the built-in candidate: `candidate_model: {}`, every key at its
// default (docs/sweep.md), answering with the candidate_message texts of
// the pack's dryrun.candidate file. A host that drives live sessions
// (a load generator) then plays any pack the way baton dryrun -seed
// plays one that has a model.
func CandidateModelFor(p *rules.Pack) (*CandidateModel, error) {
	if p.DryRun.CandidateModel != nil {
		return NewCandidateModel(p)
	}
	// A shallow copy: the model only reads the pack, and p itself must
	// not gain a model its loader never saw.
	q := *p
	q.DryRun.CandidateModel = &rules.CandidateModel{}
	return NewCandidateModel(&q)
}

// Candidate is one seeded run of a CandidateModel, for a host that plays
// it against a session it does not step itself: the host shows it every
// effect the session produces (Observe) and sends its events when they
// fall due (Next, Pop). Times are milliseconds of session time. A
// Candidate is not safe for concurrent use; the model it came from is.
type Candidate struct{ c *sim.Candidate }

// NewCandidate starts a run of m with seed: the candidate baton dryrun
// -seed plays with the same seed.
func (m *CandidateModel) NewCandidate(seed uint64) *Candidate {
	return &Candidate{c: m.m.NewCandidate(seed)}
}

// Next is when the candidate's next event is due; ok is false when none
// is planned (it waits for the session to say something, or the session
// ended).
func (c *Candidate) Next() (tMS int64, ok bool) { return c.c.Next() }

// Pop takes the next event, which Next said is due at tMS. Call it only
// when Next reports one.
func (c *Candidate) Pop() (tMS int64, ev engine.CandidateEvent) { return c.c.Pop() }

// Observe shows the candidate one effect of the session, in the order
// the session produced them; speechMS is how long an agent message plays
// (a WebSocket effect's speech_ms). An agent message makes it plan an
// answer; session_end makes it stop.
func (c *Candidate) Observe(e *engine.Effect, speechMS int64) { c.c.Observe(e, speechMS) }
