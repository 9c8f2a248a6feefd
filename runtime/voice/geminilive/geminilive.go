// Package geminilive implements voice.LiveSession with the Gemini Live API
// (bidirectional WebSocket) through the google.golang.org/genai SDK.
//
// One goroutine per session reads server messages and turns them into
// voice.Events; sends are serialized with a mutex because the SDK's Session
// writes to a single WebSocket connection, which allows one writer at a
// time.
package geminilive

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/voice"
)

// DefaultModel is the native-audio Live model used when LiveConfig.Model is
// empty.
const DefaultModel = "gemini-2.5-flash-native-audio-preview-09-2025"

// DefaultInputMIME is the format the Live API expects for candidate audio:
// 16-bit little-endian PCM at 16 kHz.
const DefaultInputMIME = "audio/pcm;rate=16000"

// OutputMIME is the format of the model's audio: the Live API speaks
// 16-bit little-endian mono PCM at 24 kHz.
const OutputMIME = "audio/pcm;rate=24000"

// eventBuffer lets the reader run ahead of a briefly busy consumer (audio
// arrives in many small chunks) without unbounded memory.
const eventBuffer = 64

// ErrClosed is returned by sends after the session is closed.
var ErrClosed = errors.New("geminilive: session closed")

// Config configures a Client.
type Config struct {
	// APIKey defaults to $GEMINI_API_KEY, then $GOOGLE_API_KEY.
	APIKey string
	// BaseURL overrides the endpoint; a ws:// URL reaches a local fake.
	BaseURL string
	// APIVersion defaults to the SDK's ("v1beta").
	APIVersion string
	// HTTPClient is passed to the SDK; the WebSocket dial does not use it.
	HTTPClient *http.Client
}

// Client opens Gemini Live sessions. It is safe for concurrent use.
type Client struct {
	client *genai.Client
}

var _ voice.Connector = (*Client)(nil)

// New creates a Client. It makes no network call; a missing key is
// gemini.ErrNoAPIKey.
func New(ctx context.Context, cfg Config) (*Client, error) {
	cc, err := gemini.ClientConfig(cfg.APIKey, cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	cc.HTTPOptions.APIVersion = cfg.APIVersion
	client, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("geminilive: create client: %w", err)
	}
	return &Client{client: client}, nil
}

// Connect dials the Live API, sends the setup message and waits for the
// server's setupComplete. ctx bounds the whole session: cancelling it closes
// the session as Close would.
//
// The SDK dials without a context, so a Connect abandoned because ctx ended
// returns at once but leaves the dial running in the background until it
// finishes (gorilla/websocket's handshake timeout bounds the dial; a server
// that accepts but never answers the setup is not bounded). Whatever
// session it yields is closed.
func (c *Client) Connect(ctx context.Context, lc voice.LiveConfig) (voice.LiveSession, error) {
	s, err := c.connect(ctx, lc)
	if err != nil {
		// A nil *Session in a non-nil interface would defeat ls == nil checks.
		return nil, err
	}
	return s, nil
}

func (c *Client) connect(ctx context.Context, lc voice.LiveConfig) (*Session, error) {
	cfg, err := connectConfig(lc)
	if err != nil {
		return nil, err
	}
	model := lc.Model
	if model == "" {
		model = DefaultModel
	}
	type result struct {
		s   *genai.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("SDK panicked: %v", p)}
			}
			ch <- r
		}()
		r.s, r.err = c.client.Live.Connect(ctx, model, cfg)
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("geminilive: connect %s: %w", model, r.err)
		}
		return start(ctx, r.s), nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				_ = r.s.Close()
			}
		}()
		return nil, fmt.Errorf("geminilive: connect %s: %w", model, ctx.Err())
	}
}

func connectConfig(lc voice.LiveConfig) (*genai.LiveConnectConfig, error) {
	tools, err := gemini.Tools(lc.Tools)
	if err != nil {
		return nil, llm.NewError(llm.KindBadRequest, 0, err, "geminilive: %v", err)
	}
	cfg := &genai.LiveConnectConfig{
		ResponseModalities: []genai.Modality{genai.ModalityAudio},
		Tools:              tools,
	}
	if lc.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: lc.System}}}
	}
	if v := lc.Voices[voice.Gemini]; v != "" {
		cfg.SpeechConfig = &genai.SpeechConfig{VoiceConfig: &genai.VoiceConfig{
			PrebuiltVoiceConfig: &genai.PrebuiltVoiceConfig{VoiceName: v},
		}}
	}
	if lc.InputTranscription {
		cfg.InputAudioTranscription = &genai.AudioTranscriptionConfig{}
	}
	if lc.OutputTranscription {
		cfg.OutputAudioTranscription = &genai.AudioTranscriptionConfig{}
	}
	return cfg, nil
}

// Session is an open Gemini Live session.
type Session struct {
	sess      *genai.Session
	stream    *voice.Stream
	closeOnce sync.Once
	closeErr  error
	stopCtx   func() bool

	// sendMu serializes writes: the connection allows one writer at a time.
	sendMu sync.Mutex
}

var _ voice.LiveSession = (*Session)(nil)

func start(ctx context.Context, gs *genai.Session) *Session {
	s := &Session{
		sess:   gs,
		stream: voice.NewStream(eventBuffer),
	}
	// AfterFunc rather than a watcher goroutine: nothing runs until ctx
	// ends, and Close can cancel it.
	// The callback must not touch stopCtx: with ctx already done it runs
	// before the assignment below completes.
	s.stopCtx = context.AfterFunc(ctx, func() { _ = s.shutdown() })
	go s.read()
	return s
}

// InputMIME is the audio format SendAudio takes without a mime type.
func (s *Session) InputMIME() string { return DefaultInputMIME }

// OutputMIME is the format of the agent's audio events.
func (s *Session) OutputMIME() string { return OutputMIME }

// Events returns the event stream; see voice.LiveSession.
func (s *Session) Events() <-chan voice.Event { return s.stream.Events() }

// SendAudio streams candidate audio. An empty mime means DefaultInputMIME.
func (s *Session) SendAudio(chunk []byte, mime string) error {
	if mime == "" {
		mime = DefaultInputMIME
	}
	if !strings.HasPrefix(mime, "audio/") {
		return llm.NewError(llm.KindBadRequest, 0, nil, "geminilive: send audio: mime type %q is not audio/*", mime)
	}
	if len(chunk) == 0 {
		return nil
	}
	return s.send("send audio", func() error {
		return s.sess.SendRealtimeInput(genai.LiveRealtimeInput{Audio: &genai.Blob{Data: chunk, MIMEType: mime}})
	})
}

// SendText sends typed candidate input as realtime input, the same channel
// as audio, since the API advises against mixing it with turn-based
// client content in one conversation.
func (s *Session) SendText(text string) error {
	if text == "" {
		return nil
	}
	return s.send("send text", func() error {
		return s.sess.SendRealtimeInput(genai.LiveRealtimeInput{Text: text})
	})
}

// SendToolResponse answers tool calls, matched by ToolResult.CallID.
func (s *Session) SendToolResponse(results []llm.ToolResult) error {
	if len(results) == 0 {
		return nil
	}
	frs := make([]*genai.FunctionResponse, 0, len(results))
	for _, r := range results {
		fr, err := gemini.FunctionResponse(r)
		if err != nil {
			return llm.NewError(llm.KindBadRequest, 0, err, "geminilive: send tool response: %v", err)
		}
		frs = append(frs, fr)
	}
	return s.send("send tool response", func() error {
		return s.sess.SendToolResponse(genai.LiveToolResponseInput{FunctionResponses: frs})
	})
}

func (s *Session) send(what string, op func() error) (err error) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.stream.Stopped() {
		return ErrClosed
	}
	defer func() {
		// The SDK's converters assert on map shapes; never let one take
		// the host down.
		if p := recover(); p != nil {
			err = fmt.Errorf("geminilive: %s: SDK panicked: %v", what, p)
		}
	}()
	if err := op(); err != nil {
		if s.stream.Stopped() {
			// Close raced with this write and cut the connection under it.
			return ErrClosed
		}
		return fmt.Errorf("geminilive: %s: %w", what, err)
	}
	return nil
}

// Close ends the session and waits for the reader goroutine to exit. It is
// safe to call more than once and from any goroutine; later calls return
// the first call's result.
func (s *Session) Close() error {
	// The session was handed out after stopCtx was set, so reading it here
	// is safe.
	s.stopCtx()
	return s.shutdown()
}

func (s *Session) shutdown() error {
	s.closeOnce.Do(func() {
		s.stream.Stop()
		// Closing the connection unblocks the reader's Receive and any
		// write in progress, so Close never waits on a stalled network.
		s.closeErr = s.sess.Close()
		s.stream.Wait()
		if s.closeErr != nil && isClosedConn(s.closeErr) {
			s.closeErr = nil
		}
	})
	return s.closeErr
}
