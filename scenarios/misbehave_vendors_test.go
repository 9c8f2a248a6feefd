package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/anthropic"
	"github.com/batonhq/baton/runtime/llm/anthropic/anthropicfake"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/llm/gemini/geminifake"
	"github.com/batonhq/baton/runtime/llm/llmtest"
	"github.com/batonhq/baton/runtime/llm/openai"
	"github.com/batonhq/baton/runtime/llm/openai/openaifake"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

// wireVendors are the vendors the matrix rotates through.
var wireVendors = []string{"gemini", "openai", "anthropic"}

// TestMisbehaviourThroughVendors is TestMisbehaviourMatrix on the wire:
// the simulated model decides each answer, misbehaving as the row says,
// and a strict fake of a vendor's API sends it as that vendor would (its
// text, tool calls and finish reason in the vendor's spelling, a rate
// limit as a 429 with the vendor's retry hint), to the vendor's official
// SDK behind llm.Turns under the pack's retry policy. Each row runs on
// one vendor, the vendors rotating so that each sees every misbehaviour
// over the packs (BATON_VENDOR_MATRIX=all runs every row on every
// vendor: three times the rows, some 14 s of CPU against 4); a role that names its provider (The Brain's) is
// routed to that vendor's fake, as vendors.ForPack routes it. Waits run
// on a skipping clock: a retry's 2 s cost no real time but place the
// answer 2 s later. A row fails on what the candidate would notice
// (checkSession), on any request a fake refused, and on a retry sent
// before the vendor's hint allowed. BATON_MISBEHAVE_DUMP=1 prints the
// timeline of a failing row.
func TestMisbehaviourThroughVendors(t *testing.T) {
	rows := append(slices.Clone(dryrun.MisbehaviourNames), "mixed")
	all := os.Getenv("BATON_VENDOR_MATRIX") == "all"
	for pi, name := range scenarios.Names() {
		p, evs := loadBundled(t, name)
		for ri, row := range rows {
			vendors := []string{wireVendors[(pi+ri)%len(wireVendors)]}
			if all {
				vendors = wireVendors
			}
			for _, vendor := range vendors {
				t.Run(name+"/"+row+"/"+vendor, func(t *testing.T) {
					t.Parallel()
					mis := &dryrun.Misbehave{Names: []string{row}, Seed: 1}
					if row == "mixed" {
						mis = &dryrun.Misbehave{Seed: 1}
					}
					w := startWire(t, p, vendor, mis)
					res, err := dryrun.Run(p, dryrun.Options{Events: evs, Seed: 1, Model: w})
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range w.problems() {
						t.Error(e)
					}
					probs := checkSession(p, res.Records)
					for _, pr := range probs {
						t.Error(pr)
					}
					t.Logf("%d calls on the wire, %d retried after a rate limit", w.calls, w.retried)
					if w.calls == 0 {
						t.Error("no request reached a vendor")
					}
					if row == misRateLimit && w.retried == 0 {
						t.Error("no call was rate limited and retried")
					}
					if (len(probs) > 0 || t.Failed()) && os.Getenv("BATON_MISBEHAVE_DUMP") != "" {
						_ = record.WriteText(os.Stderr, res.Records, record.FormatOptions{Verbose: true})
					}
				})
			}
		}
	}
}

// wire is the bridge of one row: an llm.Answerer that asks the simulated
// model what to answer, scripts the vendor fakes with it and gets the
// answer through llm.Turns and the vendor's SDK.
type wire struct {
	sim   *dryrun.SimulatedModel
	turns *llm.Turns
	clock *clocktest.Skip
	// received lists, per vendor, what its fake received.
	received map[string]func() []llmtest.Received

	mu     sync.Mutex
	script []llmtest.Reply // what the fakes answer next, in order
	served []served        // what they answered to the current call
	errs   []string

	calls, retried int
}

// served is one reply a fake sent, when on the row's clock, and by which
// vendor.
type served struct {
	vendor string
	at     time.Time
	reply  llmtest.Reply
}

// startWire starts the three vendors' fakes for a row of p whose default
// vendor is vendor, and the bridge that feeds them.
func startWire(t *testing.T, p *rules.Pack, vendor string, mis *dryrun.Misbehave) *wire {
	ctx := context.Background()
	w := &wire{
		sim:      dryrun.NewSimulatedModel(p, mis),
		clock:    clocktest.NewSkip(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)),
		received: map[string]func() []llmtest.Received{},
	}
	models := map[string]llm.Model{}

	gs := geminifake.New(func(*geminifake.Request) geminifake.Reply { return geminifake.Render(w.next("gemini")) })
	t.Cleanup(gs.Close)
	gm, err := gemini.New(ctx, gemini.Config{APIKey: gs.APIKey, BaseURL: gs.URL})
	if err != nil {
		t.Fatal(err)
	}
	models["gemini"] = gm
	w.received["gemini"] = func() []llmtest.Received {
		return gs.Neutral(func(*geminifake.Request) llmtest.View { return llmtest.View{} })
	}

	oas := openaifake.New(func(*openaifake.Request) openaifake.Reply { return openaifake.Render(w.next("openai")) })
	t.Cleanup(oas.Close)
	om, err := openai.New(ctx, openai.Config{APIKey: oas.APIKey, BaseURL: oas.URL})
	if err != nil {
		t.Fatal(err)
	}
	models["openai"] = om
	w.received["openai"] = func() []llmtest.Received { return oas.Neutral((*openaifake.Request).View) }

	as := anthropicfake.Start(anthropicfake.Config{
		Behavior:    func(*anthropicfake.Request) anthropicfake.Reply { return anthropicfake.Render(w.next("anthropic")) },
		Alternating: true,
	})
	t.Cleanup(as.Close)
	am, err := anthropic.New(ctx, anthropic.Config{APIKey: as.APIKey, BaseURL: as.URL})
	if err != nil {
		t.Fatal(err)
	}
	models["anthropic"] = am
	w.received["anthropic"] = func() []llmtest.Received { return as.Neutral((*anthropicfake.Request).View) }

	w.turns = llm.ForPack(byProvider{models: models, fallback: vendor}, p, w.clock)
	return w
}

// byProvider routes a request to its provider's model, as vendors.Router
// does, and one that names none to the row's vendor.
type byProvider struct {
	models   map[string]llm.Model
	fallback string
}

func (r byProvider) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	name := req.Provider
	if name == "" {
		name = r.fallback
	}
	m, ok := r.models[name]
	if !ok {
		return llm.Response{}, fmt.Errorf("no fake for provider %q", name)
	}
	return m.Generate(ctx, req)
}

// next is what a fake answers the request it just received.
func (w *wire) next(vendor string) llmtest.Reply {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.script) == 0 {
		w.errs = append(w.errs, fmt.Sprintf("%s received a request nothing scripted", vendor))
		return llmtest.Fail(500)
	}
	r := w.script[0]
	w.script = w.script[1:]
	w.served = append(w.served, served{vendor: vendor, at: w.clock.Now(), reply: r})
	return r
}

func (w *wire) problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.errs)
	for _, v := range wireVendors {
		for i, r := range w.received[v]() {
			if r.Err != nil {
				out = append(out, fmt.Sprintf("%s refused request %d: %v", v, i+1, r.Err))
			}
		}
	}
	return out
}

func (w *wire) errorf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

// Answer implements llm.Answerer.
func (w *wire) Answer(ctx context.Context, id string, req *engine.LLMRequest) llm.Answer {
	sim, struck := w.sim.Answer(ctx, id, req)
	if sim.Never {
		return sim
	}
	limited := slices.Contains(struck, misRateLimit)
	hint := time.Duration(dryrun.RetryAfterMS) * time.Millisecond
	var script []llmtest.Reply
	if limited {
		script = append(script, llmtest.Throttle(hint))
	}
	switch {
	case sim.Result.Err == nil:
		script = append(script, neutralReply(req, sim.Result))
	case !limited:
		w.errorf("%s: the simulated model failed without a rate limit: %v", id, sim.Result.Err)
		return sim
	}
	w.mu.Lock()
	w.script, w.served = script, nil
	w.calls++
	w.mu.Unlock()

	got := w.turns.Answer(ctx, id, req)

	w.mu.Lock()
	left, srv := w.script, w.served
	w.script, w.served = nil, nil
	w.mu.Unlock()
	if len(left) > 0 {
		w.errorf("%s: %d scripted answer(s) never asked for (served %d); result %+v", id, len(left), len(srv), got.Result.Err)
	}
	if limited && len(srv) == 2 {
		w.mu.Lock()
		w.retried++
		w.mu.Unlock()
		if gap := srv[1].at.Sub(srv[0].at); gap < hint {
			w.errorf("%s: retried %v after a 429 asking for %v", id, gap, hint)
		}
		if got.After < hint {
			w.errorf("%s: answered %v after the request, before the %v the retry waited", id, got.After, hint)
		}
	}
	if d := resultDiff(sim.Result, got.Result); d != "" {
		w.errorf("%s: the engine got other than the model sent: %s", id, d)
	}
	// The model's own latency, which the fake does not spend: the
	// simulated answer's delay, less the rate limit's wait that the
	// retry policy spent on the clock.
	lat := sim.After
	if limited && sim.Result.Err == nil {
		lat -= hint
	}
	got.After += lat
	return got
}

// neutralReply is the simulated model's result as a vendor would send
// it: a turn's intent tag in the reply object llm.ParseReply reads, the
// tool calls as the vendor's function calls, the finish reason.
func neutralReply(req *engine.LLMRequest, res engine.LLMResult) llmtest.Reply {
	r := llmtest.Reply{Text: res.Text, Finish: res.Finish}
	if res.IntentTag != "" && req.Job == "" && req.Sequence == nil {
		b, _ := json.Marshal(map[string]string{"text": res.Text, "intent_tag": res.IntentTag})
		r.Text = string(b)
	}
	for _, c := range res.ToolCalls {
		args := c.Args
		if len(strings.TrimSpace(string(args))) == 0 {
			args = json.RawMessage(`{}`)
		}
		r.Calls = append(r.Calls, llmtest.Call{ID: c.ID, Name: c.Name, Args: args})
	}
	return r
}

// misRateLimit is the simulated model's rate limit, by its name.
const misRateLimit = "rate_limit"

// resultDiff says how the result the engine got from the wire differs
// from the one the simulated model meant, "" when in nothing it reads:
// text, intent tag, finish reason, tool calls and the failure's kind.
func resultDiff(want, got engine.LLMResult) string {
	var d []string
	if (want.Err == nil) != (got.Err == nil) || (want.Err != nil && want.Err.Kind != got.Err.Kind) {
		d = append(d, fmt.Sprintf("error %v, want %v", got.Err, want.Err))
	}
	if want.Err != nil {
		return strings.Join(d, "; ")
	}
	if strings.TrimSpace(got.Text) != strings.TrimSpace(want.Text) {
		d = append(d, fmt.Sprintf("text %.60q, want %.60q", got.Text, want.Text))
	}
	if got.IntentTag != want.IntentTag {
		d = append(d, fmt.Sprintf("intent tag %q, want %q", got.IntentTag, want.IntentTag))
	}
	if got.Finish != want.Finish {
		d = append(d, fmt.Sprintf("finish %q, want %q", got.Finish, want.Finish))
	}
	if len(got.ToolCalls) != len(want.ToolCalls) {
		d = append(d, fmt.Sprintf("%d tool calls, want %d", len(got.ToolCalls), len(want.ToolCalls)))
	} else {
		for i, g := range got.ToolCalls {
			c := want.ToolCalls[i]
			if g.ID != c.ID || g.Name != c.Name || !sameJSON(g.Args, c.Args) {
				d = append(d, fmt.Sprintf("tool call %d %s %s(%s), want %s %s(%s)", i+1, g.ID, g.Name, g.Args, c.ID, c.Name, c.Args))
			}
		}
	}
	return strings.Join(d, "; ")
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
