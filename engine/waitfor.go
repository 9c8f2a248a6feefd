package engine

import (
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// waits holds the starts of jobs that wait for other jobs (wait_for: a
// verdict waiting for the grades still being written). A start waits
// while a run of any job it names is in flight, at most its max: it
// starts when the last of them lands, or when the max runs out, then
// with args.missing naming the runs it did not wait for and a note
// saying so.
type waits struct {
	held []*heldStart
}

// heldStart is one start of a job waiting for others.
type heldStart struct {
	key     string
	job     *rules.Job
	args    map[string]any
	overlap rules.JobOverlap
	rule    string
}

// hold reports whether a start of job must wait, and holds it if so.
func (w *waits) hold(s *Session, job *rules.Job, args map[string]any, overlap rules.JobOverlap, rule string) bool {
	if job.WaitFor == nil || len(s.waitedRuns(job)) == 0 {
		return false
	}
	h := &heldStart{key: s.nextID('w'), job: job, args: args, overlap: overlap, rule: rule}
	w.held = append(w.held, h)
	s.emit(Effect{Type: EffectNote, Rule: rule, Kind: "wait_for", ID: h.key,
		Reason: "job " + job.ID + " waits for " + runNames(s.waitedRuns(job)) + " (at most " + formatMS(job.WaitFor.Max.MS) + ")"})
	s.addTimer(timer{at: s.now + job.WaitFor.Max.MS, kind: tWaitFor, key: h.key})
	return true
}

// landed starts the held starts whose waited runs have all landed; the
// jobs feature calls it after each run's result or error.
func (w *waits) landed(s *Session) {
	for i := 0; i < len(w.held) && !s.ended; {
		h := w.held[i]
		if len(s.waitedRuns(h.job)) > 0 {
			i++
			continue
		}
		w.held = slices.Delete(w.held, i, i+1)
		s.timers.cancel(tWaitFor, 0, h.key)
		s.jobs.run(s, h.job, h.args, h.overlap, false, h.rule)
	}
}

// gaveUp starts a held start whose max ran out, naming the runs still
// in flight: in a note, and to its prompt as args.missing (each run's
// job, role and args).
func (w *waits) gaveUp(s *Session, key string) {
	i := slices.IndexFunc(w.held, func(h *heldStart) bool { return h.key == key })
	if i < 0 {
		return
	}
	h := w.held[i]
	w.held = slices.Delete(w.held, i, i+1)
	runs := s.waitedRuns(h.job)
	missing := make([]any, 0, len(runs))
	for _, e := range runs {
		missing = append(missing, map[string]any{"job": e.job.ID, "role": e.role, "args": e.args})
	}
	s.emit(Effect{Type: EffectNote, Kind: NoteWarning, Rule: h.rule, ID: h.key,
		Reason: "job " + h.job.ID + " stopped waiting after " + formatMS(h.job.WaitFor.Max.MS) + "; still running: " + runNames(runs)})
	args := make(map[string]any, len(h.args)+1)
	for k, v := range h.args {
		args[k] = v
	}
	args["missing"] = missing
	s.jobs.run(s, h.job, args, h.overlap, false, h.rule)
}

// waitedRuns are the runs in flight of the jobs job waits for.
func (s *Session) waitedRuns(job *rules.Job) []jobEntry {
	var out []jobEntry
	for _, e := range s.jobs.running {
		if slices.Contains(job.WaitFor.Jobs, e.job.ID) {
			out = append(out, e)
		}
	}
	return out
}

// pending reports whether a start is held.
func (w *waits) pending() bool { return len(w.held) > 0 }

func runNames(runs []jobEntry) string {
	names := make([]string, len(runs))
	for i, e := range runs {
		names[i] = e.job.ID + " " + e.id
	}
	return strings.Join(names, ", ")
}
