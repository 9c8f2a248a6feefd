package anthropicfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rules the reference and its guides state in prose rather than in the
// field lists: the Messages API reference (roles, consecutive turns,
// prefill), the tool use guide (how tool results answer tool uses), the
// vision and PDF support guides, extended thinking and structured outputs.
// Messages follow the service's wording where it is known.

// Turn is one conversation turn as the model reads it: consecutive
// messages of the same role, which the reference says "will be combined
// into a single turn". First is the index of its first message.
type Turn struct {
	Role   string
	First  int
	Blocks []Block
	// At[i] is the path of Blocks[i] in the request, for messages.
	At []string
}

// Turns combines consecutive messages of the same role.
func Turns(msgs []Message) []Turn {
	var turns []Turn
	for i, m := range msgs {
		if n := len(turns); n == 0 || turns[n-1].Role != m.Role {
			turns = append(turns, Turn{Role: m.Role, First: i})
		}
		t := &turns[len(turns)-1]
		for j, b := range m.Content {
			t.Blocks = append(t.Blocks, b)
			t.At = append(t.At, fmt.Sprintf("messages.%d.content.%d", i, j))
		}
	}
	return turns
}

// alternation returns a violation for each message with the role of the
// one before it (Config.Alternating).
func alternation(msgs []Message) []string {
	var errs []string
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == msgs[i-1].Role {
			errs = append(errs, fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", i, msgs[i].Role))
		}
	}
	return errs
}

// checkSemantics returns the violations of req's prose rules.
func checkSemantics(req *Request) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	if req.Stream != nil && *req.Stream {
		fail("anthropicfake: streaming responses (stream: true) are not modelled")
	}
	if len(req.Messages) == 0 {
		fail("messages: at least one message is required")
	}
	for i, m := range req.Messages {
		if m.Role == "system" {
			fail("messages.%d.role: anthropicfake: system-role messages are in the API reference but this fake does not model them", i)
		}
		finalAssistant := i == len(req.Messages)-1 && m.Role == "assistant"
		if len(m.Content) == 0 && !finalAssistant {
			fail("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
	}
	for j, b := range req.System {
		errs = append(errs, checkText(fmt.Sprintf("system.%d", j), "system", b)...)
	}
	if len(errs) > 0 {
		return errs
	}

	turns := Turns(req.Messages)
	seenIDs := map[string]string{}
	for ti, t := range turns {
		resultsDone := false
		answered := map[string]bool{}
		for k, b := range t.Blocks {
			at := t.At[k]
			switch b.Type {
			case "text":
				errs = append(errs, checkText(at, "messages", b)...)
			case "image", "document":
				errs = append(errs, checkMedia(at, b)...)
			case "thinking", "redacted_thinking":
				if t.Role != "assistant" {
					fail("%s: %s blocks can only be in assistant messages", at, b.Type)
				}
			case "tool_use":
				if t.Role != "assistant" {
					fail("%s: tool_use blocks can only be in assistant messages", at)
				}
				if prev, dup := seenIDs[b.ID]; dup {
					fail("%s: `tool_use` ids must be unique (%s is also used at %s)", at, b.ID, prev)
				}
				seenIDs[b.ID] = at
			case "tool_result":
				if t.Role != "user" {
					fail("%s: tool_result blocks can only be in user messages", at)
					break
				}
				if resultsDone {
					fail("%s: tool_result blocks must come first in a user message, before any other content", at)
				}
				if !usesTool(turns, ti-1, b.ToolUseID) {
					fail("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", at, b.ToolUseID)
				}
				if answered[b.ToolUseID] {
					fail("%s: more than one `tool_result` block answers the `tool_use` id %s", at, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
				for c, inner := range b.Content {
					if inner.Type == "text" {
						errs = append(errs, checkText(fmt.Sprintf("%s.content.%d", at, c), "messages", inner)...)
					}
				}
			}
			if b.Type != "tool_result" {
				resultsDone = true
			}
		}
		// Every tool use must be answered by the next turn.
		if t.Role == "assistant" && ti+1 < len(turns) {
			var missing []string
			next := turns[ti+1]
			for _, b := range t.Blocks {
				if b.Type == "tool_use" && !answers(next, b.ID) {
					missing = append(missing, b.ID)
				}
			}
			if len(missing) > 0 {
				fail("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", next.First, strings.Join(missing, ", "))
			}
		}
	}
	if n := len(turns); n > 0 && turns[n-1].Role == "assistant" {
		last := turns[n-1]
		if k := len(last.Blocks) - 1; k >= 0 && last.Blocks[k].Type == "text" && strings.TrimRight(last.Blocks[k].Text, " \t\r\n") != last.Blocks[k].Text {
			fail("messages: final assistant content cannot end with trailing whitespace")
		}
	}
	errs = append(errs, checkTools(req)...)
	errs = append(errs, checkThinking(req)...)
	if oc := req.OutputConfig; oc != nil && oc.Format != nil {
		errs = append(errs, checkOutputSchema("output_config.format.schema", oc.Format.Schema)...)
	}
	return errs
}

// checkText applies the rules on text blocks; what names the list in the
// message, as the service does ("messages: text content blocks ...").
func checkText(at, what string, b Block) []string {
	switch {
	case b.Text == "":
		return []string{fmt.Sprintf("%s: text content blocks must be non-empty (%s)", what, at)}
	case strings.TrimSpace(b.Text) == "":
		return []string{fmt.Sprintf("%s: text content blocks must contain non-whitespace text (%s)", what, at)}
	}
	return nil
}

// usesTool reports whether turn ti is an assistant turn with a tool_use
// block whose ID is id.
func usesTool(turns []Turn, ti int, id string) bool {
	return toolUse(turns, ti, id) != nil
}

// toolUse finds the tool_use block with ID id in assistant turn ti.
func toolUse(turns []Turn, ti int, id string) *Block {
	if ti < 0 || ti >= len(turns) || turns[ti].Role != "assistant" {
		return nil
	}
	for k := range turns[ti].Blocks {
		if b := &turns[ti].Blocks[k]; b.Type == "tool_use" && b.ID == id {
			return b
		}
	}
	return nil
}

func answers(t Turn, id string) bool {
	if t.Role != "user" {
		return false
	}
	for _, b := range t.Blocks {
		if b.Type == "tool_result" && b.ToolUseID == id {
			return true
		}
	}
	return false
}

// magic are the leading bytes of each image type the vision guide lists.
var magic = map[string][]string{
	"image/jpeg": {"\xff\xd8\xff"},
	"image/png":  {"\x89PNG\r\n\x1a\n"},
	"image/gif":  {"GIF87a", "GIF89a"},
	"image/webp": {"RIFF"},
}

// checkMedia checks that inline data is what its media type says: the
// service decodes images and PDFs and refuses ones that are not.
func checkMedia(at string, b Block) []string {
	s := b.Source
	if s == nil || s.Type != "base64" {
		return nil
	}
	data := s.Bytes()
	switch {
	case b.Type == "image":
		ok := false
		for _, m := range magic[s.MediaType] {
			if bytes.HasPrefix(data, []byte(m)) && (s.MediaType != "image/webp" || len(data) >= 12 && string(data[8:12]) == "WEBP") {
				ok = true
			}
		}
		if !ok {
			return []string{fmt.Sprintf("%s.image.source.base64.data: Image does not match the provided media type %s", at, s.MediaType)}
		}
	case s.MediaType == "application/pdf" && !bytes.HasPrefix(data, []byte("%PDF-")):
		return []string{fmt.Sprintf("%s.document.source.base64.data: The PDF specified was not valid.", at)}
	}
	return nil
}

func checkTools(req *Request) []string {
	var errs []string
	names := map[string]bool{}
	for i, t := range req.Tools {
		if names[t.Name] {
			errs = append(errs, "tools: Tool names must be unique.")
		}
		names[t.Name] = true
		var schema map[string]json.RawMessage
		if json.Unmarshal(t.InputSchema, &schema) != nil {
			continue // the field list checked it is an object
		}
		at := fmt.Sprintf("tools.%d.custom.input_schema", i)
		switch typ, ok := schema["type"]; {
		case !ok:
			errs = append(errs, at+".type: Field required")
		case string(bytes.TrimSpace(typ)) != `"object"`:
			errs = append(errs, at+".type: Input should be 'object'")
		}
		if t.Strict != nil && *t.Strict {
			errs = append(errs, checkOutputSchema(at, t.InputSchema)...)
		}
	}
	if tc := req.ToolChoice; tc != nil {
		switch {
		case len(req.Tools) == 0 && tc.Type != "none":
			errs = append(errs, "tool_choice: tool_choice may only be specified while providing tools")
		case tc.Type == "tool" && !names[tc.Name]:
			errs = append(errs, fmt.Sprintf("tool_choice.tool.name: tool %q is not among the declared tools", tc.Name))
		}
	}
	return errs
}

func checkThinking(req *Request) []string {
	th := req.Thinking
	if th == nil || th.Type != "enabled" {
		return nil
	}
	var errs []string
	if th.BudgetTokens >= req.MaxTokens {
		errs = append(errs, "`max_tokens` must be greater than `thinking.budget_tokens`")
	}
	if req.Temperature != nil && *req.Temperature != 1 {
		errs = append(errs, "`temperature` may only be set to 1 when thinking is enabled")
	}
	if req.TopK != nil {
		errs = append(errs, "`top_k` is not supported when thinking is enabled")
	}
	return errs
}

// checkOutputSchema applies the structured outputs guide's rule that every
// object in a schema must set additionalProperties to false. It walks the
// keywords that hold subschemas.
func checkOutputSchema(at string, schema json.RawMessage) []string {
	var errs []string
	var walk func(path string, raw json.RawMessage)
	walk = func(path string, raw json.RawMessage) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
		if isObjectType(obj["type"]) {
			if ap, ok := obj["additionalProperties"]; !ok || string(bytes.TrimSpace(ap)) != "false" {
				errs = append(errs, fmt.Sprintf("%s: For 'object' type, 'additionalProperties' must be explicitly set to false", path))
			}
		}
		// The structured outputs guide's unsupported constraints.
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			v := string(bytes.TrimSpace(obj[k]))
			switch k {
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems":
			case "minItems":
				if v == "0" || v == "1" {
					continue
				}
			default:
				continue
			}
			errs = append(errs, fmt.Sprintf("%s: property '%s' is not supported", path, k))
		}
		for _, k := range []string{"items", "not", "if", "then", "else", "contains", "additionalItems", "propertyNames", "additionalProperties"} {
			if sub, ok := obj[k]; ok {
				walk(path+"."+k, sub)
			}
		}
		for _, k := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
			var m map[string]json.RawMessage
			if json.Unmarshal(obj[k], &m) == nil {
				for _, name := range slices.Sorted(maps.Keys(m)) {
					walk(path+"."+k+"."+name, m[name])
				}
			}
		}
		for _, k := range []string{"anyOf", "allOf", "oneOf", "prefixItems", "items"} {
			var list []json.RawMessage
			if json.Unmarshal(obj[k], &list) == nil {
				for i, sub := range list {
					walk(fmt.Sprintf("%s.%s.%d", path, k, i), sub)
				}
			}
		}
	}
	walk(at, schema)
	return errs
}

func isObjectType(raw json.RawMessage) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == "object"
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t == "object" {
				return true
			}
		}
	}
	return false
}
