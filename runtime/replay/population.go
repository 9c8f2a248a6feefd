package replay

import (
	"fmt"
	"sync"

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
	opt  WhatIfOptions
	// recs are recordings already open (NewRecordings); otherwise paths
	// are logs opened by Session, one at a time, so a sweep over many
	// logs holds only those its workers are playing.
	recs  []*Recording
	paths []string
	open  func(*Session) (*rules.Pack, error)

	mu    sync.Mutex
	packs map[packVersion]*openedPack
}

// packVersion is what a log says of its pack: the logs of one sweep
// mostly name a single version, opened once for all of them.
type packVersion struct{ name, ref, hash string }

type openedPack struct {
	mu sync.Mutex
	p  *rules.Pack
}

var _ sweep.Population = (*Recordings)(nil)

// NewRecordings is the population of recs played through p; ref is how a
// command line names p, for the command that plays one session again.
// opt.Model, if set, answers for every session at once, from several
// goroutines.
func NewRecordings(p *rules.Pack, ref string, recs []*Recording, opt WhatIfOptions) *Recordings {
	return &Recordings{pack: p, ref: ref, recs: recs, opt: opt}
}

// OpenRecordings is the population of the session logs at paths played
// through p, as NewRecordings of their recordings would be, but log i is
// opened (replayed with the pack open returns, as OpenRecording does) only
// when Session(i) is called, and is not kept: a sweep's memory is bounded
// by how many sessions it plays at once, not by how many logs there are.
// open is called once per pack version (name, reference, hash) the logs
// name, from whichever goroutine first needs it (again after a failure);
// a log that does not open fails its session, and with it the sweep, with
// an error naming the log.
func OpenRecordings(p *rules.Pack, ref string, paths []string, open func(*Session) (*rules.Pack, error), opt WhatIfOptions) *Recordings {
	return &Recordings{pack: p, ref: ref, paths: paths, open: open, opt: opt, packs: map[packVersion]*openedPack{}}
}

// Len is the number of recordings.
func (r *Recordings) Len() int {
	if r.recs != nil {
		return len(r.recs)
	}
	return len(r.paths)
}

// Session is recording i's what-if. Its Seed is i, the recording's place
// in the population (the engine's seed is the recording's own); each call
// gets a model of its own, since a recorded answer is used once.
func (r *Recordings) Session(i int) (sweep.Session, error) {
	if i < 0 || i >= r.Len() {
		return sweep.Session{}, fmt.Errorf("recorded session %d of %d", i, r.Len())
	}
	rec, err := r.recording(i)
	if err != nil {
		return sweep.Session{}, err
	}
	do, _, _ := rec.options(r.pack, r.opt)
	return sweep.Session{Options: do, Seed: uint64(i), Repro: "baton replay --pack " + r.ref + " " + rec.Path}, nil
}

// recording is recording i: the one given, or log i replayed afresh.
func (r *Recordings) recording(i int) (*Recording, error) {
	if r.recs != nil {
		return r.recs[i], nil
	}
	path := r.paths[i]
	return OpenRecording(path, func(s *Session) (*rules.Pack, error) {
		p, err := r.openPack(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return p, nil
	})
}

// openPack is open's pack for s, opened once per pack version: every log
// would otherwise load and compile its own copy of the same pack. A
// failure is not kept, so each log's error is about its own session.
func (r *Recordings) openPack(s *Session) (*rules.Pack, error) {
	v := packVersion{s.Pack, s.PackRef, s.PackHash}
	r.mu.Lock()
	o := r.packs[v]
	if o == nil {
		o = &openedPack{}
		r.packs[v] = o
	}
	r.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p == nil {
		p, err := r.open(s)
		if err != nil {
			return nil, err
		}
		o.p = p
	}
	return o.p, nil
}

// String describes the population for the report.
func (r *Recordings) String() string {
	return fmt.Sprintf("%d recorded sessions", r.Len())
}
