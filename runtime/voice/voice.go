// Package voice holds Baton's speech adapter interfaces.
//
// Two shapes of voice exist. A Speaker turns one agent message into audio
// (text-to-speech) and reports how long it plays; the host answers the
// engine's agent_message effect with a speech_done input after that
// duration. A LiveSession is a speech-to-speech model session (Gemini Live):
// candidate audio streams in, agent audio, transcripts and tool calls
// stream out as Events. Like runtime/llm, nothing here imports a vendor SDK.
//
// The simulated voice (the speech model of dry runs and of the server) is
// a Speaker without audio. The live connectors, geminilive and elevenlabs,
// are what baton serve --voice hosts live sessions with; geminitts is
// linked into no binary yet (docs/protocol.md, "Speech").
package voice

import (
	"context"
	"time"

	"github.com/batonhq/baton/runtime/llm"
)

// Utterance is one synthesized agent message.
type Utterance struct {
	// Duration is how long the audio plays; the host reports speech_done
	// after it.
	Duration time.Duration
	// Audio is the encoded audio, nil for the simulated voice.
	Audio []byte
	// MIMEType describes Audio, e.g. "audio/pcm;rate=24000".
	MIMEType string
}

// Speaker synthesizes agent messages. Implementations must be safe for
// concurrent use.
type Speaker interface {
	Speak(ctx context.Context, role, voice, text string) (Utterance, error)
}

// LiveConfig configures a speech-to-speech session.
type LiveConfig struct {
	Model  string
	System string
	// Voices names the agent's voice per speech vendor (Gemini: a
	// prebuilt name such as "Puck"; ElevenLabs: a voice id). Each
	// connector takes its own vendor's and never another's; without one
	// the vendor's default speaks (Gemini's, or the ElevenLabs agent's).
	Voices map[string]string
	Tools  []llm.ToolDecl
	// InputTranscription asks for transcripts of the candidate's audio;
	// OutputTranscription for transcripts of the agent's audio.
	InputTranscription  bool
	OutputTranscription bool
}

// Speech vendors, the keys of LiveConfig.Voices; the same words as a
// pack's voice mapping (rules.VendorGemini, rules.VendorElevenLabs).
const (
	Gemini     = "gemini"
	ElevenLabs = "elevenlabs"
)

// Connector opens live sessions.
type Connector interface {
	Connect(ctx context.Context, cfg LiveConfig) (LiveSession, error)
}

// LiveSession is an open speech-to-speech session.
//
// Sends may be called from any goroutine. Events delivers everything the
// model sends, in order, ending with EventClosed, and is then closed. The
// consumer must keep reading it (or call Close), since a full channel
// applies back-pressure to the connection. Close is idempotent and returns
// once the session's goroutines have exited; events still buffered stay
// readable, but the final EventClosed is dropped if the buffer is full.
type LiveSession interface {
	// SendAudio streams a chunk of candidate audio; mime is e.g.
	// "audio/pcm;rate=16000".
	SendAudio(chunk []byte, mime string) error
	// SendText sends typed candidate input.
	SendText(text string) error
	// SendToolResponse answers tool calls from an EventToolCall.
	SendToolResponse(results []llm.ToolResult) error
	Events() <-chan Event
	Close() error
}

// EventKind names what an Event carries.
type EventKind string

// Event kinds.
const (
	// EventUserTranscript: Text is (part of) the candidate's speech; Final
	// marks the end of an utterance; Confidence is set when the provider
	// reports one.
	EventUserTranscript EventKind = "user_transcript"
	// EventAgentText: Text is what the agent says (model text, or the
	// transcript of its audio); Final marks the end of the transcript.
	EventAgentText EventKind = "agent_text"
	// EventAgentAudio: Audio holds a chunk of agent speech in MIMEType.
	EventAgentAudio EventKind = "agent_audio"
	// EventInterrupted: the candidate barged in; drop queued agent audio.
	EventInterrupted EventKind = "interrupted"
	// EventTurnComplete: the agent finished its turn.
	EventTurnComplete EventKind = "turn_complete"
	// EventToolCall: ToolCalls need answers via SendToolResponse.
	EventToolCall EventKind = "tool_call"
	// EventError: Err describes a problem; the session may go on (a
	// message that failed to decode) or a closed event follows.
	EventError EventKind = "error"
	// EventClosed is the last event. Err is set when the session ended
	// abnormally rather than by Close, context cancellation or a normal
	// close from the server.
	EventClosed EventKind = "closed"
)

// Event is one thing the live model did.
type Event struct {
	Kind       EventKind
	Text       string
	Confidence *float64
	Final      bool
	Audio      []byte
	MIMEType   string
	ToolCalls  []llm.ToolCall
	Err        error
}
