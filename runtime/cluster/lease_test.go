package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/nats-io/nats.go/jetstream"
)

// The tests in this file take every lease decision on fake clocks, one
// per node, against the embedded JetStream server. The server expires
// lease keys on its own clock, which no test can move, so their TTL is
// far longer than any test runs: what happens is what the fake clocks
// say, and nothing waits for time to pass.

// fakeTTL is the lease TTL on fake clocks: the lease bucket's TTL on the
// server's clock too, where it never runs out during a test.
const fakeTTL = time.Hour

var fakeStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeNode opens a node on a fake clock of its own.
func fakeNode(t *testing.T, cfg Config, name string) (*Cluster, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.NewFake(fakeStart)
	cfg.Clock, cfg.LeaseTTL = clk, fakeTTL
	return node(t, cfg, name), clk
}

// advance moves a node's clock by d and waits until its heartbeat and
// its scan have handled the ticks that fell due: each rearms its timer
// once it has, so both are armed after the new time.
func advance(t *testing.T, clk *clocktest.Fake, d time.Duration) {
	t.Helper()
	clk.Advance(d)
	now := clk.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := clk.WaitFor(ctx, func(armed []time.Time) bool {
		return len(armed) == 2 && armed[0].After(now)
	})
	if err != nil {
		t.Fatalf("the node did not handle its ticks at %s: armed %v", now.Sub(fakeStart), clk.Armed())
	}
}

// emitted reports whether c has reported id as an orphan.
func emitted(c *Cluster, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.sessions[id]
	return v != nil && v.emitted != 0
}

func incarnation(c *Cluster) (inc string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inc, c.leaseRev
}

// TestLeaseRenewedOnItsClock: the heartbeat renews the lease every TTL/3
// of the node's clock; over three TTLs the lease is renewed at each of
// them, on the server, under the same incarnation, and nothing is lost.
func TestLeaseRenewedOnItsClock(t *testing.T) {
	a, clk := fakeNode(t, soloConfig(t), "a")
	if _, err := a.Store().Create(testHeader("rn1")); err != nil {
		t.Fatal(err)
	}
	inc, rev := incarnation(a)
	for i := range 9 {
		advance(t, clk, fakeTTL/3)
		gotInc, gotRev := incarnation(a)
		if gotInc != inc || gotRev <= rev {
			t.Fatalf("after %d renewal periods: incarnation %q revision %d, want %q renewed past %d", i+1, gotInc, gotRev, inc, rev)
		}
		rev = gotRev
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e, err := a.leases.Get(ctx, "a")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var l lease
		if err := json.Unmarshal(e.Value(), &l); err != nil || l.Incarnation != inc || e.Revision() != rev {
			t.Fatalf("the server holds %s at revision %d (%v), want incarnation %s at %d", e.Value(), e.Revision(), err, inc, rev)
		}
	}
	a.mu.Lock()
	_, owned := a.owned["rn1"]
	a.mu.Unlock()
	if !owned {
		t.Fatal("the session was given up while the lease was renewed")
	}
}

// TestLeaseGivenUpUnrenewed: a node cut off from NATS, whose renewals
// fail without being refused, keeps its lease until a whole TTL of its
// clock has passed since the last renewal that succeeded, then gives up
// every session and fences its logs, before the others can be sure.
func TestLeaseGivenUpUnrenewed(t *testing.T) {
	a, clk := fakeNode(t, soloConfig(t), "a")
	l, err := a.Store().Create(testHeader("gu1"))
	if err != nil {
		t.Fatal(err)
	}
	a.nc.Close() // cut off: every renewal fails at once
	for i := range 2 {
		advance(t, clk, fakeTTL/3)
		if inc, _ := incarnation(a); inc == "" {
			t.Fatalf("lease given up %d/3 of a TTL after the last renewal", i+1)
		}
	}
	advance(t, clk, fakeTTL/3)
	if inc, _ := incarnation(a); inc != "" {
		t.Fatal("lease kept a whole TTL after the last renewal")
	}
	if got := collect(t, a.Lost(), 1, 10*time.Second); got[0] != "gu1" {
		t.Fatalf("lost %v, want gu1", got)
	}
	if _, err := l.Append(*in(0), true); err == nil {
		t.Fatal("the log of a session given up took an input")
	}
}

// TestStaleLeaseIsDead: a lease whose expiry this node never saw (its
// marker missed while its watcher was cut off) counts as dead once no
// renewal of it has arrived for three TTLs of this node's clock,
// and not before. The lease bucket's leader still has the last word: the
// session is taken over only once the lease is gone there.
func TestStaleLeaseIsDead(t *testing.T) {
	cfg := soloConfig(t)
	a, _ := fakeNode(t, cfg, "a") // its clock never moves: it never renews
	b, clk := fakeNode(t, cfg, "b")
	if _, err := a.Store().Create(testHeader("st1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "owner view on b", func() bool { n, _, ok := b.Owner("st1"); return ok && n == "a" })
	// Three TTLs, as docs/cluster.md says.
	advance(t, clk, 3*fakeTTL-time.Nanosecond)
	if emitted(b, "st1") {
		t.Fatal("orphan reported before the lease was stale")
	}
	if _, _, ok := b.Owner("st1"); !ok {
		t.Fatal("owner dead before the lease was stale")
	}
	advance(t, clk, fakeTTL/4) // the next scan
	if got := collect(t, b.Orphans(), 1, 10*time.Second); got[0] != "st1" {
		t.Fatalf("orphan %v", got)
	}
	if _, _, ok := b.Owner("st1"); ok {
		t.Fatal("a stale lease still counts as its owner's")
	}
	// The lease expires on the server, and b's watcher misses it.
	b.watchPaused.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.leases.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	l, rec, err := b.Store().Open("st1")
	if err != nil {
		t.Fatalf("takeover of a session whose lease is gone: %v", err)
	}
	defer l.Close()
	if rec.Header.SessionID != "st1" {
		t.Fatalf("took over %q", rec.Header.SessionID)
	}
}

// TestTakeoverChecksLease: a view that has fallen behind (no renewal of a
// live node seen for three TTLs of this node's clock) does not let
// a node take that node's sessions: the lease bucket's leader says the
// owner is alive.
func TestTakeoverChecksLease(t *testing.T) {
	cfg := soloConfig(t)
	a, _ := fakeNode(t, cfg, "a")
	b, clk := fakeNode(t, cfg, "b")
	if _, err := a.Store().Create(testHeader("tc1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "owner view on b", func() bool { _, _, ok := b.Owner("tc1"); return ok })
	advance(t, clk, 3*fakeTTL)
	if _, _, ok := b.Owner("tc1"); ok {
		t.Fatal("b's view still has a's lease fresh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var owned *OwnedError
	if err := b.Acquire(ctx, "tc1"); !errors.As(err, &owned) || owned.Node != "a" || owned.Advertise != "ws://a.test/ws" {
		t.Fatalf("acquire of a live node's session: %v, want *OwnedError naming a", err)
	}
	if _, _, err := b.Store().Open("tc1"); !errors.Is(err, ErrOwned) {
		t.Fatalf("open of a live node's session: %v, want ErrOwned", err)
	}
}

// TestUnseenOwnerIsDead: a registry entry whose owner's lease never
// shows up (the node registered and died before this one saw its lease)
// is unknown for a TTL of this node's clock, then dead, and taken over.
func TestUnseenOwnerIsDead(t *testing.T) {
	b, clk := fakeNode(t, soloConfig(t), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ghost, _ := json.Marshal(owner{Node: "ghost", Incarnation: "0123456789abcdef"})
	if _, err := b.owners.Create(ctx, "uo1", ghost); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the entry in b's view", func() bool { return slices.Contains(b.live(), "uo1") })
	advance(t, clk, fakeTTL-time.Nanosecond)
	if emitted(b, "uo1") {
		t.Fatal("orphan reported before its owner went unseen for a TTL")
	}
	var owned *OwnedError
	if err := b.Acquire(ctx, "uo1"); !errors.As(err, &owned) || owned.Node != "ghost" {
		t.Fatalf("acquire within the TTL: %v, want *OwnedError naming ghost", err)
	}
	advance(t, clk, fakeTTL/4)
	if got := collect(t, b.Orphans(), 1, 10*time.Second); got[0] != "uo1" {
		t.Fatalf("orphan %v", got)
	}
	if err := b.Acquire(ctx, "uo1"); err != nil {
		t.Fatalf("acquire of an owner unseen for a TTL: %v", err)
	}
	if n, _, ok := b.Owner("uo1"); !ok || n != "b" {
		t.Fatalf("owner %q %v, want b", n, ok)
	}
}

// TestOrphanRankWaits: when an owner dies, the node ranked first for a
// session reports it at once and the one ranked second a TTL of its own
// clock later, if it is still orphaned then (the first may have died
// too), not before.
func TestOrphanRankWaits(t *testing.T) {
	cfg := soloConfig(t)
	a, _ := fakeNode(t, cfg, "a")
	b, clkB := fakeNode(t, cfg, "b")
	c, clkC := fakeNode(t, cfg, "c")
	live := []string{"b", "c"}
	// Sessions enough that each of b and c ranks first for some and
	// second for others.
	var ids []string
	first := map[string][]string{}
	for i := 0; len(first["b"]) < 2 || len(first["c"]) < 2; i++ {
		id := fmt.Sprintf("rw%d", i)
		if _, err := a.Store().Create(testHeader(id)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		for _, n := range live {
			if rank(id, n, "a", live) == 0 {
				first[n] = append(first[n], id)
			}
		}
	}
	for _, n := range live {
		slices.Sort(first[n])
	}
	for _, n := range []*Cluster{b, c} {
		waitFor(t, 10*time.Second, "owner view", func() bool { return len(n.live()) == len(ids) })
	}
	if err := a.Close(); err != nil { // its lease is deleted: dead at once
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n     *Cluster
		clk   *clocktest.Fake
		other string
	}{{b, clkB, "c"}, {c, clkC, "b"}} {
		name := tc.n.Node()
		got := collect(t, tc.n.Orphans(), len(first[name]), 10*time.Second)
		if !slices.Equal(got, first[name]) {
			t.Fatalf("%s reported %v at once, want the sessions it ranks first for: %v", name, got, first[name])
		}
		// The scan that reported those judged every session.
		for _, id := range first[tc.other] {
			if emitted(tc.n, id) {
				t.Fatalf("%s reported %s, which it ranks second for, at once", name, id)
			}
		}
		advance(t, tc.clk, fakeTTL-time.Nanosecond)
		for _, id := range first[tc.other] {
			if emitted(tc.n, id) {
				t.Fatalf("%s reported %s, which it ranks second for, within a TTL", name, id)
			}
		}
		advance(t, tc.clk, fakeTTL/4)
		if got := collect(t, tc.n.Orphans(), len(first[tc.other]), 10*time.Second); !slices.Equal(got, first[tc.other]) {
			t.Fatalf("%s reported %v a TTL later, want %v", name, got, first[tc.other])
		}
	}
}

// TestNodeNameInUse: a node name whose lease outlives two TTLs of the
// starting node's clock belongs to a running process, and a second
// process of that name is refused; one whose lease expires on the
// server meanwhile (a restart) is waited for and taken. Neither depends
// on how fast the machine is: the starting node's clock moves only when
// the test moves it.
func TestNodeNameInUse(t *testing.T) {
	t.Run("running process", func(t *testing.T) {
		cfg := soloConfig(t)
		fakeNode(t, cfg, "a")
		clk := clocktest.NewFake(fakeStart)
		cfg.Node, cfg.Logger, cfg.LeaseTTL, cfg.Clock = "a", quiet, fakeTTL, clk
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := openInBackground(ctx, cfg)
		waited := time.Duration(0)
		for {
			// Open waits a quarter TTL between tries: move its clock
			// on once it does.
			waitFor(t, 30*time.Second, "the second process waiting or returning", func() bool {
				return len(clk.Armed()) == 1 || len(done) > 0
			})
			select {
			case err := <-done:
				t.Fatalf("second process returned %v after %s", err, waited)
			default:
			}
			clk.Advance(fakeTTL / 4)
			waited += fakeTTL / 4
			if waited > 2*fakeTTL {
				break
			}
		}
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "registered by a running process") {
				t.Fatalf("second process: %v, want the name refused", err)
			}
		case <-ctx.Done():
			t.Fatal("the second process was not refused after two TTLs of its clock")
		}
	})
	t.Run("restart", func(t *testing.T) {
		cfg := soloConfig(t)
		cfg.LeaseTTL = time.Second // the old lease expires on the server's clock
		old := node(t, cfg, "a")
		old.freeze()
		clk := clocktest.NewFake(fakeStart)
		cfg.Node, cfg.Logger, cfg.Clock = "a", quiet, clk
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := openInBackground(ctx, cfg)
		// The new process finds the lease and waits a quarter TTL of its
		// clock; its clock moves on only once the server has expired it.
		waitFor(t, 30*time.Second, "the second process waiting or returning", func() bool {
			return len(clk.Armed()) == 1 || len(done) > 0
		})
		waitFor(t, 30*time.Second, "the old lease's expiry", func() bool {
			_, err := old.leases.Get(ctx, "a")
			return errors.Is(err, jetstream.ErrKeyNotFound)
		})
		clk.Advance(fakeTTL / 4)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("the restart did not take the expired lease")
		}
	})
}

// openInBackground opens a node with cfg while the test moves its clock,
// closes it if it opened, and sends what Open returned.
func openInBackground(ctx context.Context, cfg Config) <-chan error {
	done := make(chan error, 1)
	go func() {
		c, err := Open(ctx, cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	return done
}
