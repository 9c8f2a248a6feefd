package llm

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		name, in, reply, tag string
	}{
		{"plain text", "Share your first containment step.", "Share your first containment step.", ""},
		{"plain text trimmed", "  \n Hello.\n\n", "Hello.", ""},
		{"seed 5.4 object", `{"agent":"qa","text":"Share your first containment step. I will validate with replay tests.","intent_tag":"qa_repro_validation","needs_followup":true}`,
			"Share your first containment step. I will validate with replay tests.", "qa_repro_validation"},
		{"object without tag", `{"text":"Just text"}`, "Just text", ""},
		{"json fence", "```json\n{\"text\": \"Fenced.\", \"intent_tag\": \"t\"}\n```", "Fenced.", "t"},
		{"bare fence", "```\n{\"text\": \"Bare.\"}\n```", "Bare.", ""},
		{"fence on one line", "```json{\"text\":\"One line.\"}```", "One line.", ""},
		{"fence around plain text", "```\nNot JSON at all.\n```", "Not JSON at all.", ""},
		{"unicode and escapes", `{"text":"Caf\u00e9 \"quoted\"\nnext","intent_tag":" x "}`, "Café \"quoted\"\nnext", "x"},
		{"object lacking text is plain", `{"intent_tag":"x"}`, `{"intent_tag":"x"}`, ""},
		{"text of wrong type is plain", `{"text":42}`, `{"text":42}`, ""},
		{"trailing junk is plain", `{"text":"a"} and more`, `{"text":"a"} and more`, ""},
		{"truncated JSON is plain", `{"text":"cut`, `{"text":"cut`, ""},
		{"null text is plain", `{"text":null}`, `{"text":null}`, ""},
		{"empty", "", "", ""},
		{"only fences", "``````", "", ""},
		{"prose mentioning braces", "Use {curly} braces?", "Use {curly} braces?", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, tag := ParseReply(tt.in)
			if reply != tt.reply || tag != tt.tag {
				t.Fatalf("ParseReply(%q) = (%q, %q), want (%q, %q)", tt.in, reply, tag, tt.reply, tt.tag)
			}
		})
	}
}

func TestReplySchemaIsValidJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(ReplySchema, &v); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseReply(f *testing.F) {
	for _, seed := range []string{
		"", "plain", `{"text":"a","intent_tag":"b"}`, "```json\n{\"text\":\"x\"}\n```",
		"```", "``````", "```json{\"text\":\"y\"}```", `{"text":`, "{", "\xff\xfe",
	} {
		f.Add(seed, "tag")
	}
	f.Fuzz(func(t *testing.T, text, tag string) {
		// Go's minimizer is quadratic in an input's length; longer inputs
		// reach no code shorter ones do not, and would stall the search
		// for up to -fuzzminimizetime each time one turns up.
		if len(text) > 512 || len(tag) > 64 {
			return
		}
		reply, gotTag := ParseReply(text)
		if reply != strings.TrimSpace(reply) {
			t.Fatalf("reply %q is not trimmed", reply)
		}
		if utf8.ValidString(text) && !utf8.ValidString(reply) {
			t.Fatalf("valid input %q gave invalid reply %q", text, reply)
		}
		// Invalid UTF-8 inside a JSON string becomes U+FFFD, three bytes for
		// one: only valid text can be held to its length.
		if len(reply) > len(text) && !strings.ContainsRune(text, '\\') && utf8.ValidString(text) {
			t.Fatalf("reply %q longer than unescaped input %q", reply, text)
		}
		trimmed := strings.TrimSpace(text)
		if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "`") {
			if reply != trimmed || gotTag != "" {
				t.Fatalf("plain input %q gave (%q, %q)", text, reply, gotTag)
			}
		}
		// Whatever the model wrote as text, the §5.4 object carrying it must
		// give it back (modulo trimming), fenced or not.
		if !utf8.ValidString(text) || !utf8.ValidString(tag) {
			return
		}
		obj, err := json.Marshal(map[string]string{"text": text, "intent_tag": tag})
		if err != nil {
			t.Fatal(err)
		}
		for _, wrapped := range []string{string(obj), "```json\n" + string(obj) + "\n```"} {
			r, g := ParseReply(wrapped)
			if r != strings.TrimSpace(text) || g != strings.TrimSpace(tag) {
				t.Fatalf("round trip of %q/%q via %q gave (%q, %q)", text, tag, wrapped, r, g)
			}
		}
	})
}
