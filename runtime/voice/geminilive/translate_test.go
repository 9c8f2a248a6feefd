package geminilive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/gorilla/websocket"
	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		msg  *genai.LiveServerMessage
		want []voice.Event
	}{
		{"nil", nil, nil},
		{"setup complete is silent", &genai.LiveServerMessage{SetupComplete: &genai.LiveServerSetupComplete{}}, nil},
		{"usage only is silent", &genai.LiveServerMessage{UsageMetadata: &genai.UsageMetadata{}}, nil},
		{
			"partial then final input transcript",
			&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{
				InterimInputTranscription: &genai.Transcription{Text: "I can"},
				InputTranscription:        &genai.Transcription{Text: "I can fix now", Finished: true},
			}},
			[]voice.Event{
				{Kind: voice.EventUserTranscript, Text: "I can"},
				{Kind: voice.EventUserTranscript, Text: "I can fix now", Final: true},
			},
		},
		{
			"empty transcript that finishes an utterance still counts",
			&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{InputTranscription: &genai.Transcription{Finished: true}}},
			[]voice.Event{{Kind: voice.EventUserTranscript, Final: true}},
		},
		{
			"empty transcripts are dropped",
			&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{
				InputTranscription: &genai.Transcription{}, OutputTranscription: &genai.Transcription{},
			}},
			nil,
		},
		{
			"model turn audio, text and thoughts, then transcript and signals",
			&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{
				ModelTurn: &genai.Content{Parts: []*genai.Part{
					nil,
					{Text: "planning", Thought: true},
					{InlineData: &genai.Blob{MIMEType: "audio/pcm;rate=24000", Data: []byte{1, 2}}},
					{InlineData: &genai.Blob{MIMEType: "audio/pcm;rate=24000"}},
					{Text: "hello"},
				}},
				OutputTranscription: &genai.Transcription{Text: "hello", Finished: true},
				Interrupted:         true,
				TurnComplete:        true,
			}},
			[]voice.Event{
				{Kind: voice.EventAgentAudio, Audio: []byte{1, 2}, MIMEType: "audio/pcm;rate=24000"},
				{Kind: voice.EventAgentText, Text: "hello"},
				{Kind: voice.EventAgentText, Text: "hello", Final: true},
				{Kind: voice.EventInterrupted},
				{Kind: voice.EventTurnComplete},
			},
		},
		{
			"tool calls keep server IDs and number missing ones",
			&genai.LiveServerMessage{ToolCall: &genai.LiveServerToolCall{FunctionCalls: []*genai.FunctionCall{
				{ID: "fc-1", Name: "a", Args: map[string]any{"x": 1}},
				{Name: "b"},
			}}},
			[]voice.Event{{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{
				{ID: "fc-1", Name: "a", Args: json.RawMessage(`{"x":1}`)},
				{ID: "call-2", Name: "b", Args: json.RawMessage(`{}`)},
			}}},
		},
		{"empty tool call is silent", &genai.LiveServerMessage{ToolCall: &genai.LiveServerToolCall{}}, nil},
		{"tool call cancellation has no event", &genai.LiveServerMessage{ToolCallCancellation: &genai.LiveServerToolCallCancellation{IDs: []string{"fc-1"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := translate(tt.msg); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("translate:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestReceiveError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		kind llm.Kind // empty: a clean end
	}{
		{"normal close", &websocket.CloseError{Code: websocket.CloseNormalClosure}, ""},
		{"going away", &websocket.CloseError{Code: websocket.CloseGoingAway}, ""},
		{"internal error", &websocket.CloseError{Code: websocket.CloseInternalServerErr, Text: "boom"}, llm.KindServer},
		{"invalid payload", &websocket.CloseError{Code: websocket.CloseInvalidFramePayloadData}, llm.KindBadRequest},
		{"try again later", &websocket.CloseError{Code: websocket.CloseTryAgainLater}, llm.KindRateLimit},
		{"abnormal", &websocket.CloseError{Code: websocket.CloseAbnormalClosure}, llm.KindNetwork},
		{"odd code", &websocket.CloseError{Code: 4000}, llm.KindUnknown},
		{"wrapped close", fmt.Errorf("read: %w", &websocket.CloseError{Code: websocket.CloseInternalServerErr}), llm.KindServer},
		{"eof", io.ErrUnexpectedEOF, llm.KindNetwork},
		{"other", errors.New("received error in response"), llm.KindUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := receiveError(tt.err)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("receiveError = %v, want nil", err)
				}
				return
			}
			e := llm.Classify(err)
			if e == nil || e.Kind != tt.kind || !errors.Is(err, tt.err) {
				t.Fatalf("receiveError = %v, want kind %s wrapping the cause", err, tt.kind)
			}
		})
	}
}
