package openaifake

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The types below mirror the JSON of POST /chat/completions with the
// reference's snake_case names. They are this package's own, written from
// the reference (the openai-openapi spec's CreateChatCompletionRequest and
// CreateChatCompletionResponse), so a test reading them does not agree
// with an adapter merely because both use the same SDK structs.
//
// Decoding happens after validation (schema.go, semantics.go): a request
// that reaches a Behavior has only documented fields, each of its
// documented type. Fields the fake never looks into are kept as raw JSON.

// Request is a CreateChatCompletionRequest body.
type Request struct {
	// Index is the request's arrival number on its Server, from 0, counting
	// every request the server received (refused ones included).
	Index int `json:"-"`

	Model    string    `json:"model"`
	Messages []Message `json:"messages"`

	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *ResponseFormat `json:"response_format,omitempty"`

	MaxCompletionTokens *int64   `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int64   `json:"max_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	TopP                *float64 `json:"top_p,omitempty"`
	FrequencyPenalty    *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64 `json:"presence_penalty,omitempty"`
	N                   *int64   `json:"n,omitempty"`
	Seed                *int64   `json:"seed,omitempty"`
	Logprobs            *bool    `json:"logprobs,omitempty"`
	TopLogprobs         *int64   `json:"top_logprobs,omitempty"`
	Stream              *bool    `json:"stream,omitempty"`
	Store               *bool    `json:"store,omitempty"`
	ReasoningEffort     string   `json:"reasoning_effort,omitempty"`
	Verbosity           string   `json:"verbosity,omitempty"`
	ServiceTier         string   `json:"service_tier,omitempty"`
	Modalities          []string `json:"modalities,omitempty"`
	User                string   `json:"user,omitempty"`
	SafetyIdentifier    string   `json:"safety_identifier,omitempty"`
	PromptCacheKey      string   `json:"prompt_cache_key,omitempty"`

	Stop                 json.RawMessage   `json:"stop,omitempty"`
	StreamOptions        json.RawMessage   `json:"stream_options,omitempty"`
	Metadata             map[string]string `json:"metadata,omitempty"`
	LogitBias            map[string]int64  `json:"logit_bias,omitempty"`
	Audio                json.RawMessage   `json:"audio,omitempty"`
	Prediction           json.RawMessage   `json:"prediction,omitempty"`
	WebSearchOptions     json.RawMessage   `json:"web_search_options,omitempty"`
	Moderation           json.RawMessage   `json:"moderation,omitempty"`
	PromptCacheRetention string            `json:"prompt_cache_retention,omitempty"`
	PromptCacheOptions   json.RawMessage   `json:"prompt_cache_options,omitempty"`
	FunctionCall         json.RawMessage   `json:"function_call,omitempty"`
	Functions            json.RawMessage   `json:"functions,omitempty"`
}

// Message is one entry of Request.Messages. Which fields may be set
// depends on Role (developer, system, user, assistant, tool, function).
type Message struct {
	Role       string        `json:"role"`
	Content    Content       `json:"content"`
	Name       string        `json:"name,omitempty"`
	ToolCalls  []ToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	Refusal    *string       `json:"refusal,omitempty"`
	Audio      *AudioRef     `json:"audio,omitempty"`
	Function   *FunctionCall `json:"function_call,omitempty"`
}

// AudioRef refers to an earlier audio answer of the model.
type AudioRef struct {
	ID string `json:"id"`
}

// Content is a message's content: a string, a list of parts, or null
// (absent), as the reference allows per role.
type Content struct {
	// Text is set for string content.
	Text *string
	// Parts is set for content given as a list of parts.
	Parts []Part
}

// String returns the content as one text: the string, or the text of the
// text (and refusal) parts joined.
func (c Content) String() string {
	if c.Text != nil {
		return *c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		b.WriteString(p.Text + p.Refusal)
	}
	return b.String()
}

// IsZero reports absent or null content.
func (c Content) IsZero() bool { return c.Text == nil && c.Parts == nil }

// UnmarshalJSON reads a string, a list of parts, or null.
func (c *Content) UnmarshalJSON(data []byte) error {
	t := bytes.TrimSpace(data)
	switch {
	case bytes.Equal(t, []byte("null")):
		*c = Content{}
		return nil
	case len(t) > 0 && t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return err
		}
		*c = Content{Text: &s}
		return nil
	}
	var parts []Part
	if err := json.Unmarshal(t, &parts); err != nil {
		return fmt.Errorf("openaifake: content is neither a string nor a list of parts: %w", err)
	}
	if parts == nil {
		parts = []Part{}
	}
	*c = Content{Parts: parts}
	return nil
}

// MarshalJSON writes the string, the parts, or null.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Text != nil:
		return json.Marshal(*c.Text)
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return []byte("null"), nil
}

// Part is one content part; Type says which field is set: "text",
// "image_url", "input_audio", "file" or (assistant only) "refusal".
type Part struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	Refusal    string      `json:"refusal,omitempty"`
	ImageURL   *ImageURL   `json:"image_url,omitempty"`
	InputAudio *InputAudio `json:"input_audio,omitempty"`
	File       *File       `json:"file,omitempty"`
	// PromptCacheBreakpoint marks the end of a reusable prompt prefix.
	PromptCacheBreakpoint json.RawMessage `json:"prompt_cache_breakpoint,omitempty"`
}

// ImageURL is an image by URL or as a data URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// InputAudio is base64 audio.
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// File is a file by content (FileData, with Filename) or by uploaded ID.
type File struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
}

// ToolCall is a call in an assistant message (or a response): a function
// call, or a custom tool call.
type ToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *FunctionCall `json:"function,omitempty"`
	Custom   *CustomCall   `json:"custom,omitempty"`
}

// FunctionCall names a function and gives its arguments as a JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// CustomCall is a call of a custom (free-form input) tool.
type CustomCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// Tool is a declared tool: a function, or a custom tool.
type Tool struct {
	Type     string          `json:"type"`
	Function *Function       `json:"function,omitempty"`
	Custom   json.RawMessage `json:"custom,omitempty"`
}

// Function declares a function; Parameters is a JSON Schema object.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseFormat is the output format: "text", "json_object" or
// "json_schema" (with JSONSchema).
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a named JSON Schema for structured output.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Response is a CreateChatCompletionResponse body.
type Response struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	ServiceTier       string   `json:"service_tier,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
}

// Choice is one generated answer. Logprobs is always null here.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the model's message. Content and Refusal are required
// and nullable, so they are written as null when absent.
type ResponseMessage struct {
	Role        string     `json:"role"`
	Content     *string    `json:"content"`
	Refusal     *string    `json:"refusal"`
	ToolCalls   []ToolCall `json:"tool_calls,omitempty"`
	Annotations []any      `json:"annotations"`
}

// Usage counts tokens; CompletionTokens includes reasoning tokens.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails breaks down the prompt tokens.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

// CompletionTokensDetails breaks down the completion tokens.
type CompletionTokensDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// ErrorBody is the body of a failed call:
// {"error":{"message":...,"type":...,"param":...,"code":...}}, where param
// and code are null when they do not apply.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the inner object of ErrorBody.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
