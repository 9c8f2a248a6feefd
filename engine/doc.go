// Package engine is baton's deterministic core: one Session per interview,
// driven only by the inputs it is given and answering with effects. It does
// no I/O, starts no goroutines and reads no clock, and no map order reaches
// an effect or a script, so the same pack and inputs always give
// byte-identical effects. (A live session's script time budget is the
// one exception, and it is recorded: see "Inputs, effects, facts".)
//
// # The host loop
//
// A host (the dry run, the WebSocket service, a replay) owns everything the
// engine does not: the clock, the adapters, the log. It runs one loop per
// session, in the manner of etcd's raft:
//
//	s := engine.New(pack, opts)           // opts go in the log header
//	for !s.Ended() {
//		in := next input: a candidate event, an adapter's result, or
//		      an advance to s.NextDeadline() if nothing comes first
//		engine.CheckInput(pack, &in)      // refuse it before logging
//		log(in)                           // write ahead, sync
//		effects, err := s.Step(in, buf)   // pure: timers due by in.T fire, then in
//		for each effect: act on it        // ask the model, speak, notify clients
//		                                  // results come back later as inputs
//	}
//
// # What one Step does
//
// Step(in) quantizes in.T down to the pack's tick. On the first step it
// starts the session (ticket split, setup phases, session_start rules).
// Then every timer due by in.T fires in timer order (deadline, kind,
// priority, rule, sequence), each at its own deadline and each followed by
// settle, so that one Step catching up over several deadlines gives the
// same effects as stepping through them one by one. Then the input is
// applied (a candidate event is routed, a model result delivered through
// the guardrails, a speech_done frees the floor), and settle makes all the
// progress the state now allows: end rules, the next queued turn, a
// window taking a free floor. Effects come out in the order they happened,
// each stamped with its time.
//
// # State by feature
//
// A Session is composed of features, each a type with its own state in its
// own file: the candidate (candidate.go), speech confidence
// (confidence.go), the timeline of anchors and windows (timeline.go), the
// floor and its turns (turns.go), defer (defer.go), the silence ladder
// (silence.go), guardrails (guardrail.go), tickets (tickets.go), tools
// (tools.go), jobs and setup phases (jobs.go), slots and memory
// (memory.go), the floor holder and live voice (handoff.go) and the
// transcript (transcript.go). Rules and the actions they take run in one
// place (actions.go); expressions pull what they read from the features
// through one host (expr.go). A new capability is a new feature in a new
// file, with its timers added to the one timer table (timers.go).
//
// # Inputs, effects, facts
//
// Inputs and effects (io.go) are plain data with stable JSON forms. The
// one check of an input is CheckInput (check.go). Everything that could
// make a run differ from its replay is an input: time, every adapter
// result, and, in a session its host runs live (Options.LiveBudgets),
// whether a pack script ran out of its time budget on the wall clock
// (Input.Scripts, collected from a step's effects with FactsOf). Any
// other session runs its scripts under a bound only a runaway reaches
// (scripts.go), so no machine's speed shows in its effects.
package engine
