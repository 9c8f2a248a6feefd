package geminilive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/gorilla/websocket"
	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/voice"
)

// read is the session's only reader. It ends when the connection fails or
// closes, after delivering a final EventClosed and closing the channel.
func (s *Session) read() {
	defer s.stream.Exit()
	final := voice.Event{Kind: voice.EventClosed}
	defer func() {
		if p := recover(); p != nil {
			final.Err = fmt.Errorf("geminilive: receive: SDK panicked: %v", p)
		}
		s.finish(final)
	}()
	for {
		msg, err := s.sess.Receive()
		if err != nil {
			if s.stream.Stopped() {
				return // Close or context cancellation: a clean end.
			}
			if isDecodeError(err) {
				// One unreadable message does not doom the session.
				if !s.stream.Emit(voice.Event{Kind: voice.EventError, Err: fmt.Errorf("geminilive: receive: %w", err)}) {
					return
				}
				continue
			}
			final.Err = receiveError(err)
			return
		}
		for _, ev := range translate(msg) {
			if !s.stream.Emit(ev) {
				return
			}
		}
	}
}

// finish releases the socket now rather than at Close (the server may
// have sent an error and left it open; a second close is harmless) and
// delivers the last events.
func (s *Session) finish(final voice.Event) {
	_ = s.sess.Close()
	s.stream.Finish(final)
}

func isDecodeError(err error) bool {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &syntaxErr) || errors.As(err, &typeErr)
}

// receiveError classifies why the connection ended. A normal or going-away
// close frame is a clean end (nil); other close codes carry the server's
// reason, mapped to the adapter error kinds hosts already handle.
func receiveError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		kind := llm.KindUnknown
		switch ce.Code {
		case websocket.CloseNormalClosure, websocket.CloseGoingAway:
			return nil
		case websocket.CloseInvalidFramePayloadData, websocket.ClosePolicyViolation, websocket.CloseUnsupportedData, websocket.CloseMessageTooBig:
			kind = llm.KindBadRequest
		case websocket.CloseInternalServerErr, websocket.CloseServiceRestart:
			kind = llm.KindServer
		case websocket.CloseTryAgainLater:
			kind = llm.KindRateLimit
		case websocket.CloseAbnormalClosure:
			kind = llm.KindNetwork
		}
		return llm.NewError(kind, 0, err, "geminilive: server closed the session (code %d): %s", ce.Code, ce.Text)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return llm.NewError(llm.KindNetwork, 0, err, "geminilive: connection lost: %v", err)
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: "geminilive: receive: " + e.Message, Retryable: e.Retryable, Err: err}
}

func isClosedConn(err error) bool {
	return errors.Is(err, net.ErrClosed)
}

// translate turns one server message into events, in the order a listener
// needs them: what the candidate said, what the agent says (audio before
// its transcript), then the turn signals. The setupComplete message, usage
// and session-management messages produce nothing; a tool-call
// cancellation has no event kind and is dropped, which is safe because
// the model ignores a late answer to a cancelled call.
func translate(msg *genai.LiveServerMessage) []voice.Event {
	if msg == nil {
		return nil
	}
	var out []voice.Event
	if sc := msg.ServerContent; sc != nil {
		// The SDK's Transcription carries no confidence, so Confidence
		// stays nil with this provider.
		if t := sc.InterimInputTranscription; t != nil && t.Text != "" {
			out = append(out, voice.Event{Kind: voice.EventUserTranscript, Text: t.Text})
		}
		if t := sc.InputTranscription; t != nil && (t.Text != "" || t.Finished) {
			out = append(out, voice.Event{Kind: voice.EventUserTranscript, Text: t.Text, Final: t.Finished})
		}
		if mt := sc.ModelTurn; mt != nil {
			for _, p := range mt.Parts {
				switch {
				case p == nil || p.Thought:
				case p.InlineData != nil && len(p.InlineData.Data) > 0:
					out = append(out, voice.Event{Kind: voice.EventAgentAudio, Audio: p.InlineData.Data, MIMEType: p.InlineData.MIMEType})
				case p.Text != "":
					out = append(out, voice.Event{Kind: voice.EventAgentText, Text: p.Text})
				}
			}
		}
		if t := sc.OutputTranscription; t != nil && (t.Text != "" || t.Finished) {
			out = append(out, voice.Event{Kind: voice.EventAgentText, Text: t.Text, Final: t.Finished})
		}
		if sc.Interrupted {
			out = append(out, voice.Event{Kind: voice.EventInterrupted})
		}
		if sc.TurnComplete {
			out = append(out, voice.Event{Kind: voice.EventTurnComplete})
		}
	}
	if tc := msg.ToolCall; tc != nil && len(tc.FunctionCalls) > 0 {
		calls, err := gemini.ToolCalls(tc.FunctionCalls, nil)
		if err != nil {
			out = append(out, voice.Event{Kind: voice.EventError, Err: fmt.Errorf("geminilive: tool call: %w", err)})
		} else if len(calls) > 0 {
			out = append(out, voice.Event{Kind: voice.EventToolCall, ToolCalls: calls})
		}
	}
	return out
}
