package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

func badRequest(format string, args ...any) *llm.Error {
	return llm.NewError(llm.KindBadRequest, 0, nil, "anthropic: "+format, args...)
}

// toParams converts a request. Invalid input (unknown role, a call or
// result without an ID, args that are not a JSON object, a file type the
// API does not read, malformed schemas) is a bad_request error raised
// here, before any network traffic.
//
// The wire uses only what the Messages API reference documents:
//
//   - A user message is its text, then for each attached file a text block
//     naming it (AttachmentLabel) right before the file's block: an image
//     block (base64) for JPEG, PNG, GIF and WebP, a document block for a
//     PDF (base64) or a text file (plain text source), titled with the
//     file's name. Images have no field for a name, so the label gives
//     every file its name and type the same way.
//   - A user message another speaker said (Speaker) is their words as
//     llm.Attributed text: the API has no field for a participant's name.
//   - A model message is one assistant turn: its text (when any), then a
//     tool_use block per call, in order, each with the call's ID.
//   - A tool message is a tool_result block with the call's ID, its content
//     the result's JSON text exactly as the engine wrote it (a refusal is
//     already {"error": ...} and must not be wrapped again) and is_error
//     set for a failed call. Consecutive tool results are one user turn,
//     in call order, as the API wants the answers to parallel calls.
//
// Consecutive messages that map to the same role are merged into one
// turn. The API reference says it combines them itself, but Claude on
// other platforms has required strictly alternating turns, and the model
// reads the same either way. A message with nothing to send
// (no text, files or calls) is left out, as is blank text: the API refuses
// empty and whitespace-only text blocks.
func toParams(req llm.Request, model string) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: model, MaxTokens: maxTokens(req.MaxOutputTokens)}
	msgs := make([]sdk.MessageParam, 0, len(req.Messages))
	for i, msg := range req.Messages {
		role, blocks, err := blocksOf(msg)
		if err != nil {
			return sdk.MessageNewParams{}, badRequest("message %d: %v", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			continue
		}
		msgs = append(msgs, sdk.MessageParam{Role: role, Content: blocks})
	}
	if len(msgs) == 0 {
		return sdk.MessageNewParams{}, badRequest("no message has anything to send")
	}
	p.Messages = msgs
	if hasText(req.System) {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, d := range req.Tools {
		tool, err := toolParam(d)
		if err != nil {
			return sdk.MessageNewParams{}, badRequest("%v", err)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	if len(bytes.TrimSpace(req.ResponseSchema)) > 0 {
		format, err := outputFormat(req.ResponseSchema)
		if err != nil {
			return sdk.MessageNewParams{}, badRequest("response schema: %v", err)
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: format}
	}
	if t := req.Temperature; t != nil {
		p.Temperature = param.NewOpt(decimal(*t))
	}
	return p, nil
}

// maxTokens is the max_tokens to send: the request's cap, or
// DefaultMaxTokens when it sets none.
func maxTokens(n int) int64 {
	if n <= 0 {
		return DefaultMaxTokens
	}
	return int64(n)
}

// decimal widens a float32 to the float64 whose shortest decimal form is
// the float32's, so 0.7 goes on the wire as 0.7, not 0.699999988079071.
func decimal(f float32) float64 {
	d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return d
}

func hasText(s string) bool { return strings.TrimSpace(s) != "" }

func textBlock(s string) sdk.ContentBlockParamUnion {
	return sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: s}}
}

// blocksOf converts one message to its role and blocks.
func blocksOf(msg llm.Message) (sdk.MessageParamRole, []sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	switch msg.Role {
	case llm.RoleUser:
		if hasText(msg.Text) {
			blocks = append(blocks, textBlock(llm.Attributed(msg.Speaker, msg.Text)))
		}
		for j, b := range msg.Blobs {
			file, err := fileBlock(b)
			if err != nil {
				return "", nil, fmt.Errorf("file %d: %w", j+1, err)
			}
			blocks = append(blocks, textBlock(llm.AttachmentLabel(j, b)), file)
		}
		return sdk.MessageParamRoleUser, blocks, nil
	case llm.RoleModel:
		if hasText(msg.Text) {
			blocks = append(blocks, textBlock(msg.Text))
		}
		for _, tc := range msg.ToolCalls {
			use, err := toolUse(tc)
			if err != nil {
				return "", nil, err
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: use})
		}
		return sdk.MessageParamRoleAssistant, blocks, nil
	case llm.RoleTool:
		if msg.ToolResult == nil {
			return "", nil, fmt.Errorf("tool message without a tool result")
		}
		res, err := toolResult(*msg.ToolResult)
		if err != nil {
			return "", nil, err
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{{OfToolResult: res}}, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", msg.Role)
}

// imageTypes are the image media types the vision guide lists.
var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// fileBlock converts an attached file to the block that carries it: an
// image block, a PDF document, or a plain text document for any text/*
// file (the API's only text source type is text/plain; the label keeps
// the real type). Other types have no block to go in.
func fileBlock(b llm.Blob) (sdk.ContentBlockParamUnion, error) {
	mt, _, err := mime.ParseMediaType(b.MIME)
	if err != nil {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("MIME type %q: %w", b.MIME, err)
	}
	var title param.Opt[string]
	if b.Name != "" {
		title = param.NewOpt(b.Name)
	}
	switch {
	case slices.Contains(imageTypes, mt):
		return sdk.NewImageBlockBase64(mt, base64.StdEncoding.EncodeToString(b.Data)), nil
	case mt == "application/pdf":
		return sdk.ContentBlockParamUnion{OfDocument: &sdk.DocumentBlockParam{
			Source: sdk.DocumentBlockParamSourceUnion{OfBase64: &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(b.Data)}},
			Title:  title,
		}}, nil
	case strings.HasPrefix(mt, "text/"):
		if !utf8.Valid(b.Data) {
			return sdk.ContentBlockParamUnion{}, fmt.Errorf("%s file is not UTF-8 text", mt)
		}
		return sdk.ContentBlockParamUnion{OfDocument: &sdk.DocumentBlockParam{
			Source: sdk.DocumentBlockParamSourceUnion{OfText: &sdk.PlainTextSourceParam{Data: string(b.Data)}},
			Title:  title,
		}}, nil
	}
	return sdk.ContentBlockParamUnion{}, fmt.Errorf("the Messages API reads images (JPEG, PNG, GIF, WebP), PDFs and text files, not %s", mt)
}

// toolUse converts a tool call from history back to a tool_use block. The
// ID is required: Anthropic pairs each result with its call by ID, gives
// every call one, and the engine gives one to any call that came without.
// A Signature (another vendor's call state) has no place on this wire and
// is dropped.
func toolUse(tc llm.ToolCall) (*sdk.ToolUseBlockParam, error) {
	if tc.ID == "" {
		return nil, fmt.Errorf("tool call %q has no ID", tc.Name)
	}
	args := bytes.TrimSpace(tc.Args)
	if len(args) == 0 {
		args = []byte("{}")
	} else if !isJSONObject(args) {
		return nil, fmt.Errorf("tool call %q args are not a JSON object", tc.Name)
	}
	return &sdk.ToolUseBlockParam{ID: tc.ID, Name: tc.Name, Input: json.RawMessage(args)}, nil
}

// toolResult converts a tool result to a tool_result block: the content is
// the result's JSON text as one text block, so the model reads the value
// exactly as the engine wrote it, and an error is flagged with is_error
// rather than by wrapping the content.
func toolResult(r llm.ToolResult) (*sdk.ToolResultBlockParam, error) {
	if r.CallID == "" {
		return nil, fmt.Errorf("tool result %q has no call ID", r.Name)
	}
	out := &sdk.ToolResultBlockParam{ToolUseID: r.CallID}
	if content := bytes.TrimSpace(r.Content); len(content) > 0 {
		if !json.Valid(content) {
			return nil, fmt.Errorf("tool result %q content is not JSON", r.Name)
		}
		out.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: string(content)}}}
	}
	if r.IsError {
		out.IsError = param.NewOpt(true)
	}
	return out, nil
}

// toolParam converts a declaration. Parameters go on the wire verbatim as the
// input_schema, so any JSON Schema the pack author wrote reaches the model
// unchanged; the one addition is "type": "object" when the schema does not
// say, since the API requires it and an input is always an object.
func toolParam(d llm.ToolDecl) (*sdk.ToolParam, error) {
	if d.Name == "" {
		return nil, fmt.Errorf("tool declaration without a name")
	}
	t := &sdk.ToolParam{Name: d.Name}
	if d.Description != "" {
		t.Description = param.NewOpt(d.Description)
	}
	raw := bytes.TrimSpace(d.Parameters)
	if len(raw) == 0 {
		return t, nil // the SDK writes {"type": "object"}
	}
	var top map[string]json.RawMessage
	if !isJSONObject(raw) || json.Unmarshal(raw, &top) != nil {
		return nil, fmt.Errorf("tool %q parameters are not a JSON object", d.Name)
	}
	if typ, ok := top["type"]; ok {
		if string(bytes.TrimSpace(typ)) != `"object"` {
			return nil, fmt.Errorf("tool %q parameters describe %s, not an object", d.Name, typ)
		}
	} else {
		raw = withKey(raw, "type", `"object"`)
	}
	t.InputSchema = param.Override[sdk.ToolInputSchemaParam](json.RawMessage(raw))
	return t, nil
}

// outputFormat converts a response schema to output_config.format. The
// structured outputs guide requires every object in the schema to set
// additionalProperties to false and the API refuses a schema that does not,
// so the adapter adds it to each object schema that leaves it out. The
// guide's unsupported constraints (numeric bounds, string lengths, item
// counts above one) are refused too: they are left off the wire, and the
// engine checks the answer against the whole schema when it lands. Anything else goes on the wire as written, including
// an explicit additionalProperties the API will refuse: closing an object
// the author deliberately left open would change the contract silently.
func outputFormat(schema json.RawMessage) (sdk.JSONOutputFormatParam, error) {
	if !isJSONObject(schema) {
		return sdk.JSONOutputFormatParam{}, fmt.Errorf("not a JSON object")
	}
	closed, err := closeObjects(bytes.TrimSpace(schema))
	if err != nil {
		return sdk.JSONOutputFormatParam{}, err
	}
	raw := make([]byte, 0, len(closed)+40)
	raw = append(raw, `{"type":"json_schema","schema":`...)
	raw = append(raw, closed...)
	raw = append(raw, '}')
	return param.Override[sdk.JSONOutputFormatParam](json.RawMessage(raw)), nil
}

// Keywords whose values are subschemas, by how they hold them.
var (
	schemaKeywords     = []string{"items", "additionalItems", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaListKeywords = []string{"anyOf", "allOf", "oneOf", "prefixItems", "items"}
)

// closeObjects returns schema with "additionalProperties": false added to
// every object schema in it that does not set additionalProperties. It
// edits the JSON text rather than a decoded map: the order of properties
// is the order in which the model writes an answer's fields, so it must
// not be sorted, and numbers, strings and untouched subschemas go out byte
// for byte. A schema that needs no change is returned as is.
func closeObjects(schema []byte) ([]byte, error) {
	if len(schema) == 0 || schema[0] != '{' {
		return schema, nil // true, false, or not a subschema at all
	}
	ms, err := members(schema)
	if err != nil {
		return nil, err
	}
	changed, open := false, false
	var typ json.RawMessage
	kept := ms[:0]
	for _, m := range ms {
		if Unsupported(m.key, m.value) {
			changed = true
			continue
		}
		kept = append(kept, m)
	}
	ms = kept
	for i := range ms {
		k, v := ms[i].key, ms[i].value
		var c []byte
		switch {
		case k == "type":
			typ = v
		case k == "additionalProperties":
			open = true // set, to false or not: the author's choice
		}
		switch {
		case slices.Contains(schemaMapKeywords, k) && len(v) > 0 && v[0] == '{':
			c, err = mapEach(v, closeObjects)
		case slices.Contains(schemaListKeywords, k) && len(v) > 0 && v[0] == '[':
			c, err = listEach(v, closeObjects)
		case slices.Contains(schemaKeywords, k):
			c, err = closeObjects(v)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(c, v) {
			ms[i].value, changed = c, true
		}
	}
	if !open && isObjectType(typ) {
		ms, changed = append(ms, member{"additionalProperties", json.RawMessage("false")}), true
	}
	if !changed {
		return schema, nil
	}
	return writeObject(ms), nil
}

// Unsupported says whether a schema keyword with this value is one the
// structured outputs guide lists as unsupported: the API answers 400
// ("For 'integer' type, property 'minimum' is not supported").
func Unsupported(key string, value json.RawMessage) bool {
	switch key {
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems":
		return true
	case "minItems":
		v := string(bytes.TrimSpace(value))
		return v != "0" && v != "1"
	}
	return false
}

// member is one key and its raw value, in the order the object has them.
type member struct {
	key   string
	value json.RawMessage
}

// members splits a JSON object into its members, in order.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

func writeObject(ms []member) []byte {
	out := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(m.key)
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}')
}

// mapEach applies f to each value of a JSON object, keeping its order.
func mapEach(obj []byte, f func([]byte) ([]byte, error)) ([]byte, error) {
	ms, err := members(obj)
	if err != nil {
		return nil, err
	}
	changed := false
	for i := range ms {
		c, err := f(ms[i].value)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(c, ms[i].value) {
			ms[i].value, changed = c, true
		}
	}
	if !changed {
		return obj, nil
	}
	return writeObject(ms), nil
}

// listEach applies f to each element of a JSON array.
func listEach(arr []byte, f func([]byte) ([]byte, error)) ([]byte, error) {
	var els []json.RawMessage
	if err := json.Unmarshal(arr, &els); err != nil {
		return nil, err
	}
	changed := false
	for i := range els {
		c, err := f(els[i])
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(c, els[i]) {
			els[i], changed = c, true
		}
	}
	if !changed {
		return arr, nil
	}
	out := []byte{'['}
	for i, e := range els {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']'), nil
}

func isObjectType(raw json.RawMessage) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == "object"
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && slices.Contains(many, "object")
}

// withKey inserts "key": value at the start of the JSON object obj, which
// does not have key.
func withKey(obj []byte, key, value string) []byte {
	inner := bytes.TrimSpace(obj[1:])
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	out = append(out, '{')
	k, _ := json.Marshal(key)
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	if len(inner) > 0 && inner[0] != '}' {
		out = append(out, ',')
	}
	return append(out, inner...)
}

func isJSONObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// wireResponse is the part of a Messages response the adapter reads.
// encoding/json refuses a value of the wrong type, which the SDK's own
// decoder lets through as a zero value.
type wireResponse struct {
	Type       string      `json:"type"`
	Content    []wireBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type wireBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// fromBody converts a response body. Text blocks are concatenated (a
// structured answer is one text block, a free one may be several) and
// tool_use blocks become calls with the model's IDs. Thinking and server
// tool blocks are skipped: they are not what the agent says. A body that
// is not a Messages response is a retryable server error: the request was
// accepted, so the fault is on the serving side, and a truncated or
// garbled body is usually a transient proxy or backend hiccup rather than
// something a different request would fix.
func fromBody(body []byte) (llm.Response, error) {
	var out llm.Response
	var resp wireResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return out, malformed(err)
	}
	switch {
	case resp.Type != "" && resp.Type != "message":
		return out, malformed(fmt.Errorf("type %q, not message", resp.Type))
	case resp.Content == nil:
		return out, malformed(fmt.Errorf("no content"))
	}
	out.FinishReason = resp.StopReason
	switch resp.StopReason {
	case "max_tokens":
		out.Finish = engine.FinishTruncated
	case "refusal":
		// As for the other vendors: a refusal is not a line the agent can
		// say; the engine asks once more before its fallback.
		out.Finish = engine.FinishBlocked
		return out, nil
	}
	u := resp.Usage
	// input_tokens counts only what the prompt cache did not cover.
	out.Usage = llm.Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	}
	var text strings.Builder
	for i, b := range resp.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" || !isJSONObject(b.Input) {
				return llm.Response{}, malformed(fmt.Errorf("content %d: a tool_use block needs an id, a name and an object input", i))
			}
			var args bytes.Buffer
			if err := json.Compact(&args, b.Input); err != nil {
				return llm.Response{}, malformed(err)
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: args.Bytes()})
		case "":
			return llm.Response{}, malformed(fmt.Errorf("content %d has no type", i))
		}
	}
	out.Text = text.String()
	return out, nil
}

func malformed(cause error) *llm.Error {
	return llm.NewError(llm.KindServer, 0, cause, "anthropic: malformed response body: %s", firstLine(cause.Error()))
}
