package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

func badRequest(format string, args ...any) *llm.Error {
	return llm.NewError(llm.KindBadRequest, 0, nil, "openai: "+format, args...)
}

// ResponseFormatName names the JSON schema of Request.ResponseSchema on the
// wire, where a name is required.
const ResponseFormatName = "response"

// toParams converts a request. Invalid input (unknown role, a tool call
// without an ID, args or results that are not JSON, a file type the API
// cannot take) is a bad_request error raised here, before any network
// traffic.
//
// The wire uses only what the Chat Completions reference documents:
//
//   - System is a "system" message first. Newer OpenAI models read it as
//     a "developer" message, and unlike "developer" every compatible
//     server knows it.
//   - A user message is its text, then for each attached file a text part
//     naming it (AttachmentLabel) right before the file's own part (see
//     filePart): the wire's parts carry no name a model reads.
//   - A user message another speaker said (Speaker) carries their name
//     in the message's name, which the reference gives "to differentiate
//     between participants of the same role", made to fit its pattern
//     (participantName); a name with nothing left to send goes as
//     llm.Attributed text instead.
//   - A model message is one assistant message: its text (when any) and a
//     function tool call per llm.ToolCall, each with its ID, which the API
//     requires: the engine gives calls without one an ID of its own.
//   - A tool message is a "tool" message answering its call by ID (see
//     toolContent).
//
// A message with nothing to send (no text, files or calls) is left out,
// since an assistant message needs content or tool calls.
func toParams(model string, req llm.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:    model,
		Messages: make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1),
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	sent := 0
	for i, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleUser:
			if msg.Text == "" && len(msg.Blobs) == 0 {
				continue
			}
			name, text := participant(msg)
			msg.Text = text
			u := sdk.UserMessage(msg.Text)
			if len(msg.Blobs) > 0 {
				parts, err := userParts(msg)
				if err != nil {
					return p, badRequest("message %d: %v", i, err)
				}
				u = sdk.UserMessage(parts)
			}
			if name != "" {
				u.OfUser.Name = param.NewOpt(name)
			}
			p.Messages = append(p.Messages, u)
		case llm.RoleModel:
			if msg.Text == "" && len(msg.ToolCalls) == 0 {
				continue
			}
			var a sdk.ChatCompletionAssistantMessageParam
			if msg.Text != "" {
				a.Content.OfString = param.NewOpt(msg.Text)
			}
			for _, tc := range msg.ToolCalls {
				call, err := toolCallParam(tc)
				if err != nil {
					return p, badRequest("message %d: %v", i, err)
				}
				a.ToolCalls = append(a.ToolCalls, call)
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.RoleTool:
			r := msg.ToolResult
			if r == nil {
				return p, badRequest("message %d: tool message without a tool result", i)
			}
			if r.CallID == "" {
				return p, badRequest("message %d: tool result for %q has no call ID", i, r.Name)
			}
			content, err := toolContent(*r)
			if err != nil {
				return p, badRequest("message %d: %v", i, err)
			}
			p.Messages = append(p.Messages, sdk.ToolMessage(content, r.CallID))
		default:
			return p, badRequest("message %d: unknown role %q", i, msg.Role)
		}
		sent++
	}
	if sent == 0 {
		return p, badRequest("no message has anything to send")
	}

	if req.MaxOutputTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(int64(req.MaxOutputTokens))
	}
	if t := req.Temperature; t != nil {
		if math.IsNaN(float64(*t)) || math.IsInf(float64(*t), 0) {
			return p, badRequest("temperature %v is not a number", *t)
		}
		p.Temperature = param.NewOpt(decimal(*t))
	}
	tools, err := toolParams(req.Tools)
	if err != nil {
		return p, badRequest("%v", err)
	}
	p.Tools = tools
	if len(req.ResponseSchema) > 0 {
		if !isJSONObject(req.ResponseSchema) {
			return p, badRequest("response schema is not a JSON object")
		}
		// Not strict: strict mode accepts only a subset of JSON Schema
		// (every property required, additionalProperties false), so it
		// would refuse or rewrite schemas a pack author wrote for any
		// vendor. The schema goes as given, bytes included.
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   ResponseFormatName,
				Schema: json.RawMessage(bytes.TrimSpace(req.ResponseSchema)),
			},
		}
	}
	return p, nil
}

// participant is the name and text of a user message: the speaker's name
// as the wire's name when there is one, else the text attributed.
func participant(msg llm.Message) (name, text string) {
	if msg.Speaker == "" {
		return "", msg.Text
	}
	if name = participantName(msg.Speaker); name == "" {
		return "", llm.Attributed(msg.Speaker, msg.Text)
	}
	return name, msg.Text
}

// participantName fits a speaker's name to the pattern the reference
// gives a message name, ^[a-zA-Z0-9_-]{1,64}$: a run of other characters
// (a space, an apostrophe) becomes one underscore, and the name is cut to
// 64 bytes. It is empty when no letter or digit is left, since a name of
// underscores tells one participant from no other.
func participantName(speaker string) string {
	var b strings.Builder
	letters, gap := false, false
	for _, r := range strings.TrimSpace(speaker) {
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			letters = true
		case r == '_' || r == '-':
		default:
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte('_')
		}
		gap = false
		b.WriteRune(r)
	}
	if !letters {
		return ""
	}
	name := b.String()
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// decimal widens a float32 by its shortest decimal form, so 0.1 goes on
// the wire as 0.1 rather than 0.10000000149011612.
func decimal(f float32) float64 {
	d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return d
}

// userParts builds the content parts of a user message with files.
func userParts(msg llm.Message) ([]sdk.ChatCompletionContentPartUnionParam, error) {
	parts := make([]sdk.ChatCompletionContentPartUnionParam, 0, 1+2*len(msg.Blobs))
	if msg.Text != "" {
		parts = append(parts, sdk.TextContentPart(msg.Text))
	}
	for j, b := range msg.Blobs {
		fp, err := filePart(b)
		if err != nil {
			return nil, fmt.Errorf("file %d %q: %w", j+1, b.Name, err)
		}
		parts = append(parts, sdk.TextContentPart(llm.AttachmentLabel(j, b)), fp)
	}
	return parts, nil
}

// Chat Completions takes files in three shapes only, and anything else is
// refused here rather than by the server:
//
//   - images (PNG, JPEG, WEBP, GIF) as image_url parts holding a data URL;
//   - PDFs as file parts holding a data URL and the file name; the
//     reference accepts no other file type there;
//   - WAV and MP3 audio as input_audio parts.
//
// Text files (text/*, JSON, XML, YAML) travel as a text part holding the
// file's contents, which is what the file-inputs guide tells Chat
// Completions callers to do; the label before it still names the file.
var (
	imageMIME = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/gif": true}
	audioMIME = map[string]string{"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
	textMIME  = map[string]bool{"application/json": true, "application/xml": true, "application/yaml": true, "application/x-yaml": true}
)

const pdfMIME = "application/pdf"

func filePart(b llm.Blob) (sdk.ChatCompletionContentPartUnionParam, error) {
	mt, _, err := mime.ParseMediaType(b.MIME)
	if err != nil {
		return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("invalid MIME type %q", b.MIME)
	}
	switch {
	case imageMIME[mt]:
		return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(mt, b.Data)}), nil
	case mt == pdfMIME:
		name := b.Name
		if name == "" {
			// The API requires a file name with file data.
			name = "attachment.pdf"
		}
		return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
			Filename: param.NewOpt(name),
			FileData: param.NewOpt(dataURL(mt, b.Data)),
		}), nil
	case audioMIME[mt] != "":
		return sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{
			Data:   base64.StdEncoding.EncodeToString(b.Data),
			Format: audioMIME[mt],
		}), nil
	case strings.HasPrefix(mt, "text/") || textMIME[mt]:
		if !utf8.Valid(b.Data) {
			return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("a %s file must be UTF-8 text", mt)
		}
		return sdk.TextContentPart(string(b.Data)), nil
	}
	return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("the Chat Completions API cannot take %s files (only images, PDFs, WAV or MP3 audio and text)", mt)
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// toolCallParam converts a tool call from history. Its arguments go back
// as the model gave them, so a history repeats byte for byte across turns
// (which keeps the provider's prompt cache warm).
func toolCallParam(tc llm.ToolCall) (sdk.ChatCompletionMessageToolCallUnionParam, error) {
	if tc.ID == "" {
		return sdk.ChatCompletionMessageToolCallUnionParam{}, fmt.Errorf("tool call %q has no ID", tc.Name)
	}
	if tc.Name == "" {
		return sdk.ChatCompletionMessageToolCallUnionParam{}, fmt.Errorf("tool call %q has no name", tc.ID)
	}
	args := bytes.TrimSpace(tc.Args)
	if len(args) == 0 {
		args = []byte("{}")
	} else if !isJSONObject(args) {
		return sdk.ChatCompletionMessageToolCallUnionParam{}, fmt.Errorf("tool call %q args are not a JSON object", tc.Name)
	}
	return sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
		ID:       tc.ID,
		Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(args)},
	}}, nil
}

// toolContent is the text of a tool message: the result's JSON, compacted.
// The wire has no error flag, so an error result must say so itself: an
// object that already has an "error" key (the engine's refusals are
// {"error": "..."}) is sent as it is, anything else is wrapped once as
// {"error": v}. A result with no content is null.
func toolContent(r llm.ToolResult) (string, error) {
	raw := bytes.TrimSpace(r.Content)
	if len(raw) == 0 {
		raw = []byte("null")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", fmt.Errorf("tool result %q content is not JSON: %w", r.Name, err)
	}
	if r.IsError && !hasErrorKey(buf.Bytes()) {
		wrapped := make([]byte, 0, buf.Len()+10)
		wrapped = append(wrapped, `{"error":`...)
		wrapped = append(append(wrapped, buf.Bytes()...), '}')
		return string(wrapped), nil
	}
	return buf.String(), nil
}

func hasErrorKey(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	_, ok := obj["error"]
	return ok
}

// toolParams converts declarations to function tools. The parameters
// schema goes through as raw JSON values, so a pack author's schema
// reaches the model as written rather than squeezed into SDK types.
func toolParams(decls []llm.ToolDecl) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(decls) == 0 {
		return nil, nil
	}
	tools := make([]sdk.ChatCompletionToolUnionParam, 0, len(decls))
	for _, d := range decls {
		if d.Name == "" {
			return nil, fmt.Errorf("tool declaration without a name")
		}
		fd := shared.FunctionDefinitionParam{Name: d.Name}
		if d.Description != "" {
			fd.Description = param.NewOpt(d.Description)
		}
		if len(bytes.TrimSpace(d.Parameters)) > 0 {
			var props map[string]json.RawMessage
			if !isJSONObject(d.Parameters) || json.Unmarshal(d.Parameters, &props) != nil {
				return nil, fmt.Errorf("tool %q parameters are not a JSON object", d.Name)
			}
			fd.Parameters = make(shared.FunctionParameters, len(props))
			for k, v := range props {
				fd.Parameters[k] = v
			}
		}
		tools = append(tools, sdk.ChatCompletionFunctionTool(fd))
	}
	return tools, nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// malformed reports a 2xx body that cannot be used. It is a server fault
// and retryable: the request was accepted, and a truncated or garbled body
// is usually a transient proxy or backend hiccup rather than something a
// different request would fix.
func malformed(cause error, format string, args ...any) *llm.Error {
	return llm.NewError(llm.KindServer, 0, cause, "openai: malformed response body: "+format, args...)
}

// decodeResponse reads a successful body into a Response: the first
// choice's text, its function calls with the IDs the model gave them,
// usage and finish reason. The SDK's decoder is lenient (it fills what it
// can and marks the rest invalid), so the shape is checked here: anything
// but a JSON object with a list of choices whose first message has text or
// calls of the documented types is malformed.
func decodeResponse(body []byte) (resp llm.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = llm.Response{}, malformed(fmt.Errorf("%w: %v", ErrSDKPanic, r), "the SDK panicked decoding it")
		}
	}()
	if !json.Valid(body) {
		return llm.Response{}, malformed(nil, "not valid JSON (%d bytes)", len(body))
	}
	var c sdk.ChatCompletion
	if err := c.UnmarshalJSON(body); err != nil {
		return llm.Response{}, malformed(err, "%v", firstLine(err.Error()))
	}
	if !c.JSON.Choices.Valid() {
		return llm.Response{}, malformed(nil, "no list of choices")
	}
	if u := c.Usage; c.JSON.Usage.Valid() {
		resp.Usage = llm.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens)}
	}
	if len(c.Choices) == 0 {
		return resp, malformed(nil, "no choices")
	}
	ch := c.Choices[0]
	msg := ch.Message
	switch {
	case !ch.JSON.Message.Valid():
		return resp, malformed(nil, "choice 0 has no message")
	case notString(msg.JSON.Content), notString(msg.JSON.Refusal), notString(ch.JSON.FinishReason), wrongType(msg.JSON.ToolCalls):
		return resp, malformed(nil, "choice 0 has a field of the wrong type")
	}
	resp.FinishReason = ch.FinishReason
	switch ch.FinishReason {
	case "length":
		resp.Finish = engine.FinishTruncated
	case "content_filter":
		resp.Finish = engine.FinishBlocked
	}
	if msg.Content == "" && msg.Refusal != "" {
		// A refusal is not a line the agent can say: the answer is
		// withheld, and the engine asks once more before its fallback.
		resp.Finish = engine.FinishBlocked
		return resp, nil
	}
	resp.Text = msg.Content
	for i, tc := range msg.ToolCalls {
		call, err := fromToolCall(tc)
		if err != nil {
			return resp, malformed(nil, "tool call %d: %v", i, err)
		}
		resp.ToolCalls = append(resp.ToolCalls, call)
	}
	return resp, nil
}

// wrongType reports a field that is present but not of its documented type
// (the SDK decodes such a field as its zero value).
func wrongType(f respjson.Field) bool {
	return !f.Valid() && f.Raw() != respjson.Omitted && f.Raw() != respjson.Null
}

// notString reports a field documented as a string (or null) that holds
// another JSON value. The SDK's decoder turns a number into its digits and
// calls that valid, so the raw JSON is what tells.
func notString(f respjson.Field) bool {
	raw := f.Raw()
	return raw != respjson.Omitted && raw != respjson.Null && raw[0] != '"'
}

// fromToolCall converts a function call. Arguments are kept byte for byte
// (see toolCallParam); arguments that are not a JSON object make the
// response unusable, since the engine could neither run the call nor send
// it back, and a new attempt usually gets valid ones.
func fromToolCall(tc sdk.ChatCompletionMessageToolCallUnion) (llm.ToolCall, error) {
	if tc.Type != "function" {
		return llm.ToolCall{}, fmt.Errorf("type %q, want function", tc.Type)
	}
	fn := tc.Function
	switch {
	case tc.ID == "" || notString(tc.JSON.ID):
		return llm.ToolCall{}, fmt.Errorf("no ID")
	case fn.Name == "" || notString(fn.JSON.Name):
		return llm.ToolCall{}, fmt.Errorf("no function name")
	case notString(fn.JSON.Arguments):
		return llm.ToolCall{}, fmt.Errorf("arguments of %s are not a string", fn.Name)
	}
	args := json.RawMessage(fn.Arguments)
	if strings.TrimSpace(fn.Arguments) == "" {
		args = json.RawMessage("{}")
	} else if !isJSONObject(args) {
		return llm.ToolCall{}, fmt.Errorf("arguments of %s are not a JSON object: %.80q", fn.Name, fn.Arguments)
	}
	return llm.ToolCall{ID: tc.ID, Name: fn.Name, Args: args}, nil
}
