// Package llmtest is the conformance suite every vendor adapter of
// llm.Model runs: Conformance checks the properties baton relies on, the
// same way for Gemini today and for any vendor added later.
//
// An adapter tested only against a fake written beside it agrees with it
// by construction. So the suite never looks at an adapter's wire format
// itself. It talks to a Vendor, which starts a strict fake of the vendor's
// API, written from the vendor's public reference, and reports back in
// vendor-neutral terms:
//
//   - The suite scripts the fake in neutral terms, one Reply per request:
//     say text, call tools, return JSON, fail with an HTTP status, or hang
//     until the client gives up. Each vendor translates a Reply into its
//     own response shape.
//   - The fake refuses (HTTP 400, in the vendor's error shape) any request
//     its reference does not allow, unknown fields anywhere included, and
//     records every request with the reason it refused it. The suite fails
//     a test on any refused request, so "the adapter only sends what the
//     vendor documents" is checked on every call of every property.
//   - For each request the fake also gives a View: what the model would
//     read, as roles and parts (text, blob, tool call, tool result). The
//     suite's assertions are about the View, so they hold for any wire
//     format: a file's name must sit in a text part right before the file,
//     a refusal must reach the model as the engine wrote it, a tool call's
//     ID and opaque signature must come back exactly as the model gave
//     them.
//
// A new vendor plugs in by implementing Vendor (and Fake) in its test
// package and calling Conformance; the suite does not change. Caps says
// which optional wire features the vendor has, where vendors genuinely
// differ (whether tool calls may arrive without an ID, whether calls carry
// state that must be returned).
package llmtest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/llm"
)

// Reply is one scripted answer of the fake, in neutral terms. The zero
// Reply is an empty successful answer.
type Reply struct {
	// Text is what the model says; JSON output is text too.
	Text string
	// Calls are tool calls made after the text, in order (parallel calls).
	Calls []Call
	// Status, when not 0, fails the call with this HTTP status (429, 500,
	// 400, ...) in the vendor's error shape instead of answering.
	Status int
	// Hang holds the request until the client's context ends.
	Hang bool
	// RetryAfter, with Status, is the wait the failure asks for, in the
	// vendor's documented way: Google's google.rpc.RetryInfo retryDelay
	// in the error's details, OpenAI's retry-after-ms and Retry-After
	// headers, Anthropic's Retry-After header.
	RetryAfter time.Duration
	// Finish, on an answer, is why it stopped in the engine's words
	// (engine.FinishTruncated, engine.FinishBlocked), sent in the vendor's
	// spelling: Gemini MAX_TOKENS or SAFETY, OpenAI length or
	// content_filter, Anthropic max_tokens or refusal.
	Finish string
}

// Throttle fails with 429 asking the caller to come back after d.
func Throttle(d time.Duration) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: d}
}

// Call is a scripted tool call. ID is the ID the fake puts on the wire;
// empty sends the call without one, which only vendors with
// Caps.OptionalCallIDs are asked to do.
type Call struct {
	ID   string
	Name string
	Args json.RawMessage
}

// Say answers with text.
func Say(text string) Reply { return Reply{Text: text} }

// CallTools answers with tool calls.
func CallTools(calls ...Call) Reply { return Reply{Calls: calls} }

// Fail answers with an HTTP error status.
func Fail(status int) Reply { return Reply{Status: status} }

// Stall holds the request until the client gives up.
func Stall() Reply { return Reply{Hang: true} }

// Caps are the optional wire features of a vendor.
type Caps struct {
	// OptionalCallIDs: the vendor's tool calls may arrive without an ID
	// (Gemini's functionCall.id is optional). The suite then checks that
	// the adapter leaves such calls without one instead of inventing it.
	OptionalCallIDs bool
	// Signatures: the vendor gives tool calls opaque state that must come
	// back with them in later requests (Gemini's thought signatures). The
	// suite then checks that the first call of each reply has a
	// Signature; that it comes back exactly is checked for every vendor.
	Signatures bool
	// TextFilesAsText: the vendor takes only some types as file parts
	// (OpenAI's chat API: PDFs and images), so a text file reaches the
	// model as a text part holding its content, right after its label.
	TextFilesAsText bool
}

// Vendor starts strict fakes of one vendor's API.
type Vendor interface {
	// Caps describes the vendor's optional wire features.
	Caps() Caps
	// Start serves script on a new fake, answering the n-th valid request
	// with script[n] and failing requests past the end with HTTP 500. It
	// registers the fake's shutdown with t.Cleanup. Requests the fake
	// refuses do not use up a Reply.
	Start(t *testing.T, script ...Reply) Fake
}

// Fake is a running strict fake.
type Fake interface {
	// Model is the adapter under test, pointed at the fake.
	Model() llm.Model
	// Requests lists every request the fake received, in arrival order.
	Requests() []Received
	// Validate reports whether body is a request the vendor's reference
	// allows (nil) or why not; it applies the rules the fake applies to
	// the requests it receives.
	Validate(body []byte) error
}

// Received is one request as the fake saw it.
type Received struct {
	// Body is the request body in the vendor's JSON.
	Body []byte
	// Err is why the fake refused the request, nil when it accepted it.
	Err error
	// View is what the model reads, for an accepted request.
	View View
}

// View is a request as the model reads it, in neutral terms.
type View struct {
	// System is the system instruction.
	System string
	// Messages are the conversation turns, roles llm.RoleUser and
	// llm.RoleModel; tool results are parts of user turns.
	Messages []Message
	// Tools are the names of the declared tools, in order.
	Tools []string
	// ResponseSchema is the JSON Schema the output must follow, if any.
	ResponseSchema json.RawMessage
}

// Message is one turn of a View.
type Message struct {
	Role  string
	Parts []Part
}

// Part is one part of a turn: a blob, a tool call or a tool result when
// that field is set, text otherwise.
type Part struct {
	Text string
	// Blob is an inline file; Name is set only when the vendor's wire
	// has a documented field for it.
	Blob *llm.Blob
	// Call is a tool call in a model turn, with its ID and Signature as
	// sent.
	Call *llm.ToolCall
	// Result is a tool result: CallID, Name, and Content, the JSON value
	// the model reads. IsError is set only when the wire says so
	// separately from the content.
	Result *llm.ToolResult
}

// IsText reports whether p is a text part.
func (p Part) IsText() bool { return p.Blob == nil && p.Call == nil && p.Result == nil }
