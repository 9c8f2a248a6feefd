package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
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
	var (
		recs  []*replay.Recording
		paths []string
		p     *rules.Pack
	)
	for range 3 {
		path, q, _ := recordSession(t, dir)
		p = q
		recs = append(recs, openRecording(t, path, p))
		paths = append(paths, path)
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
			// The logs opened as the sweep plays them sum the same.
			lazy := replay.OpenRecordings(tc.pack, "PACK", paths, func(*replay.Session) (*rules.Pack, error) { return p, nil }, replay.WhatIfOptions{})
			again, err := sweep.Run(context.Background(), tc.pack, lazy, sweep.Options{Parallel: 2})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := reportJSON(t, rep), reportJSON(t, again); a != b {
				t.Errorf("opened recordings:\n%s\nlogs opened by the sweep:\n%s", a, b)
			}
		})
	}
}

func reportJSON(t *testing.T, rep *sweep.Report) string {
	t.Helper()
	var b strings.Builder
	if err := sweep.WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// OpenRecordings holds the logs' paths, not their recordings: a log is
// replayed when its session is asked for and let go after, so a sweep
// over any number of logs holds only those it is playing. Its pack is
// opened once per version, and asking twice gives the same session.
func TestOpenRecordingsOnDemand(t *testing.T) {
	const dir = "../../scenarios/dayone"
	var (
		paths []string
		p     *rules.Pack
	)
	for range 2 {
		path, q, _ := recordSession(t, dir)
		paths, p = append(paths, path), q
	}
	var opens atomic.Int32
	open := func(*replay.Session) (*rules.Pack, error) {
		opens.Add(1)
		return p, nil
	}
	pop := replay.OpenRecordings(p, "PACK", paths, open, replay.WhatIfOptions{})
	if pop.Len() != 2 || opens.Load() != 0 {
		t.Fatalf("%d sessions, the pack opened %d times before any was asked for", pop.Len(), opens.Load())
	}
	first, err := pop.Session(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		i     int
		seed  uint64
		repro string
	}{
		{"the same again", 1, 1, "baton replay --pack PACK " + paths[1]},
		{"another log of the same pack", 0, 0, "baton replay --pack PACK " + paths[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pop.Session(tc.i)
			if err != nil {
				t.Fatal(err)
			}
			if s.Seed != tc.seed || s.Repro != tc.repro || len(s.Options.Events) == 0 {
				t.Errorf("session %d: seed %d, %q, %d events", tc.i, s.Seed, s.Repro, len(s.Options.Events))
			}
			if tc.i == 1 && (s.Options.Seed != first.Options.Seed || !reflect.DeepEqual(s.Options.Events, first.Options.Events)) {
				t.Error("asked twice, session 1 differs")
			}
		})
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the pack was opened %d times for two logs of one version", n)
	}
	// Nothing of a played log is kept: once the file is gone, its session
	// cannot be asked for again.
	if err := os.Remove(paths[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := pop.Session(0); err == nil || !strings.Contains(err.Error(), paths[0]) {
		t.Errorf("session 0 of a removed log: %v", err)
	}
	if _, err := pop.Session(2); err == nil {
		t.Error("session 2 of 2 played")
	}
}

// A pack that does not open fails the session with an error naming its
// log, and is tried again for the next: the failure is that log's.
func TestOpenRecordingsPackError(t *testing.T) {
	path, p, _ := recordSession(t, "../../scenarios/dayone")
	fail := true
	pop := replay.OpenRecordings(p, "PACK", []string{path}, func(*replay.Session) (*rules.Pack, error) {
		if fail {
			fail = false
			return nil, errors.New("no such pack")
		}
		return p, nil
	}, replay.WhatIfOptions{})
	for _, tc := range []struct {
		name string
		err  string
	}{
		{"the pack does not open", path + ": no such pack"},
		{"it opens the next time", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pop.Session(0)
			if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}
