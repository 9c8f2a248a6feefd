package service_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/logtest"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/service/dayone"
)

// ask sends frame on a connection of its own and returns the reply to
// its id as the server sent it, byte for byte.
func ask(t *testing.T, url string, hdr http.Header, frame map[string]any) []byte {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 20 * time.Second}
	ws, _, err := d.Dial(url, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	if err := ws.WriteJSON(frame); err != nil {
		t.Fatal(err)
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("no reply to %v: %v", frame, err)
		}
		var f struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &f) == nil && f.ID == frame["id"] {
			return data
		}
	}
}

// Two clients hold the same server token. A starts a session; B, without
// its secret, can neither resume it (which is also how a client watches
// a session) nor send it events over HTTP, and every refusal is byte for
// byte what a server without the session answers. A can, before and
// after a restart that recovers the session from its log, and after the
// session ended. The log keeps the secret's hash, never the secret.
func TestSessionSecretKeepsOtherClientsOut(t *testing.T) {
	const token = "tok"
	auth := http.Header{"Authorization": {"Bearer " + token}}
	var logs logtest.Buffer
	withToken := func(c *service.Config) {
		c.Dev, c.Token = false, token
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}
	h := service.NewHarness(t, withToken, withDayOne(dayone.Config{}))
	empty := service.NewHarness(t, func(c *service.Config) { c.Dev, c.Token = false, token }, withDayOne(dayone.Config{}))

	a := h.DialWith(auth)
	a.Send(map[string]any{"id": "s", "type": "start", "pack": "dayone", "session_id": "sa", "candidate_id": "cand_a"})
	secret := a.ExpectAck("s").SessionSecret
	if len(secret) != 43 || strings.Trim(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("secret %q: want 32 random bytes, base64url", secret)
	}
	h.RunUntil("sa", 10_000)
	a.Send(map[string]any{"id": "e1", "type": "event", "event": map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": "I would roll back first."}}})
	a.ExpectAck("e1")

	b := h.DialWith(auth)
	b.Send(map[string]any{"id": "s", "type": "start", "pack": "dayone", "session_id": "sb", "candidate_id": "cand_b"})
	secretB := b.ExpectAck("s").SessionSecret

	resume := func(secret string) map[string]any {
		f := map[string]any{"id": "r", "type": "resume", "session_id": "sa"}
		if secret != "" {
			f["session_secret"] = secret
		}
		return f
	}
	event := `{"session_id":"sa","event_type":"candidate_message","data":{"source":"text","text":"B speaking for A"}}`
	as := func(secret string) http.Header {
		hdr := auth.Clone()
		if secret != "" {
			hdr.Set(service.SecretHeader, secret)
		}
		return hdr
	}
	wrong := "A" + secret[1:]
	if wrong == secret {
		wrong = "B" + secret[1:]
	}
	// refusedLikeAbsent checks B's attempts on srv against the same
	// attempts on a server without the session.
	refusedLikeAbsent := func(srv *service.Harness) {
		t.Helper()
		want := ask(t, empty.WSURL(), auth, resume(""))
		var e service.ServerFrame
		if err := json.Unmarshal(want, &e); err != nil || e.Code != service.CodeSessionNotFound {
			t.Fatalf("resume of an absent session: %s", want)
		}
		for _, s := range []string{"", wrong, secretB} {
			if got := ask(t, srv.WSURL(), auth, resume(s)); !bytes.Equal(got, want) {
				t.Errorf("resume with secret %q:\n got %s\nwant %s", s, got, want)
			}
		}
		wantCode, wantBody := empty.PostRaw("/sim/session/event", event, auth)
		if wantCode != http.StatusNotFound {
			t.Fatalf("event for an absent session: %d %s", wantCode, wantBody)
		}
		for _, s := range []string{"", secretB} {
			if code, body := srv.PostRaw("/sim/session/event", event, as(s)); code != wantCode || !bytes.Equal(body, wantBody) {
				t.Errorf("event with secret %q: %d %s, want %d %s", s, code, body, wantCode, wantBody)
			}
		}
	}
	events := h.Metric("baton_candidate_events_total", "type", "candidate_message")
	refusedLikeAbsent(h)
	if n := h.Metric("baton_candidate_events_total", "type", "candidate_message"); n != events {
		t.Fatalf("%v candidate events applied, want %v: B's got in", n, events)
	}
	// B's connection is bound to its own session: its events go there.
	if n := h.Metric("baton_session_secret_refusals_total", "reason", "missing"); n != 2 {
		t.Errorf("refusals for a missing secret: %v, want 2", n)
	}
	if n := h.Metric("baton_session_secret_refusals_total", "reason", "mismatch"); n != 3 {
		t.Errorf("refusals for a wrong secret: %v, want 3", n)
	}

	// A, with its secret, over both routes.
	var ack service.ServerFrame
	if err := json.Unmarshal(ask(t, h.WSURL(), auth, resume(secret)), &ack); err != nil || ack.Type != service.FrameAck || ack.State == nil || ack.SessionSecret != "" {
		t.Fatalf("A's resume: %+v %v", ack, err)
	}
	if code, body := h.PostRaw("/sim/session/event", event, as(secret)); code != http.StatusOK {
		t.Fatalf("A's event: %d %s", code, body)
	}

	// The refusals are logged with the address and the session, never
	// with a secret.
	lines := 0
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, secret) || strings.Contains(l, secretB) || strings.Contains(l, wrong) {
			t.Fatalf("a log line shows a secret: %s", l)
		}
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "session secret refused" {
			continue
		}
		lines++
		if m["session_id"] != "sa" || !strings.HasPrefix(m["remote"].(string), "127.0.0.1:") {
			t.Errorf("refusal logged as %s", l)
		}
	}
	if lines != 5 {
		t.Errorf("%d refusals logged, want 5", lines)
	}

	// The log keeps the hash, never the secret.
	sum := sha256.Sum256([]byte(secret))
	hash, found := hex.EncodeToString(sum[:]), false
	filepath.WalkDir(h.DataDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the secret", path)
		}
		found = found || bytes.Contains(data, []byte(hash))
		return nil
	})
	if !found {
		t.Error("no log holds the secret's hash")
	}

	// After a restart the session is recovered from its log, and its
	// secret with it.
	h2 := h.Restart(withDayOne(dayone.Config{}))
	if !h2.Live("sa") {
		t.Fatal("session not recovered")
	}
	refusedLikeAbsent(h2)
	a2 := h2.DialWith(auth)
	a2.Send(resume(secret))
	if f := a2.ExpectAck("r"); f.State == nil || f.State.Ended {
		t.Fatalf("A's resume after the restart: %+v", f.State)
	}
	if code, body := h2.PostRaw("/sim/session/event", event, as(secret)); code != http.StatusOK {
		t.Fatalf("A's event after the restart: %d %s", code, body)
	}

	// Ended, it is answered from its finished log, to A only.
	a2.Send(map[string]any{"id": "x", "type": "end", "reason": "candidate_left"})
	a2.ExpectAck("x")
	a2.WaitFor("the end", func(f *service.ServerFrame) bool {
		return f.Type == service.FrameEffect && f.Effect.Type == engine.EffectSessionEnd
	})
	for deadline := time.Now().Add(20 * time.Second); h2.Live("sa"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session did not end")
		}
	}
	refusedLikeAbsent(h2)
	if err := json.Unmarshal(ask(t, h2.WSURL(), auth, resume(secret)), &ack); err != nil || ack.Type != service.FrameAck || ack.State == nil || !ack.State.Ended {
		t.Fatalf("A's resume of the ended session: %+v %v", ack, err)
	}
}
