// Package engine is baton's deterministic core: one Session per interview,
// driven only by the inputs it is given and answering with effects. It does
// no I/O, starts no goroutines and reads no clock, and no map order reaches
// an effect or a script, so the same pack and inputs always give
// byte-identical effects. (Whether a live session's script ran out of its
// wall-clock budget is the one fact the machine decides, and it is
// recorded as an input: see "Facts"; offline sessions have no such fact.)
//
// # The host's duties
//
// A host (the dry run, the WebSocket service, a replay, a pack test) owns
// everything the engine does not: the clock, the adapters, the log. It
// runs one loop per session, in the manner of etcd's raft:
//
//  1. Build the session: s := New(pack, opts). Store opts in the log
//     header; a replay builds the same session from them. opts.Inputs
//     are the session's own material (the pack's declared inputs); a host
//     that admits sessions checks them first with pack.Bind, so a refusal
//     is answered before anything is logged, and Open reports one.
//  2. Prepare second 0, if the host can wait before starting the clock:
//     when s.NeedsPrepare() reports lines due within their lead of second
//     0, step a prepare input at T 0, ask the model for every llm_request
//     it returns, and step each answer (llm_result) at T 0. Only then
//     does the clock start, so the opening lines are on time too. A host
//     that cannot wait skips this; those lines are asked when due.
//  3. Take the next input: a candidate event, an adapter's result, a
//     client tool's result, a speech_done, or, when nothing comes before
//     it, an advance to s.NextDeadline(). Stamp it with the session time
//     in ms; times never go backwards.
//  4. Check it: CheckInput(pack, &in) refuses a malformed input, or one a
//     client may not send, before anything is written.
//  5. Log it: append it to the session's log and sync, before applying.
//  6. Step it: effects, err := s.Step(in, buf). Record the facts of the
//     step with it (FactsOf(effects)) so a replay reproduces them.
//  7. Act on each effect, in order: ask the model (llm_request), speak or
//     show a line (agent_message), run a client tool, notify clients. An
//     adapter's answer comes back later as an input of step 3, with the
//     effect's id; never call Step from inside an effect.
//  8. Stop when s.Ended(): the last effect was session_end.
//
// Inputs that share a time are applied in the order the host steps them,
// one Step each; the timers due by that time fire in the first of them,
// before its input.
//
// # What one Step does
//
// Step(in) quantizes in.T down to the pack's tick, then:
//
//  1. Before the clock starts, a prepare input asks for the lines due
//     within their lead of second 0, and a model result at T 0 is taken
//     by the preparation that asked; the clock has not started.
//  2. On the first step proper the session starts: the ticket split,
//     setup phases and jobs, the session_start rules, live_start when
//     there are no setup phases, then settle.
//  3. Every timer due by in.T fires in timer order (deadline, kind,
//     priority, rule, sequence; timers.go), each at its own deadline and
//     each followed by settle and by asking again for any preparation
//     whose request changed, so that one Step catching up over several
//     deadlines gives the same effects as stepping through them one by
//     one.
//  4. The input is applied by the feature that owns its kind: a
//     candidate event is checked by the input guardrails and routed, a
//     model result is handed to the owner of its request (requests.go), a
//     speech_done frees the floor, a tool call runs the tool's rules.
//  5. Settle makes all the progress the state now allows: exchanges that
//     ended run their rules, end rules, the next queued turn, a window
//     taking a free floor; preparations are refreshed; a live session's
//     voice is told what changed.
//
// Effects come out in the order they happened, each stamped with its
// time.
//
// # Inputs
//
// Inputs (io.go) are plain data with stable JSON forms; inputKinds is
// their one list, CheckInput (check.go) their one check.
//
//	advance             only moves the clock: timers due by T fire
//	candidate           a candidate event: a message, mic or typing state, code, a pack's own event
//	llm_result          the answer (or error) to an llm_request, by its id
//	speech_done         a spoken agent_message finished playing (or was cut off)
//	tool_call           a tool call from a live speech session speaking as a role
//	agent_transcript    what a live speech session said as a role
//	client_tool_result  a client's answer to a client_tool_call
//	prepare             before the clock starts: ask for the lines due near second 0
//	end                 end the session now (the candidate left, an operator cancelled)
//
// # Effects
//
//	agent_message       say a line as a role; answered by speech_done
//	llm_request         ask the model for a turn's line, a job or a sequence step; answered by llm_result
//	client_tool_call    ask the client to run a tool; answered by client_tool_result
//	live_session        (re)connect a role's live speech session with its instruction, voice and tools
//	anchor              a hard timeline anchor fired
//	deferred            a turn is held while the candidate talks or types
//	defer_cap           a held turn reached the defer cap
//	preempted           a turn gave way (to a hard turn, a reply, an interruption)
//	window_skipped      a window closed without its turn
//	routed              where a candidate message went, and why
//	auto_advance        the silence ladder gave up waiting
//	stale               a prepared line's request changed before it was said
//	guardrail           a generated line broke the guardrails, and what was done
//	flag                something an operator should look at now
//	note                a notice from the pack or the engine (warning: operators see it)
//	tool_result         the answer to a tool call
//	slot                a declared prompt slot took a new value
//	context             a context file was written
//	context_violation   a write the file's class refused
//	handoff             the floor passed to a role
//	tickets             the ticket split
//	job_result          a job's result
//	job_error           a job failed
//	sequence            one event of a sequence's exchange
//	report              a pack report, such as a verdict
//	live                setup phases are done and the panel is live
//	adapter_error       a model call failed or timed out
//	script_error        a pack script threw, ran out of time or stack, or answered the wrong shape
//	engine_error        the engine stopped something that should not need stopping (a looping pack)
//	session_end         the session ended; nothing follows
//
// # Files
//
// The core, shared by every feature:
//
//	session.go     Session, New, Step, settle and end; the one list of features
//	io.go          inputs and effects and their JSON forms
//	check.go       CheckInput, the one check of an input
//	timers.go      the timer table: every deadline, its kind and its handler
//	requests.go    model requests and their owners: one lookup per result or timeout
//	actions.go     rules and the actions they take, one case per action type
//	expr.go        expressions read the session through one host
//	scripts.go     pack scripts: the facade they see, their recorded budget stops
//	scriptviews.go the views a script reads (ctx.msg, candidate, session, floor), a field at a time
//
// A Session is composed of features, each a type with its own state in
// its own file:
//
//	candidate.go   the human: talking, typing, messages
//	confidence.go  speech-to-text confidence: low-confidence messages are asked again, not routed
//	routing.go     who answers a candidate message
//	timeline.go    hard anchors, adaptive windows, the session's duration
//	turns.go       the floor: the turn holding it, the queue behind it
//	defer.go       turns held while the candidate talks or types, up to a cap
//	prepare.go     scheduled lines asked for before they are due
//	cover.go       a short line that fills a slow model's silence
//	silence.go     the nudge ladder while the agents wait for an answer
//	guardrail.go   checks on generated lines: regenerate, rewrite, fallback
//	reask.go       answers cut, withheld or empty are asked for once more
//	inputguard.go  checks on candidate messages before they are routed
//	lines.go       varied pack lines and the repeat cap
//	tickets.go     turn budgets per role
//	tools.go       tool calls, their rules and refusals
//	clienttools.go tools the client runs
//	jobs.go        background jobs and setup phases
//	waitfor.go     job starts held while the jobs they wait for run, up to a max
//	memory.go      memories and template slots
//	slots.go       declared prompt slots, their debounce and caps
//	files.go       context files and the assembly of a role's prompt
//	transcript.go  what was said, shared by every role's requests
//	handoff.go     who holds a panel's floor, and live voice sessions
//	sequence.go    exchanges: roles asked in turn, gates, rounds
//	seqjson.go     an exchange's events in the field names its consumers use
//	liveness.go    a session with nothing left to do
//	coverage.go    what the pack declares that the session exercised
//
// A new capability is a new feature in a new file: its field in Session
// and, if it has state to set up, its place in New's list (session.go);
// its timers as a kind and a case in the timer table (timers.go); if it
// asks a model, it implements requestOwner and passes itself to
// openRequest (requests.go). And its line above: a test fails while a
// file of this package is not named here.
//
// # Facts
//
// Everything that could make a run differ from its replay is an input:
// time, every adapter result, and, in a session its host runs live
// (Options.LiveBudgets), whether a pack script ran out of its wall-clock
// time budget. A step's stopped script calls are reported in
// script_error effects; the host records them with the step (FactsOf)
// and a replay passes them back (Input.Scripts), so a call stopped live
// is stopped again without running. Any other session (a dry run, a pack
// test, a sweep, a what-if) runs its scripts under a bound only a
// runaway reaches (scripts.go), so no machine's speed shows in its
// effects.
package engine
