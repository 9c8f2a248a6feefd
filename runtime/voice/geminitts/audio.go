package geminitts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// DefaultSampleRate is Gemini TTS's output rate, assumed when the audio's
// MIME type does not state one.
const DefaultSampleRate = 24000

// WAVMIMEType is the MIME type of what WAV returns.
const WAVMIMEType = "audio/wav"

// Bounds that keep every WAV header field within its 32- and 16-bit
// slots; real speech is 8 to 48 kHz, mono.
const (
	maxSampleRate = 1 << 20
	maxChannels   = 16
)

var (
	// errNotPCM: the audio is in an encoding whose length in bytes says
	// nothing about its length in time.
	errNotPCM = errors.New("not raw PCM")
	// errBadPCM: PCM whose parameters or byte count do not add up.
	errBadPCM = errors.New("malformed PCM")
)

// pcm describes raw signed 16-bit little-endian PCM.
type pcm struct {
	rate     int
	channels int
}

// parsePCM reads a PCM MIME type: Gemini's "audio/L16;codec=pcm;rate=24000"
// or the "audio/pcm;rate=24000" that Speak returns and the Live API uses.
// A missing rate means DefaultSampleRate, missing channels mean mono.
//
// Gemini's L16 is little-endian even though RFC 2586 defines audio/L16 as
// big-endian, so the byte order is never taken from the type.
func parsePCM(mimeType string) (pcm, error) {
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return pcm{}, fmt.Errorf("%w: MIME type %q: %v", errBadPCM, mimeType, err)
	}
	if mt != "audio/l16" && mt != "audio/pcm" {
		return pcm{}, fmt.Errorf("%w: %q", errNotPCM, mimeType)
	}
	if c, ok := params["codec"]; ok && !strings.EqualFold(c, "pcm") {
		return pcm{}, fmt.Errorf("%w: %q", errNotPCM, mimeType)
	}
	f := pcm{rate: DefaultSampleRate, channels: 1}
	if v, ok := params["rate"]; ok {
		if f.rate, err = strconv.Atoi(v); err != nil || f.rate < 1 || f.rate > maxSampleRate {
			return pcm{}, fmt.Errorf("%w: sample rate %q in %q", errBadPCM, v, mimeType)
		}
	}
	if v, ok := params["channels"]; ok {
		if f.channels, err = strconv.Atoi(v); err != nil || f.channels < 1 || f.channels > maxChannels {
			return pcm{}, fmt.Errorf("%w: channel count %q in %q", errBadPCM, v, mimeType)
		}
	}
	return f, nil
}

// mimeType names the format the way the Live API does. Speak does not pass
// Gemini's "audio/L16" on, because a client that trusts RFC 2586 would play
// the little-endian bytes as noise.
func (f pcm) mimeType() string {
	s := "audio/pcm;rate=" + strconv.Itoa(f.rate)
	if f.channels != 1 {
		s += ";channels=" + strconv.Itoa(f.channels)
	}
	return s
}

func (f pcm) frameSize() int { return 2 * f.channels }

// duration is the playing time of n bytes. It is exact whenever the rate
// divides the frame count times 10^9 (any whole number of milliseconds at
// 8, 16, 24 or 48 kHz); otherwise it rounds up to the next nanosecond, so
// speech_done scheduled at Duration never cuts off the last sample. Whole
// seconds and the remainder are scaled separately so that no byte count
// that fits in memory can overflow.
func (f pcm) duration(n int) (time.Duration, error) {
	if n%f.frameSize() != 0 {
		return 0, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte frames", errBadPCM, n, f.frameSize())
	}
	frames := int64(n / f.frameSize())
	rate := int64(f.rate)
	rem := frames % rate * int64(time.Second)
	return time.Duration(frames/rate)*time.Second + time.Duration((rem+rate-1)/rate), nil
}

// speech turns a response into an Utterance. Every inline audio part of
// the first candidate is concatenated in order, since nothing in the API
// promises one part per answer.
//
// Failures, all *llm.Error:
//   - prompt blocked, or a safety-type finish reason: bad_request, since
//     the same text would be refused again;
//   - no audio at all (no candidate, or only text): server and retryable.
//     The request asked for AUDIO only, so a 200 without it is the service
//     not keeping its side, the same fault class as a malformed body, and
//     a retry policy bounds how often it is repeated;
//   - PCM that does not add up (bad rate, odd byte count, parts in
//     different formats): server and retryable, a malformed body;
//   - audio in another encoding (MP3, WAV...): unknown and not retried.
//     Its duration cannot be read off the byte count, and asking again
//     would only return the same encoding; it needs a code change here.
func speech(resp *genai.GenerateContentResponse) (voice.Utterance, error) {
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		if resp != nil && resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			pf := resp.PromptFeedback
			msg := "text blocked: " + string(pf.BlockReason)
			if pf.BlockReasonMessage != "" {
				msg += ": " + pf.BlockReasonMessage
			}
			return voice.Utterance{}, llm.NewError(llm.KindBadRequest, 0, nil, "geminitts: %s", strings.SplitN(msg, "\n", 2)[0])
		}
		return voice.Utterance{}, llm.NewError(llm.KindServer, 0, nil, "geminitts: response has no candidates")
	}
	cand := resp.Candidates[0]
	var (
		audio  []byte
		format pcm
		found  bool
		text   strings.Builder
	)
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p == nil:
			case p.InlineData != nil && strings.HasPrefix(strings.ToLower(p.InlineData.MIMEType), "audio/"):
				f, err := parsePCM(p.InlineData.MIMEType)
				if err != nil {
					return voice.Utterance{}, audioError(err)
				}
				if found && f != format {
					return voice.Utterance{}, llm.NewError(llm.KindServer, 0, errBadPCM, "geminitts: malformed response: audio parts in %s and %s", format.mimeType(), f.mimeType())
				}
				format, found = f, true
				if audio == nil {
					audio = p.InlineData.Data
				} else {
					// Clip the capacity so the append copies instead of
					// writing into the first part's backing array.
					audio = append(audio[:len(audio):len(audio)], p.InlineData.Data...)
				}
			case p.Text != "" && !p.Thought:
				text.WriteString(p.Text)
			}
		}
	}
	if len(audio) == 0 {
		return voice.Utterance{}, noAudio(cand, text.String())
	}
	d, err := format.duration(len(audio))
	if err != nil {
		return voice.Utterance{}, audioError(err)
	}
	return voice.Utterance{Duration: d, Audio: audio, MIMEType: format.mimeType()}, nil
}

func audioError(err error) *llm.Error {
	if errors.Is(err, errNotPCM) {
		return llm.NewError(llm.KindUnknown, 0, err, "geminitts: unsupported audio encoding: %v", err)
	}
	return llm.NewError(llm.KindServer, 0, err, "geminitts: malformed response: %v", err)
}

// refusals are finish reasons that mean the text itself was refused.
var refusals = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:            true,
	genai.FinishReasonProhibitedContent: true,
	genai.FinishReasonBlocklist:         true,
	genai.FinishReasonSPII:              true,
	genai.FinishReasonRecitation:        true,
}

func noAudio(cand *genai.Candidate, text string) *llm.Error {
	if refusals[cand.FinishReason] {
		return llm.NewError(llm.KindBadRequest, 0, nil, "geminitts: speech refused: %s", cand.FinishReason)
	}
	msg := "geminitts: response has no audio"
	if cand.FinishReason != "" {
		msg += " (finish reason " + string(cand.FinishReason) + ")"
	}
	if text = strings.TrimSpace(text); text != "" {
		msg += "; model replied with text: " + strconv.Quote(clip(text, 80))
	}
	return llm.NewError(llm.KindServer, 0, nil, "%s", msg)
}

// clip shortens s to at most n runes for log messages.
func clip(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i] + "..."
		}
		n--
	}
	return s
}

// WAV wraps an Utterance's PCM in a canonical 44-byte-header RIFF/WAVE
// container, so a client can play or save it without being told the
// sample rate out of band. u.MIMEType must be a PCM type as Speak returns
// ("audio/pcm;rate=24000"; Gemini's "audio/L16;..." is read the same way).
// An utterance without audio, such as an estimator's, is an error rather
// than a silent file, which would hide the mix-up.
func WAV(u voice.Utterance) ([]byte, error) {
	if u.MIMEType == "" {
		return nil, errors.New("geminitts: WAV: utterance has no MIME type")
	}
	f, err := parsePCM(u.MIMEType)
	if err != nil {
		return nil, fmt.Errorf("geminitts: WAV: %w", err)
	}
	n := len(u.Audio)
	if n == 0 {
		return nil, errors.New("geminitts: WAV: utterance has no audio")
	}
	if n%f.frameSize() != 0 {
		return nil, fmt.Errorf("geminitts: WAV: %w: %d bytes is not a whole number of %d-byte frames", errBadPCM, n, f.frameSize())
	}
	if uint64(n) > math.MaxUint32-36 {
		return nil, fmt.Errorf("geminitts: WAV: %d bytes of audio exceed the format's 4 GiB limit", n)
	}
	out := make([]byte, 44, 44+n)
	le := binary.LittleEndian
	copy(out[0:], "RIFF")
	le.PutUint32(out[4:], uint32(36+n))
	copy(out[8:], "WAVE")
	copy(out[12:], "fmt ")
	le.PutUint32(out[16:], 16) // fmt chunk size for plain PCM
	le.PutUint16(out[20:], 1)  // WAVE_FORMAT_PCM
	le.PutUint16(out[22:], uint16(f.channels))
	le.PutUint32(out[24:], uint32(f.rate))
	le.PutUint32(out[28:], uint32(f.rate*f.frameSize())) // bytes per second
	le.PutUint16(out[32:], uint16(f.frameSize()))        // block align
	le.PutUint16(out[34:], 16)                           // bits per sample
	copy(out[36:], "data")
	le.PutUint32(out[40:], uint32(n))
	return append(out, u.Audio...), nil
}
