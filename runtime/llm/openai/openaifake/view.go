package openaifake

import (
	"encoding/json"
	"strings"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// View reads a valid request the way the model does, in llmtest's neutral
// terms:
//
//   - System and developer messages are the system instruction, joined by
//     newlines in order.
//   - User messages are user turns: text parts, and a blob for each
//     image, audio and file part (data URLs and base64 decoded; a file's
//     filename is its Name, the one documented name field). Parts by URL
//     or file ID carry no data here.
//   - Assistant messages are model turns: their text (a refusal part
//     reads as text), then one call per tool call with the ID as sent and
//     its arguments as the JSON they hold.
//   - A run of tool messages is one user turn of results, in order. A
//     result's Name is the name of the call its tool_call_id answers (the
//     wire carries no name; the model knows the call), and its Content is
//     the message's text when that is JSON, or the text as a JSON string
//     otherwise. The wire has no error flag, so IsError stays false.
//   - Deprecated function messages are results named by their name.
func (r *Request) View() llmtest.View {
	var v llmtest.View
	var system []string
	calls := map[string]string{} // tool call ID -> function name
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, m.Content.String())
		case "user":
			v.Messages = append(v.Messages, llmtest.Message{Role: llm.RoleUser, Parts: userParts(m.Content)})
		case "assistant":
			msg := llmtest.Message{Role: llm.RoleModel}
			switch {
			case m.Content.Text != nil:
				msg.Parts = append(msg.Parts, llmtest.Part{Text: *m.Content.Text})
			default:
				for _, p := range m.Content.Parts {
					msg.Parts = append(msg.Parts, llmtest.Part{Text: p.Text + p.Refusal})
				}
			}
			for _, c := range m.ToolCalls {
				call := &llm.ToolCall{ID: c.ID}
				switch {
				case c.Function != nil:
					call.Name, call.Args = c.Function.Name, json.RawMessage(c.Function.Arguments)
				case c.Custom != nil:
					input, _ := json.Marshal(c.Custom.Input)
					call.Name, call.Args = c.Custom.Name, input
				}
				calls[c.ID] = call.Name
				msg.Parts = append(msg.Parts, llmtest.Part{Call: call})
			}
			v.Messages = append(v.Messages, msg)
		case "tool", "function":
			result := &llm.ToolResult{CallID: m.ToolCallID, Name: calls[m.ToolCallID], Content: asJSON(m.Content.String())}
			if m.Role == "function" {
				result = &llm.ToolResult{Name: m.Name, Content: asJSON(m.Content.String())}
			}
			part := llmtest.Part{Result: result}
			if n := len(v.Messages); n > 0 && i > 0 && isResult(r.Messages[i-1].Role) {
				v.Messages[n-1].Parts = append(v.Messages[n-1].Parts, part)
				continue
			}
			v.Messages = append(v.Messages, llmtest.Message{Role: llm.RoleUser, Parts: []llmtest.Part{part}})
		}
	}
	v.System = strings.Join(system, "\n")
	for _, t := range r.Tools {
		switch {
		case t.Function != nil:
			v.Tools = append(v.Tools, t.Function.Name)
		case t.Custom != nil:
			var c struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(t.Custom, &c)
			v.Tools = append(v.Tools, c.Name)
		}
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		v.ResponseSchema = rf.JSONSchema.Schema
	}
	return v
}

func isResult(role string) bool { return role == "tool" || role == "function" }

func userParts(c Content) []llmtest.Part {
	if c.Text != nil {
		return []llmtest.Part{{Text: *c.Text}}
	}
	parts := make([]llmtest.Part, 0, len(c.Parts))
	for _, p := range c.Parts {
		var part llmtest.Part
		switch {
		case p.ImageURL != nil:
			part.Blob = &llm.Blob{}
			if mt, data, ok := parseDataURL(p.ImageURL.URL); ok {
				part.Blob.MIME, part.Blob.Data = mt, data
			}
		case p.InputAudio != nil:
			data, _ := decodeBase64(p.InputAudio.Data)
			part.Blob = &llm.Blob{MIME: "audio/" + strings.Replace(p.InputAudio.Format, "mp3", "mpeg", 1), Data: data}
		case p.File != nil:
			part.Blob = &llm.Blob{Name: p.File.Filename}
			if mt, data, ok := parseDataURL(p.File.FileData); ok {
				part.Blob.MIME, part.Blob.Data = mt, data
			} else if data, ok := decodeBase64(p.File.FileData); ok && p.File.FileData != "" {
				part.Blob.MIME, part.Blob.Data = "application/pdf", data
			}
		default:
			part.Text = p.Text
		}
		parts = append(parts, part)
	}
	return parts
}

// asJSON is the JSON value a tool message's text stands for: the text
// itself when it is JSON, else the text as a JSON string.
func asJSON(s string) json.RawMessage {
	if t := strings.TrimSpace(s); t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}
