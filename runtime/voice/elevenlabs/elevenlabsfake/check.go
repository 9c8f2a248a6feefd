package elevenlabsfake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// errStop ends a script after a step that closed the connection.
var errStop = errors.New("script stopped")

const (
	initiationType = "conversation_initiation_client_data"
	pongType       = "pong"
	toolResultType = "client_tool_result"
)

// kind is what a field's value must be.
type kind int

const (
	kString  kind = iota
	kBool         // true or false
	kInt          // a JSON number without fraction
	kNumber       // any JSON number
	kStrings      // an array of strings
	kScalars      // an object of strings, numbers and booleans
	kFree         // any object
	kObject       // an object with the fields in spec.fields
)

// spec describes one field. Optional fields may also be null, which the
// contract allows for most of them and which means absent.
type spec struct {
	kind     kind
	required bool
	fields   map[string]spec
}

func obj(fields map[string]spec) spec { return spec{kind: kObject, fields: fields} }

var (
	str    = spec{kind: kString}
	reqStr = spec{kind: kString, required: true}
	reqInt = spec{kind: kInt, required: true}
	typ    = spec{kind: kString, required: true}
)

// clientMessages is the contract's client-to-server messages (the
// publish side of agent.asyncapi.yaml), field by field. User audio is
// checked apart, since it has no type.
var clientMessages = map[string]map[string]spec{
	initiationType: {
		"type": typ,
		"conversation_config_override": obj(map[string]spec{
			"agent": obj(map[string]spec{
				"first_message":         str,
				"language":              str,
				"prompt":                obj(map[string]spec{"prompt": str, "llm": str}),
				"native_mcp_server_ids": {kind: kStrings},
			}),
			"asr": obj(map[string]spec{"keywords": {kind: kStrings}}),
			"tts": obj(map[string]spec{
				"voice_id": str, "stability": {kind: kNumber}, "speed": {kind: kNumber}, "similarity_boost": {kind: kNumber},
			}),
			"conversation": obj(map[string]spec{"text_only": {kind: kBool}, "client_events": {kind: kStrings}}),
		}),
		"custom_llm_extra_body": {kind: kFree},
		"dynamic_variables":     {kind: kScalars},
		"user_id":               str,
		"source_info":           obj(map[string]spec{"source": str, "version": str}),
		"tool_mock_config": obj(map[string]spec{
			"mocking_strategy": str, "mocked_tool_names": {kind: kStrings}, "fallback_strategy": str,
		}),
	},
	pongType:            {"type": typ, "event_id": reqInt},
	"user_message":      {"type": typ, "text": str, "rich_content_id": str},
	"user_activity":     {"type": typ},
	"contextual_update": {"type": typ, "text": reqStr, "context_id": str},
	toolResultType: {
		"type": typ, "tool_call_id": reqStr, "result": reqStr, "is_error": {kind: kBool, required: true},
	},
	"feedback":                 {"type": typ, "event_id": reqInt, "score": str},
	"mcp_tool_approval_result": {"type": typ, "tool_call_id": reqStr, "is_approved": {kind: kBool, required: true}},
	"multimodal_message": {
		"type": typ,
		"text": obj(map[string]spec{"type": typ, "text": str, "rich_content_id": str}),
		"file": obj(map[string]spec{"type": typ, "file_id": reqStr}),
	},
}

// check decodes one client message and holds it to the contract and to
// the conversation so far. It runs with c.mu held.
func (c *Conn) check(data []byte) (Message, error) {
	msg := Message{Raw: append(json.RawMessage(nil), data...)}
	dec := json.NewDecoder(bytes.NewReader(data))
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return msg, fmt.Errorf("invalid message: not one JSON object")
	}
	msg.Fields = fields
	if chunk, ok := fields[AudioChunk]; ok {
		msg.Type = AudioChunk
		if len(fields) != 1 {
			return msg, fmt.Errorf("invalid message: user audio carries only user_audio_chunk, got fields %s", keys(fields))
		}
		s, ok := chunk.(string)
		if !ok {
			return msg, fmt.Errorf("invalid message: user_audio_chunk is not a string")
		}
		audio, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return msg, fmt.Errorf("invalid message: user_audio_chunk is not base64: %v", err)
		}
		msg.Audio = audio
	} else {
		t, _ := fields["type"].(string)
		if t == "" {
			return msg, fmt.Errorf("invalid message: no type")
		}
		msg.Type = t
		schema, ok := clientMessages[t]
		if !ok {
			return msg, fmt.Errorf("invalid message: unknown type %q", t)
		}
		if err := checkFields("", fields, schema); err != nil {
			return msg, fmt.Errorf("invalid %s: %v", t, err)
		}
	}
	first := len(c.received) == 0
	switch {
	case first && msg.Type != initiationType:
		return msg, fmt.Errorf("first message must be %s, got %s", initiationType, msg.Type)
	case !first && msg.Type == initiationType:
		return msg, fmt.Errorf("second %s", initiationType)
	case msg.Type == pongType:
		id, _ := fields["event_id"].(float64)
		if !c.pings[int64(id)] {
			return msg, fmt.Errorf("pong for event_id %v, which no ping awaits", fields["event_id"])
		}
		delete(c.pings, int64(id))
	case msg.Type == toolResultType:
		id, _ := fields["tool_call_id"].(string)
		if !c.toolCalls[id] {
			return msg, fmt.Errorf("client_tool_result for %q, which no client_tool_call awaits", id)
		}
		delete(c.toolCalls, id)
	}
	return msg, nil
}

// checkFields checks an object against its fields' specs.
func checkFields(path string, v map[string]any, fields map[string]spec) error {
	for _, k := range sortedKeys(v) {
		sp, ok := fields[k]
		if !ok {
			return fmt.Errorf("undocumented field %q", path+k)
		}
		if v[k] == nil && !sp.required {
			continue
		}
		if err := checkValue(path+k, v[k], sp); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(fields) {
		if _, ok := v[k]; fields[k].required && !ok {
			return fmt.Errorf("missing field %q", path+k)
		}
	}
	return nil
}

func checkValue(path string, v any, sp spec) error {
	bad := func(want string) error { return fmt.Errorf("field %q must be %s", path, want) }
	switch sp.kind {
	case kString:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
	case kBool:
		if _, ok := v.(bool); !ok {
			return bad("a boolean")
		}
	case kInt:
		if n, ok := v.(float64); !ok || n != float64(int64(n)) {
			return bad("an integer")
		}
	case kNumber:
		if _, ok := v.(float64); !ok {
			return bad("a number")
		}
	case kStrings:
		arr, ok := v.([]any)
		if !ok {
			return bad("an array of strings")
		}
		for _, e := range arr {
			if _, ok := e.(string); !ok {
				return bad("an array of strings")
			}
		}
	case kScalars:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object")
		}
		for _, k := range sortedKeys(m) {
			switch m[k].(type) {
			case string, float64, bool:
			default:
				return fmt.Errorf("field %q must be a string, number or boolean", path+"."+k)
			}
		}
	case kFree:
		if _, ok := v.(map[string]any); !ok {
			return bad("an object")
		}
	case kObject:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object")
		}
		return checkFields(path+".", m, sp.fields)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]any) string { return strings.Join(sortedKeys(m), ", ") }
