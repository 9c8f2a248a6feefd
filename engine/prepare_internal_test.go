package engine

import (
	"reflect"
	"testing"
)

// TestSameRequestCoversRequest: every field of LLMRequest is either
// compared for a prepared line or deliberately left out, so a new field cannot
// change a request without making its prepared line stale.
func TestSameRequestCoversRequest(t *testing.T) {
	typ := reflect.TypeFor[LLMRequest]()
	for i := range typ.NumField() {
		if _, ok := keyFields[typ.Field(i).Name]; !ok {
			t.Errorf("LLMRequest.%s is not in keyFields: say how sameRequest treats it", typ.Field(i).Name)
		}
	}
	if len(keyFields) != typ.NumField() {
		t.Errorf("keyFields lists %d fields, LLMRequest has %d", len(keyFields), typ.NumField())
	}
	// Each compared field, and a field compared as JSON, matters.
	base := LLMRequest{Role: "qa", Kind: "window", TurnGoal: "g", System: "s",
		TranscriptTail: []TranscriptLine{{T: 1, Speaker: "qa", Text: "hi"}}, ScenarioContext: []KV{{"k", "v"}},
		Assembly: []string{"persona"}, Tools: []ToolDecl{{Name: "t", Parameters: []byte(`{}`)}}}
	changes := map[string]func(r *LLMRequest){
		"Role":                 func(r *LLMRequest) { r.Role = "ba" },
		"Kind":                 func(r *LLMRequest) { r.Kind = "anchor" },
		"TurnGoal":             func(r *LLMRequest) { r.TurnGoal = "h" },
		"Model":                func(r *LLMRequest) { r.Model = "m" },
		"Provider":             func(r *LLMRequest) { r.Provider = "openai" },
		"MaxTokens":            func(r *LLMRequest) { r.MaxTokens = 1000 },
		"Sequence":             func(r *LLMRequest) { r.Sequence = &SequenceCall{ID: "x"} },
		"System":               func(r *LLMRequest) { r.System = "s2" },
		"CandidateLastMessage": func(r *LLMRequest) { r.CandidateLastMessage = "x" },
		"TranscriptTail": func(r *LLMRequest) {
			r.TranscriptTail = []TranscriptLine{{T: 1, Speaker: "qa", Text: "hi", Unclear: true}}
		},
		"ScenarioContext": func(r *LLMRequest) { r.ScenarioContext = []KV{{"k", "w"}} },
		"Constraints":     func(r *LLMRequest) { r.Constraints.MaxQuestionCount = 1 },
		"TimeoutMS":       func(r *LLMRequest) { r.TimeoutMS = 5 },
		"Assembly":        func(r *LLMRequest) { r.Assembly = nil },
		"Files":           func(r *LLMRequest) { r.Files = []FilePart{{Path: "shared/a.md", Text: "x"}} },
		"Tools":           func(r *LLMRequest) { r.Tools[0].Parameters = []byte(`{"type":"object"}`) },
		"Job":             func(r *LLMRequest) { r.Job = "j" },
		"Correction":      func(r *LLMRequest) { r.Correction = &Correction{Rejected: "x"} },
	}
	for name, how := range keyFields {
		if _, ok := changes[name]; how == "compared" && !ok {
			t.Errorf("LLMRequest.%s is compared but this test does not change it", name)
		}
	}
	for name, change := range changes {
		r := base
		r.Tools = append([]ToolDecl(nil), base.Tools...)
		change(&r)
		if sameRequest(&base, &r) || sameRequest(&r, &base) {
			t.Errorf("changing %s leaves the request the same", name)
		}
	}
	if r := base; !sameRequest(&base, &r) {
		t.Error("a request differs from its copy")
	}
	// Prepare marks a request; it is not what the line is written from,
	// on the JSON path too.
	a, b := base, base
	a.Job, b.Job = "j", "j"
	a.Prepare = &Preparation{DueMS: 1}
	if !sameRequest(&a, &b) {
		t.Error("Prepare makes a request with a job differ")
	}
}
