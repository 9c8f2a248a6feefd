package elevenlabs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/batonhq/baton/runtime/llm"
)

// Message types, as the references spell them.
const (
	// Client to server. User audio has no type: the service recognizes it
	// by its only field, user_audio_chunk.
	typeInitiation       = "conversation_initiation_client_data"
	typePong             = "pong"
	typeUserMessage      = "user_message"
	typeContextualUpdate = "contextual_update"
	typeUserActivity     = "user_activity"
	typeToolResult       = "client_tool_result"

	// Server to client.
	typeMetadata           = "conversation_initiation_metadata"
	typeUserTranscript     = "user_transcript"
	typeTentativeUser      = "tentative_user_transcript"
	typeAgentResponse      = "agent_response"
	typeAgentCorrection    = "agent_response_correction"
	typeAudio              = "audio"
	typeInterruption       = "interruption"
	typePing               = "ping"
	typeClientToolCall     = "client_tool_call"
	typeError              = "error"
	typeVADScore           = "vad_score"
	typeTentativeAgent     = "internal_tentative_agent_response"
	typeAgentToolResponse  = "agent_tool_response"
	typeAgentToolRequest   = "agent_tool_request"
	typeAgentToolFull      = "agent_tool_response_full_payload"
	typeAgentChatPart      = "agent_chat_response_part"
	typeAgentReasoningPart = "agent_reasoning_response_part"
)

// ignored lists the documented server messages that carry nothing a
// voice.Event can express: scores, previews, the agent's own server-side
// tool runs, text-only streaming, MCP traffic and display hints. They are
// dropped quietly; a type outside this list and the handled ones is
// reported as an error event. Some come from the Python SDK's ClientEvent
// enum rather than the AsyncAPI contract.
var ignored = map[string]bool{
	typeVADScore: true, typeTentativeAgent: true, typeAgentToolResponse: true,
	typeAgentToolRequest: true, typeAgentToolFull: true, typeAgentChatPart: true,
	typeAgentReasoningPart: true, typeContextualUpdate: true,
	"internal_turn_probability": true, "mcp_tool_call": true, "mcp_connection_status": true,
	"asr_initiation_metadata": true, "context_usage": true, "guardrail_triggered": true,
	"agent_typing": true, "external_agent_connected": true, "external_agent_disconnected": true,
	"rich_content": true, "agent_response_metadata": true, "agent_response_complete": true,
	"client_error": true, "dtmf_request": true,
}

type initiationMessage struct {
	Type             string          `json:"type"`
	Override         *configOverride `json:"conversation_config_override,omitempty"`
	DynamicVariables map[string]any  `json:"dynamic_variables,omitempty"`
}

type configOverride struct {
	Agent *agentOverride `json:"agent,omitempty"`
	TTS   *ttsOverride   `json:"tts,omitempty"`
}

type agentOverride struct {
	Prompt *promptOverride `json:"prompt,omitempty"`
}

type promptOverride struct {
	Prompt string `json:"prompt,omitempty"`
	// LLM is in the packages repository's contract (PromptAgentOverride)
	// but not in the docs' older copy.
	LLM string `json:"llm,omitempty"`
}

type ttsOverride struct {
	VoiceID string `json:"voice_id"`
}

type audioMessage struct {
	UserAudioChunk string `json:"user_audio_chunk"`
}

type pongMessage struct {
	Type string `json:"type"`
	// EventID echoes the ping's event_id exactly as it came.
	EventID json.RawMessage `json:"event_id"`
}

type textMessage struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type typeOnlyMessage struct {
	Type string `json:"type"`
}

// toolResultMessage carries the result as a string: the contract types it
// so, and the JS client stringifies objects before sending.
type toolResultMessage struct {
	Type       string `json:"type"`
	ToolCallID string `json:"tool_call_id"`
	Result     string `json:"result"`
	IsError    bool   `json:"is_error"`
}

// serverMessage is every server message this package reads; each type
// fills its own member.
type serverMessage struct {
	Type     string        `json:"type"`
	Metadata *metadataWire `json:"conversation_initiation_metadata_event"`
	User     *struct {
		UserTranscript string `json:"user_transcript"`
	} `json:"user_transcription_event"`
	TentativeUser *struct {
		UserTranscript string `json:"user_transcript"`
	} `json:"tentative_user_transcription_event"`
	Agent *struct {
		AgentResponse string `json:"agent_response"`
	} `json:"agent_response_event"`
	Audio *struct {
		AudioBase64 string      `json:"audio_base_64"`
		EventID     json.Number `json:"event_id"`
	} `json:"audio_event"`
	Interruption *struct {
		EventID json.Number `json:"event_id"`
	} `json:"interruption_event"`
	Ping *struct {
		EventID json.RawMessage `json:"event_id"`
	} `json:"ping_event"`
	ToolCall *struct {
		ToolName   string          `json:"tool_name"`
		ToolCallID string          `json:"tool_call_id"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"client_tool_call"`
	Error *serverError `json:"error_event"`
}

type metadataWire struct {
	ConversationID         string `json:"conversation_id"`
	AgentOutputAudioFormat string `json:"agent_output_audio_format"`
	UserInputAudioFormat   string `json:"user_input_audio_format"`
}

// serverError is the error message the service sends before it closes
// the socket for a failure.
type serverError struct {
	Code      int    `json:"code"`
	Message   string `json:"message"`
	ErrorType string `json:"error_type"`
	Reason    string `json:"reason"`
}

func (e *serverError) text() string {
	msg := e.Message
	if msg == "" {
		msg = e.Reason
	}
	if msg == "" {
		msg = "no message"
	}
	if e.ErrorType != "" {
		msg = e.ErrorType + ": " + msg
	}
	return msg
}

// metadata is what the server fixed for the session.
type metadata struct {
	conversationID string
	inputFormat    string
	outputFormat   string
	inputMIME      string
	outputMIME     string
}

// defaultFormat stands in for a format the metadata leaves out, as the JS
// client does for the input side; the contract requires both, so this is
// only a guard.
const defaultFormat = "pcm_16000"

func newMetadata(w metadataWire) (metadata, error) {
	m := metadata{conversationID: w.ConversationID, inputFormat: w.UserInputAudioFormat, outputFormat: w.AgentOutputAudioFormat}
	if m.inputFormat == "" {
		m.inputFormat = defaultFormat
	}
	if m.outputFormat == "" {
		m.outputFormat = defaultFormat
	}
	var err error
	if m.inputMIME, err = formatMIME(m.inputFormat); err != nil {
		return metadata{}, llm.NewError(llm.KindBadRequest, 0, err, "elevenlabs: the agent's user input audio format: %v; choose a pcm or ulaw format in the agent's settings", err)
	}
	if m.outputMIME, err = formatMIME(m.outputFormat); err != nil {
		return metadata{}, llm.NewError(llm.KindBadRequest, 0, err, "elevenlabs: the agent's output audio format: %v; choose a pcm or ulaw format in the agent's settings", err)
	}
	return m, nil
}

// formatMIME maps the service's format names (pcm_16000, ulaw_8000: 16-bit
// little-endian mono PCM or 8-bit μ-law, at the given rate) to the MIME
// form voice.Event uses, "audio/pcm;rate=16000".
func formatMIME(format string) (string, error) {
	enc, rate, ok := strings.Cut(format, "_")
	n, err := strconv.Atoi(rate)
	if !ok || err != nil || n <= 0 {
		return "", fmt.Errorf("format %q is not <encoding>_<rate>", format)
	}
	switch enc {
	case "pcm":
		return "audio/pcm;rate=" + rate, nil
	case "ulaw":
		return "audio/pcmu;rate=" + rate, nil
	}
	return "", fmt.Errorf("format %q: encoding %q is neither pcm nor ulaw", format, enc)
}

// sameAudioType reports whether got names the same encoding and rate as
// want (both in formatMIME's form), ignoring case and spacing.
func sameAudioType(got, want string) bool {
	gt, gp, err := mime.ParseMediaType(got)
	if err != nil {
		return false
	}
	wt, wp, _ := mime.ParseMediaType(want)
	if gt != wt || gp["rate"] != wp["rate"] {
		return false
	}
	if ch, ok := gp["channels"]; ok && ch != "1" {
		return false
	}
	for k := range gp {
		if k != "rate" && k != "channels" {
			return false
		}
	}
	return true
}

// toolResultText turns a tool result's JSON content into the string the
// service takes: a JSON string as its text, anything else as compact JSON.
func toolResultText(content json.RawMessage) (string, error) {
	if len(content) == 0 {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		return s, nil
	}
	// Compact keeps the keys' order and the numbers' digits, which a
	// decode and re-encode would not.
	var buf bytes.Buffer
	if err := json.Compact(&buf, content); err != nil {
		return "", err
	}
	return buf.String(), nil
}
