package service

import (
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/llm"
)

// ModelFactory makes the model of one session, once when the session
// starts or is recovered. c is the server's clock, for a model that waits
// or measures time (a real model's retries, budgets and latency).
//
// The session calls Answer on a goroutine of its own, never the
// session's, so a slow model cannot stall timers or other inputs; the
// context ends at the request's timeout plus Config.LLMGrace, or at
// shutdown. The result is delivered at Answer.After on the server's
// clock. A model whose answers depend on earlier calls implements
// llm.Warmer, and recovery warms it with the log's answered requests.
type ModelFactory func(sessionID string, p *rules.Pack, c clock.Clock) llm.Answerer

// SimModel makes the default model: the pack's simulated one, the dry
// run's, scripted by replies (dryrun.ReadReplies reads a script) and
// answering after the pack's dry-run latency, or after latency when it is
// not negative.
func SimModel(latency time.Duration, replies []dryrun.Reply) ModelFactory {
	return func(_ string, p *rules.Pack, _ clock.Clock) llm.Answerer {
		return sim.NewModel(p, replies, latency)
	}
}

// RealModel answers with m, one concurrency-safe model shared by all
// sessions, under each pack's failure policy on the server's clock.
func RealModel(m llm.Model) ModelFactory {
	return func(_ string, p *rules.Pack, c clock.Clock) llm.Answerer {
		return llm.ForPack(m, p, c)
	}
}
