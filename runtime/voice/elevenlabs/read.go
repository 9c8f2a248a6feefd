package elevenlabs

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// read is the session's only reader. It ends when the connection fails or
// closes, after delivering a final EventClosed and closing the channel.
func (s *Session) read() {
	defer s.stream.Exit()
	final := voice.Event{Kind: voice.EventClosed}
	defer func() { s.finish(final) }()
	// The service sends an error message before it closes for a failure;
	// its text explains the close better than the close frame alone.
	var serverErr *serverError
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			if s.stream.Stopped() {
				return // Close or context cancellation: a clean end.
			}
			final.Err = receiveError(err, serverErr)
			return
		}
		var msg serverMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			// One unreadable message does not doom the session.
			if !s.stream.Emit(voice.Event{Kind: voice.EventError, Err: fmt.Errorf("elevenlabs: undecodable message %.200q: %w", data, err)}) {
				return
			}
			continue
		}
		if msg.Type == typeError && msg.Error != nil {
			serverErr = msg.Error
		}
		evs, pong := s.translate(&msg)
		if pong != nil {
			if err := s.send("answer ping", pong); err != nil && !errors.Is(err, ErrClosed) {
				evs = append(evs, voice.Event{Kind: voice.EventError, Err: err})
			}
		}
		for _, ev := range evs {
			if !s.stream.Emit(ev) {
				return
			}
		}
	}
}

// translate turns one server message into events, and into the pong that
// answers a ping. Pings are answered at once: ping_ms is the service's
// estimate of the latency from earlier pings, not a delay it asks for
// (the docs' Next.js example waits ping_ms before answering; the SDKs do
// not).
func (s *Session) translate(msg *serverMessage) ([]voice.Event, *pongMessage) {
	malformed := func(member string) []voice.Event {
		return []voice.Event{{Kind: voice.EventError, Err: fmt.Errorf("elevenlabs: %s message without %s", msg.Type, member)}}
	}
	switch msg.Type {
	case typeUserTranscript:
		if msg.User == nil {
			return malformed("user_transcription_event"), nil
		}
		// The service sends user_transcript once per finished utterance;
		// it reports no confidence.
		return []voice.Event{{Kind: voice.EventUserTranscript, Text: msg.User.UserTranscript, Final: true}}, nil
	case typeTentativeUser:
		if msg.TentativeUser == nil {
			return malformed("tentative_user_transcription_event"), nil
		}
		return []voice.Event{{Kind: voice.EventUserTranscript, Text: msg.TentativeUser.UserTranscript}}, nil
	case typeAgentResponse:
		if msg.Agent == nil {
			return malformed("agent_response_event"), nil
		}
		// agent_response is the whole reply, sent with its first audio
		// chunk, so the turn is complete as text while its audio is still
		// arriving; the protocol marks no end of the audio.
		return []voice.Event{
			{Kind: voice.EventAgentText, Text: msg.Agent.AgentResponse, Final: true},
			{Kind: voice.EventTurnComplete},
		}, nil
	case typeAgentCorrection:
		// The correction trims an interrupted reply to what was spoken. A
		// voice.Event cannot replace text already delivered as final, and
		// repeating it as new text would record the reply twice, so it is
		// dropped: the transcript keeps the reply as generated.
		return nil, nil
	case typeAudio:
		if msg.Audio == nil {
			return malformed("audio_event"), nil
		}
		// Chunks of a reply that was interrupted can still be in flight;
		// the SDKs drop those whose event_id is not past the interruption's.
		if id, err := msg.Audio.EventID.Int64(); err == nil && id <= s.lastInterrupt {
			return nil, nil
		}
		audio, err := base64.StdEncoding.DecodeString(msg.Audio.AudioBase64)
		if err != nil {
			return []voice.Event{{Kind: voice.EventError, Err: fmt.Errorf("elevenlabs: audio_event.audio_base_64: %w", err)}}, nil
		}
		if len(audio) == 0 {
			return nil, nil
		}
		return []voice.Event{{Kind: voice.EventAgentAudio, Audio: audio, MIMEType: s.meta.outputMIME}}, nil
	case typeInterruption:
		if msg.Interruption != nil {
			if id, err := msg.Interruption.EventID.Int64(); err == nil && id > s.lastInterrupt {
				s.lastInterrupt = id
			}
		}
		return []voice.Event{{Kind: voice.EventInterrupted}}, nil
	case typePing:
		if msg.Ping == nil || len(msg.Ping.EventID) == 0 || string(msg.Ping.EventID) == "null" {
			return malformed("ping_event.event_id"), nil
		}
		return nil, &pongMessage{Type: typePong, EventID: msg.Ping.EventID}
	case typeClientToolCall:
		tc := msg.ToolCall
		if tc == nil || tc.ToolCallID == "" || tc.ToolName == "" {
			return malformed("client_tool_call.tool_call_id or tool_name"), nil
		}
		args := tc.Parameters
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		return []voice.Event{{Kind: voice.EventToolCall, ToolCalls: []llm.ToolCall{{ID: tc.ToolCallID, Name: tc.ToolName, Args: args}}}}, nil
	case typeError:
		if msg.Error == nil {
			return malformed("error_event"), nil
		}
		return []voice.Event{{Kind: voice.EventError, Err: llm.NewError(closeKind(msg.Error.Code), 0, nil, "elevenlabs: server error: %s", msg.Error.text())}}, nil
	case typeMetadata:
		return nil, nil // a repeat of the handshake's; nothing new
	}
	if ignored[msg.Type] {
		return nil, nil
	}
	return []voice.Event{{Kind: voice.EventError, Err: fmt.Errorf("elevenlabs: %w %q", ErrUnknownMessage, msg.Type)}}, nil
}

// finish releases the socket now rather than at Close (a second close
// is harmless) and delivers the last events.
func (s *Session) finish(final voice.Event) {
	_ = s.conn.Close()
	s.stream.Finish(final)
}

// receiveError classifies why the connection ended. A normal or going-away
// close is a clean end (nil); other close codes carry the server's reason,
// or the text of the error message that preceded the close.
func receiveError(err error, last *serverError) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case websocket.CloseNormalClosure, websocket.CloseGoingAway:
			return nil
		}
		reason := ce.Text
		if last != nil {
			if reason != "" {
				reason += "; "
			}
			reason += last.text()
		}
		if reason == "" {
			reason = "no reason given"
		}
		return llm.NewError(closeKind(ce.Code), 0, err, "elevenlabs: server closed the conversation (code %d): %s", ce.Code, reason)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return llm.NewError(llm.KindNetwork, 0, err, "elevenlabs: connection lost: %v", err)
	}
	return during("receive", llm.Classify(err))
}

// closeKind maps the service's close codes, as its contract lists them:
// 1008 is an input or contract error (invalid message, auth, override not
// allowed, missing dynamic variable); 1002 an operational failure on its
// side (LLM, TTS or ASR failure, timeouts, safety); 1011 an internal
// error.
func closeKind(code int) llm.Kind {
	switch code {
	case websocket.ClosePolicyViolation, websocket.CloseInvalidFramePayloadData,
		websocket.CloseUnsupportedData, websocket.CloseMessageTooBig:
		return llm.KindBadRequest
	case websocket.CloseProtocolError, websocket.CloseInternalServerErr, websocket.CloseServiceRestart:
		return llm.KindServer
	case websocket.CloseTryAgainLater:
		return llm.KindRateLimit
	case websocket.CloseAbnormalClosure:
		return llm.KindNetwork
	}
	return llm.KindUnknown
}
