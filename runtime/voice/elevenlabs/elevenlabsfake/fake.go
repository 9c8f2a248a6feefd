// Package elevenlabsfake is a local stand-in for ElevenLabs' agent
// WebSocket (wss://api.elevenlabs.io/v1/convai/conversation), for tests.
//
// It is written from the vendor's public contract, not from any client:
// https://elevenlabs.io/docs/agents-platform/api-reference/eleven-agents/websocket
// and the AsyncAPI file the official clients are generated from,
// https://github.com/elevenlabs/packages/blob/main/packages/types/schemas/agent.asyncapi.yaml.
// It is as strict as a contract-checking service: it answers the upgrade
// with an HTTP error for a wrong path, a missing or unexpected agent_id or
// a wrong xi-api-key header, and it closes the socket with code 1008
// (policy violation, the service's code for invalid input) and a reason
// for a first message other than conversation_initiation_client_data, an
// unknown message type, an undocumented or mistyped field, a missing
// required field, a binary frame, a pong for no ping and a tool result for
// no call.
//
// A Script says what the fake sends after what it receives: it waits for
// user audio (a number of bytes, or speech then a run of all-zero PCM), a
// message type, a pong or a tool result, and sends transcripts, agent
// replies, audio, interruptions, pings, tool calls, arbitrary JSON or a
// close. Every connection runs the script from its start; each records
// what it received, decoded, for the test to assert on.
package elevenlabsfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

// Path is where the service listens.
const Path = "/v1/convai/conversation"

// VoicesPath lists the account's voices: GET only, with the xi-api-key
// header, and no query parameter but the documented show_legacy.
const VoicesPath = "/v1/voices"

// DefaultFormat is the audio format the metadata names unless the script
// says otherwise: 16-bit little-endian mono PCM at 16 kHz.
const DefaultFormat = "pcm_16000"

// AudioChunk is Message.Type for user audio, which has no type field on
// the wire: the service recognizes it by its only field.
const AudioChunk = "user_audio_chunk"

// Script configures the fake and what each connection does.
type Script struct {
	// AgentID is the agent_id the fake requires; empty takes any non-empty
	// id.
	AgentID string
	// APIKey, when set, must come in the xi-api-key header.
	APIKey string
	// ConversationID is sent in the metadata; empty means "conv_fake_<n>"
	// for the n-th connection.
	ConversationID string
	// InputFormat and OutputFormat are the metadata's
	// user_input_audio_format and agent_output_audio_format; empty means
	// DefaultFormat.
	InputFormat, OutputFormat string
	// Steps run in order on every connection, after the fake has answered
	// the client's conversation_initiation_client_data with its metadata.
	Steps []Step
	// Voices are the account's voice ids GET /v1/voices lists (each named
	// after its id, category "premade").
	Voices []string
	// ExpectRefusals marks a test that sends bad input on purpose. Without
	// it any refusal fails the test when it ends.
	ExpectRefusals bool
}

// Server is a running fake.
type Server struct {
	// URL is the base URL to give a client: ws://127.0.0.1:port.
	URL string

	t      testing.TB
	script Script
	srv    *httptest.Server
	conns  chan *Conn

	mu         sync.Mutex
	all        []*Conn
	refusals   []string
	voiceLists int
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB, sc Script) *Server {
	t.Helper()
	s := &Server{t: t, script: sc, conns: make(chan *Conn, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http")
	t.Cleanup(s.stop)
	return s
}

// Conns yields each accepted connection, in order.
func (s *Server) Conns() <-chan *Conn { return s.conns }

// Refusals lists why the fake refused requests or closed connections.
func (s *Server) Refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refusals...)
}

func (s *Server) refuse(reason string) {
	s.mu.Lock()
	s.refusals = append(s.refusals, reason)
	s.mu.Unlock()
}

// stop ends every connection so no handler waits on a client, then the
// server.
func (s *Server) stop() {
	s.mu.Lock()
	all := s.all
	s.mu.Unlock()
	for _, c := range all {
		_ = c.ws.Close()
		<-c.gone
	}
	s.srv.Close()
	if refusals := s.Refusals(); len(refusals) > 0 && !s.script.ExpectRefusals {
		s.t.Errorf("elevenlabsfake refused the client:\n%s", strings.Join(refusals, "\n"))
	}
}

// allowedQuery are the parameters the official clients put on the URL.
var allowedQuery = map[string]bool{"agent_id": true, "token": true, "source": true, "version": true, "environment": true}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, reason string) {
		s.refuse(reason)
		http.Error(w, reason, status)
	}
	if r.URL.Path == VoicesPath {
		s.voices(w, r, fail)
		return
	}
	if r.URL.Path != Path {
		fail(http.StatusNotFound, fmt.Sprintf("no such path %q (want %s)", r.URL.Path, Path))
		return
	}
	q := r.URL.Query()
	for k := range q {
		if !allowedQuery[k] {
			fail(http.StatusBadRequest, fmt.Sprintf("undocumented query parameter %q", k))
			return
		}
	}
	agent := q.Get("agent_id")
	switch {
	case agent == "":
		fail(http.StatusBadRequest, "missing agent_id query parameter")
		return
	case s.script.AgentID != "" && agent != s.script.AgentID:
		fail(http.StatusNotFound, fmt.Sprintf("no agent %q", agent))
		return
	}
	if s.script.APIKey != "" && r.Header.Get("xi-api-key") != s.script.APIKey {
		fail(http.StatusUnauthorized, "invalid or missing xi-api-key header")
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		s.refuse("upgrade: " + err.Error())
		return // the upgrader has answered
	}
	s.mu.Lock()
	n := len(s.all) + 1
	c := newConn(s, ws, n)
	s.all = append(s.all, c)
	s.mu.Unlock()
	select {
	case s.conns <- c:
	default:
		s.t.Errorf("elevenlabsfake: more than %d connections nobody took from Conns", cap(s.conns))
	}
	go c.read()
	c.run()
	// The handler lives as long as the socket, so the test server's Close
	// waits for it.
	<-c.readerDone
	close(c.gone)
}

// Message is one message a client sent, decoded.
type Message struct {
	// Type is the message's type field, or AudioChunk for user audio.
	Type string
	// Raw is the message as it came.
	Raw json.RawMessage
	// Fields is Raw decoded (numbers as float64).
	Fields map[string]any
	// Audio is the decoded chunk of a user audio message.
	Audio []byte
}

// Conn is one client connection.
type Conn struct {
	// N counts connections from 1.
	N int

	srv     *Server
	ws      *websocket.Conn
	writeMu sync.Mutex

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever state changes
	received []Message
	audio    []byte
	// lastSound is the offset just past the last non-zero audio byte.
	lastSound int
	// audioMark is where the next audio trigger starts counting.
	audioMark int
	// cursor is the next message index AwaitMessage looks at.
	cursor    int
	pings     map[int64]bool
	toolCalls map[string]bool
	// turn numbers the event_id of transcripts, replies and their audio.
	turn    int64
	refusal string
	ended   bool

	scriptDone chan struct{}
	readerDone chan struct{}
	gone       chan struct{}
}

func newConn(s *Server, ws *websocket.Conn, n int) *Conn {
	return &Conn{
		N: n, srv: s, ws: ws,
		changed:    make(chan struct{}),
		pings:      map[int64]bool{},
		toolCalls:  map[string]bool{},
		scriptDone: make(chan struct{}),
		readerDone: make(chan struct{}),
		gone:       make(chan struct{}),
	}
}

// Received is everything the client sent so far, in order.
func (c *Conn) Received() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.received...)
}

// UserAudio is all user audio received so far, decoded and joined.
func (c *Conn) UserAudio() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.audio...)
}

// Initiation is the client's conversation_initiation_client_data, nil
// before it came.
func (c *Conn) Initiation() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.received) == 0 {
		return nil
	}
	return c.received[0].Fields
}

// Gone is closed when the connection has ended and the fake is done with
// it.
func (c *Conn) Gone() <-chan struct{} { return c.gone }

// touch wakes whatever waits on the state; c.mu must be held.
func (c *Conn) touch() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// read records and checks every message until the connection ends.
func (c *Conn) read() {
	defer close(c.readerDone)
	defer func() {
		c.mu.Lock()
		c.ended = true
		c.touch()
		c.mu.Unlock()
	}()
	for {
		frame, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if frame != websocket.TextMessage {
			c.refuse("binary frame; messages are JSON text")
			return
		}
		c.mu.Lock()
		msg, err := c.check(data)
		if err == nil {
			c.received = append(c.received, msg)
			if msg.Type == AudioChunk {
				c.addAudio(msg.Audio)
			}
			c.touch()
		}
		c.mu.Unlock()
		if err != nil {
			c.refuse(err.Error())
			return
		}
	}
}

func (c *Conn) addAudio(chunk []byte) {
	for i := len(chunk) - 1; i >= 0; i-- {
		if chunk[i] != 0 {
			c.lastSound = len(c.audio) + i + 1
			break
		}
	}
	c.audio = append(c.audio, chunk...)
}

// maxReason is the longest close reason a frame can carry.
const maxReason = 123

// refuse closes the connection with a policy-violation frame, as the
// service does for invalid input.
func (c *Conn) refuse(reason string) {
	c.mu.Lock()
	c.refusal = reason
	c.mu.Unlock()
	c.srv.refuse(fmt.Sprintf("connection %d: %s", c.N, reason))
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, reason), deadline())
	_ = c.ws.Close()
}

// write sends one server message.
func (c *Conn) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// run waits for the initiation, answers it and plays the script.
func (c *Conn) run() {
	defer close(c.scriptDone)
	if !c.await(awaitMessage(initiationType)) {
		return
	}
	sc := c.srv.script
	id := sc.ConversationID
	if id == "" {
		id = fmt.Sprintf("conv_fake_%d", c.N)
	}
	meta := map[string]any{
		"type": "conversation_initiation_metadata",
		"conversation_initiation_metadata_event": map[string]any{
			"conversation_id":           id,
			"agent_output_audio_format": orDefault(sc.OutputFormat),
			"user_input_audio_format":   orDefault(sc.InputFormat),
		},
	}
	if c.write(meta) != nil {
		return
	}
	for _, st := range sc.Steps {
		if st.await != nil && !c.await(st.await) {
			return
		}
		if st.send != nil && st.send(c) != nil {
			return
		}
	}
}

func orDefault(format string) string {
	if format == "" {
		return DefaultFormat
	}
	return format
}

// await blocks until cond holds (it runs with c.mu held and may move the
// cursors) or the connection ends.
func (c *Conn) await(cond func(c *Conn) bool) bool {
	for {
		c.mu.Lock()
		if cond(c) {
			c.mu.Unlock()
			return true
		}
		if c.ended {
			c.mu.Unlock()
			return false
		}
		ch := c.changed
		c.mu.Unlock()
		<-ch
	}
}

// voices answers GET /v1/voices as the service does: {"voices": [...]}.
func (s *Server) voices(w http.ResponseWriter, r *http.Request, fail func(int, string)) {
	if r.Method != http.MethodGet {
		fail(http.StatusMethodNotAllowed, fmt.Sprintf("%s %s (want GET)", r.Method, VoicesPath))
		return
	}
	for k, v := range r.URL.Query() {
		if k != "show_legacy" || len(v) != 1 || (v[0] != "true" && v[0] != "false") {
			fail(http.StatusBadRequest, fmt.Sprintf("undocumented query parameter %s=%q on %s", k, v, VoicesPath))
			return
		}
	}
	if r.Header.Get("xi-api-key") == "" || (s.script.APIKey != "" && r.Header.Get("xi-api-key") != s.script.APIKey) {
		fail(http.StatusUnauthorized, "invalid or missing xi-api-key header")
		return
	}
	s.mu.Lock()
	s.voiceLists++
	s.mu.Unlock()
	list := make([]map[string]any, 0, len(s.script.Voices))
	for _, id := range s.script.Voices {
		list = append(list, map[string]any{"voice_id": id, "name": id, "category": "premade"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"voices": list})
}

// VoiceLists counts the GET /v1/voices requests answered.
func (s *Server) VoiceLists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.voiceLists
}
