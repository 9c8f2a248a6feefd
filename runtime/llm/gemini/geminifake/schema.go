package geminifake

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
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

// The scalar types, named as the service's messages name them.
var (
	tString    = &vf.Node{Kind: vf.String, Name: "TYPE_STRING"}
	tBytes     = &vf.Node{Kind: vf.Bytes, Name: "TYPE_BYTES", Valid: func(s string) bool { _, ok := decodeBase64(s); return ok }}
	tBool      = &vf.Node{Kind: vf.Bool, Name: "TYPE_BOOL"}
	tInt32     = &vf.Node{Kind: vf.Int, Name: "TYPE_INT32", Bits: 32}
	tInt64     = &vf.Node{Kind: vf.Int, Name: "TYPE_INT64", Bits: 64}
	tFloat     = &vf.Node{Kind: vf.Number, Name: "TYPE_FLOAT"}
	tStruct    = &vf.Node{Kind: vf.AnyObject, Name: typeURL + "google.protobuf.Struct"}
	tValue     = &vf.Node{Kind: vf.Any, Name: typeURL + "google.protobuf.Value"}
	tDuration  = &vf.Node{Kind: vf.String, Name: typeURL + "google.protobuf.Duration", Valid: regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`).MatchString}
	tTimestamp = &vf.Node{Kind: vf.String, Name: typeURL + "google.protobuf.Timestamp", Valid: func(s string) bool {
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}}
)

const typeURL = "type.googleapis.com/"

// field is a message's field under its proto name; null is its default
// value, so every field takes it.
type field vf.Field

func fld(proto string, n *vf.Node) *field {
	return &field{Key: lowerCamel(proto), Path: proto, Node: n, Nullable: true}
}
func str(proto string) *field                { return fld(proto, tString) }
func boolean(proto string) *field            { return fld(proto, tBool) }
func int32f(proto string) *field             { return fld(proto, tInt32) }
func int64f(proto string) *field             { return fld(proto, tInt64) }
func float(proto string) *field              { return fld(proto, tFloat) }
func bytesf(proto string) *field             { return fld(proto, tBytes) }
func structf(proto string) *field            { return fld(proto, tStruct) }
func value(proto string) *field              { return fld(proto, tValue) }
func duration(proto string) *field           { return fld(proto, tDuration) }
func timestamp(proto string) *field          { return fld(proto, tTimestamp) }
func object(proto string, m *vf.Node) *field { return fld(proto, m) }
func enum(proto string, e *vf.Node) *field   { return fld(proto, e) }
func (f *field) in(oneof string) *field      { f.Oneof = oneof; return f }
func (f *field) jsonName(n string) *field    { f.Key = n; return f }
func (f *field) repeated() *field            { f.Node = &vf.Node{Kind: vf.List, Elem: f.Node}; return f }
func msg(name string) *vf.Node               { return &vf.Node{Kind: vf.Object, Name: typeURL + pkg + name} }
func enumOf(name string, v ...string) *vf.Node {
	return &vf.Node{Kind: vf.String, Name: typeURL + name, Values: v}
}
func (f *field) mapOfMessages() *field {
	f.Node = &vf.Node{Kind: vf.Object, Elem: f.Node, Name: "map<string, " + strings.TrimPrefix(f.Node.Name, typeURL) + ">"}
	return f
}

// set lists a message's fields, each under its JSON name and its proto
// name, both of which the service accepts.
func set(m *vf.Node, fields ...*field) {
	m.Fields = map[string]*vf.Field{}
	for _, f := range fields {
		m.Fields[f.Key] = (*vf.Field)(f)
		m.Fields[f.Path] = (*vf.Field)(f)
	}
}

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
	generateContentRequest = msg("GenerateContentRequest")
	contentMsg             = msg("Content")
	partMsg                = msg("Part")
	blobMsg                = msg("Blob")
	fileDataMsg            = msg("FileData")
	videoMetadataMsg       = msg("VideoMetadata")
	executableCodeMsg      = msg("ExecutableCode")
	codeExecResultMsg      = msg("CodeExecutionResult")
	functionCallMsg        = msg("FunctionCall")
	functionResponseMsg    = msg("FunctionResponse")
	functionRespPartMsg    = msg("FunctionResponsePart")
	functionRespBlobMsg    = msg("FunctionResponseBlob")
	toolMsg                = msg("Tool")
	googleSearchMsg        = msg("Tool.GoogleSearch")
	computerUseMsg         = msg("Tool.ComputerUse")
	intervalMsg            = &vf.Node{Kind: vf.Object, Name: typeURL + "google.type.Interval"}
	googleMapsMsg          = msg("GoogleMaps")
	urlContextMsg          = msg("UrlContext")
	fileSearchMsg          = msg("FileSearch")
	retrievalResourceMsg   = msg("FileSearch.RetrievalResource")
	fsRetrievalConfigMsg   = msg("FileSearch.RetrievalConfig")
	searchRetrievalMsg     = msg("GoogleSearchRetrieval")
	dynRetrievalConfigMsg  = msg("DynamicRetrievalConfig")
	codeExecutionMsg       = msg("CodeExecution")
	toolConfigMsg          = msg("ToolConfig")
	retrievalConfigMsg     = msg("RetrievalConfig")
	latLngMsg              = &vf.Node{Kind: vf.Object, Name: typeURL + "google.type.LatLng"}
	functionCallingCfgMsg  = msg("FunctionCallingConfig")
	functionDeclMsg        = msg("FunctionDeclaration")
	schemaMsg              = msg("Schema")
	safetySettingMsg       = msg("SafetySetting")
	generationConfigMsg    = msg("GenerationConfig")
	speechConfigMsg        = msg("SpeechConfig")
	voiceConfigMsg         = msg("VoiceConfig")
	prebuiltVoiceMsg       = msg("PrebuiltVoiceConfig")
	multiSpeakerMsg        = msg("MultiSpeakerVoiceConfig")
	speakerVoiceMsg        = msg("SpeakerVoiceConfig")
	thinkingConfigMsg      = msg("ThinkingConfig")
	imageConfigMsg         = msg("ImageConfig")
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
	set(generateContentRequest,
		object("system_instruction", contentMsg),
		object("contents", contentMsg).repeated(),
		object("tools", toolMsg).repeated(),
		object("tool_config", toolConfigMsg),
		object("safety_settings", safetySettingMsg).repeated(),
		object("generation_config", generationConfigMsg),
		str("cached_content"),
	)
	set(contentMsg,
		object("parts", partMsg).repeated(),
		str("role"),
	)
	set(partMsg,
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
	set(blobMsg, str("mime_type"), bytesf("data"))
	set(fileDataMsg, str("mime_type"), str("file_uri"))
	set(videoMetadataMsg, duration("start_offset"), duration("end_offset"), float("fps"))
	set(executableCodeMsg, enum("language", language), str("code"))
	set(codeExecResultMsg, enum("outcome", outcome), str("output"))
	set(functionCallMsg, str("id"), str("name"), structf("args"))
	set(functionResponseMsg,
		str("id"),
		str("name"),
		structf("response"),
		object("parts", functionRespPartMsg).repeated(),
		boolean("will_continue"),
		enum("scheduling", scheduling),
	)
	set(functionRespPartMsg, object("inline_data", functionRespBlobMsg).in("data"))
	set(functionRespBlobMsg, str("mime_type"), bytesf("data"))
	set(toolMsg,
		object("function_declarations", functionDeclMsg).repeated(),
		object("google_search_retrieval", searchRetrievalMsg),
		object("code_execution", codeExecutionMsg),
		object("google_search", googleSearchMsg),
		object("computer_use", computerUseMsg),
		object("url_context", urlContextMsg),
		object("file_search", fileSearchMsg),
		object("google_maps", googleMapsMsg),
	)
	set(googleSearchMsg, object("time_range_filter", intervalMsg))
	set(intervalMsg, timestamp("start_time"), timestamp("end_time"))
	set(computerUseMsg, enum("environment", environment), str("excluded_predefined_functions").repeated())
	set(googleMapsMsg, boolean("enable_widget"))
	set(urlContextMsg)
	set(fileSearchMsg,
		object("retrieval_resources", retrievalResourceMsg).repeated(),
		object("retrieval_config", fsRetrievalConfigMsg),
	)
	set(retrievalResourceMsg, str("rag_store_name"))
	set(fsRetrievalConfigMsg, int32f("top_k"), str("metadata_filter"))
	set(searchRetrievalMsg, object("dynamic_retrieval_config", dynRetrievalConfigMsg))
	set(dynRetrievalConfigMsg, enum("mode", dynMode), float("dynamic_threshold"))
	set(codeExecutionMsg)
	set(toolConfigMsg,
		object("function_calling_config", functionCallingCfgMsg),
		object("retrieval_config", retrievalConfigMsg),
	)
	set(retrievalConfigMsg, object("lat_lng", latLngMsg), str("language_code"))
	set(latLngMsg, float("latitude"), float("longitude"))
	set(functionCallingCfgMsg, enum("mode", fcMode), str("allowed_function_names").repeated())
	set(functionDeclMsg,
		str("name"),
		str("description"),
		object("parameters", schemaMsg),
		value("parameters_json_schema"),
		object("response", schemaMsg),
		value("response_json_schema"),
		enum("behavior", fnBehavior),
	)
	set(schemaMsg,
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
	set(safetySettingMsg, enum("category", harmCategory), enum("threshold", harmBlockThreshold))
	set(generationConfigMsg,
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
	set(speechConfigMsg,
		object("voice_config", voiceConfigMsg),
		object("multi_speaker_voice_config", multiSpeakerMsg),
		str("language_code"),
	)
	set(voiceConfigMsg, object("prebuilt_voice_config", prebuiltVoiceMsg).in("voice_config"))
	set(prebuiltVoiceMsg, str("voice_name"))
	set(multiSpeakerMsg, object("speaker_voice_configs", speakerVoiceMsg).repeated())
	set(speakerVoiceMsg, str("speaker"), object("voice_config", voiceConfigMsg))
	set(thinkingConfigMsg, boolean("include_thoughts"), int32f("thinking_budget"), enum("thinking_level", thinkingLvl))
	set(imageConfigMsg, str("aspect_ratio"))
}

var schema = &vf.Schema{Root: generateContentRequest, QuoteKeys: true, ProtoJSON: true}

// message words a violation as the service does.
func message(v vf.Violation) string {
	at := ""
	if v.Path != "" {
		at = " at '" + v.Path + "'"
	}
	switch {
	case v.Code == vf.Unknown:
		return fmt.Sprintf("Invalid JSON payload received. Unknown name %q%s: Cannot find field.", v.Key, at)
	case v.Code == vf.Duplicate:
		return fmt.Sprintf("Invalid JSON payload received. Duplicate field %q%s.", v.Key, at)
	case v.Code == vf.OneofTaken:
		return fmt.Sprintf("Invalid value%s (oneof), oneof field '%s' is already set. Cannot set '%s'", at, v.Field.Oneof, v.Field.Key)
	case v.Code == vf.Undecodable:
		return fmt.Sprintf("Invalid value%s (TYPE_BYTES), Base64 decoding failed for %s", at, vf.Short(v.Value))
	case v.Node.Kind == vf.List:
		return fmt.Sprintf("Invalid value%s (%s), %s: Proto field is repeating, cannot start an object or a value.", at, v.Node.Elem.Name, vf.Short(v.Value))
	}
	return fmt.Sprintf("Invalid value%s (%s), %s", at, v.Node.Name, vf.Short(v.Value))
}
