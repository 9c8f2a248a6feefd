// Package geminilivefake is a local stand-in for the Gemini Live API's
// WebSocket (BidiGenerateContent), for tests.
//
// It speaks the wire format the google.golang.org/genai SDK speaks: JSON
// messages, the first a setup the fake answers with setupComplete, then
// realtimeInput (audio and text) and toolResponse from the client, and
// serverContent (transcripts, model audio, turn signals) and toolCall from
// the fake. It answers the upgrade with an HTTP error, and fails the test,
// for a wrong path or API key, and fails the test for a message that is
// not one JSON object with one known member, or a first message other than
// setup.
//
// A script runs on every connection in the server's handler: it reads
// and sends through the Conn's helpers (Setup, AwaitSilence, AwaitAudio,
// AwaitToolResponse, UserTranscript, AgentAudio, AgentText, TurnComplete,
// Interrupted, ToolCall), or through WS for frames they do not build. Every
// message the client sent is recorded, decoded, for the test to assert on.
package geminilivefake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Path is where the SDK dials the Live API under its base URL (API
// version v1beta, the SDK's default).
const Path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

// OutputMIME is the format of the model audio the real service sends:
// 16-bit little-endian mono PCM at 24 kHz.
const OutputMIME = "audio/pcm;rate=24000"

// readWait bounds each read a script makes, so a broken client cannot hang
// the suite; the tests never depend on it firing.
const readWait = 20 * time.Second

// clientMembers are the top-level members a client message may have; each
// message has exactly one.
var clientMembers = []string{"setup", "clientContent", "realtimeInput", "toolResponse"}

// Server is a running fake.
type Server struct {
	// URL is the base URL to give a client: ws://127.0.0.1:port.
	URL string

	t      testing.TB
	key    string
	script func(c *Conn)
	srv    *httptest.Server
	conns  chan *Conn
	done   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	all      []*Conn
	stopping bool
}

// New starts a fake that requires apiKey in the x-goog-api-key header
// (empty: any key) and runs script on every connection; it stops when the
// test ends.
func New(t testing.TB, apiKey string, script func(c *Conn)) *Server {
	t.Helper()
	s := &Server{t: t, key: apiKey, script: script, conns: make(chan *Conn, 64), done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http")
	t.Cleanup(s.stop)
	return s
}

// Conns yields each accepted connection, in order.
func (s *Server) Conns() <-chan *Conn { return s.conns }

// Done is closed once the first connection's script has returned and its
// socket is closed.
func (s *Server) Done() <-chan struct{} { return s.done }

// stop ends every connection so no script waits on a client, then the
// server.
func (s *Server) stop() {
	s.mu.Lock()
	s.stopping = true
	all := s.all
	s.mu.Unlock()
	for _, c := range all {
		_ = c.WS.Close()
	}
	s.srv.Close()
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		s.t.Errorf("geminilivefake: dialed path %q, want %q", r.URL.Path, Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if got := r.Header.Get("x-goog-api-key"); got == "" || (s.key != "" && got != s.key) {
		s.t.Errorf("geminilivefake: x-goog-api-key = %q", got)
		http.Error(w, "API key not valid", http.StatusUnauthorized)
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		s.t.Errorf("geminilivefake: upgrade: %v", err)
		return
	}
	s.mu.Lock()
	c := &Conn{N: len(s.all) + 1, WS: ws, srv: s}
	s.all = append(s.all, c)
	s.mu.Unlock()
	select {
	case s.conns <- c:
	default:
		s.t.Errorf("geminilivefake: more than %d connections nobody took from Conns", cap(s.conns))
	}
	defer s.once.Do(func() { close(s.done) })
	defer ws.Close()
	s.script(c)
}

// Conn is one client connection, as a script sees it. Its methods run on
// the script's goroutine; Received and UserAudio may be called from any.
type Conn struct {
	// N counts connections from 1.
	N int
	// WS is the raw connection, for frames the helpers do not build.
	WS *websocket.Conn

	srv *Server

	mu       sync.Mutex
	received []map[string]any
	audio    []byte
	// lastSound is the offset just past the last non-zero audio byte;
	// audioMark where the next audio wait starts counting.
	lastSound, audioMark int
	// looked is how many received messages AwaitToolResponse has looked
	// at.
	looked int
}

// errorf fails the test, unless the fake is stopping (a script still
// reading when the test ends is not a failure of the client).
func (c *Conn) errorf(format string, args ...any) {
	if !c.srv.isStopping() {
		c.srv.t.Errorf("geminilivefake: connection %d: "+format, append([]any{c.N}, args...)...)
	}
}

// TryRead reads and records the next client message; an error means the
// client went away (or sent something that is not a message).
func (c *Conn) TryRead() (map[string]any, error) {
	_ = c.WS.SetReadDeadline(time.Now().Add(readWait))
	_, data, err := c.WS.ReadMessage()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		c.errorf("client sent %.200q, not one JSON object", data)
		return nil, fmt.Errorf("not a JSON object")
	}
	if err := c.record(m); err != nil {
		c.errorf("%v", err)
		return nil, err
	}
	return m, nil
}

// Read is TryRead that fails the test when the client went away; it then
// returns nil.
func (c *Conn) Read() map[string]any {
	m, err := c.TryRead()
	if err != nil {
		c.errorf("read: %v", err)
		return nil
	}
	return m
}

func (c *Conn) record(m map[string]any) error {
	var members []string
	for k := range m {
		members = append(members, k)
	}
	slices.Sort(members)
	if len(members) != 1 || !slices.Contains(clientMembers, members[0]) {
		return fmt.Errorf("message with members %v, want exactly one of %v", members, clientMembers)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first := len(c.received) == 0; first != (members[0] == "setup") {
		return fmt.Errorf("message %d is %s; setup comes first and once", len(c.received)+1, members[0])
	}
	c.received = append(c.received, m)
	if data, ok := at(m, "realtimeInput", "audio", "data").(string); ok {
		chunk, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return fmt.Errorf("realtimeInput.audio.data is not base64: %v", err)
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != 0 {
				c.lastSound = len(c.audio) + i + 1
				break
			}
		}
		c.audio = append(c.audio, chunk...)
	}
	return nil
}

// Received is everything the client sent so far, in order.
func (c *Conn) Received() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.received)
}

// UserAudio is all realtime audio received so far, decoded and joined.
func (c *Conn) UserAudio() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.audio)
}

// Send sends v as JSON in a text frame.
func (c *Conn) Send(v any) { c.send(websocket.TextMessage, v) }

// SendBinary sends v as JSON in a binary frame, as the real service does.
func (c *Conn) SendBinary(v any) { c.send(websocket.BinaryMessage, v) }

func (c *Conn) send(frame int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		c.errorf("encode: %v", err)
		return
	}
	if err := c.WS.WriteMessage(frame, data); err != nil {
		c.errorf("write: %v", err)
	}
}

// Setup reads the client's setup message, answers setupComplete and
// returns the setup.
func (c *Conn) Setup() map[string]any {
	setup := c.Read()
	c.Send(map[string]any{"setupComplete": map[string]any{}})
	return setup
}

// DrainUntilGone reads until the client goes away.
func (c *Conn) DrainUntilGone() {
	for {
		if _, err := c.TryRead(); err != nil {
			return
		}
	}
}

// await reads until cond holds (it runs with c.mu held and may move the
// marks). It reports false when the client went away first.
func (c *Conn) await(cond func() bool) bool {
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return true
		}
		if _, err := c.TryRead(); err != nil {
			c.errorf("the client went away while the script waited: %v", err)
			return false
		}
	}
}

// AwaitAudio waits until n bytes of audio have arrived since the previous
// audio wait ended (or since the start).
func (c *Conn) AwaitAudio(n int) bool {
	return c.await(func() bool {
		if len(c.audio)-c.audioMark < n {
			return false
		}
		c.audioMark = len(c.audio)
		return true
	})
}

// AwaitSilence waits for the end of an utterance: some audio that is not
// all zero since the previous audio wait, then at least n bytes of zero
// samples in a row. The service's own voice activity detection is not
// modelled.
func (c *Conn) AwaitSilence(n int) bool {
	return c.await(func() bool {
		if c.lastSound <= c.audioMark || len(c.audio)-c.lastSound < n {
			return false
		}
		c.audioMark = len(c.audio)
		return true
	})
}

// AwaitToolResponse waits for the function response answering call id,
// which may have come before, and returns it (nil if the client went
// away).
func (c *Conn) AwaitToolResponse(id string) map[string]any {
	var found map[string]any
	c.await(func() bool {
		for ; c.looked < len(c.received); c.looked++ {
			rs, _ := at(c.received[c.looked], "toolResponse", "functionResponses").([]any)
			for _, r := range rs {
				if fr, _ := r.(map[string]any); fr != nil && fr["id"] == id {
					found = fr
				}
			}
			if found != nil {
				c.looked++
				return true
			}
		}
		return false
	})
	return found
}

// UserTranscript sends the finished transcript of the user's speech.
func (c *Conn) UserTranscript(text string) {
	c.Send(map[string]any{"serverContent": map[string]any{"inputTranscription": map[string]any{"text": text, "finished": true}}})
}

// AgentAudio sends a chunk of model audio in mime (OutputMIME for the
// real service's format).
func (c *Conn) AgentAudio(mime string, pcm []byte) {
	c.SendBinary(map[string]any{"serverContent": map[string]any{"modelTurn": map[string]any{"parts": []any{
		map[string]any{"inlineData": map[string]any{"mimeType": mime, "data": base64.StdEncoding.EncodeToString(pcm)}},
	}}}})
}

// AgentText sends (a piece of) the transcript of the model's audio.
func (c *Conn) AgentText(text string) {
	c.Send(map[string]any{"serverContent": map[string]any{"outputTranscription": map[string]any{"text": text}}})
}

// TurnComplete says the model finished its turn.
func (c *Conn) TurnComplete() {
	c.Send(map[string]any{"serverContent": map[string]any{"turnComplete": true}})
}

// Interrupted says the user barged in: the model stopped speaking.
func (c *Conn) Interrupted() {
	c.Send(map[string]any{"serverContent": map[string]any{"interrupted": true}})
}

// ToolCall asks the client to call a function; AwaitToolResponse waits
// for the answer.
func (c *Conn) ToolCall(id, name string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	c.Send(map[string]any{"toolCall": map[string]any{"functionCalls": []any{
		map[string]any{"id": id, "name": name, "args": args},
	}}})
}

func at(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
