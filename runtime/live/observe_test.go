package live_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/live"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// pushed is a live session whose events the test pushes.
type pushed struct {
	events chan voice.Event
	once   sync.Once
}

func (p *pushed) SendAudio([]byte, string) error          { return nil }
func (p *pushed) SendText(string) error                   { return nil }
func (p *pushed) SendToolResponse([]llm.ToolResult) error { return nil }
func (p *pushed) Events() <-chan voice.Event              { return p.events }
func (p *pushed) Close() error                            { p.once.Do(func() { close(p.events) }); return nil }

func (p *pushed) push(evs ...voice.Event) {
	for _, ev := range evs {
		p.events <- ev
	}
}

func (c *pushConnector) Connect(context.Context, voice.LiveConfig) (voice.LiveSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &pushed{events: make(chan voice.Event, 16)}
	c.sessions = append(c.sessions, s)
	return s, nil
}

type pushConnector struct {
	mu       sync.Mutex
	sessions []*pushed
}

func (c *pushConnector) session(i int) *pushed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[i]
}

// A host observing the bridge sees every event of the floor holder's
// session, with its role and before the input it makes, and nothing of a
// session the engine replaced; what the engine gets is what it got
// without an observer.
func TestObserve(t *testing.T) {
	var (
		mu      sync.Mutex
		got     []string
		reached = make(chan struct{})
		release = make(chan struct{})
	)
	note := func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}
	conn := &pushConnector{}
	b := &live.Bridge{
		Connector: conn,
		Deliver: func(in engine.Input) {
			switch {
			case in.Agent != nil:
				note(fmt.Sprintf("deliver %s says %q", in.Agent.Role, in.Agent.Text))
			case in.Candidate != nil:
				note(fmt.Sprintf("deliver candidate %q", in.Candidate.Text))
			case in.Tool != nil:
				note(fmt.Sprintf("deliver %s calls %s", in.Tool.Role, in.Tool.Name))
			}
		},
		Connected: func(role string, _ voice.LiveSession) { note("connected " + role) },
		Observe: func(role string, ev voice.Event) {
			note(fmt.Sprintf("observe %s %s %q", role, ev.Kind, ev.Text))
			if ev.Text == "hold" {
				close(reached)
				<-release
			}
		},
	}
	want := []string{
		`connected marcus`,
		`observe marcus agent_text "How do tokens move?"`,
		`observe marcus turn_complete ""`,
		`deliver marcus says "How do tokens move?"`,
		`observe marcus user_transcript "Through the vault."`,
		`deliver candidate "Through the vault."`,
		`observe marcus tool_call ""`,
		`deliver marcus calls transfer`,
		`observe marcus agent_text "hold"`,
		`connected priya`,
		`observe priya agent_text "Priya here."`,
		`observe priya turn_complete ""`,
		`deliver priya says "Priya here."`,
	}
	ctx := context.Background()
	if err := b.Handle(ctx, engine.Effect{Type: engine.EffectLiveSession, Agent: "marcus", Text: "You are Marcus."}); err != nil {
		t.Fatal(err)
	}
	conn.session(0).push(
		voice.Event{Kind: voice.EventAgentText, Text: "How do tokens move?"},
		voice.Event{Kind: voice.EventTurnComplete},
		voice.Event{Kind: voice.EventUserTranscript, Text: "Through the vault.", Final: true},
		voice.Event{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "transfer"}}},
		voice.Event{Kind: voice.EventAgentText, Text: "hold"},
		// Still buffered when the floor moves: neither observed nor said.
		voice.Event{Kind: voice.EventAgentText, Text: "stale"},
		voice.Event{Kind: voice.EventTurnComplete},
	)
	<-reached
	moved := make(chan error, 1)
	go func() {
		moved <- b.Handle(ctx, engine.Effect{Type: engine.EffectLiveSession, Agent: "priya", Text: "You are Priya."})
	}()
	// The floor has left marcus once his role is cleared; his reader is
	// still held in Observe.
	for deadline := time.Now().Add(20 * time.Second); b.Role() == "marcus"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bridge did not move the floor")
		}
	}
	close(release)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	conn.session(1).push(
		voice.Event{Kind: voice.EventAgentText, Text: "Priya here."},
		voice.Event{Kind: voice.EventTurnComplete},
	)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	b.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("observed and delivered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
