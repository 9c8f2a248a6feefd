package service

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/logtest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/replay"
)

// logLines decodes the server's JSON log lines with message msg.
func logLines(t *testing.T, buf *logtest.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A client that leaves before the end leaves a live session: it runs on
// and can be resumed, its log stays ID.wal until the session ends, and
// the server says so naming that file, which replays as it stands.
func TestClientLeavesEarly(t *testing.T) {
	var logs logtest.Buffer
	h := newHarness(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := h.dial(nil)
	c.send(startFrame("s", "left"))
	secret := c.expectAck("s").SessionSecret
	c.send(eventFrame("e", msgEvent(12_000, "I would check the logs for the retry first.")))
	c.expectAck("e")
	h.runUntil("left", 20_000)
	st, _ := h.quiesce("left")
	c.waitFor("all effects so far", func(*ServerFrame) bool { return c.lastSeq() == st.Seq })
	seen := c.effectList()
	c.ws.Close()

	deadline := time.Now().Add(waitLimit)
	for st, _ := h.status("left"); st.Subs > 0; st, _ = h.status("left") {
		if time.Now().After(deadline) {
			t.Fatal("the session still counts the client that left")
		}
		time.Sleep(time.Millisecond)
	}
	live, done := h.srv.dir.LivePath("left"), h.srv.dir.DonePath("left")
	left := logLines(t, &logs, msgClientLeft)
	if len(left) != 1 || left[0]["log"] != live {
		t.Fatalf("log lines on leaving: %v, want one naming %s", left, live)
	}
	if _, err := os.Stat(done); !os.IsNotExist(err) {
		t.Fatalf("%s exists while the session runs on (%v)", done, err)
	}

	res, err := replay.File(live, h.srv.Pack)
	if err != nil {
		t.Fatalf("replaying %s: %v", live, err)
	}
	if res.Session.Ended || len(res.Timeline) != len(seen) {
		t.Fatalf("replay of the live log: ended %v, %d effects, want a running session with the %d the client saw", res.Session.Ended, len(res.Timeline), len(seen))
	}
	for i, r := range res.Timeline {
		if w := seen[i].Effect; r.Type != w.Type || r.T != w.T || r.Agent != w.Agent || r.Text != w.Text {
			t.Fatalf("replayed effect %d is %s %s at %d, the client saw %s %s at %d", i, r.Type, r.Agent, r.T, w.Type, w.Agent, w.T)
		}
	}

	// It is still there to resume.
	c2 := h.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "left", "last_seq": st.Seq, "session_secret": secret})
	if ack := c2.expectAck("r"); ack.State == nil || ack.State.Ended {
		t.Fatalf("resume after leaving: %+v", ack.State)
	}
	c2.ws.Close()

	// Left alone, it ends on its own clock; then the log is ID.done, and
	// the line saying so names it.
	h.runUntil("left", 3_600_000)
	waitGone(t, h, "left")
	ended := logLines(t, &logs, "session ended")
	if len(ended) != 1 || ended[0]["log"] != done {
		t.Fatalf("log lines on the end: %v, want one naming %s", ended, done)
	}
	res, err = replay.File(done, h.srv.Pack)
	if err != nil || !res.Session.Ended {
		t.Fatalf("replaying %s: %v", done, err)
	}
	if res.Timeline[len(res.Timeline)-1].Type != engine.EffectSessionEnd {
		t.Fatalf("the finished log does not end the session: %+v", res.Timeline[len(res.Timeline)-1])
	}
}
