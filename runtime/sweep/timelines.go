package sweep

import (
	"bytes"
	"context"
	"fmt"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/timeline"
)

// Timelines plays again the first session of each extreme, whole this
// time, and keeps its timeline page in the pick, so the HTML report goes
// from a figure to the session behind it. Only those few are played: the
// sweep itself never holds a timeline.
func Timelines(ctx context.Context, p *rules.Pack, pop Population, r *Report) error {
	pages := map[int]string{}
	for i := range r.Extremes {
		ss := r.Extremes[i].Sessions
		if len(ss) == 0 {
			continue
		}
		pick := &ss[0]
		if page, ok := pages[pick.index]; ok {
			pick.Timeline = page
			continue
		}
		s, err := pop.Session(pick.index)
		if err != nil {
			return fmt.Errorf("session %d: %w", pick.index, err)
		}
		opt := s.Options
		opt.Lean, opt.OnRecord = false, nil
		res, err := dryrun.RunContext(ctx, p, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Repro, err)
		}
		var b bytes.Buffer
		if err := timeline.WriteHTML(&b, timeline.Run{Title: s.Repro, Pack: p, Result: res}); err != nil {
			return err
		}
		pick.Timeline = b.String()
		pages[pick.index] = pick.Timeline
	}
	return nil
}
