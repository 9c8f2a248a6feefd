package geminitts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/voice"
)

// wavHeader is the canonical 44-byte PCM WAV header, laid out so
// encoding/binary can read it independently of how WAV writes it.
type wavHeader struct {
	RIFF          [4]byte
	RIFFSize      uint32
	WAVE          [4]byte
	Fmt           [4]byte
	FmtSize       uint32
	Format        uint16
	Channels      uint16
	SampleRate    uint32
	ByteRate      uint32
	BlockAlign    uint16
	BitsPerSample uint16
	Data          [4]byte
	DataSize      uint32
}

func tag(s string) (t [4]byte) {
	copy(t[:], s)
	return t
}

func TestWAV(t *testing.T) {
	tests := []struct {
		name  string
		mime  string
		audio []byte
		want  wavHeader
	}{
		{
			name: "one second of Speak output", mime: "audio/pcm;rate=24000", audio: samples(48000),
			want: wavHeader{RIFFSize: 36 + 48000, Channels: 1, SampleRate: 24000, ByteRate: 48000, BlockAlign: 2, DataSize: 48000},
		},
		{
			name: "Gemini's own MIME type", mime: geminiPCM, audio: samples(4800),
			want: wavHeader{RIFFSize: 36 + 4800, Channels: 1, SampleRate: 24000, ByteRate: 48000, BlockAlign: 2, DataSize: 4800},
		},
		{
			name: "16 kHz stereo", mime: "audio/pcm;rate=16000;channels=2", audio: samples(64),
			want: wavHeader{RIFFSize: 36 + 64, Channels: 2, SampleRate: 16000, ByteRate: 64000, BlockAlign: 4, DataSize: 64},
		},
		{
			name: "no rate means 24 kHz", mime: "audio/pcm", audio: samples(2),
			want: wavHeader{RIFFSize: 38, Channels: 1, SampleRate: 24000, ByteRate: 48000, BlockAlign: 2, DataSize: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := WAV(voice.Utterance{Audio: tt.audio, MIMEType: tt.mime})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 44+len(tt.audio) {
				t.Fatalf("WAV is %d bytes, want 44 + %d", len(out), len(tt.audio))
			}
			var got wavHeader
			if err := binary.Read(bytes.NewReader(out), binary.LittleEndian, &got); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.RIFF, want.WAVE, want.Fmt, want.Data = tag("RIFF"), tag("WAVE"), tag("fmt "), tag("data")
			want.FmtSize, want.Format, want.BitsPerSample = 16, 1, 16
			if got != want {
				t.Errorf("header\n got %+v\nwant %+v", got, want)
			}
			if !bytes.Equal(out[44:], tt.audio) {
				t.Error("sample data changed")
			}
		})
	}
}

func TestWAVDoesNotAliasInput(t *testing.T) {
	u := voice.Utterance{Audio: samples(4), MIMEType: "audio/pcm;rate=24000"}
	out, err := WAV(u)
	if err != nil {
		t.Fatal(err)
	}
	out[44] ^= 0xff
	if !bytes.Equal(u.Audio, samples(4)) {
		t.Fatal("WAV output shares memory with the utterance")
	}
}

func TestWAVErrors(t *testing.T) {
	tests := []struct {
		name string
		u    voice.Utterance
		msg  string
	}{
		{"estimator utterance", voice.Utterance{Duration: time.Second}, "no MIME type"},
		{"no audio", voice.Utterance{MIMEType: "audio/pcm;rate=24000"}, "no audio"},
		{"compressed", voice.Utterance{Audio: samples(4), MIMEType: "audio/mpeg"}, "not raw PCM"},
		{"bad MIME type", voice.Utterance{Audio: samples(4), MIMEType: "audio/pcm;rate"}, "malformed PCM"},
		{"zero rate", voice.Utterance{Audio: samples(4), MIMEType: "audio/pcm;rate=0"}, "sample rate"},
		{"partial frame", voice.Utterance{Audio: samples(6), MIMEType: "audio/pcm;rate=24000;channels=2"}, "not a whole number of 4-byte frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := WAV(tt.u)
			if err == nil || out != nil {
				t.Fatalf("WAV = %d bytes, %v; want an error", len(out), err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		format pcm
		bytes  int
		want   time.Duration
	}{
		{pcm{24000, 1}, 0, 0},
		{pcm{24000, 1}, 48000, time.Second},
		{pcm{24000, 1}, 48, time.Millisecond},
		{pcm{24000, 1}, 2, 41667 * time.Nanosecond},
		{pcm{8000, 1}, 16000 * 3600, time.Hour},
		{pcm{48000, 2}, 192000, time.Second},
		// 2^31 frames at 1 Hz: whole seconds are scaled apart from the
		// remainder, so this neither overflows nor loses precision.
		{pcm{1, 1}, 1 << 32, (1 << 31) * time.Second},
	}
	for _, tt := range tests {
		got, err := tt.format.duration(tt.bytes)
		if err != nil || got != tt.want {
			t.Errorf("%+v.duration(%d) = %v, %v; want %v", tt.format, tt.bytes, got, err, tt.want)
		}
	}
	if _, err := (pcm{24000, 1}).duration(3); !errors.Is(err, errBadPCM) {
		t.Errorf("odd byte count: err = %v, want errBadPCM", err)
	}
}
