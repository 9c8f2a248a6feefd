package rules_test

import (
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
)

// A role's model choice: its own where set, else llm's; naming another
// vendor drops llm's model name, which would mean nothing there.
func TestModelFor(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte(`
name: m
schema: 1
duration: 1m
llm: {provider: openai, model: gpt-4o, max_tokens: 500}
roles:
  - {id: plain, persona: p}
  - {id: same_vendor, persona: p, provider: openai, max_tokens: 100}
  - {id: other, persona: p, provider: anthropic}
  - {id: named, persona: p, provider: gemini, model: gemini-x}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		role string
		want rules.ModelChoice
	}{
		{"plain", rules.ModelChoice{Provider: rules.ProviderOpenAI, Model: "gpt-4o", MaxTokens: 500}},
		{"same_vendor", rules.ModelChoice{Provider: rules.ProviderOpenAI, Model: "gpt-4o", MaxTokens: 100}},
		{"other", rules.ModelChoice{Provider: rules.ProviderAnthropic, MaxTokens: 500}},
		{"named", rules.ModelChoice{Provider: rules.ProviderGemini, Model: "gemini-x", MaxTokens: 500}},
	} {
		if got := p.ModelFor(tt.role); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.role, got, tt.want)
		}
	}
	if _, err := rulestest.LoadBytes([]byte("name: m\nschema: 1\nduration: 1m\nroles: [{id: a, persona: p, provider: mistral, max_tokens: -1}]\n")); err == nil {
		t.Error("an unknown provider and a negative max_tokens loaded")
	} else {
		t.Log(err)
	}
}
