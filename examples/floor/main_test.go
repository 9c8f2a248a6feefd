package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/cluster/natstest"
)

// fileServer serves the floor over a synced file, which it names.
func fileServer(t *testing.T) (string, *httptest.Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "floor.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ts := httptest.NewServer(handler(newJournal(f, true)))
	t.Cleanup(ts.Close)
	return path, ts
}

// TestAcksAfterAppend sends frames over a real WebSocket and checks each
// is acknowledged with its id and found in the file by the time its ack
// arrives.
func TestAcksAfterAppend(t *testing.T) {
	path, ts := fileServer(t)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 3 {
		frame := fmt.Sprintf(`{"type":"event","id":"e%d\u0001","session_id":"s"}`, i)
		if err := c.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		_, ack, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"type":"ack","id":"e%d\u0001","session_id":"s","t_ms":0}`, i); string(ack) != want {
			t.Fatalf("ack %s, want %s", ack, want)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(got, []byte(frame+"\n")) {
			t.Fatalf("acked e%d, file holds %q", i, got)
		}
	}
}

// TestHTTPEvent posts to the simulator's routes and checks the answers
// count up and the bodies reach the file.
func TestHTTPEvent(t *testing.T) {
	path, ts := fileServer(t)
	for i, op := range []string{"start", "event", "event"} {
		body := fmt.Sprintf(`{"session_id":"s","n":%d}`, i)
		resp, err := http.Post(ts.URL+"/sim/session/"+op, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`{"ok":true,"input_seq":%d}`, i+1); resp.StatusCode != http.StatusOK || string(got) != want {
			t.Fatalf("%s: %d %s, want %s", op, resp.StatusCode, got, want)
		}
		file, _ := os.ReadFile(path)
		if !bytes.HasSuffix(file, []byte(body+"\n")) {
			t.Fatalf("answered %s, file holds %q", op, file)
		}
	}
}

// TestStreamAppend publishes through an embedded JetStream server and
// checks each acknowledged frame is in the session's subject.
func TestStreamAppend(t *testing.T) {
	ns, err := natstest.Start(t.TempDir(), "s1", -1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	st, err := openStream(ns.ClientURL(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(handler(st))
	defer ts.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for i := range 3 {
		frame := fmt.Sprintf(`{"type":"event","id":"e%d","session_id":"s1"}`, i)
		if err := c.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		m, err := st.js.Stream(ctx, "FLOOR")
		if err != nil {
			t.Fatal(err)
		}
		last, err := m.GetLastMsgForSubject(ctx, "floor.s1")
		if err != nil || string(last.Data) != frame {
			t.Fatalf("acked e%d, last in floor.s1: %v %v", i, last, err)
		}
	}
}
