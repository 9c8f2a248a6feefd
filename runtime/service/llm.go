package service

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/fake"
	"github.com/batonhq/baton/runtime/llm"
)

// LLM answers one session's llm_request effects. Answer runs on its own
// goroutine, never the session's, so a slow model cannot stall timers or
// other inputs; it must return when ctx ends (the session's request
// timeout plus a grace period, or shutdown). Errors are reported in the
// result (engine.AdapterError with a kind), never as panics.
type LLM interface {
	Answer(ctx context.Context, id string, req *engine.LLMRequest) engine.LLMResult
}

// LLMFactory makes the adapter for one session. It is called once when a
// session starts or is recovered.
type LLMFactory func(sessionID string, p *rules.Pack) LLM

// Warmer is implemented by adapters whose answers depend on the requests
// they saw before (the scripted fake rotates its lines). Recovery calls
// Warm, in order, for every request the log shows was answered, so a
// recovered session continues where the original left off.
type Warmer interface {
	Warm(id string, req *engine.LLMRequest)
}

// FakeLLM is the default adapter: the pack's scripted lines from
// runtime/fake, answering after the pack's simulated latency on the
// server's clock.
type FakeLLM struct {
	clock    clock.Clock
	latency  time.Duration
	override bool

	mu sync.Mutex // fake.LLM is per session and single-goroutine
	f  *fake.LLM
}

// NewFakeLLMFactory returns a factory of FakeLLMs. A non-negative latency
// overrides the pack's dry-run latency (0 answers at once); negative keeps
// the pack's. A nil clock is the real one.
func NewFakeLLMFactory(c clock.Clock, latency time.Duration, replies []fake.Reply) LLMFactory {
	if c == nil {
		c = clock.Real()
	}
	return func(_ string, p *rules.Pack) LLM {
		return &FakeLLM{clock: c, latency: latency, override: latency >= 0, f: fake.NewLLM(p, replies)}
	}
}

// Answer implements LLM.
func (l *FakeLLM) Answer(ctx context.Context, id string, req *engine.LLMRequest) engine.LLMResult {
	l.mu.Lock()
	res, delay, ok := l.f.Answer(id, req)
	l.mu.Unlock()
	if l.override {
		delay = l.latency.Milliseconds()
	}
	if !ok {
		<-ctx.Done()
		return engine.LLMResult{ID: id, Err: &engine.AdapterError{Kind: "timeout", Message: "no reply (scripted)"}}
	}
	if err := clock.Sleep(ctx, l.clock, time.Duration(delay)*time.Millisecond); err != nil {
		return engine.LLMResult{ID: id, Err: &engine.AdapterError{Kind: "timeout", Message: err.Error()}}
	}
	return res
}

// Warm implements Warmer: it replays the call so rotation state matches.
func (l *FakeLLM) Warm(id string, req *engine.LLMRequest) {
	l.mu.Lock()
	l.f.Answer(id, req)
	l.mu.Unlock()
}

// ModelLLM answers with a real model (runtime/llm, e.g. Gemini) under the
// pack's failure policy: llm.timeout, attempt_timeout, retries, backoff.
type ModelLLM struct {
	turns *llm.Turns
}

// NewModelLLMFactory shares one concurrency-safe model among all sessions;
// each session gets the retry policy its pack declares.
func NewModelLLMFactory(m llm.Model) LLMFactory {
	return func(_ string, p *rules.Pack) LLM {
		return &ModelLLM{turns: &llm.Turns{Model: llm.WithPolicy(m, llm.PolicyFor(p), llm.Sleep)}}
	}
}

// Answer implements LLM.
func (m *ModelLLM) Answer(ctx context.Context, id string, req *engine.LLMRequest) engine.LLMResult {
	res, _ := m.turns.Answer(ctx, id, req)
	return res
}
