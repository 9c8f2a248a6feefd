package service

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

	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/wal"
)

// StartRequest is the DayOne start body (seed §5.1), field for field.
type StartRequest struct {
	SessionID            string `json:"session_id"`
	CandidateID          string `json:"candidate_id"`
	StartedAt            string `json:"started_at"`
	ScenarioID           string `json:"scenario_id"`
	FrontendAgentWebhook string `json:"frontend_agent_webhook"`
	EndCallbackWebhook   string `json:"end_callback_webhook"`
}

// StartResponse answers a successful start.
type StartResponse struct {
	OK         bool   `json:"ok"`
	SessionID  string `json:"session_id"`
	Pack       string `json:"pack"`
	ScenarioID string `json:"scenario_id"`
	T          int64  `json:"t_ms"`
}

// EventResponse answers a successful event.
type EventResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"session_id"`
	T         int64  `json:"t_ms"`
	InputSeq  uint64 `json:"input_seq"`
	Clamped   string `json:"clamped,omitempty"`
}

// decodeStrict decodes exactly one JSON object with no unknown fields,
// classifying failures the way WebSocket frames are.
func decodeStrict(data []byte, v any) *ProtoError {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return perr(CodeBadJSON, "the body must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return perr(CodeBadJSON, "invalid JSON: %v", err)
		case errors.As(err, &typ):
			return perr(CodeBadFrame, "field %s: want %s, got %s", typ.Field, typ.Type, typ.Value)
		default:
			return perr(CodeBadFrame, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return perr(CodeBadJSON, "trailing data after the JSON object")
	}
	return nil
}

// parseStartRequest decodes and checks a §5.1 body.
func parseStartRequest(data []byte, webhookHosts []string) (*StartRequest, *ProtoError) {
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
		return nil, perr(CodeBadFrame, "missing %s", strings.Join(missing, ", "))
	}
	if err := wal.ValidID(r.SessionID); err != nil {
		return nil, perr(CodeBadSessionID, "%v", err)
	}
	if _, err := time.Parse(time.RFC3339, r.StartedAt); err != nil {
		return nil, perr(CodeBadFrame, "started_at %q is not an RFC 3339 time (e.g. 2026-02-20T23:00:00Z)", truncate(r.StartedAt, 64))
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
func checkWebhook(name, raw string, hosts []string) *ProtoError {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return perr(CodeBadWebhook, "%s %q must be an absolute http or https URL without credentials", name, truncate(raw, 100))
	}
	if len(hosts) > 0 && !slices.Contains(hosts, u.Host) {
		return perr(CodeBadWebhook, "%s host %q is not in the server's webhook allowlist", name, u.Host)
	}
	return nil
}

// parseEventRequest decodes a §5.2 body, which must name its session.
func parseEventRequest(data []byte) (*events.Wire, *ProtoError) {
	var w events.Wire
	if pe := decodeStrict(data, &w); pe != nil {
		return nil, pe
	}
	if w.SessionID == "" {
		return nil, perr(CodeBadFrame, "missing session_id")
	}
	if err := wal.ValidID(w.SessionID); err != nil {
		return nil, perr(CodeBadSessionID, "%v", err)
	}
	return &w, nil
}

func (srv *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *ProtoError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, srv.cfg.MaxMessageBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, perr(CodeTooLarge, "body is over the %d-byte limit", srv.cfg.MaxMessageBytes)
		}
		return nil, perr(CodeBadFrame, "reading body: %v", err)
	}
	return data, nil
}

// status maps protocol codes to HTTP statuses.
func status(code string) int {
	switch code {
	case CodeSessionNotFound:
		return http.StatusNotFound
	case CodeSessionExists, CodeAlreadyBound, CodeTimeBackwards:
		return http.StatusConflict
	case CodeSessionEnded:
		return http.StatusGone
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeBusy, CodeShuttingDown:
		return http.StatusServiceUnavailable
	case CodeStorage, CodeInternal, CodeSessionFailed:
		return http.StatusInternalServerError
	case CodeUnauthorized:
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

func (srv *Server) replyErr(w http.ResponseWriter, pe *ProtoError) {
	srv.m.clientErrors.WithLabelValues(pe.Code).Inc()
	httpError(w, status(pe.Code), pe.Code, pe.Message)
}

// handleHTTPStart is POST /sim/session/start (seed §5.1).
func (srv *Server) handleHTTPStart(w http.ResponseWriter, r *http.Request) {
	data, pe := srv.readBody(w, r)
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	req, pe := parseStartRequest(data, srv.cfg.WebhookHosts)
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	ref, ok := srv.packs.byScenario(req.ScenarioID)
	if !ok {
		srv.replyErr(w, perr(CodeBadPack, "no bundled pack has scenario_id %q", truncate(req.ScenarioID, 100)))
		return
	}
	s, pe := srv.start(startParams{sessionID: req.SessionID, candidateID: req.CandidateID, packRef: ref,
		host: hostOptions{AgentWebhook: req.FrontendAgentWebhook, EndWebhook: req.EndCallbackWebhook,
			ScenarioID: req.ScenarioID, ClientStartedAt: req.StartedAt}})
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	writeJSON(w, http.StatusOK, StartResponse{OK: true, SessionID: s.id, Pack: s.pack.Name, ScenarioID: req.ScenarioID})
}

// handleHTTPEvent is POST /sim/session/event (seed §5.2). It answers once
// the event is logged and applied.
func (srv *Server) handleHTTPEvent(w http.ResponseWriter, r *http.Request) {
	read := srv.clock.Now()
	data, pe := srv.readBody(w, r)
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	wire, pe := parseEventRequest(data)
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	s := srv.lookup(wire.SessionID)
	if s == nil {
		srv.replyErr(w, srv.absent(wire.SessionID))
		return
	}
	s.httpMu.Lock()
	ok := s.httpLimit.allow(srv.clock.Now())
	s.httpMu.Unlock()
	if !ok {
		srv.replyErr(w, perr(CodeRateLimited, "more than %g events a second for session %s", srv.cfg.EventRate, s.id))
		return
	}
	ev, clientT, pe := candidateEvent(wire)
	if pe != nil {
		srv.replyErr(w, pe)
		return
	}
	reply := make(chan evReply, 1)
	if pe := s.post(r.Context(), &evMsg{reply: reply, ev: ev, clientT: clientT, read: read}); pe != nil {
		srv.replyErr(w, pe)
		return
	}
	select {
	case rep := <-reply:
		if rep.err != nil {
			srv.replyErr(w, rep.err)
			return
		}
		writeJSON(w, http.StatusOK, EventResponse{OK: true, SessionID: s.id, T: *rep.ack.T, InputSeq: rep.ack.InputSeq, Clamped: rep.ack.Clamped})
	case <-s.done:
		select {
		case rep := <-reply:
			if rep.err == nil {
				writeJSON(w, http.StatusOK, EventResponse{OK: true, SessionID: s.id, T: *rep.ack.T, InputSeq: rep.ack.InputSeq, Clamped: rep.ack.Clamped})
				return
			}
			srv.replyErr(w, rep.err)
		default:
			srv.replyErr(w, s.exitError())
		}
	case <-r.Context().Done():
		// The client left; the event may still be applied, as a network
		// failure after the write could also have caused.
	}
}

// absent explains why there is no live session with this id.
func (srv *Server) absent(id string) *ProtoError {
	if reason, failed := srv.failedReason(id); failed {
		return perr(CodeSessionFailed, "session %s could not be recovered: %s", id, reason)
	}
	st, err := srv.dir.State(id)
	switch {
	case err != nil:
		return perr(CodeBadSessionID, "%v", err)
	case st == wal.StateDone:
		return perr(CodeSessionEnded, "session %s has ended", id)
	}
	return perr(CodeSessionNotFound, "no session %s on this server; start it first", id)
}
