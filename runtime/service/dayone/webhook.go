package dayone

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/service"
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

type metrics struct {
	attempts *prometheus.CounterVec
	failures *prometheus.CounterVec
}

func (m *metrics) register(reg prometheus.Registerer) error {
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_webhook_attempts_total", Help: "Webhook POST attempts, by hook and outcome."}, []string{"hook", "outcome"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_webhook_failures_total", Help: "Webhook deliveries given up after all retries, by hook."}, []string{"hook"})
	for _, c := range []prometheus.Collector{m.attempts, m.failures} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("dayone metrics: %w", err)
		}
	}
	// Known up front, so dashboards see zeros instead of absent series.
	for _, h := range []string{hookAgent, hookEnd} {
		m.failures.WithLabelValues(h)
	}
	return nil
}

// Watch implements service.Contract: a session started with webhooks
// gets a sender for them.
func (d *Contract) Watch(s *service.Session) service.EffectHook {
	var o options
	if err := json.Unmarshal(s.Options(), &o); err != nil || (o.AgentWebhook == "" && o.EndWebhook == "") {
		return nil
	}
	w := &webhooks{d: d, s: s, opts: o}
	return w.effect
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
	d    *Contract
	s    *service.Session
	opts options

	mu      sync.Mutex
	queue   []hookJob
	running bool
}

// effect runs on the session's goroutine for every effect it sends.
func (w *webhooks) effect(f *service.EffectFrame) {
	e := &f.Effect
	switch {
	case e.Type == engine.EffectAgentMessage && w.opts.AgentWebhook != "":
		body := mustJSON(AgentMessageHook{SessionID: w.s.ID(), Seq: f.Seq, MessageID: e.ID, T: e.T, TsSec: float64(e.T) / 1000,
			Role: e.Agent, Voice: e.Voice, Kind: e.Kind, Text: e.Text, IntentTag: e.IntentTag, Rule: e.Rule,
			Fallback: e.Fallback, SpeechMS: e.SpeechMS})
		w.enqueue(hookJob{hook: hookAgent, url: w.opts.AgentWebhook, seq: f.Seq, body: body})
	case e.Type == engine.EffectSessionEnd && w.opts.EndWebhook != "":
		body := mustJSON(SessionEndHook{SessionID: w.s.ID(), CandidateID: w.s.CandidateID(), ScenarioID: w.opts.ScenarioID,
			Seq: f.Seq, T: e.T, TsSec: float64(e.T) / 1000, Reason: e.Reason, Rule: e.Rule,
			EndedAt: w.s.WallTime(e.T).UTC().Format(time.RFC3339Nano)})
		w.enqueue(hookJob{hook: hookEnd, url: w.opts.EndWebhook, seq: f.Seq, body: body})
	}
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
		w.running = w.d.srv.Go(w.drain)
		if !w.running {
			w.queue = nil
		}
	}
}

func (w *webhooks) drain(ctx context.Context) {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || ctx.Err() != nil {
			if n := len(w.queue); n > 0 {
				w.s.Logger().Warn("webhooks not delivered before shutdown", "count", n)
			}
			w.queue, w.running = nil, false
			w.mu.Unlock()
			return
		}
		j := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.deliver(ctx, j)
	}
}

// deliver tries a webhook, then retries after each backoff (1 s, 2 s by
// default: seed §12's two retries), and reports it if all attempts fail.
func (w *webhooks) deliver(ctx context.Context, j hookJob) {
	backoff := w.d.cfg.WebhookBackoff
	var last string
	for attempt := 0; ; attempt++ {
		err := w.post(ctx, j)
		if err == nil {
			w.d.m.attempts.WithLabelValues(j.hook, "ok").Inc()
			return
		}
		w.d.m.attempts.WithLabelValues(j.hook, "error").Inc()
		last = err.Error()
		if attempt >= len(backoff) {
			break
		}
		wait := backoff[attempt]
		w.s.Logger().Warn("webhook failed; retrying", "hook", j.hook, "seq", j.seq, "attempt", attempt+1, "retry_in", wait, "err", err)
		if clock.Sleep(ctx, w.d.srv.Clock(), wait) != nil {
			return
		}
	}
	w.report(j, fmt.Sprintf("failed after %d attempts: %s", len(backoff)+1, last))
}

func (w *webhooks) post(ctx context.Context, j hookJob) error {
	ctx, cancel := context.WithTimeout(ctx, w.d.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(j.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "baton/"+engine.Version)
	// Receivers dedupe retries (and re-sends after a crash) by this key.
	req.Header.Set("Idempotency-Key", w.s.ID()+":"+strconv.FormatUint(j.seq, 10))
	resp, err := w.d.cfg.HTTPClient.Do(req)
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
	w.d.m.failures.WithLabelValues(j.hook).Inc()
	w.s.Logger().Error("webhook not delivered", "hook", j.hook, "seq", j.seq, "url", j.url, "why", why)
	// If the session is gone or swamped, the log line and metric stand.
	w.s.Notify(service.NoticeFrame{Code: "webhook_failed", Seq: j.seq,
		Message: fmt.Sprintf("%s webhook for effect %d %s", j.hook, j.seq, why)})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("dayone: encoding %T: %v", v, err))
	}
	return b
}
