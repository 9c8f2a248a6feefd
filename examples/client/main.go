// Command client plays a scripted candidate against a running baton
// server and prints the panel's timeline as "mm:ss.s role kind text".
//
//	baton serve --dev --data /tmp/baton &
//	go run ./examples/client -url ws://127.0.0.1:8080/ws
//
// The script is the DayOne pack's built-in candidate, time-compressed by
// -speed (events are sent that many times sooner than their timestamps,
// stamped with the server's clock), limited to the first -events events.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	"github.com/batonhq/baton/scenarios"
)

var raw bool

func main() {
	url := flag.String("url", "ws://127.0.0.1:8080/ws", "server WebSocket URL")
	token := flag.String("token", os.Getenv("BATON_TOKEN"), "bearer token (default $BATON_TOKEN)")
	session := flag.String("session", fmt.Sprintf("demo_%d", time.Now().Unix()), "session id")
	pack := flag.String("pack", "dayone", "pack to start")
	speed := flag.Float64("speed", 4, "time compression of the candidate script")
	n := flag.Int("events", 16, "how many candidate events to play")
	linger := flag.Duration("linger", 10*time.Second, "how long to keep listening after the last event")
	flag.BoolVar(&raw, "raw", false, "print every frame sent (>) and received (<) as JSON")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url, *token, *session, *pack, *speed, *n, *linger); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, token, session, pack string, speed float64, n int, linger time.Duration) error {
	f, err := scenarios.FS.Open("dayone/candidate.jsonl")
	if err != nil {
		return err
	}
	script, err := events.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	script = script[:min(n, len(script))]

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
					fmt.Printf("# closed: %d %s\n", ce.Code, ce.Text)
				}
				return
			}
			if raw {
				fmt.Printf("< %s\n", data)
			}
			var f service.ServerFrame
			if err := json.Unmarshal(data, &f); err != nil {
				fmt.Printf("# undecodable frame: %v\n", err)
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
			fmt.Printf("> %s\n", b)
		}
		return ws.WriteMessage(websocket.TextMessage, b)
	}
	if err := send(map[string]any{"id": "start", "type": "start", "pack": pack, "session_id": session, "candidate_id": "cand_demo"}); err != nil {
		return err
	}
	// A refused start ends the run: nothing else would be accepted.
	for f := range frames {
		if f.ID != "start" {
			print(f)
			continue
		}
		if f.Type == service.FrameError {
			return fmt.Errorf("start refused: %s: %s", f.Code, f.Message)
		}
		print(f)
		break
	}
	fmt.Printf("# session %s: %d candidate events at %gx speed\n", session, len(script), speed)

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
				fmt.Printf("%s  %-10s %-20s %s\n", rules.FormatClock(*f.T), "candidate", ev.Type, ev.Text)
			}
			if print(f) {
				return nil
			}
		case <-timer:
			if next >= len(script) {
				fmt.Println("# done")
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
		AddressedTo: ev.AddressedTo, MicActive: ev.MicActive, Typing: ev.Typing, Code: ev.Code, RunID: ev.RunID}}
}

// print shows one frame; it reports whether the session has ended.
func print(f service.ServerFrame) bool {
	switch f.Type {
	case service.FrameEffect:
		e := f.Effect
		switch e.Type {
		case engine.EffectLLMRequest, engine.EffectDeferred:
			return false
		case engine.EffectAgentMessage:
			fmt.Printf("%s  %-10s %-20s %s\n", rules.FormatClock(e.T), e.Role, e.Kind, e.Text)
		default:
			who := e.Role
			if who == "" {
				who = "-"
			}
			fmt.Printf("%s  %-10s %-20s %s\n", rules.FormatClock(e.T), who, e.Type, strings.TrimSpace(e.Rule+"  "+e.Reason))
		}
		return e.Type == engine.EffectSessionEnd
	case service.FrameError:
		fmt.Printf("# error %s (frame %s): %s\n", f.Code, f.ID, f.Message)
	case service.FrameNotice:
		fmt.Printf("# notice %s: %s\n", f.Code, f.Message)
	case service.FrameAck:
		if f.State != nil && f.ID == "start" {
			b, _ := json.Marshal(f.State)
			fmt.Printf("# started: %s\n", b)
		}
	}
	return false
}
