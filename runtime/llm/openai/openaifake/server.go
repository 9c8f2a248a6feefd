// Package openaifake is a strict stand-in for OpenAI's Chat Completions
// endpoint, POST /v1/chat/completions, for tests. It is written from
// OpenAI's public reference (the openai-openapi spec's
// CreateChatCompletionRequest and CreateChatCompletionResponse, and the
// function calling, file inputs, vision, structured outputs and reasoning
// guides), not from any SDK's types, so an adapter tested against it
// cannot pass merely by agreeing with itself.
//
// A Server listens on loopback; its URL is the base URL a client is given
// (it ends in /v1, like the real one). Before a request reaches the test's
// Behavior it must pass what the service would check:
//
//   - the method and path, the bearer API key, a JSON content type, and
//     no query parameters (the endpoint documents none);
//   - a JSON body with only documented fields, anywhere in it, each of its
//     documented type, with every required field, enum values from their
//     lists and numbers and arrays within their bounds (schema.go);
//   - the rules stated in prose: every tool message answers, by
//     tool_call_id, a call of the assistant message before it, and every
//     call is answered before the conversation moves on; an assistant
//     message has content or tool calls; file parts are PDFs, named;
//     image parts are data URLs of a supported type or http(s) URLs;
//     function and schema names match the documented pattern; tool_choice
//     and parallel_tool_calls need tools; strict schemas follow the
//     structured outputs subset; the reasoning models (FixedSampling) take
//     only default sampling parameters and no max_tokens (semantics.go).
//
// A request that fails answers 400 in OpenAI's error shape,
// {"error":{"message":...,"type":"invalid_request_error","param":...,
// "code":...}}, and the Behavior is not called. Every request is recorded,
// valid or not, with the reason it was refused. The fake does not stream
// and answers one choice: stream and n > 1 are refused as unimplemented.
//
// Replies are one choice whose message holds the text (null when there is
// none and calls are made) and then the tool calls, each with the ID the
// Reply gives or, since the API always gives one, an ID derived from the
// request.
//
// A Server is safe for concurrent use; requests are served in parallel.
package openaifake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultAPIKey is the key a Server expects when Config.APIKey is empty.
const DefaultAPIKey = "sk-openaifake"

// Path is the endpoint's path under the server's root.
const Path = "/v1/chat/completions"

// Behavior decides the answer to a valid request. It is called from the
// request's own goroutine, so it must be safe for concurrent use when the
// client makes concurrent calls.
type Behavior func(req *Request) Reply

// Reply is a scripted answer. With none of Status, Body and Hang set it is
// a successful response whose message holds Text and then Calls.
type Reply struct {
	// Text is what the model says. JSON output is text too: see JSON.
	Text string
	// Calls are tool calls after the text, in order (parallel calls).
	Calls []Call
	// Refusal, when set, answers with a refusal instead of text.
	Refusal string
	// FinishReason defaults to "tool_calls" when there are calls and
	// "stop" otherwise.
	FinishReason string
	// Usage defaults to counts derived from the request and reply sizes.
	Usage *Usage

	// Status, when neither 0 nor 200, fails the call with this HTTP status
	// and OpenAI's error body (Message, or the status text).
	Status  int
	Message string
	// Body, when set, is written as is with Status (200 when 0), for
	// answers no real server should give: a truncated or misshapen body.
	Body []byte
	// Hang holds the request until the client gives up (its context ends)
	// or the server closes.
	Hang bool
}

// Call is a tool call in a Reply. Args is the arguments: a string or a
// json.RawMessage is sent as is (so a test can send arguments that are not
// JSON), nil as {}, anything else marshalled. ID defaults to one derived
// from the request.
type Call struct {
	ID   string
	Name string
	Args any
}

// Text replies with text.
func Text(s string) Reply { return Reply{Text: s} }

// JSON replies with v marshalled as the text, as a model asked for JSON
// output does. It panics if v cannot be marshalled, which only a test's
// own value can cause.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic("openaifake.JSON: " + err.Error())
	}
	return Reply{Text: string(b)}
}

// Calls replies with tool calls.
func Calls(calls ...Call) Reply { return Reply{Calls: calls} }

// Error fails the call with an HTTP status and message.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Malformed answers 200 with body as is, not a valid response.
func Malformed(body string) Reply { return Reply{Body: []byte(body)} }

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
		return Error(http.StatusInternalServerError, fmt.Sprintf("openaifake: unscripted request: the script has %d replies", len(replies)))
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
	Path   string
	Header http.Header
	Body   []byte
	// Err is why the server refused the request (a *RequestError), nil
	// when it passed validation and went to the Behavior.
	Err error
	// Request is the decoded body of a valid request, nil otherwise.
	Request *Request
}

// RequestError is a request the server refused, with the HTTP status and
// error body it answered, and every violation found.
type RequestError struct {
	Status int
	// Type, Param and Code are the error body's fields for the first
	// violation; Param and Code are empty when the body has them null.
	Type, Param, Code string
	Violations        []string
}

func (e *RequestError) Error() string { return strings.Join(e.Violations, "\n") }

func refusal(status int, typ string, vs ...violation) *RequestError {
	e := &RequestError{Status: status, Type: typ}
	for _, v := range vs {
		e.Violations = append(e.Violations, v.message)
	}
	if len(vs) > 0 {
		e.Param, e.Code = vs[0].param, vs[0].code
	}
	return e
}

func invalid(vs ...violation) *RequestError {
	return refusal(http.StatusBadRequest, "invalid_request_error", vs...)
}

// Server is a running fake.
type Server struct {
	// URL is the base URL to give the client, ending in /v1.
	URL string
	// APIKey is the key the server expects.
	APIKey string

	behavior Behavior
	srv      *httptest.Server
	done     chan struct{}
	once     sync.Once

	mu       sync.Mutex
	received []Received
}

// New starts a server with the default key and b (nil: always "ok").
func New(b Behavior) *Server { return Start(Config{Behavior: b}) }

// Start starts a server on a loopback port. Close it when done.
func Start(cfg Config) *Server {
	s := &Server{
		APIKey:   cfg.APIKey,
		behavior: cfg.Behavior,
		done:     make(chan struct{}),
	}
	if s.APIKey == "" {
		s.APIKey = DefaultAPIKey
	}
	if s.behavior == nil {
		s.behavior = func(*Request) Reply { return Text("ok") }
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + strings.TrimSuffix(Path, "/chat/completions")
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

// Validate checks body as a chat completion request with the rules the
// server applies. It returns a *RequestError or nil.
func (s *Server) Validate(body []byte) error { return Validate(body) }

// Validate checks body as a chat completion request with the rules a
// Server applies to the bodies it receives. It returns a *RequestError or
// nil.
func Validate(body []byte) error {
	if _, err := validate(body); err != nil {
		return err
	}
	return nil
}

// validate parses, checks and decodes a request body.
func validate(body []byte) (*Request, *RequestError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil || dec.More() {
		return nil, invalid(violation{message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"})
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, invalid(violation{code: "invalid_type", message: fmt.Sprintf("Invalid type for the request body: expected an object, but got %s instead.", typeOf(raw))})
	}
	var v validator
	v.check("", createChatCompletionRequest, obj)
	if len(v.errs) > 0 {
		return nil, invalid(v.errs...)
	}
	req := new(Request)
	if err := json.Unmarshal(body, req); err != nil {
		return nil, invalid(violation{message: "openaifake: decode the validated request: " + err.Error()})
	}
	if errs := checkSemantics(req); len(errs) > 0 {
		return nil, invalid(errs...)
	}
	return req, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(r.Body)
	rec := Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var req *Request
	var refused *RequestError
	switch {
	case readErr != nil:
		refused = invalid(violation{message: "openaifake: read body: " + readErr.Error()})
	case r.URL.Path != Path:
		refused = refusal(http.StatusNotFound, "invalid_request_error", violation{message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
	case r.Method != http.MethodPost:
		refused = refusal(http.StatusMethodNotAllowed, "invalid_request_error", violation{message: fmt.Sprintf("openaifake: only POST %s is implemented, not %s", Path, r.Method)})
	default:
		refused = s.checkCaller(r)
		if refused == nil {
			req, refused = validate(body)
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
		writeRefusal(w, refused)
		return
	}
	s.answer(w, r, req, body, s.behavior(req))
}

// checkCaller checks the API key, the query and the content type.
func (s *Server) checkCaller(r *http.Request) *RequestError {
	auth := r.Header.Get("Authorization")
	key, bearer := strings.CutPrefix(auth, "Bearer ")
	switch {
	case auth == "" || !bearer:
		return refusal(http.StatusUnauthorized, "invalid_request_error", violation{message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
	case key != s.APIKey:
		return refusal(http.StatusUnauthorized, "invalid_request_error", violation{code: "invalid_api_key", message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", redact(key))})
	}
	if len(r.URL.Query()) > 0 {
		return invalid(violation{message: fmt.Sprintf("openaifake: %s takes no query parameters, got %q", Path, r.URL.RawQuery)})
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return invalid(violation{message: fmt.Sprintf("openaifake: the body must be sent as application/json, not %q", r.Header.Get("Content-Type"))})
	}
	return nil
}

// redact shows a key the way the API's message does: its ends only.
func redact(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// answer writes reply for a valid request.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *Request, body []byte, reply Reply) {
	switch {
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
			writeError(w, http.StatusServiceUnavailable, "openaifake: server closed")
		}
		return
	case reply.Body != nil:
		status := reply.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
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
	resp, err := response(req, body, reply)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// response builds the body of a successful reply.
func response(req *Request, body []byte, reply Reply) (*Response, error) {
	msg := ResponseMessage{Role: "assistant", Annotations: []any{}}
	switch {
	case reply.Refusal != "":
		msg.Refusal = &reply.Refusal
	case reply.Text != "" || len(reply.Calls) == 0:
		msg.Content = &reply.Text
	}
	for i, c := range reply.Calls {
		args, err := arguments(c.Args)
		if err != nil {
			return nil, fmt.Errorf("openaifake: call %s args: %w", c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = "call_" + digest(body, strconv.Itoa(i))[:24]
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Type: "function", Function: &FunctionCall{Name: c.Name, Arguments: args}})
	}
	finish := reply.FinishReason
	switch {
	case finish != "":
	case len(reply.Calls) > 0:
		finish = "tool_calls"
	default:
		finish = "stop"
	}
	usage := reply.Usage
	if usage == nil {
		prompt := len(body)/4 + 1
		out := len(reply.Text)/4 + 8*len(reply.Calls) + 1
		usage = &Usage{
			PromptTokens: prompt, CompletionTokens: out, TotalTokens: prompt + out,
			PromptTokensDetails:     &PromptTokensDetails{},
			CompletionTokensDetails: &CompletionTokensDetails{},
		}
	}
	return &Response{
		ID:                "chatcmpl-" + digest(body, "id")[:24],
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             req.Model,
		Choices:           []Choice{{Message: msg, Logprobs: json.RawMessage("null"), FinishReason: finish}},
		Usage:             usage,
		ServiceTier:       "default",
		SystemFingerprint: "fp_openaifake",
	}, nil
}

func arguments(args any) (string, error) {
	switch a := args.(type) {
	case nil:
		return "{}", nil
	case string:
		return a, nil
	case json.RawMessage:
		return string(a), nil
	}
	b, err := json.Marshal(args)
	return string(b), err
}

// digest derives an opaque, random-looking token from the request body, the
// same for the same request.
func digest(body []byte, salt string) string {
	h := sha256.New()
	h.Write([]byte("openaifake\x00" + salt + "\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// errorType names the error type OpenAI's bodies give each status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// errorCode is the code OpenAI's bodies give a status, "" for null.
func errorCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusNotFound:
		return "model_not_found"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, errorBody(errorType(status), "", errorCode(status), message))
}

func writeRefusal(w http.ResponseWriter, e *RequestError) {
	writeJSON(w, e.Status, errorBody(e.Type, e.Param, e.Code, e.Error()))
}

func errorBody(typ, param, code, message string) ErrorBody {
	body := ErrorBody{Error: ErrorObject{Message: message, Type: typ}}
	if param != "" {
		body.Error.Param = &param
	}
	if code != "" {
		body.Error.Code = &code
	}
	return body
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"openaifake: marshal","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
