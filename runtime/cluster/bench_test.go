package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// benchTargets are the NATS deployments benchmarked: the shared single
// server (R1) and three servers in this process (R3).
func benchTargets(b *testing.B) []struct {
	name     string
	urls     func() []string
	replicas int
} {
	var once sync.Once
	var urls []string
	return []struct {
		name     string
		urls     func() []string
		replicas int
	}{
		{"R1", func() []string { return []string{shared.url} }, 1},
		{"R3", func() []string {
			once.Do(func() { urls = clientURLs(startCluster(b, 3)) })
			return urls
		}, 3},
	}
}

// BenchmarkAppend: one synced Append, as the service makes for every
// input, from 1 or 32 sessions writing at once. ns/op is wall time over
// all appends; p50 and p99 are single appends' latencies.
//
//	go test ./runtime/cluster -run '^$' -bench Append -benchtime 2000x
func BenchmarkAppend(b *testing.B) {
	for _, tgt := range benchTargets(b) {
		for _, sessions := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/sessions=%d", tgt.name, sessions), func(b *testing.B) {
				stream, prefix := namespace()
				c := node(b, Config{URLs: tgt.urls(), Replicas: tgt.replicas, Stream: stream, SubjectPrefix: prefix, LeaseTTL: 10 * time.Second}, "bench")
				logs := make([]wal.SessionLog, sessions)
				for i := range logs {
					l, err := c.Store().Create(testHeader(fmt.Sprintf("b%d", i)))
					if err != nil {
						b.Fatal(err)
					}
					logs[i] = l
				}
				lat := make([][]time.Duration, sessions)
				var next atomic.Int64
				var failed atomic.Pointer[error]
				in := engine.Input{T: 100, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: "a line of about the usual length for a candidate's turn"}}
				b.ResetTimer()
				var wg sync.WaitGroup
				for i, l := range logs {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							start := time.Now()
							if _, err := l.Append(in, true); err != nil {
								failed.CompareAndSwap(nil, &err)
								return
							}
							lat[i] = append(lat[i], time.Since(start))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if p := failed.Load(); p != nil {
					b.Fatal(*p)
				}
				reportLatency(b, slices.Concat(lat...))
			})
		}
	}
}

func reportLatency(b *testing.B, all []time.Duration) {
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkOpen: reading a 300-input session (each input with its step
// record, as the service writes them): Store.Open as a takeover does it
// (acquire, read, parse, fence), and the two ways of reading its
// messages: batched direct gets (what readMsgs does) and an ordered
// consumer.
//
//	go test ./runtime/cluster -run '^$' -bench Open -benchtime 50x
func BenchmarkOpen(b *testing.B) {
	for _, tgt := range benchTargets(b) {
		b.Run(tgt.name, func(b *testing.B) {
			stream, prefix := namespace()
			c := node(b, Config{URLs: tgt.urls(), Replicas: tgt.replicas, Stream: stream, SubjectPrefix: prefix, LeaseTTL: 10 * time.Second}, "bench")
			l, err := c.Store().Create(testHeader("open300"))
			if err != nil {
				b.Fatal(err)
			}
			for i := range 300 {
				seq, err := l.Append(engine.Input{T: int64(i) * 1000, Type: engine.InputAdvance}, true)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.AppendStep(seq, stepFor(seq)); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.Run("store-open", func(b *testing.B) {
				for b.Loop() {
					l, rec, err := c.Store().Open("open300")
					if err != nil || len(rec.Inputs) != 300 {
						b.Fatalf("%v, %d inputs", err, len(rec.Inputs))
					}
					l.Close()
				}
			})
			b.Run("read-direct-batch", func(b *testing.B) {
				for b.Loop() {
					if msgs, err := c.readMsgs(ctx, "open300", false); err != nil || len(msgs) < 301 {
						b.Fatalf("%v, %d messages", err, len(msgs))
					}
				}
			})
			st, err := c.js.Stream(ctx, stream)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("read-ordered-consumer", func(b *testing.B) {
				for b.Loop() {
					if msgs, err := readOrdered(ctx, c, st, "open300"); err != nil || len(msgs) < 301 {
						b.Fatalf("%v, %d messages", err, len(msgs))
					}
				}
			})
		})
	}
}

// readOrdered reads a session's messages through an ordered consumer,
// the alternative readMsgs was measured against.
func readOrdered(ctx context.Context, c *Cluster, st jetstream.Stream, id string) ([]rawMsg, error) {
	last, err := c.lastMsg(ctx, c.subject(id))
	if err != nil || last == nil {
		return nil, err
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.subject(id)}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(batchSize))
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	var out []rawMsg
	for {
		m, err := it.Next()
		if err != nil {
			return nil, err
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		out = append(out, rawMsg{Seq: md.Sequence.Stream, Time: md.Timestamp, Header: m.Headers(), Data: m.Data()})
		if md.Sequence.Stream >= last.Seq {
			return out, nil
		}
	}
}
