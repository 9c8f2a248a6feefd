package replay_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/sweep"
)

// Recorded sessions are a sweep's population: through their own pack the
// sweep counts exactly what the recordings did; through a pack with a
// longer silence timeout it counts fewer silence steps.
func TestRecordingsAsSweepPopulation(t *testing.T) {
	const dir = "../../scenarios/dayone"
	var recs []*replay.Recording
	var p *rules.Pack
	for range 3 {
		path, q, _ := record(t, dir)
		p = q
		recs = append(recs, openRecording(t, path, p))
	}
	silence := func(rep *sweep.Report) uint64 {
		var n uint64
		for _, c := range rep.Coverage {
			if c.Kind == rules.CoverSilence {
				n += c.Hits
			}
		}
		return n
	}
	var recorded uint64
	for _, rec := range recs {
		for i, it := range p.CoverItems() {
			if it.Kind == rules.CoverSilence {
				recorded += uint64(rec.Result.Coverage[i])
			}
		}
	}
	tests := []struct {
		name string
		pack *rules.Pack
		// fewer: fewer silence steps than recorded, else exactly as many
		fewer bool
	}{
		{"own pack", p, false},
		{"longer silence", loadPack(t, editedCopy(t, dir, "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 40s")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pop := replay.NewRecordings(tc.pack, "PACK", recs, replay.WhatIfOptions{})
			rep, err := sweep.Run(context.Background(), tc.pack, pop, sweep.Options{Parallel: 2})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sessions != 3 || rep.Failed != 0 || rep.Population != "3 recorded sessions" {
				t.Fatalf("%d sessions played, %d failed, population %q", rep.Sessions, rep.Failed, rep.Population)
			}
			got := silence(rep)
			if recorded == 0 || tc.fewer != (got < recorded) || (!tc.fewer && got != recorded) {
				t.Errorf("silence steps: %d in the sweep, %d recorded", got, recorded)
			}
		})
	}
}
