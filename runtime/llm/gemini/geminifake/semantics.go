package geminifake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
)

// Rules the reference and the guides state in prose rather than in the
// field lists. Each message starts like the service's own where the
// service's wording is known, so a test (or a person) comparing the two
// recognises it.

// MissingSignature begins the message of the 400 a Gemini 3 model answers
// when a function call of the current turn lacks its thought signature.
const MissingSignature = "Function call is missing a thought_signature in functionCall parts"

// CorruptedSignature is the message when a function call carries a thought
// signature this server did not issue for that call.
const CorruptedSignature = "Corrupted thought signature."

// dummySignatures are the values the thought signatures guide documents
// for histories that did not come from the model (injected calls, another
// model's history); the service accepts them in place of a signature.
var dummySignatures = [][]byte{
	mustBase64("skip_thought_signature_validator"),
	mustBase64("context_engineering_is_the_way_to_go"),
}

func mustBase64(s string) []byte {
	b, ok := decodeBase64(s)
	if !ok {
		panic("geminifake: bad dummy signature " + s)
	}
	return b
}

// issuedCall is what a thought signature was issued with: the function
// call it sat on.
type issuedCall struct {
	name string
	args any
}

// signatureBook looks up signatures a server issued; nil when validating
// without a server, which skips the authenticity check.
type signatureBook func(sig []byte) (issuedCall, bool)

// RequiresSignatures reports whether model enforces thought signatures on
// the function calls of the current turn: the Gemini 3 family does.
func RequiresSignatures(model string) bool {
	return strings.HasPrefix(model, "gemini-3")
}

var functionNameRE = regexp.MustCompile(`^[a-zA-Z0-9_:.\-]{1,64}$`)

// checkSemantics returns the violations of req's prose rules.
func checkSemantics(model string, req *Request, book signatureBook) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	const p = "* GenerateContentRequest."

	if len(req.Contents) == 0 {
		fail(p + "contents: contents is not specified")
	}
	if si := req.SystemInstruction; si != nil {
		if si.Role != "" && si.Role != "user" && si.Role != "model" {
			fail("Please use a valid role: user, model. (system_instruction.role is %q)", si.Role)
		}
		for j, part := range si.Parts {
			if part.Text == nil {
				fail(p+"system_instruction.parts[%d]: system instructions take text parts only", j)
			}
		}
	}
	for i, c := range req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			fail("Please use a valid role: user, model. (contents[%d].role is %q)", i, c.Role)
		}
		if len(c.Parts) == 0 {
			fail(p+"contents[%d].parts: contents.parts must not be empty.", i)
		}
		for j, part := range c.Parts {
			at := fmt.Sprintf("%scontents[%d].parts[%d]", p, i, j)
			if !hasData(part) {
				fail("%s.data: required oneof field 'data' must have one initialized field", at)
			}
			if b := part.InlineData; b != nil && b.MIMEType == "" {
				fail("%s.inline_data.mime_type: a MIME type is required", at)
			}
			if fd := part.FileData; fd != nil && fd.FileURI == "" {
				fail("%s.file_data.file_uri: a file URI is required", at)
			}
			if fc := part.FunctionCall; fc != nil {
				if fc.Name == "" {
					fail("%s.function_call.name: Name cannot be empty.", at)
				}
				if c.Role != "model" {
					fail("%s.function_call: function calls belong in a content with role \"model\", not %q", at, c.Role)
				}
			}
			if fr := part.FunctionResponse; fr != nil {
				if fr.Name == "" {
					fail("%s.function_response.name: Name cannot be empty.", at)
				}
				if len(bytes.TrimSpace(fr.Response)) == 0 {
					fail("%s.function_response.response: the function response is required (a JSON object)", at)
				}
				if c.Role == "model" {
					fail("%s.function_response: function responses belong in a user content", at)
				}
			}
		}
	}
	errs = append(errs, checkFunctionHistory(req.Contents)...)
	errs = append(errs, checkTools(req.Tools)...)
	errs = append(errs, checkGenerationConfig(req.GenerationConfig)...)
	for i, s := range req.SafetySettings {
		if s.Category == "" || s.Threshold == "" {
			fail(p+"safety_settings[%d]: category and threshold are both required", i)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, checkSignatures(model, req.Contents, book)...)
	}
	return errs
}

func hasData(p Part) bool {
	return p.Text != nil || p.InlineData != nil || p.FunctionCall != nil || p.FunctionResponse != nil ||
		p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil
}

func calls(c Content) []*FunctionCall {
	var out []*FunctionCall
	for i := range c.Parts {
		if fc := c.Parts[i].FunctionCall; fc != nil {
			out = append(out, fc)
		}
	}
	return out
}

func responses(c Content) []*FunctionResponse {
	var out []*FunctionResponse
	for i := range c.Parts {
		if fr := c.Parts[i].FunctionResponse; fr != nil {
			out = append(out, fr)
		}
	}
	return out
}

// checkFunctionHistory checks that function calls and responses pair up:
// a turn of calls follows a user turn (a prompt or responses to earlier
// calls), and a turn of responses follows the turn of calls it answers,
// answering each call once, by id when the call has one, by name
// otherwise.
func checkFunctionHistory(contents []Content) []string {
	var errs []string
	for i, c := range contents {
		if fcs := calls(c); len(fcs) > 0 {
			if i == 0 || contents[i-1].Role == "model" {
				errs = append(errs, fmt.Sprintf("Please ensure that function call turn comes immediately after a user turn or after a function response turn. (contents[%d])", i))
			}
		}
		frs := responses(c)
		if len(frs) == 0 {
			continue
		}
		var fcs []*FunctionCall
		if i > 0 && contents[i-1].Role == "model" {
			fcs = calls(contents[i-1])
		}
		if len(fcs) == 0 {
			errs = append(errs, fmt.Sprintf("Please ensure that function response turn comes immediately after a function call turn. (contents[%d])", i))
			continue
		}
		if len(frs) != len(fcs) {
			errs = append(errs, fmt.Sprintf("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[%d] has %d responses to %d calls)", i, len(frs), len(fcs)))
			continue
		}
		used := make([]bool, len(fcs))
		for _, fr := range frs {
			k := matchCall(fcs, used, fr)
			if k < 0 {
				what := "name " + fr.Name
				if fr.ID != "" {
					what = "id " + fr.ID + " and name " + fr.Name
				}
				errs = append(errs, fmt.Sprintf("* GenerateContentRequest.contents[%d]: function response with %s answers no function call of contents[%d]", i, what, i-1))
				continue
			}
			used[k] = true
		}
	}
	return errs
}

func matchCall(fcs []*FunctionCall, used []bool, fr *FunctionResponse) int {
	for k, fc := range fcs {
		if used[k] || fc.Name != fr.Name {
			continue
		}
		if fc.ID == fr.ID {
			return k
		}
	}
	return -1
}

// currentTurn returns the index of the content that starts the current
// turn, as the thought signatures guide defines it: the most recent user
// content with standard content (text, media), which a content holding
// only function responses is not. -1 when there is none.
func currentTurn(contents []Content) int {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c.Role == "model" {
			continue
		}
		for _, part := range c.Parts {
			if part.FunctionResponse == nil {
				return i
			}
		}
	}
	return -1
}

// checkSignatures applies the thought signature rules to the current turn:
// for a Gemini 3 model the first function call of each model step must
// carry its signature, and for any model a signature on a function call
// must be one the server issued for that call (or a documented dummy).
// Earlier turns are not checked, as the guide says the service does not.
func checkSignatures(model string, contents []Content, book signatureBook) []string {
	var errs []string
	for i := currentTurn(contents) + 1; i < len(contents); i++ {
		c := contents[i]
		if c.Role != "model" {
			continue
		}
		first := true
		for j, part := range c.Parts {
			fc := part.FunctionCall
			if fc == nil {
				continue
			}
			if first && len(part.ThoughtSignature) == 0 && RequiresSignatures(model) {
				errs = append(errs, fmt.Sprintf("%s. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", MissingSignature, fc.Name, i+1))
			}
			first = false
			if len(part.ThoughtSignature) == 0 || book == nil || isDummy(part.ThoughtSignature) {
				continue
			}
			got, ok := book(part.ThoughtSignature)
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("%s (contents[%d].parts[%d].thought_signature was not issued by this server)", CorruptedSignature, i, j))
			case got.name != fc.Name || !sameJSON(got.args, decodeArgs(fc.Args)):
				errs = append(errs, fmt.Sprintf("%s (contents[%d].parts[%d].thought_signature was issued with function call %s %s, not %s %s)", CorruptedSignature, i, j, got.name, vf.Short(got.args), fc.Name, vf.Short(decodeArgs(fc.Args))))
			}
		}
	}
	return errs
}

func isDummy(sig []byte) bool {
	for _, d := range dummySignatures {
		if bytes.Equal(sig, d) {
			return true
		}
	}
	return false
}

// decodeArgs reads function call args; absent args read as {}.
func decodeArgs(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v
}

func sameJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

func checkTools(tools []Tool) []string {
	var errs []string
	seen := map[string]bool{}
	for i, t := range tools {
		for j, fd := range t.FunctionDeclarations {
			at := fmt.Sprintf("* GenerateContentRequest.tools[%d].function_declarations[%d]", i, j)
			if !functionNameRE.MatchString(fd.Name) {
				errs = append(errs, fmt.Sprintf("%s.name: Invalid function name. Must be a-z, A-Z, 0-9, or contain underscores, colons, dots, and dashes, with a maximum length of 64. (got %q)", at, fd.Name))
			}
			if seen[fd.Name] {
				errs = append(errs, fmt.Sprintf("%s.name: Duplicate function declaration found: %s", at, fd.Name))
			}
			seen[fd.Name] = true
			if len(fd.Parameters) > 0 && len(fd.ParametersJSONSchema) > 0 {
				errs = append(errs, at+": parameters and parameters_json_schema are mutually exclusive")
			}
			if len(fd.Response) > 0 && len(fd.ResponseJSONSchema) > 0 {
				errs = append(errs, at+": response and response_json_schema are mutually exclusive")
			}
			if raw := fd.ParametersJSONSchema; len(raw) > 0 {
				var obj map[string]any
				if json.Unmarshal(raw, &obj) != nil {
					errs = append(errs, at+".parameters_json_schema: the schema must be a JSON object")
				} else if t, ok := obj["type"]; ok && t != "object" {
					errs = append(errs, fmt.Sprintf("%s.parameters_json_schema: the schema must describe an object, not type %v", at, t))
				}
			}
		}
	}
	return errs
}

func checkGenerationConfig(gc *GenerationConfig) []string {
	if gc == nil {
		return nil
	}
	var errs []string
	const at = "* GenerateContentRequest.generation_config"
	if gc.ResponseMIMEType != "" && !slices.Contains(responseMIME, gc.ResponseMIMEType) {
		errs = append(errs, fmt.Sprintf("%s.response_mime_type: allowed mimetypes are %s (got %q)", at, strings.Join(responseMIME, ", "), gc.ResponseMIMEType))
	}
	schemas := 0
	for _, s := range []json.RawMessage{gc.ResponseSchema, gc.ResponseJSONSchema, gc.ResponseJSONSchemaLegacy} {
		if len(s) > 0 {
			schemas++
		}
	}
	if schemas > 1 {
		errs = append(errs, at+": response_schema and the response JSON schema fields are mutually exclusive")
	}
	if len(gc.ResponseJSONSchema) > 0 || len(gc.ResponseJSONSchemaLegacy) > 0 {
		if gc.ResponseMIMEType != "application/json" {
			errs = append(errs, fmt.Sprintf("%s.response_mime_type: a response JSON schema requires response_mime_type \"application/json\" (got %q)", at, gc.ResponseMIMEType))
		}
	}
	if len(gc.ResponseSchema) > 0 && gc.ResponseMIMEType != "application/json" && gc.ResponseMIMEType != "text/x.enum" {
		errs = append(errs, fmt.Sprintf("%s.response_mime_type: response_schema requires response_mime_type \"application/json\" or \"text/x.enum\" (got %q)", at, gc.ResponseMIMEType))
	}
	if tc := gc.ThinkingConfig; tc != nil && tc.ThinkingBudget != nil && tc.ThinkingLevel != "" {
		errs = append(errs, at+".thinking_config: thinking_budget and thinking_level cannot both be set")
	}
	return errs
}
