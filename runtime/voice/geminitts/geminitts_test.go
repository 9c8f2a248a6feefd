package geminitts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/wiretest"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/voice"
)

const (
	testKey   = "test-key"
	testModel = "gemini-tts-test"
	geminiPCM = "audio/L16;codec=pcm;rate=24000"
)

// fakeTTS speaks the public Gemini REST wire format for generateContent.
// On every request it checks what any TTS call must carry (method, path,
// key, an AUDIO-only response and the voice) and records the decoded body;
// the test's handler then writes the response.
type fakeTTS struct {
	t         *testing.T
	srv       *httptest.Server
	model     string
	wantVoice string
	handler   func(w http.ResponseWriter, r *http.Request, body map[string]any)

	mu     sync.Mutex
	bodies []map[string]any
}

func newFake(t *testing.T, wantVoice string, handler func(w http.ResponseWriter, r *http.Request, body map[string]any)) *fakeTTS {
	t.Helper()
	f := &fakeTTS{t: t, model: testModel, wantVoice: wantVoice, handler: handler}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTTS) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.t.Errorf("method = %s, want POST", r.Method)
	}
	if want := "/v1beta/models/" + f.model + ":generateContent"; r.URL.Path != want {
		f.t.Errorf("path = %q, want %q", r.URL.Path, want)
	}
	if got := r.Header.Get("x-goog-api-key"); got != testKey {
		f.t.Errorf("x-goog-api-key = %q, want %q", got, testKey)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
		return
	}
	wiretest.Expect(f.t, body, "generationConfig.responseModalities", []any{"AUDIO"})
	wiretest.Expect(f.t, body, "generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName", f.wantVoice)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	f.handler(w, r, body)
}

func (f *fakeTTS) hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func (f *fakeTTS) speaker(t *testing.T, edit ...func(*Config)) *Speaker {
	t.Helper()
	cfg := Config{APIKey: testKey, BaseURL: f.srv.URL, Model: testModel}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func audioPart(mimeType string, data []byte) map[string]any {
	return map[string]any{"inlineData": map[string]any{"mimeType": mimeType, "data": base64.StdEncoding.EncodeToString(data)}}
}

func response(finish string, parts ...map[string]any) map[string]any {
	ps := make([]any, len(parts))
	for i, p := range parts {
		ps[i] = p
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": ps},
			"finishReason": finish,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 9, "candidatesTokenCount": 25, "totalTokenCount": 34},
	}
}

// samples returns n bytes of a recognizable non-silent pattern.
func samples(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

func TestSpeak(t *testing.T) {
	tests := []struct {
		name      string
		voice     string // as the pack writes it
		sentVoice string // as the API must receive it
		parts     []map[string]any
		wantAudio []byte
		wantMIME  string
		want      time.Duration
	}{
		{
			name: "one second at 24 kHz", voice: "Kore", sentVoice: "Kore",
			parts:     []map[string]any{audioPart(geminiPCM, samples(48000))},
			wantAudio: samples(48000), wantMIME: "audio/pcm;rate=24000", want: time.Second,
		},
		{
			name: "rate parsed from MIME type", voice: "Puck", sentVoice: "Puck",
			parts:     []map[string]any{audioPart("audio/L16;codec=pcm;rate=16000", samples(16000))},
			wantAudio: samples(16000), wantMIME: "audio/pcm;rate=16000", want: 500 * time.Millisecond,
		},
		{
			name: "Live-style MIME type at 44.1 kHz", voice: "Charon", sentVoice: "Charon",
			parts:     []map[string]any{audioPart("audio/pcm;rate=44100", samples(882))},
			wantAudio: samples(882), wantMIME: "audio/pcm;rate=44100", want: 10 * time.Millisecond,
		},
		{
			name: "missing rate defaults to 24 kHz", voice: "Zephyr", sentVoice: "Zephyr",
			parts:     []map[string]any{audioPart("audio/L16", samples(4800))},
			wantAudio: samples(4800), wantMIME: "audio/pcm;rate=24000", want: 100 * time.Millisecond,
		},
		{
			name: "stereo halves the duration", voice: "Leda", sentVoice: "Leda",
			parts:     []map[string]any{audioPart("audio/pcm;rate=24000;channels=2", samples(96000))},
			wantAudio: samples(96000), wantMIME: "audio/pcm;rate=24000;channels=2", want: time.Second,
		},
		{
			name: "one sample rounds up to the next nanosecond", voice: "Kore", sentVoice: "Kore",
			parts:     []map[string]any{audioPart(geminiPCM, samples(2))},
			wantAudio: samples(2), wantMIME: "audio/pcm;rate=24000", want: 41667 * time.Nanosecond,
		},
		{
			name: "voice name is canonicalized", voice: " sulafat ", sentVoice: "Sulafat",
			parts:     []map[string]any{audioPart(geminiPCM, samples(480))},
			wantAudio: samples(480), wantMIME: "audio/pcm;rate=24000", want: 10 * time.Millisecond,
		},
		{
			name: "audio split across parts, text ignored", voice: "Kore", sentVoice: "Kore",
			parts: []map[string]any{
				audioPart(geminiPCM, samples(24000)),
				{"text": "(spoken)"},
				audioPart(geminiPCM, samples(24000)[:2400]),
			},
			wantAudio: append(samples(24000), samples(24000)[:2400]...), wantMIME: "audio/pcm;rate=24000", want: 550 * time.Millisecond,
		},
	}
	const line = "Walk me through your first containment step."
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.sentVoice, func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
				wiretest.Expect(t, body, "contents.0.role", "user")
				wiretest.Expect(t, body, "contents.0.parts.0.text", line)
				wiretest.Expect(t, body, "contents.1", nil)
				wiretest.WriteJSON(w, 200, response("STOP", tt.parts...))
			})
			u, err := f.speaker(t).Speak(context.Background(), "qa", tt.voice, line)
			if err != nil {
				t.Fatal(err)
			}
			if u.Duration != tt.want || u.MIMEType != tt.wantMIME {
				t.Errorf("Speak = %v %q, want %v %q", u.Duration, u.MIMEType, tt.want, tt.wantMIME)
			}
			if !bytes.Equal(u.Audio, tt.wantAudio) {
				t.Errorf("audio: %d bytes, want %d bytes as sent", len(u.Audio), len(tt.wantAudio))
			}
			if f.hits() != 1 {
				t.Errorf("server saw %d requests, want 1", f.hits())
			}
		})
	}
}

func TestSpeakErrors(t *testing.T) {
	tests := []struct {
		name      string
		maxBytes  int64
		respond   func(w http.ResponseWriter)
		kind      llm.Kind
		status    int
		retryable bool
		msg       string
		is        error
	}{
		{
			name: "429 rate limit",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 429, map[string]any{"error": map[string]any{"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}})
			},
			kind: llm.KindRateLimit, status: 429, retryable: true, msg: "exhausted",
		},
		{
			name: "429 with status name only",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 429, map[string]any{"error": map[string]any{"message": "quota", "status": "RESOURCE_EXHAUSTED"}})
			},
			kind: llm.KindRateLimit, status: 429, retryable: true, msg: "quota",
		},
		{
			name: "500 internal",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 500, map[string]any{"error": map[string]any{"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}})
			},
			kind: llm.KindServer, status: 500, retryable: true, msg: "internal error",
		},
		{
			name: "503 plain text body",
			respond: func(w http.ResponseWriter) {
				w.WriteHeader(503)
				_, _ = io.WriteString(w, "upstream connect error")
			},
			kind: llm.KindServer, status: 503, retryable: true, msg: "upstream connect error",
		},
		{
			name: "400 bad voice",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "Voice name is not supported.", "status": "INVALID_ARGUMENT"}})
			},
			kind: llm.KindBadRequest, status: 400, msg: "Voice name",
		},
		{
			name: "malformed 200 body",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"candidates": [{"content": `)
			},
			kind: llm.KindServer, retryable: true, msg: "malformed response body",
		},
		{
			name: "200 body of the wrong shape",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"candidates": "not a list"}`)
			},
			kind: llm.KindServer, retryable: true, msg: "malformed response body",
		},
		{
			name: "audio data that is not base64",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", map[string]any{"inlineData": map[string]any{"mimeType": geminiPCM, "data": "%%% not base64 %%%"}}))
			},
			kind: llm.KindServer, retryable: true, msg: "malformed response body",
		},
		{
			name: "text but no audio",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", map[string]any{"text": "Sure! Here is my first containment step: roll back."}))
			},
			kind: llm.KindServer, retryable: true, msg: `no audio (finish reason STOP); model replied with text: "Sure!`,
		},
		{
			name: "no candidates",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, map[string]any{"usageMetadata": map[string]any{"promptTokenCount": 9}})
			},
			kind: llm.KindServer, retryable: true, msg: "no candidates",
		},
		{
			name: "blocked text",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, map[string]any{"promptFeedback": map[string]any{"blockReason": "SAFETY"}})
			},
			kind: llm.KindBadRequest, msg: "text blocked: SAFETY",
		},
		{
			name: "speech refused for safety",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("SAFETY"))
			},
			kind: llm.KindBadRequest, msg: "speech refused: SAFETY",
		},
		{
			name: "odd byte count",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(4801))))
			},
			kind: llm.KindServer, retryable: true, msg: "not a whole number of 2-byte frames",
		},
		{
			name: "unreadable rate",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart("audio/L16;codec=pcm;rate=fast", samples(480))))
			},
			kind: llm.KindServer, retryable: true, msg: `sample rate "fast"`,
		},
		{
			name: "parts in different formats",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(480)), audioPart("audio/pcm;rate=16000", samples(480))))
			},
			kind: llm.KindServer, retryable: true, msg: "audio parts in audio/pcm;rate=24000 and audio/pcm;rate=16000",
		},
		{
			name: "compressed audio",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart("audio/mpeg", samples(480))))
			},
			kind: llm.KindUnknown, msg: "unsupported audio encoding",
		},
		{
			name:     "response over the limit",
			maxBytes: 1000,
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(4800))))
			},
			kind: llm.KindBadRequest, msg: "exceeds the 1000-byte limit", is: ErrResponseTooLarge,
		},
		{
			name:     "chunked response over the limit",
			maxBytes: 1000,
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				// Flushing before the body is done forces chunked encoding,
				// so no Content-Length warns the client in advance.
				w.(http.Flusher).Flush()
				_ = json.NewEncoder(w).Encode(response("STOP", audioPart(geminiPCM, samples(4800))))
			},
			kind: llm.KindBadRequest, msg: "exceeds the 1000-byte limit", is: ErrResponseTooLarge,
		},
		{
			name:     "error body over the limit",
			maxBytes: 100,
			respond: func(w http.ResponseWriter) {
				w.WriteHeader(500)
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, strings.Repeat("x", 1000))
			},
			kind: llm.KindBadRequest, msg: "exceeds the 100-byte limit", is: ErrResponseTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, "Kore", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) { tt.respond(w) })
			s := f.speaker(t, func(c *Config) { c.MaxResponseBytes = tt.maxBytes })
			u, err := s.Speak(context.Background(), "qa", "Kore", "Show me the failing test.")
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *llm.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Errorf("got kind=%s status=%d retryable=%v, want kind=%s status=%d retryable=%v (%v)",
					e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable, err)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q lacks %q", e.Message, tt.msg)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("message spans lines: %q", e.Message)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !reflect.DeepEqual(u, voice.Utterance{}) {
				t.Errorf("failed Speak returned %+v", u)
			}
			// The SDK must not retry behind the caller's retry policy.
			if f.hits() != 1 {
				t.Errorf("server saw %d requests, want exactly 1", f.hits())
			}
			if ae := llm.AsAdapterError(err); ae.Kind != string(tt.kind) {
				t.Errorf("adapter error kind = %q", ae.Kind)
			}
		})
	}
}

// A body that ends exactly at the limit is within it.
func TestSpeakResponseAtLimit(t *testing.T) {
	body, err := json.Marshal(response("STOP", audioPart(geminiPCM, samples(4800))))
	if err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			f := newFake(t, "Kore", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "application/json")
				if chunked {
					w.(http.Flusher).Flush()
				}
				_, _ = w.Write(body)
			})
			s := f.speaker(t, func(c *Config) { c.MaxResponseBytes = int64(len(body)) })
			u, err := s.Speak(context.Background(), "qa", "Kore", "Hello.")
			if err != nil {
				t.Fatal(err)
			}
			if u.Duration != 100*time.Millisecond {
				t.Fatalf("duration = %v", u.Duration)
			}
		})
	}
}

func TestSpeakRejectsInput(t *testing.T) {
	tests := []struct {
		name, voice, text string
		voices            []string
		is                error
		msg               string
	}{
		{name: "empty text", voice: "Kore", text: "", is: ErrEmptyText, msg: `nothing to say for role "qa"`},
		{name: "blank text", voice: "Kore", text: " \n\t ", is: ErrEmptyText, msg: "nothing to say"},
		{name: "empty voice", voice: "", text: "Hi.", is: ErrUnknownVoice, msg: `role "qa" has no voice`},
		{name: "unknown voice", voice: "Bob", text: "Hi.", is: ErrUnknownVoice, msg: `unknown voice "Bob"`},
		{name: "voice outside a custom list", voice: "Kore", text: "Hi.", voices: []string{"Nova"}, is: ErrUnknownVoice, msg: `unknown voice "Kore"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.voice, func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
				wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(480))))
			})
			s := f.speaker(t, func(c *Config) { c.Voices = tt.voices })
			_, err := s.Speak(context.Background(), "qa", tt.voice, tt.text)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || e.Retryable {
				t.Fatalf("err = %v, want non-retryable bad_request", err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.is)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q lacks %q", e.Message, tt.msg)
			}
			if f.hits() != 0 {
				t.Errorf("invalid input reached the server %d times", f.hits())
			}
		})
	}
}

func TestCustomVoices(t *testing.T) {
	f := newFake(t, "Nova", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(480))))
	})
	s := f.speaker(t, func(c *Config) { c.Voices = []string{"Nova"} })
	if _, err := s.Speak(context.Background(), "qa", "nova", "Hi."); err != nil {
		t.Fatal(err)
	}
}

// stall blocks a handler until the client gives up, or until the test ends
// so a stuck server never outlives it.
func stall(t *testing.T) func(http.ResponseWriter, *http.Request, map[string]any) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(_ http.ResponseWriter, r *http.Request, _ map[string]any) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

func TestSpeakDeadlineExceeded(t *testing.T) {
	f := newFake(t, "Kore", stall(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := f.speaker(t).Speak(ctx, "qa", "Kore", "Hello.")
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindTimeout || !e.Retryable {
		t.Fatalf("err = %v, want retryable timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cause lost: %v", err)
	}
}

func TestSpeakCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := stall(t)
	f := newFake(t, "Kore", func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		cancel() // the request is in flight; the caller walks away
		block(w, r, body)
	})
	_, err := f.speaker(t).Speak(ctx, "qa", "Kore", "Hello.")
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindCanceled || e.Retryable {
		t.Fatalf("err = %v, want non-retryable canceled", err)
	}
}

func TestSpeakNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	s, err := New(context.Background(), Config{APIKey: testKey, BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Speak(context.Background(), "qa", "Kore", "Hello.")
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindNetwork || !e.Retryable {
		t.Fatalf("err = %v, want retryable network", err)
	}
}

// countingTransport stands in for a host's own HTTP stack.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestNew(t *testing.T) {
	t.Run("default model", func(t *testing.T) {
		f := newFake(t, "Kore", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(480))))
		})
		f.model = DefaultModel
		s := f.speaker(t, func(c *Config) { c.Model = "" })
		if _, err := s.Speak(context.Background(), "qa", "Kore", "Hi."); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("HTTP client is used but not modified", func(t *testing.T) {
		f := newFake(t, "Kore", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, samples(480))))
		})
		ct := &countingTransport{}
		hc := &http.Client{Transport: ct}
		s := f.speaker(t, func(c *Config) { c.HTTPClient = hc })
		if _, err := s.Speak(context.Background(), "qa", "Kore", "Hi."); err != nil {
			t.Fatal(err)
		}
		if hc.Transport != ct {
			t.Error("New replaced the caller's transport")
		}
		if ct.n != 1 {
			t.Errorf("caller's transport saw %d requests, want 1", ct.n)
		}
	})
	tests := []struct {
		name string
		cfg  Config
		is   error
	}{
		{name: "no API key", cfg: Config{}, is: gemini.ErrNoAPIKey},
		{name: "bad base URL", cfg: Config{APIKey: testKey, BaseURL: "not a url"}},
		{name: "negative limit", cfg: Config{APIKey: testKey, MaxResponseBytes: -1}},
		{name: "empty voice list", cfg: Config{APIKey: testKey, Voices: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", "")
			t.Setenv("GOOGLE_API_KEY", "")
			s, err := New(context.Background(), tt.cfg)
			if err == nil || s != nil {
				t.Fatalf("New = %v, %v; want an error", s, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
		})
	}
}

func TestPrebuiltVoicesIsACopy(t *testing.T) {
	v := PrebuiltVoices()
	if len(v) != 30 {
		t.Fatalf("%d prebuilt voices, want 30", len(v))
	}
	v[0] = "Mallory"
	if PrebuiltVoices()[0] == "Mallory" {
		t.Fatal("PrebuiltVoices exposes the package's list")
	}
}

// TestSpeakConcurrent runs calls with different voices through one Speaker
// under -race; each must get its own voice and its own audio back.
func TestSpeakConcurrent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
			return
		}
		name, _ := wiretest.At(body, "generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName").(string)
		// Echo the voice as the audio, so each caller can tell its answer.
		wiretest.WriteJSON(w, 200, response("STOP", audioPart(geminiPCM, []byte(name+name))))
	}))
	defer srv.Close()
	s, err := New(context.Background(), Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, v := range PrebuiltVoices()[:8] {
		wg.Go(func() {
			u, err := s.Speak(context.Background(), "role-"+v, v, "Hello.")
			if err != nil {
				t.Error(err)
				return
			}
			if string(u.Audio) != v+v {
				t.Errorf("voice %s got audio %q", v, u.Audio)
			}
		})
	}
	wg.Wait()
}
