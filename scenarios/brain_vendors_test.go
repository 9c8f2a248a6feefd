package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/anthropic/anthropicfake"
	"github.com/batonhq/baton/runtime/llm/gemini/geminifake"
	"github.com/batonhq/baton/runtime/llm/openai/openaifake"
	"github.com/batonhq/baton/runtime/llm/vendors"
	"github.com/batonhq/baton/runtime/record"
)

// TestBrainOnThreeVendors runs The Brain as `baton dryrun -llm live`
// does: each role's calls go through its vendor's official SDK, found by
// the SDK's own environment variables, to a strict fake of that vendor's
// API. GPT gates both others in, everyone agrees in round 2, and every
// request is one the vendor's reference allows, with the contract's
// token cap on the wire and no flag block in what the others read.
func TestBrainOnThreeVendors(t *testing.T) {
	var gptCalls, claudeCalls, geminiCalls atomic.Int32
	oai := openaifake.New(func(*openaifake.Request) openaifake.Reply {
		if gptCalls.Add(1) == 1 {
			return openaifake.Text("I am GPT. Keep the tag out of state; log it server-side.\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=logging\n---")
		}
		return openaifake.Text("[NO_FURTHER_INPUT]\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=done\n---")
	})
	defer oai.Close()
	ant := anthropicfake.New(func(*anthropicfake.Request) anthropicfake.Reply {
		if claudeCalls.Add(1) == 1 {
			return anthropicfake.Text("I am Claude. Agreed; tie the log line to the run id.")
		}
		return anthropicfake.Text("[NO_FURTHER_INPUT]")
	})
	defer ant.Close()
	gem := geminifake.New(func(*geminifake.Request) geminifake.Reply {
		if geminiCalls.Add(1) == 1 {
			return geminifake.Text("I am Gemini. One log sink at the edge.")
		}
		return geminifake.Text("[NO_FURTHER_INPUT]")
	})
	defer gem.Close()
	t.Setenv("OPENAI_API_KEY", oai.APIKey)
	t.Setenv("OPENAI_BASE_URL", oai.URL)
	t.Setenv("ANTHROPIC_API_KEY", ant.APIKey)
	t.Setenv("ANTHROPIC_BASE_URL", ant.URL)
	t.Setenv("GEMINI_API_KEY", gem.APIKey)
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", gem.URL)

	p, _ := loadBundled(t, "brain")
	router, err := vendors.ForPack(context.Background(), p, vendors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	evs := []events.Timed{prompt(1, "v1", "Should we keep the routing tag?"), {T: 120_000, Event: engine.CandidateEvent{Type: "leave"}}}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Model: llm.ForPack(router, p, nil)})
	if err != nil {
		t.Fatal(err)
	}
	var completed *record.Record
	for i := range res.Records {
		r := &res.Records[i]
		if r.Type == engine.EffectAdapterError || r.Type == engine.EffectEngineError {
			t.Fatalf("%s: %s", r.Type, r.Reason)
		}
		if r.Type == engine.EffectSequence && r.Kind == engine.SeqCompleted {
			completed = r
		}
	}
	if completed == nil || !bytes.Contains(completed.Data, []byte(`"reason":"unanimous","calls":6`)) {
		t.Fatalf("the exchange did not end unanimously in round 2: %v", completed)
	}

	// Each vendor got its role's two calls, each one it allows, with the
	// token cap in its own field.
	for _, v := range []struct {
		name   string
		bodies [][]byte
		cap    string
	}{
		{"openai", bodiesOf(oai.Requests(), func(r openaifake.Received) ([]byte, error) { return r.Body, r.Err }), `"max_completion_tokens":1000`},
		{"anthropic", bodiesOf(ant.Requests(), func(r anthropicfake.Received) ([]byte, error) { return r.Body, r.Err }), `"max_tokens":1000`},
		{"gemini", bodiesOf(gem.Requests(), func(r geminifake.Received) ([]byte, error) { return r.Body, r.Err }), `"maxOutputTokens":1000`},
	} {
		if len(v.bodies) != 2 {
			t.Errorf("%s: %d requests, want 2", v.name, len(v.bodies))
		}
		for _, b := range v.bodies {
			if !bytes.Contains(compact(t, b), []byte(v.cap)) {
				t.Errorf("%s: no %s in %s", v.name, v.cap, b)
			}
		}
	}
	// Claude reads what GPT said, without its flags.
	claude := ant.Requests()[0].Body
	if !bytes.Contains(claude, []byte("log it server-side")) || bytes.Contains(claude, []byte("REASON_TAG=logging")) {
		t.Errorf("Claude's first request:\n%s", claude)
	}
	replaysByteForByte(t, p, res)
}

// bodiesOf lists the bodies of the valid requests a fake received; a
// refused one fails the test where the caller looks.
func bodiesOf[R any](rs []R, body func(R) ([]byte, error)) [][]byte {
	var out [][]byte
	for _, r := range rs {
		b, err := body(r)
		if err != nil {
			out = append(out, []byte("REFUSED: "+err.Error()))
			continue
		}
		out = append(out, b)
	}
	return out
}

func compact(t *testing.T, b []byte) []byte {
	if strings.HasPrefix(string(b), "REFUSED") {
		t.Errorf("%s", b)
		return b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Errorf("request body: %v", err)
	}
	return buf.Bytes()
}
