package anthropicfake

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
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

// spec describes the values a field accepts.
type spec vf.Node

// field is an object's field: whether it must be present, whether it may
// be null.
type field struct {
	spec     *spec
	required bool
	nullable bool
}

func node(k vf.Kind) *spec { return &spec{Kind: k} }
func str() *spec           { return node(vf.String) }
func nonEmpty() *spec      { return &spec{Kind: vf.String, MinLen: 1} }
func integer() *spec       { return &spec{Kind: vf.Int, Bits: 53} }
func number() *spec        { return node(vf.Number) }
func boolean() *spec       { return node(vf.Bool) }
func anyMap() *spec        { return node(vf.AnyObject) }
func base64s() *spec {
	return &spec{Kind: vf.Bytes, Valid: func(s string) bool { _, ok := decodeBase64(s); return ok }}
}
func enum(values ...string) *spec { return &spec{Kind: vf.String, Values: values} }
func list(elem *spec) *spec       { return &spec{Kind: vf.List, Elem: (*vf.Node)(elem)} }
func either(alts ...*spec) *spec {
	s := node(vf.Union)
	for _, a := range alts {
		s.Variants = append(s.Variants, (*vf.Node)(a))
	}
	return s
}

func (s *spec) atLeast(v float64) *spec { s.Min = &v; return s }
func (s *spec) atMost(v float64) *spec  { s.Max = &v; return s }
func (s *spec) matching(re string) *spec {
	s.Valid, s.Pattern = regexp.MustCompile(re).MatchString, re
	return s
}
func (s *spec) longest(n int) *spec { s.MaxLen = n; return s }
func (s *spec) items(n int) *spec   { s.MinLen = n; return s }

// textShorthand is content that is a string or a list of blocks; the
// reference says a string stands for [{"type": "text", "text": s}].
func textShorthand(blocks *spec) *spec {
	text := str()
	text.Then = func(v any) any { return []any{map[string]any{"type": "text", "text": v}} }
	return either(text, list(blocks))
}

func req(s *spec) *field     { return &field{spec: s, required: true} }
func opt(s *spec) *field     { return &field{spec: s} }
func optNull(s *spec) *field { return &field{spec: s, nullable: true} }
func reqNull(s *spec) *field { return &field{spec: s, required: true, nullable: true} }

// object declares an object; a variant of a tagged union lists its own
// "type" among its fields. Missing fields are reported in name order.
func object(name string, kv ...any) *spec {
	s := &spec{Kind: vf.Object, Name: name, Fields: map[string]*vf.Field{}}
	for i := 0; i < len(kv); i += 2 {
		k, f := kv[i].(string), kv[i+1].(*field)
		s.Fields[k] = &vf.Field{Key: k, Node: (*vf.Node)(f.spec), Nullable: f.nullable}
		if f.required {
			s.Required = append(s.Required, k)
		}
	}
	slices.Sort(s.Required)
	return s
}

// variant declares the object a tagged union's tag selects: "type" must be
// tag (or absent, for the union's untagged variant).
func variant(name, tag string, kv ...any) *spec {
	return object(name, append(kv, "type", req(enum(tag)))...)
}

func tagged(variants ...*spec) *spec {
	s := either(variants...)
	s.Tag = "type"
	return s
}

func (s *spec) withUntagged(tag string) *spec {
	s.Untagged = tag
	for _, v := range s.Variants {
		if v.Fields["type"].Node.Values[0] == tag {
			v.Required = slices.DeleteFunc(v.Required, func(k string) bool { return k == "type" })
		}
	}
	return s
}

func (s *spec) withUnmodelled(tags ...string) *spec { s.Unmodelled = tags; return s }

// Patterns the service enforces on names and IDs.
const (
	toolNamePattern = `^[a-zA-Z0-9_-]{1,128}$`
	toolIDPattern   = `^[a-zA-Z0-9_-]+$`
)

// requestSchema is the body of POST /v1/messages.
var requestSchema = &vf.Schema{DotIndex: true, TagPath: true, Root: (*vf.Node)(func() *spec {
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
}())}

// message words a violation as the service does.
func message(v vf.Violation) string {
	at, n := v.Path, v.Node
	var msg string
	switch v.Code {
	case vf.Unknown:
		at, msg = join(at, v.Key), "Extra inputs are not permitted"
	case vf.Missing:
		msg = "Field required"
	case vf.Null:
		msg = "Input should be a valid " + kindName(n)
	case vf.WrongType, vf.NotInEnum:
		switch {
		case n.Values != nil:
			msg = "Input should be " + quoteList(n.Values, "or")
		case n.Kind == vf.Object || n.Tag != "":
			msg = "Input should be a valid dictionary or object to extract fields from"
		default:
			msg = "Input should be a valid " + kindName(n)
		}
	case vf.Undecodable:
		msg = "Input should be a valid base64 string"
	case vf.TooShort:
		msg = fmt.Sprintf("String should have at least %d character", n.MinLen)
		if n.Kind == vf.List {
			msg = fmt.Sprintf("List should have at least %d item after validation, not %d", n.MinLen, v.Len)
		}
	case vf.TooLong:
		msg = fmt.Sprintf("String should have at most %d characters", n.MaxLen)
	case vf.Mismatch:
		msg = fmt.Sprintf("String should match pattern '%s'", n.Pattern)
	case vf.BelowMin:
		msg = "Input should be greater than or equal to " + fmtNum(*n.Min)
	case vf.AboveMax:
		msg = "Input should be less than or equal to " + fmtNum(*n.Max)
	case vf.NoTag:
		msg = "Unable to extract tag using discriminator 'type'"
	case vf.Unmodelled:
		msg = fmt.Sprintf("anthropicfake: type %q is in the API reference but this fake does not model it", v.Value)
	case vf.UnknownTag:
		tags := append(n.Tags(), n.Unmodelled...)
		slices.Sort(tags)
		msg = fmt.Sprintf("Input tag '%s' found using 'type' does not match any of the expected tags: %s", v.Value, quoteList(tags, ","))
	default:
		msg = fmt.Sprintf("anthropicfake: violation %d", v.Code)
	}
	if at == "" {
		return msg
	}
	return at + ": " + msg
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func kindName(n *vf.Node) string {
	switch n.Kind {
	case vf.String, vf.Bytes:
		return "string"
	case vf.Int:
		return "integer"
	case vf.Number:
		return "number"
	case vf.Bool:
		return "boolean"
	case vf.List:
		return "list"
	case vf.Union:
		if n.Tag != "" {
			break
		}
		var names []string
		for _, a := range n.Variants {
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
