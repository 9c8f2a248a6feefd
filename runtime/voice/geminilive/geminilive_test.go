package geminilive

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/internal/wiretest"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/voice"
	"github.com/batonhq/baton/runtime/voice/geminilive/geminilivefake"
)

const (
	testKey   = "live-key"
	testModel = "gemini-live-test"
)

// startFake runs script on each WebSocket connection made to a local
// server speaking the Live API's wire format. The returned channel closes
// when the first connection's script has returned.
func startFake(t *testing.T, script func(c *geminilivefake.Conn)) (*Client, <-chan struct{}) {
	t.Helper()
	fake := geminilivefake.New(t, testKey, script)
	client, err := New(context.Background(), Config{APIKey: testKey, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client, fake.Done()
}

// checkNoLeaks waits for every session and connect goroutine to exit. It
// polls instead of asserting on timing; the bound only keeps a real leak
// from hanging the suite.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:goruntime.Stack(buf, true)])
		if !strings.Contains(stacks, "geminilive.(*Session)") && !strings.Contains(stacks, "geminilive.(*Client)") {
			return
		}
	}
	t.Fatalf("session goroutines still running:\n%s", stacks)
}

func assertReaderDone(t *testing.T, s *Session) {
	t.Helper()
	if !s.stream.Exited() {
		t.Fatal("Close returned before the reader goroutine exited")
	}
}

func liveConfig() voice.LiveConfig {
	return voice.LiveConfig{
		Model:  testModel,
		System: "You are the QA engineer.",
		Voices: map[string]string{voice.Gemini: "Puck", voice.ElevenLabs: "21m00Tcm4TlvDq8ikWAM"},
		Tools: []llm.ToolDecl{{
			Name: "lookup_ticket", Description: "Fetch a ticket",
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`),
		}},
		InputTranscription:  true,
		OutputTranscription: true,
	}
}

func TestLiveSessionContract(t *testing.T) {
	userAudio := []byte{0x01, 0x02, 0x03, 0xff}
	agentAudio := []byte("pcm-bytes-from-the-model")
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		setup := c.Setup()
		wiretest.Expect(t, setup, "setup.model", "models/"+testModel)
		wiretest.Expect(t, setup, "setup.systemInstruction.parts.0.text", "You are the QA engineer.")
		wiretest.Expect(t, setup, "setup.generationConfig.responseModalities", []any{"AUDIO"})
		wiretest.Expect(t, setup, "setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName", "Puck")
		wiretest.Expect(t, setup, "setup.tools.0.functionDeclarations.0.name", "lookup_ticket")
		wiretest.Expect(t, setup, "setup.tools.0.functionDeclarations.0.parametersJsonSchema.properties.id.type", "string")
		wiretest.Expect(t, setup, "setup.inputAudioTranscription", map[string]any{})
		wiretest.Expect(t, setup, "setup.outputAudioTranscription", map[string]any{})

		audio := c.Read()
		wiretest.Expect(t, audio, "realtimeInput.audio.mimeType", DefaultInputMIME)
		wiretest.Expect(t, audio, "realtimeInput.audio.data", base64.StdEncoding.EncodeToString(userAudio))
		text := c.Read()
		wiretest.Expect(t, text, "realtimeInput.text", "typed hello")

		c.Send(map[string]any{"serverContent": map[string]any{
			"inputTranscription": map[string]any{"text": "I can fix now", "finished": true},
		}})
		// The real service sends JSON in binary frames; cover both.
		c.SendBinary(map[string]any{"serverContent": map[string]any{
			"modelTurn":           map[string]any{"parts": []any{map[string]any{"inlineData": map[string]any{"mimeType": "audio/pcm;rate=24000", "data": base64.StdEncoding.EncodeToString(agentAudio)}}}},
			"outputTranscription": map[string]any{"text": "Share your first step."},
		}})
		c.Send(map[string]any{"serverContent": map[string]any{"interrupted": true}})
		if err := c.WS.WriteMessage(websocket.TextMessage, []byte("this is not JSON")); err != nil {
			t.Errorf("write: %v", err)
		}
		c.Send(map[string]any{"toolCall": map[string]any{"functionCalls": []any{
			map[string]any{"id": "fc-7", "name": "lookup_ticket", "args": map[string]any{"id": "PAY-1"}},
		}}})

		resp := c.Read()
		wiretest.Expect(t, resp, "toolResponse.functionResponses", []any{map[string]any{
			"id": "fc-7", "name": "lookup_ticket", "response": map[string]any{"status": "open"},
		}})
		c.Send(map[string]any{"serverContent": map[string]any{"turnComplete": true}})
		if err := c.WS.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
			t.Errorf("write close: %v", err)
		}
		c.DrainUntilGone()
	})

	ls, err := client.Connect(context.Background(), liveConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess := ls.(*Session)
	if err := sess.SendAudio(userAudio, ""); err != nil {
		t.Fatal(err)
	}
	if err := sess.SendText("typed hello"); err != nil {
		t.Fatal(err)
	}
	var got []voice.Event
	for ev := range sess.Events() {
		if ev.Kind == voice.EventToolCall {
			if err := sess.SendToolResponse([]llm.ToolResult{{CallID: ev.ToolCalls[0].ID, Name: ev.ToolCalls[0].Name, Content: json.RawMessage(`{"status":"open"}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, ev)
	}

	kinds := make([]voice.EventKind, len(got))
	for i, ev := range got {
		kinds[i] = ev.Kind
	}
	wantKinds := []voice.EventKind{
		voice.EventUserTranscript, voice.EventAgentAudio, voice.EventAgentText, voice.EventInterrupted,
		voice.EventError, voice.EventToolCall, voice.EventTurnComplete, voice.EventClosed,
	}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Fatalf("event kinds = %v, want %v", kinds, wantKinds)
	}
	if ev := got[0]; ev.Text != "I can fix now" || !ev.Final || ev.Confidence != nil {
		t.Errorf("user transcript = %+v", ev)
	}
	if ev := got[1]; string(ev.Audio) != string(agentAudio) || ev.MIMEType != "audio/pcm;rate=24000" {
		t.Errorf("agent audio = %+v", ev)
	}
	if ev := got[2]; ev.Text != "Share your first step." {
		t.Errorf("agent text = %+v", ev)
	}
	if ev := got[4]; ev.Err == nil || !strings.Contains(ev.Err.Error(), "invalid message format") {
		t.Errorf("decode error event = %+v", ev)
	}
	wantCalls := []llm.ToolCall{{ID: "fc-7", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-1"}`)}}
	if !reflect.DeepEqual(got[5].ToolCalls, wantCalls) {
		t.Errorf("tool calls = %#v", got[5].ToolCalls)
	}
	if ev := got[7]; ev.Err != nil {
		t.Errorf("normal server close reported error %v", ev.Err)
	}

	if err := sess.Close(); err != nil {
		t.Errorf("Close after server close = %v", err)
	}
	assertReaderDone(t, sess)
	if err := sess.SendText("late"); !errors.Is(err, ErrClosed) {
		t.Errorf("send after close = %v, want ErrClosed", err)
	}
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveContextCancel(t *testing.T) {
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Setup()
		c.DrainUntilGone()
	})
	ctx, cancel := context.WithCancel(context.Background())
	ls, err := client.Connect(ctx, voice.LiveConfig{Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	sess := ls.(*Session)
	cancel()
	var last voice.Event
	for ev := range sess.Events() {
		last = ev
	}
	if last.Kind != voice.EventClosed || last.Err != nil {
		t.Fatalf("last event = %+v, want a clean closed event", last)
	}
	if err := sess.SendAudio([]byte{1}, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("send after cancel = %v, want ErrClosed", err)
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close after cancel = %v", err)
	}
	assertReaderDone(t, sess)
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveCloseWithoutReadingEvents(t *testing.T) {
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Setup()
		// Far more events than the buffer holds, so the reader blocks.
		for i := 0; i < 4*eventBuffer; i++ {
			msg := map[string]any{"serverContent": map[string]any{"outputTranscription": map[string]any{"text": "word"}}}
			data, _ := json.Marshal(msg)
			if err := c.WS.WriteMessage(websocket.TextMessage, data); err != nil {
				return // the client closed mid-stream, as intended
			}
		}
		c.DrainUntilGone()
	})
	ls, err := client.Connect(context.Background(), voice.LiveConfig{Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	sess := ls.(*Session)
	// Wait until the buffer is full so the reader is parked on a send.
	for len(sess.Events()) < cap(sess.Events()) {
		time.Sleep(time.Millisecond)
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	assertReaderDone(t, sess)
	if err := sess.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	n := 0
	for range sess.Events() {
		n++
	}
	if n == 0 || n > eventBuffer {
		t.Errorf("drained %d buffered events after Close", n)
	}
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveServerErrorClose(t *testing.T) {
	tests := []struct {
		code int
		kind llm.Kind
	}{
		{websocket.CloseInternalServerErr, llm.KindServer},
		{websocket.ClosePolicyViolation, llm.KindBadRequest},
		{websocket.CloseTryAgainLater, llm.KindRateLimit},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
				c.Setup()
				_ = c.WS.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(tt.code, "quota or whatever"))
				c.DrainUntilGone()
			})
			ls, err := client.Connect(context.Background(), voice.LiveConfig{Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			var got []voice.Event
			for ev := range ls.Events() {
				got = append(got, ev)
			}
			if len(got) != 2 || got[0].Kind != voice.EventError || got[1].Kind != voice.EventClosed {
				t.Fatalf("events = %+v, want error then closed", got)
			}
			for _, ev := range got {
				if e := llm.Classify(ev.Err); e == nil || e.Kind != tt.kind || !strings.Contains(e.Message, "quota or whatever") {
					t.Errorf("%s event error = %v, want kind %s with the server's reason", ev.Kind, ev.Err, tt.kind)
				}
			}
			if err := ls.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			<-serverDone
			checkNoLeaks(t)
		})
	}
}

func TestLiveSetupRejected(t *testing.T) {
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Read()
		_ = c.WS.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, "API key not valid"))
		c.DrainUntilGone()
	})
	ls, err := client.Connect(context.Background(), voice.LiveConfig{Model: testModel})
	if err == nil || ls != nil {
		t.Fatalf("Connect = %v, %v; want an error", ls, err)
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "API key not valid") {
		t.Errorf("error %v does not carry the server's close reason", err)
	}
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveConnectAbandoned(t *testing.T) {
	setupSeen := make(chan struct{})
	release := make(chan struct{})
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Read()
		close(setupSeen)
		<-release
		c.Send(map[string]any{"setupComplete": map[string]any{}})
		c.DrainUntilGone() // ends when the abandoned session is closed
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := client.Connect(ctx, voice.LiveConfig{Model: testModel})
		errc <- err
	}()
	<-setupSeen
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect = %v, want context.Canceled", err)
	}
	close(release)
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveConcurrentSends(t *testing.T) {
	// Large chunks keep each write busy long enough that unserialized
	// writers would interleave frames (gorilla panics or the fake reads
	// garbage) even without the race detector.
	const senders, each, chunkSize = 8, 25, 16 << 10
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Setup()
		seen := map[string]int{}
		for i := 0; i < senders*each; i++ {
			msg := c.Read()
			data, _ := wiretest.At(msg, "realtimeInput.audio.data").(string)
			raw, err := base64.StdEncoding.DecodeString(data)
			if err != nil || len(raw) != chunkSize {
				t.Errorf("message %d corrupted (%d bytes, %v)", i, len(raw), err)
				return
			}
			seen[string(raw[:2])]++
		}
		if len(seen) != senders*each {
			t.Errorf("received %d distinct chunks, want %d", len(seen), senders*each)
		}
		_ = c.WS.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		c.DrainUntilGone()
	})
	ls, err := client.Connect(context.Background(), voice.LiveConfig{Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				chunk := make([]byte, chunkSize)
				chunk[0], chunk[1] = byte(g), byte(i)
				if err := ls.SendAudio(chunk, "audio/pcm;rate=16000"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for range ls.Events() {
	}
	if err := ls.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	<-serverDone
	checkNoLeaks(t)
}

func TestLiveRejectsBadInput(t *testing.T) {
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Setup()
		c.DrainUntilGone()
	})
	ls, err := client.Connect(context.Background(), voice.LiveConfig{Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = ls.Close()
		<-serverDone
		checkNoLeaks(t)
	}()
	if err := ls.SendAudio([]byte{1}, "video/mp4"); llm.Classify(err).Kind != llm.KindBadRequest {
		t.Errorf("non-audio mime: %v", err)
	}
	if err := ls.SendToolResponse([]llm.ToolResult{{CallID: "x", Name: "f", Content: json.RawMessage(`{broken`)}}); llm.Classify(err).Kind != llm.KindBadRequest {
		t.Errorf("broken tool result: %v", err)
	}
	for _, err := range []error{ls.SendAudio(nil, ""), ls.SendText(""), ls.SendToolResponse(nil)} {
		if err != nil {
			t.Errorf("empty send = %v, want a no-op", err)
		}
	}
}

func TestLiveBadToolDeclaration(t *testing.T) {
	client, err := New(context.Background(), Config{APIKey: testKey, BaseURL: "ws://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Connect(context.Background(), voice.LiveConfig{Tools: []llm.ToolDecl{{Name: "f", Parameters: json.RawMessage(`[]`)}}})
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindBadRequest {
		t.Fatalf("Connect = %v, want bad_request before dialing", err)
	}
}

func TestNewMissingKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := New(context.Background(), Config{BaseURL: "ws://127.0.0.1:1"}); !errors.Is(err, gemini.ErrNoAPIKey) {
		t.Fatalf("New = %v, want ErrNoAPIKey", err)
	}
}

// A session whose context ended while it was being set up must shut down
// by itself without racing its own construction.
func TestStartWithDoneContext(t *testing.T) {
	client, serverDone := startFake(t, func(c *geminilivefake.Conn) {
		c.Setup()
		c.DrainUntilGone()
	})
	gs, err := client.client.Live.Connect(context.Background(), testModel, &genai.LiveConnectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sess := start(ctx, gs)
	var last voice.Event
	for ev := range sess.Events() {
		last = ev
	}
	if last.Kind != voice.EventClosed || last.Err != nil {
		t.Fatalf("last event = %+v", last)
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	<-serverDone
	checkNoLeaks(t)
}
