package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

func badRequest(format string, args ...any) *llm.Error {
	return llm.NewError(llm.KindBadRequest, 0, nil, format, args...)
}

// toGenai converts a request. Invalid input (unknown role, args that are
// not a JSON object, malformed schemas) is a bad_request error raised here,
// before any network traffic.
//
// The wire uses only what the API reference documents for
// generateContent:
//
//   - A user message is its text, then for each attached file a text part
//     naming it (AttachmentLabel) right before its inlineData blob. The
//     reference's Blob has only mimeType and data, so a name sent anywhere
//     else would not reach the model, which would see anonymous blobs.
//   - A user message another speaker said (Speaker) is their words as
//     llm.Attributed text: a Content has no field for a participant's
//     name. Consecutive user messages are one user content.
//   - A model message is one model content: its text (when any), then a
//     functionCall part per tool call, in order (a reply that spoke and
//     called tools in parallel). Each part carries the call's ID when it
//     has one and its thought signature when it has one.
//   - Consecutive tool messages are one user content of functionResponse
//     parts in call order, each with the call's ID when it has one.
//
// A message with nothing to send (no text, files or calls) is left out,
// since the API rejects a part without data.
func toGenai(req llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	contents := make([]*genai.Content, 0, len(req.Messages))
	userText := map[int]bool{} // contents made of user messages, not results
	for i, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleUser:
			c := &genai.Content{Role: genai.RoleUser}
			if msg.Text != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: llm.Attributed(msg.Speaker, msg.Text)})
			}
			for j, b := range msg.Blobs {
				c.Parts = append(c.Parts,
					&genai.Part{Text: llm.AttachmentLabel(j, b)},
					&genai.Part{InlineData: &genai.Blob{MIMEType: b.MIME, Data: b.Data}})
			}
			if len(c.Parts) == 0 {
				break
			}
			// Several speakers in a row are one user turn: the API
			// takes repeated roles, but the docs' conversations
			// alternate.
			if n := len(contents); n > 0 && userText[n-1] {
				contents[n-1].Parts = append(contents[n-1].Parts, c.Parts...)
				break
			}
			contents = append(contents, c)
			userText[len(contents)-1] = true
		case llm.RoleModel:
			c := &genai.Content{Role: genai.RoleModel}
			if msg.Text != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: msg.Text})
			}
			for _, tc := range msg.ToolCalls {
				p, err := FunctionCallPart(tc)
				if err != nil {
					return nil, nil, badRequest("message %d: %v", i, err)
				}
				c.Parts = append(c.Parts, p)
			}
			if len(c.Parts) > 0 {
				contents = append(contents, c)
			}
		case llm.RoleTool:
			if msg.ToolResult == nil {
				return nil, nil, badRequest("message %d: tool message without a tool result", i)
			}
			fr, err := FunctionResponse(*msg.ToolResult)
			if err != nil {
				return nil, nil, badRequest("message %d: %v", i, err)
			}
			part := &genai.Part{FunctionResponse: fr}
			// Answers to parallel calls belong in one turn, in call order.
			if n := len(contents); n > 0 && i > 0 && req.Messages[i-1].Role == llm.RoleTool {
				contents[n-1].Parts = append(contents[n-1].Parts, part)
				continue
			}
			contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}})
		default:
			return nil, nil, badRequest("message %d: unknown role %q", i, msg.Role)
		}
	}
	if len(contents) == 0 {
		return nil, nil, badRequest("no message has anything to send")
	}

	config := &genai.GenerateContentConfig{
		Temperature:     req.Temperature,
		MaxOutputTokens: int32(min(max(req.MaxOutputTokens, 0), 1<<31-1)),
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: req.System}}}
	}
	tools, err := Tools(req.Tools)
	if err != nil {
		return nil, nil, badRequest("%v", err)
	}
	config.Tools = tools
	if len(req.ResponseSchema) > 0 {
		if !isJSONObject(req.ResponseSchema) {
			return nil, nil, badRequest("response schema is not a JSON object")
		}
		config.ResponseMIMEType = "application/json"
		config.ResponseJsonSchema = req.ResponseSchema
	}
	return contents, config, nil
}

// FunctionCallPart converts a tool call from history back to a model part,
// with its ID (when it has one) and its thought signature exactly as the
// model gave it: Gemini 3 rejects a history whose calls lack them.
func FunctionCallPart(tc llm.ToolCall) (*genai.Part, error) {
	args, err := objectOrEmpty(tc.Args)
	if err != nil {
		return nil, fmt.Errorf("tool call %q args: %w", tc.Name, err)
	}
	return &genai.Part{
		FunctionCall:     &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args},
		ThoughtSignature: tc.Signature,
	}, nil
}

// FunctionResponse converts a tool result. Gemini wants an object: a
// successful result that is a JSON object is sent as is and any other value
// as {"output": v}. An error result is flattened to one {"error": ...}: an
// object that already has an "error" key (the engine's refusals are
// {"error": "..."}) is sent as is, anything else is wrapped once as
// {"error": v}. "output" and "error" are the keys the Gemini docs
// recommend. The call's ID goes back when it has one.
func FunctionResponse(r llm.ToolResult) (*genai.FunctionResponse, error) {
	var value any
	if len(bytes.TrimSpace(r.Content)) > 0 {
		if err := json.Unmarshal(r.Content, &value); err != nil {
			return nil, fmt.Errorf("tool result %q content is not JSON: %w", r.Name, err)
		}
	}
	obj, isObject := value.(map[string]any)
	var resp map[string]any
	switch {
	case r.IsError && isObject && hasKey(obj, "error"):
		resp = obj
	case r.IsError:
		resp = map[string]any{"error": value}
	case isObject:
		resp = obj
	default:
		resp = map[string]any{"output": value}
	}
	return &genai.FunctionResponse{ID: r.CallID, Name: r.Name, Response: resp}, nil
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// Tools converts declarations to one Gemini tool. Parameters go through
// ParametersJsonSchema so any JSON Schema the pack author wrote is passed on
// verbatim rather than squeezed into the SDK's Schema subset.
func Tools(decls []llm.ToolDecl) ([]*genai.Tool, error) {
	if len(decls) == 0 {
		return nil, nil
	}
	fds := make([]*genai.FunctionDeclaration, 0, len(decls))
	for _, d := range decls {
		if d.Name == "" {
			return nil, fmt.Errorf("tool declaration without a name")
		}
		fd := &genai.FunctionDeclaration{Name: d.Name, Description: d.Description}
		if len(bytes.TrimSpace(d.Parameters)) > 0 {
			if !isJSONObject(d.Parameters) {
				return nil, fmt.Errorf("tool %q parameters are not a JSON object", d.Name)
			}
			fd.ParametersJsonSchema = d.Parameters
		}
		fds = append(fds, fd)
	}
	return []*genai.Tool{{FunctionDeclarations: fds}}, nil
}

// ToolCalls converts function calls as the Live API delivers them,
// numbering the ones without an ID ("call-1", "call-2", ... by position)
// because a Live tool response must name the call it answers. The
// generateContent path does not invent IDs (see toolCalls).
func ToolCalls(fcs []*genai.FunctionCall, signatures [][]byte) ([]llm.ToolCall, error) {
	out, err := toolCalls(fcs, signatures)
	if err != nil {
		return nil, err
	}
	k := 0
	for i, fc := range fcs {
		if fc == nil {
			continue
		}
		if out[k].ID == "" {
			out[k].ID = "call-" + strconv.Itoa(i+1)
		}
		k++
	}
	return out, nil
}

// toolCalls converts function calls from a response. Each keeps the ID the
// model gave it, or none: an invented ID would repeat across a turn's
// retries and a session's turns, so the caller (the engine) assigns
// session-unique IDs to calls without one, and whatever ID a call then
// carries goes back with it (FunctionCallPart, FunctionResponse).
// signatures[i] is the thought signature of fcs[i]'s part; with parallel
// calls the model signs only the first.
func toolCalls(fcs []*genai.FunctionCall, signatures [][]byte) ([]llm.ToolCall, error) {
	var out []llm.ToolCall
	for i, fc := range fcs {
		if fc == nil {
			continue
		}
		tc := llm.ToolCall{ID: fc.ID, Name: fc.Name}
		if fc.Args != nil {
			// encoding/json sorts map keys, so Args bytes are deterministic.
			b, err := json.Marshal(fc.Args)
			if err != nil {
				return nil, fmt.Errorf("function call %q args: %w", fc.Name, err)
			}
			tc.Args = b
		} else {
			tc.Args = json.RawMessage("{}")
		}
		if i < len(signatures) {
			tc.Signature = signatures[i]
		}
		out = append(out, tc)
	}
	return out, nil
}

// fromGenai converts the first candidate. Text parts are concatenated
// (Gemini splits one answer across parts) and thought parts are skipped:
// they are the model's reasoning, not what the agent says.
func fromGenai(resp *genai.GenerateContentResponse) (llm.Response, error) {
	var out llm.Response
	if resp == nil {
		return out, llm.NewError(llm.KindServer, 0, nil, "empty response")
	}
	if u := resp.UsageMetadata; u != nil {
		out.Usage.InputTokens = int(u.PromptTokenCount)
		// Thinking tokens are billed as output, so they count here.
		out.Usage.OutputTokens = int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount)
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			// The prompt was blocked: no answer, withheld by the vendor.
			out.FinishReason = "promptFeedback.blockReason " + string(pf.BlockReason)
			out.Finish = engine.FinishBlocked
		}
		return out, nil
	}
	cand := resp.Candidates[0]
	out.FinishReason = string(cand.FinishReason)
	out.Finish = finish(cand.FinishReason)
	if cand.Content == nil {
		return out, nil
	}
	var text strings.Builder
	var calls []*genai.FunctionCall
	var sigs [][]byte
	for _, p := range cand.Content.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			calls = append(calls, p.FunctionCall)
			sigs = append(sigs, p.ThoughtSignature)
		case p.Thought:
		default:
			text.WriteString(p.Text)
		}
	}
	out.Text = text.String()
	tcs, err := toolCalls(calls, sigs)
	if err != nil {
		return out, llm.NewError(llm.KindServer, 0, err, "%v", err)
	}
	out.ToolCalls = tcs
	return out, nil
}

func objectOrEmpty(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// finish maps a candidate's finishReason to the engine's words: the token
// limit cut it, or the vendor withheld it (safety filters, a blocklist,
// personal data, recitation of a source); "" for any other stop.
func finish(r genai.FinishReason) string {
	switch r {
	case genai.FinishReasonMaxTokens:
		return engine.FinishTruncated
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist,
		genai.FinishReasonSPII, genai.FinishReasonRecitation, genai.FinishReasonImageSafety:
		return engine.FinishBlocked
	}
	return ""
}
