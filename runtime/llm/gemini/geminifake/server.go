// Package geminifake is a strict stand-in for the Gemini API's
// models.generateContent, for tests. It is written from Google's public
// REST reference (https://ai.google.dev/api/generate-content and the
// objects on https://ai.google.dev/api/caching) and the function calling
// and thought signatures guides, not from any SDK's types, so an adapter
// tested against it cannot pass merely by agreeing with itself.
//
// A Server listens on loopback and answers POST
// /v1beta/models/{model}:generateContent. Before a request reaches the
// test's Behavior it must pass what the service would check:
//
//   - the method, the path and the API key (x-goog-api-key header or key
//     query parameter), and no undocumented query parameters;
//   - a JSON body with only documented fields, anywhere in it, each of its
//     documented type: strings, base64 bytes (inlineData.data,
//     thoughtSignature), enum names, integers in range (schema.go);
//   - the rules stated in prose: roles are "user" or "model", every part
//     has exactly one kind of data, a turn of function calls follows a user
//     turn and is answered by the next turn, one functionResponse per
//     functionCall, paired by id (or by name when the call has no id), a
//     response JSON schema needs responseMimeType "application/json", and
//     so on (semantics.go);
//   - thought signatures: for a model whose id starts with "gemini-3", the
//     first functionCall part of each model step since the last user
//     content with text must carry the thoughtSignature the server gave
//     it, or the request fails with 400 and MissingSignature; for any
//     model, a signature on such a part must be one this server issued for
//     that call (CorruptedSignature otherwise).
//
// A request that fails answers 400 INVALID_ARGUMENT in Google's error
// shape, {"error":{"code":400,"message":...,"status":"INVALID_ARGUMENT"}},
// and the Behavior is not called. Every request is recorded, valid or
// not, with the reason it was refused.
//
// Replies put text first, then function calls; the first functionCall part
// of each reply carries a thoughtSignature (opaque, derived from the
// request, so the same request gets the same signature), and a reply
// without calls carries one on its last part, as Gemini 3 does. Calls have
// an id only when the Reply gives one.
//
// A Server is safe for concurrent use; requests are served in parallel.
package geminifake

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// DefaultAPIKey is the key a Server expects when Config.APIKey is empty.
const DefaultAPIKey = "geminifake-key"

// Behavior decides the answer to a valid request. It is called from the
// request's own goroutine, so it must be safe for concurrent use when the
// client makes concurrent calls.
type Behavior func(req *Request) Reply

// Reply is a scripted answer. With none of Status, Body and Hang set it is
// a successful response whose candidate holds Parts, then a text part for
// Text (when not empty), then a functionCall part per Call.
type Reply struct {
	// Text is what the model says. JSON output is text too: see JSON.
	Text string
	// Calls are function calls after the text, in order.
	Calls []Call
	// Parts go first, verbatim: thought parts, or anything unusual.
	Parts []Part
	// FinishReason defaults to "STOP".
	FinishReason string
	// Usage defaults to counts derived from the request and reply sizes.
	Usage *UsageMetadata
	// BlockReason, when set, answers with promptFeedback and no candidate.
	BlockReason string

	// Status, when neither 0 nor 200, fails the call with this HTTP status
	// and Google's error body (Message, or the status text).
	Status  int
	Message string
	// Body, when set, is written as is with Status (200 when 0), for
	// answers no real server should give: a truncated or misshapen body.
	Body []byte
	// Hang holds the request until the client gives up (its context ends)
	// or the server closes.
	Hang bool
}

// Call is a function call in a Reply. Args is marshalled to JSON (nil
// sends no args); ID is sent only when not empty.
type Call struct {
	ID   string
	Name string
	Args any
}

// Text replies with text.
func Text(s string) Reply { return Reply{Text: s} }

// JSON replies with v marshalled as the text, as a model asked for JSON
// output does. It panics if v cannot be marshalled.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic("geminifake.JSON: " + err.Error())
	}
	return Reply{Text: string(b)}
}

// Calls replies with function calls.
func Calls(calls ...Call) Reply { return Reply{Calls: calls} }

// Error fails the call with an HTTP status and message.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Hang holds the request until the client gives up.
func Hang() Reply { return Reply{Hang: true} }

// Script answers the n-th request it is called for with replies[n], and
// fails any request past the end with 500 and a message saying so. Only
// valid requests reach a Behavior, so refused ones do not use up a reply.
// It is safe for concurrent use.
func Script(replies ...Reply) Behavior {
	var mu sync.Mutex
	next := 0
	return func(*Request) Reply {
		mu.Lock()
		n := next
		next++
		mu.Unlock()
		if n < len(replies) {
			return replies[n]
		}
		return Error(http.StatusInternalServerError, fmt.Sprintf("geminifake: unscripted request: the script has %d replies", len(replies)))
	}
}

// Config configures a Server.
type Config struct {
	// APIKey is the key requests must carry (DefaultAPIKey when empty).
	APIKey string
	// Behavior answers valid requests (a fixed "ok" when nil).
	Behavior Behavior
}

// Received is one request as the server saw it.
type Received struct {
	Index  int
	Method string
	// Path is the URL path; Model the {model} segment of a well-formed one.
	Path   string
	Model  string
	Header http.Header
	Body   []byte
	// Err is why the server refused the request (a *RequestError), nil
	// when it passed validation and went to the Behavior.
	Err error
	// Request is the decoded body of a valid request, nil otherwise.
	Request *Request
}

// RequestError is a request the server refused, with the HTTP status it
// answered and every violation found.
type RequestError struct {
	Status     int
	Violations []string
}

func (e *RequestError) Error() string { return strings.Join(e.Violations, "\n") }

// Server is a running fake.
type Server struct {
	// URL is the base URL to give the client (Config.BaseURL in baton's
	// adapter, HTTPOptions.BaseURL in the SDK).
	URL string
	// APIKey is the key the server expects.
	APIKey string

	behavior Behavior
	srv      *httptest.Server
	done     chan struct{}
	once     sync.Once

	mu       sync.Mutex
	received []Received
	issued   map[string]issuedCall
}

// New starts a server with the default key and b (nil: always "ok").
func New(b Behavior) *Server { return Start(Config{Behavior: b}) }

// Start starts a server on a loopback port. Close it when done.
func Start(cfg Config) *Server {
	s := &Server{
		APIKey:   cfg.APIKey,
		behavior: cfg.Behavior,
		done:     make(chan struct{}),
		issued:   map[string]issuedCall{},
	}
	if s.APIKey == "" {
		s.APIKey = DefaultAPIKey
	}
	if s.behavior == nil {
		s.behavior = func(*Request) Reply { return Text("ok") }
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	s.srv.Close()
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Validate checks body as a generateContent request for model, with the
// same rules the server applies, including that thought signatures are
// ones this server issued. It returns a *RequestError or nil.
func (s *Server) Validate(model string, body []byte) error {
	_, err := validate(model, body, s.lookup)
	if err != nil {
		return err
	}
	return nil
}

// Validate checks body as a generateContent request for model without a
// server: every rule but the authenticity of thought signatures (their
// presence is still checked). It returns a *RequestError or nil.
func Validate(model string, body []byte) error {
	_, err := validate(model, body, nil)
	if err != nil {
		return err
	}
	return nil
}

func (s *Server) lookup(sig []byte) (issuedCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.issued[string(sig)]
	return c, ok
}

func badRequest(violations ...string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Violations: violations}
}

// validate parses, checks and decodes a request body.
func validate(model string, body []byte, book signatureBook) (*Request, *RequestError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, badRequest(fmt.Sprintf("Invalid JSON payload received. %v", err))
	}
	if dec.More() {
		return nil, badRequest("Invalid JSON payload received. Unexpected data after the request object.")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, badRequest(fmt.Sprintf("Invalid JSON payload received. Expected an object, got %s.", short(raw)))
	}
	var v validator
	normalized := v.object("", generateContentRequest, obj)
	if len(v.errs) > 0 {
		return nil, badRequest(v.errs...)
	}
	b, err := json.Marshal(normalized)
	if err != nil {
		return nil, badRequest("geminifake: " + err.Error())
	}
	req := new(Request)
	if err := json.Unmarshal(b, req); err != nil {
		return nil, badRequest("geminifake: decode the validated request: " + err.Error())
	}
	req.Model = model
	if errs := checkSemantics(model, req, book); len(errs) > 0 {
		return nil, badRequest(errs...)
	}
	return req, nil
}

// systemParams are the query parameters every Google REST method takes.
var systemParams = map[string]bool{
	"key": true, "alt": true, "$alt": true, "prettyPrint": true, "fields": true,
	"quotaUser": true, "$.xgafv": true, "callback": true, "access_token": true,
	"oauth_token": true, "upload_protocol": true, "uploadType": true,
}

const (
	pathPrefix = "/v1beta/models/"
	pathSuffix = ":generateContent"
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(r.Body)
	rec := Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	model, pathOK := modelOf(r.URL.Path)
	if pathOK {
		rec.Model = model
	}
	var req *Request
	var refused *RequestError
	switch {
	case readErr != nil:
		refused = badRequest("geminifake: read body: " + readErr.Error())
	case !pathOK:
		refused = &RequestError{Status: http.StatusNotFound, Violations: []string{fmt.Sprintf("geminifake: no method at %s; generateContent is POST %s{model}%s", r.URL.Path, pathPrefix, pathSuffix)}}
	case r.Method != http.MethodPost:
		refused = &RequestError{Status: http.StatusNotFound, Violations: []string{fmt.Sprintf("geminifake: generateContent takes POST, not %s", r.Method)}}
	default:
		refused = s.checkCaller(r)
		if refused == nil {
			req, refused = validate(model, body, s.lookup)
		}
	}
	s.mu.Lock()
	rec.Index = len(s.received)
	if refused != nil {
		rec.Err = refused
	} else {
		rec.Request = req
		req.Index = rec.Index
	}
	s.received = append(s.received, rec)
	s.mu.Unlock()

	if refused != nil {
		writeError(w, refused.Status, refused.Error())
		return
	}
	s.answer(w, r, req, body, s.behavior(req))
}

func modelOf(path string) (string, bool) {
	if !strings.HasPrefix(path, pathPrefix) || !strings.HasSuffix(path, pathSuffix) {
		return "", false
	}
	m := strings.TrimSuffix(strings.TrimPrefix(path, pathPrefix), pathSuffix)
	if m == "" || strings.ContainsAny(m, "/:") {
		return "", false
	}
	return m, true
}

// checkCaller checks the query parameters, the API key and the content
// type.
func (s *Server) checkCaller(r *http.Request) *RequestError {
	q := r.URL.Query()
	for name := range q {
		if !systemParams[name] {
			return badRequest(fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot bind query parameter. Field '%s' could not be found in request message.", name, name))
		}
	}
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = q.Get("key")
	}
	switch {
	case key == "":
		return &RequestError{Status: http.StatusForbidden, Violations: []string{"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}}
	case key != s.APIKey:
		return badRequest("API key not valid. Please pass a valid API key.")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return badRequest(fmt.Sprintf("geminifake: the body must be sent as application/json, not %q", r.Header.Get("Content-Type")))
	}
	return nil
}

// answer writes reply for a valid request.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *Request, body []byte, reply Reply) {
	switch {
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
			writeError(w, http.StatusServiceUnavailable, "geminifake: server closed")
		}
		return
	case reply.Body != nil:
		status := reply.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		_, _ = w.Write(reply.Body)
		return
	case reply.Status != 0 && reply.Status != http.StatusOK:
		msg := reply.Message
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg)
		return
	}
	resp, err := s.response(req, body, reply)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// response builds the body of a successful reply, issuing signatures.
func (s *Server) response(req *Request, body []byte, reply Reply) (*Response, error) {
	resp := &Response{ModelVersion: req.Model, ResponseID: fmt.Sprintf("%x", signature(body, -1))[:16]}
	usage := reply.Usage
	if usage == nil {
		prompt := len(body)/4 + 1
		out := len(reply.Text)/4 + 8*len(reply.Calls) + 1
		usage = &UsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out, TotalTokenCount: prompt + out}
	}
	resp.UsageMetadata = usage
	if reply.BlockReason != "" {
		resp.PromptFeedback = &PromptFeedback{BlockReason: reply.BlockReason}
		return resp, nil
	}
	parts := append([]Part(nil), reply.Parts...)
	if reply.Text != "" {
		parts = append(parts, TextPart(reply.Text))
	}
	firstCall := len(parts)
	for _, c := range reply.Calls {
		args, err := marshalArgs(c.Args)
		if err != nil {
			return nil, fmt.Errorf("geminifake: call %s args: %w", c.Name, err)
		}
		parts = append(parts, Part{FunctionCall: &FunctionCall{ID: c.ID, Name: c.Name, Args: args}})
	}
	s.mu.Lock()
	switch {
	case len(reply.Calls) > 0:
		p := &parts[firstCall]
		p.ThoughtSignature = signature(body, firstCall)
		s.issued[string(p.ThoughtSignature)] = issuedCall{name: p.FunctionCall.Name, args: decodeArgs(p.FunctionCall.Args)}
	case len(parts) > 0 && len(parts[len(parts)-1].ThoughtSignature) == 0:
		parts[len(parts)-1].ThoughtSignature = signature(body, len(parts)-1)
	}
	s.mu.Unlock()
	finish := reply.FinishReason
	if finish == "" {
		finish = "STOP"
	}
	resp.Candidates = []Candidate{{Content: &Content{Role: "model", Parts: parts}, FinishReason: finish}}
	return resp, nil
}

func marshalArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return a, nil
	}
	return json.Marshal(args)
}

// signature derives an opaque token from the request body and a part
// index: random-looking, but the same for the same request.
func signature(body []byte, part int) []byte {
	h := sha256.New()
	h.Write([]byte("geminifake thought signature\x00"))
	h.Write(body)
	h.Write([]byte("\x00" + strconv.Itoa(part)))
	return h.Sum(nil)
}

// grpcStatus names HTTP statuses the way Google's error bodies do.
var grpcStatus = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "UNIMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

func writeError(w http.ResponseWriter, status int, message string) {
	name, ok := grpcStatus[status]
	if !ok {
		name = "UNKNOWN"
	}
	writeJSON(w, status, ErrorBody{Error: ErrorStatus{Code: status, Message: message, Status: name}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":500,"message":"geminifake: marshal","status":"INTERNAL"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
