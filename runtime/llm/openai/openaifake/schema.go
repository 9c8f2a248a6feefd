package openaifake

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
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

type kind int

const (
	kString kind = iota
	kInteger
	kNumber
	kBoolean
	kObject
	kArray
	kUnion // by JSON type, or by a discriminating property for objects
)

// schema is one node of the transcribed spec.
type schema struct {
	kind     kind
	nullable bool
	enum     []string
	min, max *float64
	maxLen   int // strings; 0: no limit
	minItems int
	maxItems int // 0: no limit

	props    map[string]*schema
	required []string
	values   *schema // additionalProperties schema (maps)
	open     bool    // any additional property is allowed (free-form JSON)

	items *schema

	variants      []*schema
	discriminator string // property naming the variant of a union of objects
}

func str() *schema                    { return &schema{kind: kString} }
func boolean() *schema                { return &schema{kind: kBoolean} }
func enumOf(values ...string) *schema { return &schema{kind: kString, enum: values} }
func integer() *schema                { return &schema{kind: kInteger} }
func number() *schema                 { return &schema{kind: kNumber} }
func arrayOf(items *schema) *schema   { return &schema{kind: kArray, items: items} }

// object is a closed object with the given properties, in pairs of name
// and schema.
func object(props ...any) *schema {
	s := &schema{kind: kObject, props: map[string]*schema{}}
	for i := 0; i+1 < len(props); i += 2 {
		s.props[props[i].(string)] = props[i+1].(*schema)
	}
	return s
}

// freeObject is any JSON object (type: object, additionalProperties: true).
func freeObject() *schema { return &schema{kind: kObject, open: true} }

// mapOf is an object whose every value follows values.
func mapOf(values *schema) *schema { return &schema{kind: kObject, values: values} }

// oneOf picks a variant by JSON type.
func oneOf(variants ...*schema) *schema { return &schema{kind: kUnion, variants: variants} }

// byProp picks an object variant by the enum value of prop in it.
func byProp(prop string, variants ...*schema) *schema {
	return &schema{kind: kUnion, variants: variants, discriminator: prop}
}

func (s *schema) require(names ...string) *schema { s.required = names; return s }
func (s *schema) orNull() *schema                 { s.nullable = true; return s }
func (s *schema) items1(lo, hi int) *schema       { s.minItems, s.maxItems = lo, hi; return s }
func (s *schema) maxLength(n int) *schema         { s.maxLen = n; return s }
func (s *schema) between(lo, hi float64) *schema  { s.min, s.max = &lo, &hi; return s }

// createChatCompletionRequest is the request body; init builds it.
var createChatCompletionRequest *schema

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

	createChatCompletionRequest = object(
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
	).require("model", "messages")
}

// violation is one reason to refuse a request, in the API's error terms.
type violation struct {
	param   string // the offending field's path, "" for the whole body
	code    string
	message string
}

// validator walks a decoded body, collecting violations.
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

// expected names what s takes, for type errors.
func (s *schema) expected() string {
	switch s.kind {
	case kString:
		return "a string"
	case kInteger:
		return "an integer"
	case kNumber:
		return "a number"
	case kBoolean:
		return "a boolean"
	case kObject:
		return "an object"
	case kArray:
		return "an array"
	}
	if s.discriminator != "" {
		return "an object"
	}
	var names []string
	for _, x := range s.variants {
		if n := x.expected(); !contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (v *validator) wrongType(path string, s *schema, val any) {
	v.fail(path, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", path, s.expected(), typeOf(val))
}

// check validates val, found at path, against s.
func (v *validator) check(path string, s *schema, val any) {
	if val == nil {
		if !s.nullable {
			v.wrongType(path, s, val)
		}
		return
	}
	switch s.kind {
	case kString:
		str, ok := val.(string)
		if !ok {
			v.wrongType(path, s, val)
			return
		}
		if s.enum != nil && !contains(s.enum, str) {
			v.fail(path, "invalid_value", "Invalid value: '%s'. Supported values are: %s.", str, quoteList(s.enum))
		}
		if n := len([]rune(str)); s.maxLen > 0 && n > s.maxLen {
			v.fail(path, "string_above_max_length", "Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", path, s.maxLen, n)
		}
	case kBoolean:
		if _, ok := val.(bool); !ok {
			v.wrongType(path, s, val)
		}
	case kInteger, kNumber:
		num, ok := val.(json.Number)
		if !ok {
			v.wrongType(path, s, val)
			return
		}
		f, err := num.Float64()
		if err != nil || math.IsInf(f, 0) {
			v.wrongType(path, s, val)
			return
		}
		what := "decimal"
		if s.kind == kInteger {
			what = "integer"
			if f != math.Trunc(f) {
				v.wrongType(path, s, val)
				return
			}
		}
		if s.min != nil && f < *s.min {
			v.fail(path, what+"_below_min_value", "Invalid '%s': %s below minimum value. Expected a value >= %v, but got %v instead.", path, what, *s.min, num)
		}
		if s.max != nil && f > *s.max {
			v.fail(path, what+"_above_max_value", "Invalid '%s': %s above maximum value. Expected a value <= %v, but got %v instead.", path, what, *s.max, num)
		}
	case kArray:
		arr, ok := val.([]any)
		if !ok {
			v.wrongType(path, s, val)
			return
		}
		switch {
		case len(arr) == 0 && s.minItems > 0:
			v.fail(path, "empty_array", "Invalid '%s': empty array. Expected an array with minimum length %d, but got an empty array instead.", path, s.minItems)
		case len(arr) < s.minItems:
			v.fail(path, "array_below_min_length", "Invalid '%s': array too short. Expected an array with minimum length %d, but got an array with length %d instead.", path, s.minItems, len(arr))
		case s.maxItems > 0 && len(arr) > s.maxItems:
			v.fail(path, "array_above_max_length", "Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", path, s.maxItems, len(arr))
		}
		for i, el := range arr {
			v.check(fmt.Sprintf("%s[%d]", path, i), s.items, el)
		}
	case kObject:
		obj, ok := val.(map[string]any)
		if !ok {
			v.wrongType(path, s, val)
			return
		}
		v.object(path, s, obj)
	case kUnion:
		v.union(path, s, val)
	}
}

func (v *validator) object(path string, s *schema, obj map[string]any) {
	if s.open {
		return
	}
	for _, key := range sortedKeys(obj) {
		val := obj[key]
		at := field(path, key)
		switch {
		case s.props[key] != nil:
			v.check(at, s.props[key], val)
		case s.values != nil:
			v.check(at, s.values, val)
		case path == "":
			v.fail(key, "unknown_parameter", "Unrecognized request argument supplied: %s", key)
		default:
			v.fail(at, "unknown_parameter", "Unknown parameter: '%s'.", at)
		}
	}
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			v.fail(field(path, name), "missing_required_parameter", "Missing required parameter: '%s'.", field(path, name))
		}
	}
}

// union checks val against the variant its JSON type (and, for objects of
// a discriminated union, its discriminating property) selects.
func (v *validator) union(path string, s *schema, val any) {
	if s.discriminator != "" {
		obj, ok := val.(map[string]any)
		if !ok {
			v.wrongType(path, s, val)
			return
		}
		at := field(path, s.discriminator)
		tag, present := obj[s.discriminator]
		if !present {
			v.fail(at, "missing_required_parameter", "Missing required parameter: '%s'.", at)
			return
		}
		name, ok := tag.(string)
		if !ok {
			v.fail(at, "invalid_type", "Invalid type for '%s': expected a string, but got %s instead.", at, typeOf(tag))
			return
		}
		var supported []string
		for _, x := range s.variants {
			if d := x.props[s.discriminator]; d != nil && contains(d.enum, name) {
				v.check(path, x, val)
				return
			}
			supported = append(supported, x.props[s.discriminator].enum...)
		}
		v.fail(at, "invalid_value", "Invalid value: '%s'. Supported values are: %s.", name, quoteList(supported))
		return
	}
	for _, x := range s.variants {
		if matchesType(x, val) {
			v.check(path, x, val)
			return
		}
	}
	v.wrongType(path, s, val)
}

// matchesType reports whether val has the JSON type s takes.
func matchesType(s *schema, val any) bool {
	switch val.(type) {
	case string:
		return s.kind == kString
	case bool:
		return s.kind == kBoolean
	case json.Number:
		return s.kind == kInteger || s.kind == kNumber
	case []any:
		return s.kind == kArray
	case map[string]any:
		return s.kind == kObject || (s.kind == kUnion && s.discriminator != "")
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic messages
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

// short renders a value for a message, cut to a readable length.
func short(x any) string {
	b, _ := json.Marshal(x)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
