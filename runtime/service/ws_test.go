package service

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/llm"
)

// TestWSSessionLifecycle plays a whole DayOne session over a real
// WebSocket: start, agent messages, candidate events, the BA anchor and
// the end; then checks that what the client saw is exactly what an
// offline replay of the session's log produces.
func TestWSSessionLifecycle(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "life"))
	ack := c.expectAck("s")
	if ack.State == nil || ack.State.SessionID != "life" || ack.State.Pack != "dayone" || ack.State.LastSeq != 0 {
		t.Fatalf("start ack state %+v", ack.State)
	}

	h.runUntil("life", 1000)
	msg := c.waitFor("QA opener", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectAgentMessage
	})
	e := msg.Effect
	if e.Role != "qa" || e.Agent != "qa" || e.Voice != "Kore" || e.Kind == "" || e.Text == "" || e.ID == "" || e.Rule != "W1_QA_OPENER" || e.SpeechMS <= 0 {
		t.Fatalf("QA opener: %+v", e)
	}
	if msg.Seq == 0 || msg.SessionID != "life" {
		t.Fatalf("effect frame seq %d session %q", msg.Seq, msg.SessionID)
	}

	// A timed event: acked with its own time, then routed.
	h.runUntil("life", 16000)
	c.send(eventFrame("e1", msgEvent(16000, "I would replay the failed payment and check the logs.")))
	ea := c.expectAck("e1")
	if ea.T == nil || *ea.T != 16000 || ea.InputSeq == 0 || ea.Clamped != "" {
		t.Fatalf("event ack %+v", ea)
	}
	routed := c.waitFor("routed", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectRouted })
	if routed.Effect.Role != "qa" || routed.Effect.IntentTag == "" && routed.Effect.Reason == "" {
		t.Fatalf("routed: %+v", routed.Effect)
	}
	// An event without a time is stamped with the server's clock.
	c.send(eventFrame("e2", map[string]any{"event_type": "mic_state_changed", "data": map[string]any{"mic_active": true}}))
	if a := c.expectAck("e2"); *a.T != 16000 {
		t.Fatalf("untimed event at %d, want the server's 16000", *a.T)
	}
	c.send(eventFrame("e3", map[string]any{"event_type": "mic_state_changed", "ts_sec": 16.5, "data": map[string]any{"mic_active": false}}))
	c.expectAck("e3")

	h.runUntil("life", 181_000)
	c.waitFor("BA anchor", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectAnchor && f.Effect.Rule == "A1_BA_INTERRUPT" && f.Effect.T == 180_000
	})
	h.runUntil("life", 700_000)
	end := c.waitFor("session end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	if end.Effect.T != 600_000 {
		t.Fatalf("session ended at %d, want 600000", end.Effect.T)
	}
	waitGone(t, h, "life")
	if st, _ := h.srv.dir.State("life"); st != wal.StateDone {
		t.Fatalf("log state %v, want done", st)
	}
	got := c.effectList()
	for i, f := range got {
		if f.Seq != uint64(i+1) {
			t.Fatalf("effect %d has seq %d: gap or duplicate", i, f.Seq)
		}
	}
	sameFrames(t, got, h.replayFrames("life"))

	// After the end: inputs are refused with a clear code.
	c.send(eventFrame("late", msgEvent(600_500, "hello?")))
	c.expectError("late", CodeSessionEnded)
	if n := testutil.ToFloat64(h.srv.m.sessionsEnded); n != 1 {
		t.Errorf("sessions ended metric %v", n)
	}
}

func waitGone(t *testing.T, h *harness, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for h.srv.lookup(id) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("session %s still live", id)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWSResume disconnects mid-session and resumes, from the recent-frame
// ring and from the log, and after the end.
func TestWSResume(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ResumeRing = 4 })
	c1 := h.dial(nil)
	c1.send(startFrame("s", "res"))
	secret := c1.expectAck("s").SessionSecret
	h.runUntil("res", 20_000)
	st, _ := h.quiesce("res")
	c1.waitFor("all effects so far", func(*ServerFrame) bool { return c1.lastSeq() == st.Seq })
	seen := c1.lastSeq()
	c1.ws.Close()

	h.runUntil("res", 90_000)
	st, _ = h.quiesce("res")
	if st.Seq <= seen+4 {
		t.Fatalf("too few effects while away (%d -> %d) to test the log path", seen, st.Seq)
	}

	// Far behind: the ring (4 frames) cannot cover it; rebuilt from the log.
	c2 := h.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "res", "last_seq": seen, "session_secret": secret})
	ack := c2.expectAck("r")
	if ack.State == nil || ack.State.LastSeq != st.Seq || uint64(len(ack.Missed)) != st.Seq-seen || ack.Missed[0].Seq != seen+1 {
		t.Fatalf("resume ack: state %+v, %d missed", ack.State, len(ack.Missed))
	}
	if n := testutil.ToFloat64(h.srv.m.resumes.WithLabelValues("log")); n != 1 {
		t.Errorf("log resumes %v, want 1", n)
	}
	// Near: from the ring.
	c3 := h.dial(nil)
	c3.send(map[string]any{"id": "r", "type": "resume", "session_id": "res", "last_seq": st.Seq - 2, "session_secret": secret})
	if a := c3.expectAck("r"); len(a.Missed) != 2 || a.Missed[1].Seq != st.Seq {
		t.Fatalf("ring resume: %d missed", len(a.Missed))
	}
	if n := testutil.ToFloat64(h.srv.m.resumes.WithLabelValues("ring")); n != 1 {
		t.Errorf("ring resumes %v, want 1", n)
	}
	// The resumed connection carries on with events and live effects.
	c2.send(eventFrame("e", msgEvent(90_000, "What is the customer impact on the launch?")))
	c2.expectAck("e")
	c2.waitFor("routed", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectRouted })

	h.runUntil("res", 700_000)
	c2.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	waitGone(t, h, "res")
	all := h.replayFrames("res")
	// c1 saw the start, c2 the rest: together, exactly the session.
	merged := map[uint64]EffectFrame{}
	for _, f := range c1.effectList() {
		merged[f.Seq] = f
	}
	for _, f := range c2.effectList() {
		merged[f.Seq] = f
	}
	var got []EffectFrame
	for i := uint64(1); i <= uint64(len(merged)); i++ {
		got = append(got, merged[i])
	}
	sameFrames(t, got, all)

	// A finished session answers a resume with what was missed and ended.
	c4 := h.dial(nil)
	c4.send(map[string]any{"id": "r", "type": "resume", "session_id": "res", "last_seq": uint64(len(all) - 3), "session_secret": secret})
	a := c4.expectAck("r")
	if a.State == nil || !a.State.Ended || a.State.EndReason != "session_complete" || len(a.Missed) != 3 {
		t.Fatalf("resume after end: state %+v, %d missed", a.State, len(a.Missed))
	}
	c4.send(eventFrame("e", msgEvent(1, "hi")))
	c4.expectError("e", CodeSessionEnded)

	c5 := h.dial(nil)
	c5.send(map[string]any{"id": "r", "type": "resume", "session_id": "nobody"})
	c5.expectError("r", CodeSessionNotFound)
	c5.send(map[string]any{"id": "r2", "type": "resume", "session_id": "../etc"})
	c5.expectError("r2", CodeBadSessionID)
	c5.send(map[string]any{"id": "r3", "type": "start", "pack": "dayone", "session_id": "res"})
	c5.expectError("r3", CodeSessionExists)
}

// TestWSBadInputs sends every kind of bad frame; each gets its own error
// code and the connection keeps working.
func TestWSBadInputs(t *testing.T) {
	// A start frame's own limit is the ordinary one here, so a connection
	// without a session is held to 4x it too.
	h := newHarness(t, func(c *Config) { c.MaxMessageBytes, c.MaxStartBytes = 2048, 2048 })
	c := h.dial(nil)
	alive := func() {
		t.Helper()
		c.send(map[string]any{"id": "ping", "type": "ping"})
		if f := c.reply("ping"); f.Type != FramePong {
			t.Fatalf("ping answered with %+v", f)
		}
	}
	raw := []struct {
		name, frame, id, code, contains string
	}{
		{"not json", `hello`, "", CodeBadJSON, "JSON object"},
		{"array", `[1,2]`, "", CodeBadJSON, "JSON object"},
		{"truncated", `{"id":"t1","type":"ping"`, "t1", CodeBadJSON, "invalid JSON"},
		{"trailing", `{"id":"t2","type":"ping"} {}`, "t2", CodeBadJSON, "trailing"},
		{"id number", `{"id":7,"type":"ping"}`, "", CodeBadFrame, "field id"},
		{"type number", `{"id":"t3","type":5}`, "t3", CodeBadFrame, "field type"},
		{"missing id", `{"type":"ping"}`, "", CodeBadFrame, "missing id"},
		{"unknown field", `{"id":"t4","type":"ping","colour":"red"}`, "t4", CodeBadFrame, "colour"},
		{"missing type", `{"id":"t5"}`, "t5", CodeBadFrame, "missing type"},
		{"unknown type", `{"id":"t6","type":"fly"}`, "t6", CodeUnknownType, "fly"},
		{"field of another type", `{"id":"t7","type":"ping","session_id":"x"}`, "t7", CodeBadFrame, "does not take session_id"},
		{"event before start", `{"id":"t8","type":"event","event":{"event_type":"speech_end","ts_ms":1}}`, "t8", CodeNoSession, "start or resume"},
		{"start without pack", `{"id":"t9","type":"start","session_id":"x"}`, "t9", CodeBadFrame, "needs pack"},
		{"bad session id", `{"id":"t10","type":"start","pack":"dayone","session_id":"../../etc/passwd"}`, "t10", CodeBadSessionID, "invalid session id"},
		{"unknown pack", `{"id":"t11","type":"start","pack":"nope","session_id":"x"}`, "t11", CodeBadPack, "not a bundled pack"},
		{"pack path not allowed", `{"id":"t12","type":"start","pack":"/etc","session_id":"x"}`, "t12", CodeBadPack, ""},
	}
	// Dev mode allows any pack folder, so hold this server to roots.
	h.srv.packs.anyPath = false
	for _, tc := range raw {
		t.Run(tc.name, func(t *testing.T) {
			c.sendRaw([]byte(tc.frame))
			f := c.waitFor("error", func(f *ServerFrame) bool { return f.Type == FrameError })
			if f.Code != tc.code || f.ID != tc.id || !strings.Contains(f.Message, tc.contains) {
				t.Fatalf("got %s id=%q %q, want %s id=%q containing %q", f.Code, f.ID, f.Message, tc.code, tc.id, tc.contains)
			}
			alive()
		})
	}
	h.srv.packs.anyPath = true

	c.send(startFrame("start", "bad"))
	c.expectAck("start")
	h.runUntil("bad", 5000)
	events := []struct {
		name  string
		frame map[string]any
		code  string
	}{
		{"unknown event type", eventFrame("u1", map[string]any{"event_type": "dance", "ts_ms": 5000}), CodeUnknownEventType},
		{"engine trigger as event", eventFrame("u2", map[string]any{"event_type": "session_start", "ts_ms": 5000}), CodeUnknownEventType},
		{"bad event type", eventFrame("u3", map[string]any{"event_type": "Dance!", "ts_ms": 5000}), CodeUnknownEventType},
		{"message without text", eventFrame("u4", map[string]any{"event_type": "candidate_message", "ts_ms": 5000}), CodeBadEvent},
		{"both times", eventFrame("u5", map[string]any{"event_type": "speech_end", "ts_ms": 5000, "ts_sec": 5}), CodeBadEvent},
		{"negative time", eventFrame("u6", map[string]any{"event_type": "speech_end", "ts_sec": -1}), CodeBadEvent},
		{"confidence out of range", eventFrame("u7", map[string]any{"event_type": "candidate_message", "ts_ms": 5000, "data": map[string]any{"text": "x", "stt_confidence": 2}}), CodeBadEvent},
		{"mic without flag", eventFrame("u8", map[string]any{"event_type": "mic_state_changed", "ts_ms": 5000}), CodeBadEvent},
		{"text not a string", eventFrame("u9", map[string]any{"event_type": "candidate_message", "ts_ms": 5000, "data": map[string]any{"text": 5}}), CodeBadFrame},
		{"unknown data field", eventFrame("u10", map[string]any{"event_type": "candidate_message", "ts_ms": 5000, "data": map[string]any{"text": "x", "mood": "ok"}}), CodeBadFrame},
		{"other session", eventFrame("u11", map[string]any{"session_id": "other", "event_type": "speech_end", "ts_ms": 5000}), CodeBadEvent},
		{"speech_done on server playback", map[string]any{"id": "u12", "type": "speech_done", "message_id": "m1"}, CodeNotClientPlayed},
		{"second start", startFrame("u13", "bad2"), CodeAlreadyBound},
		{"resume while bound", map[string]any{"id": "u14", "type": "resume", "session_id": "bad"}, CodeAlreadyBound},
	}
	for _, tc := range events {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.frame)
			c.expectError(tc.frame["id"].(string), tc.code)
			alive()
		})
	}

	t.Run("time backwards", func(t *testing.T) {
		c.send(eventFrame("b1", msgEvent(5000, "first")))
		c.expectAck("b1")
		c.send(eventFrame("b2", map[string]any{"event_type": "speech_end", "ts_ms": 4000}))
		f := c.expectError("b2", CodeTimeBackwards)
		if !strings.Contains(f.Message, "00:04.0") || !strings.Contains(f.Message, "00:05.0") {
			t.Fatalf("message %q should name both times", f.Message)
		}
	})
	t.Run("behind clamped", func(t *testing.T) {
		h.runUntil("bad", 8000)
		c.send(eventFrame("k1", map[string]any{"event_type": "speech_end"})) // server time: 8000
		c.expectAck("k1")
		c.send(eventFrame("k2", map[string]any{"event_type": "speech_end", "ts_ms": 6000}))
		a := c.expectAck("k2")
		if a.Clamped != "behind" || *a.T != 8000 {
			t.Fatalf("ack %+v t=%d, want clamped behind at 8000", a, *a.T)
		}
	})
	t.Run("future clamped", func(t *testing.T) {
		c.send(eventFrame("f1", map[string]any{"event_type": "speech_end", "ts_ms": 60_000}))
		a := c.expectAck("f1")
		if a.Clamped != "future" || *a.T != 8000 {
			t.Fatalf("ack %+v t=%d, want clamped future at the server's 8000", a, *a.T)
		}
	})
	t.Run("binary frame", func(t *testing.T) {
		if err := c.ws.WriteMessage(websocket.BinaryMessage, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		f := c.waitFor("error", func(f *ServerFrame) bool { return f.Type == FrameError })
		if f.Code != CodeBadFrame || !strings.Contains(f.Message, "binary") {
			t.Fatalf("got %+v", f)
		}
		alive()
	})
	t.Run("oversized frame", func(t *testing.T) {
		big := `{"id":"big","type":"ping","pad":"` + strings.Repeat("x", 3000) + `"}`
		c.sendRaw([]byte(big))
		c.expectError("big", CodeTooLarge)
		alive()
	})
	t.Run("far oversized frame closes 1009", func(t *testing.T) {
		c2 := h.dial(nil)
		c2.sendRaw([]byte(strings.Repeat("x", 9000)))
		if ce := c2.waitClose(); ce.Code != websocket.CloseMessageTooBig {
			t.Fatalf("close %d %q, want 1009", ce.Code, ce.Text)
		}
	})
	t.Run("session survives", func(t *testing.T) {
		h.runUntil("bad", 12000)
		if _, ok := h.quiesce("bad"); !ok {
			t.Fatal("session gone")
		}
	})
	if n := testutil.ToFloat64(h.srv.m.clientErrors.WithLabelValues(CodeBadJSON)); n != 4 {
		t.Errorf("bad_json errors metric %v, want 4", n)
	}
}

// TestWSRateLimit floods a connection: frames beyond the burst are
// refused one by one, and a client that keeps flooding is closed (1008).
func TestWSRateLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EventRate, c.EventBurst, c.MaxRejected = 1, 5, 10 })
	c := h.dial(nil)
	for i := range 5 {
		c.send(map[string]any{"id": "p" + string(rune('a'+i)), "type": "ping"})
	}
	for i := range 5 {
		if f := c.reply("p" + string(rune('a'+i))); f.Type != FramePong {
			t.Fatalf("ping %d inside the burst: %+v", i, f)
		}
	}
	c.send(map[string]any{"id": "over", "type": "ping"})
	c.expectError("over", CodeRateLimited)
	// The fake clock refills the bucket: one more frame is allowed.
	h.clk.Advance(time.Second)
	c.send(map[string]any{"id": "again", "type": "ping"})
	if f := c.reply("again"); f.Type != FramePong {
		t.Fatalf("after refill: %+v", f)
	}
	for i := range 12 {
		// The server may close mid-flood; later writes then fail.
		if c.ws.WriteJSON(map[string]any{"id": "flood" + string(rune('a'+i)), "type": "ping"}) != nil {
			break
		}
	}
	if ce := c.waitClose(); ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "rate limit") {
		t.Fatalf("close %d %q, want 1008 rate limit", ce.Code, ce.Text)
	}
}

// TestAuthAndOrigin checks the token and the Origin allowlist.
func TestAuthAndOrigin(t *testing.T) {
	if _, err := New(Config{DataDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("New without token or dev: %v", err)
	}
	h := newHarness(t, func(c *Config) {
		c.Dev, c.Token, c.Origins = false, "s3cret", []string{"https://app.example.com"}
	})
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	tests := []struct {
		name   string
		hdr    http.Header
		query  string
		status int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", bearer("nope"), "", http.StatusUnauthorized},
		{"header token", bearer("s3cret"), "", http.StatusSwitchingProtocols},
		{"query token", nil, "?access_token=s3cret", http.StatusSwitchingProtocols},
		{"allowed origin", http.Header{"Authorization": {"Bearer s3cret"}, "Origin": {"https://app.example.com"}}, "", http.StatusSwitchingProtocols},
		{"other origin", http.Header{"Authorization": {"Bearer s3cret"}, "Origin": {"https://evil.example.com"}}, "", http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := websocket.Dialer{HandshakeTimeout: waitLimit}
			ws, resp, err := d.Dial(h.wsURL()+tc.query, tc.hdr)
			if ws != nil {
				ws.Close()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.status, err)
			}
		})
	}
	for _, path := range []string{"/metrics", "/debug/stats"} {
		resp, err := http.Get(h.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without token: %d", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(h.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// TestSlowConsumer blocks one client's writes: its queue fills, it is
// closed with 1013 and a reason, and the session goes on for others.
func TestSlowConsumer(t *testing.T) {
	gate := make(chan struct{})
	h := newHarnessOn(t, func(ln net.Listener) net.Listener { return &gatedListener{Listener: ln, gate: gate} },
		func(c *Config) { c.SendQueue = 2 })
	slow := h.dial(nil)
	slow.send(startFrame("s", "slow"))
	// Its ack cannot be delivered, so wait for the session itself.
	for deadline := time.Now().Add(waitLimit); h.srv.lookup("slow") == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("session not started")
		}
	}
	h.runUntil("slow", 120_000)
	close(gate)
	// The ack was the write the gate held: it is the first frame through.
	secret := slow.reply("s").SessionSecret
	ce := slow.waitClose()
	if ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "slow consumer") {
		t.Fatalf("close %d %q, want 1013 slow consumer", ce.Code, ce.Text)
	}
	if n := testutil.ToFloat64(h.srv.m.slowConsumers); n != 1 {
		t.Errorf("slow consumer metric %v", n)
	}
	fast := h.dial(nil)
	fast.send(map[string]any{"id": "r", "type": "resume", "session_id": "slow", "last_seq": 0, "session_secret": secret})
	fast.expectAck("r")
	h.runUntil("slow", 150_000)
	fast.send(eventFrame("e", msgEvent(150_000, "still here")))
	fast.expectAck("e")
}

// TestPanics: a panic in a session's goroutine rebuilds the session from
// its log and it carries on; a panic on a connection closes only that
// connection (1011).
func TestPanics(t *testing.T) {
	var clk *panicClock
	h := newHarness(t, func(c *Config) {
		clk = &panicClock{Fake: c.Clock.(*clocktest.Fake)}
		c.Clock = clk
		sim := c.Model
		c.Model = func(id string, p *rules.Pack, c clock.Clock) llm.Answerer {
			if id == "kaboom" {
				panic("model factory")
			}
			return sim(id, p, c)
		}
	})
	c := h.dial(nil)
	c.send(startFrame("s", "boom"))
	secret := c.expectAck("s").SessionSecret
	h.runUntil("boom", 40_000)
	before, _ := h.quiesce("boom")
	if !before.HasWake {
		t.Fatal("nothing scheduled")
	}
	// The session's next wake-up panics before it steps.
	clk.armed.Store(true)
	h.clk.Advance(time.Duration(before.Wake-before.Now) * time.Millisecond)
	for deadline := time.Now().Add(waitLimit); testutil.ToFloat64(h.srv.m.panics.WithLabelValues("session")) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session did not panic")
		}
	}
	after, _ := h.quiesce("boom")
	if after.Seq < before.Seq || after.T != before.Wake {
		t.Fatalf("rebuilt session at seq %d t %d, was %d %d and due at %d", after.Seq, after.T, before.Seq, before.T, before.Wake)
	}
	if n := testutil.ToFloat64(h.srv.m.recoveries.WithLabelValues("ok")); n != 1 {
		t.Fatalf("rebuilds counted %v", n)
	}
	// The rebuilt ring holds frames remembered during the replay: a
	// resume from it gets them as they were first sent.
	c.waitFor("effects up to the rebuilt session's", func(*ServerFrame) bool { return c.lastSeq() == after.Seq })
	last := max(before.Seq, 2) - 2
	r := h.dial(nil)
	r.send(map[string]any{"id": "r", "type": "resume", "session_id": "boom", "last_seq": last, "session_secret": secret})
	var want []EffectFrame
	for _, f := range c.effectList() {
		if f.Seq > last {
			want = append(want, f)
		}
	}
	sameFrames(t, r.expectAck("r").Missed, want)
	if n := testutil.ToFloat64(h.srv.m.resumes.WithLabelValues("ring")); n != 1 {
		t.Fatalf("ring resumes %v, want 1", n)
	}
	c.send(eventFrame("e", msgEvent(40_000, "after the panic")))
	c.expectAck("e")
	h.runUntil("boom", 700_000)
	c.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	sameFrames(t, c.effectList(), h.replayFrames("boom"))

	// A connection whose start makes the model factory panic is closed;
	// the server carries on.
	c2 := h.dial(nil)
	c2.send(startFrame("k", "kaboom"))
	if ce := c2.waitClose(); ce.Code != websocket.CloseInternalServerErr {
		t.Fatalf("close %d %q, want 1011", ce.Code, ce.Text)
	}
	c3 := h.dial(nil)
	c3.send(map[string]any{"id": "p", "type": "ping"})
	c3.reply("p")
}

// TestClientPlayback: a client that plays speech itself reports its end.
func TestClientPlayback(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	f := startFrame("s", "cp")
	f["client_playback"] = true
	c.send(f)
	if a := c.expectAck("s"); !a.State.ClientPlayback {
		t.Fatal("state does not say client_playback")
	}
	h.runUntil("cp", 500)
	m := c.waitFor("agent message", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectAgentMessage
	})
	if m.Effect.SpeechMS != 0 {
		t.Fatalf("client-played message has server speech_ms %d", m.Effect.SpeechMS)
	}
	c.send(map[string]any{"id": "x", "type": "speech_done", "message_id": "m999"})
	c.expectError("x", CodeUnknownMessage)
	h.runUntil("cp", 3000)
	c.send(map[string]any{"id": "d", "type": "speech_done", "message_id": m.Effect.ID})
	if a := c.expectAck("d"); *a.T != 3000 {
		t.Fatalf("speech_done at %d, want 3000", *a.T)
	}
	c.send(map[string]any{"id": "d2", "type": "speech_done", "message_id": m.Effect.ID})
	c.expectError("d2", CodeUnknownMessage)
}

// TestShutdownAndRecovery stops a server mid-session, lets time pass,
// starts a new server on the same data and checks that the session
// resumes, fires what fell due while it was down at the right times, and
// matches an offline replay of its log.
func TestShutdownAndRecovery(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "rec"))
	secret := c.expectAck("s").SessionSecret
	h.runUntil("rec", 170_000)
	c.send(eventFrame("e", msgEvent(170_000, "hotfix first, then the launch")))
	c.expectAck("e")
	st, _ := h.quiesce("rec")
	c.waitFor("all effects", func(*ServerFrame) bool { return c.lastSeq() == st.Seq })

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ce := c.waitClose()
	if ce.Code != websocket.CloseGoingAway || !strings.Contains(ce.Text, "shutting down") {
		t.Fatalf("close %d %q, want 1001 shutting down", ce.Code, ce.Text)
	}
	if _, err := os.Stat(h.srv.dir.LivePath("rec")); err != nil {
		t.Fatalf("live log after shutdown: %v", err)
	}

	// 30 s of downtime spans the BA anchor at 03:00.
	h.clk.Advance(30 * time.Second)
	h2 := startHarness(t, h.cfg, h.clk, nil)
	if n := testutil.ToFloat64(h2.srv.m.recoveries.WithLabelValues("ok")); n != 1 {
		t.Fatalf("recoveries ok %v", n)
	}
	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "rec", "last_seq": st.Seq, "session_secret": secret})
	a := c2.expectAck("r")
	if a.State.T < 180_000 {
		t.Fatalf("recovered session at %d, want caught up past the 03:00 anchor", a.State.T)
	}
	var anchor *EffectFrame
	for i := range a.Missed {
		if a.Missed[i].Effect.Type == engine.EffectAnchor && a.Missed[i].Effect.Rule == "A1_BA_INTERRUPT" {
			anchor = &a.Missed[i]
		}
	}
	if anchor == nil || anchor.Effect.T != 180_000 {
		t.Fatalf("the anchor due during downtime: %+v", anchor)
	}
	h2.runUntil("rec", 700_000)
	c2.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	waitGone(t, h2, "rec")
	merged := append(c.effectList(), c2.effectList()...)
	sameFrames(t, merged, h2.replayFrames("rec"))
}

// TestLazySyncLostTailRederived: with LazySync, timer advances and
// simulated speech ends are not synced on their own. Cut the log right
// after its last synced input (the most a crash can lose) and recover at
// the same moment: the session must re-make the lost inputs and the very
// effects the client already saw from them, then carry on.
func TestLazySyncLostTailRederived(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.LazySync = true })
	c := h.dial(nil)
	c.send(startFrame("s", "lazy"))
	secret := c.expectAck("s").SessionSecret
	h.runUntil("lazy", 30_000)
	c.send(eventFrame("e", msgEvent(30_000, "What is the rollback risk?")))
	c.expectAck("e")
	// Run on until several derivable inputs follow the last synced one.
	path := h.srv.dir.LivePath("lazy")
	for at := int64(31_000); ; at += 500 {
		h.runUntil("lazy", at)
		if _, err := h.srv.dir.Read("lazy"); err != nil { // writes the file up to date
			t.Fatal(err)
		}
		if _, n := lastSyncedEnd(t, path); n >= 3 {
			break
		}
		if at > 500_000 {
			t.Fatal("never found a tail of derivable inputs")
		}
	}
	st, _ := h.quiesce("lazy")
	c.waitFor("all effects", func(*ServerFrame) bool { return c.lastSeq() == st.Seq })
	seen := c.lastSeq()
	if err := h.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	cut, dropped := lastSyncedEnd(t, path)
	if dropped == 0 {
		t.Fatal("no unsynced derivable inputs at the tail; the test tests nothing")
	}
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	// A crash before any checkpoint covered the unsynced inputs leaves a
	// ledger that does not know them; the clean shutdown above recorded
	// them, so the ledger goes too, or the cut would rightly be damage.
	for _, name := range []string{"ledger.0", "ledger.1"} {
		if err := os.Remove(filepath.Join(h.cfg.DataDir, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}

	h2 := startHarness(t, h.cfg, h.clk, nil)
	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "lazy", "last_seq": seen, "session_secret": secret})
	c2.expectAck("r")
	h2.runUntil("lazy", 700_000)
	c2.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	waitGone(t, h2, "lazy")
	want := h2.replayFrames("lazy")
	before := c.effectList()
	sameFrames(t, before, want[:len(before)])
	sameFrames(t, append(before, c2.effectList()...), want)
	t.Logf("cut %d unsynced derivable inputs; %d effects seen before the cut were re-made identically", dropped, len(before))
}

// lastSyncedEnd returns the offset just past the last input that LazySync
// syncs, and how many derivable inputs follow it.
func lastSyncedEnd(t *testing.T, path string) (int64, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(len(wal.Magic))
	var cut int64
	dropped := 0
	for off < int64(len(data)) {
		n := int64(binary.LittleEndian.Uint32(data[off:]))
		var r wal.Record
		if err := json.Unmarshal(data[off+8:off+8+n], &r); err != nil {
			t.Fatal(err)
		}
		off += 8 + n
		if r.Kind != wal.KindInput {
			continue
		}
		if r.Input.Type == engine.InputAdvance || r.Input.Type == engine.InputSpeechDone {
			dropped++
			continue
		}
		cut, dropped = off, 0
	}
	return cut, dropped
}

// TestSpeechTimedAsInDryRun: the server times simulated speech with the
// dry run's model, so the same line takes as long in both.
func TestSpeechTimedAsInDryRun(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "speech"))
	c.expectAck("s")
	h.runUntil("speech", 120_000)
	p, err := h.srv.packs.open("dayone")
	if err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Run(p, dryrun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, r := range res.Records {
		if r.Type == engine.EffectAgentMessage {
			want[r.Agent+": "+r.Text] = r.SpeechMS
		}
	}
	n := 0
	for _, f := range c.effectList() {
		e := f.Effect
		if e.Type != engine.EffectAgentMessage {
			continue
		}
		ms, ok := want[e.Agent+": "+e.Text]
		if !ok {
			continue
		}
		if e.SpeechMS != ms {
			t.Errorf("%s: %q takes %d ms on the server, %d ms in the dry run", e.Agent, e.Text, e.SpeechMS, ms)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("only %d agent messages in common with the dry run", n)
	}
}

// gatedListener blocks every write to its first connection after the
// handshake until gate is closed: a client that stops reading.
type gatedListener struct {
	net.Listener
	gate chan struct{}
	once sync.Once
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gated := false
	l.once.Do(func() { gated = true })
	if !gated {
		return c, nil
	}
	return &gatedConn{Conn: c, gate: l.gate}, nil
}

type gatedConn struct {
	net.Conn
	gate   chan struct{}
	writes atomic.Int32
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if c.writes.Add(1) > 1 { // the first write is the handshake's answer
		<-c.gate
	}
	return c.Conn.Write(b)
}

// panicClock panics on the first Now after armed is set: on the session's
// goroutine, in the tests that arm it.
type panicClock struct {
	*clocktest.Fake
	armed atomic.Bool
}

func (c *panicClock) Now() time.Time {
	if c.armed.CompareAndSwap(true, false) {
		panic("clock")
	}
	return c.Fake.Now()
}
