package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

func openPack(t testing.TB, name string) *rules.Pack {
	t.Helper()
	p, err := (&packs.Resolver{Bundled: scenarios.FS}).Open(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sweepOf(t *testing.T, p *rules.Pack, seed uint64, n, parallel int) *Report {
	t.Helper()
	pop, err := NewModel(p, p.Name, seed, n)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), p, pop, Options{Parallel: parallel})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// rendered is the report in every form it is written.
func rendered(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, w := range []func(*bytes.Buffer, *Report) error{
		func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) },
		func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) },
		func(b *bytes.Buffer, r *Report) error { return WriteHTML(b, r) },
	} {
		if err := w(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// The report is the same bytes whatever the number of workers: sessions
// finish in any order, and every sum must not care.
func TestReportSameWhateverParallel(t *testing.T) {
	for _, tc := range []struct {
		pack string
		n    int
	}{
		{"dayone", 48},
		{"hotseat", 24},
	} {
		t.Run(tc.pack, func(t *testing.T) {
			p := openPack(t, tc.pack)
			one := rendered(t, sweepOf(t, p, 7, tc.n, 1))
			four := rendered(t, sweepOf(t, p, 7, tc.n, 4))
			if !bytes.Equal(one, four) {
				t.Fatalf("-parallel 1 and 4 differ:\n%s\n----\n%s", one, four)
			}
			other := rendered(t, sweepOf(t, p, 8, tc.n, 4))
			if bytes.Equal(one, other) {
				t.Fatal("seeds 7 and 8 made the same report: the seed plays no part")
			}
		})
	}
}

// failing is a population in which every third session fails: its step
// is coarser than any pack's tick.
type failing struct{ *Model }

func (f failing) Session(i int) (Session, error) {
	s, err := f.Model.Session(i)
	if i%3 == 0 {
		s.Options.StepMS = 1 << 40
	}
	return s, err
}

// Failed sessions are listed by seed, the lowest maxFailures of them,
// whichever worker played which: the list is the same at -parallel 1
// and 4, holds the lowest failing seeds, in order.
func TestFailuresSameWhateverParallel(t *testing.T) {
	p := openPack(t, "dayone")
	const n = 90
	m, err := NewModel(p, p.Name, 11, n)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for i := 0; i < n; i += 3 {
		want = append(want, SessionSeed(11, i))
	}
	slices.Sort(want)
	want = want[:maxFailures]
	var first []byte
	for _, parallel := range []int{1, 4} {
		rep, err := Run(context.Background(), p, failing{m}, Options{Parallel: parallel})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed != n/3 {
			t.Fatalf("-parallel %d: %d failed, want %d", parallel, rep.Failed, n/3)
		}
		var got []uint64
		for _, f := range rep.Failures {
			got = append(got, f.Seed)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("-parallel %d: failures listed for seeds %v, want the lowest failing ones %v", parallel, got, want)
		}
		if b := rendered(t, rep); first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("-parallel 1 and 4 differ:\n%s\n----\n%s", first, b)
		}
	}
}

// jsonl is a run's timeline in JSON lines.
func jsonl(t *testing.T, recs []record.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := record.WriteJSONL(&b, recs, record.FormatOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A session of a sweep, played alone from its seed as baton dryrun -seed
// plays it (a model built afresh, records kept), is the same timeline,
// byte for byte, as the sweep's lean run streamed.
func TestSessionReproducesFromItsSeed(t *testing.T) {
	for _, name := range []string{"dayone", "hotseat"} {
		t.Run(name, func(t *testing.T) {
			p := openPack(t, name)
			pop, err := NewModel(p, name, 3, 4)
			if err != nil {
				t.Fatal(err)
			}
			var prev []byte
			for i := range pop.Len() {
				s, err := pop.Session(i)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(s.Repro, " "+name) || !strings.Contains(s.Repro, "-seed ") {
					t.Fatalf("repro command %q", s.Repro)
				}
				var streamed []record.Record
				opt := s.Options
				opt.Lean = true
				opt.OnRecord = func(r *record.Record) error {
					streamed = append(streamed, *r)
					return nil
				}
				lean, err := dryrun.Run(p, opt)
				if err != nil {
					t.Fatal(err)
				}
				if len(lean.Records) != 0 || len(lean.Inputs) != 0 || len(lean.Steps) != 0 {
					t.Fatal("a lean run kept its records, inputs or steps")
				}
				model, err := dryrun.NewCandidateModel(p)
				if err != nil {
					t.Fatal(err)
				}
				alone, err := dryrun.Run(p, dryrun.Options{Seed: s.Seed, Candidate: model})
				if err != nil {
					t.Fatal(err)
				}
				got, want := jsonl(t, streamed), jsonl(t, alone.Records)
				if !bytes.Equal(got, want) {
					t.Fatalf("session %d (seed %d) differs played alone", i, s.Seed)
				}
				if lean.EndReason() != alone.EndReason() || !slices.Equal(lean.Coverage, alone.Coverage) || !reflect.DeepEqual(lean.Candidate, alone.Candidate) {
					t.Fatalf("session %d: lean and kept runs end, cover or count the candidate differently", i)
				}
				if alone.Candidate.Messages == 0 {
					t.Fatalf("session %d: the candidate model said nothing", i)
				}
				if bytes.Equal(got, prev) {
					t.Fatalf("sessions %d and %d are the same timeline", i-1, i)
				}
				prev = got
			}
		})
	}
}

// The report's coverage and endings are the sums of the sessions' own.
func TestReportSumsSessions(t *testing.T) {
	p := openPack(t, "dayone")
	const n = 6
	rep := sweepOf(t, p, 11, n, 2)
	pop, _ := NewModel(p, "dayone", 11, n)
	hits := make([]uint64, len(p.CoverItems()))
	sess := make([]int64, len(hits))
	ends := map[string]int64{}
	for i := range n {
		s, _ := pop.Session(i)
		res, err := dryrun.Run(p, s.Options)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range res.Coverage {
			hits[j] += uint64(h)
			if h > 0 {
				sess[j]++
			}
		}
		ends[res.EndReason()]++
	}
	if rep.Sessions != n || len(rep.Coverage) != len(hits) {
		t.Fatalf("%d sessions, %d coverage items; want %d, %d", rep.Sessions, len(rep.Coverage), n, len(hits))
	}
	never := 0
	for j, c := range rep.Coverage {
		if c.Hits != hits[j] || c.Sessions != sess[j] {
			t.Errorf("%s: %d hits in %d sessions, want %d in %d", c.Name, c.Hits, c.Sessions, hits[j], sess[j])
		}
		if sess[j] == 0 {
			never++
		}
	}
	if len(rep.Never) != never {
		t.Errorf("%d items never hit, want %d", len(rep.Never), never)
	}
	for _, e := range rep.EndReasons {
		if ends[e.Reason] != e.Sessions {
			t.Errorf("ended %s: %d, want %d", e.Reason, e.Sessions, ends[e.Reason])
		}
	}
	var doc map[string]any
	var b bytes.Buffer
	if err := WriteJSON(&b, rep); err != nil || json.Unmarshal(b.Bytes(), &doc) != nil {
		t.Fatalf("the JSON report does not read back: %v", err)
	}
}

// Extremes keep the highest values (the lowest for shortest and fewest),
// ties to the lower seed, however the sessions are offered.
func TestExtremesOrder(t *testing.T) {
	picks := []Pick{{Seed: 5, Value: 3}, {Seed: 2, Value: 3}, {Seed: 9, Value: 7}, {Seed: 1, Value: 1}, {Seed: 4, Value: 3}}
	for _, tc := range []struct {
		name string
		k    int // criterion
		want []uint64
	}{
		{"most", 1, []uint64{9, 2, 4}},
		{"shortest", 5, []uint64{1, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}} {
				a := newShape(openPack(t, "dayone")).newAgg()
				for _, i := range order {
					a.offer(tc.k, picks[i])
				}
				var got []uint64
				for _, p := range a.picks[tc.k] {
					got = append(got, p.Seed)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("order %v: %v, want %v", order, got, tc.want)
				}
			}
		})
	}
}

func TestHistQuantilesAndBuckets(t *testing.T) {
	h := &Hist{Step: 100, counts: map[int64]int64{}}
	for _, v := range []int64{0, 0, 100, 250, 900, 5000} {
		h.add(v)
	}
	if h.N != 6 || h.Min != 0 || h.Max != 5000 || h.Sum != 6250 {
		t.Fatalf("n %d min %d max %d sum %d", h.N, h.Min, h.Max, h.Sum)
	}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0, 0}, {0.5, 100}, {0.9, 900}, {1, 5000}} {
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("quantile %v: %d, want %d", tc.q, got, tc.want)
		}
	}
	var n int64
	bs := h.Buckets()
	for _, b := range bs {
		n += b.N
	}
	if n != h.N || len(bs) > maxBuckets || bs[0].Lo != 0 || bs[len(bs)-1].Hi <= 5000 {
		t.Fatalf("buckets %v", bs)
	}
}

func TestNoModelNoSweep(t *testing.T) {
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(`name: bare
duration: 1m
roles:
  qa: {name: Quinn, persona: You are Quinn., fallback: {default: "Go on."}}
routing:
  - {id: R, type: role, role: qa}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewModel(p, "bare", 0, 1); err == nil || !strings.Contains(err.Error(), "candidate_model") {
		t.Fatalf("a pack without a model: err %v", err)
	}
	if _, err := Run(context.Background(), p, &Model{}, Options{}); err != ErrNoSessions {
		t.Fatalf("no sessions: err %v", err)
	}
}

// An extreme no session stands out in names none: every DayOne session
// lasts its ten minutes, so neither the shortest nor the longest is one
// of them, and the report says they are alike instead.
func TestExtremesAlike(t *testing.T) {
	rep := sweepOf(t, openPack(t, "dayone"), 5, 12, 2)
	for _, e := range rep.Extremes {
		switch e.What {
		case "shortest", "longest":
			if e.Alike == nil || *e.Alike != 600000 || len(e.Sessions) != 0 {
				t.Errorf("%s: alike %v, sessions %v; want every session at 10:00 and none named", e.What, e.Alike, e.Sessions)
			}
		case "most deferrals":
			if e.Alike != nil || len(e.Sessions) == 0 {
				t.Errorf("%s: sessions differ in deferrals, yet none is named", e.What)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  shortest:\n    every session: 600.0s\n") {
		t.Errorf("the text does not say the sessions are alike:\n%s", b.String())
	}
}
