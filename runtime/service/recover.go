package service

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// RecoveryReport says what happened to each unfinished session found in
// the data directory.
type RecoveryReport struct {
	// Resumed sessions are live again.
	Resumed []string
	// Finished sessions had ended before the crash but were not yet
	// closed; they are closed now.
	Finished []string
	// Truncated maps a session to the torn tail cut off its log.
	Truncated map[string]string
	// Failed maps a session to why it could not be recovered (a damaged
	// log, changed pack or engine, nondeterministic replay). Its log is
	// left untouched for inspection; clients get session_failed.
	Failed map[string]string
	// Unborn sessions had a log that a crash cut short before it held a
	// whole header: the start was never acknowledged. The log is removed
	// and the id is free again.
	Unborn []string
	// Damaged maps a session whose log is damaged to the copy of it kept
	// under the data directory (it is also in Failed).
	Damaged  map[string]string
	Duration time.Duration
}

// Recover replays every unfinished session in the data directory and
// resumes it, then marks the server ready. Sessions recover in parallel;
// one bad log never stops the others.
//
// Time: a recovered session's clock is wall time since its recorded start
// (never earlier than its last logged input), so downtime counts. Timers
// that fell due while the server was down fire at once, each at its own
// deadline and in order, interleaved with simulated speech ends, exactly
// as if the server had been up and no client input had arrived.
func (srv *Server) Recover(ctx context.Context) (*RecoveryReport, error) {
	start := srv.clock.Now()
	rep := &RecoveryReport{Truncated: map[string]string{}, Failed: map[string]string{}, Damaged: map[string]string{}}
	if srv.cfg.Cluster != nil {
		// A node of a cluster runs only what it owns: sessions whose
		// owner is gone come through Orphans, this node's own among them.
		srv.runCluster()
		srv.ready.Store(true)
		rep.Duration = srv.clock.Now().Sub(start)
		return rep, nil
	}
	ids, err := srv.logs().Live()
	if err != nil {
		return rep, err
	}
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), max(1, len(ids))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				outcome, tail, err := srv.recoverOne(id)
				mu.Lock()
				if tail != "" {
					rep.Truncated[id] = tail
				}
				var dmg *damagedLog
				if errors.As(err, &dmg) {
					rep.Damaged[id] = dmg.evidence
				}
				switch {
				case err != nil:
					rep.Failed[id] = err.Error()
				case outcome == "unborn":
					rep.Unborn = append(rep.Unborn, id)
				case outcome == "finished":
					rep.Finished = append(rep.Finished, id)
				default:
					rep.Resumed = append(rep.Resumed, id)
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		select {
		case work <- id:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	sort.Strings(rep.Resumed)
	sort.Strings(rep.Finished)
	sort.Strings(rep.Unborn)
	rep.Duration = srv.clock.Now().Sub(start)
	srv.log.Info("recovery done", "resumed", len(rep.Resumed), "finished", len(rep.Finished),
		"failed", len(rep.Failed), "truncated", len(rep.Truncated), "took", rep.Duration)
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("recovery interrupted: %w", err)
	}
	srv.ready.Store(true)
	if srv.launchBackground() {
		go srv.scrub(srv.ctx)
	}
	return rep, nil
}

// recoverOne rebuilds one session from its log.
func (srv *Server) recoverOne(id string) (outcome, tail string, err error) {
	log := srv.log.With("session_id", id)
	defer func() {
		if r := recover(); r != nil {
			srv.m.panics.WithLabelValues("recovery").Inc()
			err = fmt.Errorf("panic during recovery: %v", r)
		}
		if err != nil {
			srv.markFailed(id, err.Error())
			var nd *nondeterminismError
			var dmg *damagedLog
			switch {
			case errors.As(err, &nd):
				srv.m.recoveries.WithLabelValues("nondeterministic").Inc()
			case errors.As(err, &dmg):
				srv.m.recoveries.WithLabelValues("damaged").Inc()
			default:
				srv.m.recoveries.WithLabelValues("failed").Inc()
			}
			log.Error("session could not be recovered", "err", err)
		}
	}()
	wl, rec, err := srv.logs().Open(id)
	if errors.Is(err, wal.ErrUnborn) {
		log.Warn("removed a log that was never completely created", "err", err)
		return "unborn", "", nil
	}
	if err != nil {
		return "", "", srv.checkDamage(id, err)
	}
	if rec.Tail != nil {
		tail = rec.Tail.Error()
		srv.m.walTruncations.Inc()
		log.Warn("log tail truncated", "tail", tail)
	}
	host, err := decodeHost(rec.Header.Host)
	if err != nil {
		wl.Close()
		return "", tail, err
	}
	p, err := srv.packs.open(rec.Header.PackRef)
	if err != nil {
		wl.Close()
		return "", tail, fmt.Errorf("pack %s: %w", srv.packs.show(rec.Header.PackRef), err)
	}
	s := newSession(srv, rec.Header, host, p)
	srv.watch(s)
	if err := s.load(wl, rec, true); err != nil {
		s.cancel()
		wl.Close()
		return "", tail, err
	}
	if s.ended {
		// It ended but the crash came before the log was closed: its
		// archive may not have been written either.
		s.archive()
		s.cancel()
		if rec.End == nil {
			err = wl.Finish(wal.End{Reason: s.endReason, T: s.eng.Now(), Wall: srv.clock.Now()})
		} else {
			err = wl.Finish(*rec.End)
		}
		srv.m.recoveries.WithLabelValues("finished").Inc()
		return "finished", tail, err
	}
	// Read before launch: from then on the actor owns the session.
	t, catchUp, effects := s.eng.Now(), s.engineNow(), s.seq
	if !srv.launch(s, nil) {
		s.cancel()
		wl.Close()
		return "", tail, errors.New("server shut down during recovery")
	}
	srv.m.recoveries.WithLabelValues("ok").Inc()
	log.Info("session recovered", "inputs", len(rec.Inputs), "t_ms", t, "catch_up_to_ms", catchUp, "effects", effects)
	return "resumed", tail, nil
}

// EvidenceDir is the folder under the data directory where copies of
// damaged logs are kept.
const EvidenceDir = wal.EvidenceDir

// damagedLog is a session whose log is damaged (wal.DamageError): it
// fails, its log stays as it was, and a copy is kept as evidence.
type damagedLog struct {
	err      error // as read, naming the file
	dmg      *wal.DamageError
	evidence string // the copy's path inside the data directory
}

func (e *damagedLog) Error() string {
	s := e.err.Error()
	if e.evidence != "" {
		s += "; a copy is kept as " + e.evidence
	}
	return s
}

func (e *damagedLog) Unwrap() error { return e.dmg }

// checkDamage turns a damaged log into a damagedLog, preserving a copy of
// it and logging where; other errors pass through.
func (srv *Server) checkDamage(id string, err error) error {
	var dmg *wal.DamageError
	if !errors.As(err, &dmg) {
		return err
	}
	evidence, perr := srv.logs().Preserve(id, err, srv.clock.Now())
	if perr != nil {
		srv.log.Error("could not keep a copy of a damaged log", "session_id", id, "err", perr)
	}
	srv.log.Error("session log is damaged; the session is failed and its log left untouched",
		"session_id", id, "offset", dmg.Offset, "record", dmg.Record, "after_input", dmg.Inputs,
		"next_valid", dmg.NextValid, "reason", dmg.Reason, "evidence", evidence)
	return &damagedLog{err: err, dmg: dmg, evidence: evidence}
}
