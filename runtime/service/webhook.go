package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock"
)

// Webhook names, used in metrics and notices.
const (
	hookAgent = "agent_message"
	hookEnd   = "session_end"
)

// maxHookQueue bounds a session's undelivered webhooks; beyond it new
// ones are dropped and reported (a receiver that is down for minutes must
// not grow memory without bound).
const maxHookQueue = 256

// AgentMessageHook is the body POSTed to frontend_agent_webhook for each
// agent message (docs/protocol.md, "DayOne HTTP contract").
type AgentMessageHook struct {
	SessionID string  `json:"session_id"`
	Seq       uint64  `json:"seq"`
	MessageID string  `json:"message_id"`
	T         int64   `json:"t_ms"`
	TsSec     float64 `json:"ts_sec"`
	Role      string  `json:"role"`
	Voice     string  `json:"voice,omitempty"`
	Kind      string  `json:"kind"`
	Text      string  `json:"text"`
	IntentTag string  `json:"intent_tag,omitempty"`
	Rule      string  `json:"rule,omitempty"`
	Fallback  bool    `json:"fallback,omitempty"`
	SpeechMS  int64   `json:"speech_ms,omitempty"`
}

// SessionEndHook is the body POSTed to end_callback_webhook once.
type SessionEndHook struct {
	SessionID   string  `json:"session_id"`
	CandidateID string  `json:"candidate_id,omitempty"`
	ScenarioID  string  `json:"scenario_id,omitempty"`
	Seq         uint64  `json:"seq"`
	T           int64   `json:"t_ms"`
	TsSec       float64 `json:"ts_sec"`
	Reason      string  `json:"reason"`
	Rule        string  `json:"rule,omitempty"`
	EndedAt     string  `json:"ended_at"`
}

type hookJob struct {
	hook string
	url  string
	seq  uint64
	body []byte
}

// webhooks delivers one session's webhooks in order on a goroutine that
// exists only while there is something to send.
type webhooks struct {
	srv *Server
	s   *session

	mu      sync.Mutex
	queue   []hookJob
	running bool
}

func newWebhooks(srv *Server, s *session) *webhooks { return &webhooks{srv: srv, s: s} }

func (w *webhooks) agentMessage(seq uint64, e *engine.Effect, speechMS int64) {
	if w.s.host.AgentWebhook == "" {
		return
	}
	body := mustJSON(AgentMessageHook{SessionID: w.s.id, Seq: seq, MessageID: e.ID, T: e.T, TsSec: float64(e.T) / 1000,
		Role: e.Agent, Voice: e.Voice, Kind: e.Kind, Text: e.Text, IntentTag: e.IntentTag, Rule: e.Rule,
		Fallback: e.Fallback, SpeechMS: speechMS})
	w.enqueue(hookJob{hook: hookAgent, url: w.s.host.AgentWebhook, seq: seq, body: body})
}

func (w *webhooks) sessionEnd(seq uint64, e *engine.Effect) {
	if w.s.host.EndWebhook == "" {
		return
	}
	body := mustJSON(SessionEndHook{SessionID: w.s.id, CandidateID: w.s.hdr.CandidateID, ScenarioID: w.s.host.ScenarioID,
		Seq: seq, T: e.T, TsSec: float64(e.T) / 1000, Reason: e.Reason, Rule: e.Rule,
		EndedAt: w.s.base.Add(time.Duration(e.T) * time.Millisecond).UTC().Format(time.RFC3339Nano)})
	w.enqueue(hookJob{hook: hookEnd, url: w.s.host.EndWebhook, seq: seq, body: body})
}

func (w *webhooks) enqueue(j hookJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) >= maxHookQueue {
		w.report(j, fmt.Sprintf("dropped: %d webhooks already waiting", len(w.queue)))
		return
	}
	w.queue = append(w.queue, j)
	if !w.running {
		w.running = true
		w.srv.wg.Add(1)
		go w.drain()
	}
}

func (w *webhooks) drain() {
	defer w.srv.wg.Done()
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || w.srv.ctx.Err() != nil {
			if n := len(w.queue); n > 0 {
				w.s.log.Warn("webhooks not delivered before shutdown", "count", n)
			}
			w.queue, w.running = nil, false
			w.mu.Unlock()
			return
		}
		j := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.deliver(j)
	}
}

// deliver tries a webhook, then retries after each backoff (1 s, 2 s by
// default: seed §12's two retries), and reports it if all attempts fail.
func (w *webhooks) deliver(j hookJob) {
	var last string
	for attempt := 0; ; attempt++ {
		err := w.post(j)
		if err == nil {
			w.srv.m.webhookAttempts.WithLabelValues(j.hook, "ok").Inc()
			return
		}
		w.srv.m.webhookAttempts.WithLabelValues(j.hook, "error").Inc()
		last = err.Error()
		if attempt >= len(w.srv.cfg.WebhookBackoff) {
			break
		}
		wait := w.srv.cfg.WebhookBackoff[attempt]
		w.s.log.Warn("webhook failed; retrying", "hook", j.hook, "seq", j.seq, "attempt", attempt+1, "retry_in", wait, "err", err)
		if clock.Sleep(w.srv.ctx, w.srv.clock, wait) != nil {
			return
		}
	}
	w.report(j, fmt.Sprintf("failed after %d attempts: %s", len(w.srv.cfg.WebhookBackoff)+1, last))
}

func (w *webhooks) post(j hookJob) error {
	ctx, cancel := context.WithTimeout(w.srv.ctx, w.srv.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(j.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "baton/"+engine.Version)
	// Receivers dedupe retries (and re-sends after a crash) by this key.
	req.Header.Set("Idempotency-Key", w.s.id+":"+strconv.FormatUint(j.seq, 10))
	resp, err := w.srv.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// report records a webhook given up on: a log line, a metric, and a
// notice frame to the session's WebSocket subscribers.
func (w *webhooks) report(j hookJob, why string) {
	w.srv.m.webhookFailures.WithLabelValues(j.hook).Inc()
	w.s.log.Error("webhook not delivered", "hook", j.hook, "seq", j.seq, "url", j.url, "why", why)
	n := NoticeFrame{Type: FrameNotice, SessionID: w.s.id, Code: "webhook_failed", Seq: j.seq,
		Message: fmt.Sprintf("%s webhook for effect %d %s", j.hook, j.seq, why)}
	// If the session is gone or swamped, the log line and metric stand.
	w.s.tryPost(noticeMsg{n})
}
