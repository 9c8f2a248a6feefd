package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// collect reads n distinct ids from ch; the bound only catches a hang.
func collect(t *testing.T, ch <-chan string, n int, bound time.Duration) []string {
	t.Helper()
	seen := map[string]bool{}
	deadline := time.After(bound)
	for len(seen) < n {
		select {
		case id, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d", len(seen), n)
			}
			seen[id] = true
		case <-deadline:
			t.Fatalf("only %d of %d ids within %s: %v", len(seen), n, bound, seen)
		}
	}
	out := make([]string, 0, n)
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestZombieIsFenced: node A owns sessions and freezes (its lease expires
// but it neither learns so nor stops writing, as a paused process just
// resumed); node B takes them over. Every write A then tries is refused by
// JetStream itself, with ErrFenced, the log stays dead, and nothing A
// wrote after the takeover is in the log. Once A carries on, it reports
// every session as lost and registers again.
func TestZombieIsFenced(t *testing.T) {
	end := wal.End{Reason: "done", T: 9000, Wall: time.Now()}
	tests := []struct {
		name string
		act  func(l wal.SessionLog) error
	}{
		{"synced append", func(l wal.SessionLog) error { _, err := l.Append(*in(2), true); return err }},
		{"unsynced append", func(l wal.SessionLog) error { _, err := l.Append(*in(2), false); return err }},
		{"flush of a held step", func(l wal.SessionLog) error {
			if err := l.AppendStep(1, stepFor(1)); err != nil {
				return err
			}
			return l.Flush()
		}},
		{"close with a held step", func(l wal.SessionLog) error {
			if err := l.AppendStep(1, stepFor(1)); err != nil {
				return err
			}
			return l.Close()
		}},
		{"finish", func(l wal.SessionLog) error { return l.Finish(end) }},
	}
	cfg := soloConfig(t)
	a, clkA := fakeNode(t, cfg, "a")
	b, _ := fakeNode(t, cfg, "b")
	logs := map[string]wal.SessionLog{}
	var ids []string
	for i, tt := range tests {
		id := fmt.Sprintf("z%d", i)
		l, err := a.Store().Create(testHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(*in(0), true); err != nil {
			t.Fatal(err)
		}
		logs[tt.name] = l
		ids = append(ids, id)
	}
	waitFor(t, 10*time.Second, "owner view on b", func() bool {
		for _, id := range ids {
			if n, _, ok := b.Owner(id); !ok || n != "a" {
				return false
			}
		}
		return true
	})
	a.freeze()
	expire(t, a)
	// b is the only other node, so it ranks first for every orphan.
	got := collect(t, b.Orphans(), len(ids), 10*time.Second)
	if !slices.Equal(got, ids) {
		t.Fatalf("orphans %v, want %v", got, ids)
	}
	for _, id := range ids {
		l, rec, err := b.Store().Open(id)
		if err != nil {
			t.Fatalf("takeover of %s: %v", id, err)
		}
		if len(rec.Inputs) != 1 {
			t.Fatalf("%s: took over %d inputs, want 1", id, len(rec.Inputs))
		}
		defer l.Close()
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := logs[tt.name]
			if err := tt.act(l); !errors.Is(err, wal.ErrFenced) {
				t.Fatalf("zombie write: %v, want ErrFenced", err)
			}
			if _, err := l.Append(*in(3), true); err == nil {
				t.Fatal("a fenced log took another input")
			}
			rec, err := b.Store().Read(ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Inputs) != 1 || rec.Steps[0] != nil || rec.End != nil {
				t.Fatalf("the log holds what the zombie wrote: %d inputs, step %v, end %v", len(rec.Inputs), rec.Steps[0], rec.End)
			}
			if n, _, ok := b.Owner(ids[i]); !ok || n != "b" {
				t.Fatalf("owner %q %v, want b", n, ok)
			}
		})
	}
	a.mu.Lock()
	oldInc := a.inc
	a.mu.Unlock()
	a.thaw()
	lost := collect(t, a.Lost(), len(ids), 10*time.Second)
	if !slices.Equal(lost, ids) {
		t.Fatalf("lost %v, want %v", lost, ids)
	}
	advance(t, clkA, fakeTTL/3) // its next heartbeat registers again
	if inc, _ := incarnation(a); inc == "" || inc == oldInc {
		t.Fatalf("incarnation %q after the next heartbeat, want a new one (was %q)", inc, oldInc)
	}
}

// TestOrphanTakenOnce: when a node's lease expires on the server, the
// other nodes see it expire (not merely stop being renewed) and report
// its sessions as orphans, and of two nodes racing to acquire one,
// exactly one wins.
func TestOrphanTakenOnce(t *testing.T) {
	cfg := soloConfig(t)
	// The lease expires on the server's clock; the survivors keep
	// theirs through any stall of a busy machine shorter than this.
	cfg.LeaseTTL = 5 * time.Second
	a, b, c := node(t, cfg, "a"), node(t, cfg, "b"), node(t, cfg, "c")
	var ids []string
	for i := range 12 {
		id := fmt.Sprintf("o%02d", i)
		if _, err := a.Store().Create(testHeader(id)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, n := range []*Cluster{b, c} {
		waitFor(t, 10*time.Second, "owner view", func() bool {
			return len(n.live()) == len(ids)
		})
	}
	a.mu.Lock()
	dead := owner{"a", a.inc}.key()
	a.mu.Unlock()
	a.freeze()
	first := make(chan struct{})
	go func() {
		select {
		case <-b.Orphans():
		case <-c.Orphans():
		}
		close(first)
	}()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no orphan reported")
	}
	// Both views saw the lease expire (its marker), which only the
	// server's expiry tells, before they race, so each loser is told who
	// won rather than that a still owns it.
	for _, n := range []*Cluster{b, c} {
		waitFor(t, 30*time.Second, "a's expiry in the view", func() bool {
			n.mu.Lock()
			_, gone := n.gone[dead]
			n.mu.Unlock()
			_, _, ok := n.Owner(ids[0])
			return gone && !ok
		})
	}
	for _, id := range ids {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []*Cluster{b, c} {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				errs[i] = n.Acquire(ctx, id)
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrOwned):
				t.Fatalf("%s: %v", id, err)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d nodes acquired it (%v)", id, won, errs)
		}
		winner := []string{"b", "c"}[slices.IndexFunc(errs, func(e error) bool { return e == nil })]
		var owned *OwnedError
		for _, err := range errs {
			if errors.As(err, &owned) && (owned.Node != winner || owned.Advertise != "ws://"+winner+".test/ws") {
				t.Fatalf("%s: loser told %+v, want %s", id, owned, winner)
			}
		}
	}
}

// TestCloseHandsOver: a node that closes deletes its lease, so its
// sessions are orphans at once rather than a TTL later.
func TestCloseHandsOver(t *testing.T) {
	cfg := soloConfig(t)
	a, _ := fakeNode(t, cfg, "a")
	b, _ := fakeNode(t, cfg, "b")
	l, err := a.Store().Create(testHeader("h1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(*in(0), true); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendStep(1, stepFor(1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "owner view on b", func() bool { _, _, ok := b.Owner("h1"); return ok })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// b's clock does not move and the TTL is an hour on the server's:
	// only the deleted lease can orphan it.
	if got := collect(t, b.Orphans(), 1, 30*time.Second); got[0] != "h1" {
		t.Fatalf("orphan %v", got)
	}
	_, rec, err := b.Store().Open("h1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Inputs) != 1 || rec.Steps[0] == nil {
		t.Fatalf("took over %d inputs, step %v: the held step was not sent on close", len(rec.Inputs), rec.Steps[0])
	}
}

// TestRank: every live node agrees on one first choice per orphan (the
// ranks are a permutation), except that a previous owner alive again
// under a new incarnation comes first.
func TestRank(t *testing.T) {
	live := []string{"a", "b", "c", "d"}
	tests := []struct {
		name string
		prev string
	}{
		{"owner dead", "gone"},
		{"owner back", "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			firsts := map[string]int{}
			for i := range 200 {
				id := fmt.Sprintf("s%d", i)
				var ranks []int
				first := ""
				for _, n := range live {
					r := rank(id, n, tt.prev, live)
					ranks = append(ranks, r)
					if r == 0 {
						first = n
					}
				}
				slices.Sort(ranks)
				if !slices.Equal(ranks, []int{0, 1, 2, 3}) {
					t.Fatalf("%s: ranks %v are not a permutation", id, ranks)
				}
				if slices.Contains(live, tt.prev) && first != tt.prev {
					t.Fatalf("%s: %s ranks first, want the previous owner %s", id, first, tt.prev)
				}
				firsts[first]++
			}
			if !slices.Contains(live, tt.prev) {
				for _, n := range live {
					if firsts[n] < 20 {
						t.Fatalf("node %s ranks first for %d of 200 orphans: %v", n, firsts[n], firsts)
					}
				}
			}
		})
	}
}

// TestRenewalAfterLostAnswer: a renewal whose answer was lost leaves this
// node with an old revision; the next renewal finds the lease still holds
// its incarnation and carries on, instead of giving up every session.
func TestRenewalAfterLostAnswer(t *testing.T) {
	a, _ := fakeNode(t, soloConfig(t), "a") // its own heartbeat never ticks
	if _, err := a.Store().Create(testHeader("r1")); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	inc := a.inc
	a.leaseRev-- // as if the last renewal was stored but its answer lost
	a.mu.Unlock()
	a.renew()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inc != inc {
		t.Fatalf("incarnation %q after the renewal, want %q kept", a.inc, inc)
	}
	if _, ok := a.owned["r1"]; !ok {
		t.Fatal("the session was given up")
	}
}
