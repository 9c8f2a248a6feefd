// Package openai implements llm.Model with OpenAI's Chat Completions API,
// and with the servers that speak it too (vLLM, Ollama, OpenRouter...),
// through the official SDK, github.com/openai/openai-go/v3: it is
// generated from OpenAI's own API spec, so the request and response types
// follow the reference rather than a third party's reading of it.
//
// Chat Completions rather than the newer Responses API because it is the
// dialect every "OpenAI-compatible" server implements, and because it is
// stateless: each call carries the whole conversation, so retries and
// replays need nothing beyond the llm.Request. The SDK's own HTTP retries
// are switched off: llm.WithPolicy owns the retry budget, and two retry
// layers would multiply attempts past the seeds' 90 s.
//
// Besides OPENAI_API_KEY and OPENAI_BASE_URL (see Config), the SDK reads
// OPENAI_ORG_ID and OPENAI_PROJECT_ID and sends them as headers.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/batonhq/baton/runtime/llm"
)

// DefaultModel is used when neither Config.Model nor Request.Model is set.
// It is a non-reasoning model on purpose: the reasoning models (gpt-5,
// gpt-5-mini, the o-series) refuse every temperature but the default 1
// with HTTP 400, so a pack that sets Request.Temperature would fail on
// every turn with one of them as the default.
const DefaultModel = "gpt-4.1-mini"

// DefaultBaseURL is where requests go when neither Config.BaseURL nor
// $OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// ErrNoAPIKey is returned by New when no API key is configured. It names
// the environment variables, what a person running baton can set; a
// program passing Config.APIKey knows it left it empty.
var ErrNoAPIKey = errors.New("openai: no API key: set OPENAI_API_KEY")

// Config configures a Model.
type Config struct {
	// APIKey defaults to $OPENAI_API_KEY. Servers that want no key still
	// need a placeholder: the SDK always sends a bearer token.
	APIKey string
	// BaseURL defaults to $OPENAI_BASE_URL, then DefaultBaseURL. Point it at
	// any OpenAI-compatible server, or at a local fake in tests.
	BaseURL string
	// Model is the default model name, e.g. "gpt-4.1-mini".
	Model string
	// HTTPClient defaults to a client whose transport keeps enough idle
	// connections for a panel's concurrent calls.
	HTTPClient *http.Client
}

// Model is an llm.Model backed by Chat Completions. It is safe for
// concurrent use: it holds only immutable configuration and the SDK
// service, and each call builds its own request, so calls never wait on
// each other.
type Model struct {
	completions sdk.ChatCompletionService
	model       string
}

var _ llm.Model = (*Model)(nil)

// APIKey resolves the key: explicit, then $OPENAI_API_KEY. It returns
// ErrNoAPIKey when both are empty.
func APIKey(explicit string) (string, error) {
	for _, k := range []string{explicit, os.Getenv("OPENAI_API_KEY")} {
		if k = strings.TrimSpace(k); k != "" {
			return k, nil
		}
	}
	return "", ErrNoAPIKey
}

// BaseURL resolves the endpoint: explicit, then $OPENAI_BASE_URL, then
// DefaultBaseURL. It is resolved here rather than left to the SDK, which
// reads the same variable, so that New can refuse a malformed one before
// the first call instead of failing every turn.
func BaseURL(explicit string) (string, error) {
	base := DefaultBaseURL
	for _, b := range []string{explicit, os.Getenv("OPENAI_BASE_URL")} {
		if b = strings.TrimSpace(b); b != "" {
			base = b
			break
		}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("openai: invalid base URL %q: want http(s)://host[/path]", base)
	}
	return base, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// The stock limit of 2 idle connections per host makes a third
	// concurrent agent call pay for a fresh TLS handshake.
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t}
}

// New creates a Model. It makes no network call; ctx is unused and is
// there so every vendor adapter is constructed the same way.
func New(ctx context.Context, cfg Config) (*Model, error) {
	key, err := APIKey(cfg.APIKey)
	if err != nil {
		return nil, err
	}
	base, err := BaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	client := sdk.NewClient(
		option.WithAPIKey(key),
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	model := strings.TrimSpace(cfg.Model)
	if model == "" {
		model = DefaultModel
	}
	return &Model{completions: client.Chat.Completions, model: model}, nil
}

// Generate sends one chat completion request. Errors are *llm.Error.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	params, err := toParams(model, req)
	if err != nil {
		return llm.Response{}, err
	}
	body, resp, err := m.create(ctx, params)
	if err != nil {
		return llm.Response{}, classify(ctx, err, resp)
	}
	return decodeResponse(body)
}

// ErrSDKPanic marks a panic inside the SDK, sending a request or decoding a
// response. Nothing a server says should crash the host, so any panic
// becomes an error.
var ErrSDKPanic = errors.New("SDK panicked")

// create sends the request and returns the response body undecoded, with
// the HTTP response (nil when none arrived). Taking the body as bytes
// leaves decoding to decodeResponse, which can tell a malformed body from a
// broken connection: the SDK's own decoder accepts truncated JSON without
// an error. The HTTP response is kept for error bodies the SDK cannot
// parse, so their status is not lost.
func (m *Model) create(ctx context.Context, params sdk.ChatCompletionNewParams) (body []byte, resp *http.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			body, err = nil, fmt.Errorf("%w: %v", ErrSDKPanic, r)
		}
	}()
	_, err = m.completions.New(ctx, params, option.WithResponseBodyInto(&body), option.WithResponseInto(&resp))
	return body, resp, err
}
