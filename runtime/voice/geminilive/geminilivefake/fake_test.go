package geminilivefake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// client is a raw Live API client for testing the fake itself.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, s *Server, path, key string) (*client, *http.Response, error) {
	h := http.Header{}
	if key != "" {
		h.Set("x-goog-api-key", key)
	}
	d := websocket.Dialer{HandshakeTimeout: 20 * time.Second}
	ws, resp, err := d.Dial(s.URL+path, h)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	return &client{t: t, ws: ws}, resp, nil
}

func (c *client) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) audio(b []byte) {
	c.send(map[string]any{"realtimeInput": map[string]any{"audio": map[string]any{"mimeType": "audio/pcm;rate=16000", "data": base64.StdEncoding.EncodeToString(b)}}})
}

func (c *client) read() map[string]any {
	c.t.Helper()
	var m map[string]any
	if err := c.ws.ReadJSON(&m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// The waits fire on what the client sends, in order: silence only after
// speech, and a tool response that came before the wait began.
func TestScript(t *testing.T) {
	var (
		mu    sync.Mutex
		steps []string
	)
	note := func(s string) {
		mu.Lock()
		steps = append(steps, s)
		mu.Unlock()
	}
	s := New(t, "k", func(c *Conn) {
		c.Setup()
		note(fmt.Sprint("silence ", c.AwaitSilence(4), " after ", len(c.UserAudio()), " bytes"))
		c.UserTranscript("I can fix it")
		r := c.AwaitToolResponse("f1")
		note(fmt.Sprint("response ", r["response"]))
		c.TurnComplete()
		c.DrainUntilGone()
	})
	c, _, err := dial(t, s, Path, "k")
	if err != nil {
		t.Fatal(err)
	}
	c.send(map[string]any{"setup": map[string]any{"model": "models/m"}})
	if m := c.read(); m["setupComplete"] == nil {
		t.Fatalf("answer to setup: %v", m)
	}
	c.audio(make([]byte, 8))          // silence before speech is no utterance
	c.audio([]byte{0, 0, 7, 1, 0, 0}) // speech, then a pause too short
	c.send(map[string]any{"toolResponse": map[string]any{"functionResponses": []any{map[string]any{"id": "f1", "name": "f", "response": map[string]any{"ok": true}}}}})
	c.audio([]byte{0, 0})
	if m := c.read(); fmt.Sprint(m) != "map[serverContent:map[inputTranscription:map[finished:true text:I can fix it]]]" {
		t.Fatalf("after the silence: %v", m)
	}
	if m := c.read(); fmt.Sprint(m) != "map[serverContent:map[turnComplete:true]]" {
		t.Fatalf("after the tool response: %v", m)
	}
	mu.Lock()
	got := strings.Join(steps, "; ")
	mu.Unlock()
	if got != "silence true after 16 bytes; response map[ok:true]" {
		t.Fatalf("script steps: %s", got)
	}
	conn := <-s.Conns()
	if n := len(conn.Received()); n != 5 {
		t.Errorf("%d messages recorded, want 5", n)
	}
	if a := conn.UserAudio(); len(a) != 16 {
		t.Errorf("%d audio bytes recorded, want 16", len(a))
	}
}

// recorder keeps what the fake reports instead of failing the test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// The fake holds clients to the contract: the path, the key, setup
// first, one known member a message.
func TestStrict(t *testing.T) {
	tests := []struct {
		name      string
		path, key string
		msgs      []string
		status    int
		says      string
	}{
		{"wrong path", "/ws/other", "k", nil, http.StatusNotFound, "dialed path"},
		{"wrong key", Path, "nope", nil, http.StatusUnauthorized, `x-goog-api-key = "nope"`},
		{"no key", Path, "", nil, http.StatusUnauthorized, `x-goog-api-key = ""`},
		{"audio before setup", Path, "k", []string{`{"realtimeInput":{"text":"hi"}}`}, 0, "setup comes first"},
		{"an unknown member", Path, "k", []string{`{"setup":{}}`, `{"clientContent":{}, "extra":1}`}, 0, "want exactly one of"},
		{"not an object", Path, "k", []string{`{"setup":{}}`, `[1]`}, 0, "not one JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			done := make(chan struct{})
			s := New(rec, "k", func(c *Conn) {
				defer close(done)
				for range tt.msgs {
					if _, err := c.TryRead(); err != nil {
						return
					}
				}
			})
			c, resp, err := dial(t, s, tt.path, tt.key)
			if tt.status != 0 {
				if err == nil || resp == nil || resp.StatusCode != tt.status {
					t.Fatalf("dial: %v (%v), want HTTP %d", err, resp, tt.status)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range tt.msgs {
					if err := c.ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
						t.Fatal(err)
					}
				}
				<-done
			}
			if got := rec.text(); !strings.Contains(got, tt.says) {
				t.Fatalf("the fake reported %q, want %q", got, tt.says)
			}
		})
	}
}
