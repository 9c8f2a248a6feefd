package llmtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/llm"
)

// The wire tests every adapter shares: a canned local server to measure
// an adapter's own cost against, and the check that calls on one shared
// Model do not wait for each other.

// BenchClient is an HTTP client that keeps enough idle connections for
// a parallel benchmark.
func BenchClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}

// CannedServer answers every request with body (JSON) after delay, and
// counts the most requests it held at once.
func CannedServer(tb testing.TB, body []byte, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	var inflight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv, &peak
}

// BenchParallel runs many goroutines through one shared Model (made by
// newModel for the server's URL) against a server that takes 2 ms per
// request. Calls that serialized on a lock would keep ns/op near 2 ms and
// max_inflight at 1.
func BenchParallel(b *testing.B, body []byte, newModel func(url string, hc *http.Client) (llm.Model, error), req llm.Request) {
	const delay = 2 * time.Millisecond
	srv, peak := CannedServer(b, body, delay)
	m, err := newModel(srv.URL, BenchClient())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(peak.Load()), "max_inflight")
	b.ReportMetric(float64(delay.Nanoseconds()), "serial_ns/op")
}

// NoSerialize is the assertion behind BenchParallel: a server that only
// answers once it holds several requests at the same time can be
// satisfied only if calls on one Model run in parallel. It waits on a
// barrier, not on timing.
func NoSerialize(t *testing.T, body []byte, newModel func(url string) (llm.Model, error), req llm.Request) {
	const n = 4
	arrived := make(chan struct{}, n)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	m, err := newModel(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := m.Generate(context.Background(), req)
			errs <- err
		}()
	}
	for i := range n {
		select {
		case <-arrived: // all n requests are in the server at once
		case err := <-errs:
			t.Fatalf("call %d ended before the others arrived: %v", i, err)
		case <-time.After(time.Minute):
			t.Fatalf("only %d of %d calls reached the server at once", i, n)
		}
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
