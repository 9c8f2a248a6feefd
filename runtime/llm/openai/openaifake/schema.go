package openaifake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
)

// This file is the request half of the public reference for
// POST /chat/completions, transcribed from the openai-openapi spec
// (github.com/openai/openai-openapi, openapi.yaml as of August 2026):
// CreateChatCompletionRequest and every schema it refers to, with
// ModelResponseProperties and CreateModelResponseProperties merged in as
// the spec's allOf does.
//
// Every documented field of every object a request can carry is listed;
// anything else is refused, with 400 and the API's own wording ("Unknown
// parameter: 'messages[0].foo'."), and so are values of the wrong type,
// missing required fields, values outside an enum, numbers outside their
// range and arrays outside their bounds. The spec marks no object closed,
// but the API answers an undocumented field with 400, at the top level and
// nested. The only open objects are the ones the spec declares free-form:
// JSON Schemas (function parameters, response_format schemas), metadata,
// logit_bias and the tools of an allowed_tools choice.
//
// Rules the spec states in prose live in semantics.go.

// schema is one node of the transcribed spec. Its methods set what the
// spec's keywords say: required, minItems and maxItems, maxLength,
// minimum and maximum.
type schema vf.Node

func node(kind vf.Kind) *schema                   { return &schema{Kind: kind} }
func str() *schema                                { return node(vf.String) }
func boolean() *schema                            { return node(vf.Bool) }
func enumOf(values ...string) *schema             { return &schema{Kind: vf.String, Values: values} }
func integer() *schema                            { return node(vf.Int) }
func number() *schema                             { return node(vf.Number) }
func arrayOf(items *schema) *schema               { return &schema{Kind: vf.List, Elem: (*vf.Node)(items)} }
func (s *schema) require(names ...string) *schema { s.Required = names; return s }
func (s *schema) items1(lo, hi int) *schema       { s.MinLen, s.MaxLen = lo, hi; return s }
func (s *schema) maxLength(n int) *schema         { s.MaxLen = n; return s }
func (s *schema) between(lo, hi float64) *schema  { s.Min, s.Max = &lo, &hi; return s }

// nullable is a schema whose field may be null.
type nullable struct{ *schema }

func (s *schema) orNull() nullable { return nullable{s} }

// object is a closed object with the given properties, in pairs of name
// and schema (or nullable schema).
func object(props ...any) *schema {
	s := &schema{Kind: vf.Object, Fields: map[string]*vf.Field{}}
	for i := 0; i+1 < len(props); i += 2 {
		f := &vf.Field{Key: props[i].(string)}
		switch p := props[i+1].(type) {
		case *schema:
			f.Node = (*vf.Node)(p)
		case nullable:
			f.Node, f.Nullable = (*vf.Node)(p.schema), true
		}
		s.Fields[f.Key] = f
	}
	return s
}

// freeObject is any JSON object (type: object, additionalProperties: true).
func freeObject() *schema { return node(vf.AnyObject) }

// mapOf is an object whose every value follows values.
func mapOf(values *schema) *schema { return &schema{Kind: vf.Object, Elem: (*vf.Node)(values)} }

// oneOf picks a variant by JSON type.
func oneOf(variants ...*schema) *schema { return byProp("", variants...) }

// byProp picks an object variant by the enum value of prop in it.
func byProp(prop string, variants ...*schema) *schema {
	s := &schema{Kind: vf.Union, Tag: prop}
	for _, v := range variants {
		s.Variants = append(s.Variants, (*vf.Node)(v))
	}
	return s
}

// requestSchema is the request body; init builds it.
var requestSchema = &vf.Schema{}

func init() {
	promptCacheBreakpoint := object("mode", enumOf("explicit")).require("mode")
	textPart := object(
		"type", enumOf("text"),
		"text", str(),
		"prompt_cache_breakpoint", promptCacheBreakpoint,
	).require("type", "text")
	// "original" is newer than the spec snapshot; the SDK generated from
	// the current spec documents it.
	imagePart := object(
		"type", enumOf("image_url"),
		"image_url", object(
			"url", str(),
			"detail", enumOf("auto", "low", "high", "original"),
		).require("url"),
		"prompt_cache_breakpoint", promptCacheBreakpoint,
	).require("type", "image_url")
	audioPart := object(
		"type", enumOf("input_audio"),
		"input_audio", object(
			"data", str(),
			"format", enumOf("wav", "mp3"),
		).require("data", "format"),
		"prompt_cache_breakpoint", promptCacheBreakpoint,
	).require("type", "input_audio")
	filePart := object(
		"type", enumOf("file"),
		"file", object(
			"filename", str(),
			"file_data", str(),
			"file_id", str(),
		),
		"prompt_cache_breakpoint", promptCacheBreakpoint,
	).require("type", "file")
	refusalPart := object(
		"type", enumOf("refusal"),
		"refusal", str(),
	).require("type", "refusal")

	textContent := func() *schema {
		return oneOf(str(), arrayOf(byProp("type", textPart)).items1(1, 0))
	}
	functionToolCall := object(
		"id", str(),
		"type", enumOf("function"),
		"function", object("name", str(), "arguments", str()).require("name", "arguments"),
	).require("id", "type", "function")
	customToolCall := object(
		"id", str(),
		"type", enumOf("custom"),
		"custom", object("name", str(), "input", str()).require("name", "input"),
	).require("id", "type", "custom")

	message := byProp("role",
		object(
			"role", enumOf("developer"),
			"content", textContent(),
			"name", str(),
		).require("content", "role"),
		object(
			"role", enumOf("system"),
			"content", textContent(),
			"name", str(),
		).require("content", "role"),
		object(
			"role", enumOf("user"),
			"content", oneOf(str(), arrayOf(byProp("type", textPart, imagePart, audioPart, filePart)).items1(1, 0)),
			"name", str(),
		).require("content", "role"),
		object(
			"role", enumOf("assistant"),
			"content", oneOf(str(), arrayOf(byProp("type", textPart, refusalPart)).items1(1, 0)).orNull(),
			"refusal", str().orNull(),
			"name", str(),
			"audio", object("id", str()).require("id").orNull(),
			"tool_calls", arrayOf(byProp("type", functionToolCall, customToolCall)),
			"function_call", object("arguments", str(), "name", str()).require("arguments", "name").orNull(),
		).require("role"),
		object(
			"role", enumOf("tool"),
			"content", textContent(),
			"tool_call_id", str(),
		).require("role", "content", "tool_call_id"),
		object(
			"role", enumOf("function"),
			"content", str().orNull(),
			"name", str(),
		).require("role", "content", "name"),
	)

	functionTool := object(
		"type", enumOf("function"),
		"function", object(
			"description", str(),
			"name", str(),
			"parameters", freeObject(),
			"strict", boolean().orNull(),
		).require("name"),
	).require("type", "function")
	customTool := object(
		"type", enumOf("custom"),
		"custom", object(
			"name", str(),
			"description", str(),
			"format", byProp("type",
				object("type", enumOf("text")).require("type"),
				object(
					"type", enumOf("grammar"),
					"grammar", object(
						"definition", str(),
						"syntax", enumOf("lark", "regex"),
					).require("definition", "syntax"),
				).require("type", "grammar"),
			),
		).require("name"),
	).require("type", "custom")

	toolChoice := oneOf(
		enumOf("none", "auto", "required"),
		byProp("type",
			object(
				"type", enumOf("allowed_tools"),
				"allowed_tools", object(
					"mode", enumOf("auto", "required"),
					"tools", arrayOf(freeObject()),
				).require("mode", "tools"),
			).require("type", "allowed_tools"),
			object(
				"type", enumOf("function"),
				"function", object("name", str()).require("name"),
			).require("type", "function"),
			object(
				"type", enumOf("custom"),
				"custom", object("name", str()).require("name"),
			).require("type", "custom"),
		),
	)

	responseFormat := byProp("type",
		object("type", enumOf("text")).require("type"),
		object(
			"type", enumOf("json_schema"),
			"json_schema", object(
				"description", str(),
				"name", str(),
				"schema", freeObject(),
				"strict", boolean().orNull(),
			).require("name"),
		).require("type", "json_schema"),
		object("type", enumOf("json_object")).require("type"),
	)

	moderationConfig := object("mode", enumOf("score", "block")).require("mode").orNull()

	requestSchema.Root = (*vf.Node)(object(
		// ModelResponseProperties
		"metadata", mapOf(str().maxLength(512)).orNull(),
		"top_logprobs", integer().between(0, 20).orNull(),
		"temperature", number().between(0, 2).orNull(),
		"top_p", number().between(0, 1).orNull(),
		"user", str(),
		"safety_identifier", str().maxLength(64).orNull(),
		"prompt_cache_key", str().orNull(),
		"prompt_cache_retention", enumOf("in_memory", "24h").orNull(),
		// CreateModelResponseProperties
		"prompt_cache_options", object(
			"ttl", enumOf("30m"),
			"mode", enumOf("implicit", "explicit"),
		),
		// CreateChatCompletionRequest
		"messages", arrayOf(message).items1(1, 0),
		"model", str(),
		"service_tier", enumOf("auto", "default", "flex", "scale", "priority", "fast").orNull(),
		"modalities", arrayOf(enumOf("text", "audio")).orNull(),
		"verbosity", enumOf("low", "medium", "high").orNull(),
		"reasoning_effort", enumOf("none", "minimal", "low", "medium", "high", "xhigh", "max").orNull(),
		"max_completion_tokens", integer().orNull(),
		"frequency_penalty", number().between(-2, 2).orNull(),
		"presence_penalty", number().between(-2, 2).orNull(),
		"web_search_options", object(
			"user_location", object(
				"type", enumOf("approximate"),
				"approximate", object(
					"country", str(),
					"region", str(),
					"city", str(),
					"timezone", str(),
				),
			).require("type", "approximate").orNull(),
			"search_context_size", enumOf("low", "medium", "high"),
		),
		"response_format", responseFormat,
		"audio", object(
			"voice", oneOf(str(), object("id", str()).require("id")),
			"format", enumOf("wav", "aac", "mp3", "flac", "opus", "pcm16"),
		).require("voice", "format").orNull(),
		"store", boolean().orNull(),
		"moderation", object(
			"model", str(),
			"policy", object("input", moderationConfig, "output", moderationConfig).orNull(),
		).require("model").orNull(),
		"stream", boolean().orNull(),
		"stop", oneOf(str(), arrayOf(str()).items1(1, 4)).orNull(),
		"logit_bias", mapOf(integer()).orNull(),
		"logprobs", boolean().orNull(),
		"max_tokens", integer().orNull(),
		"n", integer().between(1, 128).orNull(),
		"prediction", object(
			"type", enumOf("content"),
			"content", textContent(),
		).require("type", "content").orNull(),
		"seed", integer().orNull(),
		"stream_options", object(
			"include_usage", boolean(),
			"include_obfuscation", boolean(),
		).orNull(),
		"tools", arrayOf(byProp("type", functionTool, customTool)),
		"tool_choice", toolChoice,
		"parallel_tool_calls", boolean(),
		"function_call", oneOf(enumOf("none", "auto"), object("name", str()).require("name")),
		"functions", arrayOf(object(
			"description", str(),
			"name", str(),
			"parameters", freeObject(),
		).require("name")).items1(1, 128),
	).require("model", "messages"))
}

// violation is one reason to refuse a request, in the API's error terms.
type violation struct {
	param   string // the offending field's path, "" for the whole body
	code    string
	message string
}

// validator collects the violations of the rules stated in prose.
type validator struct {
	errs []violation
}

func (v *validator) fail(param, code, format string, args ...any) {
	v.errs = append(v.errs, violation{param: param, code: code, message: fmt.Sprintf(format, args...)})
}

func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// worded is a schema violation as the API words it.
func worded(x vf.Violation) violation {
	at, n := x.Path, x.Node
	say := func(param, code, format string, args ...any) violation {
		return violation{param: param, code: code, message: fmt.Sprintf(format, args...)}
	}
	switch x.Code {
	case vf.Unknown:
		if at == "" {
			return say(x.Key, "unknown_parameter", "Unrecognized request argument supplied: %s", x.Key)
		}
		at = field(at, x.Key)
		return say(at, "unknown_parameter", "Unknown parameter: '%s'.", at)
	case vf.NoTag:
		at = field(at, x.Key)
		fallthrough
	case vf.Missing:
		return say(at, "missing_required_parameter", "Missing required parameter: '%s'.", at)
	case vf.WrongType, vf.Null:
		return say(at, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", at, expected(n), typeOf(x.Value))
	case vf.NotInEnum:
		return say(at, "invalid_value", "Invalid value: '%s'. Supported values are: %s.", x.Value, quoteList(n.Values))
	case vf.UnknownTag:
		return say(field(at, x.Key), "invalid_value", "Invalid value: '%s'. Supported values are: %s.", x.Value, quoteList(n.Tags()))
	case vf.TooLong:
		if n.Kind == vf.String {
			return say(at, "string_above_max_length", "Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", at, n.MaxLen, x.Len)
		}
		return say(at, "array_above_max_length", "Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", at, n.MaxLen, x.Len)
	case vf.TooShort:
		if x.Len == 0 {
			return say(at, "empty_array", "Invalid '%s': empty array. Expected an array with minimum length %d, but got an empty array instead.", at, n.MinLen)
		}
		return say(at, "array_below_min_length", "Invalid '%s': array too short. Expected an array with minimum length %d, but got an array with length %d instead.", at, n.MinLen, x.Len)
	case vf.BelowMin, vf.AboveMax:
		what := "decimal"
		if n.Kind == vf.Int {
			what = "integer"
		}
		if x.Code == vf.BelowMin {
			return say(at, what+"_below_min_value", "Invalid '%s': %s below minimum value. Expected a value >= %v, but got %v instead.", at, what, *n.Min, x.Value)
		}
		return say(at, what+"_above_max_value", "Invalid '%s': %s above maximum value. Expected a value <= %v, but got %v instead.", at, what, *n.Max, x.Value)
	}
	return say(at, "invalid_value", "openaifake: %s: violation %d", at, x.Code)
}

// typeOf names a JSON value's type the way the API's messages do.
func typeOf(val any) string {
	switch x := val.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "an integer"
		}
		return "a decimal"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", val)
}

// expected names what n takes, for type errors.
func expected(n *vf.Node) string {
	switch n.Kind {
	case vf.String:
		return "a string"
	case vf.Int:
		return "an integer"
	case vf.Number:
		return "a number"
	case vf.Bool:
		return "a boolean"
	case vf.List:
		return "an array"
	case vf.Union:
		if n.Tag == "" {
			break
		}
		fallthrough
	default:
		return "an object"
	}
	var names []string
	for _, x := range n.Variants {
		if name := expected(x); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// quoteList renders 'a', 'b', and 'c' as the API's messages do.
func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = "'" + s + "'"
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	case 2:
		return q[0] + " and " + q[1]
	}
	return strings.Join(q[:len(q)-1], ", ") + ", and " + q[len(q)-1]
}
