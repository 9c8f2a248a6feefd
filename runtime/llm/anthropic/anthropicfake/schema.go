package anthropicfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file is the request half of the Messages API reference for POST
// /v1/messages (https://platform.claude.com/docs/en/api/messages/create),
// as published in October 2026 and generated into the official SDKs'
// request types (anthropic-sdk-go v1.84.0, MessageNewParams and the types
// it reaches). Every field of every object the fake models is listed;
// anything else is refused the way the service refuses it, with 400
// invalid_request_error and a message in the service's style:
// "messages.0.content.1.tool_use.id: Field required", "tools.0.custom.foo:
// Extra inputs are not permitted", "max_tokens: Input should be a valid
// integer". A path names list indexes and, inside a union, the variant
// ("tools.0.custom.name").
//
// Numbers, strings and booleans are checked strictly: a number sent as a
// string, or a boolean sent as a number, is refused. null is accepted only
// where the reference says a field is nullable.
//
// The reference documents block and tool types this fake does not model
// (server tools, their result blocks, container uploads, system-role
// messages). A request using one is refused with a message saying so, so
// an adapter test cannot pass by sending something the fake does not
// understand.

type kind int

const (
	kString kind = iota
	kInt
	kNumber
	kBool
	kEnum
	kObject // an object with listed fields
	kList   // a list of elem
	kTagged // an object whose "type" picks a variant
	kAnyMap // any JSON object (a tool's input, a JSON Schema)
	kEither // a string or a list (content), or a string or an object
	kBase64 // a string of standard base64
)

// spec describes the values a field accepts.
type spec struct {
	kind   kind
	name   string            // the object's name in the reference, for messages
	fields map[string]*field // kObject
	// kTagged
	variants   map[string]*spec
	untagged   string // the variant used when "type" is absent ("" = required)
	unmodelled []string
	elem       *spec   // kList
	alts       []*spec // kEither: one per JSON kind
	values     []string
	min, max   *float64
	minLen     int // strings: characters; lists: items
	maxLen     int // strings: characters (0 = no limit)
	pattern    *regexp.Regexp
	// shorthand: a string stands for [{"type": "text", "text": s}], as the
	// reference says for message content, system and tool results.
	shorthand bool
}

type field struct {
	spec     *spec
	required bool
	nullable bool
}

func str() *spec      { return &spec{kind: kString} }
func nonEmpty() *spec { return &spec{kind: kString, minLen: 1} }
func integer() *spec  { return &spec{kind: kInt} }
func number() *spec   { return &spec{kind: kNumber} }
func boolean() *spec  { return &spec{kind: kBool} }
func base64s() *spec  { return &spec{kind: kBase64} }
func anyMap() *spec   { return &spec{kind: kAnyMap} }
func enum(values ...string) *spec {
	return &spec{kind: kEnum, values: values}
}
func list(elem *spec) *spec { return &spec{kind: kList, elem: elem} }
func either(alts ...*spec) *spec {
	return &spec{kind: kEither, alts: alts}
}

func (s *spec) atLeast(v float64) *spec { s.min = &v; return s }
func (s *spec) atMost(v float64) *spec  { s.max = &v; return s }
func (s *spec) matching(re string) *spec {
	s.pattern = regexp.MustCompile(re)
	return s
}
func (s *spec) longest(n int) *spec { s.maxLen = n; return s }
func (s *spec) items(n int) *spec   { s.minLen = n; return s }

// textShorthand is content that is a string or a list of blocks.
func textShorthand(blocks *spec) *spec {
	s := either(str(), list(blocks))
	s.shorthand = true
	return s
}

func req(s *spec) *field     { return &field{spec: s, required: true} }
func opt(s *spec) *field     { return &field{spec: s} }
func optNull(s *spec) *field { return &field{spec: s, nullable: true} }
func reqNull(s *spec) *field { return &field{spec: s, required: true, nullable: true} }
func fieldsOf(kv ...any) map[string]*field {
	m := make(map[string]*field, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(*field)
	}
	return m
}

// object declares an object; a variant of a tagged union lists its own
// "type" among its fields.
func object(name string, kv ...any) *spec {
	return &spec{kind: kObject, name: name, fields: fieldsOf(kv...)}
}

// variant declares the object a tagged union's tag selects: "type" must be
// tag (or absent, for the union's untagged variant).
func variant(name, tag string, kv ...any) *spec {
	s := object(name, kv...)
	s.fields["type"] = req(enum(tag))
	return s
}

func tagged(variants ...*spec) *spec {
	s := &spec{kind: kTagged, variants: map[string]*spec{}}
	for _, v := range variants {
		s.variants[v.fields["type"].spec.values[0]] = v
	}
	return s
}

func (s *spec) withUntagged(tag string) *spec {
	s.untagged = tag
	s.variants[tag].fields["type"].required = false
	return s
}

func (s *spec) withUnmodelled(tags ...string) *spec { s.unmodelled = tags; return s }

// Patterns the service enforces on names and IDs.
const (
	toolNamePattern = `^[a-zA-Z0-9_-]{1,128}$`
	toolIDPattern   = `^[a-zA-Z0-9_-]+$`
)

// messageCreateRequest is the body of POST /v1/messages.
var messageCreateRequest = func() *spec {
	cacheControl := object("CacheControlEphemeral",
		"type", req(enum("ephemeral")),
		"ttl", opt(enum("5m", "1h")))

	citation := tagged(
		variant("CitationCharLocationParam", "char_location",
			"cited_text", req(str()), "document_index", req(integer()),
			"document_title", reqNull(str()),
			"start_char_index", req(integer()), "end_char_index", req(integer())),
		variant("CitationPageLocationParam", "page_location",
			"cited_text", req(str()), "document_index", req(integer()),
			"document_title", reqNull(str()),
			"start_page_number", req(integer()), "end_page_number", req(integer())),
		variant("CitationContentBlockLocationParam", "content_block_location",
			"cited_text", req(str()), "document_index", req(integer()),
			"document_title", reqNull(str()),
			"start_block_index", req(integer()), "end_block_index", req(integer())),
		variant("CitationWebSearchResultLocationParam", "web_search_result_location",
			"cited_text", req(str()), "encrypted_index", req(str()), "title", reqNull(str()), "url", req(str())),
		variant("CitationSearchResultLocationParam", "search_result_location",
			"cited_text", req(str()), "search_result_index", req(integer()), "source", req(str()),
			"title", reqNull(str()), "start_block_index", req(integer()), "end_block_index", req(integer())),
	)

	textBlock := variant("TextBlockParam", "text",
		"text", req(str()),
		"cache_control", optNull(cacheControl),
		"citations", optNull(list(citation)))

	imageBlock := variant("ImageBlockParam", "image",
		"source", req(tagged(
			variant("Base64ImageSource", "base64",
				"data", req(base64s()),
				"media_type", req(enum("image/jpeg", "image/png", "image/gif", "image/webp"))),
			variant("URLImageSource", "url", "url", req(str())),
			variant("FileImageSource", "file", "file_id", req(str())),
		)),
		"cache_control", optNull(cacheControl),
		"transformations", opt(object("ImageTransformations", "oversized_image", opt(enum("downsize", "error")))))

	citationsConfig := object("CitationsConfigParam", "enabled", opt(boolean()))

	documentBlock := variant("DocumentBlockParam", "document",
		"source", req(tagged(
			variant("Base64PDFSource", "base64",
				"data", req(base64s()),
				"media_type", req(enum("application/pdf"))),
			variant("PlainTextSource", "text",
				"data", req(str()),
				"media_type", req(enum("text/plain"))),
			variant("ContentBlockSource", "content",
				"content", req(either(str(), list(tagged(textBlock, imageBlock))))),
			variant("URLPDFSource", "url", "url", req(str())),
			variant("FileDocumentSource", "file", "file_id", req(str())),
		)),
		"title", optNull(str()),
		"context", optNull(str()),
		"citations", optNull(citationsConfig),
		"cache_control", optNull(cacheControl))

	searchResultBlock := variant("SearchResultBlockParam", "search_result",
		"content", req(list(tagged(textBlock))),
		"source", req(str()),
		"title", req(str()),
		"citations", opt(citationsConfig),
		"cache_control", optNull(cacheControl))

	toolReferenceBlock := variant("ToolReferenceBlockParam", "tool_reference",
		"tool_name", req(str()),
		"cache_control", optNull(cacheControl))

	toolUseBlock := variant("ToolUseBlockParam", "tool_use",
		"id", req(str().matching(toolIDPattern)),
		"name", req(nonEmpty()),
		"input", req(anyMap()),
		"toolset_name", opt(str()),
		"caller", opt(tagged(
			variant("DirectCaller", "direct"),
			variant("ServerToolCaller", "code_execution_20250825", "tool_id", req(str())),
			variant("ServerToolCaller20260120", "code_execution_20260120", "tool_id", req(str())),
		)),
		"cache_control", optNull(cacheControl))

	toolResultBlock := variant("ToolResultBlockParam", "tool_result",
		"tool_use_id", req(str().matching(toolIDPattern)),
		"content", opt(textShorthand(
			tagged(textBlock, imageBlock, searchResultBlock, documentBlock, toolReferenceBlock).
				withUnmodelled("browser_state"))),
		"is_error", opt(boolean()),
		"toolset_name", opt(str()),
		"cache_control", optNull(cacheControl))

	contentBlock := tagged(
		textBlock, imageBlock, documentBlock, searchResultBlock,
		variant("ThinkingBlockParam", "thinking", "thinking", req(str()), "signature", req(str())),
		variant("RedactedThinkingBlockParam", "redacted_thinking", "data", req(str())),
		toolUseBlock, toolResultBlock,
	).withUnmodelled(
		"server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
		"code_execution_tool_result", "bash_code_execution_tool_result",
		"text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload",
	)

	message := object("MessageParam",
		"role", req(enum("user", "assistant", "system")),
		"content", req(textShorthand(contentBlock)))

	customTool := variant("Tool", "custom",
		"name", req(str().matching(toolNamePattern)),
		"description", opt(str()),
		"input_schema", req(anyMap()),
		"strict", opt(boolean()),
		"eager_input_streaming", optNull(boolean()),
		"defer_loading", opt(boolean()),
		"allowed_callers", opt(list(enum("direct", "code_execution_20250825", "code_execution_20260120", "code_execution_20260521")).items(1)),
		"input_examples", opt(list(anyMap())),
		"cache_control", optNull(cacheControl))

	tool := tagged(customTool).withUntagged("custom").withUnmodelled(
		"bash_20250124", "code_execution_20250522", "code_execution_20250825",
		"code_execution_20260120", "code_execution_20260521", "browser_toolset_20260801",
		"memory_20250818", "computer_toolset_20260801", "text_editor_20250124",
		"text_editor_20250429", "text_editor_20250728", "web_search_20250305",
		"web_fetch_20250910", "web_search_20260209", "web_fetch_20260209",
		"web_fetch_20260309", "web_search_20260318", "web_fetch_20260318",
		"tool_search_tool_bm25_20251119", "tool_search_tool_bm25",
		"tool_search_tool_regex_20251119", "tool_search_tool_regex",
	)

	disableParallel := opt(boolean())
	toolChoice := tagged(
		variant("ToolChoiceAuto", "auto", "disable_parallel_tool_use", disableParallel),
		variant("ToolChoiceAny", "any", "disable_parallel_tool_use", disableParallel),
		variant("ToolChoiceTool", "tool", "name", req(str()), "disable_parallel_tool_use", disableParallel),
		variant("ToolChoiceNone", "none"),
	)

	display := opt(enum("summarized", "omitted"))
	thinking := tagged(
		variant("ThinkingConfigEnabled", "enabled", "budget_tokens", req(integer().atLeast(1024)), "display", display),
		variant("ThinkingConfigDisabled", "disabled"),
		variant("ThinkingConfigAdaptive", "adaptive", "display", display),
		variant("ThinkingConfigBetweenTools", "between_tools"),
	)

	outputConfig := object("OutputConfig",
		"effort", optNull(enum("low", "medium", "high", "xhigh", "max")),
		"format", optNull(object("JSONOutputFormat",
			"type", req(enum("json_schema")),
			"schema", req(anyMap()))))

	container := either(str(), object("ContainerParams",
		"id", optNull(str()),
		"skills", optNull(list(object("SkillParams",
			"skill_id", req(str()),
			"type", req(enum("anthropic", "custom")),
			"version", opt(str())))),
	))

	return object("MessageCreateParams",
		"model", req(nonEmpty()),
		"max_tokens", req(integer().atLeast(0)),
		"messages", req(list(message)),
		"system", opt(textShorthand(tagged(textBlock))),
		"tools", opt(list(tool)),
		"tool_choice", opt(toolChoice),
		"thinking", opt(thinking),
		"output_config", opt(outputConfig),
		"temperature", opt(number().atLeast(0).atMost(1)),
		"top_p", opt(number().atLeast(0).atMost(1)),
		"top_k", opt(integer().atLeast(0)),
		"stop_sequences", opt(list(str())),
		"stream", opt(boolean()),
		"metadata", opt(object("Metadata", "user_id", optNull(str().longest(256)))),
		"service_tier", opt(enum("auto", "standard_only")),
		"speed", optNull(enum("standard", "fast")),
		"inference_geo", optNull(str()),
		"container", optNull(container),
		"cache_control", optNull(cacheControl),
		"diagnostics", optNull(object("Diagnostics", "previous_message_id", optNull(str()))),
	)
}()

// validator walks a decoded body, collecting violations and building the
// normalized body (shorthand strings expanded to block lists).
type validator struct {
	errs []string
}

func (v *validator) fail(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	v.errs = append(v.errs, msg)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value validates val against s at path and returns it normalized.
func (v *validator) value(path string, s *spec, val any) any {
	switch s.kind {
	case kString:
		text, ok := val.(string)
		if !ok {
			v.fail(path, "Input should be a valid string")
			return val
		}
		n := len([]rune(text))
		switch {
		case n < s.minLen:
			v.fail(path, "String should have at least %d character", s.minLen)
		case s.maxLen > 0 && n > s.maxLen:
			v.fail(path, "String should have at most %d characters", s.maxLen)
		case s.pattern != nil && !s.pattern.MatchString(text):
			v.fail(path, "String should match pattern '%s'", s.pattern)
		}
	case kBase64:
		text, ok := val.(string)
		if !ok {
			v.fail(path, "Input should be a valid string")
			return val
		}
		if _, ok := decodeBase64(text); !ok {
			v.fail(path, "Input should be a valid base64 string")
		}
	case kBool:
		if _, ok := val.(bool); !ok {
			v.fail(path, "Input should be a valid boolean")
		}
	case kInt:
		n, ok := val.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			v.fail(path, "Input should be a valid integer")
			return val
		}
		v.bounds(path, s, f)
		return json.Number(strconv.FormatInt(int64(f), 10))
	case kNumber:
		n, ok := val.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			v.fail(path, "Input should be a valid number")
			return val
		}
		v.bounds(path, s, f)
	case kEnum:
		text, ok := val.(string)
		if !ok || !slices.Contains(s.values, text) {
			v.fail(path, "Input should be %s", quoteList(s.values, "or"))
		}
	case kAnyMap:
		if _, ok := val.(map[string]any); !ok {
			v.fail(path, "Input should be a valid dictionary")
		}
	case kList:
		arr, ok := val.([]any)
		if !ok {
			v.fail(path, "Input should be a valid list")
			return val
		}
		if len(arr) < s.minLen {
			v.fail(path, "List should have at least %d item after validation, not %d", s.minLen, len(arr))
		}
		out := make([]any, len(arr))
		for i, el := range arr {
			out[i] = v.value(join(path, strconv.Itoa(i)), s.elem, el)
		}
		return out
	case kEither:
		for _, alt := range s.alts {
			if !sameJSONKind(alt, val) {
				continue
			}
			out := v.value(path, alt, val)
			if text, isStr := val.(string); isStr && s.shorthand {
				return []any{map[string]any{"type": "text", "text": text}}
			}
			return out
		}
		var kinds []string
		for _, alt := range s.alts {
			kinds = append(kinds, kindName(alt))
		}
		v.fail(path, "Input should be a valid %s", strings.Join(kinds, " or "))
	case kObject:
		obj, ok := val.(map[string]any)
		if !ok {
			v.fail(path, "Input should be a valid dictionary or object to extract fields from")
			return val
		}
		return v.object(path, s, obj)
	case kTagged:
		obj, ok := val.(map[string]any)
		if !ok {
			v.fail(path, "Input should be a valid dictionary or object to extract fields from")
			return val
		}
		tag, present := obj["type"]
		name, isStr := tag.(string)
		switch {
		case !present && s.untagged != "":
			name = s.untagged
		case !present:
			v.fail(path, "Unable to extract tag using discriminator 'type'")
			return val
		case !isStr:
			v.fail(join(path, "type"), "Input should be a valid string")
			return val
		}
		if slices.Contains(s.unmodelled, name) {
			v.fail(path, "anthropicfake: type %q is in the API reference but this fake does not model it", name)
			return val
		}
		vs, ok := s.variants[name]
		if !ok {
			tags := make([]string, 0, len(s.variants)+len(s.unmodelled))
			for t := range s.variants {
				tags = append(tags, t)
			}
			tags = append(tags, s.unmodelled...)
			sort.Strings(tags)
			v.fail(path, "Input tag '%s' found using 'type' does not match any of the expected tags: %s", name, quoteList(tags, ","))
			return val
		}
		return v.object(join(path, name), vs, obj)
	}
	return val
}

func (v *validator) bounds(path string, s *spec, f float64) {
	if s.min != nil && f < *s.min {
		v.fail(path, "Input should be greater than or equal to %s", fmtNum(*s.min))
	}
	if s.max != nil && f > *s.max {
		v.fail(path, "Input should be less than or equal to %s", fmtNum(*s.max))
	}
}

func (v *validator) object(path string, s *spec, obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic messages
	for _, k := range keys {
		f, ok := s.fields[k]
		if !ok {
			v.fail(join(path, k), "Extra inputs are not permitted")
			continue
		}
		val := obj[k]
		if val == nil {
			if !f.nullable {
				v.fail(join(path, k), "Input should be a valid %s", kindName(f.spec))
			}
			continue
		}
		out[k] = v.value(join(path, k), f.spec, val)
	}
	names := make([]string, 0, len(s.fields))
	for k := range s.fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := obj[k]; !ok && s.fields[k].required {
			v.fail(join(path, k), "Field required")
		}
	}
	return out
}

func sameJSONKind(s *spec, val any) bool {
	switch val.(type) {
	case string:
		return s.kind == kString
	case []any:
		return s.kind == kList
	case map[string]any:
		return s.kind == kObject || s.kind == kTagged || s.kind == kAnyMap
	}
	return false
}

func kindName(s *spec) string {
	switch s.kind {
	case kString, kBase64, kEnum:
		return "string"
	case kInt:
		return "integer"
	case kNumber:
		return "number"
	case kBool:
		return "boolean"
	case kList:
		return "list"
	case kEither:
		var names []string
		for _, a := range s.alts {
			names = append(names, kindName(a))
		}
		return strings.Join(names, " or ")
	}
	return "dictionary"
}

// quoteList writes 'a', 'b' or 'c' (last "or"), or 'a', 'b', 'c' (last ",").
func quoteList(values []string, last string) string {
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = "'" + s + "'"
	}
	if last == "," || len(q) < 2 {
		return strings.Join(q, ", ")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + last + " " + q[len(q)-1]
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// decodeBody parses body as one JSON value with numbers kept exact.
func decodeBody(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the top-level value")
	}
	return raw, nil
}
