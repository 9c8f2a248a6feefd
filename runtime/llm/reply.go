package llm

import (
	"encoding/json"
	"strings"
)

// ReplySchema is a JSON Schema for the seed's agent output (§5.4) that a
// host may set as Request.ResponseSchema to get structured replies;
// ParseReply reads both that shape and plain text.
//
// It closes the object (additionalProperties: false): some vendors
// (Anthropic) refuse a structured-output schema that does not.
var ReplySchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"intent_tag":{"type":"string"}},"required":["text"],"additionalProperties":false}`)

// ParseReply extracts the spoken text and optional intent tag from a model
// answer. Models asked for plain text sometimes answer with the §5.4 object
// {"text": ..., "intent_tag": ...}, often inside a ```json fence; both forms
// give the same reply. Anything that is not exactly such an object is taken
// as plain text (fences removed), so a reply is never lost to a parse error.
// The reply is trimmed of surrounding whitespace.
func ParseReply(text string) (reply, intentTag string) {
	s := strings.TrimSpace(text)
	if inner, ok := unfence(s); ok {
		s = inner
	}
	if strings.HasPrefix(s, "{") {
		var obj struct {
			Text      *string `json:"text"`
			IntentTag string  `json:"intent_tag"`
		}
		if err := json.Unmarshal([]byte(s), &obj); err == nil && obj.Text != nil {
			return strings.TrimSpace(*obj.Text), strings.TrimSpace(obj.IntentTag)
		}
	}
	return s, ""
}

// unfence strips a Markdown code fence (``` or ```json ...) wrapping the
// whole of s.
func unfence(s string) (string, bool) {
	const fence = "```"
	if len(s) < 2*len(fence) || !strings.HasPrefix(s, fence) || !strings.HasSuffix(s, fence) {
		return "", false
	}
	body := s[len(fence) : len(s)-len(fence)]
	// The info string ("json") runs to the end of the first line. A fence
	// written on one line ("```{...}```") has none.
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		info := strings.TrimSpace(body[:i])
		if !strings.ContainsAny(info, "{} ") {
			body = body[i+1:]
		}
	} else if j := strings.IndexByte(body, '{'); j > 0 && !strings.ContainsAny(body[:j], " \t") {
		body = body[j:]
	}
	return strings.TrimSpace(body), true
}
