// Command client plays a scripted person against a running baton server
// and prints the panel's timeline as "mm:ss.s role kind text".
//
//	baton serve --dev --data /tmp/baton &
//	go run ./examples/client -url ws://127.0.0.1:8080/ws
//	go run ./examples/client -url ws://127.0.0.1:8080/ws -pack training
//
// The script is the bundled pack's built-in one (its dryrun.candidate),
// time-compressed by -speed (events are sent that many times sooner than
// their timestamps, stamped with the server's clock), limited to the
// first -events events. The client also runs the pack's client tools
// against its own copy of the pack's workspace (runtime/workspace), as an
// editor would, reports each write as the pack's on_change event, and
// prints the workspace at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/workspace"
	"github.com/batonhq/baton/scenarios"
)

var raw, textOnly bool

func main() {
	url := flag.String("url", "ws://127.0.0.1:8080/ws", "server WebSocket URL")
	token := flag.String("token", os.Getenv("BATON_TOKEN"), "bearer token (default $BATON_TOKEN)")
	session := flag.String("session", fmt.Sprintf("demo_%d", time.Now().Unix()), "session id")
	pack := flag.String("pack", "dayone", "pack to start")
	speed := flag.Float64("speed", 4, "time compression of the candidate script")
	n := flag.Int("events", 16, "how many candidate events to play")
	linger := flag.Duration("linger", 10*time.Second, "how long to keep listening after the last event")
	flag.BoolVar(&raw, "raw", false, "print every frame sent (>) and received (<) as JSON")
	flag.BoolVar(&textOnly, "text-only", false, "show agent lines as text: report each one played as soon as it arrives (client_playback), so no one waits for simulated speech")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *url, *token, *session, *pack, *speed, *n, *linger); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, url, token, session, pack string, speed float64, n int, linger time.Duration) error {
	sub, err := fs.Sub(scenarios.FS, pack)
	if err != nil {
		return err
	}
	p, err := rules.Load(sub, ".")
	if err != nil {
		return fmt.Errorf("pack %s: %w", pack, err)
	}
	var script []events.Timed
	if p.DryRun.Candidate != "" {
		f, err := p.FS.Open(p.DryRun.Candidate)
		if err != nil {
			return err
		}
		script, err = events.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	script = script[:min(n, len(script))]
	tools := newEditor(p)

	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, url, hdr)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("dial %s: %w (HTTP %s)", url, err, resp.Status)
		}
		return fmt.Errorf("dial %s: %w", url, err)
	}
	defer ws.Close()

	frames := make(chan service.ServerFrame, 256)
	go func() {
		defer close(frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					fmt.Fprintf(out, "# closed: %d %s\n", ce.Code, ce.Text)
				}
				return
			}
			if raw {
				fmt.Fprintf(out, "< %s\n", data)
			}
			var f service.ServerFrame
			if err := json.Unmarshal(data, &f); err != nil {
				fmt.Fprintf(out, "# undecodable frame: %v\n", err)
				continue
			}
			frames <- f
		}
	}()
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if raw {
			fmt.Fprintf(out, "> %s\n", b)
		}
		return ws.WriteMessage(websocket.TextMessage, b)
	}
	if err := send(map[string]any{"id": "start", "type": "start", "pack": pack, "session_id": session, "candidate_id": "cand_demo", "client_playback": textOnly}); err != nil {
		return err
	}
	// A refused start ends the run: nothing else would be accepted.
	for f := range frames {
		if f.ID != "start" {
			print(out, f)
			continue
		}
		if f.Type == service.FrameError {
			return fmt.Errorf("start refused: %s: %s", f.Code, f.Message)
		}
		print(out, f)
		break
	}
	fmt.Fprintf(out, "# session %s: %d candidate events at %gx speed\n", session, len(script), speed)

	start := time.Now()
	next := 0
	// Candidate events are printed when acked, at the engine time the
	// server applied them.
	sentEvents := map[string]engine.CandidateEvent{}
	var timer <-chan time.Time
	arm := func() {
		if next < len(script) {
			at := time.Duration(float64(script[next].T)/speed) * time.Millisecond
			timer = time.After(time.Until(start.Add(at)))
		} else {
			timer = time.After(linger)
		}
	}
	arm()
	for {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-frames:
			if !ok {
				return nil
			}
			if ev, ok := sentEvents[f.ID]; ok && f.Type == service.FrameAck && f.T != nil {
				delete(sentEvents, f.ID)
				fmt.Fprintf(out, "%s  %-10s %-20s %s\n", rules.FormatClock(*f.T), "candidate", ev.Type, ev.Text)
			}
			if textOnly && f.Type == service.FrameEffect && f.Effect.Type == engine.EffectAgentMessage {
				if err := send(map[string]any{"id": "done-" + f.Effect.ID, "type": "speech_done", "message_id": f.Effect.ID}); err != nil {
					return err
				}
			}
			if f.Type == service.FrameClientToolCall && f.ClientToolCall != nil {
				if err := tools.answer(f.ClientToolCall, send); err != nil {
					return err
				}
			}
			if print(out, f) {
				tools.print(out)
				return nil
			}
		case <-timer:
			if next >= len(script) {
				tools.print(out)
				fmt.Fprintln(out, "# done")
				return nil
			}
			ev := script[next]
			w := wireOf(ev.Event)
			if err := send(map[string]any{"id": fmt.Sprintf("e%d", next+1), "type": "event", "event": w}); err != nil {
				return err
			}
			sentEvents[fmt.Sprintf("e%d", next+1)] = ev.Event
			next++
			arm()
		}
	}
}

// wireOf turns an engine event back into the §5.2 shape, without a time:
// the server stamps it with its own clock.
func wireOf(ev engine.CandidateEvent) events.Wire {
	return events.Wire{EventType: ev.Type, Data: &events.Data{Source: ev.Source, Text: ev.Text, STTConfidence: ev.STTConfidence,
		AddressedTo: ev.AddressedTo, MicActive: ev.MicActive, Typing: ev.Typing, Code: ev.Code, RunID: ev.RunID, Line: ev.Line}}
}

// editor runs a pack's client tools against a workspace seeded from its
// workspace: section, as a code editor hosting the session would.
type editor struct {
	pack *rules.Pack
	ws   *workspace.Workspace
	n    int
}

func newEditor(p *rules.Pack) *editor {
	e := &editor{pack: p, ws: workspace.New(p.Workspace.RootDir())}
	// This client supplies no inputs, so the session starts from the
	// defaults: the pack's files, or those of the file input its
	// workspace.from names.
	for _, f := range p.WorkspaceOf(nil) {
		_ = e.ws.Put(f.Path, f.Content) // the pack loaded, so its paths are good
	}
	return e
}

// answer runs one call and sends its result, then, after a write, the
// pack's on_change event with the file and the line edited.
func (e *editor) answer(c *service.ClientToolCall, send func(any) error) error {
	op, ok := e.pack.Workspace.WorkspaceOpOf(c.ToolName)
	result, isErr := []byte(`{"error":"this client does not run `+c.ToolName+`"}`), true
	if ok {
		result, isErr = e.ws.Call(op.String(), c.Parameters)
	}
	// The vendor's shape: the call's id stands for a frame id.
	if err := send(map[string]any{"type": "client_tool_result", "tool_call_id": c.ToolCallID, "result": json.RawMessage(result), "is_error": isErr}); err != nil {
		return err
	}
	var w struct {
		Path string `json:"path"`
	}
	if isErr || op != rules.WorkspaceWrite || e.pack.Workspace.OnChange.Val == "" || json.Unmarshal(result, &w) != nil {
		return nil
	}
	code, _ := e.ws.Get(w.Path)
	e.n++
	return send(map[string]any{"id": fmt.Sprintf("edit%d", e.n), "type": "event", "event": events.Wire{
		EventType: e.pack.Workspace.OnChange.Val, Data: &events.Data{Source: "editor", Code: code, Line: e.ws.LastEdit(w.Path)}}})
}

// print shows the workspace's files, if the pack has any.
func (e *editor) print(out io.Writer) {
	for _, path := range e.ws.Paths() {
		content, _ := e.ws.Get(path)
		fmt.Fprintf(out, "# %s/%s:\n", e.pack.Workspace.RootDir(), path)
		for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
			fmt.Fprintf(out, "# %4d  %s\n", i+1, l)
		}
	}
}

// print shows one frame; it reports whether the session has ended.
func print(out io.Writer, f service.ServerFrame) bool {
	switch f.Type {
	case service.FrameEffect, service.FrameClientToolCall:
		e := f.Effect
		switch e.Type {
		case engine.EffectLLMRequest, engine.EffectDeferred:
			return false
		case engine.EffectAgentMessage:
			fmt.Fprintf(out, "%s  %-10s %-20s %s\n", rules.FormatClock(e.T), e.Role, e.Kind, e.Text)
		default:
			who := e.Role
			if who == "" {
				who = "-"
			}
			what := strings.TrimSpace(e.Kind + "  " + e.Rule + "  " + e.Reason)
			if e.Type == engine.EffectClientToolCall {
				what += "  " + string(e.Data)
			}
			fmt.Fprintf(out, "%s  %-10s %-20s %s\n", rules.FormatClock(e.T), who, e.Type, what)
		}
		return e.Type == engine.EffectSessionEnd
	case service.FrameError:
		fmt.Fprintf(out, "# error %s (frame %s): %s\n", f.Code, f.ID, f.Message)
	case service.FrameNotice:
		fmt.Fprintf(out, "# notice %s: %s\n", f.Code, f.Message)
	case service.FrameAck:
		if f.State != nil && f.ID == "start" {
			b, _ := json.Marshal(f.State)
			fmt.Fprintf(out, "# started: %s\n", b)
		}
	}
	return false
}
