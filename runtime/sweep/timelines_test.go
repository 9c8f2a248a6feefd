package sweep

import (
	"bytes"
	"context"
	"html"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/timeline"
)

// The report's page shows each extreme's first session as the timeline
// baton dryrun -seed draws for it alone, byte for byte, once per session
// however many extremes it tops.
func TestTimelinesAreTheSessionsOwn(t *testing.T) {
	p := openPack(t, "dayone")
	pop, err := NewModel(p, p.Name, 7, 40)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), p, pop, Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := Timelines(context.Background(), p, pop, rep); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, ex := range rep.Extremes {
		if len(ex.Sessions) == 0 {
			continue
		}
		first := ex.Sessions[0]
		for _, other := range ex.Sessions[1:] {
			if other.Timeline != "" {
				t.Errorf("%s: session %d is not first but has a timeline", ex.What, other.Seed)
			}
		}
		if seen[first.Seed] {
			continue
		}
		seen[first.Seed] = true
		res, err := dryrun.Run(p, dryrun.Options{Seed: first.Seed, Candidate: pop.m})
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := timeline.WriteHTML(&want, timeline.Run{Title: first.Command, Pack: p, Result: res}); err != nil {
			t.Fatal(err)
		}
		if first.Timeline != want.String() {
			t.Errorf("%s: the timeline of seed %d is not its dry run's", ex.What, first.Seed)
		}
		if !strings.Contains(page.String(), `srcdoc="`+html.EscapeString(want.String())[:200]) {
			t.Errorf("%s: the page does not embed seed %d's timeline", ex.What, first.Seed)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no extreme session")
	}
}
