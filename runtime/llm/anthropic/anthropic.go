// Package anthropic implements llm.Model with Anthropic's Messages API
// through the official github.com/anthropics/anthropic-sdk-go SDK.
//
// Every call is a stateless POST /v1/messages carrying the whole
// conversation, so retries and replays need nothing beyond the llm.Request.
// The SDK's own HTTP retries are switched off: llm.WithPolicy owns the retry
// budget, and two retry layers would multiply attempts past the seeds' 90 s.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/batonhq/baton/runtime/llm"
)

// DefaultModel is used when neither Config.Model nor Request.Model is set:
// the newest Claude model that takes every field of llm.Request as is.
// Claude Opus 4.7 and later models such as Claude Sonnet 5 answer 400 to
// any temperature, and think by default, which in a tool loop puts state
// on the calls that this adapter does not carry back; name one in
// Config.Model or Request.Model for requests that need neither.
const DefaultModel = sdk.ModelClaudeSonnet4_6

// DefaultMaxTokens is max_tokens when the request sets no
// MaxOutputTokens. The API requires the field, and reads 0 as "only fill
// the prompt cache", so it is never left at 0. The bill counts tokens
// generated, not the cap, so a generous cap costs nothing, while a tight
// one would cut a job's JSON output short.
const DefaultMaxTokens = 4096

// ErrNoAPIKey is returned by New when no API key is configured. It names
// the environment variables, what a person running baton can set; a
// program passing Config.APIKey knows it left it empty.
var ErrNoAPIKey = errors.New("anthropic: no API key: set ANTHROPIC_API_KEY")

// Config configures a Model.
type Config struct {
	// APIKey defaults to $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL overrides the API endpoint (tests point it at a local fake);
	// it defaults to $ANTHROPIC_BASE_URL, then the SDK's default.
	BaseURL string
	// Model is the default model name, e.g. "claude-sonnet-4-6".
	Model string
	// HTTPClient defaults to a client whose transport keeps enough idle
	// connections for a panel's concurrent calls.
	HTTPClient *http.Client
}

// Model is an Anthropic-backed llm.Model. It is safe for concurrent use:
// it holds only immutable configuration and the SDK client, and each call
// builds its own request, so calls never wait on each other.
type Model struct {
	messages sdk.MessageService
	model    string
}

var _ llm.Model = (*Model)(nil)

// APIKey resolves the key: explicit, then $ANTHROPIC_API_KEY. It returns
// ErrNoAPIKey when both are empty.
func APIKey(explicit string) (string, error) {
	for _, k := range []string{explicit, os.Getenv("ANTHROPIC_API_KEY")} {
		if k = strings.TrimSpace(k); k != "" {
			return k, nil
		}
	}
	return "", ErrNoAPIKey
}

// BaseURL resolves the endpoint: explicit, then $ANTHROPIC_BASE_URL; ""
// means the SDK's default. A URL without scheme and host is an error.
func BaseURL(explicit string) (string, error) {
	base := strings.TrimSpace(explicit)
	if base == "" {
		base = strings.TrimSpace(os.Getenv("ANTHROPIC_BASE_URL"))
	}
	if base == "" {
		return "", nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("anthropic: invalid base URL %q", base)
	}
	return base, nil
}

// attemptTimeout is handed to the SDK so that it neither arms its own
// ten-minute timer on every attempt nor refuses, as it does by default, a
// non-streaming call whose max_tokens suggests more than ten minutes of
// generation: llm.WithPolicy bounds each attempt by its context, in
// seconds, and the caller's deadline always comes first. It stays a safety
// net for a caller without one.
const attemptTimeout = time.Hour

// clientOptions builds the SDK options: explicit key, optional base URL,
// no SDK-level retries, and nothing read from the environment or the
// SDK's profile files beyond what APIKey and BaseURL resolve, so which
// credential a process uses never depends on files in its home directory.
// The SDK's OpenTelemetry spans are off: baton reports through its own
// metrics, and with them on the SDK builds a span's attributes on every
// call even when no tracer records them (21 allocations and 2.6 kB a call
// in BenchmarkAdapterOverhead).
func clientOptions(apiKey, baseURL string, hc *http.Client) ([]option.RequestOption, error) {
	key, err := APIKey(apiKey)
	if err != nil {
		return nil, err
	}
	base, err := BaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = defaultHTTPClient()
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(attemptTimeout),
		option.WithoutOpenTelemetry(),
	}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	return opts, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// The stock limit of 2 idle connections per host makes a third
	// concurrent agent call pay for a fresh TLS handshake.
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t}
}

// New creates a Model. It makes no network call; ctx is there so that
// every adapter's constructor has gemini.New's shape.
func New(_ context.Context, cfg Config) (*Model, error) {
	opts, err := clientOptions(cfg.APIKey, cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	return &Model{messages: sdk.NewClient(opts...).Messages, model: model}, nil
}

// Generate sends one Messages request. Errors are *llm.Error.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	params, err := toParams(req, model)
	if err != nil {
		return llm.Response{}, err
	}
	body, err := m.send(ctx, params)
	if err != nil {
		return llm.Response{}, classify(ctx, err)
	}
	return fromBody(body)
}

// ErrSDKPanic marks a panic inside the SDK, recovered so that no input,
// from the caller or from the server, can crash the host.
var ErrSDKPanic = errors.New("SDK panicked")

// send makes the call and returns the response body undecoded: the SDK's
// decoder accepts truncated and mistyped JSON without an error (a body
// cut after `{"content": [` decodes to an empty message), so the adapter
// decodes it itself, strictly (fromBody), and can tell a broken answer
// from an empty one.
func (m *Model) send(ctx context.Context, params sdk.MessageNewParams) (body []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			body, err = nil, fmt.Errorf("%w: %v", ErrSDKPanic, r)
		}
	}()
	_, err = m.messages.New(ctx, params, option.WithResponseBodyInto(&body))
	return body, err
}
