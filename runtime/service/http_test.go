package service

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/engine"
)

// hookReceiver is a frontend stand-in: it records every webhook attempt
// and fails the ones fail says to.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits []hookHit
	fail func(path string, n int, key string) bool
	got  chan hookHit
}

type hookHit struct {
	path, key string
	body      []byte
	n         int // attempt number for this idempotency key
}

func newHookReceiver(t *testing.T, fail func(path string, n int, key string) bool) *hookReceiver {
	r := &hookReceiver{fail: fail, got: make(chan hookHit, 1024)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		key := req.Header.Get("Idempotency-Key")
		r.mu.Lock()
		n := 1
		for _, h := range r.hits {
			if h.key == key {
				n++
			}
		}
		hit := hookHit{path: req.URL.Path, key: key, body: body, n: n}
		r.hits = append(r.hits, hit)
		r.mu.Unlock()
		r.got <- hit
		if req.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		if r.fail(req.URL.Path, n, key) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) next(t *testing.T) hookHit {
	t.Helper()
	select {
	case h := <-r.got:
		return h
	case <-time.After(waitLimit):
		t.Fatal("no webhook call")
		return hookHit{}
	}
}

func (h *harness) post(path string, body any) (int, map[string]any) {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	resp, err := http.Post(h.ts.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// waitArmed waits until a fake timer is armed exactly d from now: the
// webhook sender sleeping before a retry.
func (h *harness) waitArmed(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	want := h.clk.Now().Add(d)
	err := h.clk.WaitFor(ctx, func(armed []time.Time) bool {
		for _, a := range armed {
			if a.Equal(want) {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no timer armed %s from now: %v", d, err)
	}
}

// TestHTTPContract drives a session through the seed §5 endpoints. The
// frontend's agent-message webhook fails twice and succeeds on the third
// try (after 1 s and 2 s on the fake clock); its end webhook always
// fails and is reported.
func TestHTTPContract(t *testing.T) {
	var firstKey string
	var mu sync.Mutex
	recv := newHookReceiver(t, func(path string, n int, key string) bool {
		mu.Lock()
		defer mu.Unlock()
		if path == "/sim/session/end" {
			return true
		}
		if firstKey == "" {
			firstKey = key
		}
		return key == firstKey && n <= 2
	})
	h := newHarness(t)
	start := StartRequest{
		SessionID: "sess_001", CandidateID: "cand_demo", StartedAt: "2026-02-20T23:00:00Z",
		ScenarioID:           "payment_double_charge_vip_discount_v1",
		FrontendAgentWebhook: recv.srv.URL + "/sim/session/agent-message",
		EndCallbackWebhook:   recv.srv.URL + "/sim/session/end",
	}
	code, body := h.post("/sim/session/start", start)
	if code != http.StatusOK || body["ok"] != true || body["session_id"] != "sess_001" || body["pack"] != "dayone" {
		t.Fatalf("start: %d %v", code, body)
	}
	// A WebSocket observer sees the same session, including notices.
	obs := h.dial(nil)
	obs.send(map[string]any{"id": "r", "type": "resume", "session_id": "sess_001"})
	obs.expectAck("r")

	// The QA opener at 00:00: attempt 1 fails, retry after 1 s fails,
	// retry after 2 more s succeeds, all with one idempotency key.
	h.quiesce("sess_001")
	a1 := recv.next(t)
	if a1.path != "/sim/session/agent-message" || a1.n != 1 {
		t.Fatalf("first webhook %+v", a1)
	}
	var msg AgentMessageHook
	if err := json.Unmarshal(a1.body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.SessionID != "sess_001" || msg.Role != "qa" || msg.Text == "" || msg.MessageID == "" || msg.Kind == "" || msg.Voice != "Kore" || msg.Seq == 0 {
		t.Fatalf("agent message body %+v", msg)
	}
	h.waitArmed(time.Second)
	h.clk.Advance(time.Second)
	if a2 := recv.next(t); a2.key != a1.key || a2.n != 2 || !bytes.Equal(a2.body, a1.body) {
		t.Fatalf("second attempt %+v", a2)
	}
	h.waitArmed(2 * time.Second)
	h.clk.Advance(2 * time.Second)
	if a3 := recv.next(t); a3.key != a1.key || a3.n != 3 {
		t.Fatalf("third attempt %+v", a3)
	}

	// Events in the §5.2 shape.
	ev := map[string]any{"session_id": "sess_001", "event_type": "candidate_message", "ts_sec": 3.2,
		"data": map[string]any{"source": "voice", "text": "I prioritize hotfix first", "stt_confidence": 0.92, "addressed_to": "tech_lead"}}
	h.runUntil("sess_001", 3200)
	code, body = h.post("/sim/session/event", ev)
	if code != http.StatusOK || body["ok"] != true || body["t_ms"] != float64(3200) || body["input_seq"] == nil {
		t.Fatalf("event: %d %v", code, body)
	}
	bad := []struct {
		name string
		path string
		body any
		code int
		err  string
	}{
		{"start again", "/sim/session/start", start, http.StatusConflict, CodeSessionExists},
		{"start unknown field", "/sim/session/start", `{"session_id":"x","candidate_id":"c","started_at":"2026-02-20T23:00:00Z","scenario_id":"s","frontend_agent_webhook":"http://a/b","end_callback_webhook":"http://a/c","extra":1}`, http.StatusBadRequest, CodeBadFrame},
		{"start missing fields", "/sim/session/start", `{"session_id":"x"}`, http.StatusBadRequest, CodeBadFrame},
		{"start bad time", "/sim/session/start", strings.Replace(mustStr(start), "2026-02-20T23:00:00Z", "yesterday", 1), http.StatusBadRequest, CodeBadFrame},
		{"start bad webhook", "/sim/session/start", strings.Replace(strings.Replace(mustStr(start), "sess_001", "sess_002", 1), recv.srv.URL+"/sim/session/end", "file:///etc/passwd", 1), http.StatusBadRequest, CodeBadWebhook},
		{"start unknown scenario", "/sim/session/start", strings.Replace(strings.Replace(mustStr(start), "sess_001", "sess_003", 1), "payment_double_charge_vip_discount_v1", "nope", 1), http.StatusBadRequest, CodeBadPack},
		{"start bad id", "/sim/session/start", strings.Replace(mustStr(start), "sess_001", "../x", 1), http.StatusBadRequest, CodeBadSessionID},
		{"start not json", "/sim/session/start", `<xml/>`, http.StatusBadRequest, CodeBadJSON},
		{"start too large", "/sim/session/start", `{"session_id":"` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge, CodeTooLarge},
		{"event unknown session", "/sim/session/event", `{"session_id":"ghost","event_type":"speech_end","ts_sec":1}`, http.StatusNotFound, CodeSessionNotFound},
		{"event no session", "/sim/session/event", `{"event_type":"speech_end","ts_sec":1}`, http.StatusBadRequest, CodeBadFrame},
		{"event unknown type", "/sim/session/event", `{"session_id":"sess_001","event_type":"dance","ts_sec":4}`, http.StatusBadRequest, CodeUnknownEventType},
		{"event wrong type", "/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":"four"}`, http.StatusBadRequest, CodeBadFrame},
		{"event backwards", "/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":1}`, http.StatusConflict, CodeTimeBackwards},
		{"event invalid", "/sim/session/event", `{"session_id":"sess_001","event_type":"candidate_message","ts_sec":4}`, http.StatusBadRequest, CodeBadEvent},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.post(tc.path, tc.body)
			if code != tc.code || errCode(body) != tc.err {
				t.Fatalf("%d %v, want %d %s", code, body, tc.code, tc.err)
			}
		})
	}

	// Run to the end: every other agent message is delivered first time;
	// the end webhook fails three times and is reported.
	h.runUntil("sess_001", 700_000)
	obs.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	for h.srv.lookup("sess_001") != nil {
		time.Sleep(time.Millisecond)
	}
	var end SessionEndHook
	for {
		hit := recv.next(t)
		if hit.path != "/sim/session/end" {
			if hit.n != 1 {
				t.Fatalf("agent message retried: %+v", hit)
			}
			continue
		}
		if err := json.Unmarshal(hit.body, &end); err != nil {
			t.Fatal(err)
		}
		if hit.n == 3 {
			break
		}
		h.waitArmed(time.Duration(hit.n) * time.Second)
		h.clk.Advance(time.Duration(hit.n) * time.Second)
	}
	if end.SessionID != "sess_001" || end.Reason != "session_complete" || end.T != 600_000 || end.TsSec != 600 || end.CandidateID != "cand_demo" || end.EndedAt == "" {
		t.Fatalf("end body %+v", end)
	}
	deadline := time.Now().Add(waitLimit)
	for testutil.ToFloat64(h.srv.m.webhookFailures.WithLabelValues(hookEnd)) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("end webhook failure not counted")
		}
		time.Sleep(time.Millisecond)
	}
	if n := testutil.ToFloat64(h.srv.m.webhookFailures.WithLabelValues(hookAgent)); n != 0 {
		t.Fatalf("agent webhook failures %v", n)
	}
	code, body = h.post("/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":601}`)
	if code != http.StatusGone || errCode(body) != CodeSessionEnded {
		t.Fatalf("event after end: %d %v", code, body)
	}
}

// TestWebhookFailureNotice: a webhook given up on while the session is
// live reaches WebSocket subscribers as a notice.
func TestWebhookFailureNotice(t *testing.T) {
	recv := newHookReceiver(t, func(string, int, string) bool { return true })
	h := newHarness(t, func(c *Config) { c.WebhookBackoff = []time.Duration{time.Millisecond} })
	code, body := h.post("/sim/session/start", StartRequest{SessionID: "n1", CandidateID: "c", StartedAt: "2026-02-20T23:00:00Z",
		ScenarioID: "dayone", FrontendAgentWebhook: recv.srv.URL + "/a", EndCallbackWebhook: recv.srv.URL + "/e"})
	if code != http.StatusOK {
		t.Fatalf("start %d %v", code, body)
	}
	obs := h.dial(nil)
	obs.send(map[string]any{"id": "r", "type": "resume", "session_id": "n1"})
	obs.expectAck("r")
	h.quiesce("n1")
	recv.next(t)
	h.waitArmed(time.Millisecond)
	h.clk.Advance(time.Millisecond)
	recv.next(t)
	n := obs.waitFor("notice", func(f *ServerFrame) bool { return f.Type == FrameNotice })
	if n.Code != "webhook_failed" || !strings.Contains(n.Message, "failed after 2 attempts") || n.Seq == 0 {
		t.Fatalf("notice %+v", n)
	}
}

func mustStr(v any) string { return string(mustJSON(v)) }
