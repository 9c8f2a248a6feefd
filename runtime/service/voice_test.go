package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/live"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/voice"
	"github.com/batonhq/baton/runtime/voice/elevenlabs"
	"github.com/batonhq/baton/runtime/voice/elevenlabs/elevenlabsfake"
	"github.com/batonhq/baton/runtime/voice/geminilive"
	"github.com/batonhq/baton/runtime/voice/geminilive/geminilivefake"
)

// liveTrainingPack is the bundled training pack, which in live voice
// mode gives the candidate the floor at live_start (so the engine asks
// for the candidate's live session) and leaves replies to it.
func liveTrainingPack(*testing.T) string { return "training" }

// readWAV returns the samples of a 16 kHz mono 16-bit PCM WAV file,
// refusing any other format.
func readWAV(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("%s: not a RIFF WAVE file", path)
	}
	var format bool
	for rest := b[12:]; len(rest) >= 8; {
		id, size := string(rest[0:4]), int(binary.LittleEndian.Uint32(rest[4:8]))
		if 8+size > len(rest) {
			t.Fatalf("%s: chunk %q of %d bytes runs past the end", path, id, size)
		}
		body := rest[8 : 8+size]
		switch id {
		case "fmt ":
			if size < 16 {
				t.Fatalf("%s: fmt chunk of %d bytes", path, size)
			}
			tag, channels := binary.LittleEndian.Uint16(body[0:2]), binary.LittleEndian.Uint16(body[2:4])
			rate, bits := binary.LittleEndian.Uint32(body[4:8]), binary.LittleEndian.Uint16(body[14:16])
			if tag != 1 || channels != 1 || rate != 16000 || bits != 16 {
				t.Fatalf("%s: format %d, %d channels, %d Hz, %d bits; want PCM (1), mono, 16000 Hz, 16 bits", path, tag, channels, rate, bits)
			}
			format = true
		case "data":
			if !format {
				t.Fatalf("%s: data before fmt", path)
			}
			return body
		}
		rest = rest[8+size+size%2:]
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}

// step is one thing the live model does in a test, played by each
// vendor's fake in its own protocol.
type step struct {
	awaitSilence int    // wait for speech, then this many bytes of silence
	awaitAudio   int    // wait for this many bytes of audio
	user         string // the transcript of what the person said
	agent        string // what the agent says, as text
	partial      bool   // agent: the turn goes on (no end of turn)
	audio        []byte // a chunk of the agent's speech
	interrupt    bool   // the person barged in
	call         *call  // a client tool call
	awaitResult  string // wait for the result of this call
}

type call struct {
	id, name string
	args     map[string]any
}

// heard is what a vendor's fake received.
type heard struct {
	conns   int
	audio   []byte
	results map[string]string // tool call id: the result as the vendor got it
}

// vendor is a live speech service, faked: start runs its fake with the
// steps on every connection and returns the connector the server uses
// and what the fake has received so far.
type vendor struct {
	name  string
	start func(t *testing.T, steps []step) (voice.Connector, func() heard)
}

var vendors = []vendor{
	{"elevenlabs", startElevenLabs},
	{"gemini-live", startGeminiLive},
}

func startElevenLabs(t *testing.T, steps []step) (voice.Connector, func() heard) {
	var script []elevenlabsfake.Step
	for _, s := range steps {
		switch {
		case s.awaitSilence > 0:
			script = append(script, elevenlabsfake.AwaitSilence(s.awaitSilence))
		case s.awaitAudio > 0:
			script = append(script, elevenlabsfake.AwaitAudio(s.awaitAudio))
		case s.user != "":
			script = append(script, elevenlabsfake.UserTranscript(s.user))
		case s.agent != "":
			// The service sends a reply whole, whether or not it is cut.
			script = append(script, elevenlabsfake.AgentResponse(s.agent))
		case s.audio != nil:
			script = append(script, elevenlabsfake.Audio(s.audio))
		case s.interrupt:
			script = append(script, elevenlabsfake.Interruption())
		case s.call != nil:
			script = append(script, elevenlabsfake.ToolCall(s.call.id, s.call.name, s.call.args))
		case s.awaitResult != "":
			script = append(script, elevenlabsfake.AwaitToolResult(s.awaitResult))
		}
	}
	fake := elevenlabsfake.New(t, elevenlabsfake.Script{AgentID: "agent_training", APIKey: "xi-test", Steps: script})
	conn, err := elevenlabs.New(elevenlabs.Config{APIKey: "xi-test", AgentID: "agent_training", BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []*elevenlabsfake.Conn
	)
	return conn, func() heard {
		mu.Lock()
		defer mu.Unlock()
		for more := true; more; {
			select {
			case c := <-fake.Conns():
				conns = append(conns, c)
			default:
				more = false
			}
		}
		h := heard{conns: len(conns), results: map[string]string{}}
		for _, c := range conns {
			h.audio = append(h.audio, c.UserAudio()...)
			for _, m := range c.Received() {
				if m.Type == "client_tool_result" {
					h.results[m.Fields["tool_call_id"].(string)] = m.Fields["result"].(string)
				}
			}
		}
		return h
	}
}

func startGeminiLive(t *testing.T, steps []step) (voice.Connector, func() heard) {
	var (
		mu      sync.Mutex
		conns   []*geminilivefake.Conn
		results = map[string]string{}
	)
	fake := geminilivefake.New(t, "gemini-test", func(c *geminilivefake.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		c.Setup()
		for _, s := range steps {
			switch {
			case s.awaitSilence > 0:
				c.AwaitSilence(s.awaitSilence)
			case s.awaitAudio > 0:
				c.AwaitAudio(s.awaitAudio)
			case s.user != "":
				c.UserTranscript(s.user)
			case s.agent != "":
				c.AgentText(s.agent)
				if !s.partial {
					c.TurnComplete()
				}
			case s.audio != nil:
				c.AgentAudio(geminilivefake.OutputMIME, s.audio)
			case s.interrupt:
				c.Interrupted()
			case s.call != nil:
				c.ToolCall(s.call.id, s.call.name, s.call.args)
			case s.awaitResult != "":
				r := c.AwaitToolResponse(s.awaitResult)
				b, _ := json.Marshal(r["response"])
				mu.Lock()
				results[s.awaitResult] = string(b)
				mu.Unlock()
			}
		}
		c.DrainUntilGone()
	})
	conn, err := geminilive.New(context.Background(), geminilive.Config{APIKey: "gemini-test", BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	return conn, func() heard {
		mu.Lock()
		defer mu.Unlock()
		h := heard{conns: len(conns), results: maps(results)}
		for _, c := range conns {
			h.audio = append(h.audio, c.UserAudio()...)
		}
		return h
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// voiceLog is what a client of a server-hosted voice session received
// besides effects, in order.
type voiceLog struct {
	frames      []string // voice frame types in order
	audio       []AudioEvent
	responses   []string
	transcripts []string
	interrupts  []int64
	metadata    []VoiceMetadata
	calls       []string // client_tool_call ids
	answered    []string // acked client_tool_result ids
	notices     []string
	errors      []string
	pongs       []string
}

// drive reads the session's frames until done holds, running every
// client_tool_call against ws (nil: none are expected) and answering it in
// the vendor's shape.
func drive(t *testing.T, c *wsClient, ws interface {
	Call(op string, params []byte) ([]byte, bool)
}, log *voiceLog, what string, done func(*voiceLog) bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	ops := map[string]string{"open_file": "open", "write_file": "write"}
	for !done(log) {
		var f ServerFrame
		select {
		case fr, ok := <-c.frames:
			if !ok {
				t.Fatalf("connection closed while waiting for %s: %v", what, c.closeErr())
			}
			f = fr
		case <-timeout:
			t.Fatalf("no %s within %s; got %+v", what, waitLimit, *log)
		}
		switch f.Type {
		case FrameAudio, FrameAgentResponse, FrameUserTranscript, FrameInterruption, FrameVoiceMetadata:
			log.frames = append(log.frames, f.Type)
			if f.SessionID == "" {
				t.Errorf("%s frame without session_id", f.Type)
			}
		}
		switch f.Type {
		case FrameAudio:
			log.audio = append(log.audio, *f.Audio)
		case FrameAgentResponse:
			log.responses = append(log.responses, f.AgentResponse.AgentResponse)
		case FrameUserTranscript:
			log.transcripts = append(log.transcripts, f.UserTranscription.UserTranscript)
		case FrameInterruption:
			log.interrupts = append(log.interrupts, f.Interruption.EventID)
		case FrameVoiceMetadata:
			log.metadata = append(log.metadata, *f.Metadata)
		case FrameNotice:
			log.notices = append(log.notices, f.Code+": "+f.Message)
		case FrameError:
			log.errors = append(log.errors, f.Code+": "+f.Message)
		case FramePong:
			log.pongs = append(log.pongs, f.ID)
		case FrameAck:
			if slices.Contains(log.calls, f.ID) {
				log.answered = append(log.answered, f.ID)
			}
		case FrameClientToolCall:
			call := f.ClientToolCall
			log.calls = append(log.calls, call.ToolCallID)
			if ws == nil {
				t.Fatalf("unexpected client_tool_call %+v", call)
			}
			result, isErr := ws.Call(ops[call.ToolName], call.Parameters)
			c.send(map[string]any{"type": "client_tool_result", "tool_call_id": call.ToolCallID, "result": json.RawMessage(result), "is_error": isErr})
		}
	}
}

// streamAudio sends pcm as the person's microphone in 20 ms binary
// frames.
func streamAudio(t *testing.T, c *wsClient, pcm []byte) {
	t.Helper()
	const frame = 16000 * 2 / 50
	for len(pcm) > 0 {
		n := min(frame, len(pcm))
		if err := c.ws.WriteMessage(websocket.BinaryMessage, pcm[:n]); err != nil {
			t.Fatal(err)
		}
		pcm = pcm[n:]
	}
}

// startVoice starts a session of pack in live voice mode and waits until
// the server has opened its live session. It returns the session's
// secret.
func startVoice(t *testing.T, h *harness, c *wsClient, id, pack string, log *voiceLog) string {
	t.Helper()
	c.send(map[string]any{"id": "s", "type": "start", "pack": pack, "session_id": id, "voice_mode": "live"})
	ack := c.expectAck("s")
	if !ack.State.ServerVoice {
		t.Fatalf("start ack %+v: the server does not host the session's voice", ack.State)
	}
	drive(t, c, nil, log, "the live session's metadata", func(l *voiceLog) bool { return len(l.metadata) > 0 })
	return ack.SessionSecret
}

const (
	userSays   = "Open index.js and add a greet function that returns hi."
	agentFirst = "Sure, I'll open index.js and add it after listNames."
	agentDone  = "Done: greet returns hi."
)

// The training pack end to end over a server-hosted live session, for
// each vendor: the person's recording streams in as 20 ms binary frames;
// the vendor hears it and answers with a transcript, speech and two
// client tool calls, which the client runs in its workspace; the client
// gets the speech and both transcripts in the vendor's shapes; and the
// session's log replays offline to the same effects, byte for byte.
func TestVoiceTrainingEndToEnd(t *testing.T) {
	speech := readWAV(t, filepath.Join("testdata", "voice", "human.wav"))
	silence := make([]byte, 16000*2/2) // half a second
	say1, say2 := bytes.Repeat([]byte{1, 2}, 480), bytes.Repeat([]byte{3, 4}, 480)
	greet := map[string]any{"path": "index.js", "lineEdits": []any{map[string]any{
		"op": "insert", "line": 11, "position": "before", "text": "function greet() {\n  return \"hi\";\n}\n\n"}}}
	steps := []step{
		{awaitSilence: len(silence)},
		{user: userSays},
		{agent: agentFirst},
		{audio: say1},
		{call: &call{"call-open", "open_file", map[string]any{"path": "index.js"}}},
		{awaitResult: "call-open"},
		{call: &call{"call-write", "write_file", greet}},
		{awaitResult: "call-write"},
		{agent: agentDone},
		{audio: say2},
	}
	pack := liveTrainingPack(t)
	for _, v := range vendors {
		t.Run(v.name, func(t *testing.T) {
			connector, fakeHeard := v.start(t, steps)
			h := newHarness(t, func(c *Config) { c.Voice = connector })
			c := h.dial(nil)
			id := "voice_" + strings.ReplaceAll(v.name, "-", "_")
			var log voiceLog
			startVoice(t, h, c, id, pack, &log)
			md := log.metadata[0]
			if md.UserInputAudioFormat != "pcm_16000" || md.AgentOutputAudioFormat == "" {
				t.Errorf("metadata %+v, want pcm_16000 in and the vendor's format out", md)
			}

			streamAudio(t, c, append(slices.Clone(speech), silence...))
			ws := trainingWorkspace(t)
			drive(t, c, ws, &log, "the agent's last words and speech", func(l *voiceLog) bool {
				return slices.Contains(l.responses, agentDone) && len(l.audio) == 2
			})

			if got, _ := ws.Get("index.js"); !strings.Contains(got, "function greet() {\n  return \"hi\";\n}") {
				t.Errorf("the client's workspace after the edits:\n%s", got)
			}
			if !slices.Equal(log.calls, []string{"call-open", "call-write"}) || !slices.Equal(log.answered, log.calls) {
				t.Errorf("client tool calls %v, answered %v; want call-open then call-write, each acked", log.calls, log.answered)
			}
			if !slices.Equal(log.transcripts, []string{userSays}) {
				t.Errorf("user transcripts %q", log.transcripts)
			}
			if !slices.Equal(log.responses, []string{agentFirst, agentDone}) {
				t.Errorf("agent responses %q", log.responses)
			}
			for i, want := range [][]byte{say1, say2} {
				if got, _ := base64.StdEncoding.DecodeString(log.audio[i].Audio); !bytes.Equal(got, want) {
					t.Errorf("audio frame %d carries %d bytes, not the agent's chunk", i, len(got))
				}
			}
			if len(log.errors) > 0 || len(log.notices) > 0 {
				t.Errorf("errors %q, notices %q", log.errors, log.notices)
			}
			got := fakeHeard()
			if got.conns != 1 {
				t.Errorf("%d live sessions opened, want 1", got.conns)
			}
			if !bytes.HasPrefix(got.audio, speech) {
				t.Errorf("the vendor heard %d bytes, not the recording (%d bytes) first", len(got.audio), len(speech))
			}
			for id, want := range map[string]string{"call-open": `"path":"index.js"`, "call-write": `"ok":true`} {
				if !strings.Contains(got.results[id], want) {
					t.Errorf("the vendor got result %q for %s, want it to hold %s", got.results[id], id, want)
				}
			}

			// The person leaves; the log holds the speech's transcripts and
			// calls as inputs, and none of its audio.
			c.send(map[string]any{"id": "end", "type": "end", "reason": "candidate_left"})
			c.waitFor("the end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
			waitGone(t, h, id)
			path := h.srv.dir.DonePath(id)
			rec, err := wal.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Header.Options.VoiceMode != "live" {
				t.Errorf("log header options %+v, want voice_mode live", rec.Header.Options)
			}
			var inputs []string
			for _, in := range rec.Inputs {
				switch {
				case in.Candidate != nil && in.Candidate.Text != "":
					inputs = append(inputs, fmt.Sprintf("candidate %s %q", in.Candidate.Source, in.Candidate.Text))
				case in.Agent != nil:
					inputs = append(inputs, fmt.Sprintf("%s says %q", in.Agent.Role, in.Agent.Text))
				case in.Tool != nil:
					inputs = append(inputs, fmt.Sprintf("%s calls %s %s", in.Tool.Role, in.Tool.Name, in.Tool.ID))
				case in.ClientTool != nil:
					inputs = append(inputs, "result "+in.ClientTool.ID)
				}
			}
			want := []string{
				fmt.Sprintf("candidate voice %q", userSays),
				fmt.Sprintf("candidate says %q", agentFirst),
				"candidate calls open_file call-open", "result call-open",
				"candidate calls write_file call-write", "result call-write",
				fmt.Sprintf("candidate says %q", agentDone),
			}
			if !slices.Equal(inputs, want) {
				t.Errorf("logged inputs:\n%s\nwant:\n%s", strings.Join(inputs, "\n"), strings.Join(want, "\n"))
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(say1))) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(speech[:960]))) {
				t.Error("the log holds audio")
			}

			// Offline, with no vendor: the same effects, byte for byte.
			res, err := replay.File(path, h.srv.Pack)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Unverified != 0 {
				t.Fatalf("replay: diffs %q, unverified %d", res.Diffs, res.Unverified)
			}
			sent := c.effectList()
			if len(res.Timeline) != len(sent) {
				t.Fatalf("replay made %d effects, the client got %d", len(res.Timeline), len(sent))
			}
			for i := range sent {
				a, b := res.Timeline[i].Effect, sent[i].Effect.Effect
				a.Request, b.Request = nil, nil // clients never get the prompt
				if ja, jb := mustJSON(a), mustJSON(b); !bytes.Equal(ja, jb) {
					t.Fatalf("effect %d differs:\nreplayed %s\n    sent %s", i+1, ja, jb)
				}
			}
		})
	}
}

// Barge-in: the vendor's interruption reaches the client at once, with
// the turn whose audio it drops, and audio after it belongs to a later
// turn; the engine gets what the agent had said.
func TestVoiceBargeIn(t *testing.T) {
	long := "Let me first walk you through the whole history of this file."
	steps := []step{
		{awaitAudio: 640},
		{agent: long, partial: true},
		{audio: bytes.Repeat([]byte{5, 6}, 480)},
		{interrupt: true},
		{agent: "Go ahead."},
		{audio: bytes.Repeat([]byte{7, 8}, 480)},
	}
	pack := liveTrainingPack(t)
	for _, v := range vendors {
		t.Run(v.name, func(t *testing.T) {
			connector, _ := v.start(t, steps)
			h := newHarness(t, func(c *Config) { c.Voice = connector })
			c := h.dial(nil)
			id := "barge_" + strings.ReplaceAll(v.name, "-", "_")
			var log voiceLog
			startVoice(t, h, c, id, pack, &log)
			streamAudio(t, c, make([]byte, 640))
			drive(t, c, nil, &log, "audio after the barge-in", func(l *voiceLog) bool { return len(l.audio) == 2 })
			if len(log.interrupts) != 1 {
				t.Fatalf("voice frames %v: want one interruption", log.frames)
			}
			first := slices.Index(log.frames, FrameAudio)
			cut := slices.Index(log.frames, FrameInterruption)
			if first < 0 || cut < first || log.audio[0].EventID > log.interrupts[0] || log.audio[1].EventID <= log.interrupts[0] {
				t.Fatalf("frames %v, audio %+v, interruption %v: want audio of the interrupted turn, the interruption, then a later turn's audio",
					log.frames, log.audio, log.interrupts)
			}
			if !slices.Contains(log.responses, long) {
				t.Errorf("agent responses %q, want the interrupted line", log.responses)
			}
			c.send(map[string]any{"id": "end", "type": "end", "reason": "candidate_left"})
			c.expectAck("end")
			waitGone(t, h, id)
			rec, err := wal.ReadFile(h.srv.dir.DonePath(id))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(rec.Inputs, func(in engine.Input) bool { return in.Agent != nil && in.Agent.Text == long }) {
				t.Errorf("the log has no agent_transcript %q", long)
			}
		})
	}
}

// Sessions whose speech the server does not host take no audio: binary
// frames and the vendor's audio message are refused as before, whatever
// the server could do.
func TestVoiceNotHosted(t *testing.T) {
	pack := liveTrainingPack(t)
	connector, fakeHeard := startElevenLabs(t, nil)
	tests := []struct {
		name      string
		connector voice.Connector
		start     map[string]any
	}{
		{"a pack in tts mode", connector, map[string]any{"pack": "training"}},
		{"tts chosen at start", connector, map[string]any{"pack": pack, "voice_mode": "tts"}},
		{"the client hosts the live session", connector, map[string]any{"pack": pack, "voice_mode": "live", "client_voice": true}},
		{"a server without a voice", nil, map[string]any{"pack": pack, "voice_mode": "live"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Voice = tt.connector })
			c := h.dial(nil)
			id := fmt.Sprintf("nv%d", i)
			start := map[string]any{"id": "s", "type": "start", "session_id": id}
			for k, v := range tt.start {
				start[k] = v
			}
			c.send(start)
			if ack := c.expectAck("s"); ack.State.ServerVoice {
				t.Fatalf("state %+v: server voice", ack.State)
			}
			if err := c.ws.WriteMessage(websocket.BinaryMessage, make([]byte, 640)); err != nil {
				t.Fatal(err)
			}
			if f := c.expectError("", CodeBadFrame); !strings.Contains(f.Message, "binary frames are not part of the protocol") {
				t.Errorf("binary frame: %s", f.Message)
			}
			c.sendRaw([]byte(`{"user_audio_chunk":"AAAA"}`))
			if f := c.expectError("", CodeBadFrame); !strings.Contains(f.Message, "user_audio_chunk") {
				t.Errorf("audio message: %s", f.Message)
			}
			if tt.start["client_voice"] == true {
				// Today's path: the client forwards what its live session said.
				c.send(map[string]any{"id": "a1", "type": "agent_transcript", "agent": map[string]any{"role": "candidate", "text": "Hello."}})
				c.expectAck("a1")
				rec, err := h.srv.dir.Read(id)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(rec.Header.Host), `"client_voice":true`) || rec.Header.Options.VoiceMode != "live" {
					t.Errorf("log header host %s, options %+v", rec.Header.Host, rec.Header.Options)
				}
			}
		})
	}
	if n := fakeHeard().conns; n != 0 {
		t.Errorf("the vendor got %d connections", n)
	}
}

// A voice_mode that is neither live nor tts is refused at start.
func TestVoiceModeChecked(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "vm", "voice_mode": "speech"})
	if f := c.expectError("s", CodeBadFrame); !strings.Contains(f.Message, "want live or tts") {
		t.Fatalf("start: %s", f.Message)
	}
	if h.srv.lookup("vm") != nil {
		t.Fatal("the session started")
	}
}

// gated holds every Connect until it is let through.
type gated struct {
	voice.Connector
	open chan struct{}
}

func (g *gated) Connect(ctx context.Context, cfg voice.LiveConfig) (voice.LiveSession, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Connector.Connect(ctx, cfg)
}

// The client's audio is bounded: audio before a live session is open is
// dropped and counted without an answer; a frame too large or malformed
// is refused and counted; audio over the connection's budget (ten seconds
// ahead, on the server's clock, which stands still here) is dropped with
// one rate_limited error for the run; the vendor hears exactly what was
// let through.
func TestVoiceAudioBounds(t *testing.T) {
	const second = 16000 * 2
	early := 3
	accepted := (audioBurst - early*640) / second
	connector, fakeHeard := startElevenLabs(t, []step{{awaitAudio: accepted * second}, {agent: "I heard you."}})
	g := &gated{Connector: connector, open: make(chan struct{})}
	h := newHarness(t, func(c *Config) { c.Voice = g })
	dropped := func(why string) float64 { return testutil.ToFloat64(h.srv.m.audioDropped.WithLabelValues(why)) }
	c := h.dial(nil)
	var log voiceLog
	c.send(map[string]any{"id": "s", "type": "start", "pack": liveTrainingPack(t), "session_id": "bounds", "voice_mode": "live"})
	c.expectAck("s")
	c.waitFor("the live_session effect", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectLiveSession })

	// A ping's pong says every frame before it was read.
	sync := func(id string) {
		t.Helper()
		c.send(map[string]any{"id": id, "type": "ping"})
		drive(t, c, nil, &log, "pong "+id, func(l *voiceLog) bool { return slices.Contains(l.pongs, id) })
	}
	for range early {
		if err := c.ws.WriteMessage(websocket.BinaryMessage, make([]byte, 640)); err != nil {
			t.Fatal(err)
		}
	}
	sync("p1")
	if n := dropped(dropNoLiveSession); n != float64(early) || len(log.errors) > 0 {
		t.Fatalf("audio before the live session: %v dropped (want %d), errors %q", n, early, log.errors)
	}
	close(g.open)
	drive(t, c, nil, &log, "the live session's metadata", func(l *voiceLog) bool { return len(l.metadata) > 0 })

	for _, bad := range []struct {
		binary []byte
		text   string
		code   string
		says   string
	}{
		{binary: make([]byte, 641), code: CodeBadFrame, says: "odd number of bytes"},
		{binary: make([]byte, maxAudioFrame+2), code: CodeTooLarge, says: "at most 32000 bytes"},
		{text: `{"user_audio_chunk":"!!"}`, code: CodeBadFrame, says: "not base64"},
		{text: `{"user_audio_chunk":"AAAA","event_id":1}`, code: CodeBadFrame, says: `unknown field "event_id"`},
	} {
		if bad.binary != nil {
			if err := c.ws.WriteMessage(websocket.BinaryMessage, bad.binary); err != nil {
				t.Fatal(err)
			}
		} else {
			c.sendRaw([]byte(bad.text))
		}
		if f := c.expectError("", bad.code); !strings.Contains(f.Message, bad.says) {
			t.Errorf("%q: %s, want it to say %q", bad.text, f.Message, bad.says)
		}
	}
	if dropped(dropMalformed) != 3 || dropped(dropTooLarge) != 1 {
		t.Errorf("dropped malformed %v, too large %v; want 3 and 1", dropped(dropMalformed), dropped(dropTooLarge))
	}

	// Two seconds more than the budget holds, in one-second frames; the
	// vendor's form for the last ones.
	for i := range accepted + 2 {
		if i < accepted {
			if err := c.ws.WriteMessage(websocket.BinaryMessage, bytes.Repeat([]byte{1, 0}, second/2)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		c.send(map[string]any{"user_audio_chunk": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1, 0}, second/2))})
	}
	sync("p2")
	if len(log.errors) != 1 || !strings.HasPrefix(log.errors[0], CodeRateLimited+": microphone audio over") {
		t.Errorf("errors for audio over the budget: %q, want one rate_limited", log.errors)
	}
	if n := dropped(dropRateLimited); n != 2 {
		t.Errorf("dropped over the budget: %v, want 2", n)
	}
	if n := dropped(dropBacklog); n != 0 {
		t.Errorf("dropped for the backlog: %v, want none", n)
	}
	drive(t, c, nil, &log, "the vendor's answer to the audio", func(l *voiceLog) bool { return len(l.responses) > 0 })
	if got := len(fakeHeard().audio); got != accepted*second {
		t.Errorf("the vendor heard %d bytes, want the %d let through", got, accepted*second)
	}
	if n := testutil.ToFloat64(h.srv.m.audioBytes); n != float64(accepted*second) {
		t.Errorf("audio bytes passed on: %v, want %d", n, accepted*second)
	}
}

// A live session that cannot be opened, or that the vendor ends, is told
// to the client as a voice_failed notice and counted; the session goes on.
func TestVoiceFailureNotice(t *testing.T) {
	tests := []struct {
		name    string
		agentID string
		steps   []elevenlabsfake.Step
		says    string
		kind    string
	}{
		{"refused at connect", "agent_gone", nil, `could not be opened: elevenlabs: connect agent agent_gone: no agent "agent_gone"`, "bad_request"},
		{"ended by the vendor", "agent_training", []elevenlabsfake.Step{elevenlabsfake.Close(websocket.CloseInternalServerErr, "tts failed")},
			"the live speech session for candidate ended: elevenlabs: server closed the conversation (code 1011): tts failed", "server"},
	}
	pack := liveTrainingPack(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := elevenlabsfake.New(t, elevenlabsfake.Script{AgentID: "agent_training", Steps: tt.steps, ExpectRefusals: true})
			connector, err := elevenlabs.New(elevenlabs.Config{APIKey: "xi-test", AgentID: tt.agentID, BaseURL: fake.URL})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, func(c *Config) { c.Voice = connector })
			c := h.dial(nil)
			id := fmt.Sprintf("vf%d", i)
			c.send(map[string]any{"id": "s", "type": "start", "pack": pack, "session_id": id, "voice_mode": "live"})
			c.expectAck("s")
			var log voiceLog
			drive(t, c, nil, &log, "a voice_failed notice", func(l *voiceLog) bool { return len(l.notices) > 0 })
			if want := NoticeVoiceFailed + ": "; !strings.HasPrefix(log.notices[0], want) || !strings.Contains(log.notices[0], tt.says) {
				t.Errorf("notice %q, want %s saying %q", log.notices[0], NoticeVoiceFailed, tt.says)
			}
			if n := testutil.ToFloat64(h.srv.m.adapterErrors.WithLabelValues("voice", tt.kind)); n != 1 {
				t.Errorf("voice errors of kind %s: %v, want 1", tt.kind, n)
			}
			// The session goes on: typed input still applies.
			c.send(eventFrame("e", map[string]any{"event_type": "candidate_message", "data": map[string]any{"text": "Are you there?"}}))
			c.expectAck("e")
		})
	}
}

// A live session the vendor ends normally (a call ended, a length limit)
// is said to the client with a voice_closed notice, and audio sent after
// it finds no session instead of failing against a closed socket.
func TestVoiceVendorEndsNormally(t *testing.T) {
	fake := elevenlabsfake.New(t, elevenlabsfake.Script{AgentID: "agent_training", APIKey: "xi-test",
		Steps: []elevenlabsfake.Step{elevenlabsfake.Close(websocket.CloseNormalClosure, "call ended")}})
	connector, err := elevenlabs.New(elevenlabs.Config{APIKey: "xi-test", AgentID: "agent_training", BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Voice = connector })
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "vc", "voice_mode": "live"})
	c.expectAck("s")
	var log voiceLog
	drive(t, c, nil, &log, "a voice_closed notice", func(l *voiceLog) bool { return len(l.notices) > 0 })
	if want := NoticeVoiceClosed + ": "; !strings.HasPrefix(log.notices[0], want) || !strings.Contains(log.notices[0], "ended the live speech session for candidate") {
		t.Fatalf("notice %q, want %s", log.notices[0], NoticeVoiceClosed)
	}
	vh := h.srv.lookup("vc").liveVoice
	for deadline := time.Now().Add(waitLimit); vh.bridge.Role() != ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bridge still names a floor holder whose session the vendor ended")
		}
	}
}

// Empty audio frames are not free: each costs its share of the audio
// budget, so a flood of them is refused like any other.
func TestVoiceEmptyAudioFlood(t *testing.T) {
	connector, _ := startElevenLabs(t, nil)
	h := newHarness(t, func(c *Config) { c.Voice = connector })
	c := h.dial(nil)
	var log voiceLog
	startVoice(t, h, c, "empty", liveTrainingPack(t), &log)
	for range audioBurst/minAudioCost + 10 {
		if err := c.ws.WriteMessage(websocket.BinaryMessage, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.send(map[string]any{"id": "p", "type": "ping"})
	drive(t, c, nil, &log, "the pong", func(l *voiceLog) bool { return slices.Contains(l.pongs, "p") })
	if !slices.ContainsFunc(log.errors, func(e string) bool { return strings.HasPrefix(e, CodeRateLimited) }) {
		t.Fatalf("a flood of empty audio frames was never refused: errors %q", log.errors)
	}
}

// stalledConnector accepts a connection and never answers the setup, as
// a vendor can; Connect returns only when its context ends.
type stalledConnector struct{}

func (stalledConnector) Connect(ctx context.Context, _ voice.LiveConfig) (voice.LiveSession, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A vendor that never answers is given up on after the connect timeout,
// measured on the server's clock, and the client is told; the session
// goes on.
func TestVoiceConnectTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Voice = stalledConnector{} })
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "st", "voice_mode": "live"})
	c.expectAck("s")
	// The live session is being opened: the connect timer is armed.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.clk.WaitFor(ctx, func(armed []time.Time) bool {
		return slices.ContainsFunc(armed, func(at time.Time) bool { return at.Equal(h.clk.Now().Add(live.DefaultConnectTimeout)) })
	}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(live.DefaultConnectTimeout)
	var log voiceLog
	drive(t, c, nil, &log, "a voice_failed notice", func(l *voiceLog) bool { return len(l.notices) > 0 })
	if !strings.HasPrefix(log.notices[0], NoticeVoiceFailed+": ") || !strings.Contains(log.notices[0], "no answer from the vendor in time") {
		t.Fatalf("notice %q", log.notices[0])
	}
	c.send(eventFrame("e", map[string]any{"event_type": "candidate_message", "data": map[string]any{"text": "Are you there?"}}))
	c.expectAck("e")
}

// A session recovered after a restart opens its floor holder's live
// session again, with the same instructions.
func TestVoiceRecovered(t *testing.T) {
	connector, fakeHeard := startElevenLabs(t, nil)
	h := newHarness(t, func(c *Config) { c.Voice = connector })
	c := h.dial(nil)
	var log voiceLog
	secret := startVoice(t, h, c, "rv", liveTrainingPack(t), &log)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h2 := startHarness(t, h.cfg, h.clk, nil)
	if n := testutil.ToFloat64(h2.srv.m.recoveries.WithLabelValues("ok")); n != 1 {
		t.Fatalf("recoveries ok %v", n)
	}
	for deadline := time.Now().Add(waitLimit); fakeHeard().conns < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the recovered session did not open its live session again")
		}
	}
	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "rv", "session_secret": secret})
	if ack := c2.expectAck("r"); !ack.State.ServerVoice {
		t.Fatalf("resume ack %+v: the server does not host the session's voice", ack.State)
	}
	// The live session opened before this client came back: it still gets
	// the formats and the word to start its microphone.
	var after voiceLog
	drive(t, c2, nil, &after, "the live session's metadata", func(l *voiceLog) bool { return len(l.metadata) > 0 })
	if md := after.metadata[0]; md.UserInputAudioFormat != "pcm_16000" || md.AgentOutputAudioFormat == "" {
		t.Fatalf("metadata after resume: %+v", md)
	}
}

// Who hosts a session's speech is decided when it starts and kept in its
// log: a session whose client hosted its live session stays with the
// client after a restart with --voice (else both would send what the
// model said), and one the server hosted stays voiceless, not moved to
// the client, after a restart without it.
func TestVoiceHostingSurvivesRestart(t *testing.T) {
	connector, heard := startElevenLabs(t, nil)
	h := newHarness(t) // no --voice: the client hosts
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "cv", "voice_mode": "live"})
	ack := c.expectAck("s")
	if ack.State.ServerVoice {
		t.Fatal("a server without --voice hosts the session's voice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Voice = connector
	h2 := startHarness(t, cfg, h.clk, nil)
	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "cv", "session_secret": ack.SessionSecret})
	if ack := c2.expectAck("r"); ack.State.ServerVoice {
		t.Fatal("after a restart with --voice the server took over the voice of a session its client hosts")
	}
	h2.quiesce("cv")
	if n := heard().conns; n != 0 {
		t.Fatalf("%d vendor connections for a session its client voices", n)
	}
}

// Refused audio is answered within the connection's frame rate, never
// beyond it: a client sending malformed audio in a loop gets as many
// errors as the rate allows, and the rest are only counted.
func TestVoiceAudioErrorsWithinRate(t *testing.T) {
	connector, _ := startElevenLabs(t, nil)
	// The fake clock stands still: the frame budget is the burst, of
	// which start takes one.
	h := newHarness(t, func(c *Config) { c.Voice, c.EventRate, c.EventBurst = connector, 1, 4 })
	c := h.dial(nil)
	var log voiceLog
	startVoice(t, h, c, "storm", liveTrainingPack(t), &log)
	for range 5 {
		if err := c.ws.WriteMessage(websocket.BinaryMessage, make([]byte, 3)); err != nil {
			t.Fatal(err)
		}
	}
	c.send(map[string]any{"id": "p", "type": "ping"})
	drive(t, c, nil, &log, "the ping's refusal", func(l *voiceLog) bool {
		return slices.ContainsFunc(l.errors, func(e string) bool { return strings.HasPrefix(e, CodeRateLimited) })
	})
	var answered int
	for _, e := range log.errors {
		if strings.Contains(e, "odd number of bytes") {
			answered++
		}
	}
	if answered != 3 || len(log.errors) != 4 {
		t.Errorf("errors %q: want 3 answers to odd frames, then the ping refused", log.errors)
	}
	if n := testutil.ToFloat64(h.srv.m.audioDropped.WithLabelValues(dropMalformed)); n != 5 {
		t.Errorf("malformed audio dropped: %v, want 5", n)
	}
}
