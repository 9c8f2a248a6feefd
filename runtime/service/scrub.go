package service

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// DefaultScrubInterval is how often finished logs are read back when
// Config.ScrubInterval is zero.
const DefaultScrubInterval = 24 * time.Hour

// scrub reads every finished log back, at start and then every
// Config.ScrubInterval: a finished log is read only when a client
// resumes it, so without this a damaged one would go unnoticed until
// someone needs it, and its evidence with it. A damaged log is failed
// as on a resume: a copy is kept, the damage logged and counted.
func (srv *Server) scrub(ctx context.Context) {
	defer srv.bg.Done()
	every := srv.cfg.ScrubInterval
	if every == 0 {
		every = DefaultScrubInterval
	}
	for {
		srv.scrubOnce(ctx)
		if every < 0 {
			return
		}
		if clock.Sleep(ctx, srv.clock, every) != nil {
			return
		}
	}
}

// scrubOnce reads each finished log once, one at a time: a background
// pass that must not crowd out the sessions.
func (srv *Server) scrubOnce(ctx context.Context) {
	ids, err := srv.dir.Finished()
	if err != nil {
		srv.log.Warn("scrub: listing finished logs", "err", err)
		return
	}
	damaged := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		_, err := srv.dir.Read(id)
		var dmg *wal.DamageError
		switch {
		case errors.As(err, &dmg):
			damaged++
			_ = srv.checkDamage(id, err)
			srv.m.scrubbed.WithLabelValues("damaged").Inc()
		case err == nil:
			srv.m.scrubbed.WithLabelValues("ok").Inc()
		case !errors.Is(err, wal.ErrNotFound):
			srv.log.Warn("scrub: reading a finished log", "session_id", id, "err", err)
		}
	}
	srv.log.Info("scrub done", "finished_logs", len(ids), "damaged", damaged)
}
