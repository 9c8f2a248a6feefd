package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/record"
)

// A what-if plays a recorded session again through another pack, on a
// simulated clock as a dry run does. What the world did is replayed at the
// times it happened; what answered the engine's own requests is reused
// only where the new run asks exactly what the recording asked, because
// an answer belongs to its question:
//
//   - replayed: candidate events, the human's side, at their recorded
//     times (less the change events a client reported after the engine's
//     own write, which the what-if's client reports for its own writes);
//   - reused when the request is identical: model answers (the request's
//     JSON, its id aside), each recorded answer once, in order, after its
//     recorded latency; any other request goes to the fallback model;
//   - simulated: speech playback, client tool results and their change
//     events, and the host's clock (advance and prepare inputs); pack
//     scripts run anew, offline as in a dry run: to completion, stopped
//     only at script.ReplayBudget;
//   - where the recording stops: an end request ends the what-if at the
//     same time, and a recording that stops without the session's end
//     (the server stopped, the log was cut short) ends it at its last
//     input, so the silence after a recording stops is never counted as
//     the pack's; WhatIf.Notes says so;
//   - not replayed, said in WhatIf.Notes: a live voice session's lines
//     and tool calls, which were a model speaking.

// WhatIfOptions configure a what-if.
type WhatIfOptions struct {
	// Model answers the requests the recording holds no answer for; nil
	// is the new pack's scripted model, as in a dry run.
	Model llm.Answerer
	// Replies script the scripted model, as a dry run's do.
	Replies []dryrun.Reply
}

// WhatIf is a recorded session played again through another pack.
type WhatIf struct {
	Recorded *Recording
	// Pack is the pack the session was played through, Result the run.
	Pack   *rules.Pack
	Result *record.Result
	// Reused counts the model answers taken from the recording, Asked
	// those the fallback model gave.
	Reused, Asked int
	// Notes say what the recording held that the what-if could not
	// replay, so a reader knows where it departs from the recording for
	// reasons other than the pack.
	Notes []string
}

// WhatIf plays the recording's session again through p. The run is
// deterministic for a deterministic fallback model: the same recording and
// pack give the same result.
func (r *Recording) WhatIf(ctx context.Context, p *rules.Pack, opt WhatIfOptions) (*WhatIf, error) {
	do, m, notes := r.options(p, opt)
	res, err := dryrun.RunContext(ctx, p, do)
	if err != nil {
		return nil, fmt.Errorf("%s: playing session %s through pack %s %.12s: %w", r.Path, r.Session.ID, p.Name, p.Hash, err)
	}
	return &WhatIf{Recorded: r, Pack: p, Result: res, Reused: m.reused, Asked: m.asked, Notes: notes}, nil
}

// options are the dry run that plays the recording through p, with the
// model that counts the answers it reused, and the notes on what it
// cannot replay.
func (r *Recording) options(p *rules.Pack, opt WhatIfOptions) (dryrun.Options, *recordedModel, []string) {
	evs, end, notes := r.worldEvents()
	fallback := opt.Model
	if fallback == nil {
		fallback = sim.NewModel(p, opt.Replies, -1).Offline()
	}
	m := newRecordedModel(r.Result, fallback)
	return dryrun.Options{Events: evs, Model: m, Seed: r.Session.Seed, End: end}, m, notes
}

// EndStopped is the reason a what-if gives the end request that stops it
// where a recording stops without the session's end.
const EndStopped = "the recording stops here"

// worldEvents are the recording's candidate events that the what-if
// replays, where it ends the session (nil: where the pack does), and
// notes on the inputs it cannot replay.
func (r *Recording) worldEvents() ([]events.Timed, *dryrun.EndAt, []string) {
	var (
		evs                           []events.Timed
		end                           *dryrun.EndAt
		notes                         []string
		reports, results, live, spoke int
	)
	ins := r.Result.Inputs
	onChange := r.Pack.Workspace.OnChange.Val
	for i, in := range ins {
		switch in.Type {
		case engine.InputCandidate:
			if in.Candidate == nil {
				continue
			}
			if onChange != "" && in.Candidate.Type == onChange && i > 0 && writeResult(&ins[i-1], in.T) {
				reports++
				continue
			}
			evs = append(evs, events.Timed{T: in.T, Event: *in.Candidate})
		case engine.InputClientToolResult:
			results++
		case engine.InputToolCall, engine.InputAgentTranscript:
			live++
		case engine.InputEnd:
			why, reason := "no reason given", ""
			if in.End != nil && in.End.Reason != "" {
				why, reason = in.End.Reason, in.End.Reason
			}
			if end == nil {
				end = &dryrun.EndAt{T: in.T, Reason: reason}
				notes = append(notes, fmt.Sprintf("the session was ended from outside at %s (%s); the what-if ends it there too", rules.FormatClock(in.T), why))
			}
		}
	}
	if last := len(ins) - 1; end == nil && !r.Session.Ended && last >= 0 {
		end = &dryrun.EndAt{T: ins[last].T, Reason: EndStopped}
		notes = append(notes, fmt.Sprintf("the recording stops at %s without the session's end; the what-if ends there too, so nothing after it counts as the pack's", rules.FormatClock(ins[last].T)))
	}
	budget := 0
	for i := range r.Result.Records {
		if rec := &r.Result.Records[i]; rec.Type == engine.EffectScriptError && rec.Kind == engine.ScriptBudget {
			budget++
		}
	}
	if budget > 0 {
		notes = append(notes, fmt.Sprintf("%d pack script call(s) were stopped at their time budget in the recording; the what-if runs its scripts anew, offline, where only a runaway is stopped", budget))
	}
	voice := sim.NewVoice(r.Pack)
	for i := range r.Result.Records {
		rec := &r.Result.Records[i]
		if rec.Type == engine.EffectAgentMessage && rec.SpeechMS != voice.Duration(rec.Agent, rec.Text) {
			spoke++
		}
	}
	if results > 0 {
		n := fmt.Sprintf("%d client tool result(s) were recorded; the what-if's calls are answered by the simulated client on the pack's workspace", results)
		if reports > 0 {
			n += fmt.Sprintf(", which also reports its own writes (%d recorded change event(s) after writes are not replayed)", reports)
		}
		notes = append(notes, n)
	}
	if live > 0 {
		notes = append(notes, fmt.Sprintf("%d live voice input(s) (a live session's lines and tool calls) are a model's and are not replayed", live))
	}
	if spoke > 0 {
		notes = append(notes, fmt.Sprintf("%d recorded line(s) played for another time than the simulated voice gives them; the what-if times every line with the simulated voice", spoke))
	}
	return evs, end, notes
}

// writeResult reports that in is a client's successful answer at t: the
// write whose change event follows it.
func writeResult(in *engine.Input, t int64) bool {
	return in.Type == engine.InputClientToolResult && in.T == t && in.ClientTool != nil && !in.ClientTool.IsError
}

// recordedAnswer is a recorded model answer and when it came.
type recordedAnswer struct {
	res     engine.LLMResult
	afterMS int64
	never   bool
}

// recordedModel answers a request the recording made too with the
// recording's answer, and any other with the fallback.
type recordedModel struct {
	mu            sync.Mutex
	answers       map[string][]recordedAnswer
	next          llm.Answerer
	reused, asked int
}

func newRecordedModel(res *record.Result, next llm.Answerer) *recordedModel {
	type got struct {
		t   int64
		res engine.LLMResult
	}
	results := map[string]got{}
	for _, in := range res.Inputs {
		if in.Type != engine.InputLLMResult || in.LLM == nil {
			continue
		}
		if _, seen := results[in.LLM.ID]; !seen {
			results[in.LLM.ID] = got{t: in.T, res: *in.LLM}
		}
	}
	m := &recordedModel{answers: map[string][]recordedAnswer{}, next: next}
	for _, st := range res.Steps {
		for i := range st.Effects {
			e := &st.Effects[i]
			if e.Type != engine.EffectLLMRequest || e.Request == nil {
				continue
			}
			a := recordedAnswer{}
			if g, ok := results[e.ID]; ok {
				a.res, a.afterMS = g.res, max(g.t-e.T, 0)
			} else if e.Request.TimeoutMS > 0 && res.EndMS >= e.T+e.Request.TimeoutMS {
				// The recording went on past the request's timeout with no
				// answer: the model never answered it.
				a.never = true
			} else {
				continue // the recording stopped before it could say
			}
			k := requestKey(e.Request)
			m.answers[k] = append(m.answers[k], a)
		}
	}
	return m
}

// requestKey is what makes two requests the same question: the request's
// JSON, which holds everything the model is sent (an effect's id is not
// part of it). Effects are plain data, so the JSON is canonical.
func requestKey(req *engine.LLMRequest) string {
	b, err := json.Marshal(req)
	if err != nil {
		return "" // plain data does not fail to encode; "" then matches nothing recorded
	}
	return string(b)
}

func (m *recordedModel) Answer(ctx context.Context, id string, req *engine.LLMRequest) llm.Answer {
	k := requestKey(req)
	m.mu.Lock()
	if q := m.answers[k]; k != "" && len(q) > 0 {
		a := q[0]
		m.answers[k] = q[1:]
		m.reused++
		m.mu.Unlock()
		// A scripted model rotates its lines by what it was asked: it
		// sees the reused requests too, so its later answers are the
		// ones a dry run of the pack would give.
		if w, ok := m.next.(llm.Warmer); ok {
			w.Warm(id, req)
		}
		res := a.res
		res.ID = id
		return llm.Answer{Result: res, After: time.Duration(a.afterMS) * time.Millisecond, Never: a.never}
	}
	m.asked++
	m.mu.Unlock()
	return m.next.Answer(ctx, id, req)
}
