// Package llm holds Baton's provider-neutral model adapter types.
//
// The engine never talks to a model SDK: it emits an llm_request effect and
// later receives an llm_result input. A host hands each request to an
// [Answerer], the one interface for answering it: the pack's simulated
// model, or [Turns] for a real [Model] (a provider such as
// runtime/llm/gemini). Turns turns the effect into a [Request] with
// [FromTurn], calls the Model under the pack's [RetryPolicy] ([ForPack],
// [WithPolicy]) on the host's clock, parses the text with [ParseReply] and
// reports failures with [AsAdapterError]. Nothing here imports a vendor
// SDK, so tests can use fakes that satisfy [Model] without network access.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// Message roles. Tool results travel in their own role so adapters can map
// them to whatever the provider expects (Gemini wants them in a user turn).
const (
	RoleUser  = "user"
	RoleModel = "model"
	RoleTool  = "tool"
)

// Request is one stateless generation call: the whole conversation is sent
// every time, so a retry or a replay needs nothing but this value.
type Request struct {
	// Provider names the vendor the call is for (a pack's provider:),
	// for a Model that routes between vendors; empty is the host's
	// default. Vendor adapters ignore it.
	Provider string `json:"provider,omitempty"`
	// Model overrides the adapter's default model when set.
	Model    string     `json:"model,omitempty"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolDecl `json:"tools,omitempty"`
	// ResponseSchema, when set, asks for JSON output matching this JSON
	// Schema object instead of free text.
	ResponseSchema  json.RawMessage `json:"response_schema,omitempty"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
	// Temperature is a pointer because 0 is a meaningful setting.
	Temperature *float32 `json:"temperature,omitempty"`
}

// Message is one turn of the conversation. Role is one of RoleUser,
// RoleModel or RoleTool; a model turn may carry tool calls and a tool turn
// carries exactly one ToolResult.
type Message struct {
	Role string `json:"role"`
	// Speaker, on a user message, is who said its text when that is a
	// line of the conversation: the person in the session or another
	// agent, by the name the transcript gives them. Empty on the
	// engine's own instructions. Adapters attribute it the way their
	// vendor documents: OpenAI's message name, [Attributed] text where
	// a message has no such field.
	Speaker string `json:"speaker,omitempty"`
	Text    string `json:"text,omitempty"`
	// Blobs are files sent with a user message (PDFs, images, text files).
	Blobs      []Blob      `json:"blobs,omitempty"`
	ToolCalls  []ToolCall  `json:"tool_calls,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

// Blob is an attached file.
type Blob struct {
	Name string `json:"name,omitempty"`
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// ToolDecl declares a function the model may call.
type ToolDecl struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is a function call requested by the model.
type ToolCall struct {
	// ID pairs the call with its ToolResult: the id the model gave, empty
	// when it gave none (the engine then assigns one unique in the
	// session, which later requests carry).
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	// Signature is an opaque provider token (Gemini's thought signature)
	// that must be sent back unchanged with the call in later requests;
	// some models reject a function-call history without it.
	Signature []byte `json:"signature,omitempty"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Content is any JSON value; adapters wrap non-objects as needed.
	Content json.RawMessage `json:"content,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// Response is the outcome of one successful call.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage"`
	// FinishReason is the vendor's own spelling of why the model stopped.
	FinishReason string `json:"finish_reason,omitempty"`
	// Finish is FinishReason in the engine's words when the answer was
	// not whole: engine.FinishTruncated (cut by the token limit) or
	// engine.FinishBlocked (withheld by the vendor); empty otherwise.
	Finish string `json:"finish,omitempty"`
}

// Usage counts tokens as reported by the provider.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Model generates one response. Implementations must be safe for concurrent
// use and must return errors that [Classify] understands (ideally *Error).
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// ModelFunc adapts a function to Model; handy for fakes and middleware.
type ModelFunc func(ctx context.Context, req Request) (Response, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req Request) (Response, error) {
	return f(ctx, req)
}

// AttachmentLabel is the text part every adapter sends right before an
// attached file, so the model knows which file it is reading: its name
// (quoted, so no name can pass for more text) and MIME type. An unnamed
// file is numbered from 1 within its message.
func AttachmentLabel(i int, b Blob) string {
	if b.Name == "" {
		return fmt.Sprintf("Attached file %d (%s):", i+1, b.MIME)
	}
	return fmt.Sprintf("Attached file %q (%s):", b.Name, b.MIME)
}
