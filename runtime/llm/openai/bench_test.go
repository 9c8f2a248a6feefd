package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

var cannedResponse = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1767225600,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Share your first containment step. I will validate with replay tests.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":412,"completion_tokens":17,"total_tokens":429,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_bench"}`)

func benchRequest() llm.Request {
	return llm.FromTurn(&engine.LLMRequest{
		Role: "qa", Kind: "routed_reply", TurnGoal: "ask_for_repro_or_validation",
		System:               "You are the QA engineer on an incident review panel. You care about evidence and tests.",
		CandidateLastMessage: "I can fix now",
		TranscriptTail: []engine.TranscriptLine{
			{Speaker: "tech_lead", Text: "Production is double charging on retries."},
			{Speaker: "ba", Text: "The VIP discount launches today."},
			{Speaker: "candidate", Text: "Let me look at the retry path."},
			{Speaker: "candidate", Text: "I can fix now"},
		},
		ScenarioContext: []engine.KV{{Key: "bug_summary", Value: "double charge in retry path"}, {Key: "business_pressure", Value: "VIP discount launch today"}},
		Constraints:     engine.Constraints{MaxSentences: 2, MaxQuestionCount: 1},
	})
}

func benchClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}

// cannedServer answers every request with cannedResponse after delay. It
// tracks how many requests are in flight at once.
func cannedServer(b *testing.B, delay time.Duration) (*httptest.Server, *atomic.Int64) {
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
		_, _ = w.Write(cannedResponse)
	}))
	b.Cleanup(srv.Close)
	return srv, &peak
}

// BenchmarkAdapterOverhead measures one turn through the full adapter path
// (llm.Request -> SDK params -> HTTP -> SDK types -> llm.Response) against
// an in-process server, next to a bare net/http round trip with the same
// body and the conversion alone, so the SDK's and the adapter's shares can
// be told apart. Server-side work is in both HTTP figures alike.
func BenchmarkAdapterOverhead(b *testing.B) {
	srv, _ := cannedServer(b, 0)
	req := benchRequest()
	ctx := context.Background()

	b.Run("raw_http", func(b *testing.B) {
		params, err := toParams("gpt-test", req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := json.Marshal(params)
		if err != nil {
			b.Fatal(err)
		}
		hc := benchClient()
		url := srv.URL + "/v1/chat/completions"
		b.ReportAllocs()
		for b.Loop() {
			hr, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Authorization", "Bearer bench")
			resp, err := hc.Do(hr)
			if err != nil {
				b.Fatal(err)
			}
			var out map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})

	b.Run("openai_adapter", func(b *testing.B) {
		m, err := New(ctx, Config{APIKey: "bench", BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: benchClient()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := m.Generate(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if resp.Text == "" {
				b.Fatal("empty reply")
			}
		}
	})

	b.Run("conversion_only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			params, err := toParams("gpt-test", req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := params.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
			if _, err := decodeResponse(cannedResponse); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAdapterParallel runs many goroutines through one shared Model
// against a server that takes 2 ms per request. If calls serialized on a
// lock, ns/op would stay near 2 ms and max_inflight at 1; it reports the
// peak number of requests the server saw at once.
func BenchmarkAdapterParallel(b *testing.B) {
	const delay = 2 * time.Millisecond
	srv, peak := cannedServer(b, delay)
	m, err := New(context.Background(), Config{APIKey: "bench", BaseURL: srv.URL, Model: "gpt-test", HTTPClient: benchClient()})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
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

// TestSharedModelDoesNotSerialize is the assertion behind the parallel
// benchmark: a server that only answers once it holds several requests at
// the same time can be satisfied only if calls on one Model run in
// parallel. It waits on a barrier, not on timing.
func TestSharedModelDoesNotSerialize(t *testing.T) {
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
		_, _ = w.Write(cannedResponse)
	}))
	defer srv.Close()
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: srv.URL, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := m.Generate(context.Background(), benchRequest())
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
