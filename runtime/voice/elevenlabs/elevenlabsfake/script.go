package elevenlabsfake

import (
	"encoding/base64"
	"time"

	"github.com/gorilla/websocket"
)

// Step is one thing a script waits for or sends.
type Step struct {
	await func(c *Conn) bool
	send  func(c *Conn) error
}

// deadline bounds the fake's control frames so a client that stopped
// reading cannot stall it.
func deadline() time.Time { return time.Now().Add(time.Second) }

// AwaitAudio waits until n bytes of user audio have arrived since the
// previous audio step ended (or since the start).
func AwaitAudio(n int) Step {
	return Step{await: func(c *Conn) bool {
		if len(c.audio)-c.audioMark < n {
			return false
		}
		c.audioMark = len(c.audio)
		return true
	}}
}

// AwaitSilence waits for the end of an utterance: some audio that is not
// all zero since the previous audio step, then at least n bytes of zero
// samples in a row. Playing a recording followed by digital silence
// triggers it; the service's own end-of-turn detection is not modelled.
func AwaitSilence(n int) Step {
	return Step{await: func(c *Conn) bool {
		if c.lastSound <= c.audioMark || len(c.audio)-c.lastSound < n {
			return false
		}
		c.audioMark = len(c.audio)
		return true
	}}
}

// AwaitMessage waits for the next message of type typ (AudioChunk for
// audio) after the one the previous AwaitMessage matched.
func AwaitMessage(typ string) Step { return Step{await: awaitMessage(typ)} }

func awaitMessage(typ string) func(c *Conn) bool {
	return func(c *Conn) bool {
		for i := c.cursor; i < len(c.received); i++ {
			if c.received[i].Type == typ {
				c.cursor = i + 1
				return true
			}
		}
		return false
	}
}

// AwaitPong waits for the pong answering the ping with this event id,
// which may have come before the step ran.
func AwaitPong(eventID int64) Step {
	return Step{await: func(c *Conn) bool {
		for _, m := range c.received {
			if m.Type == pongType && m.Fields["event_id"] == float64(eventID) {
				return true
			}
		}
		return false
	}}
}

// AwaitToolResult waits for the client_tool_result answering this call,
// which may have come before the step ran.
func AwaitToolResult(toolCallID string) Step {
	return Step{await: func(c *Conn) bool {
		for _, m := range c.received {
			if m.Type == toolResultType && m.Fields["tool_call_id"] == toolCallID {
				return true
			}
		}
		return false
	}}
}

// Send sends v as JSON, as it is: for messages the other steps do not
// build, or ones the contract does not know.
func Send(v any) Step {
	return Step{send: func(c *Conn) error { return c.write(v) }}
}

// sendTurn builds a message that carries the current turn's event id,
// after moving to a new turn when next is set.
func sendTurn(next bool, build func(turn int64) map[string]any) Step {
	return Step{send: func(c *Conn) error {
		c.mu.Lock()
		if next {
			c.turn++
		}
		msg := build(c.turn)
		c.mu.Unlock()
		return c.write(msg)
	}}
}

// UserTranscript sends the transcript of a finished user utterance; it
// starts a turn.
func UserTranscript(text string) Step {
	return sendTurn(true, func(turn int64) map[string]any {
		return map[string]any{"type": "user_transcript", "user_transcription_event": map[string]any{"user_transcript": text, "event_id": turn}}
	})
}

// TentativeUserTranscript sends a transcript still in progress, for the
// turn about to start.
func TentativeUserTranscript(text string) Step {
	return sendTurn(false, func(turn int64) map[string]any {
		return map[string]any{"type": "tentative_user_transcript", "tentative_user_transcription_event": map[string]any{"user_transcript": text, "event_id": turn + 1}}
	})
}

// AgentResponse sends the agent's reply text; it starts a turn, which the
// Audio steps after it belong to.
func AgentResponse(text string) Step {
	return sendTurn(true, func(turn int64) map[string]any {
		return map[string]any{"type": "agent_response", "agent_response_event": map[string]any{"agent_response": text, "event_id": turn}}
	})
}

// AgentResponseCorrection sends the trimmed text of an interrupted reply.
func AgentResponseCorrection(original, corrected string) Step {
	return sendTurn(false, func(turn int64) map[string]any {
		return map[string]any{"type": "agent_response_correction", "agent_response_correction_event": map[string]any{
			"original_agent_response": original, "corrected_agent_response": corrected, "event_id": turn,
		}}
	})
}

// Audio sends one chunk of agent audio of the current turn.
func Audio(chunk []byte) Step {
	return sendTurn(false, func(turn int64) map[string]any {
		return map[string]any{"type": "audio", "audio_event": map[string]any{"audio_base_64": base64.StdEncoding.EncodeToString(chunk), "event_id": turn}}
	})
}

// Interruption says the user barged in on the current turn; audio of that
// turn still to come is stale.
func Interruption() Step {
	return sendTurn(false, func(turn int64) map[string]any {
		return map[string]any{"type": "interruption", "interruption_event": map[string]any{"event_id": turn}}
	})
}

// VADScore sends a voice-activity score between 0 and 1.
func VADScore(score float64) Step {
	return Send(map[string]any{"type": "vad_score", "vad_score_event": map[string]any{"vad_score": score}})
}

// Ping sends a ping; the client must answer it with a pong carrying the
// same event id (AwaitPong waits for it). pingMS is the latency estimate
// the service reports; 0 sends null, as on the first ping.
func Ping(eventID int64, pingMS int) Step {
	return Step{send: func(c *Conn) error {
		c.mu.Lock()
		c.pings[eventID] = true
		c.mu.Unlock()
		var ms any
		if pingMS > 0 {
			ms = pingMS
		}
		return c.write(map[string]any{"type": "ping", "ping_event": map[string]any{"event_id": eventID, "ping_ms": ms}})
	}}
}

// ToolCall asks the client to run one of the agent's client tools; the
// client answers with a client_tool_result (AwaitToolResult waits for it).
func ToolCall(toolCallID, toolName string, parameters map[string]any) Step {
	return Step{send: func(c *Conn) error {
		c.mu.Lock()
		c.toolCalls[toolCallID] = true
		turn := c.turn
		c.mu.Unlock()
		if parameters == nil {
			parameters = map[string]any{}
		}
		return c.write(map[string]any{"type": "client_tool_call", "client_tool_call": map[string]any{
			"tool_name": toolName, "tool_call_id": toolCallID, "parameters": parameters, "event_id": turn,
		}})
	}}
}

// Close sends a close frame with this code and reason and drops the
// connection, as the service does when it ends a conversation.
func Close(code int, reason string) Step {
	return Step{send: func(c *Conn) error {
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), deadline())
		_ = c.ws.Close()
		return errStop
	}}
}

// Drop cuts the connection without a close frame, as a network failure
// would.
func Drop() Step {
	return Step{send: func(c *Conn) error {
		_ = c.ws.Close()
		return errStop
	}}
}
