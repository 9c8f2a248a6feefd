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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
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
	// Header is sent with a failure: Retry-After on a 429 or a 529, say.
	Header http.Header
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
func JSON(v any) Reply { return Reply{Text: vf.MustJSON("openaifake", v)} }

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
func Script(replies ...Reply) Behavior { return vf.Script[Request]("openaifake", replies, Error) }

// Config configures a Server.
type Config struct {
	// APIKey is the key requests must carry (DefaultAPIKey when empty).
	APIKey string
	// Behavior answers valid requests (a fixed "ok" when nil).
	Behavior Behavior
}

// Received is one request as the server saw it.
type Received = vf.Received[Request]

// RequestError is a request the server refused, with the HTTP status and
// error body it answered (Type, and Param and Code for the first
// violation), and every violation found.
type RequestError = vf.RequestError

func refusal(status int, typ string, vs ...violation) *RequestError {
	e := vf.Refuse(status, typ)
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

// Server is a running fake. Its URL is the base URL to give the client,
// ending in /v1; its APIKey the key it expects.
type Server struct{ *server }

type server = vf.Server[Request, Reply]

// New starts a server with the default key and b (nil: always "ok").
func New(b Behavior) *Server { return Start(Config{Behavior: b}) }

// Start starts a server on a loopback port. Close it when done.
func Start(cfg Config) *Server {
	s := &Server{}
	s.server = vf.Start(vf.Wire[Request, Reply]{
		Name:        "openaifake",
		Key:         DefaultAPIKey,
		OK:          Text("ok"),
		ContentType: "application/json",
		Errors: vf.Errors{
			Types: map[int]string{http.StatusTooManyRequests: "requests"}, Server: "server_error", Other: "invalid_request_error",
			Codes: map[int]string{http.StatusUnauthorized: "invalid_api_key", http.StatusNotFound: "model_not_found", http.StatusTooManyRequests: "rate_limit_exceeded"},
		},
		Route:    route,
		Caller:   s.checkCaller,
		NoQuery:  true,
		Validate: func(_ string, body []byte) (*Request, *RequestError) { return validate(body) },
		Index:    func(r *Request, i int) { r.Index = i },
		Fault: func(r Reply) vf.Fault {
			return vf.Fault{Status: r.Status, Message: r.Message, Body: r.Body, Hang: r.Hang, Header: r.Header}
		},
		Answer: response,
		ErrorBody: func(e *RequestError, _ int) any {
			body := ErrorBody{Error: ErrorObject{Message: e.Error(), Type: e.Type}}
			if e.Param != "" {
				body.Error.Param = &e.Param
			}
			if e.Code != "" {
				body.Error.Code = &e.Code
			}
			return body
		},
	}, cfg.APIKey, cfg.Behavior)
	s.URL += strings.TrimSuffix(Path, "/chat/completions")
	return s
}

// Validate checks body as a chat completion request with the rules the
// server applies. It returns a *RequestError or nil.
func (s *Server) Validate(body []byte) error { return Validate(body) }

// Validate checks body as a chat completion request with the rules a
// Server applies to the bodies it receives. It returns a *RequestError or
// nil.
func Validate(body []byte) error { return vf.Err(validate(body)) }

// validate parses, checks and decodes a request body.
func validate(body []byte) (*Request, *RequestError) {
	raw, err := vf.DecodeJSON(body)
	if err != nil {
		return nil, invalid(violation{message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"})
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, invalid(violation{code: "invalid_type", message: fmt.Sprintf("Invalid type for the request body: expected an object, but got %s instead.", typeOf(raw))})
	}
	if _, errs := vf.Check(requestSchema, raw, worded); len(errs) > 0 {
		return nil, invalid(errs...)
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

func route(r *http.Request) (string, *RequestError) {
	switch {
	case r.URL.Path != Path:
		return "", refusal(http.StatusNotFound, "invalid_request_error", violation{message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
	case r.Method != http.MethodPost:
		return "", refusal(http.StatusMethodNotAllowed, "invalid_request_error", violation{message: fmt.Sprintf("openaifake: only POST %s is implemented, not %s", Path, r.Method)})
	}
	return "", nil
}

// checkCaller checks the API key.
func (s *Server) checkCaller(r *http.Request) *RequestError {
	auth := r.Header.Get("Authorization")
	key, bearer := strings.CutPrefix(auth, "Bearer ")
	switch {
	case auth == "" || !bearer:
		return refusal(http.StatusUnauthorized, "invalid_request_error", violation{message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
	case key != s.APIKey:
		return refusal(http.StatusUnauthorized, "invalid_request_error", violation{code: "invalid_api_key", message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", redact(key))})
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

// response builds the body of a successful reply.
func response(req *Request, body []byte, reply Reply) (any, error) {
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
