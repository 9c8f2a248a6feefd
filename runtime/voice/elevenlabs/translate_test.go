package elevenlabs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		// lastInterrupt is the session's state before the message.
		lastInterrupt int64
		msg           string
		want          []voice.Event
		wantErr       string // the one event is an error containing this
		wantPong      string
		wantInterrupt int64
	}{
		{name: "user transcript", msg: `{"type":"user_transcript","user_transcription_event":{"user_transcript":"hi","event_id":1}}`,
			want: []voice.Event{{Kind: voice.EventUserTranscript, Text: "hi", Final: true}}},
		{name: "tentative transcript", msg: `{"type":"tentative_user_transcript","tentative_user_transcription_event":{"user_transcript":"h","event_id":1}}`,
			want: []voice.Event{{Kind: voice.EventUserTranscript, Text: "h"}}},
		{name: "agent response ends the turn", msg: `{"type":"agent_response","agent_response_event":{"agent_response":"Hello.","event_id":2}}`,
			want: []voice.Event{{Kind: voice.EventAgentText, Text: "Hello.", Final: true}, {Kind: voice.EventTurnComplete}}},
		{name: "correction dropped", msg: `{"type":"agent_response_correction","agent_response_correction_event":{"original_agent_response":"a b","corrected_agent_response":"a","event_id":2}}`},
		{name: "audio", msg: `{"type":"audio","audio_event":{"audio_base_64":"AQI=","event_id":3}}`, lastInterrupt: 2,
			want: []voice.Event{{Kind: voice.EventAgentAudio, Audio: []byte{1, 2}, MIMEType: "audio/pcm;rate=16000"}}},
		{name: "audio of the interrupted turn dropped", msg: `{"type":"audio","audio_event":{"audio_base_64":"AQI=","event_id":2}}`, lastInterrupt: 2},
		{name: "audio with its id as a string", msg: `{"type":"audio","audio_event":{"audio_base_64":"AQI=","event_id":"1"}}`, lastInterrupt: 2},
		{name: "audio not base64", msg: `{"type":"audio","audio_event":{"audio_base_64":"%%","event_id":3}}`, wantErr: "audio_base_64"},
		{name: "audio without event", msg: `{"type":"audio"}`, wantErr: "audio message without audio_event"},
		{name: "interruption", msg: `{"type":"interruption","interruption_event":{"event_id":4}}`, lastInterrupt: 2,
			want: []voice.Event{{Kind: voice.EventInterrupted}}, wantInterrupt: 4},
		{name: "interruption as the docs' guide shows it, with a reason", msg: `{"type":"interruption","interruption_event":{"reason":"user"}}`, lastInterrupt: 2,
			want: []voice.Event{{Kind: voice.EventInterrupted}}, wantInterrupt: 2},
		{name: "ping", msg: `{"type":"ping","ping_event":{"event_id":12345,"ping_ms":50}}`, wantPong: `{"type":"pong","event_id":12345}`},
		{name: "ping without id", msg: `{"type":"ping","ping_event":{"event_id":null}}`, wantErr: "ping_event.event_id"},
		{name: "tool call", msg: `{"type":"client_tool_call","client_tool_call":{"tool_name":"f","tool_call_id":"c1","parameters":{"a":[1, 2]},"event_id":5}}`,
			want: []voice.Event{{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Args: json.RawMessage(`{"a":[1, 2]}`)}}}}},
		{name: "tool call without parameters", msg: `{"type":"client_tool_call","client_tool_call":{"tool_name":"f","tool_call_id":"c1"}}`,
			want: []voice.Event{{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Args: json.RawMessage(`{}`)}}}}},
		{name: "tool call without id", msg: `{"type":"client_tool_call","client_tool_call":{"tool_name":"f"}}`, wantErr: "tool_call_id"},
		{name: "server error", msg: `{"type":"error","error_event":{"code":1002,"error_type":"llm_timeout","message":"LLM took too long"}}`,
			wantErr: "llm_timeout: LLM took too long"},
		{name: "documented but unused", msg: `{"type":"vad_score","vad_score_event":{"vad_score":0.5}}`},
		{name: "unknown", msg: `{"type":"hologram"}`, wantErr: `unknown message type "hologram"`},
		{name: "no type", msg: `{"user_transcription_event":{}}`, wantErr: `unknown message type ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{meta: metadata{outputMIME: "audio/pcm;rate=16000"}, lastInterrupt: tt.lastInterrupt}
			var msg serverMessage
			if err := json.Unmarshal([]byte(tt.msg), &msg); err != nil {
				t.Fatal(err)
			}
			got, pong := s.translate(&msg)
			if tt.wantErr != "" {
				if len(got) != 1 || got[0].Kind != voice.EventError || !strings.Contains(got[0].Err.Error(), tt.wantErr) {
					t.Fatalf("events = %+v, want one error containing %q", got, tt.wantErr)
				}
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %+v\nwant %+v", got, tt.want)
			}
			var pongJSON string
			if pong != nil {
				b, _ := json.Marshal(pong)
				pongJSON = string(b)
			}
			if pongJSON != tt.wantPong {
				t.Errorf("pong = %s, want %s", pongJSON, tt.wantPong)
			}
			if tt.wantInterrupt != 0 && s.lastInterrupt != tt.wantInterrupt {
				t.Errorf("last interruption = %d, want %d", s.lastInterrupt, tt.wantInterrupt)
			}
		})
	}
}

func TestServerErrorKinds(t *testing.T) {
	tests := []struct {
		code int
		want llm.Kind
	}{
		{1008, llm.KindBadRequest},
		{1002, llm.KindServer},
		{1011, llm.KindServer},
		{1013, llm.KindRateLimit},
		{4000, llm.KindUnknown},
	}
	for _, tt := range tests {
		s := &Session{}
		got, _ := s.translate(&serverMessage{Type: typeError, Error: &serverError{Code: tt.code, Reason: "r"}})
		if e := llm.Classify(got[0].Err); e.Kind != tt.want || !strings.Contains(e.Message, "server error: r") {
			t.Errorf("code %d: %v, want kind %s", tt.code, got[0].Err, tt.want)
		}
	}
}

func TestToolResultText(t *testing.T) {
	tests := []struct {
		content string
		want    string
		wantErr bool
	}{
		{content: ``, want: ``},
		{content: `"plain text"`, want: `plain text`},
		{content: `"with \"quotes\""`, want: `with "quotes"`},
		{content: ` { "b": 1, "a": [true, null] } `, want: `{"b":1,"a":[true,null]}`},
		{content: `12345678901234567890`, want: `12345678901234567890`},
		{content: `{broken`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := toolResultText(json.RawMessage(tt.content))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("toolResultText(%s) = %q, %v; want %q (error: %v)", tt.content, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatMIME(t *testing.T) {
	tests := []struct{ format, want string }{
		{"pcm_16000", "audio/pcm;rate=16000"},
		{"pcm_44100", "audio/pcm;rate=44100"},
		{"ulaw_8000", "audio/pcmu;rate=8000"},
		{"mp3_44100", ""},
		{"pcm", ""},
		{"pcm_fast", ""},
	}
	for _, tt := range tests {
		got, err := formatMIME(tt.format)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("formatMIME(%q) = %q, %v; want %q", tt.format, got, err, tt.want)
		}
	}
}

func TestUnknownMessageIsWrapped(t *testing.T) {
	s := &Session{}
	got, _ := s.translate(&serverMessage{Type: "x"})
	if !errors.Is(got[0].Err, ErrUnknownMessage) {
		t.Errorf("error %v does not wrap ErrUnknownMessage", got[0].Err)
	}
}
