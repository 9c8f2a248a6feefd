package rules

import "go.yaml.in/yaml/v3"

// Provider names the model vendor a role's calls go to. The words are
// the one list of vendors a pack may name; a host maps each to its
// adapter (runtime/llm/vendors), and a test there checks that every word
// has one.
type Provider uint8

// Providers. ProviderDefault leaves the choice to the host.
const (
	ProviderDefault Provider = iota
	ProviderGemini
	ProviderOpenAI
	ProviderAnthropic
)

var providerWords = []string{"", "gemini", "openai", "anthropic"}

func (p Provider) String() string                       { return word(providerWords, uint8(p)) }
func (Provider) enumWords() []string                    { return providerWords }
func (p *Provider) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, p, providerWords) }

// MaxTokensCap bounds max_tokens: far above any answer a turn needs,
// low enough that a typo is caught.
const MaxTokensCap = 200_000

// ProviderNames lists the vendors a pack may name.
func ProviderNames() []string { return providerWords[1:] }

// ModelChoice is where one role's calls go: the vendor, its model name
// and the answer's token cap, the role's own where set, else llm's.
type ModelChoice struct {
	Provider  Provider
	Model     string
	MaxTokens int
}

// ModelFor is role's model choice.
func (p *Pack) ModelFor(role string) ModelChoice {
	m := ModelChoice{Provider: p.LLM.Provider, Model: p.LLM.Model, MaxTokens: p.LLM.MaxTokens}
	r, ok := p.Role(role)
	if !ok {
		return m
	}
	if r.Provider != ProviderDefault && r.Provider != m.Provider {
		// Another vendor's model name means nothing to this one.
		m.Provider, m.Model = r.Provider, ""
	}
	if r.Model != "" {
		m.Model = r.Model
	}
	if r.MaxTokens > 0 {
		m.MaxTokens = r.MaxTokens
	}
	return m
}
