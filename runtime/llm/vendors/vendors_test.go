package vendors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/llm"
)

func noKeys(t *testing.T) {
	for _, v := range Vendors {
		for _, k := range v.KeyEnv {
			t.Setenv(k, "")
		}
	}
}

// Every vendor a pack may name has an adapter, and no adapter is
// reachable from no pack.
func TestEveryProviderHasAVendor(t *testing.T) {
	if got, want := Names(), rules.ProviderNames(); !slices.Equal(got, want) {
		t.Errorf("vendors %v, packs may name %v", got, want)
	}
}

func TestMissingKeyNamesRoleAndVariable(t *testing.T) {
	noKeys(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p := packWith(t, `
roles:
  - {id: gpt, persona: p, provider: openai}
  - {id: claude, persona: p, provider: anthropic}
  - {id: plain, persona: p}
`)
	_, err := ForPack(context.Background(), p, Config{})
	if err == nil {
		t.Fatal("no error with two vendors' keys missing")
	}
	for _, want := range []string{"role claude uses anthropic: no API key: set ANTHROPIC_API_KEY", "role plain uses gemini: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "gpt") {
		t.Errorf("error %q names a role whose key is set", err)
	}
}

// A router without a vendor's key still starts; a call for that vendor
// is a bad request (not retried) naming the variable, and a call for a
// vendor it has goes there.
func TestRouterRoutesByProvider(t *testing.T) {
	called := map[string]int{}
	r := &Router{models: map[string]llm.Model{}, missing: map[string]error{"anthropic": errors.New("anthropic: no API key: set ANTHROPIC_API_KEY")}, def: "gemini"}
	for _, name := range []string{"gemini", "openai"} {
		r.models[name] = llm.ModelFunc(func(context.Context, llm.Request) (llm.Response, error) {
			called[name]++
			return llm.Response{Text: name}, nil
		})
	}
	for _, tt := range []struct{ provider, want string }{{"", "gemini"}, {"openai", "openai"}, {"gemini", "gemini"}} {
		resp, err := r.Generate(context.Background(), llm.Request{Provider: tt.provider})
		if err != nil || resp.Text != tt.want {
			t.Errorf("provider %q: %q, %v; want %s", tt.provider, resp.Text, err, tt.want)
		}
	}
	_, err := r.Generate(context.Background(), llm.Request{Provider: "anthropic"})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || e.Retryable || !strings.Contains(e.Message, "ANTHROPIC_API_KEY") {
		t.Errorf("call without a key: %v", err)
	}
	if called["gemini"] != 2 || called["openai"] != 1 {
		t.Errorf("calls %v", called)
	}
}

func TestNewListsMissing(t *testing.T) {
	noKeys(t)
	t.Setenv("GEMINI_API_KEY", "g")
	r, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Has("gemini") || r.Has("openai") || len(r.Missing()) != 2 {
		t.Errorf("has gemini %v, openai %v, missing %v", r.Has("gemini"), r.Has("openai"), r.Missing())
	}
	if _, err := One(context.Background(), "openai", Config{}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("One without a key: %v", err)
	}
	if _, err := One(context.Background(), "mistral", Config{}); err == nil || !strings.Contains(err.Error(), "gemini, openai, anthropic") {
		t.Errorf("One of an unknown vendor: %v", err)
	}
}

func packWith(t *testing.T, roles string) *rules.Pack {
	t.Helper()
	src := "name: t\nschema: 1\nduration: 1m\n" + roles
	p, err := rules.LoadBytes([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
