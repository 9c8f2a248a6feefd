package elevenlabs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// closeFrameWait bounds the close frame Close sends, so a peer that
// stopped reading cannot stall Close.
const closeFrameWait = time.Second

// Session is an open ElevenLabs agent conversation.
type Session struct {
	conn      *websocket.Conn
	meta      metadata
	stream    *voice.Stream
	closeOnce sync.Once
	closeErr  error
	stopCtx   func() bool

	// sendMu serializes writes: the connection allows one writer at a time.
	sendMu sync.Mutex

	// lastInterrupt is the event_id of the last interruption; the reader
	// alone touches it.
	lastInterrupt int64
}

var _ voice.LiveSession = (*Session)(nil)

func start(ctx context.Context, conn *websocket.Conn, meta metadata) *Session {
	s := &Session{
		conn:          conn,
		meta:          meta,
		stream:        voice.NewStream(eventBuffer),
		lastInterrupt: -1,
	}
	// AfterFunc rather than a watcher goroutine: nothing runs until ctx
	// ends, and Close can cancel it. The callback must not touch stopCtx:
	// with ctx already done it runs before the assignment completes.
	s.stopCtx = context.AfterFunc(ctx, func() { _ = s.shutdown() })
	go s.read()
	return s
}

// ConversationID is the service's id for this conversation, for logs and
// its conversation history API.
func (s *Session) ConversationID() string { return s.meta.conversationID }

// InputMIME is the audio format SendAudio takes, as the server fixed it,
// e.g. "audio/pcm;rate=16000" (16-bit little-endian mono PCM).
func (s *Session) InputMIME() string { return s.meta.inputMIME }

// OutputMIME is the format of the agent's audio events.
func (s *Session) OutputMIME() string { return s.meta.outputMIME }

// Events returns the event stream; see voice.LiveSession.
func (s *Session) Events() <-chan voice.Event { return s.stream.Events() }

// SendAudio streams candidate audio. The service takes only the input
// format its metadata named (InputMIME); an empty mime means that format
// and any other is refused, since the service cannot be told of another
// and would hear noise.
func (s *Session) SendAudio(chunk []byte, mime string) error {
	if mime != "" && !sameAudioType(mime, s.meta.inputMIME) {
		return llm.NewError(llm.KindBadRequest, 0, nil,
			"elevenlabs: send audio: mime type %q does not match the agent's input format %s (%s); resample the audio or change the agent's user input audio format",
			mime, s.meta.inputFormat, s.meta.inputMIME)
	}
	if len(chunk) == 0 {
		return nil
	}
	return s.send("send audio", audioMessage{UserAudioChunk: base64.StdEncoding.EncodeToString(chunk)})
}

// SendText sends typed candidate input as a user_message, which the agent
// answers as it would speech.
func (s *Session) SendText(text string) error {
	if text == "" {
		return nil
	}
	return s.send("send text", textMessage{Type: typeUserMessage, Text: text})
}

// SendContextualUpdate tells the agent something without prompting a
// reply (the contextual_update message).
func (s *Session) SendContextualUpdate(text string) error {
	if text == "" {
		return nil
	}
	return s.send("send contextual update", textMessage{Type: typeContextualUpdate, Text: text})
}

// SendUserActivity tells the agent the candidate is still there, which
// holds off its turn-taking for a moment (the user_activity message).
func (s *Session) SendUserActivity() error {
	return s.send("send user activity", typeOnlyMessage{Type: typeUserActivity})
}

// SendToolResponse answers client tool calls, one client_tool_result per
// result, matched by ToolResult.CallID. Content becomes the result string:
// a JSON string as its text, any other JSON value as compact JSON. All
// results are checked before any is sent.
func (s *Session) SendToolResponse(results []llm.ToolResult) error {
	msgs := make([]any, 0, len(results))
	for _, r := range results {
		if r.CallID == "" {
			return llm.NewError(llm.KindBadRequest, 0, nil, "elevenlabs: send tool response: result for %q has no call id", r.Name)
		}
		text, err := toolResultText(r.Content)
		if err != nil {
			return llm.NewError(llm.KindBadRequest, 0, err, "elevenlabs: send tool response %s: content is not JSON: %v", r.CallID, err)
		}
		msgs = append(msgs, toolResultMessage{Type: typeToolResult, ToolCallID: r.CallID, Result: text, IsError: r.IsError})
	}
	return s.send("send tool response", msgs...)
}

// send writes msgs in order, with no other write between them.
func (s *Session) send(what string, msgs ...any) error {
	if len(msgs) == 0 {
		return nil
	}
	datas := make([][]byte, len(msgs))
	for i, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			return llm.NewError(llm.KindBadRequest, 0, err, "elevenlabs: %s: %v", what, err)
		}
		datas[i] = data
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.stream.Stopped() {
		return ErrClosed
	}
	for _, data := range datas {
		if err := s.conn.WriteMessage(websocket.TextMessage, data); err != nil {
			if s.stream.Stopped() {
				// Close raced with this write and cut the connection under it.
				return ErrClosed
			}
			return during(what, llm.Classify(err))
		}
	}
	return nil
}

// Close ends the session and waits for the reader goroutine to exit. It is
// safe to call more than once and from any goroutine; later calls return
// the first call's result.
func (s *Session) Close() error {
	// The session was handed out after stopCtx was set, so reading it here
	// is safe.
	s.stopCtx()
	return s.shutdown()
}

func (s *Session) shutdown() error {
	s.closeOnce.Do(func() {
		s.stream.Stop()
		// A normal close frame tells the service the conversation ended on
		// purpose. WriteControl may run alongside a blocked writer; closing
		// the socket then unblocks the reader and any write in progress.
		_ = s.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, "conversation ended"),
			time.Now().Add(closeFrameWait))
		s.closeErr = s.conn.Close()
		s.stream.Wait()
		if s.closeErr != nil && errors.Is(s.closeErr, net.ErrClosed) {
			s.closeErr = nil
		}
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("elevenlabs: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}
