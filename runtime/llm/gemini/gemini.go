// Package gemini implements llm.Model with the Gemini API through the
// official google.golang.org/genai SDK.
//
// Every call is a stateless GenerateContent request carrying the whole
// conversation, so retries and replays need nothing beyond the llm.Request.
// The SDK's own HTTP retries are switched off: llm.WithPolicy owns the retry
// budget, and two retry layers would multiply attempts past the seeds' 90 s.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
)

// DefaultModel is used when neither Config.Model nor Request.Model is set:
// a Gemini 3 model, so the normal path is the strict one. Gemini 3 models
// enforce thought signatures on function calling: the signature a
// response gives a function call must come back with that call in later
// requests (llm.ToolCall.Signature), or the call fails with 400. An older
// default tolerated the omission and so hid it.
const DefaultModel = "gemini-3.8-flash"

// ErrNoAPIKey is returned by New when no API key is configured. It names
// the environment variables, what a person running baton can set; a
// program passing Config.APIKey knows it left it empty.
var ErrNoAPIKey = errors.New("gemini: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY")

// Config configures a Model.
type Config struct {
	// APIKey defaults to $GEMINI_API_KEY, then $GOOGLE_API_KEY.
	APIKey string
	// BaseURL overrides the API endpoint (tests point it at a local fake).
	BaseURL string
	// Model is the default model name, e.g. "gemini-3.8-flash".
	Model string
	// HTTPClient defaults to a client whose transport keeps enough idle
	// connections for a panel's concurrent calls.
	HTTPClient *http.Client
}

// Model is a Gemini-backed llm.Model. It is safe for concurrent use: it
// holds only immutable configuration and the SDK client, and each call
// builds its own request, so calls never wait on each other.
type Model struct {
	client *genai.Client
	model  string
}

var _ llm.Model = (*Model)(nil)

// APIKey resolves the key: explicit, then $GEMINI_API_KEY, then
// $GOOGLE_API_KEY. It returns ErrNoAPIKey when all are empty.
func APIKey(explicit string) (string, error) {
	for _, k := range []string{explicit, os.Getenv("GEMINI_API_KEY"), os.Getenv("GOOGLE_API_KEY")} {
		if k = strings.TrimSpace(k); k != "" {
			return k, nil
		}
	}
	return "", ErrNoAPIKey
}

// ClientConfig builds the SDK configuration shared by this package and the
// Live adapter: Gemini API backend, explicit key, optional base URL, and no
// SDK-level retries.
func ClientConfig(apiKey, baseURL string, hc *http.Client) (*genai.ClientConfig, error) {
	key, err := APIKey(apiKey)
	if err != nil {
		return nil, err
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("gemini: invalid base URL %q", baseURL)
		}
	}
	if hc == nil {
		hc = defaultHTTPClient()
	}
	return &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      baseURL,
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)},
		},
	}, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// The stock limit of 2 idle connections per host makes a third
	// concurrent agent call pay for a fresh TLS handshake.
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t}
}

// New creates a Model. It makes no network call.
func New(ctx context.Context, cfg Config) (*Model, error) {
	cc, err := ClientConfig(cfg.APIKey, cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	client, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: create client: %w", err)
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	return &Model{client: client, model: model}, nil
}

// Generate sends one GenerateContent request. Errors are *llm.Error.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	contents, config, err := toGenai(req)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := generateContent(ctx, m.client, model, contents, config)
	if err != nil {
		return llm.Response{}, classify(ctx, err)
	}
	return fromGenai(resp)
}

// ErrSDKPanic marks a panic inside the SDK. Its response converters assert
// on the JSON shape (a "candidates" string instead of a list panics), so a
// malformed body from the server, or a proxy in front of it, would
// otherwise crash the host.
var ErrSDKPanic = errors.New("SDK panicked")

func generateContent(ctx context.Context, c *genai.Client, model string, contents []*genai.Content, config *genai.GenerateContentConfig) (resp *genai.GenerateContentResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("%w: %v", ErrSDKPanic, r)
		}
	}()
	return c.Models.GenerateContent(ctx, model, contents, config)
}
