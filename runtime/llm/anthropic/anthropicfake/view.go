package anthropicfake

import (
	"encoding/json"
	"strings"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// View returns the request as the model reads it, in llmtest's neutral
// terms:
//
//   - the system blocks' texts, joined by newlines;
//   - turns, with consecutive messages of one role combined as the
//     reference says the service does; "assistant" reads as
//     llm.RoleModel;
//   - text blocks as text parts; images and inline documents as blobs of
//     their media type, a document's title as the blob's name (the one
//     documented place for a file's name); search results as the text of
//     their blocks;
//   - tool_use blocks as calls (id, name, input); tool_result blocks as
//     results answering the call of that id in the turn before, with its
//     name, their text as the JSON value the model reads (text that is not
//     JSON reads as a JSON string) and is_error as sent;
//   - thinking blocks are left out: the extended thinking guide says the
//     service strips them from the context of earlier turns;
//   - the custom tools' names, and the structured output schema.
func (r *Request) View() llmtest.View {
	var v llmtest.View
	var sys []string
	for _, b := range r.System {
		sys = append(sys, b.Text)
	}
	v.System = strings.Join(sys, "\n")
	turns := Turns(r.Messages)
	for ti, t := range turns {
		m := llmtest.Message{Role: llm.RoleUser}
		if t.Role == "assistant" {
			m.Role = llm.RoleModel
		}
		for _, b := range t.Blocks {
			if p, ok := part(turns, ti, b); ok {
				m.Parts = append(m.Parts, p)
			}
		}
		v.Messages = append(v.Messages, m)
	}
	for _, t := range r.Tools {
		v.Tools = append(v.Tools, t.Name)
	}
	if oc := r.OutputConfig; oc != nil && oc.Format != nil {
		v.ResponseSchema = oc.Format.Schema
	}
	return v
}

func part(turns []Turn, ti int, b Block) (llmtest.Part, bool) {
	switch b.Type {
	case "text":
		return llmtest.Part{Text: b.Text}, true
	case "image", "document":
		blob := &llm.Blob{}
		if b.Title != nil {
			blob.Name = *b.Title
		}
		if s := b.Source; s != nil {
			blob.MIME, blob.Data = s.MediaType, s.Bytes()
			if s.Type == "content" {
				blob.Data = []byte(texts(s.Content))
			}
		}
		return llmtest.Part{Blob: blob}, true
	case "search_result":
		return llmtest.Part{Text: texts(b.Content)}, true
	case "tool_use":
		return llmtest.Part{Call: &llm.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input}}, true
	case "tool_result":
		res := &llm.ToolResult{CallID: b.ToolUseID, Content: resultValue(b.Content)}
		if use := toolUse(turns, ti-1, b.ToolUseID); use != nil {
			res.Name = use.Name
		}
		if b.IsError != nil {
			res.IsError = *b.IsError
		}
		return llmtest.Part{Result: res}, true
	}
	return llmtest.Part{}, false
}

func texts(blocks []Block) string {
	var b strings.Builder
	for _, x := range blocks {
		if x.Type == "text" {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

// resultValue is the JSON value a tool result's text reads as.
func resultValue(content []Block) json.RawMessage {
	text := texts(content)
	if json.Valid([]byte(text)) {
		return json.RawMessage(strings.TrimSpace(text))
	}
	b, _ := json.Marshal(text)
	return b
}
