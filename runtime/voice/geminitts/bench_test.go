package geminitts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batonhq/baton/runtime/voice"
)

// BenchmarkSpeak measures one line through the whole adapter (request
// building, the SDK, HTTP over loopback, base64 and JSON decoding, PCM
// checks) against an in-process server that answers every request with
// one second of 24 kHz audio, 64 KB of base64. SetBytes makes MB/s the
// rate of decoded audio.
func BenchmarkSpeak(b *testing.B) {
	const pcmBytes = 48000
	body, err := json.Marshal(response("STOP", audioPart(geminiPCM, samples(pcmBytes))))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	s, err := New(context.Background(), Config{APIKey: "bench", BaseURL: srv.URL, Model: testModel})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(pcmBytes)
	b.ReportAllocs()
	for b.Loop() {
		u, err := s.Speak(ctx, "qa", "Kore", "Show me the failing test, then the fix.")
		if err != nil {
			b.Fatal(err)
		}
		if len(u.Audio) != pcmBytes {
			b.Fatalf("got %d bytes of audio", len(u.Audio))
		}
	}
}

// BenchmarkWAV is the cost of making one second of speech playable.
func BenchmarkWAV(b *testing.B) {
	u := voice.Utterance{Audio: samples(48000), MIMEType: "audio/pcm;rate=24000"}
	b.SetBytes(int64(len(u.Audio)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := WAV(u); err != nil {
			b.Fatal(err)
		}
	}
}
