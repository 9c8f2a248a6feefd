package anthropicfake

import (
	"encoding/base64"
	"encoding/json"
)

// The types below mirror the JSON of POST /v1/messages with the reference's
// snake_case names. They are this package's own, written from the
// reference, so a test reading them does not agree with an adapter merely
// because both use the same SDK structs.
//
// A body is decoded into them only after it passed validation (schema.go),
// and after the reference's shorthands were expanded: a string given for
// message content, for system or for a tool result's content is a list of
// one text block here.

// Request is a Messages request body.
type Request struct {
	// Index is the request's arrival number on its Server, from 0, counting
	// every request the server received (refused ones included).
	Index int `json:"-"`

	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	Messages      []Message       `json:"messages"`
	System        []Block         `json:"system,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
	Thinking      *Thinking       `json:"thinking,omitempty"`
	OutputConfig  *OutputConfig   `json:"output_config,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        *bool           `json:"stream,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	ServiceTier   string          `json:"service_tier,omitempty"`
	Speed         string          `json:"speed,omitempty"`
	InferenceGeo  string          `json:"inference_geo,omitempty"`
	Container     json.RawMessage `json:"container,omitempty"`
	CacheControl  json.RawMessage `json:"cache_control,omitempty"`
	Diagnostics   json.RawMessage `json:"diagnostics,omitempty"`
}

// Message is one input turn: role "user" or "assistant" and its blocks.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block; Type says which fields are set: "text"
// (Text), "image" and "document" (Source, and Title and Context for a
// document), "tool_use" (ID, Name, Input), "tool_result" (ToolUseID,
// Content, IsError), "thinking" (Thinking, Signature), "redacted_thinking"
// (Data), "search_result" (Content, Source as a string in SourceName, Title)
// or "tool_reference" (ToolName).
type Block struct {
	Type string `json:"type"`

	Text      string          `json:"text,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`

	Source          *Source         `json:"-"`
	SourceName      string          `json:"-"`
	RawSource       json.RawMessage `json:"source,omitempty"`
	Title           *string         `json:"title,omitempty"`
	Context         *string         `json:"context,omitempty"`
	Transformations json.RawMessage `json:"transformations,omitempty"`

	ID          string          `json:"id,omitempty"`
	Name        string          `json:"name,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Caller      json.RawMessage `json:"caller,omitempty"`
	ToolsetName string          `json:"toolset_name,omitempty"`

	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   []Block `json:"content,omitempty"`
	IsError   *bool   `json:"is_error,omitempty"`

	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	ToolName string `json:"tool_name,omitempty"`

	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// UnmarshalJSON reads "source", an object for images and documents and a
// string for search results.
func (b *Block) UnmarshalJSON(data []byte) error {
	type plain Block
	if err := json.Unmarshal(data, (*plain)(b)); err != nil {
		return err
	}
	if len(b.RawSource) == 0 {
		return nil
	}
	if b.Type == "search_result" {
		return json.Unmarshal(b.RawSource, &b.SourceName)
	}
	b.Source = new(Source)
	return json.Unmarshal(b.RawSource, b.Source)
}

// Source is where an image's or a document's data comes from: Type
// "base64" (MediaType, Data in base64), "text" (MediaType "text/plain",
// Data as is), "content" (Content), "url" (URL) or "file" (FileID).
type Source struct {
	Type      string  `json:"type"`
	MediaType string  `json:"media_type,omitempty"`
	Data      string  `json:"data,omitempty"`
	Content   []Block `json:"-"`
	URL       string  `json:"url,omitempty"`
	FileID    string  `json:"file_id,omitempty"`

	RawContent json.RawMessage `json:"content,omitempty"`
}

// UnmarshalJSON reads a content source's "content", a string or blocks.
func (s *Source) UnmarshalJSON(data []byte) error {
	type plain Source
	if err := json.Unmarshal(data, (*plain)(s)); err != nil {
		return err
	}
	if len(s.RawContent) == 0 {
		return nil
	}
	var text string
	if json.Unmarshal(s.RawContent, &text) == nil {
		s.Content = []Block{{Type: "text", Text: text}}
		return nil
	}
	return json.Unmarshal(s.RawContent, &s.Content)
}

// Bytes returns the data a source carries inline: decoded base64, or the
// text of a plain text source.
func (s *Source) Bytes() []byte {
	switch s.Type {
	case "base64":
		b, _ := decodeBase64(s.Data)
		return b
	case "text":
		return []byte(s.Data)
	}
	return nil
}

// Tool is a tool declaration. Type is "" or "custom" for a client tool,
// the only kind this fake models.
type Tool struct {
	Type                string            `json:"type,omitempty"`
	Name                string            `json:"name"`
	Description         string            `json:"description,omitempty"`
	InputSchema         json.RawMessage   `json:"input_schema"`
	Strict              *bool             `json:"strict,omitempty"`
	EagerInputStreaming *bool             `json:"eager_input_streaming,omitempty"`
	DeferLoading        *bool             `json:"defer_loading,omitempty"`
	AllowedCallers      []string          `json:"allowed_callers,omitempty"`
	InputExamples       []json.RawMessage `json:"input_examples,omitempty"`
	CacheControl        json.RawMessage   `json:"cache_control,omitempty"`
}

// ToolChoice says how the model may use tools: "auto", "any", "tool"
// (Name) or "none".
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking configures extended thinking: "enabled" (BudgetTokens),
// "disabled", "adaptive" or "between_tools".
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

// OutputConfig holds the effort level and the structured output format.
type OutputConfig struct {
	Effort string        `json:"effort,omitempty"`
	Format *OutputFormat `json:"format,omitempty"`
}

// OutputFormat asks for JSON output following Schema.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// Response is the body of a successful call.
type Response struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []OutBlock      `json:"content"`
	StopReason   string          `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        Usage           `json:"usage"`
	Container    json.RawMessage `json:"container"`
}

// OutBlock is a content block of a response: "text" (Text), "tool_use"
// (ID, Name, Input), "thinking" (Thinking, Signature) or
// "redacted_thinking" (Data).
type OutBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

// Usage counts tokens. InputTokens excludes tokens read from or written to
// the prompt cache, which have their own counts.
type Usage struct {
	InputTokens              int    `json:"input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// ErrorBody is the body of a failed call:
// {"type":"error","error":{"type":"rate_limit_error","message":"..."},"request_id":"req_..."}.
type ErrorBody struct {
	Type      string      `json:"type"`
	Error     ErrorObject `json:"error"`
	RequestID string      `json:"request_id,omitempty"`
}

// ErrorObject is the inner object of ErrorBody.
type ErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// decodeBase64 reads standard base64, padded, the form the reference's
// "format: byte" fields take.
func decodeBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}
