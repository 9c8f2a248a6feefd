// Package anthropicfake is a strict stand-in for Anthropic's Messages API,
// POST /v1/messages, for tests. It is written from Anthropic's public API
// reference (https://platform.claude.com/docs/en/api/messages/create, as
// generated into the official SDKs' request types at anthropic-sdk-go
// v1.84.0) and the tool use, vision, PDF, extended thinking and structured
// outputs guides, not from any SDK's types, so an adapter tested against it
// cannot pass merely by agreeing with itself.
//
// A Server listens on loopback and answers POST /v1/messages. Before a
// request reaches the test's Behavior it must pass what the service would
// check:
//
//   - the method and path, the x-api-key header (401 authentication_error
//     otherwise), an anthropic-version header naming a published version,
//     a JSON content type, and no query parameters or beta headers (betas
//     are not modelled);
//   - a JSON body with only documented fields, anywhere in it, each of its
//     documented type and range, model, max_tokens and messages present
//     (schema.go);
//   - the rules stated in prose (semantics.go): consecutive turns of one
//     role are combined into one turn, every message but a final assistant
//     one has content, text blocks are not empty or blank, tool_use blocks
//     sit in assistant turns and tool_result blocks in user turns, first,
//     each answering a tool_use of the turn right before it by id, every
//     tool_use is answered by the next turn, tool_use ids are unique,
//     tool names are unique, input schemas describe objects, images and
//     PDFs are what their media type says, a structured output schema sets
//     additionalProperties to false on every object, a thinking budget is
//     below max_tokens.
//
// A request that fails answers 400 in Anthropic's error shape,
// {"type":"error","error":{"type":"invalid_request_error","message":...}},
// and the Behavior is not called. Every request is recorded, valid or not,
// with the reason it was refused, and a valid one with its decoded body,
// whose View is what the model reads.
//
// Replies put text first, then tool_use blocks, each with the Reply's id
// (or one the server makes up, as the service always gives one). A request
// with max_tokens 0 only fills the prompt cache, as the reference says, so
// its answer has no content and stop_reason "max_tokens".
//
// A Server is safe for concurrent use; requests are served in parallel.
package anthropicfake

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
)

// DefaultAPIKey is the key a Server expects when Config.APIKey is empty.
const DefaultAPIKey = "anthropicfake-key"

// Versions are the anthropic-version header values the API accepts.
var Versions = []string{"2023-06-01", "2023-01-01"}

// Path is the Messages endpoint.
const Path = "/v1/messages"

// Behavior decides the answer to a valid request. It is called from the
// request's own goroutine, so it must be safe for concurrent use when the
// client makes concurrent calls.
type Behavior func(req *Request) Reply

// Reply is a scripted answer. With none of Status, Body and Hang set it is
// a successful response whose content is Blocks, then a text block for
// Text (when not empty), then a tool_use block per Call.
type Reply struct {
	// Text is what the model says. JSON output is text too: see JSON.
	Text string
	// Calls are tool uses after the text, in order (parallel calls).
	Calls []Call
	// Blocks go first, verbatim: thinking blocks, or anything unusual.
	Blocks []OutBlock
	// StopReason defaults to "tool_use" with calls, "end_turn" without.
	StopReason string
	// Usage defaults to counts derived from the request and reply sizes.
	Usage *Usage

	// Status, when neither 0 nor 200, fails the call with this HTTP status
	// and Anthropic's error body: ErrorType (by default the type the
	// reference gives the status) and Message (by default the status text).
	Status    int
	ErrorType string
	Message   string
	// Header is sent with a failure: Retry-After on a 429 or a 529, say.
	Header http.Header
	// Body, when set, is written as is with Status (200 when 0), for
	// answers no real server should give: a truncated or misshapen body.
	Body []byte
	// Hang holds the request until the client gives up (its context ends)
	// or the server closes.
	Hang bool
}

// Call is a tool use in a Reply. Input is marshalled to JSON (nil sends
// {}); an empty ID gets one made up from the request.
type Call struct {
	ID    string
	Name  string
	Input any
}

// Text replies with text.
func Text(s string) Reply { return Reply{Text: s} }

// JSON replies with v marshalled as the text, as a model asked for JSON
// output does. It panics if v cannot be marshalled.
func JSON(v any) Reply { return Reply{Text: vf.MustJSON("anthropicfake", v)} }

// Calls replies with tool uses.
func Calls(calls ...Call) Reply { return Reply{Calls: calls} }

// Error fails the call with an HTTP status and message.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Hang holds the request until the client gives up.
func Hang() Reply { return Reply{Hang: true} }

// Script answers the n-th request it is called for with replies[n], and
// fails any request past the end with 500 and a message saying so. Only
// valid requests reach a Behavior, so refused ones do not use up a reply.
// It is safe for concurrent use.
func Script(replies ...Reply) Behavior { return vf.Script[Request]("anthropicfake", replies, Error) }

// Config configures a Server.
type Config struct {
	// APIKey is the key requests must carry (DefaultAPIKey when empty).
	APIKey string
	// Behavior answers valid requests (a fixed "ok" when nil).
	Behavior Behavior
	// Alternating refuses two messages in a row with the same role. The
	// API reference says it combines them into one turn, but Claude on
	// other platforms has required strictly alternating turns, so an
	// adapter that promises alternation is held to it here.
	Alternating bool
}

// Received is one request as the server saw it.
type Received = vf.Received[Request]

// RequestError is a request the server refused: the HTTP status and error
// type it answered, and every violation found.
type RequestError = vf.RequestError

func invalid(violations ...string) *RequestError {
	return vf.Refuse(http.StatusBadRequest, "invalid_request_error", violations...)
}

// Server is a running fake. Its URL is the base URL to give the client,
// without the /v1 path; its APIKey the key it expects.
type Server struct {
	*server
	alternating bool
}

type server = vf.Server[Request, Reply]

// New starts a server with the default key and b (nil: always "ok").
func New(b Behavior) *Server { return Start(Config{Behavior: b}) }

// Start starts a server on a loopback port. Close it when done.
func Start(cfg Config) *Server {
	s := &Server{alternating: cfg.Alternating}
	s.server = vf.Start(vf.Wire[Request, Reply]{
		Name:        "anthropicfake",
		Key:         DefaultAPIKey,
		OK:          Text("ok"),
		ContentType: "application/json",
		Errors:      errorTypes,
		Route:       route,
		Caller:      s.checkCaller,
		NoQuery:     true,
		Validate:    func(_ string, body []byte) (*Request, *RequestError) { return s.validate(body) },
		Index:       func(r *Request, i int) { r.Index = i },
		Fault: func(r Reply) vf.Fault {
			return vf.Fault{Status: r.Status, Type: r.ErrorType, Message: r.Message, Body: r.Body, Hang: r.Hang, Header: r.Header}
		},
		Answer: response,
		ErrorBody: func(e *RequestError, i int) any {
			return ErrorBody{Type: "error", Error: ErrorObject{Type: e.Type, Message: e.Error()}, RequestID: requestID(i)}
		},
		Stamp: func(h http.Header, i int) { h.Set("request-id", requestID(i)) },
	}, cfg.APIKey, cfg.Behavior)
	return s
}

func requestID(i int) string { return fmt.Sprintf("req_fake_%d", i) }

// Validate checks body as a Messages request with the rules the server
// applies to the bodies it receives. It returns a *RequestError or nil.
func (s *Server) Validate(body []byte) error { return vf.Err(s.validate(body)) }

// validate is the package's validate with the server's own rules.
func (s *Server) validate(body []byte) (*Request, *RequestError) {
	req, err := validate(body)
	if err == nil && s.alternating {
		if errs := alternation(req.Messages); len(errs) > 0 {
			return nil, invalid(errs...)
		}
	}
	return req, err
}

// Validate checks body as a Messages request. It returns a *RequestError or
// nil.
func Validate(body []byte) error { return vf.Err(validate(body)) }

// validate parses, checks and decodes a request body.
func validate(body []byte) (*Request, *RequestError) {
	raw, err := vf.DecodeJSON(body)
	if err != nil {
		return nil, invalid(fmt.Sprintf("There was an issue with your request body: invalid JSON: %v", err))
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, invalid("Input should be a valid dictionary or object to extract fields from")
	}
	normalized, errs := vf.Check(requestSchema, raw, message)
	if len(errs) > 0 {
		return nil, invalid(errs...)
	}
	req, err := vf.Decode[Request](normalized)
	if err != nil {
		return nil, invalid("anthropicfake: decode the validated request: " + err.Error())
	}
	keepRaw(req, body)
	if errs := checkSemantics(req); len(errs) > 0 {
		return nil, invalid(errs...)
	}
	return req, nil
}

// keepRaw puts back the JSON Schemas and tool inputs exactly as sent:
// validation decoded them into maps, which lost the order of their keys,
// and the order of a schema's properties is the order in which the model
// writes an answer's fields.
func keepRaw(req *Request, body []byte) {
	var raw struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		OutputConfig *struct {
			Format *struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return
	}
	for i, t := range raw.Tools {
		if i < len(req.Tools) {
			req.Tools[i].InputSchema = t.InputSchema
		}
	}
	if oc := raw.OutputConfig; oc != nil && oc.Format != nil && req.OutputConfig != nil && req.OutputConfig.Format != nil {
		req.OutputConfig.Format.Schema = oc.Format.Schema
	}
	for i, m := range raw.Messages {
		var blocks []struct {
			Input json.RawMessage `json:"input"`
		}
		if i >= len(req.Messages) || json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for j, b := range blocks {
			if j < len(req.Messages[i].Content) && req.Messages[i].Content[j].Type == "tool_use" {
				req.Messages[i].Content[j].Input = b.Input
			}
		}
	}
}

func route(r *http.Request) (string, *RequestError) {
	switch {
	case r.URL.Path != Path:
		return "", vf.Refuse(http.StatusNotFound, "not_found_error", "Not Found")
	case r.Method != http.MethodPost:
		return "", vf.Refuse(http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("Method Not Allowed: %s takes POST, not %s", Path, r.Method))
	}
	return "", nil
}

// checkCaller checks the headers.
func (s *Server) checkCaller(r *http.Request) *RequestError {
	key := r.Header.Get("x-api-key")
	switch {
	case key == "":
		return vf.Refuse(http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
	case key != s.APIKey:
		return vf.Refuse(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	}
	switch v := r.Header.Get("anthropic-version"); {
	case v == "":
		return invalid("anthropic-version: header is required")
	case !slices.Contains(Versions, v):
		return invalid(fmt.Sprintf("anthropic-version: %q is not a valid version", v))
	}
	if b := r.Header.Get("anthropic-beta"); b != "" {
		return invalid(fmt.Sprintf("anthropicfake: beta features are not modelled (anthropic-beta: %s)", b))
	}
	return nil
}

// response builds the body of a successful reply.
func response(req *Request, body []byte, reply Reply) (any, error) {
	resp := &Response{
		ID:        "msg_fake_" + digest(body, -1),
		Type:      "message",
		Role:      "assistant",
		Model:     req.Model,
		Content:   []OutBlock{},
		Container: json.RawMessage("null"),
	}
	if req.MaxTokens > 0 {
		resp.Content = append(resp.Content, reply.Blocks...)
		if reply.Text != "" {
			text := reply.Text
			resp.Content = append(resp.Content, OutBlock{Type: "text", Text: &text})
		}
		for i, c := range reply.Calls {
			input, err := marshalInput(c.Input)
			if err != nil {
				return nil, fmt.Errorf("anthropicfake: call %s input: %w", c.Name, err)
			}
			id := c.ID
			if id == "" {
				id = "toolu_fake_" + digest(body, i)
			}
			resp.Content = append(resp.Content, OutBlock{Type: "tool_use", ID: id, Name: c.Name, Input: input})
		}
	}
	switch {
	case req.MaxTokens == 0:
		resp.StopReason = "max_tokens"
	case reply.StopReason != "":
		resp.StopReason = reply.StopReason
	case len(reply.Calls) > 0:
		resp.StopReason = "tool_use"
	default:
		resp.StopReason = "end_turn"
	}
	if reply.Usage != nil {
		resp.Usage = *reply.Usage
	} else {
		resp.Usage = Usage{InputTokens: len(body)/4 + 1, OutputTokens: len(reply.Text)/4 + 8*len(reply.Calls) + 1, ServiceTier: "standard"}
	}
	return resp, nil
}

func marshalInput(in any) (json.RawMessage, error) {
	switch v := in.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(in)
}

// digest derives an opaque token from the request body and an index:
// random-looking, but the same for the same request.
func digest(body []byte, i int) string {
	h := sha256.New()
	fmt.Fprintf(h, "anthropicfake\x00%d\x00", i)
	h.Write(body)
	return fmt.Sprintf("%x", h.Sum(nil))[:24]
}

// errorTypes are the error types the reference gives HTTP statuses.
var errorTypes = vf.Errors{
	Types: map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
		403: "permission_error", 404: "not_found_error", 408: "timeout_error",
		413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error",
		529: "overloaded_error",
	},
	Server: "api_error",
	Other:  "invalid_request_error",
}

// ErrorType is the error type the reference gives an HTTP status.
func ErrorType(status int) string { return errorTypes.Type(status) }
