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
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
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
	// Header is sent with a failure: Retry-After on a 429 or a 529, say.
	Header http.Header
	// Details go in the error body's details, as Google's APIs send
	// them: RetryInfo(d) asks the caller to come back after d.
	Details []any
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
func JSON(v any) Reply { return Reply{Text: vf.MustJSON("geminifake", v)} }

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
func Script(replies ...Reply) Behavior { return vf.Script[Request]("geminifake", replies, Error) }

// Config configures a Server.
type Config struct {
	// APIKey is the key requests must carry (DefaultAPIKey when empty).
	APIKey string
	// Behavior answers valid requests (a fixed "ok" when nil).
	Behavior Behavior
}

// Received is one request as the server saw it; Model is the {model}
// segment of a well-formed path.
type Received = vf.Received[Request]

// RequestError is a request the server refused, with the HTTP status it
// answered and every violation found.
type RequestError = vf.RequestError

// Server is a running fake. Its URL is the base URL to give the client
// (Config.BaseURL in baton's adapter, HTTPOptions.BaseURL in the SDK), its
// APIKey the key it expects.
type Server struct {
	*server

	mu     sync.Mutex
	issued map[string]issuedCall
}

type server = vf.Server[Request, Reply]

// New starts a server with the default key and b (nil: always "ok").
func New(b Behavior) *Server { return Start(Config{Behavior: b}) }

// Start starts a server on a loopback port. Close it when done.
func Start(cfg Config) *Server {
	s := &Server{issued: map[string]issuedCall{}}
	s.server = vf.Start(vf.Wire[Request, Reply]{
		Name:        "geminifake",
		Key:         DefaultAPIKey,
		OK:          Text("ok"),
		ContentType: "application/json; charset=UTF-8",
		Errors:      vf.Errors{Types: grpcStatus, Server: "UNKNOWN", Other: "UNKNOWN"},
		Route:       route,
		Caller:      s.checkCaller,
		Validate:    func(model string, body []byte) (*Request, *RequestError) { return validate(model, body, s.lookup) },
		Index:       func(r *Request, i int) { r.Index = i },
		Fault: func(r Reply) vf.Fault {
			return vf.Fault{Status: r.Status, Message: r.Message, Body: r.Body, Hang: r.Hang, Header: r.Header, Details: r.Details}
		},
		Answer: s.response,
		ErrorBody: func(e *RequestError, _ int) any {
			return ErrorBody{Error: ErrorStatus{Code: e.Status, Message: e.Error(), Status: e.Type, Details: e.Details}}
		},
	}, cfg.APIKey, cfg.Behavior)
	return s
}

// Validate checks body as a generateContent request for model, with the
// same rules the server applies, including that thought signatures are
// ones this server issued. It returns a *RequestError or nil.
func (s *Server) Validate(model string, body []byte) error {
	return vf.Err(validate(model, body, s.lookup))
}

// Validate checks body as a generateContent request for model without a
// server: every rule but the authenticity of thought signatures (their
// presence is still checked). It returns a *RequestError or nil.
func Validate(model string, body []byte) error { return vf.Err(validate(model, body, nil)) }

func (s *Server) lookup(sig []byte) (issuedCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.issued[string(sig)]
	return c, ok
}

func badRequest(violations ...string) *RequestError {
	return vf.Refuse(http.StatusBadRequest, "INVALID_ARGUMENT", violations...)
}

// validate parses, checks and decodes a request body.
func validate(model string, body []byte, book signatureBook) (*Request, *RequestError) {
	raw, err := vf.DecodeJSON(body)
	switch {
	case errors.Is(err, vf.ErrTrailing):
		return nil, badRequest("Invalid JSON payload received. Unexpected data after the request object.")
	case err != nil:
		return nil, badRequest(fmt.Sprintf("Invalid JSON payload received. %v", err))
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, badRequest(fmt.Sprintf("Invalid JSON payload received. Expected an object, got %s.", vf.Short(raw)))
	}
	normalized, errs := vf.Check(schema, raw, message)
	if len(errs) > 0 {
		return nil, badRequest(errs...)
	}
	req, err := vf.Decode[Request](normalized)
	if err != nil {
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

// route reads the model from the path of a generateContent call.
func route(r *http.Request) (string, *RequestError) {
	m, ok := strings.CutPrefix(r.URL.Path, pathPrefix)
	m, ok2 := strings.CutSuffix(m, pathSuffix)
	switch {
	case !ok || !ok2 || m == "" || strings.ContainsAny(m, "/:"):
		return "", vf.Refuse(http.StatusNotFound, "", fmt.Sprintf("geminifake: no method at %s; generateContent is POST %s{model}%s", r.URL.Path, pathPrefix, pathSuffix))
	case r.Method != http.MethodPost:
		return m, vf.Refuse(http.StatusNotFound, "", fmt.Sprintf("geminifake: generateContent takes POST, not %s", r.Method))
	}
	return m, nil
}

// checkCaller checks the query parameters and the API key.
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
		return vf.Refuse(http.StatusForbidden, "", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
	case key != s.APIKey:
		return badRequest("API key not valid. Please pass a valid API key.")
	}
	return nil
}

// response builds the body of a successful reply, issuing signatures.
func (s *Server) response(req *Request, body []byte, reply Reply) (any, error) {
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
