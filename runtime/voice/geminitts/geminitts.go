// Package geminitts implements voice.Speaker with Gemini's text-to-speech
// models through the official google.golang.org/genai SDK.
//
// Each Speak is one GenerateContent call that asks for audio only, in one
// of Gemini's prebuilt voices. Gemini answers with raw 16-bit little-endian
// PCM, so Utterance.Duration is computed from the byte count and sample
// rate rather than estimated: a host that answers agent_message with
// speech_done after Duration does so when the candidate has actually heard
// the line.
//
// As in runtime/llm/gemini, the SDK's own HTTP retries are off and every
// failure is an *llm.Error, so llm.WithPolicy-style retry budgets and the
// engine's adapter error kinds apply to speech unchanged.
package geminitts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/voice"
)

// DefaultModel is used when Config.Model is empty.
const DefaultModel = "gemini-2.5-flash-preview-tts"

// DefaultMaxResponseBytes bounds what one Speak reads from the API. Audio
// arrives base64-encoded in JSON at 64 KB per second of 24 kHz speech, so
// 16 MiB holds over four minutes: far beyond one panel line, far below
// what would hurt a host serving many sessions.
const DefaultMaxResponseBytes = 16 << 20

// Errors for input that is rejected before any request is sent. Speak
// returns them wrapped in an *llm.Error of kind bad_request.
var (
	ErrEmptyText    = errors.New("geminitts: nothing to say")
	ErrUnknownVoice = errors.New("geminitts: unknown voice")
)

// prebuiltVoices are the voice names Gemini's TTS models accept, as listed
// in the Gemini API speech generation guide.
var prebuiltVoices = []string{
	"Zephyr", "Puck", "Charon", "Kore", "Fenrir", "Leda", "Orus", "Aoede",
	"Callirrhoe", "Autonoe", "Enceladus", "Iapetus", "Umbriel", "Algieba",
	"Despina", "Erinome", "Algenib", "Rasalgethi", "Laomedeia", "Achernar",
	"Alnilam", "Schedar", "Gacrux", "Pulcherrima", "Achird", "Zubenelgenubi",
	"Vindemiatrix", "Sadachbia", "Sadaltager", "Sulafat",
}

// PrebuiltVoices returns the voice names a Speaker accepts by default.
func PrebuiltVoices() []string {
	return append([]string(nil), prebuiltVoices...)
}

// Config configures a Speaker.
type Config struct {
	// APIKey defaults to $GEMINI_API_KEY, then $GOOGLE_API_KEY.
	APIKey string
	// BaseURL overrides the API endpoint (tests point it at a local fake).
	BaseURL string
	// Model is a TTS-capable model; empty means DefaultModel.
	Model string
	// HTTPClient is used as a template: the Speaker works on a copy whose
	// transport enforces MaxResponseBytes, so a client shared with other
	// adapters is left untouched. nil means the LLM adapter's default.
	HTTPClient *http.Client
	// MaxResponseBytes caps the bytes read from the API per Speak call,
	// across every HTTP response the SDK reads for it; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Voices replaces the accepted voice names; nil means PrebuiltVoices.
	// Google adds voices more often than this package is released, and an
	// allow-list is still worth having: a typo in a pack should fail at the
	// first line, not produce a 400 from the API mid-interview.
	Voices []string
}

// Speaker is a Gemini-backed voice.Speaker. It is safe for concurrent use:
// it holds only immutable configuration and the SDK client, and each call
// builds its own request.
type Speaker struct {
	client   *genai.Client
	model    string
	maxBytes int64
	// voices maps a lower-cased name to its canonical spelling, so packs
	// may write "kore" and the API still receives "Kore".
	voices map[string]string
}

var _ voice.Speaker = (*Speaker)(nil)

// New creates a Speaker. It makes no network call.
func New(ctx context.Context, cfg Config) (*Speaker, error) {
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("geminitts: negative MaxResponseBytes %d", cfg.MaxResponseBytes)
	}
	cc, err := gemini.ClientConfig(cfg.APIKey, cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	cc.HTTPClient = limitClient(cc.HTTPClient)
	client, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("geminitts: create client: %w", err)
	}
	s := &Speaker{
		client:   client,
		model:    cfg.Model,
		maxBytes: cfg.MaxResponseBytes,
		voices:   make(map[string]string),
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.maxBytes == 0 {
		s.maxBytes = DefaultMaxResponseBytes
	}
	names := cfg.Voices
	if names == nil {
		names = prebuiltVoices
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			s.voices[strings.ToLower(n)] = n
		}
	}
	if len(s.voices) == 0 {
		return nil, errors.New("geminitts: Config.Voices names no voice")
	}
	return s, nil
}

// Speak synthesizes text in the named prebuilt voice. role only labels
// errors: Gemini has no notion of it. text is sent verbatim, so a pack may
// use the model's natural-language style cues ("Say calmly: ...").
//
// The returned Utterance holds raw 16-bit little-endian PCM with MIMEType
// "audio/pcm;rate=N" (see WAV for a playable file). Errors are *llm.Error:
//   - bad_request, no request sent: empty text (ErrEmptyText), an empty or
//     unlisted voice (ErrUnknownVoice);
//   - HTTP errors: 429 rate_limit, 408 timeout, 5xx server (501 not
//     retryable), other 4xx bad_request;
//   - the context's deadline is timeout, its cancellation canceled;
//   - a 200 that is garbled, carries no audio, or carries PCM that does
//     not add up is server and retryable; one blocked or refused for
//     safety is bad_request; audio in an encoding other than PCM is
//     unknown;
//   - a response over MaxResponseBytes is bad_request (ErrResponseTooLarge).
func (s *Speaker) Speak(ctx context.Context, role, voiceName, text string) (voice.Utterance, error) {
	if strings.TrimSpace(text) == "" {
		return voice.Utterance{}, llm.NewError(llm.KindBadRequest, 0, ErrEmptyText, "geminitts: nothing to say for role %q", role)
	}
	name, err := s.voice(role, voiceName)
	if err != nil {
		return voice.Utterance{}, err
	}
	// The SDK normalizes the config in place, so a config shared between
	// concurrent calls would be a data race; one per call is cheap.
	config := &genai.GenerateContentConfig{
		ResponseModalities: []string{string(genai.ModalityAudio)},
		SpeechConfig: &genai.SpeechConfig{VoiceConfig: &genai.VoiceConfig{
			PrebuiltVoiceConfig: &genai.PrebuiltVoiceConfig{VoiceName: name},
		}},
	}
	resp, err := generateContent(withBudget(ctx, s.maxBytes), s.client, s.model, genai.Text(text), config)
	if err != nil {
		return voice.Utterance{}, classify(ctx, err)
	}
	return speech(resp)
}

func (s *Speaker) voice(role, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", llm.NewError(llm.KindBadRequest, 0, ErrUnknownVoice, "geminitts: role %q has no voice; give it one of the prebuilt voices, e.g. Kore", role)
	}
	if canonical, ok := s.voices[strings.ToLower(name)]; ok {
		return canonical, nil
	}
	return "", llm.NewError(llm.KindBadRequest, 0, ErrUnknownVoice, "geminitts: role %q: unknown voice %q", role, name)
}

// generateContent recovers SDK panics: its response converters assert on
// the JSON shape, so a malformed body from the server, or a proxy in front
// of it, would otherwise crash the host.
func generateContent(ctx context.Context, c *genai.Client, model string, contents []*genai.Content, config *genai.GenerateContentConfig) (resp *genai.GenerateContentResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("%w: %v", gemini.ErrSDKPanic, r)
		}
	}()
	return c.Models.GenerateContent(ctx, model, contents, config)
}
