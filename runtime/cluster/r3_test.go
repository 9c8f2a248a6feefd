package cluster

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/engine"
)

// TestServerLossR3: with three replicas, losing the NATS server that both
// leads the log's stream and serves the node's connection, cleanly or by
// a crash, costs a reconnect and an election, not an append: every
// Append returns nil, and every acknowledged input is in the log, in
// order. The node appends until the server's process has exited and
// twenty times after that: a clean shutdown takes its time, and on a busy
// machine every append may be acknowledged before it is over.
func TestServerLossR3(t *testing.T) {
	tests := []struct {
		name string
		sig  syscall.Signal
	}{
		{"clean shutdown", syscall.SIGTERM},
		{"crash", syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srvs := startChildCluster(t, 3)
			stream, prefix := namespace()
			cfg := Config{Replicas: 3, Stream: stream, SubjectPrefix: prefix,
				// Above the time the lease bucket may go without a leader
				// after a crash, which this test does not measure
				// (docs/cluster.md, "A NATS server dies").
				LeaseTTL:  30 * time.Second,
				OpTimeout: 30 * time.Second}
			for _, s := range srvs {
				cfg.URLs = append(cfg.URLs, s.url)
			}
			setup := node(t, cfg, "setup")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := setup.js.Stream(ctx, stream)
			if err != nil {
				t.Fatal(err)
			}
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var victim *child
			for _, s := range srvs {
				if s.name == info.Cluster.Leader {
					victim = s
				}
			}
			if victim == nil {
				t.Fatalf("no server named %q leads the stream", info.Cluster.Leader)
			}
			setup.Close()
			// The node connects to the leader first, so losing it costs both.
			cfg.URLs = []string{victim.url}
			for _, s := range srvs {
				if s != victim {
					cfg.URLs = append(cfg.URLs, s.url)
				}
			}
			cfg.NATSOptions = []nats.Option{nats.DontRandomize()}
			a := node(t, cfg, "a")
			if got := a.nc.ConnectedServerName(); got != victim.name {
				t.Fatalf("connected to %s, want %s", got, victim.name)
			}
			l, err := a.Store().Create(testHeader("r3"))
			if err != nil {
				t.Fatal(err)
			}
			var acked []engine.Input
			var slowest time.Duration
			bound := time.NewTimer(5 * time.Minute) // a hang, not a timing
			defer bound.Stop()
			gone := false
			for i, after := 0, 0; after < 20; i++ {
				if i == 20 {
					if err := victim.cmd.Process.Signal(tt.sig); err != nil {
						t.Fatal(err)
					}
				}
				if i >= 20 && !gone {
					select {
					case <-victim.exited:
						gone = true
					case <-bound.C:
						t.Fatalf("%s has not exited after %d appends", victim.name, i)
					default:
					}
				}
				if gone {
					after++
				}
				in := engine.Input{T: int64(i) * 100, Type: engine.InputAdvance}
				start := time.Now()
				seq, err := l.Append(in, true)
				if err != nil {
					t.Fatalf("append %d after losing %s: %v", i+1, victim.name, err)
				}
				slowest = max(slowest, time.Since(start))
				if seq != uint64(i+1) {
					t.Fatalf("append %d: seq %d", i+1, seq)
				}
				acked = append(acked, in)
			}
			t.Logf("slowest append: %s", slowest)
			if got := a.nc.ConnectedServerName(); got == victim.name {
				t.Fatalf("still connected to %s", got)
			}
			rec, err := a.Store().Read("r3")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(acked, rec.Inputs); d != "" {
				t.Fatalf("the log lost acknowledged inputs (-acked +log):\n%s", d)
			}
		})
	}
}
