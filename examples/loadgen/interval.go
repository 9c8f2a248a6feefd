package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// interval is what one -every line reports: the answers that arrived
// within it, so a tail can be placed in time (a checkpoint, a collector
// cycle, a slow fsync) instead of only counted over the whole run.
type interval struct {
	acks, effects []time.Duration
}

// take returns the answers recorded since the last take and forgets
// them for the next one; the run's totals are not touched.
func (s *stats) take() interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	iv := interval{acks: slices.Clone(s.ackLat[s.takenAcks:]), effects: slices.Clone(s.effectLat[s.takenEffects:])}
	s.takenAcks, s.takenEffects = len(s.ackLat), len(s.effectLat)
	return iv
}

// report writes one line per -every until ctx is done: seconds since
// from, live sessions, answers in the interval and their percentiles.
func (r *runner) report(ctx context.Context, every time.Duration, from time.Time, w io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	r.st.take()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			iv := r.st.take()
			slices.Sort(iv.acks)
			slices.Sort(iv.effects)
			fmt.Fprintf(w, "# %6.1fs live %5d  acks %6d p50 %8.3fms p99 %8.3fms max %8.3fms  effects %5d p99 %8.3fms\n",
				now.Sub(from).Seconds(), r.live.now(), len(iv.acks),
				ms(pct(iv.acks, 0.5)), ms(pct(iv.acks, 0.99)), ms(pct(iv.acks, 1)),
				len(iv.effects), ms(pct(iv.effects, 0.99)))
		}
	}
}
