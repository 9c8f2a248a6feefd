package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/live"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// Server-hosted live voice (docs/protocol.md, "Speech"). With a
// Config.Voice connector, a session in live voice mode runs its floor
// holder's speech-to-speech session on the server: a live.Bridge whose
// inputs (transcripts, tool calls) enter the session's actor like a
// client's, logged before they are applied, so the session replays with no
// vendor. The client streams microphone audio on its WebSocket and gets
// the agent's audio, both transcripts and barge-in back in the shapes of
// ElevenLabs' agent protocol. Audio is not an engine input: it is neither
// logged nor replayed, only its transcripts are.

// AudioInMIME is the one format of client audio: raw PCM, signed 16-bit
// little-endian, mono, 16 kHz.
const AudioInMIME = "audio/pcm;rate=16000"

// Bounds on a client's audio.
const (
	audioBytesPerSecond = 16000 * 2
	// maxAudioFrame bounds one audio frame: a second of audio (clients
	// send 20 to 250 ms).
	maxAudioFrame = audioBytesPerSecond
	// audioRate and audioBurst are a connection's audio budget in bytes:
	// twice real time sustained, so a client can catch up after a stall,
	// and at most ten seconds ahead, so it cannot flood the vendor.
	audioRate  = 2 * audioBytesPerSecond
	audioBurst = 10 * audioBytesPerSecond
	// minAudioCost is what any frame costs (10 ms of audio), so tiny
	// frames cannot multiply the per-frame work within the budget.
	minAudioCost = audioBytesPerSecond / 100
	// audioBacklog bounds the audio queued for the live model: what the
	// budget lets a client send at once, so only a vendor that stops
	// taking audio loses any, and never costs more memory than this.
	audioBacklog = audioBurst
	// audioPeek is how much of a text frame is read to tell the vendor's
	// audio message from a protocol frame.
	audioPeek = 64
)

// Why client audio was dropped: baton_voice_audio_dropped_total's reasons.
const (
	dropNoLiveSession = "no_live_session" // no live session holds the floor yet (or the floor is moving)
	dropRateLimited   = "rate_limited"    // over the connection's audio budget
	dropBacklog       = "backlog"         // the live model is not taking audio fast enough
	dropTooLarge      = "too_large"       // a frame over maxAudioFrame
	dropMalformed     = "malformed"       // odd bytes, bad base64, a malformed vendor message
	dropSendFailed    = "send_failed"     // the live session refused it
)

var audioDropReasons = []string{dropNoLiveSession, dropRateLimited, dropBacklog, dropTooLarge, dropMalformed, dropSendFailed}

// Server frames of server-hosted voice, in the shapes of ElevenLabs' agent
// protocol. They are transport frames, like notices: not effects, no seq,
// not replayed on resume.
const (
	// FrameAudio is a chunk of the agent's speech (audio_event).
	FrameAudio = "audio"
	// FrameAgentResponse is what the agent said, as text.
	FrameAgentResponse = "agent_response"
	// FrameUserTranscript is the transcript of the person's utterance.
	FrameUserTranscript = "user_transcript"
	// FrameInterruption is barge-in: drop the agent audio queued for play
	// whose event_id is not past the interruption's.
	FrameInterruption = "interruption"
	// FrameVoiceMetadata says a live speech session is open and in which
	// audio formats: microphone audio sent before it is dropped.
	FrameVoiceMetadata = "conversation_initiation_metadata"
)

// NoticeVoiceFailed is the notice code for a live speech session that
// could not be opened or ended abnormally.
const NoticeVoiceFailed = "voice_failed"

// NoticeVoiceClosed is the notice code for a live speech session the
// vendor ended normally (a call ended, a length limit reached): the
// floor has no voice until the engine next moves it.
const NoticeVoiceClosed = "voice_closed"

// VoiceFrame is one frame of server-hosted voice; exactly one event field
// is set, the one its Type names.
type VoiceFrame struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id,omitempty"`
	VoiceEvents
}

// VoiceEvents are the events of voice frames, in ElevenLabs' member
// names; ServerFrame carries them too, for clients decoding any frame.
type VoiceEvents struct {
	Audio             *AudioEvent             `json:"audio_event,omitempty"`
	AgentResponse     *AgentResponseEvent     `json:"agent_response_event,omitempty"`
	UserTranscription *UserTranscriptionEvent `json:"user_transcription_event,omitempty"`
	Interruption      *InterruptionEvent      `json:"interruption_event,omitempty"`
	Metadata          *VoiceMetadata          `json:"conversation_initiation_metadata_event,omitempty"`
}

// AudioEvent is a chunk of agent audio, base64 in the format the metadata
// names. EventID starts at 1 and goes up at each interruption: audio of
// a turn that was interrupted has an EventID at most the interruption's.
type AudioEvent struct {
	Audio   string `json:"audio_base_64"`
	EventID int64  `json:"event_id"`
}

// AgentResponseEvent is the text of an agent's turn.
type AgentResponseEvent struct {
	AgentResponse string `json:"agent_response"`
}

// UserTranscriptionEvent is the transcript of one finished utterance.
type UserTranscriptionEvent struct {
	UserTranscript string `json:"user_transcript"`
}

// InterruptionEvent is barge-in on turn EventID.
type InterruptionEvent struct {
	EventID int64 `json:"event_id"`
}

// VoiceMetadata describes an open live session: the formats of the audio
// frames (ElevenLabs' names, such as pcm_16000 or pcm_24000) and the
// vendor's conversation id where it has one.
type VoiceMetadata struct {
	ConversationID         string `json:"conversation_id,omitempty"`
	AgentOutputAudioFormat string `json:"agent_output_audio_format,omitempty"`
	UserInputAudioFormat   string `json:"user_input_audio_format"`
}

// voiceOptions are a session's voice settings in its log header, beside
// the host's and the contract's options.
type voiceOptions struct {
	// ClientVoice: the client hosts the live session itself even when the
	// server could.
	ClientVoice bool `json:"client_voice,omitempty"`
	// ServerVoice: the server hosts the session's live speech. Decided
	// once, at start, and kept: a restart with another --voice must not
	// move the speech of a session under way to the other side (both
	// would then send what the model said).
	ServerVoice bool `json:"server_voice,omitempty"`
}

// liveMode reports whether a session speaks through live sessions: the
// session's override, else the pack's voice.mode (as the engine decides).
func liveMode(p *rules.Pack, override string) bool {
	if m, ok := rules.ParseVoiceMode(override); ok {
		return m == rules.VoiceLive
	}
	return p.Voice.Mode == rules.VoiceLive
}

// mergeObjects joins two JSON objects' members; either may be empty.
func mergeObjects(a, b json.RawMessage) json.RawMessage {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	switch {
	case len(a) == 0 || string(a) == "{}":
		return b
	case len(b) == 0 || string(b) == "{}":
		return a
	}
	return append(append(a[:len(a)-1:len(a)-1], ','), b[1:]...)
}

// voiceMsg carries a voice frame to the session's actor, which sends it
// to every watcher in order with the effects.
type voiceMsg struct{ frame []byte }

// voiceHost runs one session's server-hosted live speech: the bridge, a
// worker that hands it the engine's effects in order (connecting can take
// a network round trip, which the actor must not wait for), and a
// forwarder that streams the client's audio to the floor holder's
// session without making the client's reader wait on the vendor.
type voiceHost struct {
	s      *session
	bridge *live.Bridge
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	effects []engine.Effect // for the worker
	audio   [][]byte        // for the forwarder
	queued  int             // bytes in audio
	wakeFx  chan struct{}
	wakeAu  chan struct{}

	// resume is the live session the log's replay ended on, reconnected
	// when the session is recovered; the actor alone touches it.
	resume *engine.Effect

	// The relay's state: touched by Connected and Observe, which the
	// bridge calls one after the other.
	outMu sync.Mutex
	turn  int64
	said  strings.Builder
	// meta is the open live session's metadata frame, for a client that
	// subscribes after it was sent (a resume, a second watcher); nil
	// while no live session is open.
	meta []byte
	// sendFailed is set once a failed audio send was logged, until one
	// goes through (forwarder only).
	sendFailed bool
}

// RoleVoices names role's voice for each speech vendor: gemini (the
// voice the engine resolved, which a slot may have chosen) and the
// pack's ElevenLabs voice for the role, or voice.default's.
func RoleVoices(p *rules.Pack, role, gemini string) map[string]string {
	v := map[string]string{voice.Gemini: gemini}
	if r, ok := p.Role(role); ok {
		if v[voice.Gemini] == "" {
			v[voice.Gemini] = p.RoleVoice(r, rules.VendorGemini)
		}
		v[voice.ElevenLabs] = p.RoleVoice(r, rules.VendorElevenLabs)
	}
	return v
}

// newVoiceHost returns the voice host of a session whose speech the server
// hosts, nil for any other. It starts nothing.
func newVoiceHost(s *session, hdr wal.Header, p *rules.Pack) *voiceHost {
	var o voiceOptions
	if len(hdr.Host) == 0 || json.Unmarshal(hdr.Host, &o) != nil || !o.ServerVoice || !liveMode(p, hdr.Options.VoiceMode) {
		return nil
	}
	if s.srv.cfg.Voice == nil {
		s.log.Warn("the session's speech was hosted by the server, which now runs without --voice; it goes on without a voice", "session_id", s.id)
		return nil
	}
	vh := &voiceHost{s: s, turn: 1, wakeFx: make(chan struct{}, 1), wakeAu: make(chan struct{}, 1)}
	vh.ctx, vh.cancel = context.WithCancel(s.ctx)
	vh.bridge = &live.Bridge{Connector: s.srv.cfg.Voice, Deliver: vh.deliver, Connected: vh.connected, Observe: vh.observe, Clock: s.srv.clock,
		Voices: func(role, gemini string) map[string]string { return RoleVoices(p, role, gemini) }}
	return vh
}

// start runs the worker and the forwarder; a recovered session reconnects
// the live session it had.
func (vh *voiceHost) start() {
	vh.s.srv.wg.Add(2)
	go vh.work()
	go vh.forward()
	if vh.resume != nil && !vh.s.ended {
		vh.queue(*vh.resume)
	}
	vh.resume = nil
}

// stop ends the live session; the worker closes the bridge as it exits.
func (vh *voiceHost) stop() { vh.cancel() }

// effect hands the bridge the effects it acts on; replaying a log only
// remembers which live session was last asked for.
func (vh *voiceHost) effect(e *engine.Effect, replaying bool) {
	switch e.Type {
	case engine.EffectLiveSession, engine.EffectToolResult, engine.EffectSessionEnd:
	default:
		return
	}
	if !replaying {
		vh.queue(*e)
		return
	}
	switch e.Type {
	case engine.EffectLiveSession:
		c := *e
		vh.resume = &c
	case engine.EffectSessionEnd:
		vh.resume = nil
	}
}

func (vh *voiceHost) queue(e engine.Effect) {
	vh.mu.Lock()
	vh.effects = append(vh.effects, e)
	vh.mu.Unlock()
	select {
	case vh.wakeFx <- struct{}{}:
	default:
	}
}

// work hands the bridge each effect in order until the session stops.
func (vh *voiceHost) work() {
	defer vh.s.srv.wg.Done()
	defer vh.bridge.Close()
	for {
		vh.mu.Lock()
		var e engine.Effect
		ok := len(vh.effects) > 0
		if ok {
			e = vh.effects[0]
			vh.effects = vh.effects[1:]
		}
		vh.mu.Unlock()
		if !ok {
			select {
			case <-vh.wakeFx:
				continue
			case <-vh.ctx.Done():
				return
			}
		}
		if vh.ctx.Err() != nil {
			return
		}
		vh.handle(e)
	}
}

func (vh *voiceHost) handle(e engine.Effect) {
	m, clk := vh.s.srv.m, vh.s.srv.clock
	start := clk.Now()
	err := vh.bridge.Handle(vh.ctx, e)
	if e.Type == engine.EffectLiveSession {
		m.adapterSeconds.WithLabelValues("voice").Observe(clk.Now().Sub(start).Seconds())
	}
	if err == nil || errors.Is(err, live.ErrClosed) || vh.ctx.Err() != nil {
		return
	}
	m.adapterErrors.WithLabelValues("voice", voiceErrKind(err)).Inc()
	if e.Type != engine.EffectLiveSession {
		vh.s.log.Warn("live speech: could not pass an effect to the live session", "effect", e.Type, "id", e.ID, "role", e.Agent, "err", err)
		return
	}
	vh.s.log.Warn("live speech session could not be opened", "role", e.Agent, "err", err)
	vh.notice(fmt.Sprintf("the live speech session for %s could not be opened: %s", e.Agent, voiceErrText(err)))
}

// deliver posts an input the live session made into the session's actor,
// which stamps, checks, logs and applies it like a client's.
func (vh *voiceHost) deliver(in engine.Input) {
	if pe := vh.s.post(vh.ctx, &evMsg{input: &in, read: vh.s.srv.clock.Now()}); pe != nil && vh.ctx.Err() == nil {
		vh.s.log.Warn("live speech input lost", "type", in.Type, "code", pe.Code, "err", pe.Message)
	}
}

// send posts a frame for the session's watchers.
func (vh *voiceHost) send(f VoiceFrame) {
	f.SessionID = vh.s.id
	vh.s.post(vh.ctx, voiceMsg{frame: mustJSON(f)})
}

func (vh *voiceHost) notice(msg string) { vh.noticeCode(NoticeVoiceFailed, msg) }

func (vh *voiceHost) noticeCode(code, msg string) {
	vh.s.post(vh.ctx, noticeMsg{n: NoticeFrame{Type: FrameNotice, SessionID: vh.s.id, Code: code, Message: vh.s.srv.clientTextString(msg)}})
}

// connected tells the session's watchers a live session is open and in
// which formats.
func (vh *voiceHost) connected(role string, sess voice.LiveSession) {
	vh.outMu.Lock()
	vh.said.Reset()
	vh.outMu.Unlock()
	md := VoiceMetadata{UserInputAudioFormat: audioFormat(AudioInMIME)}
	if o, ok := sess.(interface{ OutputMIME() string }); ok {
		md.AgentOutputAudioFormat = audioFormat(o.OutputMIME())
	}
	if c, ok := sess.(interface{ ConversationID() string }); ok {
		md.ConversationID = c.ConversationID()
	}
	f := VoiceFrame{Type: FrameVoiceMetadata, SessionID: vh.s.id, VoiceEvents: VoiceEvents{Metadata: &md}}
	vh.outMu.Lock()
	vh.meta = mustJSON(f)
	vh.outMu.Unlock()
	vh.send(f)
	if i, ok := sess.(interface{ InputMIME() string }); ok && audioFormat(i.InputMIME()) != md.UserInputAudioFormat {
		vh.s.log.Warn("the live session takes another audio format than clients send", "role", role, "takes", i.InputMIME(), "clients_send", AudioInMIME)
		vh.notice(fmt.Sprintf("the live speech session for %s takes audio as %s, not %s; set the agent's user input audio format to pcm_16000", role, i.InputMIME(), AudioInMIME))
	}
}

// observe relays what the live session does to the session's watchers:
// audio at once, barge-in at once, text at the points where the bridge
// hands the engine the agent's transcript.
func (vh *voiceHost) observe(role string, ev voice.Event) {
	vh.outMu.Lock()
	defer vh.outMu.Unlock()
	switch ev.Kind {
	case voice.EventAgentAudio:
		vh.send(VoiceFrame{Type: FrameAudio, VoiceEvents: VoiceEvents{Audio: &AudioEvent{Audio: base64.StdEncoding.EncodeToString(ev.Audio), EventID: vh.turn}}})
	case voice.EventAgentText:
		vh.said.WriteString(ev.Text)
	case voice.EventTurnComplete, voice.EventToolCall:
		vh.flush()
	case voice.EventInterrupted:
		vh.send(VoiceFrame{Type: FrameInterruption, VoiceEvents: VoiceEvents{Interruption: &InterruptionEvent{EventID: vh.turn}}})
		// Audio after barge-in belongs to a turn the client must play.
		vh.turn++
		vh.flush()
	case voice.EventUserTranscript:
		if !ev.Final || strings.TrimSpace(ev.Text) == "" {
			return
		}
		vh.flush()
		vh.send(VoiceFrame{Type: FrameUserTranscript, VoiceEvents: VoiceEvents{UserTranscription: &UserTranscriptionEvent{UserTranscript: ev.Text}}})
	case voice.EventError:
		vh.s.srv.m.adapterErrors.WithLabelValues("voice", voiceErrKind(ev.Err)).Inc()
		vh.s.log.Warn("live speech session reported an error", "role", role, "err", ev.Err)
	case voice.EventClosed:
		vh.flush()
		vh.meta = nil
		if ev.Err != nil {
			vh.notice(fmt.Sprintf("the live speech session for %s ended: %s", role, voiceErrText(ev.Err)))
			return
		}
		// The vendor ended it normally: say so, or the client would
		// stream into a floor with no voice without knowing.
		vh.noticeCode(NoticeVoiceClosed, fmt.Sprintf("the vendor ended the live speech session for %s; the next move of the floor opens another", role))
	}
}

// metadata is the open live session's metadata frame, or nil.
func (vh *voiceHost) metadata() []byte {
	vh.outMu.Lock()
	defer vh.outMu.Unlock()
	return vh.meta
}

// flush sends the agent's text said since the last flush; outMu is held.
func (vh *voiceHost) flush() {
	if text := strings.TrimSpace(vh.said.String()); text != "" {
		vh.send(VoiceFrame{Type: FrameAgentResponse, VoiceEvents: VoiceEvents{AgentResponse: &AgentResponseEvent{AgentResponse: text}}})
	}
	vh.said.Reset()
}

// audioIn queues a chunk of the client's audio for the floor holder; it
// returns why it was dropped, or "".
func (vh *voiceHost) audioIn(chunk []byte) string {
	if vh.ctx.Err() != nil || vh.bridge.Role() == "" {
		return dropNoLiveSession
	}
	vh.mu.Lock()
	if vh.queued+len(chunk) > audioBacklog {
		vh.mu.Unlock()
		return dropBacklog
	}
	vh.audio = append(vh.audio, chunk)
	vh.queued += len(chunk)
	vh.mu.Unlock()
	select {
	case vh.wakeAu <- struct{}{}:
	default:
	}
	return ""
}

// forward streams queued audio to the floor holder until the session
// stops.
func (vh *voiceHost) forward() {
	defer vh.s.srv.wg.Done()
	m := vh.s.srv.m
	for {
		vh.mu.Lock()
		var chunk []byte
		if len(vh.audio) > 0 {
			chunk = vh.audio[0]
			vh.audio[0] = nil
			vh.audio = vh.audio[1:]
			vh.queued -= len(chunk)
		}
		vh.mu.Unlock()
		if chunk == nil {
			select {
			case <-vh.wakeAu:
				continue
			case <-vh.ctx.Done():
				return
			}
		}
		err := vh.bridge.SendAudio(chunk, AudioInMIME)
		switch {
		case err == nil:
			m.audioBytes.Add(float64(len(chunk)))
			vh.sendFailed = false
		case errors.Is(err, live.ErrNoSession):
			m.audioDropped.WithLabelValues(dropNoLiveSession).Inc()
		default:
			m.audioDropped.WithLabelValues(dropSendFailed).Inc()
			if !vh.sendFailed && vh.ctx.Err() == nil {
				vh.sendFailed = true
				vh.s.log.Warn("live speech session refused audio", "role", vh.bridge.Role(), "err", err)
			}
		}
	}
}

// voiceErrKind is the metric label of a live session's error.
func voiceErrKind(err error) string {
	if e := llm.Classify(err); e != nil {
		return errKind(string(e.Kind))
	}
	return "unknown"
}

// voiceErrText is a live session's error as a client reads it: the
// adapter's words, without the error kind's prefix.
func voiceErrText(err error) string {
	if e := llm.Classify(err); e != nil && e.Message != "" {
		return e.Message
	}
	return err.Error()
}

// audioFormat names an audio MIME type as ElevenLabs names formats:
// audio/pcm;rate=16000 is pcm_16000, audio/pcmu;rate=8000 ulaw_8000;
// others keep their MIME type.
func audioFormat(mimeType string) string {
	t, params, err := mime.ParseMediaType(mimeType)
	if err != nil || params["rate"] == "" {
		return mimeType
	}
	switch t {
	case "audio/pcm", "audio/l16":
		return "pcm_" + params["rate"]
	case "audio/pcmu", "audio/basic":
		return "ulaw_" + params["rate"]
	}
	return mimeType
}

// connAudio is a connection's audio budget: a token bucket in bytes, on
// the server's clock. The connection's reader alone touches it.
type connAudio struct {
	tokens  float64
	last    time.Time
	started bool
	// refusing: the frame before was over the budget and its run has been
	// answered once.
	refusing bool
}

func (a *connAudio) take(now time.Time, cost int) bool {
	if !a.started {
		a.tokens, a.last, a.started = audioBurst, now, true
	}
	if dt := now.Sub(a.last).Seconds(); dt > 0 {
		a.tokens = min(audioBurst, a.tokens+dt*audioRate)
		a.last = now
	}
	if a.tokens < float64(cost) {
		return false
	}
	a.tokens -= float64(cost)
	return true
}

// serverVoice is the voice host of the session the connection runs, nil
// when the server does not host its speech.
func (c *conn) serverVoice() *voiceHost {
	if c.sess == nil {
		return nil
	}
	return c.sess.liveVoice
}

// voiceFrame takes a frame of a session whose speech the server hosts
// when it is microphone audio: a binary frame, or the vendor's
// {"user_audio_chunk": base64} message. It reports whether it was; r is
// what is left to read of any other frame.
func (c *conn) voiceFrame(vh *voiceHost, typ int, r io.Reader, read time.Time) (bool, io.Reader, error) {
	if typ == websocket.BinaryMessage {
		return true, r, c.audioFrame(vh, r, read, false)
	}
	br := newPeekReader(r)
	if !isAudioChunk(br) {
		return false, br, nil
	}
	return true, br, c.audioFrame(vh, br, read, true)
}

// audioFrame checks one frame of microphone audio against its bounds and
// queues it for the live model. Audio is never an error storm: a frame
// refused for its size or shape is answered only within the connection's
// frame rate, a frame over the audio budget only once per run, and audio
// before a live session is open is dropped silently; every drop is
// counted.
func (c *conn) audioFrame(vh *voiceHost, r io.Reader, read time.Time, vendor bool) error {
	// The vendor's form is base64 in JSON, a third larger than the audio.
	most := min(int64(maxAudioFrame), c.srv.cfg.MaxMessageBytes)
	limit := most
	if vendor {
		limit = c.srv.cfg.MaxMessageBytes
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	tooLarge := perr(CodeTooLarge, "an audio frame holds at most %d bytes of audio (up to a second of 16 kHz 16-bit mono PCM); it was dropped", most)
	if int64(len(data)) > limit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		c.audioRefused(dropTooLarge, read, tooLarge)
		return nil
	}
	pcm := data
	if vendor {
		var pe *ProtoError
		if pcm, pe = decodeAudioChunk(data); pe != nil {
			c.audioRefused(dropMalformed, read, pe)
			return nil
		}
	}
	switch {
	case int64(len(pcm)) > most:
		c.audioRefused(dropTooLarge, read, tooLarge)
		return nil
	case len(pcm)%2 != 0:
		c.audioRefused(dropMalformed, read, perr(CodeBadFrame, "audio is 16-bit PCM, but the frame has an odd number of bytes (%d); it was dropped", len(pcm)))
		return nil
	}
	// Even an empty frame costs its share of the budget: a flood of them
	// would otherwise be free.
	if !c.audio.take(read, max(len(pcm), minAudioCost)) {
		c.srv.m.audioDropped.WithLabelValues(dropRateLimited).Inc()
		if n := c.refused.add(read); n > c.srv.cfg.MaxRejected {
			if c.kill(websocket.ClosePolicyViolation, fmt.Sprintf("rate limit: %d frames refused within %s", n, rejectSpan), true) {
				c.log.Warn("audio over its budget; connection closed", "refused", n, "within", rejectSpan)
			}
		}
		if !c.audio.refusing {
			c.audio.refusing = true
			c.sendError("", perr(CodeRateLimited, "microphone audio over %d bytes a second (twice real time, at most %d s ahead); audio is dropped until the client keeps to it",
				audioRate, audioBurst/audioBytesPerSecond))
		}
		return nil
	}
	c.audio.refusing = false
	if len(pcm) == 0 {
		return nil
	}
	if why := vh.audioIn(pcm); why != "" {
		c.srv.m.audioDropped.WithLabelValues(why).Inc()
	}
	return nil
}

// audioRefused counts a dropped audio frame and answers it within the
// connection's frame rate.
func (c *conn) audioRefused(why string, read time.Time, pe *ProtoError) {
	c.srv.m.audioDropped.WithLabelValues(why).Inc()
	if c.admit(read) {
		c.sendError("", pe)
	}
}

// decodeAudioChunk reads the vendor's audio message, which has exactly
// one member.
func decodeAudioChunk(data []byte) ([]byte, *ProtoError) {
	var msg struct {
		Chunk *string `json:"user_audio_chunk"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&msg); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, perr(CodeBadJSON, "invalid JSON: %v", err)
		}
		return nil, perr(CodeBadFrame, "user_audio_chunk message: %v (it carries only user_audio_chunk, a base64 string)", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, perr(CodeBadJSON, "trailing data after the JSON object")
	}
	if msg.Chunk == nil {
		return nil, perr(CodeBadFrame, "user_audio_chunk is null; it is a base64 string")
	}
	pcm, err := base64.StdEncoding.DecodeString(*msg.Chunk)
	if err != nil {
		return nil, perr(CodeBadFrame, "user_audio_chunk is not base64: %v", err)
	}
	return pcm, nil
}

// peekReader lets the start of a frame be looked at before it is read.
type peekReader struct {
	head []byte
	r    io.Reader
	err  error
}

func newPeekReader(r io.Reader) *peekReader {
	p := &peekReader{r: r}
	buf := make([]byte, audioPeek)
	n, err := io.ReadFull(r, buf)
	p.head = buf[:n]
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		p.err = err
	}
	return p
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.r.Read(b)
}

// isAudioChunk reports whether a text frame is the vendor's audio message:
// an object whose first member is user_audio_chunk.
func isAudioChunk(p *peekReader) bool {
	h := bytes.TrimLeft(p.head, " \t\r\n")
	if len(h) == 0 || h[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(h[1:], " \t\r\n"), []byte(`"user_audio_chunk"`))
}
