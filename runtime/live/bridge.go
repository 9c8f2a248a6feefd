// Package live connects an engine session to live speech-to-speech
// sessions (Gemini Live through runtime/voice/geminilive, or any
// voice.Connector): one session for the role holding the floor, replaced
// whenever the engine moves the floor.
//
// The engine stays in charge. It says who holds the floor and with which
// instructions and tools (live_session effects); the bridge turns what the
// live model hears, says and calls into engine inputs (candidate messages,
// agent transcripts, tool calls) and sends the engine's tool results back.
//
// baton serve --voice runs one Bridge per live-voice session and relays
// what it observes (audio, transcripts, barge-in) to the session's client;
// without --voice, a client that hosts the live session itself sends the
// same inputs (docs/protocol.md, "Speech").
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// Bridge runs the floor holder's live session for one engine session. Its
// methods are safe for concurrent use.
type Bridge struct {
	Connector voice.Connector
	// Model is the live model; empty means the connector's default.
	Model string
	// Deliver hands an input to whoever owns the engine session; that owner
	// stamps its time. It is called from the bridge's reader goroutine.
	Deliver func(engine.Input)
	// Connected, if set, is called with each live session once it is open,
	// before any of its events is read, on the goroutine that called
	// Handle. A host reads the session's formats here.
	Connected func(role string, sess voice.LiveSession)
	// Observe, if set, sees every event of the session holding the floor,
	// with its role, before the bridge turns it into inputs: a host relays
	// audio and barge-in from it, which are not engine inputs. Events of a
	// session that has been replaced are not observed. It is called from
	// the bridge's reader goroutine, so it holds up the session's events
	// while it runs, and must not call Handle or Close, which wait for that
	// goroutine.
	Observe func(role string, ev voice.Event)
	// ConnectTimeout bounds opening a live session; 0 means
	// DefaultConnectTimeout. Clock measures it (nil: the real clock).
	// Voices, if set, names the role's voice per speech vendor for its
	// live session, given the Gemini voice the effect carries (the pack's
	// or the one a slot chose); unset, the session has only that one.
	Voices         func(role, gemini string) map[string]string
	ConnectTimeout time.Duration
	Clock          clock.Clock

	mu     sync.Mutex
	cur    voice.LiveSession
	role   string
	done   chan struct{}
	closed bool
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("live bridge closed")

// ErrNoSession is SendAudio's error while no live session holds the floor
// (before the first live_session effect, or while the floor moves).
var ErrNoSession = errors.New("live: no session holds the floor")

// Handle acts on one engine effect; effects it does not care about are
// ignored.
func (b *Bridge) Handle(ctx context.Context, e engine.Effect) error {
	switch e.Type {
	case engine.EffectLiveSession:
		return b.connect(ctx, e)
	case engine.EffectToolResult:
		b.mu.Lock()
		cur, role := b.cur, b.role
		b.mu.Unlock()
		if cur == nil || role != e.Agent {
			return nil // answers a call made by a session that is gone
		}
		content := e.Data
		if len(content) == 0 {
			content = json.RawMessage(`{}`)
		}
		return cur.SendToolResponse([]llm.ToolResult{{CallID: e.ID, Name: e.Kind, Content: content, IsError: e.IsError}})
	case engine.EffectSessionEnd:
		return b.Close()
	}
	return nil
}

// SendAudio streams candidate audio to the floor holder.
func (b *Bridge) SendAudio(chunk []byte, mime string) error {
	b.mu.Lock()
	cur := b.cur
	b.mu.Unlock()
	if cur == nil {
		return ErrNoSession
	}
	return cur.SendAudio(chunk, mime)
}

// DefaultConnectTimeout bounds opening a live session when the bridge
// sets no ConnectTimeout.
const DefaultConnectTimeout = 15 * time.Second

// ErrConnectTimeout is a live session that did not open in time.
var ErrConnectTimeout = errors.New("no answer from the vendor in time")

// dial opens a live session, giving up after the connect timeout. The
// context given to Connect bounds the session's whole life, so it cannot
// also carry the timeout: a vendor that accepts and never answers is left
// to its own goroutine, which closes the session should it open after all.
func (b *Bridge) dial(ctx context.Context, cfg voice.LiveConfig) (voice.LiveSession, error) {
	type opened struct {
		sess voice.LiveSession
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		s, err := b.Connector.Connect(ctx, cfg)
		ch <- opened{s, err}
	}()
	c := b.Clock
	if c == nil {
		c = clock.Real()
	}
	d := b.ConnectTimeout
	if d <= 0 {
		d = DefaultConnectTimeout
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case o := <-ch:
		return o.sess, o.err
	case <-t.C():
		go func() {
			if o := <-ch; o.sess != nil {
				o.sess.Close()
			}
		}()
		return nil, fmt.Errorf("%w (%s)", ErrConnectTimeout, d)
	}
}

// Role is the role whose session is open.
func (b *Bridge) Role() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.role
}

func (b *Bridge) connect(ctx context.Context, e engine.Effect) error {
	var decls []engine.ToolDecl
	if len(e.Data) > 0 && string(e.Data) != "null" {
		if err := json.Unmarshal(e.Data, &decls); err != nil {
			return fmt.Errorf("live: tools for %s: %w", e.Agent, err)
		}
	}
	cfg := voice.LiveConfig{Model: b.Model, System: e.Text, Voices: map[string]string{voice.Gemini: e.Voice}, InputTranscription: true, OutputTranscription: true}
	if b.Voices != nil {
		cfg.Voices = b.Voices(e.Agent, e.Voice)
	}
	for _, d := range decls {
		cfg.Tools = append(cfg.Tools, llm.ToolDecl{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	b.closeCurrent()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.mu.Unlock()
	sess, err := b.dial(ctx, cfg)
	if err != nil {
		return fmt.Errorf("live: connecting %s: %w", e.Agent, err)
	}
	done := make(chan struct{})
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		sess.Close()
		return ErrClosed
	}
	b.cur, b.role, b.done = sess, e.Agent, done
	b.mu.Unlock()
	if b.Connected != nil {
		b.Connected(e.Agent, sess)
	}
	go b.read(sess, e.Agent, done)
	return nil
}

// read turns one session's events into engine inputs until it closes.
// Events from a session that has since been replaced are dropped.
func (b *Bridge) read(sess voice.LiveSession, role string, done chan struct{}) {
	defer close(done)
	var said strings.Builder
	current := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.cur == sess
	}
	flush := func() {
		if text := strings.TrimSpace(said.String()); text != "" && current() {
			b.Deliver(engine.Input{Type: engine.InputAgentTranscript, Agent: &engine.AgentLine{Role: role, Text: text}})
		}
		said.Reset()
	}
	for ev := range sess.Events() {
		if b.Observe != nil && current() {
			b.Observe(role, ev)
		}
		switch ev.Kind {
		case voice.EventUserTranscript:
			if !ev.Final || strings.TrimSpace(ev.Text) == "" || !current() {
				continue
			}
			flush()
			b.Deliver(engine.Input{Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{
				Type: engine.EventMessage, Source: "voice", Text: ev.Text, STTConfidence: ev.Confidence,
			}})
		case voice.EventAgentText:
			said.WriteString(ev.Text)
		case voice.EventTurnComplete, voice.EventInterrupted:
			flush()
		case voice.EventToolCall:
			flush()
			if !current() {
				continue
			}
			for _, c := range ev.ToolCalls {
				b.Deliver(engine.Input{Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args, Role: role}})
			}
		case voice.EventClosed:
			flush()
			b.mu.Lock()
			if b.cur == sess {
				// Ended by the vendor (a call ended, a length limit), not
				// replaced: the floor has no voice until the engine moves
				// it, and audio sent meanwhile is ErrNoSession.
				b.cur, b.role, b.done = nil, "", nil
			}
			b.mu.Unlock()
			sess.Close()
			return
		}
	}
}

func (b *Bridge) closeCurrent() {
	b.mu.Lock()
	cur, done := b.cur, b.done
	b.cur, b.role, b.done = nil, "", nil
	b.mu.Unlock()
	if cur != nil {
		cur.Close()
		<-done
	}
}

// Close ends the open session, if any, and refuses new ones.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.closeCurrent()
	return nil
}
