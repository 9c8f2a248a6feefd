package vendors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
	"github.com/batonhq/baton/runtime/llm"
)

func noKeys(t *testing.T) {
	for _, v := range Vendors {
		for _, k := range v.KeyEnv {
			t.Setenv(k, "")
		}
		t.Setenv(v.URLEnv, "")
	}
}

// A base URL that is not one is that vendor's problem, named with its
// variable, the same for every vendor; packs that do not use the vendor
// still get a router.
func TestBadBaseURL(t *testing.T) {
	for _, raw := range []string{"localhost:9", "ftp://x", " http://x", "http://%zz", "http://"} {
		noKeys(t)
		t.Setenv("OPENAI_API_KEY", "k")
		t.Setenv("ANTHROPIC_API_KEY", "k")
		t.Setenv("GEMINI_API_KEY", "k")
		for _, v := range Vendors {
			t.Setenv(v.URLEnv, raw)
		}
		r, err := New(context.Background(), Config{})
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if len(r.Missing()) != len(Vendors) {
			t.Fatalf("%q: missing %v", raw, r.Missing())
		}
		for _, m := range r.Missing() {
			if !strings.Contains(m, "_BASE_URL=") || !strings.Contains(m, "want an http(s)") {
				t.Errorf("%q: %s", raw, m)
			}
		}
		if _, err := One(context.Background(), "openai", Config{}); err == nil || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
			t.Errorf("%q: One: %v", raw, err)
		}
		// An explicit base URL is the host's choice, over the variable.
		if _, err := One(context.Background(), "anthropic", Config{BaseURL: "http://127.0.0.1:1"}); err != nil {
			t.Errorf("%q: One with a base URL: %v", raw, err)
		}
	}
}

// One vendor for every call: another vendor's model name is dropped for
// the vendor's default, the host's -model wins, and the pack's own model
// for roles that name no vendor goes through.
func TestForcedVendorModels(t *testing.T) {
	var got []string
	inner := llm.ModelFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		got = append(got, req.Provider+"/"+req.Model)
		return llm.Response{Text: "ok"}, nil
	})
	for _, tt := range []struct {
		model string
		reqs  []llm.Request
		want  string
	}{
		{"", []llm.Request{{Provider: "anthropic", Model: "claude-x"}, {Provider: "openai", Model: "gpt-x"}, {Model: "pack-model"}}, "openai/ openai/gpt-x openai/pack-model"},
		{"chosen", []llm.Request{{Provider: "anthropic", Model: "claude-x"}, {Model: "pack-model"}}, "openai/chosen openai/chosen"},
	} {
		got = nil
		f := forced{m: inner, vendor: "openai", model: tt.model}
		for _, req := range tt.reqs {
			if _, err := f.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("-model %q: %s, want %s", tt.model, g, tt.want)
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
	p, err := rulestest.LoadBytes([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An adapter made without a key, through this package or on its own (the
// voice packages call the Gemini adapter's constructor), says which
// environment variables to set, not which Go field: the person reading it
// runs baton, not a Go program.
func TestMissingKeyNamesTheVariables(t *testing.T) {
	noKeys(t)
	for _, v := range Vendors {
		t.Run(v.Provider.String(), func(t *testing.T) {
			_, err := v.New(context.Background(), Config{})
			if !errors.Is(err, v.noKey) {
				t.Fatalf("New without a key = %v, want the adapter's no-key error", err)
			}
			msg := err.Error()
			for _, k := range v.KeyEnv {
				if !strings.Contains(msg, k) {
					t.Errorf("%q does not name %s", msg, k)
				}
			}
			if strings.Contains(msg, "Config") || strings.Contains(msg, "APIKey") {
				t.Errorf("%q names a Go field", msg)
			}
		})
	}
}
