package dayone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/netguard"
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

// errNotListed refuses a webhook whose host is not on the allowlist: a
// session recovered after the list changed still names its old URLs.
var errNotListed = errors.New("host not in the webhook allowlist")

// guarded reports whether webhooks may reach public addresses only.
func (cfg *Config) guarded() bool {
	return len(cfg.WebhookHosts) == 0 && !cfg.AllowPrivateWebhooks
}

// webhookClient makes the client that posts webhooks, to URLs a client of
// the server chose. It never follows a redirect: that would carry the
// body past the host allowlist and the address check. It ignores proxy
// settings from the environment, whose proxy would be the only address
// the dial-time check sees. Unless the operator allowed private targets
// or named the hosts, it connects only to public addresses, checked on
// the resolved address as it is dialled (netguard), so neither a name
// that resolves to a private address nor DNS rebinding gets through.
func webhookClient(cfg Config) *http.Client {
	dialer := &net.Dialer{Timeout: cfg.WebhookTimeout, KeepAlive: 30 * time.Second}
	if cfg.guarded() {
		dialer = netguard.Dialer(cfg.WebhookTimeout)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       cfg.WebhookTimeout,
	}
}

// checkTarget refuses, before any request, a URL off the allowlist or,
// when guarded, one whose host is a non-public IP address (a name is
// checked as it is dialled).
// listed is the allowlist rule: with --webhook-host set, a URL's host and
// port must be one of those listed, exactly as written.
func listed(hosts []string, host string) bool {
	return len(hosts) == 0 || slices.Contains(hosts, host)
}

func (d *Contract) checkTarget(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL: %w", err)
	}
	if !listed(d.cfg.WebhookHosts, u.Host) {
		return fmt.Errorf("%q: %w", u.Host, errNotListed)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && d.cfg.guarded() {
		if why := netguard.Classify(ip); why != "" {
			return fmt.Errorf("%s is %s: %w", ip, why, netguard.ErrRefused)
		}
	}
	return nil
}

// checkHookAddresses refuses at session start webhook URLs checkTarget
// would refuse at delivery, so the client hears it at once.
func (d *Contract) checkHookAddresses(r *StartRequest) *service.ProtoError {
	for _, h := range []struct{ name, v string }{{"frontend_agent_webhook", r.FrontendAgentWebhook}, {"end_callback_webhook", r.EndCallbackWebhook}} {
		if err := d.checkTarget(h.v); errors.Is(err, netguard.ErrRefused) {
			// The client's own URL, so naming the class is no leak.
			return service.Errorf(service.CodeBadWebhook, "%s: %v; this server posts webhooks only to public addresses or hosts on its allowlist", h.name, err)
		}
	}
	return nil
}

// statusError is a webhook answered with a status other than 2xx.
type statusError struct{ code int }

func (e *statusError) Error() string {
	if e.code >= 300 && e.code < 400 {
		return fmt.Sprintf("redirect not followed (HTTP %d)", e.code)
	}
	return fmt.Sprintf("HTTP %d", e.code)
}

// publicReason says why a delivery failed in words fit for the session's
// watchers: the status, or the kind of failure, never an address, port or
// network error, so that a webhook URL cannot be used to map what the
// server can reach. The server's log has the full error.
func publicReason(err error) string {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, errNotListed):
		return errNotListed.Error()
	case errors.Is(err, netguard.ErrRefused):
		return netguard.ErrRefused.Error()
	default:
		return "connection failed"
	}
}

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
		w.report(j, fmt.Sprintf("dropped: %d webhooks already waiting", len(w.queue)), nil)
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
	var last error
	for attempt := 0; ; attempt++ {
		err := w.post(ctx, j)
		if err == nil {
			w.d.m.attempts.WithLabelValues(j.hook, "ok").Inc()
			return
		}
		if errors.Is(err, netguard.ErrRefused) || errors.Is(err, errNotListed) {
			// Policy, not a fault: a retry would be refused the same way.
			w.d.m.attempts.WithLabelValues(j.hook, "refused").Inc()
			w.report(j, "refused: "+publicReason(err), err)
			return
		}
		w.d.m.attempts.WithLabelValues(j.hook, "error").Inc()
		last = err
		if attempt >= len(backoff) {
			break
		}
		wait := backoff[attempt]
		w.s.Logger().Warn("webhook failed; retrying", "hook", j.hook, "seq", j.seq, "attempt", attempt+1, "retry_in", wait, "err", err)
		if clock.Sleep(ctx, w.d.srv.Clock(), wait) != nil {
			return
		}
	}
	n := len(backoff) + 1
	w.report(j, fmt.Sprintf("failed after %d attempt%s: %s", n, plural(n), publicReason(last)), last)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (w *webhooks) post(ctx context.Context, j hookJob) error {
	if err := w.d.checkTarget(j.url); err != nil {
		return err
	}
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
	resp, err := w.d.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{resp.StatusCode}
	}
	return nil
}

// report records a webhook given up on: a log line with the error (for
// the operator), a metric, and a notice frame to the session's WebSocket
// subscribers that says only why (see publicReason).
func (w *webhooks) report(j hookJob, why string, err error) {
	w.d.m.failures.WithLabelValues(j.hook).Inc()
	attrs := []any{"hook", j.hook, "seq", j.seq, "url", j.url, "why", why}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	w.s.Logger().Error("webhook not delivered", attrs...)
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
