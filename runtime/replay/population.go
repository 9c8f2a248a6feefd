package replay

import (
	"fmt"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/sweep"
)

// Recordings are recorded sessions as a sweep's population: session i
// plays recording i through the sweep's pack as a what-if does (its
// candidate events at their times, its model answers where the requests
// are the same), so a sweep sums real sessions under a changed pack.
type Recordings struct {
	pack *rules.Pack
	ref  string
	recs []*Recording
	opt  WhatIfOptions
}

var _ sweep.Population = (*Recordings)(nil)

// NewRecordings is the population of recs played through p; ref is how a
// command line names p, for the command that plays one session again.
// opt.Model, if set, answers for every session at once, from several
// goroutines.
func NewRecordings(p *rules.Pack, ref string, recs []*Recording, opt WhatIfOptions) *Recordings {
	return &Recordings{pack: p, ref: ref, recs: recs, opt: opt}
}

// Len is the number of recordings.
func (r *Recordings) Len() int { return len(r.recs) }

// Session is recording i's what-if. Its Seed is i, the recording's place
// in the population (the engine's seed is the recording's own); each call
// gets a model of its own, since a recorded answer is used once.
func (r *Recordings) Session(i int) (sweep.Session, error) {
	if i < 0 || i >= len(r.recs) {
		return sweep.Session{}, fmt.Errorf("recorded session %d of %d", i, len(r.recs))
	}
	rec := r.recs[i]
	do, _, _ := rec.options(r.pack, r.opt)
	return sweep.Session{Options: do, Seed: uint64(i), Repro: "baton replay --pack " + r.ref + " " + rec.Path}, nil
}

// String describes the population for the report.
func (r *Recordings) String() string {
	return fmt.Sprintf("%d recorded sessions", len(r.recs))
}
