package scenarios_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

func prompt(sec float64, runID, text string) events.Timed {
	return events.Timed{T: int64(sec * 1000), Event: engine.CandidateEvent{Type: "user_prompt", Text: text, RunID: runID}}
}

func cancel(sec float64, runID string) events.Timed {
	return events.Timed{T: int64(sec * 1000), Event: engine.CandidateEvent{Type: "cancel", RunID: runID}}
}

func runBrain(t testing.TB, evs []events.Timed, replies []dryrun.Reply) *record.Result {
	t.Helper()
	p, _ := loadBundled(t, "brain")
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sequenceRequests(res *record.Result) []*engine.LLMRequest {
	var out []*engine.LLMRequest
	for _, r := range requests(res) {
		if r.Sequence != nil {
			out = append(out, r)
		}
	}
	return out
}

// The contract's budget: every call's context, prompt included, stays
// within 12,000 characters; the oldest exchanges go first, the prompt is
// never cut, and what was cut is reported.
func TestBrainContextBudget(t *testing.T) {
	long := func(who string) string { return "I am " + who + ". " + strings.Repeat("A long, careful answer. ", 20) }
	var evs []events.Timed
	for i := range 6 {
		evs = append(evs, prompt(float64(1+i*40), fmt.Sprintf("r%d", i), fmt.Sprintf("Question %d: %s", i, strings.Repeat("context ", 50))))
	}
	big := strings.Repeat("An enormous prompt. ", 650) // 13,000 characters
	evs = append(evs, prompt(300, "big", big))
	replies := []dryrun.Reply{
		{Role: "gpt", Repeat: true, Text: long("GPT") + "\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=long\n---"},
		{Role: "claude", Repeat: true, Text: long("Claude")},
		{Role: "gemini", Repeat: true, Text: "[NO_FURTHER_INPUT]"},
	}
	res := runBrain(t, evs, replies)
	reqs := sequenceRequests(res)
	if len(reqs) < 20 {
		t.Fatalf("only %d sequence calls", len(reqs))
	}
	prompts := map[string]string{}
	for _, ev := range evs {
		prompts[ev.Event.RunID] = ev.Event.Text
	}
	historyCut, bigSeen := 0, false
	for _, req := range reqs {
		if req.Prompt != prompts[req.Sequence.RunID] {
			t.Fatalf("call %s/%d: the prompt was changed", req.Sequence.RunID, req.Sequence.Call)
		}
		sent := len(req.Prompt)
		for _, f := range req.Files {
			sent += len(f.Text)
			if f.Path == "sequence/history" && f.Trimmed > 0 {
				historyCut++
				if f.Text != "" && !strings.Contains(f.Text, "## exchange ") {
					t.Errorf("history cut to no whole exchange: %.200q", f.Text)
				}
			}
		}
		if req.Sequence.RunID == "big" {
			bigSeen = true
			// The prompt alone is over the budget: it goes whole, the
			// context is cut to nothing and says so.
			for _, f := range req.Files {
				if f.Text != "" || f.Trimmed == 0 {
					t.Errorf("big prompt: %s sent %d chars, trimmed %d", f.Path, len(f.Text), f.Trimmed)
				}
			}
			continue
		}
		if sent > 12000 {
			t.Errorf("call %s/%d sends %d characters, over 12,000", req.Sequence.RunID, req.Sequence.Call, sent)
		}
		if req.MaxTokens != 1000 {
			t.Errorf("call %s/%d: max_tokens %d, want the contract's 1000", req.Sequence.RunID, req.Sequence.Call, req.MaxTokens)
		}
	}
	if historyCut == 0 || !bigSeen {
		t.Errorf("history cut in %d calls, big prompt seen %v", historyCut, bigSeen)
	}
}

// The rolling window: later calls see at most ten earlier exchanges.
func TestBrainRollingWindow(t *testing.T) {
	var evs []events.Timed
	for i := range 12 {
		evs = append(evs, prompt(float64(1+i*20), fmt.Sprintf("w%02d", i), "Quick one: what is 2+2?"))
	}
	res := runBrain(t, evs, nil)
	reqs := sequenceRequests(res)
	last := reqs[len(reqs)-1]
	var history string
	for _, f := range last.Files {
		if f.Path == "sequence/history" {
			history = f.Text
		}
	}
	if n := strings.Count(history, "## exchange "); n != 10 {
		t.Errorf("the last call sees %d exchanges, want 10:\n%s", n, history)
	}
	// The twelfth exchange sees the second to the eleventh.
	if strings.Contains(history, "## exchange w00\n") || !strings.Contains(history, "## exchange w01\n") || !strings.Contains(history, "## exchange w10\n") {
		t.Errorf("window holds the wrong exchanges:\n%s", history)
	}
}

// The contract's type invariants hold in every effect of many random
// sessions: prompts at random times (some while an exchange runs, some
// reusing a run id), cancels for the running run or a stale one, and
// answers that succeed, agree, fail in each way, come late or never.
func TestBrainInvariants(t *testing.T) {
	p, _ := loadBundled(t, "brain")
	statuses := []string{engine.StatusSuccess, engine.StatusTimeout, engine.StatusCancelled, engine.StatusError, engine.StatusSkipped}
	codes := []string{"network", "api", "rate_limit", "unknown"}
	seen := map[string]int{}
	for seed := range uint64(150) {
		evs, replies := randomBrainSession(seed)
		res, err := dryrun.Run(p, dryrun.Options{Events: evs, Replies: replies})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		fail := func(r *record.Record, format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, %s at %s: %s\n%s", seed, r.Kind, rules.FormatClock(r.T), fmt.Sprintf(format, args...), r.Data)
		}
		checkResponse := func(r *record.Record, a engine.AgentResponse) {
			seen[a.Status]++
			switch {
			case !slices.Contains(statuses, a.Status):
				fail(r, "status %q", a.Status)
			case a.Status == engine.StatusSuccess && a.Content == "":
				fail(r, "success without content")
			case a.Status == engine.StatusError && !slices.Contains(codes, a.ErrorCode):
				fail(r, "error with errorCode %q", a.ErrorCode)
			case a.Status != engine.StatusError && a.ErrorCode != "":
				fail(r, "%s with errorCode %q", a.Status, a.ErrorCode)
			case strings.Contains(a.Content, "CALL_CLAUDE") || strings.Contains(a.Content, "REASON_TAG"):
				fail(r, "the flag block was kept")
			}
		}
		open := map[string]bool{}
		ended := map[string]bool{}
		for i := range res.Records {
			r := &res.Records[i]
			if r.Type != engine.EffectSequence {
				continue
			}
			switch r.Kind {
			case engine.SeqAgentCompleted:
				var a engine.AgentResponse
				mustDecode(t, r.Data, &a)
				if !open[a.RunID] {
					fail(r, "for run %q, which is not running", a.RunID)
				}
				checkResponse(r, a)
			case engine.SeqAgentStarted:
				var a engine.AgentStarted
				mustDecode(t, r.Data, &a)
				if !open[a.RunID] || a.Call > 15 || a.Round > 5 {
					fail(r, "call %d, round %d of run %q (running %v)", a.Call, a.Round, a.RunID, open[a.RunID])
				}
			case engine.SeqStart:
				var x engine.Exchange
				mustDecode(t, r.Data, &x)
				if len(open) > 0 || ended[x.RunID] {
					fail(r, "run %q started while %v run or after it ended", x.RunID, open)
				}
				open[x.RunID] = true
			case engine.SeqCompleted, engine.SeqCancelled, engine.SeqTimeout:
				var x engine.Exchange
				mustDecode(t, r.Data, &x)
				if !open[x.RunID] || len(x.Rounds) > 5 || x.Calls > 15 {
					fail(r, "run %q: %d rounds, %d calls", x.RunID, len(x.Rounds), x.Calls)
				}
				for _, rd := range x.Rounds {
					for _, a := range rd.Responses {
						checkResponse(r, a)
					}
				}
				delete(open, x.RunID)
				ended[x.RunID] = true
			}
		}
		if len(open) > 0 {
			t.Fatalf("seed %d: runs never ended: %v", seed, open)
		}
	}
	for _, st := range statuses {
		if seen[st] == 0 {
			t.Errorf("no random session produced status %s: the property is not exercised (%v)", st, seen)
		}
	}
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// randomBrainSession is a user and a model drawn from seed.
func randomBrainSession(seed uint64) ([]events.Timed, []dryrun.Reply) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var evs []events.Timed
	at := 0.0
	ids := []string{"a", "b", "c", "d", "e"}
	for range 2 + rng.IntN(6) {
		at += float64(rng.IntN(60)) + 0.5
		id := ids[rng.IntN(len(ids))]
		if rng.IntN(4) == 0 {
			evs = append(evs, cancel(at, ids[rng.IntN(len(ids))]))
			continue
		}
		evs = append(evs, prompt(at, id, "Question "+id))
	}
	texts := []string{
		"I am GPT. Yes.\n---\nCALL_CLAUDE=true\nCALL_GEMINI=false\nREASON_TAG=r\n---",
		"I am GPT. No flags this time.",
		"I am GPT.\n---\nCALL_CLAUDE=perhaps\n---",
		"---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=only\n---",
		"[NO_FURTHER_INPUT]", "[NO_FURTHER_INPUT]", "An answer.", "  ",
		"I am GPT.\n---\nCALL_CLAUDE=false\nCALL_GEMINI=false\nREASON_TAG=mid\n---\nHope that helps!",
		"I am Claude.\nREASON_TAG=copied\nDone.",
	}
	errs := []string{"rate_limit", "server", "bad_request", "network", "unknown", "timeout", "canceled"}
	var replies []dryrun.Reply
	for call := 1; call <= 120; call++ {
		r := dryrun.Reply{Call: call}
		delay := int64(rng.IntN(40_000))
		r.DelayMS = &delay
		switch rng.IntN(10) {
		case 0:
			r.Error = errs[rng.IntN(len(errs))]
		case 1:
			r.NoReply = true
		default:
			r.Text = texts[rng.IntN(len(texts))]
		}
		replies = append(replies, r)
	}
	return evs, replies
}

// Same user, same answers: the same effects, byte for byte.
func TestBrainDeterministic(t *testing.T) {
	p, evs := loadBundled(t, "brain")
	var runs [2][]byte
	for i := range runs {
		res, err := dryrun.Run(p, dryrun.Options{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := record.WriteJSONL(&b, res.Records, record.FormatOptions{Verbose: true}); err != nil {
			t.Fatal(err)
		}
		runs[i] = b.Bytes()
	}
	if !bytes.Equal(runs[0], runs[1]) {
		t.Error("two runs of the same session differ")
	}
}
