// Package vendors sends each model call to the vendor its role names
// (a pack's provider:), so one session can ask GPT, Claude and Gemini in
// turn through their official SDKs. Each adapter reads its SDK's usual
// environment variables for key and base URL, so a local model server or
// a proxy that speaks a vendor's API needs no flags.
package vendors

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/anthropic"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/llm/openai"
)

// Config is what a host sets for every vendor it makes.
type Config struct {
	// Default is the vendor of roles that name none (default gemini).
	Default rules.Provider
	// BaseURL and Model, if set, configure the vendor One makes (a host
	// forcing one vendor may point it somewhere); a Router's vendors read
	// their own environment.
	BaseURL string
	Model   string
	// HTTPClient is shared by the adapters (nil: each its own default).
	HTTPClient *http.Client
}

// Vendor is one model vendor baton reaches: its name as packs write it,
// the environment variables its SDK reads, and how to make its adapter.
type Vendor struct {
	Provider rules.Provider
	KeyEnv   []string
	URLEnv   string
	New      func(ctx context.Context, c Config) (llm.Model, error)
	// noKey is the adapter's error for a missing key.
	noKey error
}

// Vendors is the one list of vendors; every rules.Provider has its line
// (a test holds them together).
var Vendors = []Vendor{
	{rules.ProviderGemini, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, "GOOGLE_GEMINI_BASE_URL", func(ctx context.Context, c Config) (llm.Model, error) {
		return gemini.New(ctx, gemini.Config{BaseURL: c.BaseURL, Model: c.Model, HTTPClient: c.HTTPClient})
	}, gemini.ErrNoAPIKey},
	{rules.ProviderOpenAI, []string{"OPENAI_API_KEY"}, "OPENAI_BASE_URL", func(ctx context.Context, c Config) (llm.Model, error) {
		return openai.New(ctx, openai.Config{BaseURL: c.BaseURL, Model: c.Model, HTTPClient: c.HTTPClient})
	}, openai.ErrNoAPIKey},
	{rules.ProviderAnthropic, []string{"ANTHROPIC_API_KEY"}, "ANTHROPIC_BASE_URL", func(ctx context.Context, c Config) (llm.Model, error) {
		return anthropic.New(ctx, anthropic.Config{BaseURL: c.BaseURL, Model: c.Model, HTTPClient: c.HTTPClient})
	}, anthropic.ErrNoAPIKey},
}

// Lookup finds a vendor by its pack name.
func Lookup(name string) (Vendor, bool) {
	i := slices.IndexFunc(Vendors, func(v Vendor) bool { return v.Provider.String() == name })
	if i < 0 {
		return Vendor{}, false
	}
	return Vendors[i], true
}

// Names lists the vendors by their pack names.
func Names() []string {
	out := make([]string, len(Vendors))
	for i, v := range Vendors {
		out[i] = v.Provider.String()
	}
	return out
}

// Router is an llm.Model that hands each request to the adapter of its
// Provider (Config.Default for none). A vendor it has no adapter for
// fails the call as a bad request naming the variable to set.
type Router struct {
	models  map[string]llm.Model
	missing map[string]error
	def     string
}

var _ llm.Model = (*Router)(nil)

// Generate sends req to its vendor's adapter.
func (r *Router) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	name := req.Provider
	if name == "" {
		name = r.def
	}
	if m, ok := r.models[name]; ok {
		return m.Generate(ctx, req)
	}
	why, ok := r.missing[name]
	if !ok {
		why = fmt.Errorf("no adapter for provider %q (vendors: %s)", name, strings.Join(Names(), ", "))
	}
	return llm.Response{}, llm.NewError(llm.KindBadRequest, 0, why, "%v", why)
}

// Has reports whether the router can call vendor name.
func (r *Router) Has(name string) bool { _, ok := r.models[name]; return ok }

// New makes an adapter for every vendor whose key is set. Vendors without
// one are left out; their calls fail naming the variable, and Missing
// lists them so a host can say so when it starts.
func New(ctx context.Context, c Config) (*Router, error) {
	r := &Router{models: map[string]llm.Model{}, missing: map[string]error{}, def: defaultName(c)}
	for _, v := range Vendors {
		name := v.Provider.String()
		if err := v.checkURL(); err != nil {
			// A vendor set up wrong is that vendor's problem: packs that
			// do not use it still run.
			r.missing[name] = err
			continue
		}
		m, err := v.New(ctx, Config{HTTPClient: c.HTTPClient})
		switch {
		case errors.Is(err, v.noKey):
			r.missing[name] = fmt.Errorf("%s: no API key: set %s", v.Provider, strings.Join(v.KeyEnv, " or "))
		case err != nil:
			r.missing[name] = fmt.Errorf("%s: %w", name, err)
		default:
			r.models[name] = m
		}
	}
	return r, nil
}

// checkURL checks the vendor's base-URL variable, if set, the same way
// for every vendor (an SDK left to read it itself takes "localhost:9" and
// then fails every call as a network error, retried for a minute).
func (v Vendor) checkURL() error {
	raw, ok := os.LookupEnv(v.URLEnv)
	if !ok || raw == "" {
		return nil
	}
	if err := CheckURL(raw); err != nil {
		return fmt.Errorf("%s: %s=%q: %v", v.Provider, v.URLEnv, raw, err)
	}
	return nil
}

// CheckURL says whether raw is a base URL a vendor SDK can call:
// http(s), with a host, no spaces around it.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || strings.TrimSpace(raw) != raw || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http(s)://host[:port][/path] URL")
	}
	return nil
}

// One makes vendor name's adapter alone, for a host that sends every
// call to one vendor whatever the pack says.
func One(ctx context.Context, name string, c Config) (llm.Model, error) {
	v, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown vendor %q (vendors: %s)", name, strings.Join(Names(), ", "))
	}
	if c.BaseURL != "" {
		if err := CheckURL(c.BaseURL); err != nil {
			return nil, fmt.Errorf("%s: base URL %q: %v", name, c.BaseURL, err)
		}
	}
	if err := v.checkURL(); err != nil && c.BaseURL == "" {
		return nil, err
	}
	m, err := v.New(ctx, c)
	if errors.Is(err, v.noKey) {
		return nil, fmt.Errorf("%s: no API key: set %s", name, strings.Join(v.KeyEnv, " or "))
	}
	if err != nil {
		return nil, err
	}
	return forced{m: m, vendor: name, model: c.Model}, nil
}

// forced sends every call to one vendor, whatever provider its role
// names: a model name another vendor's role carries means nothing here,
// so it is dropped for the vendor's default, and a model the host chose
// (-model) replaces any.
type forced struct {
	m      llm.Model
	vendor string
	model  string
}

func (f forced) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	switch {
	case f.model != "":
		req.Model = f.model
	case req.Provider != "" && req.Provider != f.vendor:
		req.Model = ""
	}
	req.Provider = f.vendor
	return f.m.Generate(ctx, req)
}

// Missing lists the vendors without a key, each with the variable to set.
func (r *Router) Missing() []string {
	var out []string
	for _, v := range Vendors {
		if err, ok := r.missing[v.Provider.String()]; ok {
			out = append(out, err.Error())
		}
	}
	return out
}

func defaultName(c Config) string {
	if c.Default == rules.ProviderDefault {
		return rules.ProviderGemini.String()
	}
	return c.Default.String()
}

// ForPack makes the router for a session of p: every vendor its roles
// name (and the default, for roles that name none) must have its key; a
// missing one is an error naming the role and the variable.
func ForPack(ctx context.Context, p *rules.Pack, c Config) (*Router, error) {
	r, err := New(ctx, c)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, role := range p.RoleIDs() {
		name := p.ModelFor(role).Provider.String()
		if name == "" {
			name = r.def
		}
		if why, ok := r.missing[name]; ok {
			problems = append(problems, fmt.Sprintf("role %s uses %v", role, why))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return r, nil
}
