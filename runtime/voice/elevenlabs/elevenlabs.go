// Package elevenlabs implements voice.LiveSession with ElevenLabs'
// Conversational AI agents ("ElevenAgents") over their agent WebSocket.
//
// The protocol, as implemented here, comes from these references:
//
//   - Agent WebSockets API reference:
//     https://elevenlabs.io/docs/agents-platform/api-reference/eleven-agents/websocket
//   - Client (server-to-client) events:
//     https://elevenlabs.io/docs/eleven-agents/customization/events/client-events
//   - The AsyncAPI contract the official clients are generated from:
//     https://github.com/elevenlabs/packages/blob/main/packages/types/schemas/agent.asyncapi.yaml
//     and the docs' earlier copy,
//     https://github.com/elevenlabs/elevenlabs-docs/blob/main/fern/apis/convai/asyncapi.yml
//   - The official SDKs' conversation loops:
//     https://github.com/elevenlabs/elevenlabs-python/blob/main/src/elevenlabs/conversational_ai/conversation.py
//     and https://github.com/elevenlabs/packages/blob/main/packages/client/src/BaseConversation.ts
//
// A session dials wss://api.elevenlabs.io/v1/convai/conversation?agent_id=ID
// with the API key in the xi-api-key header (the server-side form; browsers
// use a signed URL from GET /v1/convai/conversation/get-signed-url instead,
// which this package does not need). It sends
// conversation_initiation_client_data first and waits for the server's
// conversation_initiation_metadata, which fixes the audio formats of both
// directions for the rest of the session.
//
// An ElevenLabs agent is configured on ElevenLabs' side: its LLM, voice,
// tools and which overrides a client may send. LiveConfig.System, the ElevenLabs voice
// and Model travel as conversation_config_override, which the service
// refuses (close code 1008) unless the agent's security settings allow
// those overrides. LiveConfig.Tools cannot be declared over this protocol:
// client tools are declared in the agent's configuration, under the same
// names, and only their calls and results cross the socket.
//
// Which events the service sends is the agent's setting too ("client
// events"). The contract's default list (audio, interruption,
// agent_response, user_transcript, tentative_user_transcript, the metadata
// and ping) covers both sides' transcripts, so the transcription flags
// need no message. It does not name client_tool_call, and the references
// do not say whether tool calls depend on it: enable it on agents with
// client tools.
//
// One goroutine per session reads server messages and turns them into
// voice.Events; it answers the server's pings itself. Sends are
// serialized with a mutex because a gorilla/websocket connection allows
// one writer at a time.
package elevenlabs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// DefaultBaseURL is the production endpoint, routed to the nearest region.
const DefaultBaseURL = "wss://api.elevenlabs.io"

// ConversationPath is the agent WebSocket's path under the base URL.
const ConversationPath = "/v1/convai/conversation"

// Environment variables New reads for settings left empty.
const (
	EnvAPIKey  = "ELEVENLABS_API_KEY"
	EnvAgentID = "ELEVENLABS_AGENT_ID"
	EnvBaseURL = "ELEVENLABS_BASE_URL"
)

// readLimit bounds one server message. The Python SDK allows 16 MiB; audio
// chunks are far smaller, so anything bigger is a broken peer.
const readLimit = 16 << 20

// eventBuffer lets the reader run ahead of a briefly busy consumer (audio
// arrives in many small chunks) without unbounded memory.
const eventBuffer = 64

// ErrClosed is returned by sends after the session is closed.
var ErrClosed = errors.New("elevenlabs: session closed")

// ErrUnknownMessage wraps the error event for a server message whose type
// this package does not know; the session goes on.
var ErrUnknownMessage = errors.New("unknown message type")

// Config configures a Client.
type Config struct {
	// APIKey defaults to $ELEVENLABS_API_KEY.
	APIKey string
	// AgentID defaults to $ELEVENLABS_AGENT_ID.
	AgentID string
	// BaseURL defaults to $ELEVENLABS_BASE_URL, then DefaultBaseURL. A
	// ws:// URL reaches a local fake; http(s) is taken as ws(s).
	BaseURL string
	// Dialer defaults to websocket.DefaultDialer.
	Dialer *websocket.Dialer
	// DynamicVariables fill the {{placeholders}} of the agent's prompt; the
	// service refuses a conversation whose prompt names one left unset.
	// Values must be strings, numbers or booleans.
	DynamicVariables map[string]any
}

// Client opens ElevenLabs agent sessions. It is safe for concurrent use.
type Client struct {
	apiKey  string
	agentID string
	url     string
	dialer  *websocket.Dialer
	vars    map[string]any
}

var _ voice.Connector = (*Client)(nil)

// New checks the configuration and creates a Client. It makes no network
// call.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvAPIKey)
	}
	if cfg.AgentID == "" {
		cfg.AgentID = os.Getenv(EnvAgentID)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv(EnvBaseURL)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("elevenlabs: no API key: set $%s or Config.APIKey", EnvAPIKey)
	}
	if cfg.AgentID == "" {
		return nil, fmt.Errorf("elevenlabs: no agent id: set $%s or Config.AgentID to the id of an agent created at https://elevenlabs.io/app/agents", EnvAgentID)
	}
	u, err := conversationURL(cfg.BaseURL, cfg.AgentID)
	if err != nil {
		return nil, err
	}
	// A copy, so a caller changing its map later cannot race a Connect.
	vars := make(map[string]any, len(cfg.DynamicVariables))
	for k, v := range cfg.DynamicVariables {
		vars[k] = v
		switch v.(type) {
		case string, bool, json.Number, float32, float64,
			int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		default:
			return nil, fmt.Errorf("elevenlabs: dynamic variable %q is a %T; the service takes strings, numbers and booleans", k, v)
		}
	}
	d := cfg.Dialer
	if d == nil {
		d = websocket.DefaultDialer
	}
	return &Client{apiKey: cfg.APIKey, agentID: cfg.AgentID, url: u, dialer: d, vars: vars}, nil
}

func conversationURL(base, agentID string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("elevenlabs: base URL %q: %w", base, err)
	}
	switch u.Scheme {
	case "ws", "wss":
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("elevenlabs: base URL %q: scheme must be wss or ws", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("elevenlabs: base URL %q has no host", base)
	}
	u.Path = strings.TrimRight(u.Path, "/") + ConversationPath
	u.RawQuery = url.Values{"agent_id": {agentID}}.Encode()
	return u.String(), nil
}

// Connect dials the agent, sends conversation_initiation_client_data and
// waits for conversation_initiation_metadata. ctx bounds the handshake and
// the whole session: cancelling it closes the session as Close would. A
// server that accepts the socket but never sends the metadata is bounded
// only by ctx.
func (c *Client) Connect(ctx context.Context, lc voice.LiveConfig) (voice.LiveSession, error) {
	s, err := c.connect(ctx, lc)
	if err != nil {
		// A nil *Session in a non-nil interface would defeat ls == nil checks.
		return nil, err
	}
	return s, nil
}

func (c *Client) connect(ctx context.Context, lc voice.LiveConfig) (*Session, error) {
	init, err := json.Marshal(initiation(lc, c.vars))
	if err != nil {
		return nil, llm.NewError(llm.KindBadRequest, 0, err, "elevenlabs: encode conversation initiation: %v", err)
	}
	header := http.Header{}
	header.Set("xi-api-key", c.apiKey)
	conn, resp, err := c.dialer.DialContext(ctx, c.url, header)
	if err != nil {
		return nil, dialError(ctx, c.agentID, resp, err)
	}
	conn.SetReadLimit(readLimit)
	// The dial honoured ctx; the reads and writes below do not, so closing
	// the socket is what interrupts them when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	meta, err := handshake(conn, init)
	if !stop() {
		_ = conn.Close()
		return nil, llm.Classify(fmt.Errorf("elevenlabs: connect agent %s: %w", c.agentID, ctx.Err()))
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return start(ctx, conn, meta), nil
}

// initiation builds the first message. Empty settings are left out rather
// than sent empty, because each override present needs the agent's
// permission even when it changes nothing.
func initiation(lc voice.LiveConfig, vars map[string]any) initiationMessage {
	m := initiationMessage{Type: typeInitiation, DynamicVariables: vars}
	var o configOverride
	if lc.System != "" || lc.Model != "" {
		o.Agent = &agentOverride{Prompt: &promptOverride{Prompt: lc.System, LLM: lc.Model}}
	}
	// Only an ElevenLabs voice id: another vendor's name (a Gemini
	// voice) is no voice here.
	if v := lc.Voices[voice.ElevenLabs]; v != "" {
		o.TTS = &ttsOverride{VoiceID: v}
	}
	if o.Agent != nil || o.TTS != nil {
		m.Override = &o
	}
	return m
}

// handshake sends the initiation and reads until the metadata. Pings that
// come first are answered; an error message is kept so the close that
// follows it can say why.
func handshake(conn *websocket.Conn, init []byte) (metadata, error) {
	if err := conn.WriteMessage(websocket.TextMessage, init); err != nil {
		return metadata{}, llm.Classify(fmt.Errorf("elevenlabs: send conversation initiation: %w", err))
	}
	var serverErr *serverError
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if e := llm.Classify(receiveError(err, serverErr)); e != nil {
				return metadata{}, during("waiting for conversation metadata", e)
			}
			return metadata{}, llm.NewError(llm.KindServer, 0, err, "elevenlabs: the server ended the conversation before sending its metadata")
		}
		var msg serverMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			return metadata{}, llm.NewError(llm.KindServer, 0, err, "elevenlabs: waiting for conversation metadata: undecodable message %.200q: %v", data, err)
		}
		switch msg.Type {
		case typeMetadata:
			if msg.Metadata == nil {
				return metadata{}, llm.NewError(llm.KindServer, 0, nil, "elevenlabs: conversation_initiation_metadata without conversation_initiation_metadata_event")
			}
			return newMetadata(*msg.Metadata)
		case typePing:
			if msg.Ping == nil || len(msg.Ping.EventID) == 0 || string(msg.Ping.EventID) == "null" {
				continue
			}
			pong, _ := json.Marshal(pongMessage{Type: typePong, EventID: msg.Ping.EventID})
			if err := conn.WriteMessage(websocket.TextMessage, pong); err != nil {
				return metadata{}, llm.Classify(fmt.Errorf("elevenlabs: answer ping: %w", err))
			}
		case typeError:
			serverErr = msg.Error
		default:
			if ignored[msg.Type] {
				continue
			}
			// The references make the metadata the first message; anything
			// else means a peer this package does not understand.
			return metadata{}, llm.NewError(llm.KindServer, 0, nil, "elevenlabs: got %q before conversation_initiation_metadata", msg.Type)
		}
	}
}

// dialError explains a failed dial. A refused upgrade carries the HTTP
// status, which says more than gorilla's "bad handshake".
func dialError(ctx context.Context, agentID string, resp *http.Response, err error) error {
	if ctx.Err() != nil {
		return llm.Classify(fmt.Errorf("elevenlabs: connect agent %s: %w", agentID, ctx.Err()))
	}
	if resp == nil {
		return during("connect agent "+agentID, llm.Classify(err))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := strings.TrimSpace(string(body))
	if detail == "" {
		detail = http.StatusText(resp.StatusCode)
	}
	kind := llm.KindUnknown
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		kind = llm.KindRateLimit
	case resp.StatusCode >= 500:
		kind = llm.KindServer
	case resp.StatusCode >= 400:
		// A wrong key (401/403) or an unknown agent (404) will not fix
		// itself on retry.
		kind = llm.KindBadRequest
	}
	return llm.NewError(kind, resp.StatusCode, err, "elevenlabs: connect agent %s: %s", agentID, detail)
}

// during says what the session was doing when e happened, keeping e's
// kind: "elevenlabs: <what>: <e's message>".
func during(what string, e *llm.Error) *llm.Error {
	msg := strings.TrimPrefix(e.Message, "elevenlabs: ")
	return &llm.Error{Kind: e.Kind, Message: "elevenlabs: " + what + ": " + msg, Status: e.Status, Retryable: e.Retryable, Err: e.Err}
}
