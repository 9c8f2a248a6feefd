package elevenlabs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
	fake "github.com/batonhq/baton/runtime/voice/elevenlabs/elevenlabsfake"
)

const (
	testKey   = "xi-test-key"
	testAgent = "agent_test_1"
	// safetyNet bounds sessions and raw reads so a broken client fails a
	// test instead of hanging the suite; no test depends on it firing.
	safetyNet = 10 * time.Second
)

// startFake runs a strict fake of the service with this script and a
// client pointed at it.
func startFake(t *testing.T, sc fake.Script) (*Client, *fake.Server) {
	t.Helper()
	if sc.AgentID == "" {
		sc.AgentID = testAgent
	}
	if sc.APIKey == "" {
		sc.APIKey = testKey
	}
	srv := fake.New(t, sc)
	client, err := New(Config{APIKey: testKey, AgentID: testAgent, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client, srv
}

func connect(t *testing.T, client *Client, lc voice.LiveConfig) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	t.Cleanup(cancel)
	ls, err := client.Connect(ctx, lc)
	if err != nil {
		t.Fatal(err)
	}
	return ls.(*Session)
}

// collect reads events until the stream ends.
func collect(t *testing.T, s voice.LiveSession) []voice.Event {
	t.Helper()
	var got []voice.Event
	timeout := time.After(safetyNet)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("the event stream did not end; got %v", kinds(got))
		}
	}
}

func kinds(evs []voice.Event) []voice.EventKind {
	out := make([]voice.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// checkNoLeaks waits for every session goroutine to exit. It polls instead
// of asserting on timing; the bound only keeps a real leak from hanging
// the suite.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:goruntime.Stack(buf, true)])
		if !strings.Contains(stacks, "elevenlabs.(*Session)") && !strings.Contains(stacks, "elevenlabs.(*Client)") {
			return
		}
	}
	t.Fatalf("session goroutines still running:\n%s", stacks)
}

func TestConversation(t *testing.T) {
	userAudio := [][]byte{{0x01, 0x02, 0x03, 0xff}, bytes.Repeat([]byte{0x10, 0x00}, 800)}
	agentAudio := []byte("pcm-bytes-from-the-agent")
	freshAudio := []byte("the next reply")
	client, srv := startFake(t, fake.Script{
		OutputFormat: "pcm_24000",
		Steps: []fake.Step{
			fake.AwaitAudio(len(userAudio[0]) + len(userAudio[1])),
			fake.UserTranscript("I can fix now"),
			fake.AgentResponse("Share your first step."),
			fake.Audio(agentAudio),
			fake.Ping(7, 42),
			fake.AwaitPong(7),
			fake.ToolCall("call_1", "lookup_ticket", map[string]any{"id": "PAY-1"}),
			fake.AwaitToolResult("call_1"),
			fake.ToolCall("call_2", "lookup_ticket", nil),
			fake.AwaitToolResult("call_2"),
			fake.AwaitMessage("user_message"),
			fake.Interruption(),
			fake.Audio([]byte("stale audio of the interrupted reply")),
			fake.AgentResponseCorrection("Share your first step.", "Share your"),
			fake.Send(map[string]any{"type": "brand_new_event", "brand_new_event": map[string]any{}}),
			fake.VADScore(0.9),
			fake.TentativeUserTranscript("sec"),
			fake.UserTranscript("second"),
			fake.AgentResponse("Next."),
			fake.Audio(freshAudio),
			fake.Close(websocket.CloseNormalClosure, "conversation over"),
		},
	})
	sess := connect(t, client, voice.LiveConfig{
		System: "You are the QA engineer.",
		Voices: map[string]string{voice.ElevenLabs: "voice-123", voice.Gemini: "Puck"},
		Tools:  []llm.ToolDecl{{Name: "lookup_ticket", Parameters: json.RawMessage(`{"type":"object"}`)}},
	})
	conn := <-srv.Conns()
	if sess.ConversationID() != "conv_fake_1" || sess.InputMIME() != "audio/pcm;rate=16000" || sess.OutputMIME() != "audio/pcm;rate=24000" {
		t.Errorf("metadata: id %q, input %q, output %q", sess.ConversationID(), sess.InputMIME(), sess.OutputMIME())
	}
	for _, chunk := range userAudio {
		if err := sess.SendAudio(chunk, "audio/pcm;rate=16000"); err != nil {
			t.Fatal(err)
		}
	}
	var got []voice.Event
	for ev := range sess.Events() {
		got = append(got, ev)
		if ev.Kind != voice.EventToolCall {
			continue
		}
		switch id := ev.ToolCalls[0].ID; id {
		case "call_1":
			err := sess.SendToolResponse([]llm.ToolResult{{CallID: id, Name: "lookup_ticket", Content: json.RawMessage(`{"status": "open", "n": 12345678901234567890}`)}})
			if err != nil {
				t.Fatal(err)
			}
		case "call_2":
			err := sess.SendToolResponse([]llm.ToolResult{{CallID: id, Name: "lookup_ticket", Content: json.RawMessage(`"ticket not found"`), IsError: true}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sess.SendText("typed hello"); err != nil {
				t.Fatal(err)
			}
		}
	}

	want := []voice.Event{
		{Kind: voice.EventUserTranscript, Text: "I can fix now", Final: true},
		{Kind: voice.EventAgentText, Text: "Share your first step.", Final: true},
		{Kind: voice.EventTurnComplete},
		{Kind: voice.EventAgentAudio, Audio: agentAudio, MIMEType: "audio/pcm;rate=24000"},
		{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-1"}`)}}},
		{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "lookup_ticket", Args: json.RawMessage(`{}`)}}},
		{Kind: voice.EventInterrupted},
		{Kind: voice.EventError}, // brand_new_event, checked below
		{Kind: voice.EventUserTranscript, Text: "sec"},
		{Kind: voice.EventUserTranscript, Text: "second", Final: true},
		{Kind: voice.EventAgentText, Text: "Next.", Final: true},
		{Kind: voice.EventTurnComplete},
		{Kind: voice.EventAgentAudio, Audio: freshAudio, MIMEType: "audio/pcm;rate=24000"},
		{Kind: voice.EventClosed},
	}
	if len(got) != len(want) {
		t.Fatalf("event kinds = %v\nwant %v", kinds(got), kinds(want))
	}
	for i := range want {
		g := got[i]
		if g.Kind == voice.EventError {
			if !errors.Is(g.Err, ErrUnknownMessage) || !strings.Contains(g.Err.Error(), "brand_new_event") {
				t.Errorf("event %d error = %v, want the unknown type named", i, g.Err)
			}
			g.Err = nil
		}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("event %d = %+v\nwant %+v", i, g, want[i])
		}
	}

	if err := sess.Close(); err != nil {
		t.Errorf("Close after server close = %v", err)
	}
	<-conn.Gone()

	wantInit := map[string]any{
		"type": "conversation_initiation_client_data",
		"conversation_config_override": map[string]any{
			"agent": map[string]any{"prompt": map[string]any{"prompt": "You are the QA engineer."}},
			"tts":   map[string]any{"voice_id": "voice-123"},
		},
	}
	if init := conn.Initiation(); !reflect.DeepEqual(init, wantInit) {
		t.Errorf("initiation = %#v\nwant %#v", init, wantInit)
	}
	if audio := conn.UserAudio(); !bytes.Equal(audio, bytes.Join(userAudio, nil)) {
		t.Errorf("the fake heard %d bytes of audio, not the %d sent intact", len(audio), len(bytes.Join(userAudio, nil)))
	}
	var rest []map[string]any
	for _, m := range conn.Received()[1:] {
		if m.Type != fake.AudioChunk {
			rest = append(rest, m.Fields)
		}
	}
	wantRest := []map[string]any{
		{"type": "pong", "event_id": float64(7)},
		{"type": "client_tool_result", "tool_call_id": "call_1", "result": `{"status":"open","n":12345678901234567890}`, "is_error": false},
		{"type": "client_tool_result", "tool_call_id": "call_2", "result": "ticket not found", "is_error": true},
		{"type": "user_message", "text": "typed hello"},
	}
	if !reflect.DeepEqual(rest, wantRest) {
		t.Errorf("the fake received %#v\nwant %#v", rest, wantRest)
	}
	checkNoLeaks(t)
}

func TestInitiation(t *testing.T) {
	tests := []struct {
		name string
		lc   voice.LiveConfig
		vars map[string]any
		want map[string]any
	}{
		{
			name: "nothing to override",
			want: map[string]any{"type": "conversation_initiation_client_data"},
		},
		{
			name: "prompt only; tools and transcription flags send nothing",
			lc: voice.LiveConfig{System: "Be brief.", InputTranscription: true, OutputTranscription: true,
				Tools: []llm.ToolDecl{{Name: "end_call"}}},
			want: map[string]any{"type": "conversation_initiation_client_data", "conversation_config_override": map[string]any{
				"agent": map[string]any{"prompt": map[string]any{"prompt": "Be brief."}},
			}},
		},
		{
			name: "voice only",
			lc:   voice.LiveConfig{Voices: map[string]string{voice.ElevenLabs: "21m00Tcm4TlvDq8ikWAM"}},
			want: map[string]any{"type": "conversation_initiation_client_data", "conversation_config_override": map[string]any{
				"tts": map[string]any{"voice_id": "21m00Tcm4TlvDq8ikWAM"},
			}},
		},
		{
			name: "the elevenlabs voice, never another vendor's",
			lc:   voice.LiveConfig{Voices: map[string]string{voice.Gemini: "Puck", voice.ElevenLabs: "21m00Tcm4TlvDq8ikWAM"}},
			want: map[string]any{"type": "conversation_initiation_client_data", "conversation_config_override": map[string]any{
				"tts": map[string]any{"voice_id": "21m00Tcm4TlvDq8ikWAM"},
			}},
		},
		{
			name: "only a gemini voice overrides nothing",
			lc:   voice.LiveConfig{Voices: map[string]string{voice.Gemini: "Puck"}},
			want: map[string]any{"type": "conversation_initiation_client_data"},
		},
		{
			name: "model as the prompt's llm",
			lc:   voice.LiveConfig{Model: "gemini-2.0-flash"},
			want: map[string]any{"type": "conversation_initiation_client_data", "conversation_config_override": map[string]any{
				"agent": map[string]any{"prompt": map[string]any{"llm": "gemini-2.0-flash"}},
			}},
		},
		{
			name: "dynamic variables",
			vars: map[string]any{"candidate": "Ada", "round": 2, "remote": true},
			want: map[string]any{"type": "conversation_initiation_client_data", "dynamic_variables": map[string]any{
				"candidate": "Ada", "round": float64(2), "remote": true,
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fake.New(t, fake.Script{AgentID: testAgent, APIKey: testKey})
			client, err := New(Config{APIKey: testKey, AgentID: testAgent, BaseURL: srv.URL, DynamicVariables: tt.vars})
			if err != nil {
				t.Fatal(err)
			}
			sess := connect(t, client, tt.lc)
			conn := <-srv.Conns()
			if got := conn.Initiation(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("initiation = %#v\nwant %#v", got, tt.want)
			}
			if err := sess.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			<-conn.Gone()
			checkNoLeaks(t)
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		cfg     Config
		wantErr string // empty: New succeeds
		wantURL string
	}{
		{name: "no key", cfg: Config{AgentID: "a"}, wantErr: "set $ELEVENLABS_API_KEY"},
		{name: "no agent", cfg: Config{APIKey: "k"}, wantErr: "set $ELEVENLABS_AGENT_ID"},
		{
			name:    "from the environment",
			env:     map[string]string{EnvAPIKey: "k", EnvAgentID: "agent 7", EnvBaseURL: "https://proxy.example/el/"},
			wantURL: "wss://proxy.example/el/v1/convai/conversation?agent_id=agent+7",
		},
		{name: "default endpoint", cfg: Config{APIKey: "k", AgentID: "a"}, wantURL: "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=a"},
		{name: "config beats environment", env: map[string]string{EnvAgentID: "env"}, cfg: Config{APIKey: "k", AgentID: "cfg", BaseURL: "ws://127.0.0.1:9"},
			wantURL: "ws://127.0.0.1:9/v1/convai/conversation?agent_id=cfg"},
		{name: "bad scheme", cfg: Config{APIKey: "k", AgentID: "a", BaseURL: "ftp://x"}, wantErr: "scheme must be wss or ws"},
		{name: "no host", cfg: Config{APIKey: "k", AgentID: "a", BaseURL: "wss://"}, wantErr: "has no host"},
		{name: "bad dynamic variable", cfg: Config{APIKey: "k", AgentID: "a", DynamicVariables: map[string]any{"x": []string{"y"}}},
			wantErr: `dynamic variable "x" is a []string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{EnvAPIKey, EnvAgentID, EnvBaseURL} {
				t.Setenv(k, tt.env[k])
			}
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.url != tt.wantURL {
				t.Errorf("url = %q, want %q", c.url, tt.wantURL)
			}
		})
	}
}

func TestAudioFormats(t *testing.T) {
	tests := []struct {
		name           string
		input, output  string
		mime           string
		wantBadRequest bool
		wantOutputMIME string
	}{
		{name: "empty mime is the input format", mime: "", wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "exact", mime: "audio/pcm;rate=16000", wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "case and spacing", mime: "Audio/PCM; rate=16000; channels=1", wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "wrong rate", mime: "audio/pcm;rate=24000", wantBadRequest: true, wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "no rate", mime: "audio/pcm", wantBadRequest: true, wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "stereo", mime: "audio/pcm;rate=16000;channels=2", wantBadRequest: true, wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "not audio", mime: "video/mp4", wantBadRequest: true, wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "agent takes 24 kHz", input: "pcm_24000", output: "pcm_44100", mime: "audio/pcm;rate=24000", wantOutputMIME: "audio/pcm;rate=44100"},
		{name: "agent takes 24 kHz, 16 kHz refused", input: "pcm_24000", mime: "audio/pcm;rate=16000", wantBadRequest: true, wantOutputMIME: "audio/pcm;rate=16000"},
		{name: "telephony mu-law", input: "ulaw_8000", output: "ulaw_8000", mime: "audio/pcmu;rate=8000", wantOutputMIME: "audio/pcmu;rate=8000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunk := []byte{1, 2, 3, 4}
			client, srv := startFake(t, fake.Script{
				InputFormat: tt.input, OutputFormat: tt.output,
				Steps: []fake.Step{fake.AgentResponse("hi"), fake.Audio([]byte{9, 9})},
			})
			sess := connect(t, client, voice.LiveConfig{})
			conn := <-srv.Conns()
			err := sess.SendAudio(chunk, tt.mime)
			if e := llm.Classify(err); tt.wantBadRequest != (e != nil && e.Kind == llm.KindBadRequest) {
				t.Errorf("SendAudio(%q) = %v, want bad request: %v", tt.mime, err, tt.wantBadRequest)
			}
			var audioMIME string
			for ev := range sess.Events() {
				if ev.Kind == voice.EventAgentAudio {
					audioMIME = ev.MIMEType
					break
				}
			}
			if audioMIME != tt.wantOutputMIME {
				t.Errorf("agent audio MIME = %q, want %q", audioMIME, tt.wantOutputMIME)
			}
			if err := sess.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			<-conn.Gone()
			if got, want := len(conn.UserAudio()), len(chunk); tt.wantBadRequest == (got == want) {
				t.Errorf("the fake heard %d bytes after SendAudio(%q) = %v", got, tt.mime, err)
			}
			checkNoLeaks(t)
		})
	}
}

func TestUnsupportedAgentFormat(t *testing.T) {
	client, srv := startFake(t, fake.Script{OutputFormat: "mp3_44100"})
	ls, err := client.Connect(context.Background(), voice.LiveConfig{})
	if e := llm.Classify(err); ls != nil || e == nil || e.Kind != llm.KindBadRequest || !strings.Contains(e.Message, `"mp3_44100"`) {
		t.Fatalf("Connect = %v, %v; want a bad request naming the format", ls, err)
	}
	<-(<-srv.Conns()).Gone()
	checkNoLeaks(t)
}

func TestServerEnds(t *testing.T) {
	tests := []struct {
		name     string
		steps    []fake.Step
		wantKind llm.Kind // empty: a clean end
		wantText string
	}{
		{name: "normal close", steps: []fake.Step{fake.Close(websocket.CloseNormalClosure, "agent ended the call")}},
		{name: "internal error", steps: []fake.Step{fake.Close(websocket.CloseInternalServerErr, "boom")}, wantKind: llm.KindServer, wantText: "boom"},
		{name: "operational failure", steps: []fake.Step{fake.Close(websocket.CloseProtocolError, "llm_timeout")}, wantKind: llm.KindServer, wantText: "llm_timeout"},
		{name: "contract error", steps: []fake.Step{fake.Close(websocket.ClosePolicyViolation, "override not allowed")}, wantKind: llm.KindBadRequest, wantText: "override not allowed"},
		{name: "dropped", steps: []fake.Step{fake.Drop()}, wantKind: llm.KindNetwork},
		{
			name: "error message then close",
			steps: []fake.Step{
				fake.Send(map[string]any{"type": "error", "error_event": map[string]any{"code": 1008, "error_type": "missing_dynamic_variable", "message": "candidate is not set"}}),
				fake.Close(websocket.ClosePolicyViolation, ""),
			},
			wantKind: llm.KindBadRequest, wantText: "missing_dynamic_variable: candidate is not set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, srv := startFake(t, fake.Script{Steps: tt.steps})
			sess := connect(t, client, voice.LiveConfig{})
			got := collect(t, sess)
			last := got[len(got)-1]
			if last.Kind != voice.EventClosed {
				t.Fatalf("last event = %+v, want closed", last)
			}
			if tt.wantKind == "" {
				if last.Err != nil || len(got) != 1 {
					t.Errorf("events = %+v, want one clean closed event", got)
				}
			} else {
				if len(got) < 2 || got[len(got)-2].Kind != voice.EventError {
					t.Errorf("events = %v, want an error before closed", kinds(got))
				}
				for _, ev := range got {
					if e := llm.Classify(ev.Err); e == nil || e.Kind != tt.wantKind || !strings.Contains(e.Message, tt.wantText) {
						t.Errorf("%s event error = %v, want kind %s with %q", ev.Kind, ev.Err, tt.wantKind, tt.wantText)
					}
				}
			}
			if err := sess.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			<-(<-srv.Conns()).Gone()
			checkNoLeaks(t)
		})
	}
}

func TestConnectRefused(t *testing.T) {
	tests := []struct {
		name       string
		key, agent string
		wantStatus int
	}{
		{name: "wrong key", key: "not-the-key", agent: testAgent, wantStatus: http.StatusUnauthorized},
		{name: "unknown agent", key: testKey, agent: "agent_other", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fake.New(t, fake.Script{AgentID: testAgent, APIKey: testKey, ExpectRefusals: true})
			client, err := New(Config{APIKey: tt.key, AgentID: tt.agent, BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			ls, err := client.Connect(context.Background(), voice.LiveConfig{})
			e := llm.Classify(err)
			if ls != nil || e == nil || e.Kind != llm.KindBadRequest || e.Status != tt.wantStatus || !strings.Contains(e.Message, tt.agent) {
				t.Fatalf("Connect = %v, %v; want a bad request with HTTP %d naming the agent", ls, err, tt.wantStatus)
			}
			if len(srv.Refusals()) != 1 {
				t.Errorf("fake refusals = %q", srv.Refusals())
			}
			checkNoLeaks(t)
		})
	}
}

// rawServer runs script on each WebSocket connection, for handshakes the
// fake, which always answers, cannot produce.
func rawServer(t *testing.T, script func(c *websocket.Conn)) (*Client, <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		defer close(done)
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(safetyNet))
		script(c)
	}))
	t.Cleanup(srv.Close)
	client, err := New(Config{APIKey: testKey, AgentID: testAgent, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client, done
}

// drainUntilGone reads until the client goes away.
func drainUntilGone(c *websocket.Conn) {
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}

func TestHandshakeFailures(t *testing.T) {
	tests := []struct {
		name     string
		script   func(c *websocket.Conn)
		wantKind llm.Kind
		wantText string
	}{
		{
			name: "refused initiation",
			script: func(c *websocket.Conn) {
				_, _, _ = c.ReadMessage()
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","error_event":{"code":1008,"error_type":"override_error","message":"Override for field 'prompt' is not allowed by config."}}`))
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "invalid override"))
				drainUntilGone(c)
			},
			wantKind: llm.KindBadRequest,
			wantText: "waiting for conversation metadata: server closed the conversation (code 1008): invalid override; override_error: Override for field 'prompt' is not allowed by config.",
		},
		{
			name: "normal close before metadata",
			script: func(c *websocket.Conn) {
				_, _, _ = c.ReadMessage()
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
				drainUntilGone(c)
			},
			wantKind: llm.KindServer,
			wantText: "before sending its metadata",
		},
		{
			name: "something else first",
			script: func(c *websocket.Conn) {
				_, _, _ = c.ReadMessage()
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"audio","audio_event":{"audio_base_64":"AAA=","event_id":1}}`))
				drainUntilGone(c)
			},
			wantKind: llm.KindServer,
			wantText: `got "audio" before conversation_initiation_metadata`,
		},
		{
			name: "documented but unused message before metadata skipped",
			script: func(c *websocket.Conn) {
				_, _, _ = c.ReadMessage()
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"vad_score","vad_score_event":{"vad_score":0.1}}`))
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"conversation_initiation_metadata","conversation_initiation_metadata_event":{"conversation_id":"c","agent_output_audio_format":"pcm_16000","user_input_audio_format":"pcm_16000"}}`))
				drainUntilGone(c)
			},
		},
		{
			name: "ping answered before metadata",
			script: func(c *websocket.Conn) {
				_, _, _ = c.ReadMessage()
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping","ping_event":{"event_id":3,"ping_ms":null}}`))
				_, pong, _ := c.ReadMessage()
				if string(pong) != `{"type":"pong","event_id":3}` {
					_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "bad pong "+string(pong)))
				} else {
					_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"conversation_initiation_metadata","conversation_initiation_metadata_event":{"conversation_id":"c","agent_output_audio_format":"pcm_16000","user_input_audio_format":"pcm_16000"}}`))
				}
				drainUntilGone(c)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, serverDone := rawServer(t, tt.script)
			ls, err := client.Connect(context.Background(), voice.LiveConfig{})
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("Connect = %v", err)
				}
				_ = ls.Close()
			} else if e := llm.Classify(err); ls != nil || e == nil || e.Kind != tt.wantKind || !strings.Contains(e.Message, tt.wantText) {
				t.Fatalf("Connect = %v, %v; want kind %s with %q", ls, err, tt.wantKind, tt.wantText)
			}
			<-serverDone
			checkNoLeaks(t)
		})
	}
}

func TestConnectCanceled(t *testing.T) {
	initSeen := make(chan struct{})
	client, serverDone := rawServer(t, func(c *websocket.Conn) {
		_, _, _ = c.ReadMessage()
		close(initSeen)
		drainUntilGone(c) // never answers; ends when the client gives up
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		ls, err := client.Connect(ctx, voice.LiveConfig{})
		if ls != nil {
			_ = ls.Close()
		}
		errc <- err
	}()
	<-initSeen
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || llm.Classify(err).Kind != llm.KindCanceled {
		t.Fatalf("Connect = %v, want canceled", err)
	}
	<-serverDone
	checkNoLeaks(t)
}

func TestContextCancel(t *testing.T) {
	client, srv := startFake(t, fake.Script{})
	ctx, cancel := context.WithCancel(context.Background())
	ls, err := client.Connect(ctx, voice.LiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	conn := <-srv.Conns()
	cancel()
	got := collect(t, ls)
	if len(got) != 1 || got[0].Kind != voice.EventClosed || got[0].Err != nil {
		t.Fatalf("events = %+v, want one clean closed event", got)
	}
	if err := ls.SendText("late"); !errors.Is(err, ErrClosed) {
		t.Errorf("send after cancel = %v, want ErrClosed", err)
	}
	if err := ls.Close(); err != nil {
		t.Errorf("Close after cancel = %v", err)
	}
	<-conn.Gone()
	checkNoLeaks(t)
}

func TestCloseIdempotent(t *testing.T) {
	tests := []struct {
		name  string
		steps []fake.Step
		// fill waits until the reader is parked on a full event buffer.
		fill bool
	}{
		{name: "idle"},
		{name: "reader blocked on a full buffer", steps: manyAudio(4 * eventBuffer), fill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, srv := startFake(t, fake.Script{Steps: tt.steps})
			sess := connect(t, client, voice.LiveConfig{})
			conn := <-srv.Conns()
			for tt.fill && len(sess.Events()) < cap(sess.Events()) {
				time.Sleep(time.Millisecond)
			}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = sess.Close()
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Close %d = %v", i, err)
				}
			}
			if !sess.stream.Exited() {
				t.Fatal("Close returned before the reader goroutine exited")
			}
			if err := sess.SendAudio([]byte{1, 2}, ""); !errors.Is(err, ErrClosed) {
				t.Errorf("send after Close = %v, want ErrClosed", err)
			}
			n := len(collect(t, sess))
			if tt.fill && (n == 0 || n > eventBuffer) {
				t.Errorf("drained %d buffered events after Close", n)
			}
			<-conn.Gone()
			checkNoLeaks(t)
		})
	}
}

func manyAudio(n int) []fake.Step {
	steps := []fake.Step{fake.AgentResponse("a long reply")}
	for range n {
		steps = append(steps, fake.Audio([]byte{1, 2, 3, 4}))
	}
	return steps
}

// Pings arrive while several goroutines send audio; the pongs and the
// chunks must reach the fake as whole messages, or it refuses them.
func TestConcurrentSends(t *testing.T) {
	const senders, each, chunkSize, pings = 8, 25, 16 << 10, 20
	var steps []fake.Step
	for i := range int64(pings) {
		steps = append(steps, fake.Ping(i+1, 0), fake.AwaitPong(i+1))
	}
	steps = append(steps, fake.AwaitAudio(senders*each*chunkSize), fake.Close(websocket.CloseNormalClosure, ""))
	client, srv := startFake(t, fake.Script{Steps: steps})
	sess := connect(t, client, voice.LiveConfig{})
	conn := <-srv.Conns()
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				chunk := make([]byte, chunkSize)
				chunk[0], chunk[1] = byte(g), byte(i)
				if err := sess.SendAudio(chunk, ""); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := collect(t, sess); len(got) != 1 || got[0].Err != nil {
		t.Errorf("events = %+v, want one clean closed event", got)
	}
	_ = sess.Close()
	<-conn.Gone()
	seen := map[[2]byte]bool{}
	pongs := 0
	for _, m := range conn.Received() {
		switch m.Type {
		case fake.AudioChunk:
			seen[[2]byte{m.Audio[0], m.Audio[1]}] = true
		case "pong":
			pongs++
		}
	}
	if len(seen) != senders*each || pongs != pings {
		t.Errorf("the fake got %d distinct chunks and %d pongs, want %d and %d", len(seen), pongs, senders*each, pings)
	}
	checkNoLeaks(t)
}

func TestSendRejectsBadInput(t *testing.T) {
	client, srv := startFake(t, fake.Script{})
	sess := connect(t, client, voice.LiveConfig{})
	conn := <-srv.Conns()
	tests := []struct {
		name    string
		err     error
		wantBad bool
	}{
		{name: "tool result without call id", err: sess.SendToolResponse([]llm.ToolResult{{Name: "f", Content: json.RawMessage(`{}`)}}), wantBad: true},
		{name: "tool result that is not JSON", err: sess.SendToolResponse([]llm.ToolResult{{CallID: "c", Content: json.RawMessage(`{broken`)}}), wantBad: true},
		{name: "no audio", err: sess.SendAudio(nil, "")},
		{name: "no text", err: sess.SendText("")},
		{name: "no results", err: sess.SendToolResponse(nil)},
		{name: "no contextual update", err: sess.SendContextualUpdate("")},
	}
	for _, tt := range tests {
		e := llm.Classify(tt.err)
		if tt.wantBad && (e == nil || e.Kind != llm.KindBadRequest) || !tt.wantBad && tt.err != nil {
			t.Errorf("%s: %v", tt.name, tt.err)
		}
	}
	if err := sess.SendContextualUpdate("The candidate shared their screen."); err != nil {
		t.Fatal(err)
	}
	if err := sess.SendUserActivity(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	<-conn.Gone()
	var got []map[string]any
	for _, m := range conn.Received()[1:] {
		got = append(got, m.Fields)
	}
	want := []map[string]any{
		{"type": "contextual_update", "text": "The candidate shared their screen."},
		{"type": "user_activity"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the fake received %#v, want %#v", got, want)
	}
	checkNoLeaks(t)
}

// The fake must refuse what the service would, or tests passing against it
// prove nothing.
func TestFakeIsStrict(t *testing.T) {
	init := `{"type":"conversation_initiation_client_data"}`
	tests := []struct {
		name string
		send []string
		// binary sends the last message as a binary frame.
		binary     bool
		wantReason string
	}{
		{name: "undocumented override field", send: []string{`{"type":"conversation_initiation_client_data","conversation_config_override":{"agent":{"prompt":{"prompt":"x","temperature":0.2}}}}`},
			wantReason: `undocumented field "conversation_config_override.agent.prompt.temperature"`},
		{name: "mistyped voice", send: []string{`{"type":"conversation_initiation_client_data","conversation_config_override":{"tts":{"voice_id":7}}}`},
			wantReason: `field "conversation_config_override.tts.voice_id" must be a string`},
		{name: "audio before initiation", send: []string{`{"user_audio_chunk":"AAA="}`}, wantReason: "first message must be conversation_initiation_client_data"},
		{name: "unknown type", send: []string{init, `{"type":"user_audio","audio":"AAA="}`}, wantReason: `unknown type "user_audio"`},
		{name: "typed audio", send: []string{init, `{"type":"audio","user_audio_chunk":"AAA="}`}, wantReason: "user audio carries only user_audio_chunk"},
		{name: "audio not base64", send: []string{init, `{"user_audio_chunk":"not base64!"}`}, wantReason: "not base64"},
		{name: "pong for no ping", send: []string{init, `{"type":"pong","event_id":5}`}, wantReason: "no ping awaits"},
		{name: "tool result for no call", send: []string{init, `{"type":"client_tool_result","tool_call_id":"x","result":"ok","is_error":false}`}, wantReason: "no client_tool_call awaits"},
		{name: "tool result without is_error", send: []string{init, `{"type":"client_tool_result","tool_call_id":"x","result":"ok"}`}, wantReason: `missing field "is_error"`},
		{name: "tool result as an object", send: []string{init, `{"type":"client_tool_result","tool_call_id":"x","result":{"ok":true},"is_error":false}`}, wantReason: `field "result" must be a string`},
		{name: "second initiation", send: []string{init, init}, wantReason: "second conversation_initiation_client_data"},
		{name: "not JSON", send: []string{init, `hello`}, wantReason: "not one JSON object"},
		{name: "binary frame", send: []string{init, `{"user_audio_chunk":"AAA="}`}, binary: true, wantReason: "binary frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fake.New(t, fake.Script{AgentID: testAgent, ExpectRefusals: true})
			c, _, err := websocket.DefaultDialer.Dial(srv.URL+"/v1/convai/conversation?agent_id="+testAgent, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(safetyNet))
			for i, m := range tt.send {
				frame := websocket.TextMessage
				if tt.binary && i == len(tt.send)-1 {
					frame = websocket.BinaryMessage
				}
				if err := c.WriteMessage(frame, []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			var ce *websocket.CloseError
			for {
				if _, _, err = c.ReadMessage(); err != nil {
					break
				}
			}
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, tt.wantReason) {
				t.Fatalf("connection ended with %v, want a policy-violation close saying %q", err, tt.wantReason)
			}
			if r := srv.Refusals(); len(r) != 1 || !strings.Contains(r[0], tt.wantReason) {
				t.Errorf("refusals = %q", r)
			}
		})
	}
}

func TestFakeRefusesHandshake(t *testing.T) {
	tests := []struct {
		name, path string
		header     http.Header
		wantStatus int
	}{
		{name: "wrong path", path: "/v1/convai/conversations?agent_id=" + testAgent, header: http.Header{"Xi-Api-Key": {testKey}}, wantStatus: http.StatusNotFound},
		{name: "no agent id", path: "/v1/convai/conversation", header: http.Header{"Xi-Api-Key": {testKey}}, wantStatus: http.StatusBadRequest},
		{name: "undocumented query", path: "/v1/convai/conversation?agent_id=" + testAgent + "&model=x", header: http.Header{"Xi-Api-Key": {testKey}}, wantStatus: http.StatusBadRequest},
		{name: "no key", path: "/v1/convai/conversation?agent_id=" + testAgent, wantStatus: http.StatusUnauthorized},
		{name: "key in the query", path: "/v1/convai/conversation?agent_id=" + testAgent + "&xi-api-key=" + testKey, wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fake.New(t, fake.Script{AgentID: testAgent, APIKey: testKey, ExpectRefusals: true})
			c, resp, err := websocket.DefaultDialer.Dial(srv.URL+tt.path, tt.header)
			if err == nil {
				c.Close()
				t.Fatal("the fake accepted the upgrade")
			}
			if resp == nil || resp.StatusCode != tt.wantStatus {
				t.Fatalf("Dial = %v, %v; want HTTP %d", resp, err, tt.wantStatus)
			}
		})
	}
}
