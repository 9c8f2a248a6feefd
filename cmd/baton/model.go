package main

import (
	"context"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/vendors"
)

// llmHelp describes -llm for dryrun and serve alike.
var llmHelp = "the `MODEL`: \"live\" for the vendor each role names (provider:, default gemini; keys and base URLs from each SDK's variables: " +
	"GEMINI_API_KEY/GOOGLE_GEMINI_BASE_URL, OPENAI_API_KEY/OPENAI_BASE_URL, ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL), " +
	"a vendor (" + strings.Join(vendors.Names(), ", ") + ") for every call, or a file of scripted replies (YAML or JSON lines: per-call text, delay_ms, error, no_reply); default: the pack's scripted lines"

// realModel makes the real model -llm names, or nil when it names a
// replies file. For a known pack (a dry run), live checks that every
// vendor its roles name has a key, and says which role needs which
// variable; a host serving many packs gets every vendor that has one.
func realModel(ctx context.Context, name, baseURL, model string, p *rules.Pack) (llm.Model, error) {
	switch {
	case name == "live":
		if baseURL != "" || model != "" {
			return nil, usageError("--base-url and --model go with one vendor (--llm %s); with --llm live each role's vendor reads its own variables", strings.Join(vendors.Names(), "|"))
		}
		if p != nil {
			return vendors.ForPack(ctx, p, vendors.Config{})
		}
		return vendors.New(ctx, vendors.Config{})
	case isVendor(name):
		return vendors.One(ctx, name, vendors.Config{BaseURL: baseURL, Model: model})
	case baseURL != "" || model != "":
		return nil, usageError("--base-url and --model go with --llm %s", strings.Join(vendors.Names(), "|"))
	}
	return nil, nil
}

func isVendor(name string) bool { _, ok := vendors.Lookup(name); return ok }
