// Package record is what a played session leaves behind, whoever played
// it: every effect as a Record, the run as a Result, the readable timeline
// and JSON lines they print as, and the diff of two runs. The dry-run
// host writes Results, a replayed session log is read into one, and
// tests, sweeps and the timeline page read them; none of those needs the
// host to get at the format.
package record

import (
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// Record is one effect with what the host that played it added to it.
type Record struct {
	engine.Effect
	// SpeechMS is how long an agent message plays: the simulated voice's
	// time, or, for a replayed session log, until its speech_done came.
	SpeechMS int64 `json:"speech_ms,omitempty"`
	// TickMS is the tick of the pack the session ran: lateness within it
	// is not lateness, so the text line leaves it out. It is the host's
	// knowledge, not the effect's, and stays out of the JSON form.
	TickMS int64 `json:"-"`
}

// Result is a played session.
type Result struct {
	// Supplied is what the session supplied for the pack's inputs,
	// canonical (rules.Inputs.Supplied): what its log's header keeps.
	Supplied rules.Supplied
	Records  []Record
	// Inputs is every input the engine was given, in order: a replayable log.
	Inputs []engine.Input
	// Steps holds, for each input, the effects it produced and the engine's
	// error if it refused the input.
	Steps []Step
	EndMS int64
	// Files are the session's context files as it ended.
	Files []engine.ContextFileState
	// Workspace is the simulated client's workspace as the run ended
	// (the pack's workspace: section), in path order.
	Workspace []WorkspaceFile
	// Coverage counts how often each of the pack's CoverItems was
	// exercised, by index.
	Coverage []uint32
	// Candidate is what the candidate did, from the inputs.
	Candidate CandidateStats
	// TicketsLeft is how many tickets the roles held as the run ended.
	TicketsLeft int
	// Ended is the session_end effect's reason, "" until one comes. A host
	// sets it as the effect comes, so a result without Records (a lean dry
	// run's) still says how the session ended.
	Ended string
}

// EndReason is why the run's session ended, or "dryrun" for a run that
// stopped with the session still going.
func (r *Result) EndReason() string {
	if r.Ended != "" {
		return r.Ended
	}
	if n := len(r.Records); n > 0 && r.Records[n-1].Type == engine.EffectSessionEnd {
		return r.Records[n-1].Reason
	}
	return "dryrun"
}

// Step is what one input produced.
type Step struct {
	Effects []engine.Effect
	Err     error
}

// CandidateStats count what the candidate did in a run.
type CandidateStats struct {
	// Messages is how many candidate_message events it sent.
	Messages int `json:"messages"`
	// TalkMS is how long its mic was on.
	TalkMS int64 `json:"talk_ms"`
	// CutMS is, by role, how much of the agents' speech its barge-ins
	// cut off: a role's talk time is its lines' SpeechMS less this.
	// Records keep the time a line would have taken, as they were given
	// when it was said; an interrupted speech_done input says where it
	// stopped.
	CutMS map[string]int64 `json:"cut_ms,omitempty"`
}

// WorkspaceFile is one file of the simulated client's workspace as a
// run ended.
type WorkspaceFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}
