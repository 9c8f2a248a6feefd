package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/live"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// juror is an in-memory live session playing a Hot Seat juror: it asks its
// question when connected, hands over (or ends the panel) once it hears an
// answer, and acts on a refused transfer by picking an available juror.
type juror struct {
	name   string
	cfg    voice.LiveConfig
	events chan voice.Event
	mu     sync.Mutex
	closed bool
	calls  int
	log    *[]string
	logMu  *sync.Mutex
}

var order = []string{"marcus", "priya", "james"}

func (j *juror) send(ev voice.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		j.events <- ev
	}
}

func (j *juror) note(s string) {
	j.logMu.Lock()
	*j.log = append(*j.log, j.name+": "+s)
	j.logMu.Unlock()
}

func (j *juror) SendAudio([]byte, string) error { return nil }

// SendText plays the candidate: typed words come back as a final transcript.
func (j *juror) SendText(text string) error {
	j.send(voice.Event{Kind: voice.EventUserTranscript, Text: text, Final: true})
	return nil
}

func (j *juror) tool(name string, args map[string]any) {
	j.calls++
	raw, _ := json.Marshal(args)
	j.note("calls " + name + " " + string(raw))
	j.send(voice.Event{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("%s-%d", j.name, j.calls), Name: name, Args: raw}}})
}

func (j *juror) SendToolResponse(results []llm.ToolResult) error {
	for _, r := range results {
		j.note(fmt.Sprintf("result %s error=%v %s", r.Name, r.IsError, r.Content))
		var refusal struct {
			Choices struct{ Colleague []string } `json:"choices"`
		}
		if r.IsError && json.Unmarshal(r.Content, &refusal) == nil && len(refusal.Choices.Colleague) > 0 {
			j.tool("transfer", map[string]any{"colleague": refusal.Choices.Colleague[0], "reason": "retry", "summary": "s"})
		}
	}
	return nil
}

func (j *juror) Events() <-chan voice.Event { return j.events }

func (j *juror) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		j.closed = true
		close(j.events)
	}
	return nil
}

// hears is the candidate's answer arriving: the juror hands over.
func (j *juror) hears() {
	var tools []string
	for _, t := range j.cfg.Tools {
		tools = append(tools, t.Name)
	}
	switch {
	case slices.Contains(tools, "endPanel"):
		j.send(voice.Event{Kind: voice.EventAgentText, Text: "Thank you, that concludes the panel."})
		j.send(voice.Event{Kind: voice.EventTurnComplete})
		j.tool("endPanel", map[string]any{})
	case slices.Contains(tools, "transfer"):
		// Always try James next first; once he is finished, the refusal names
		// who may be called (the tool's enum).
		next := "james"
		if j.name == "james" {
			next = "marcus"
		}
		j.tool("transfer", map[string]any{"colleague": next, "reason": "answered", "summary": "ok"})
	}
}

type connector struct {
	mu       sync.Mutex
	sessions []*juror
	log      []string
	logMu    sync.Mutex
}

var roleRE = regexp.MustCompile(`You are (\w+)`)

func (c *connector) Connect(_ context.Context, cfg voice.LiveConfig) (voice.LiveSession, error) {
	name := "?"
	for _, o := range order {
		if strings.Contains(strings.ToLower(cfg.System), "you are "+o) || strings.Contains(cfg.System, "To: "+o) {
			name = o
		}
	}
	if m := roleRE.FindStringSubmatch(cfg.System); m != nil && name == "?" {
		name = strings.ToLower(m[1])
	}
	j := &juror{name: name, cfg: cfg, events: make(chan voice.Event, 64), log: &c.log, logMu: &c.logMu}
	c.mu.Lock()
	c.sessions = append(c.sessions, j)
	c.mu.Unlock()
	j.note("connected with tools " + fmt.Sprint(len(cfg.Tools)))
	q := "My question?"
	if m := regexp.MustCompile(`Your question[^:]*: (.*)`).FindStringSubmatch(cfg.System); m != nil {
		q = m[1]
	}
	j.send(voice.Event{Kind: voice.EventAgentText, Text: q})
	j.send(voice.Event{Kind: voice.EventTurnComplete})
	return j, nil
}

func (c *connector) current() *juror {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[len(c.sessions)-1]
}

// TestHotSeatOverLiveSessions runs the Hot Seat pack in live-voice mode:
// every juror is a live session; the engine moves the floor on transfer
// calls that arrive from those sessions, refuses a transfer to a finished
// juror, answers each call, and ends with the verdict.
func TestHotSeatOverLiveSessions(t *testing.T) {
	p, err := rules.Load(os.DirFS("../../scenarios/hotseat"), ".")
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{VoiceMode: "live"})
	model := sim.NewModel(p, nil, -1)
	conn := &connector{}
	inputs := make(chan engine.Input, 1024)
	b := &live.Bridge{Connector: conn, Deliver: func(in engine.Input) { inputs <- in }}
	defer b.Close()

	var (
		now       int64
		out       []engine.Effect
		all       []engine.Effect
		pending   []engine.Input // model answers, delivered on later steps
		lastAgent int
	)
	ctx := context.Background()
	step := func(in engine.Input) {
		now += 500
		in.T = now
		var err error
		out, err = s.Step(in, out[:0])
		if err != nil && err != engine.ErrEnded {
			t.Fatalf("step %+v: %v", in, err)
		}
		for _, e := range out {
			all = append(all, e)
			if e.Type == engine.EffectLLMRequest {
				a := model.Answer(ctx, e.ID, e.Request)
				pending = append(pending, engine.Input{Type: engine.InputLLMResult, LLM: &a.Result})
			}
			if err := b.Handle(ctx, e); err != nil {
				t.Fatalf("bridge: %v", err)
			}
		}
	}
	step(engine.Input{Type: engine.InputAdvance})
	deadline := time.After(10 * time.Second)
	for !s.Ended() {
		if len(pending) > 0 {
			in := pending[0]
			pending = pending[1:]
			step(in)
			continue
		}
		select {
		case in := <-inputs:
			step(in)
			if in.Type == engine.InputAgentTranscript {
				lastAgent++
				// The juror asked; the candidate answers, and the juror
				// reacts to the answer.
				j := conn.current()
				j.SendText(fmt.Sprintf("Answer %d: we keep a rollback flag.", lastAgent))
				go func() { time.Sleep(time.Millisecond); j.hears() }()
			}
		case <-deadline:
			t.Fatalf("panel did not finish; effects so far:\n%s\nsessions:\n%s", dump(all), strings.Join(conn.log, "\n"))
		}
	}

	var handoffs []string
	var refusals, verdicts, lives int
	for _, e := range all {
		switch e.Type {
		case engine.EffectHandoff:
			handoffs = append(handoffs, e.Agent)
		case engine.EffectToolResult:
			if e.IsError {
				refusals++
			}
		case engine.EffectReport:
			if e.Kind == "verdict" {
				verdicts++
			}
		case engine.EffectLiveSession:
			lives++
			if len(e.Data) == 0 || !strings.Contains(e.Text, "You are") {
				t.Errorf("live_session without instructions or tools: %+v", e)
			}
		case engine.EffectLLMRequest:
			if e.Request.Job == "" {
				t.Errorf("live voice must not generate juror turns: %+v", e)
			}
		}
	}
	if verdicts != 1 || refusals == 0 || lives != len(handoffs) || len(handoffs) < 4 {
		t.Fatalf("handoffs=%v refusals=%d verdicts=%d live_sessions=%d\n%s\nsessions:\n%s", handoffs, refusals, verdicts, lives, dump(all), strings.Join(conn.log, "\n"))
	}
	// The final juror was offered endPanel only.
	last := conn.current()
	if len(last.cfg.Tools) != 1 || last.cfg.Tools[0].Name != "endPanel" || !strings.Contains(last.cfg.System, "FINAL juror") {
		t.Fatalf("final juror config: tools=%v system=%q", last.cfg.Tools, last.cfg.System)
	}
}

func dump(effs []engine.Effect) string {
	var b strings.Builder
	for _, e := range effs {
		if e.Type == engine.EffectLLMRequest {
			continue
		}
		fmt.Fprintf(&b, "%s %s %s %s %s %s\n", rules.FormatClock(e.T), e.Type, e.Agent, e.Kind, e.Reason, e.Data)
	}
	return b.String()
}
