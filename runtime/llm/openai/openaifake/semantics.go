package openaifake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
)

// Rules the reference and the guides state in prose rather than in the
// schema. Messages follow the API's own wording where it is known, so a
// test (or a person) comparing the two recognises them.

// Messages of the tool-call pairing rules, as the API words them.
const (
	ToolWithoutCalls = "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"
	UnknownToolCall  = "not found in 'tool_calls' of previous message"
	UnansweredCalls  = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
)

// NotPDF starts the message refusing a file part that is not a PDF: the
// file-inputs guide says Chat Completions accepts PDF files only, and that
// the text of other files goes in a text part.
const NotPDF = "Invalid file data: Chat Completions accepts only PDF files as file inputs"

var (
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// fixedSamplingRE matches the reasoning models that refuse sampling
	// parameters other than the defaults: the o-series and the first
	// GPT-5 models with their dated snapshots. Later GPT-5 models take
	// them when reasoning is off, which depends on settings the fake does
	// not model, so they are left out.
	fixedSamplingRE = regexp.MustCompile(`^(o1|o3|o4-mini)(-.*)?$|^gpt-5(-mini|-nano|-pro)?(-\d{4}-\d{2}-\d{2})?$`)
)

// imageMIME are the image types the vision guide lists.
var imageMIME = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// FixedSampling reports whether model refuses sampling parameters other
// than their defaults (temperature and top_p 1, no penalties, no
// logprobs) and max_tokens, as the reasoning models do.
func FixedSampling(model string) bool { return fixedSamplingRE.MatchString(model) }

// checkSemantics returns the violations of req's prose rules; req has
// passed the schema.
func checkSemantics(req *Request) []violation {
	var v validator
	if strings.TrimSpace(req.Model) == "" {
		v.fail("model", "missing_required_parameter", "you must provide a model parameter")
	}
	v.messages(req.Messages)
	v.toolCallPairs(req.Messages)
	v.tools(req)
	v.options(req)
	return v.errs
}

func (v *validator) messages(msgs []Message) {
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		// A participant's name (system, developer, user and assistant
		// messages) follows the pattern the reference gives for names.
		if m.Name != "" && m.Role != "function" && !nameRE.MatchString(m.Name) {
			v.fail(at+".name", "invalid_value", "Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", at)
		}
		switch m.Role {
		case "assistant":
			if m.Content.IsZero() && len(m.ToolCalls) == 0 && m.Function == nil {
				v.fail(at+".content", "missing_required_parameter", "Missing required parameter: '%s.content'. An assistant message needs content unless it has 'tool_calls' or 'function_call'.", at)
			}
			for j, p := range m.Content.Parts {
				if p.Type == "refusal" && len(m.Content.Parts) > 1 {
					v.fail(fmt.Sprintf("%s.content[%d]", at, j), "invalid_value", "Invalid '%s.content': an assistant message's content parts are text parts, or exactly one refusal part.", at)
					break
				}
			}
			seen := map[string]bool{}
			for j, c := range m.ToolCalls {
				cat := fmt.Sprintf("%s.tool_calls[%d]", at, j)
				if c.ID == "" {
					v.fail(cat+".id", "invalid_value", "Invalid '%s.id': empty string. Expected a tool call ID.", cat)
				} else if seen[c.ID] {
					v.fail(cat+".id", "invalid_value", "Invalid '%s.id': duplicate tool call ID '%s' in one message.", cat, c.ID)
				}
				seen[c.ID] = true
			}
		case "user":
			for j, p := range m.Content.Parts {
				pat := fmt.Sprintf("%s.content[%d]", at, j)
				switch {
				case p.ImageURL != nil:
					v.imageURL(pat+".image_url.url", p.ImageURL.URL)
				case p.InputAudio != nil:
					if _, ok := decodeBase64(p.InputAudio.Data); !ok {
						v.fail(pat+".input_audio.data", "invalid_value", "Invalid '%s.input_audio.data': the audio data is not valid base64.", pat)
					}
				case p.File != nil:
					v.file(pat+".file", *p.File)
				}
			}
		}
	}
}

// imageURL checks an image_url: a data URL of a supported image type, or
// an http(s) URL the API fetches.
func (v *validator) imageURL(at, u string) {
	if strings.HasPrefix(u, "data:") {
		mt, _, ok := parseDataURL(u)
		switch {
		case !ok:
			v.fail(at, "invalid_value", "Invalid '%s': the data URL is not base64 data of the form 'data:<mime>;base64,<data>'.", at)
		case !slices.Contains(imageMIME, mt):
			v.fail(at, "invalid_value", "Invalid '%s': unsupported image type %q. Supported types are %s.", at, mt, quoteList(imageMIME))
		}
		return
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		v.fail(at, "invalid_value", "Invalid '%s': Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix.", at)
	}
}

// file checks a file part: exactly one of file_data (a PDF, named) and
// file_id.
func (v *validator) file(at string, f File) {
	switch {
	case (f.FileData == "") == (f.FileID == ""):
		v.fail(at, "invalid_value", "Invalid '%s': expected exactly one of 'file_data' and 'file_id'.", at)
		return
	case f.FileID != "":
		return
	case f.Filename == "":
		v.fail(at+".filename", "missing_required_parameter", "Missing required parameter: '%s.filename'.", at)
	}
	if strings.HasPrefix(f.FileData, "data:") {
		mt, _, ok := parseDataURL(f.FileData)
		switch {
		case !ok:
			v.fail(at+".file_data", "invalid_value", "Invalid '%s.file_data': the data URL is not base64 data of the form 'data:<mime>;base64,<data>'.", at)
		case mt != "application/pdf":
			v.fail(at+".file_data", "invalid_value", "%s; got %s (%s.file_data).", NotPDF, mt, at)
		}
		return
	}
	if _, ok := decodeBase64(f.FileData); !ok {
		v.fail(at+".file_data", "invalid_value", "Invalid '%s.file_data': expected base64-encoded file data.", at)
	} else if !strings.HasSuffix(strings.ToLower(f.Filename), ".pdf") {
		v.fail(at+".file_data", "invalid_value", "%s; got a file named %q (%s.file_data).", NotPDF, f.Filename, at)
	}
}

// parseDataURL reads data:<mime>[;params];base64,<data>.
func parseDataURL(u string) (mimeType string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", nil, false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	meta, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		return "", nil, false
	}
	mt, _, err := mime.ParseMediaType(meta)
	if err != nil {
		return "", nil, false
	}
	data, ok = decodeBase64(payload)
	return mt, data, ok
}

func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if d, err := enc.DecodeString(s); err == nil {
			return d, true
		}
	}
	return nil, false
}

// toolCallPairs checks the pairing the function calling guide describes
// and the API enforces: every tool message answers a call of the assistant
// message right before the run of tool messages it belongs to, by ID, once;
// and every call of an assistant message is answered before the next
// message that is not a tool message (or the end).
func (v *validator) toolCallPairs(msgs []Message) {
	open := -1 // index of the assistant message whose calls are being answered
	var pending map[string]bool
	closeOpen := func() {
		if open < 0 {
			return
		}
		var missing []string
		for id, waiting := range pending {
			if waiting {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			v.fail(fmt.Sprintf("messages.[%d].role", open), "", "%s. The following tool_call_ids did not have response messages: %s", UnansweredCalls, strings.Join(missing, ", "))
		}
		open, pending = -1, nil
	}
	for i, m := range msgs {
		if m.Role == "tool" {
			at := fmt.Sprintf("messages.[%d].tool_call_id", i)
			switch waiting, known := pending[m.ToolCallID]; {
			case open < 0:
				v.fail(fmt.Sprintf("messages.[%d].role", i), "", "Invalid parameter: %s.", ToolWithoutCalls)
			case !known:
				v.fail(at, "", "Invalid parameter: 'tool_call_id' of '%s' %s", m.ToolCallID, UnknownToolCall)
			case !waiting:
				v.fail(at, "", "Invalid parameter: 'tool_call_id' of '%s' is answered twice.", m.ToolCallID)
			default:
				pending[m.ToolCallID] = false
			}
			continue
		}
		closeOpen()
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			open, pending = i, map[string]bool{}
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
		}
	}
	closeOpen()
}

// tools checks declarations and the options that refer to them.
func (v *validator) tools(req *Request) {
	if len(req.Tools) > 128 {
		v.fail("tools", "array_above_max_length", "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length %d instead.", len(req.Tools))
	}
	names := map[string]bool{}
	for i, t := range req.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		var name string
		switch {
		case t.Function != nil:
			name = t.Function.Name
			at += ".function"
			v.functionSchema(at, t.Function)
		case t.Custom != nil:
			var c struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(t.Custom, &c)
			name = c.Name
			at += ".custom"
		}
		if !nameRE.MatchString(name) {
			v.fail(at+".name", "invalid_value", "Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", at)
		}
		if names[name] {
			v.fail(at+".name", "invalid_value", "Invalid '%s.name': duplicate tool name '%s'.", at, name)
		}
		names[name] = true
	}
	if len(req.Tools) == 0 {
		if len(req.ToolChoice) > 0 {
			v.fail("tool_choice", "", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		if req.ParallelToolCalls != nil {
			v.fail("parallel_tool_calls", "", "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.")
		}
		return
	}
	var choice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	}
	if json.Unmarshal(req.ToolChoice, &choice) == nil {
		name := choice.Function.Name + choice.Custom.Name
		if (choice.Type == "function" || choice.Type == "custom") && !names[name] {
			v.fail("tool_choice", "invalid_value", "Invalid value for 'tool_choice': no tool named '%s' is declared.", name)
		}
	}
}

// functionSchema checks a function's parameters: a JSON Schema of an
// object, and one strict mode can take when strict is set.
func (v *validator) functionSchema(at string, f *Function) {
	if len(f.Parameters) == 0 {
		return
	}
	var root map[string]any
	if json.Unmarshal(f.Parameters, &root) != nil {
		return // the schema check has reported it
	}
	if t, ok := root["type"]; ok && t != "object" {
		v.fail(at+".parameters", "invalid_function_parameters", "Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: %s'.", f.Name, vf.Short(t))
	}
	if f.Strict != nil && *f.Strict {
		for _, msg := range strictViolations(root, "") {
			v.fail(at+".parameters", "invalid_function_parameters", "Invalid schema for function '%s': %s", f.Name, msg)
		}
	}
}

// strictViolations applies the structured outputs guide's rules for strict
// mode to a JSON Schema: every object schema sets additionalProperties to
// false and lists every property as required.
func strictViolations(s map[string]any, context string) []string {
	var out []string
	_, hasProps := s["properties"]
	if s["type"] == "object" || hasProps {
		if ap, ok := s["additionalProperties"]; !ok || ap != false {
			out = append(out, fmt.Sprintf("In context=(%s), 'additionalProperties' is required to be supplied and to be false.", context))
		}
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if list, ok := s["required"].([]any); ok {
			for _, r := range list {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		var missing []string
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if !required[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("In context=(%s), 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", context, strings.Join(missing, "', '")))
		}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if sub, ok := props[name].(map[string]any); ok {
				out = append(out, strictViolations(sub, joinContext(context, "'properties'", "'"+name+"'"))...)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, strictViolations(items, joinContext(context, "'items'"))...)
	}
	for _, key := range []string{"anyOf", "$defs", "definitions"} {
		switch sub := s[key].(type) {
		case []any:
			for i, x := range sub {
				if m, ok := x.(map[string]any); ok {
					out = append(out, strictViolations(m, joinContext(context, "'"+key+"'", fmt.Sprint(i)))...)
				}
			}
		case map[string]any:
			for _, name := range slices.Sorted(maps.Keys(sub)) {
				if m, ok := sub[name].(map[string]any); ok {
					out = append(out, strictViolations(m, joinContext(context, "'"+key+"'", "'"+name+"'"))...)
				}
			}
		}
	}
	return out
}

func joinContext(context string, parts ...string) string {
	if context == "" {
		return strings.Join(parts, ", ")
	}
	return context + ", " + strings.Join(parts, ", ")
}

// options checks the rules between top-level options, and what the fake
// does not implement.
func (v *validator) options(req *Request) {
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		js := rf.JSONSchema
		if !nameRE.MatchString(js.Name) {
			v.fail("response_format.json_schema.name", "invalid_value", "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.")
		}
		var root map[string]any
		if js.Strict != nil && *js.Strict && json.Unmarshal(js.Schema, &root) == nil {
			if root["type"] != "object" {
				v.fail("response_format", "invalid_value", "Invalid schema for response_format '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: %s'.", js.Name, vf.Short(root["type"]))
			}
			for _, msg := range strictViolations(root, "") {
				v.fail("response_format", "invalid_value", "Invalid schema for response_format '%s': %s", js.Name, msg)
			}
		}
	}
	if req.TopLogprobs != nil && (req.Logprobs == nil || !*req.Logprobs) {
		v.fail("top_logprobs", "invalid_value", "Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is specified.")
	}
	streaming := req.Stream != nil && *req.Stream
	if len(req.StreamOptions) > 0 && string(req.StreamOptions) != "null" && !streaming {
		v.fail("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	if slices.Contains(req.Modalities, "audio") && (len(req.Audio) == 0 || string(req.Audio) == "null") {
		v.fail("audio", "missing_required_parameter", "Missing required parameter: 'audio'. Audio output requires the 'audio' parameter.")
	}
	if FixedSampling(req.Model) {
		v.fixedSampling(req)
	}
	// The adapter asks for one whole answer: a request that would get a
	// stream of chunks or several choices back is one its response
	// decoder cannot read, so the fake refuses it, to catch an adapter
	// that starts sending either.
	if streaming {
		v.fail("stream", "unsupported_value", "openaifake: the adapter reads one whole answer; stream: true would send chunks")
	}
	if req.N != nil && *req.N > 1 {
		v.fail("n", "unsupported_value", "openaifake: the adapter reads one choice; n > 1 would send several")
	}
}

// fixedSampling applies the reasoning guide's limits to a reasoning model.
func (v *validator) fixedSampling(req *Request) {
	for _, p := range []struct {
		name string
		val  *float64
		def  float64
	}{{"temperature", req.Temperature, 1}, {"top_p", req.TopP, 1}} {
		if p.val != nil && *p.val != p.def {
			v.fail(p.name, "unsupported_value", "Unsupported value: '%s' does not support %v with this model. Only the default (%v) value is supported.", p.name, *p.val, p.def)
		}
	}
	for _, p := range []struct {
		name string
		set  bool
	}{
		{"presence_penalty", req.PresencePenalty != nil && *req.PresencePenalty != 0},
		{"frequency_penalty", req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0},
		{"logprobs", req.Logprobs != nil && *req.Logprobs},
	} {
		if p.set {
			v.fail(p.name, "unsupported_parameter", "Unsupported parameter: '%s' is not supported with this model.", p.name)
		}
	}
	if req.MaxTokens != nil {
		v.fail("max_tokens", "unsupported_parameter", "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
	}
}
