package service_test

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/service/dayone"
)

// These run the DayOne contract mounted on a server, on this package's
// harness (export_test.go); dayone's own tests cover its parsers.

// withDayOne mounts the contract, with cfg's webhook settings.
func withDayOne(cfg dayone.Config) func(*service.Config) {
	return func(c *service.Config) { c.Contracts = append(c.Contracts, dayone.New(cfg)) }
}

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
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook call")
		return hookHit{}
	}
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
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
	h := service.NewHarness(t, withDayOne(dayone.Config{AllowPrivateWebhooks: true}))
	start := dayone.StartRequest{
		SessionID: "sess_001", CandidateID: "cand_demo", StartedAt: "2026-02-20T23:00:00Z",
		ScenarioID:           "payment_double_charge_vip_discount_v1",
		FrontendAgentWebhook: recv.srv.URL + "/sim/session/agent-message",
		EndCallbackWebhook:   recv.srv.URL + "/sim/session/end",
	}
	code, body := h.Post("/sim/session/start", start)
	secret, _ := body["session_secret"].(string)
	if code != http.StatusOK || body["ok"] != true || body["session_id"] != "sess_001" || body["pack"] != "dayone" || len(secret) < 22 {
		t.Fatalf("start: %d %v", code, body)
	}
	// A WebSocket observer sees the same session, including notices.
	obs := h.Dial()
	obs.Send(map[string]any{"id": "r", "type": "resume", "session_id": "sess_001", "session_secret": secret})
	obs.ExpectAck("r")

	// The QA opener at 00:00: attempt 1 fails, retry after 1 s fails,
	// retry after 2 more s succeeds, all with one idempotency key.
	h.Quiesce("sess_001")
	a1 := recv.next(t)
	if a1.path != "/sim/session/agent-message" || a1.n != 1 {
		t.Fatalf("first webhook %+v", a1)
	}
	var msg dayone.AgentMessageHook
	if err := json.Unmarshal(a1.body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.SessionID != "sess_001" || msg.Role != "qa" || msg.Text == "" || msg.MessageID == "" || msg.Kind == "" || msg.Voice != "Kore" || msg.Seq == 0 {
		t.Fatalf("agent message body %+v", msg)
	}
	h.WaitArmed(time.Second)
	h.Advance(time.Second)
	if a2 := recv.next(t); a2.key != a1.key || a2.n != 2 || !bytes.Equal(a2.body, a1.body) {
		t.Fatalf("second attempt %+v", a2)
	}
	h.WaitArmed(2 * time.Second)
	h.Advance(2 * time.Second)
	if a3 := recv.next(t); a3.key != a1.key || a3.n != 3 {
		t.Fatalf("third attempt %+v", a3)
	}

	// Events in the §5.2 shape.
	ev := map[string]any{"session_id": "sess_001", "event_type": "candidate_message", "ts_sec": 3.2,
		"data": map[string]any{"source": "voice", "text": "I prioritize hotfix first", "stt_confidence": 0.92, "addressed_to": "tech_lead"}}
	h.RunUntil("sess_001", 3200)
	code, body = h.PostAs(secret, "/sim/session/event", ev)
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
		{"start again", "/sim/session/start", start, http.StatusConflict, service.CodeSessionExists},
		{"start unknown field", "/sim/session/start", `{"session_id":"x","candidate_id":"c","started_at":"2026-02-20T23:00:00Z","scenario_id":"s","frontend_agent_webhook":"http://a/b","end_callback_webhook":"http://a/c","extra":1}`, http.StatusBadRequest, service.CodeBadFrame},
		{"start missing fields", "/sim/session/start", `{"session_id":"x"}`, http.StatusBadRequest, service.CodeBadFrame},
		{"start bad time", "/sim/session/start", strings.Replace(mustStr(start), "2026-02-20T23:00:00Z", "yesterday", 1), http.StatusBadRequest, service.CodeBadFrame},
		{"start bad webhook", "/sim/session/start", strings.Replace(strings.Replace(mustStr(start), "sess_001", "sess_002", 1), recv.srv.URL+"/sim/session/end", "file:///etc/passwd", 1), http.StatusBadRequest, service.CodeBadWebhook},
		{"start unknown scenario", "/sim/session/start", strings.Replace(strings.Replace(mustStr(start), "sess_001", "sess_003", 1), "payment_double_charge_vip_discount_v1", "nope", 1), http.StatusBadRequest, service.CodeBadPack},
		{"start bad id", "/sim/session/start", strings.Replace(mustStr(start), "sess_001", "../x", 1), http.StatusBadRequest, service.CodeBadSessionID},
		{"start not json", "/sim/session/start", `<xml/>`, http.StatusBadRequest, service.CodeBadJSON},
		{"start too large", "/sim/session/start", `{"session_id":"` + strings.Repeat("x", 1100<<10) + `"}`, http.StatusRequestEntityTooLarge, service.CodeTooLarge},
		{"event unknown session", "/sim/session/event", `{"session_id":"ghost","event_type":"speech_end","ts_sec":1}`, http.StatusNotFound, service.CodeSessionNotFound},
		{"event no session", "/sim/session/event", `{"event_type":"speech_end","ts_sec":1}`, http.StatusBadRequest, service.CodeBadFrame},
		{"event unknown type", "/sim/session/event", `{"session_id":"sess_001","event_type":"dance","ts_sec":4}`, http.StatusBadRequest, service.CodeUnknownEventType},
		{"event wrong type", "/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":"four"}`, http.StatusBadRequest, service.CodeBadFrame},
		{"event backwards", "/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":1}`, http.StatusConflict, service.CodeTimeBackwards},
		{"event invalid", "/sim/session/event", `{"session_id":"sess_001","event_type":"candidate_message","ts_sec":4}`, http.StatusBadRequest, service.CodeBadEvent},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.PostAs(secret, tc.path, tc.body)
			if code != tc.code || errCode(body) != tc.err {
				t.Fatalf("%d %v, want %d %s", code, body, tc.code, tc.err)
			}
		})
	}

	// Run to the end: every other agent message is delivered first time;
	// the end webhook fails three times and is reported.
	h.RunUntil("sess_001", 700_000)
	obs.WaitFor("end", func(f *service.ServerFrame) bool {
		return f.Type == service.FrameEffect && f.Effect.Type == engine.EffectSessionEnd
	})
	for h.Live("sess_001") {
		time.Sleep(time.Millisecond)
	}
	var end dayone.SessionEndHook
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
		h.WaitArmed(time.Duration(hit.n) * time.Second)
		h.Advance(time.Duration(hit.n) * time.Second)
	}
	if end.SessionID != "sess_001" || end.Reason != "session_complete" || end.T != 600_000 || end.TsSec != 600 || end.CandidateID != "cand_demo" || end.EndedAt == "" {
		t.Fatalf("end body %+v", end)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.Metric("baton_webhook_failures_total", "hook", "session_end") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("end webhook failure not counted")
		}
		time.Sleep(time.Millisecond)
	}
	if n := h.Metric("baton_webhook_failures_total", "hook", "agent_message"); n != 0 {
		t.Fatalf("agent webhook failures %v", n)
	}
	code, body = h.PostAs(secret, "/sim/session/event", `{"session_id":"sess_001","event_type":"speech_end","ts_sec":601}`)
	if code != http.StatusGone || errCode(body) != service.CodeSessionEnded {
		t.Fatalf("event after end: %d %v", code, body)
	}
}

// TestWebhookFailureNotice: a webhook given up on while the session is
// live reaches WebSocket subscribers as a notice.
func TestWebhookFailureNotice(t *testing.T) {
	recv := newHookReceiver(t, func(string, int, string) bool { return true })
	h := service.NewHarness(t, withDayOne(dayone.Config{AllowPrivateWebhooks: true, WebhookBackoff: []time.Duration{time.Millisecond}}))
	code, body := h.Post("/sim/session/start", dayone.StartRequest{SessionID: "n1", CandidateID: "c", StartedAt: "2026-02-20T23:00:00Z",
		ScenarioID: "dayone", FrontendAgentWebhook: recv.srv.URL + "/a", EndCallbackWebhook: recv.srv.URL + "/e"})
	if code != http.StatusOK {
		t.Fatalf("start %d %v", code, body)
	}
	obs := h.Dial()
	obs.Send(map[string]any{"id": "r", "type": "resume", "session_id": "n1", "session_secret": body["session_secret"]})
	obs.ExpectAck("r")
	h.Quiesce("n1")
	recv.next(t)
	h.WaitArmed(time.Millisecond)
	h.Advance(time.Millisecond)
	recv.next(t)
	n := obs.WaitFor("notice", func(f *service.ServerFrame) bool { return f.Type == service.FrameNotice })
	if n.Code != "webhook_failed" || !strings.Contains(n.Message, "failed after 2 attempts") || n.Seq == 0 {
		t.Fatalf("notice %+v", n)
	}
}

func mustStr(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestDayOneMetricsLint: the contract's webhook series are on the
// server's /metrics from the start, and lint clean with the rest.
func TestDayOneMetricsLint(t *testing.T) {
	h := service.NewHarness(t, withDayOne(dayone.Config{}))
	resp, err := http.Get(h.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{`baton_webhook_failures_total{hook="agent_message"} 0`, `baton_webhook_failures_total{hook="session_end"} 0`} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// inputsPackFS is the bundled packs of a server whose only pack is the
// test pack declaring inputs (scenario_id inputs_v1).
func inputsPackFS(t *testing.T) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	err := filepath.WalkDir("testdata/inputs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		m[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The DayOne start takes the session's inputs, refused with the same
// codes as a start frame (HTTP 400) and leaving no session.
func TestHTTPStartInputs(t *testing.T) {
	recv := newHookReceiver(t, func(string, int, string) bool { return false })
	packs := inputsPackFS(t)
	h := service.NewHarness(t, withDayOne(dayone.Config{AllowPrivateWebhooks: true}), func(c *service.Config) { c.Packs = packs })
	for _, tc := range []struct {
		name   string
		inputs rules.Supplied
		status int
		code   string
	}{
		{"accepted", rules.Supplied{"cand_name": json.RawMessage(`"Ada"`), "notes": json.RawMessage(`{"name":"notes.md","text":"From DayOne."}`)}, http.StatusOK, ""},
		{"missing", rules.Supplied{"years": json.RawMessage(`4`)}, http.StatusBadRequest, service.CodeInputMissing},
		{"type", rules.Supplied{"cand_name": json.RawMessage(`"Ada"`), "remote": json.RawMessage(`"yes"`)}, http.StatusBadRequest, service.CodeInputType},
		{"unknown upload", rules.Supplied{"cand_name": json.RawMessage(`"Ada"`), "code": json.RawMessage(`{"name":"a.js","sha256":"` + strings.Repeat("0", 64) + `"}`)}, http.StatusBadRequest, service.CodeInputUpload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "http_in_" + strings.ReplaceAll(tc.name, " ", "_")
			code, body := h.Post("/sim/session/start", dayone.StartRequest{
				SessionID: id, CandidateID: "cand", StartedAt: "2026-02-20T23:00:00Z", ScenarioID: "inputs_v1",
				FrontendAgentWebhook: recv.srv.URL + "/sim/session/agent-message",
				EndCallbackWebhook:   recv.srv.URL + "/sim/session/end",
				Inputs:               tc.inputs,
			})
			if code != tc.status {
				t.Fatalf("start: %d %v, want %d", code, body, tc.status)
			}
			if tc.code != "" {
				if e, _ := body["error"].(map[string]any); e["code"] != tc.code {
					t.Fatalf("start: %v, want code %s", body, tc.code)
				}
				if h.Live(id) {
					t.Fatal("a refused start left a session")
				}
				return
			}
			c := h.Dial()
			c.Send(map[string]any{"id": "r", "type": "resume", "session_id": id, "session_secret": body["session_secret"]})
			ack := c.ExpectAck("r")
			if got := strings.Join(ack.State.Inputs, ","); got != "cand_name,notes" {
				t.Fatalf("session inputs %q", got)
			}
			if ack.Workspace == nil || ack.Workspace.Files[0].Path != "main.js" {
				t.Fatalf("resume ack workspace %+v", ack.Workspace)
			}
		})
	}
}
