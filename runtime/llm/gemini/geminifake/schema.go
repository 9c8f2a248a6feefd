package geminifake

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file is the request half of the public REST reference for
// models.generateContent (https://ai.google.dev/api/generate-content and
// the objects on https://ai.google.dev/api/caching), transcribed from the
// reference's source, the google.ai.generativelanguage.v1beta protos
// (googleapis/googleapis, content.proto, generative_service.proto and
// safety.proto as of August 2026), plus ThinkingConfig.thinkingLevel, which
// the thinking guide documents for Gemini 3 and that proto snapshot lacks.
//
// Every documented field of every object a request can carry is listed;
// anything else is rejected the way the service rejects it, with 400
// INVALID_ARGUMENT and a message naming the field. Values are checked
// against their proto3 JSON forms: strings, base64 for bytes, enum names,
// integers in range, durations and timestamps as strings. Each field is
// accepted under its lowerCamelCase JSON name and its snake_case proto
// name, as proto3 JSON endpoints do; after validation a request is
// rewritten to the JSON names before it is decoded into Request.

type kind int

const (
	kString kind = iota
	kBytes
	kBool
	kInt32
	kInt64
	kFloat
	kEnum
	kMessage
	kStruct    // google.protobuf.Struct: any JSON object
	kValue     // google.protobuf.Value: any JSON value
	kDuration  // google.protobuf.Duration: "1.5s"
	kTimestamp // google.protobuf.Timestamp: RFC 3339
)

type enumType struct {
	name   string
	values []string
}

type field struct {
	proto string // snake_case proto name, used in error paths
	json  string // JSON name
	kind  kind
	list  bool // repeated
	mapOf bool // map<string, msg>
	msg   *message
	enum  *enumType
	oneof string
}

// message is a documented object: its fields by JSON name and by proto
// name, both of which the service accepts.
type message struct {
	name  string
	byKey map[string]*field
}

func (m *message) set(fields ...*field) {
	m.byKey = map[string]*field{}
	for _, f := range fields {
		m.byKey[f.json] = f
		m.byKey[f.proto] = f
	}
}

func fld(proto string, k kind) *field { return &field{proto: proto, json: lowerCamel(proto), kind: k} }
func str(proto string) *field         { return fld(proto, kString) }
func boolean(proto string) *field     { return fld(proto, kBool) }
func int32f(proto string) *field      { return fld(proto, kInt32) }
func int64f(proto string) *field      { return fld(proto, kInt64) }
func float(proto string) *field       { return fld(proto, kFloat) }
func bytesf(proto string) *field      { return fld(proto, kBytes) }
func object(proto string, m *message) *field {
	f := fld(proto, kMessage)
	f.msg = m
	return f
}
func enum(proto string, e *enumType) *field {
	f := fld(proto, kEnum)
	f.enum = e
	return f
}

func (f *field) repeated() *field               { f.list = true; return f }
func (f *field) in(oneof string) *field         { f.oneof = oneof; return f }
func (f *field) jsonName(n string) *field       { f.json = n; return f }
func (f *field) mapOfMessages() *field          { f.mapOf = true; return f }
func structf(proto string) *field               { return fld(proto, kStruct) }
func value(proto string) *field                 { return fld(proto, kValue) }
func duration(proto string) *field              { return fld(proto, kDuration) }
func timestamp(proto string) *field             { return fld(proto, kTimestamp) }
func enumOf(name string, v ...string) *enumType { return &enumType{name: name, values: v} }

func lowerCamel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

const pkg = "google.ai.generativelanguage.v1beta."

// The messages, declared first so recursive ones (Schema, Content) can
// refer to each other; init fills them in.
var (
	generateContentRequest = &message{name: pkg + "GenerateContentRequest"}
	contentMsg             = &message{name: pkg + "Content"}
	partMsg                = &message{name: pkg + "Part"}
	blobMsg                = &message{name: pkg + "Blob"}
	fileDataMsg            = &message{name: pkg + "FileData"}
	videoMetadataMsg       = &message{name: pkg + "VideoMetadata"}
	executableCodeMsg      = &message{name: pkg + "ExecutableCode"}
	codeExecResultMsg      = &message{name: pkg + "CodeExecutionResult"}
	functionCallMsg        = &message{name: pkg + "FunctionCall"}
	functionResponseMsg    = &message{name: pkg + "FunctionResponse"}
	functionRespPartMsg    = &message{name: pkg + "FunctionResponsePart"}
	functionRespBlobMsg    = &message{name: pkg + "FunctionResponseBlob"}
	toolMsg                = &message{name: pkg + "Tool"}
	googleSearchMsg        = &message{name: pkg + "Tool.GoogleSearch"}
	computerUseMsg         = &message{name: pkg + "Tool.ComputerUse"}
	intervalMsg            = &message{name: "google.type.Interval"}
	googleMapsMsg          = &message{name: pkg + "GoogleMaps"}
	urlContextMsg          = &message{name: pkg + "UrlContext"}
	fileSearchMsg          = &message{name: pkg + "FileSearch"}
	retrievalResourceMsg   = &message{name: pkg + "FileSearch.RetrievalResource"}
	fsRetrievalConfigMsg   = &message{name: pkg + "FileSearch.RetrievalConfig"}
	searchRetrievalMsg     = &message{name: pkg + "GoogleSearchRetrieval"}
	dynRetrievalConfigMsg  = &message{name: pkg + "DynamicRetrievalConfig"}
	codeExecutionMsg       = &message{name: pkg + "CodeExecution"}
	toolConfigMsg          = &message{name: pkg + "ToolConfig"}
	retrievalConfigMsg     = &message{name: pkg + "RetrievalConfig"}
	latLngMsg              = &message{name: "google.type.LatLng"}
	functionCallingCfgMsg  = &message{name: pkg + "FunctionCallingConfig"}
	functionDeclMsg        = &message{name: pkg + "FunctionDeclaration"}
	schemaMsg              = &message{name: pkg + "Schema"}
	safetySettingMsg       = &message{name: pkg + "SafetySetting"}
	generationConfigMsg    = &message{name: pkg + "GenerationConfig"}
	speechConfigMsg        = &message{name: pkg + "SpeechConfig"}
	voiceConfigMsg         = &message{name: pkg + "VoiceConfig"}
	prebuiltVoiceMsg       = &message{name: pkg + "PrebuiltVoiceConfig"}
	multiSpeakerMsg        = &message{name: pkg + "MultiSpeakerVoiceConfig"}
	speakerVoiceMsg        = &message{name: pkg + "SpeakerVoiceConfig"}
	thinkingConfigMsg      = &message{name: pkg + "ThinkingConfig"}
	imageConfigMsg         = &message{name: pkg + "ImageConfig"}
)

var (
	harmCategory = enumOf(pkg+"HarmCategory",
		"HARM_CATEGORY_UNSPECIFIED", "HARM_CATEGORY_DEROGATORY", "HARM_CATEGORY_TOXICITY",
		"HARM_CATEGORY_VIOLENCE", "HARM_CATEGORY_SEXUAL", "HARM_CATEGORY_MEDICAL",
		"HARM_CATEGORY_DANGEROUS", "HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH",
		"HARM_CATEGORY_SEXUALLY_EXPLICIT", "HARM_CATEGORY_DANGEROUS_CONTENT", "HARM_CATEGORY_CIVIC_INTEGRITY")
	harmBlockThreshold = enumOf(pkg+"SafetySetting.HarmBlockThreshold",
		"HARM_BLOCK_THRESHOLD_UNSPECIFIED", "BLOCK_LOW_AND_ABOVE", "BLOCK_MEDIUM_AND_ABOVE",
		"BLOCK_ONLY_HIGH", "BLOCK_NONE", "OFF")
	schemaType = enumOf(pkg+"Type",
		"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL")
	language     = enumOf(pkg+"ExecutableCode.Language", "LANGUAGE_UNSPECIFIED", "PYTHON")
	outcome      = enumOf(pkg+"CodeExecutionResult.Outcome", "OUTCOME_UNSPECIFIED", "OUTCOME_OK", "OUTCOME_FAILED", "OUTCOME_DEADLINE_EXCEEDED")
	scheduling   = enumOf(pkg+"FunctionResponse.Scheduling", "SCHEDULING_UNSPECIFIED", "SILENT", "WHEN_IDLE", "INTERRUPT")
	fnBehavior   = enumOf(pkg+"FunctionDeclaration.Behavior", "UNSPECIFIED", "BLOCKING", "NON_BLOCKING")
	environment  = enumOf(pkg+"Tool.ComputerUse.Environment", "ENVIRONMENT_UNSPECIFIED", "ENVIRONMENT_BROWSER")
	dynMode      = enumOf(pkg+"DynamicRetrievalConfig.Mode", "MODE_UNSPECIFIED", "MODE_DYNAMIC")
	fcMode       = enumOf(pkg+"FunctionCallingConfig.Mode", "MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED")
	modality     = enumOf(pkg+"GenerationConfig.Modality", "MODALITY_UNSPECIFIED", "TEXT", "IMAGE", "AUDIO")
	mediaRes     = enumOf(pkg+"GenerationConfig.MediaResolution", "MEDIA_RESOLUTION_UNSPECIFIED", "MEDIA_RESOLUTION_LOW", "MEDIA_RESOLUTION_MEDIUM", "MEDIA_RESOLUTION_HIGH")
	thinkingLvl  = enumOf(pkg+"ThinkingConfig.ThinkingLevel", "THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH")
	responseMIME = []string{"text/plain", "application/json", "text/x.enum"}
)

func init() {
	generateContentRequest.set(
		object("system_instruction", contentMsg),
		object("contents", contentMsg).repeated(),
		object("tools", toolMsg).repeated(),
		object("tool_config", toolConfigMsg),
		object("safety_settings", safetySettingMsg).repeated(),
		object("generation_config", generationConfigMsg),
		str("cached_content"),
	)
	contentMsg.set(
		object("parts", partMsg).repeated(),
		str("role"),
	)
	partMsg.set(
		str("text").in("data"),
		object("inline_data", blobMsg).in("data"),
		object("function_call", functionCallMsg).in("data"),
		object("function_response", functionResponseMsg).in("data"),
		object("file_data", fileDataMsg).in("data"),
		object("executable_code", executableCodeMsg).in("data"),
		object("code_execution_result", codeExecResultMsg).in("data"),
		object("video_metadata", videoMetadataMsg).in("metadata"),
		boolean("thought"),
		bytesf("thought_signature"),
		structf("part_metadata"),
	)
	blobMsg.set(str("mime_type"), bytesf("data"))
	fileDataMsg.set(str("mime_type"), str("file_uri"))
	videoMetadataMsg.set(duration("start_offset"), duration("end_offset"), float("fps"))
	executableCodeMsg.set(enum("language", language), str("code"))
	codeExecResultMsg.set(enum("outcome", outcome), str("output"))
	functionCallMsg.set(str("id"), str("name"), structf("args"))
	functionResponseMsg.set(
		str("id"),
		str("name"),
		structf("response"),
		object("parts", functionRespPartMsg).repeated(),
		boolean("will_continue"),
		enum("scheduling", scheduling),
	)
	functionRespPartMsg.set(object("inline_data", functionRespBlobMsg).in("data"))
	functionRespBlobMsg.set(str("mime_type"), bytesf("data"))
	toolMsg.set(
		object("function_declarations", functionDeclMsg).repeated(),
		object("google_search_retrieval", searchRetrievalMsg),
		object("code_execution", codeExecutionMsg),
		object("google_search", googleSearchMsg),
		object("computer_use", computerUseMsg),
		object("url_context", urlContextMsg),
		object("file_search", fileSearchMsg),
		object("google_maps", googleMapsMsg),
	)
	googleSearchMsg.set(object("time_range_filter", intervalMsg))
	intervalMsg.set(timestamp("start_time"), timestamp("end_time"))
	computerUseMsg.set(enum("environment", environment), str("excluded_predefined_functions").repeated())
	googleMapsMsg.set(boolean("enable_widget"))
	urlContextMsg.set()
	fileSearchMsg.set(
		object("retrieval_resources", retrievalResourceMsg).repeated(),
		object("retrieval_config", fsRetrievalConfigMsg),
	)
	retrievalResourceMsg.set(str("rag_store_name"))
	fsRetrievalConfigMsg.set(int32f("top_k"), str("metadata_filter"))
	searchRetrievalMsg.set(object("dynamic_retrieval_config", dynRetrievalConfigMsg))
	dynRetrievalConfigMsg.set(enum("mode", dynMode), float("dynamic_threshold"))
	codeExecutionMsg.set()
	toolConfigMsg.set(
		object("function_calling_config", functionCallingCfgMsg),
		object("retrieval_config", retrievalConfigMsg),
	)
	retrievalConfigMsg.set(object("lat_lng", latLngMsg), str("language_code"))
	latLngMsg.set(float("latitude"), float("longitude"))
	functionCallingCfgMsg.set(enum("mode", fcMode), str("allowed_function_names").repeated())
	functionDeclMsg.set(
		str("name"),
		str("description"),
		object("parameters", schemaMsg),
		value("parameters_json_schema"),
		object("response", schemaMsg),
		value("response_json_schema"),
		enum("behavior", fnBehavior),
	)
	schemaMsg.set(
		enum("type", schemaType),
		str("format"),
		str("title"),
		str("description"),
		boolean("nullable"),
		str("enum").repeated(),
		object("items", schemaMsg),
		int64f("max_items"),
		int64f("min_items"),
		object("properties", schemaMsg).mapOfMessages(),
		str("required").repeated(),
		int64f("min_properties"),
		int64f("max_properties"),
		float("minimum"),
		float("maximum"),
		int64f("min_length"),
		int64f("max_length"),
		str("pattern"),
		value("example"),
		object("any_of", schemaMsg).repeated(),
		str("property_ordering").repeated(),
		value("default"),
	)
	safetySettingMsg.set(enum("category", harmCategory), enum("threshold", harmBlockThreshold))
	generationConfigMsg.set(
		int32f("candidate_count"),
		str("stop_sequences").repeated(),
		int32f("max_output_tokens"),
		float("temperature"),
		float("top_p"),
		int32f("top_k"),
		int32f("seed"),
		str("response_mime_type"),
		object("response_schema", schemaMsg),
		// Two JSON Schema fields: the proto gives the first the JSON name
		// "_responseJsonSchema" and the second "responseJsonSchema".
		value("response_json_schema").jsonName("_responseJsonSchema"),
		value("response_json_schema_ordered").jsonName("responseJsonSchema"),
		float("presence_penalty"),
		float("frequency_penalty"),
		boolean("response_logprobs"),
		int32f("logprobs"),
		boolean("enable_enhanced_civic_answers"),
		enum("response_modalities", modality).repeated(),
		object("speech_config", speechConfigMsg),
		object("thinking_config", thinkingConfigMsg),
		object("image_config", imageConfigMsg),
		enum("media_resolution", mediaRes),
	)
	speechConfigMsg.set(
		object("voice_config", voiceConfigMsg),
		object("multi_speaker_voice_config", multiSpeakerMsg),
		str("language_code"),
	)
	voiceConfigMsg.set(object("prebuilt_voice_config", prebuiltVoiceMsg).in("voice_config"))
	prebuiltVoiceMsg.set(str("voice_name"))
	multiSpeakerMsg.set(object("speaker_voice_configs", speakerVoiceMsg).repeated())
	speakerVoiceMsg.set(str("speaker"), object("voice_config", voiceConfigMsg))
	thinkingConfigMsg.set(boolean("include_thoughts"), int32f("thinking_budget"), enum("thinking_level", thinkingLvl))
	imageConfigMsg.set(str("aspect_ratio"))
}

// validator walks a decoded body, collecting violations and building the
// body rewritten to JSON names.
type validator struct {
	errs []string
}

func (v *validator) fail(format string, args ...any) {
	v.errs = append(v.errs, fmt.Sprintf(format, args...))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " at '" + path + "'"
}

func short(x any) string {
	b, _ := json.Marshal(x)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// object validates obj as message m found at path, returning it with JSON
// names.
func (v *validator) object(path string, m *message, obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	seenOneof := map[string]bool{}
	keys := make([]string, 0, len(obj))
	for key := range obj {
		keys = append(keys, key)
	}
	sort.Strings(keys) // deterministic messages
	for _, key := range keys {
		val := obj[key]
		f, ok := m.byKey[key]
		if !ok {
			v.fail("Invalid JSON payload received. Unknown name %q%s: Cannot find field.", key, at(path))
			continue
		}
		if _, dup := out[f.json]; dup {
			v.fail("Invalid JSON payload received. Duplicate field %q%s.", key, at(path))
			continue
		}
		if val == nil {
			continue // proto3 JSON: null is the default value
		}
		if f.oneof != "" {
			if seenOneof[f.oneof] {
				v.fail("Invalid value%s (oneof), oneof field '%s' is already set. Cannot set '%s'", at(path), f.oneof, f.json)
				continue
			}
			seenOneof[f.oneof] = true
		}
		out[f.json] = v.field(join(path, f.proto), f, val)
	}
	return out
}

func (v *validator) field(path string, f *field, val any) any {
	switch {
	case f.list:
		arr, ok := val.([]any)
		if !ok {
			v.fail("Invalid value%s (%s), %s: Proto field is repeating, cannot start an object or a value.", at(path), typeName(f), short(val))
			return nil
		}
		out := make([]any, len(arr))
		for i, el := range arr {
			if el == nil {
				v.fail("Invalid value at '%s[%d]' (%s), null", path, i, typeName(f))
				continue
			}
			out[i] = v.single(fmt.Sprintf("%s[%d]", path, i), f, el)
		}
		return out
	case f.mapOf:
		obj, ok := val.(map[string]any)
		if !ok {
			v.fail("Invalid value%s (map<string, %s>), %s", at(path), f.msg.name, short(val))
			return nil
		}
		out := make(map[string]any, len(obj))
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out[k] = v.single(fmt.Sprintf("%s[%q]", path, k), f, obj[k])
		}
		return out
	}
	return v.single(path, f, val)
}

var durationRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// single validates one (non-repeated) value of f.
func (v *validator) single(path string, f *field, val any) any {
	bad := func() any {
		v.fail("Invalid value%s (%s), %s", at(path), typeName(f), short(val))
		return val
	}
	switch f.kind {
	case kString:
		if _, ok := val.(string); !ok {
			return bad()
		}
	case kBytes:
		s, ok := val.(string)
		if !ok {
			return bad()
		}
		if _, ok := decodeBase64(s); !ok {
			v.fail("Invalid value%s (TYPE_BYTES), Base64 decoding failed for %s", at(path), short(s))
		}
	case kBool:
		if _, ok := val.(bool); !ok {
			return bad()
		}
	case kInt32, kInt64:
		lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
		if f.kind == kInt64 {
			lo, hi = -(1 << 63), 1<<63-1
		}
		n, ok := number(val)
		if !ok || n != math.Trunc(n) || n < lo || n > hi {
			return bad()
		}
		// Normalized to a JSON number, the form Request decodes.
		if i, err := strconv.ParseInt(fmt.Sprint(val), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		return json.Number(strconv.FormatFloat(n, 'f', -1, 64))
	case kFloat:
		n, ok := number(val)
		if !ok {
			if s, isStr := val.(string); !isStr || (s != "NaN" && s != "Infinity" && s != "-Infinity") {
				return bad()
			}
			return nil // valid, but JSON numbers cannot hold it: left out of Request
		}
		return json.Number(strconv.FormatFloat(n, 'g', -1, 64))
	case kEnum:
		s, ok := val.(string)
		if !ok || !contains(f.enum.values, s) {
			return bad()
		}
	case kStruct:
		if _, ok := val.(map[string]any); !ok {
			return bad()
		}
	case kValue:
	case kDuration:
		s, ok := val.(string)
		if !ok || !durationRE.MatchString(s) {
			return bad()
		}
	case kTimestamp:
		s, ok := val.(string)
		if !ok {
			return bad()
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return bad()
		}
	case kMessage:
		obj, ok := val.(map[string]any)
		if !ok {
			return bad()
		}
		return v.object(path, f.msg, obj)
	}
	return val
}

func typeName(f *field) string {
	switch f.kind {
	case kString:
		return "TYPE_STRING"
	case kBytes:
		return "TYPE_BYTES"
	case kBool:
		return "TYPE_BOOL"
	case kInt32:
		return "TYPE_INT32"
	case kInt64:
		return "TYPE_INT64"
	case kFloat:
		return "TYPE_FLOAT"
	case kEnum:
		return "type.googleapis.com/" + f.enum.name
	case kStruct:
		return "type.googleapis.com/google.protobuf.Struct"
	case kDuration:
		return "type.googleapis.com/google.protobuf.Duration"
	case kTimestamp:
		return "type.googleapis.com/google.protobuf.Timestamp"
	case kMessage:
		return "type.googleapis.com/" + f.msg.name
	}
	return "type.googleapis.com/google.protobuf.Value"
}

// number reads a JSON number, or a string holding one (proto3 JSON allows
// both for numeric fields).
func number(val any) (float64, bool) {
	switch x := val.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
