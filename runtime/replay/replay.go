// Package replay re-runs a recorded session offline and checks it: a
// server's session log, or a dry run saved with SaveDryRun. The engine is
// deterministic, so folding a log's inputs through a new session must
// reproduce every effect the log recorded; a difference means
// nondeterminism, or a changed engine or pack.
package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/record"
)

// Session is what a log says about the session it recorded.
type Session struct {
	ID          string
	CandidateID string
	// Pack is the pack's name, PackRef how the session named it (a
	// bundled name or a folder), PackHash its content hash.
	Pack     string
	PackRef  string
	PackHash string
	Engine   string
	Seed     uint64
	Start    time.Time
	// Inputs is how many inputs the log holds.
	Inputs int
	// Ended says the log records the session's end: EndReason at EndT.
	Ended     bool
	EndReason string
	EndT      int64
	// Tail describes a torn or corrupt tail that was left out, if any.
	Tail string
}

// Result is a finished replay.
type Result struct {
	Session Session
	// Timeline is every replayed effect, with the simulated speech time
	// of each agent message, as a dry run reports it.
	Timeline []record.Record
	Effects  int
	// Verified and Unverified count the inputs whose step record was
	// compared, or was lost (a torn tail).
	Verified, Unverified int
	// Diffs describes each input whose replayed effects (or engine error)
	// differ from those recorded.
	Diffs []string
	// Ended and T are where the replay left the session.
	Ended bool
	T     int64
	// Files are the replayed session's context files as it stands.
	Files []engine.ContextFileState
}

// OK reports whether the replay reproduced the log: no step differs, and
// a session the log says ended ended.
func (r *Result) OK() bool { return len(r.Diffs) == 0 && (!r.Session.Ended || r.Ended) }

// ErrPackChanged marks a log written with other pack contents than the
// pack open returned.
var ErrPackChanged = wal.ErrPackChanged

// File replays the log at path (ID.wal or ID.done) with the pack that open
// returns for the log's pack reference. A log written by another engine
// version or with other pack contents is refused, not replayed.
func File(path string, open func(ref string) (*rules.Pack, error)) (*Result, error) {
	rec, err := wal.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := open(rec.Header.PackRef)
	if err != nil {
		return nil, err
	}
	if err := wal.CheckHeader(&rec.Header, p); err != nil {
		return nil, err
	}
	out := &Result{Session: sessionOf(rec)}
	voice := sim.NewVoice(p)
	res, err := wal.Replay(p, rec, func(_ uint64, _ *engine.Input, effects []engine.Effect, _ error) {
		for _, e := range effects {
			r := record.Record{Effect: e}
			if e.Type == engine.EffectAgentMessage {
				r.SpeechMS = voice.Duration(e.Agent, e.Text)
			}
			out.Timeline = append(out.Timeline, r)
		}
	})
	if err != nil {
		return nil, err
	}
	out.Effects, out.Unverified = res.Effects, res.Unverified
	out.Verified = len(rec.Inputs) - res.Unverified
	for i := range res.Mismatches {
		out.Diffs = append(out.Diffs, res.Mismatches[i].String())
	}
	out.Ended, out.T = res.Session.Ended(), res.Session.Now()
	out.Files = res.Session.ContextFiles()
	return out, nil
}

// sessionOf is what rec's header and end say about its session.
func sessionOf(rec *wal.Recovered) Session {
	h := &rec.Header
	s := Session{ID: h.SessionID, CandidateID: h.CandidateID, Pack: h.Pack, PackRef: h.PackRef,
		PackHash: h.PackHash, Engine: h.Engine, Seed: h.Options.Seed, Start: h.StartWall, Inputs: len(rec.Inputs)}
	if rec.End != nil {
		s.Ended, s.EndReason, s.EndT = true, rec.End.Reason, rec.End.T
	}
	if rec.Tail != nil {
		s.Tail = rec.Tail.Error()
	}
	return s
}

// ReadSession reads what the log at path says about its session, without
// replaying it: which pack and engine wrote it, so a caller can choose how
// to replay it.
func ReadSession(path string) (*Session, error) {
	rec, err := wal.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := sessionOf(rec)
	return &s, nil
}

// SaveDryRun writes a finished dry run of p as a session log in dir, in the
// server's format, and returns its path: File replays it offline, so a run
// against a real model can be checked later without the model. packRef is
// how the run named its pack, so the replay finds it again.
func SaveDryRun(dir, packRef string, p *rules.Pack, seed uint64, start time.Time, res *record.Result) (string, error) {
	if len(res.Steps) != len(res.Inputs) {
		return "", errors.New("replay: a dry run result without a step per input")
	}
	d, err := wal.OpenDir(dir, wal.Options{NoSync: true})
	if err != nil {
		return "", err
	}
	defer d.Close()
	id := fmt.Sprintf("dryrun-%s-%d", p.Name, start.UnixNano())
	l, err := d.Create(wal.Header{Engine: engine.Version, Pack: p.Name, PackRef: packRef, PackHash: p.Hash,
		Options: engine.Options{Seed: seed, Inputs: res.Supplied}, SessionID: id, CandidateID: "dryrun", StartWall: start})
	if err != nil {
		return "", err
	}
	for i, in := range res.Inputs {
		seq, err := l.Append(in, false)
		if err != nil {
			l.Close()
			return "", err
		}
		if err := l.AppendStep(seq, wal.Digest(res.Steps[i].Effects, res.Steps[i].Err)); err != nil {
			l.Close()
			return "", err
		}
	}
	if err := l.Finish(wal.End{Reason: res.EndReason(), T: res.EndMS, Wall: time.Now()}); err != nil {
		return "", err
	}
	return d.DonePath(id), nil
}
