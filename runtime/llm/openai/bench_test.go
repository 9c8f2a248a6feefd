package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/llmtest"
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

// BenchmarkAdapterOverhead measures one turn through the full adapter path
// (llm.Request -> SDK params -> HTTP -> SDK types -> llm.Response) against
// an in-process server, next to a bare net/http round trip with the same
// body and the conversion alone, so the SDK's and the adapter's shares can
// be told apart. Server-side work is in both HTTP figures alike.
func BenchmarkAdapterOverhead(b *testing.B) {
	srv, _ := llmtest.CannedServer(b, cannedResponse, 0)
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
		hc := llmtest.BenchClient()
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
		m, err := New(ctx, Config{APIKey: "bench", BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: llmtest.BenchClient()})
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

// BenchmarkAdapterParallel: calls on one shared Model run side by side
// (llmtest.BenchParallel reports the peak the server saw at once).
func BenchmarkAdapterParallel(b *testing.B) {
	llmtest.BenchParallel(b, cannedResponse, func(url string, hc *http.Client) (llm.Model, error) {
		return New(context.Background(), Config{APIKey: "bench", BaseURL: url, Model: "gpt-test", HTTPClient: hc})
	}, benchRequest())
}

// TestSharedModelDoesNotSerialize is the assertion behind it.
func TestSharedModelDoesNotSerialize(t *testing.T) {
	llmtest.NoSerialize(t, cannedResponse, func(url string) (llm.Model, error) {
		return New(context.Background(), Config{APIKey: "k", BaseURL: url, Model: "gpt-test"})
	}, benchRequest())
}
