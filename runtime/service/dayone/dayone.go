// Package dayone is the DayOne HTTP contract (seed §5), mounted on the
// server beside its WebSocket API: POST /sim/session/start and POST
// /sim/session/event, with each agent message and the end pushed to the
// frontend's webhooks (docs/protocol.md, "DayOne HTTP contract").
//
// It is a service.Contract: sessions it starts are ordinary server
// sessions (logged, recovered, resumable over the WebSocket); what it adds
// is the §5 request shapes, the scenario_id lookup and the webhooks, whose
// URLs it keeps in the session's log so a recovered session still sends
// them.
package dayone

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/service"
)

// Config sets up the contract. Zero values get the defaults noted.
type Config struct {
	// WebhookHosts, if set, restricts webhooks to these host[:port]s,
	// matched exactly as the URL spells them. A listed host may resolve
	// to any address, private ones included: the operator named it.
	WebhookHosts []string
	// AllowPrivateWebhooks lets webhooks reach loopback, private,
	// link-local and other non-public addresses (baton serve --dev).
	// Without it or WebhookHosts, only public addresses are dialled.
	AllowPrivateWebhooks bool
	// WebhookBackoff is the wait before each retry (default 1 s, 2 s: two
	// retries, seed §12). WebhookTimeout bounds one attempt (default 5 s).
	WebhookBackoff []time.Duration
	WebhookTimeout time.Duration
}

// Contract serves DayOne on one server. Make it with New and put it in
// service.Config.Contracts.
type Contract struct {
	cfg      Config
	client   *http.Client // posts webhooks: see webhookClient
	srv      *service.Server
	m        metrics
	scenario map[string]string // scenario id -> bundled pack name
}

var _ service.Contract = (*Contract)(nil)

// New makes the contract.
func New(cfg Config) *Contract {
	if cfg.WebhookBackoff == nil {
		cfg.WebhookBackoff = []time.Duration{time.Second, 2 * time.Second}
	}
	if cfg.WebhookTimeout == 0 {
		cfg.WebhookTimeout = 5 * time.Second
	}
	return &Contract{cfg: cfg, client: webhookClient(cfg), scenario: map[string]string{}}
}

// Mount implements service.Contract: the routes, the webhook metrics, and
// the scenario ids of the bundled packs.
func (d *Contract) Mount(srv *service.Server, mux *http.ServeMux) error {
	if d.srv != nil {
		return errors.New("dayone: contract already mounted")
	}
	d.srv = srv
	if err := d.m.register(srv.Registry()); err != nil {
		return err
	}
	for _, n := range srv.Bundled() {
		p, err := srv.Pack(n)
		if err != nil {
			return err
		}
		if p.Scenario.ID != "" {
			d.scenario[p.Scenario.ID] = n
		}
	}
	mux.HandleFunc("POST /sim/session/start", srv.AllowOrigins(srv.RequireToken(d.handleStart)))
	mux.HandleFunc("POST /sim/session/event", srv.AllowOrigins(srv.RequireToken(d.handleEvent)))
	mux.HandleFunc("OPTIONS /sim/session/{op}", srv.AllowOrigins(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	return nil
}

// StartRequest is the DayOne start body (seed §5.1), field for field.
type StartRequest struct {
	SessionID            string `json:"session_id"`
	CandidateID          string `json:"candidate_id"`
	StartedAt            string `json:"started_at"`
	ScenarioID           string `json:"scenario_id"`
	FrontendAgentWebhook string `json:"frontend_agent_webhook"`
	EndCallbackWebhook   string `json:"end_callback_webhook"`
	// Inputs, beyond §5.1, are the session's values for the pack's
	// declared inputs, as a WebSocket start frame carries them; a refusal
	// is a 400 with its input_* code.
	Inputs rules.Supplied `json:"inputs,omitempty"`
}

// StartResponse answers a successful start.
type StartResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"session_id"`
	// SessionSecret, beyond §5.1, is the session's own secret: every
	// event for the session carries it in the Baton-Session-Secret
	// header (service.SecretHeader), as a WebSocket resume does in its
	// frame.
	SessionSecret string `json:"session_secret"`
	Pack          string `json:"pack"`
	ScenarioID    string `json:"scenario_id"`
	T             int64  `json:"t_ms"`
}

// EventResponse answers a successful event.
type EventResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"session_id"`
	T         int64  `json:"t_ms"`
	InputSeq  uint64 `json:"input_seq"`
	Clamped   string `json:"clamped,omitempty"`
}

// options are a DayOne session's settings, kept in its log.
type options struct {
	AgentWebhook    string `json:"frontend_agent_webhook,omitempty"`
	EndWebhook      string `json:"end_callback_webhook,omitempty"`
	ScenarioID      string `json:"scenario_id,omitempty"`
	ClientStartedAt string `json:"started_at,omitempty"`
}

// decodeStrict decodes exactly one JSON object with no unknown fields,
// classifying failures the way WebSocket frames are.
func decodeStrict(data []byte, v any) *service.ProtoError {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return service.Errorf(service.CodeBadJSON, "the body must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return service.Errorf(service.CodeBadJSON, "invalid JSON: %v", err)
		case errors.As(err, &typ):
			return service.Errorf(service.CodeBadFrame, "field %s: want %s, got %s", typ.Field, typ.Type, typ.Value)
		default:
			return service.Errorf(service.CodeBadFrame, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return service.Errorf(service.CodeBadJSON, "trailing data after the JSON object")
	}
	return nil
}

// parseStartRequest decodes and checks a §5.1 body.
func parseStartRequest(data []byte, webhookHosts []string) (*StartRequest, *service.ProtoError) {
	var r StartRequest
	if pe := decodeStrict(data, &r); pe != nil {
		return nil, pe
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"session_id", r.SessionID}, {"candidate_id", r.CandidateID}, {"started_at", r.StartedAt},
		{"scenario_id", r.ScenarioID}, {"frontend_agent_webhook", r.FrontendAgentWebhook}, {"end_callback_webhook", r.EndCallbackWebhook},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, service.Errorf(service.CodeBadFrame, "missing %s", strings.Join(missing, ", "))
	}
	if err := wal.ValidID(r.SessionID); err != nil {
		return nil, service.Errorf(service.CodeBadSessionID, "%v", err)
	}
	if _, err := time.Parse(time.RFC3339, r.StartedAt); err != nil {
		return nil, service.Errorf(service.CodeBadFrame, "started_at %q is not an RFC 3339 time (e.g. 2026-02-20T23:00:00Z)", r.StartedAt)
	}
	for _, h := range []struct{ name, v string }{{"frontend_agent_webhook", r.FrontendAgentWebhook}, {"end_callback_webhook", r.EndCallbackWebhook}} {
		if pe := checkWebhook(h.name, h.v, webhookHosts); pe != nil {
			return nil, pe
		}
	}
	return &r, nil
}

// checkWebhook accepts absolute http(s) URLs, limited to the allowed
// hosts when any are configured (the server will POST there).
func checkWebhook(name, raw string, hosts []string) *service.ProtoError {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return service.Errorf(service.CodeBadWebhook, "%s %q must be an absolute http or https URL without credentials", name, raw)
	}
	if !listed(hosts, u.Host) {
		return service.Errorf(service.CodeBadWebhook, "%s host %q is not in the server's webhook allowlist", name, u.Host)
	}
	return nil
}

// parseEventRequest decodes a §5.2 body, which must name its session.
func parseEventRequest(data []byte) (*events.Wire, *service.ProtoError) {
	var w events.Wire
	if pe := decodeStrict(data, &w); pe != nil {
		return nil, pe
	}
	if w.SessionID == "" {
		return nil, service.Errorf(service.CodeBadFrame, "missing session_id")
	}
	if err := wal.ValidID(w.SessionID); err != nil {
		return nil, service.Errorf(service.CodeBadSessionID, "%v", err)
	}
	return &w, nil
}

// byScenario maps a scenario_id (or a bundled pack name) to a pack.
func (d *Contract) byScenario(id string) (string, bool) {
	if n, ok := d.scenario[id]; ok {
		return n, true
	}
	if slices.Contains(d.srv.Bundled(), id) {
		return id, true
	}
	return "", false
}

// handleStart is POST /sim/session/start (seed §5.1).
func (d *Contract) handleStart(w http.ResponseWriter, r *http.Request) {
	data, pe := d.srv.ReadStartBody(w, r)
	if pe != nil {
		d.srv.WriteError(w, pe)
		return
	}
	req, pe := parseStartRequest(data, d.cfg.WebhookHosts)
	if pe == nil {
		pe = d.checkHookAddresses(req)
	}
	if pe != nil {
		d.srv.WriteError(w, pe)
		return
	}
	ref, ok := d.byScenario(req.ScenarioID)
	if !ok {
		d.srv.WriteError(w, service.Errorf(service.CodeBadPack, "no bundled pack has scenario_id %q", req.ScenarioID))
		return
	}
	opts, err := json.Marshal(options{AgentWebhook: req.FrontendAgentWebhook, EndWebhook: req.EndCallbackWebhook,
		ScenarioID: req.ScenarioID, ClientStartedAt: req.StartedAt})
	if err != nil {
		d.srv.WriteError(w, service.Errorf(service.CodeInternal, "%v", err))
		return
	}
	s, pe := d.srv.Start(service.StartOptions{SessionID: req.SessionID, CandidateID: req.CandidateID, Pack: ref, Options: opts, Inputs: req.Inputs})
	if pe != nil {
		d.srv.WriteError(w, pe)
		return
	}
	writeJSON(w, StartResponse{OK: true, SessionID: s.ID(), SessionSecret: s.Secret(), Pack: s.Pack(), ScenarioID: req.ScenarioID})
}

// handleEvent is POST /sim/session/event (seed §5.2). It answers once the
// event is logged and applied. The session's secret comes in the
// Baton-Session-Secret header: the §5.2 body has no field for it.
func (d *Contract) handleEvent(w http.ResponseWriter, r *http.Request) {
	data, pe := d.srv.ReadBody(w, r)
	if pe != nil {
		d.srv.WriteError(w, pe)
		return
	}
	wire, pe := parseEventRequest(data)
	if pe != nil {
		d.srv.WriteError(w, pe)
		return
	}
	ack, pe := d.srv.Submit(r.Context(), wire, service.CallerOf(r))
	switch {
	case r.Context().Err() != nil:
		// The client left; the event may still be applied, as a network
		// failure after the write could also have caused.
	case pe != nil:
		d.srv.WriteError(w, pe)
	default:
		writeJSON(w, EventResponse{OK: true, SessionID: ack.SessionID, T: *ack.T, InputSeq: ack.InputSeq, Clamped: ack.Clamped})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(v)
}
