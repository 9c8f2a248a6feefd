package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStreamsSpreadLogs: with several streams, sessions' logs land in
// different ones by the hash of their ids, each stream holds only its
// own, and every log reads back whole through another node.
func TestStreamsSpreadLogs(t *testing.T) {
	cfg := soloConfig(t)
	cfg.Streams = 4
	a := node(t, cfg, "a")
	const sessions = 32
	for i := range sessions {
		id := fmt.Sprintf("spread_%d", i)
		l, err := a.Store().Create(testHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range sampleInputs() {
			if _, err := l.Append(in, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var total uint64
	for k := range cfg.Streams {
		s, err := a.js.Stream(ctx, fmt.Sprintf("%s_%d", cfg.Stream, k))
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			t.Errorf("stream %d holds no log of %d sessions", k, sessions)
		}
		if want := fmt.Sprintf("%s.%d.*", cfg.SubjectPrefix, k); len(info.Config.Subjects) != 1 || info.Config.Subjects[0] != want {
			t.Errorf("stream %d captures %v, want %s", k, info.Config.Subjects, want)
		}
		total += info.State.Msgs
	}
	if total == 0 {
		t.Fatal("no messages")
	}
	if _, err := a.js.Stream(ctx, cfg.Stream); err == nil {
		t.Errorf("stream %s of the single layout was made beside %d streams", cfg.Stream, cfg.Streams)
	}
	a.Close()
	b := node(t, cfg, "b")
	for i := range sessions {
		id := fmt.Sprintf("spread_%d", i)
		rec, err := b.Store().Read(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Inputs) != len(sampleInputs()) {
			t.Fatalf("%s: %d inputs read back, want %d", id, len(rec.Inputs), len(sampleInputs()))
		}
	}
}

// TestStreamsLayoutMismatch: a node started for another number of streams
// than the cluster keeps its logs in is refused at once, saying which.
func TestStreamsLayoutMismatch(t *testing.T) {
	for _, tc := range []struct{ first, second int }{{1, 4}, {4, 1}, {4, 2}} {
		t.Run(fmt.Sprintf("%d then %d", tc.first, tc.second), func(t *testing.T) {
			cfg := soloConfig(t)
			cfg.Streams = tc.first
			node(t, cfg, "a")
			cfg.Streams = tc.second
			cfg.Node, cfg.Logger = "b", quiet
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			c, err := Open(ctx, cfg)
			if err == nil {
				c.Close()
				t.Fatal("a node on another stream layout was let in")
			}
			if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), fmt.Sprintf("--nats-streams %d", tc.first)) {
				t.Fatalf("error %v, want one naming --nats-streams %d", err, tc.first)
			}
			// Refused at the first try, not after setup's patience: a
			// deadline of failure, not a timing assertion.
			if time.Since(start) > setupPatience/2 {
				t.Fatalf("refused after %s", time.Since(start))
			}
		})
	}
}

func TestStreamsConfig(t *testing.T) {
	for _, tc := range []struct {
		streams int
		stream  string
		want    string
	}{
		{-1, "", "streams -1"},
		{maxStreams + 1, "", "streams 257"},
		{10, strings.Repeat("S", 63), "too long for 10 streams"},
	} {
		cfg := Config{URLs: []string{"nats://127.0.0.1:1"}, Node: "n", Streams: tc.streams, Stream: tc.stream}
		if err := cfg.fill(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("streams %d stream %q: %v, want %q", tc.streams, tc.stream, err, tc.want)
		}
	}
}

// TestStreamsLayoutRace: two nodes started at the same moment for
// different layouts never both get in.
func TestStreamsLayoutRace(t *testing.T) {
	for _, tc := range []struct{ a, b int }{{2, 4}, {1, 3}} {
		t.Run(fmt.Sprintf("%d and %d", tc.a, tc.b), func(t *testing.T) {
			base := soloConfig(t)
			errs := make(chan error, 2)
			for i, n := range []int{tc.a, tc.b} {
				cfg := base
				cfg.Streams, cfg.Node, cfg.Logger = n, fmt.Sprintf("n%d", i), quiet
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					c, err := Open(ctx, cfg)
					if err == nil {
						t.Cleanup(func() { c.Close() })
					}
					errs <- err
				}()
			}
			e1, e2 := <-errs, <-errs
			if e1 == nil && e2 == nil {
				t.Fatalf("nodes for %d and %d streams both started", tc.a, tc.b)
			}
			for _, err := range []error{e1, e2} {
				if err != nil && !errors.Is(err, ErrLayout) {
					t.Fatalf("refused for another reason: %v", err)
				}
			}
		})
	}
}

// TestStreamsUpgradeUnrecorded: a stream made before layouts were recorded
// is the single layout's: a node for one stream takes it and records the
// layout, and a node for more is told to use one.
func TestStreamsUpgradeUnrecorded(t *testing.T) {
	cfg := soloConfig(t)
	a := node(t, cfg, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// As an older version made it: no metadata.
	s, err := a.js.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	old := s.CachedInfo().Config
	old.Metadata = nil
	if _, err := a.js.UpdateStream(ctx, old); err != nil {
		t.Fatal(err)
	}
	a.Close()

	b := node(t, cfg, "b")
	s, err = b.js.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Metadata[streamsKey]; got != "1" {
		t.Fatalf("layout recorded as %q after the upgrade, want 1", got)
	}
	cfg.Streams, cfg.Node, cfg.Logger = 4, "c", quiet
	if c, err := Open(ctx, cfg); err == nil {
		c.Close()
		t.Fatal("a node for 4 streams was let in beside the single stream")
	} else if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "--nats-streams 1") {
		t.Fatalf("error %v, want one naming --nats-streams 1", err)
	}
}
