package geminifake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The types below mirror the REST JSON of models.generateContent, field for
// field with the reference's lowerCamelCase names. They are this package's
// own, written from the reference, so a test reading them does not agree
// with an adapter merely because both use the same SDK structs.
//
// Request decoding happens after validation: a request that reaches a
// Behavior has only documented fields, and snake_case spellings (which the
// service also accepts, as every proto3 JSON endpoint does) have been
// rewritten to their lowerCamelCase names.

// Request is a GenerateContentRequest body, plus what the URL carried.
type Request struct {
	// Model is the {model} path segment, e.g. "gemini-3.8-flash".
	Model string `json:"-"`
	// Index is the request's arrival number on its Server, from 0, counting
	// every request the server received (rejected ones included).
	Index int `json:"-"`

	Contents          []Content         `json:"contents"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	SafetySettings    []SafetySetting   `json:"safetySettings,omitempty"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
}

// Content is one turn: a role ("user" or "model") and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn. Exactly one of Text, InlineData,
// FunctionCall, FunctionResponse, FileData, ExecutableCode and
// CodeExecutionResult is set (the reference's "data" union). Text is a
// pointer because an empty string is a set text part.
type Part struct {
	Text                *string              `json:"text,omitempty"`
	InlineData          *Blob                `json:"inlineData,omitempty"`
	FunctionCall        *FunctionCall        `json:"functionCall,omitempty"`
	FunctionResponse    *FunctionResponse    `json:"functionResponse,omitempty"`
	FileData            *FileData            `json:"fileData,omitempty"`
	ExecutableCode      *ExecutableCode      `json:"executableCode,omitempty"`
	CodeExecutionResult *CodeExecutionResult `json:"codeExecutionResult,omitempty"`
	VideoMetadata       *VideoMetadata       `json:"videoMetadata,omitempty"`
	Thought             bool                 `json:"thought,omitempty"`
	ThoughtSignature    Bytes                `json:"thoughtSignature,omitempty"`
	PartMetadata        json.RawMessage      `json:"partMetadata,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// TextOf returns the part's text, "" when it is not a text part.
func (p Part) TextOf() string {
	if p.Text == nil {
		return ""
	}
	return *p.Text
}

// Blob is inline media. The reference documents two fields only.
type Blob struct {
	MIMEType string `json:"mimeType"`
	Data     Bytes  `json:"data"`
}

// FileData refers to a file by URI.
type FileData struct {
	MIMEType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// VideoMetadata narrows a video part.
type VideoMetadata struct {
	StartOffset string   `json:"startOffset,omitempty"`
	EndOffset   string   `json:"endOffset,omitempty"`
	FPS         *float64 `json:"fps,omitempty"`
}

// ExecutableCode is code the model wrote for the code execution tool.
type ExecutableCode struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// CodeExecutionResult is the outcome of ExecutableCode.
type CodeExecutionResult struct {
	Outcome string `json:"outcome"`
	Output  string `json:"output,omitempty"`
}

// FunctionCall is a call the model asks the client to make. ID is
// optional: the model may or may not give one.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse answers a FunctionCall; Response is a JSON object.
type FunctionResponse struct {
	ID           string                 `json:"id,omitempty"`
	Name         string                 `json:"name"`
	Response     json.RawMessage        `json:"response"`
	Parts        []FunctionResponsePart `json:"parts,omitempty"`
	WillContinue bool                   `json:"willContinue,omitempty"`
	Scheduling   string                 `json:"scheduling,omitempty"`
}

// FunctionResponsePart is media returned with a function response.
type FunctionResponsePart struct {
	InlineData *Blob `json:"inlineData,omitempty"`
}

// Tool is one entry of Request.Tools. Only function declarations are
// typed; the service's built-in tools are kept as raw JSON.
type Tool struct {
	FunctionDeclarations  []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	GoogleSearchRetrieval json.RawMessage       `json:"googleSearchRetrieval,omitempty"`
	CodeExecution         json.RawMessage       `json:"codeExecution,omitempty"`
	GoogleSearch          json.RawMessage       `json:"googleSearch,omitempty"`
	ComputerUse           json.RawMessage       `json:"computerUse,omitempty"`
	URLContext            json.RawMessage       `json:"urlContext,omitempty"`
	FileSearch            json.RawMessage       `json:"fileSearch,omitempty"`
	GoogleMaps            json.RawMessage       `json:"googleMaps,omitempty"`
}

// FunctionDeclaration declares a function. Parameters uses the reference's
// OpenAPI subset; ParametersJSONSchema takes any JSON Schema.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Response             json.RawMessage `json:"response,omitempty"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema,omitempty"`
	Behavior             string          `json:"behavior,omitempty"`
}

// ToolConfig configures tool use.
type ToolConfig struct {
	FunctionCallingConfig *FunctionCallingConfig `json:"functionCallingConfig,omitempty"`
	RetrievalConfig       json.RawMessage        `json:"retrievalConfig,omitempty"`
}

// FunctionCallingConfig sets the function calling mode.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// SafetySetting sets one harm category's threshold.
type SafetySetting struct {
	Category  string `json:"category"`
	Threshold string `json:"threshold"`
}

// GenerationConfig is the generation options. Numbers are pointers so an
// explicit zero can be told from an absent field.
type GenerationConfig struct {
	CandidateCount             *int            `json:"candidateCount,omitempty"`
	StopSequences              []string        `json:"stopSequences,omitempty"`
	MaxOutputTokens            *int            `json:"maxOutputTokens,omitempty"`
	Temperature                *float64        `json:"temperature,omitempty"`
	TopP                       *float64        `json:"topP,omitempty"`
	TopK                       *int            `json:"topK,omitempty"`
	Seed                       *int            `json:"seed,omitempty"`
	ResponseMIMEType           string          `json:"responseMimeType,omitempty"`
	ResponseSchema             json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchemaLegacy   json.RawMessage `json:"_responseJsonSchema,omitempty"`
	ResponseJSONSchema         json.RawMessage `json:"responseJsonSchema,omitempty"`
	PresencePenalty            *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty           *float64        `json:"frequencyPenalty,omitempty"`
	ResponseLogprobs           *bool           `json:"responseLogprobs,omitempty"`
	Logprobs                   *int            `json:"logprobs,omitempty"`
	EnableEnhancedCivicAnswers *bool           `json:"enableEnhancedCivicAnswers,omitempty"`
	ResponseModalities         []string        `json:"responseModalities,omitempty"`
	SpeechConfig               json.RawMessage `json:"speechConfig,omitempty"`
	ThinkingConfig             *ThinkingConfig `json:"thinkingConfig,omitempty"`
	ImageConfig                json.RawMessage `json:"imageConfig,omitempty"`
	MediaResolution            string          `json:"mediaResolution,omitempty"`
}

// ThinkingConfig configures thinking: a token budget (Gemini 2.5) or a
// level (Gemini 3).
type ThinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// Response is a GenerateContentResponse body.
type Response struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one generated answer.
type Candidate struct {
	Content      *Content `json:"content,omitempty"`
	FinishReason string   `json:"finishReason,omitempty"`
	Index        int      `json:"index"`
}

// PromptFeedback says why a prompt was blocked.
type PromptFeedback struct {
	BlockReason string `json:"blockReason,omitempty"`
}

// UsageMetadata counts tokens.
type UsageMetadata struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount   int `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

// ErrorBody is the body of a failed call, in Google's shape:
// {"error":{"code":400,"message":"...","status":"INVALID_ARGUMENT"}}.
type ErrorBody struct {
	Error ErrorStatus `json:"error"`
}

// ErrorStatus is the inner object of ErrorBody.
type ErrorStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	// Details are google.rpc detail messages, each with its "@type".
	Details []any `json:"details,omitempty"`
}

// RetryInfoType is the "@type" of a google.rpc.RetryInfo detail.
const RetryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// RetryInfo is the detail a 429 carries to say when to come back:
// {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"},
// the delay a protobuf Duration in its JSON form (seconds, "s"-suffixed).
func RetryInfo(d time.Duration) map[string]any {
	return map[string]any{"@type": RetryInfoType, "retryDelay": strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"}
}

// Bytes is a bytes field of the REST JSON: a base64 string on the wire.
// Like the service it reads the standard and the URL-safe alphabet, padded
// or not; it writes standard padded base64.
type Bytes []byte

// MarshalJSON writes standard base64.
func (b Bytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON reads any base64 alphabet the service reads.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	d, ok := decodeBase64(s)
	if !ok {
		return fmt.Errorf("geminifake: invalid base64 %q", s)
	}
	*b = d
	return nil
}

// decodeBase64 reads s in any of the four base64 forms proto3 JSON allows.
func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(s); err == nil {
			return d, true
		}
	}
	return nil, false
}
