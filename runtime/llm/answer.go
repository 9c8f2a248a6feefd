package llm

import (
	"context"
	"time"

	"github.com/batonhq/baton/engine"
)

// Answerer answers the engine's llm_request effects. It is the one
// interface between a host (the dry run, the service) and whatever plays
// the model: the pack's simulated model, or a real Model through Turns.
// Implementations must be safe for concurrent use: the service calls
// Answer from a goroutine per request.
type Answerer interface {
	Answer(ctx context.Context, id string, req *engine.LLMRequest) Answer
}

// Answer is the outcome of one request. Failures are inside Result (Err):
// for the engine a failed call is just another input.
type Answer struct {
	Result engine.LLMResult
	// After is when the result arrives, counted from the request on the
	// host's clock: a simulated model's scripted latency, or the time a
	// real model took. A host on a simulated clock delivers the result
	// then; a live host waits until then, which for a real model has
	// already passed.
	After time.Duration
	// Never means the call never answers (a scripted no_reply); the
	// engine's timeout fires instead.
	Never bool
}

// Warmer is implemented by answerers whose answers depend on the requests
// they saw before (the simulated model rotates its lines). A host
// rebuilding a session from its log calls Warm, in order, for every
// request the log shows answered, so the answerer carries on where the
// original left off.
type Warmer interface {
	Warm(id string, req *engine.LLMRequest)
}
