package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenarios"

	"github.com/batonhq/baton/runtime/voice/elevenlabs/elevenlabsfake"
)

// runServe runs baton with args; a server that starts anyway stops after
// a while, so a check that is missing fails the test instead of hanging it.
func runServe(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = (&cli{stdout: &out, stderr: &errb}).run(ctx, args)
	return code, out.String(), errb.String()
}

// --voice builds its vendor's connector at start: a missing key or agent
// id stops the server before it listens, naming the variables to set.
func TestServeVoiceNeedsItsVariables(t *testing.T) {
	tests := []struct {
		name, voice string
		env         map[string]string
		says        []string
		not         string
	}{
		{"elevenlabs without anything", "elevenlabs",
			map[string]string{"ELEVENLABS_API_KEY": "", "ELEVENLABS_AGENT_ID": ""},
			[]string{"--voice elevenlabs needs $ELEVENLABS_API_KEY (the API key) and $ELEVENLABS_AGENT_ID"}, ""},
		{"elevenlabs without an agent", "elevenlabs",
			map[string]string{"ELEVENLABS_API_KEY": "xi-key", "ELEVENLABS_AGENT_ID": ""},
			[]string{"--voice elevenlabs needs $ELEVENLABS_AGENT_ID (the id of an agent"}, "ELEVENLABS_API_KEY"},
		{"elevenlabs without a key", "elevenlabs",
			map[string]string{"ELEVENLABS_API_KEY": " ", "ELEVENLABS_AGENT_ID": "agent_1"},
			[]string{"--voice elevenlabs needs $ELEVENLABS_API_KEY (the API key)"}, "ELEVENLABS_AGENT_ID"},
		{"gemini-live without a key", "gemini-live",
			map[string]string{"GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""},
			[]string{"--voice gemini-live needs an API key: set $GEMINI_API_KEY or $GOOGLE_API_KEY"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errs := runServe(t, "serve", "--dev", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--voice", tt.voice)
			if code != 1 || strings.Contains(out, "listening") {
				t.Fatalf("exit %d, stdout %q; want 1 before listening", code, out)
			}
			for _, s := range tt.says {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr %q does not say %q", errs, s)
				}
			}
			if tt.not != "" && strings.Contains(errs, tt.not) {
				t.Errorf("stderr %q names %s, which is set", errs, tt.not)
			}
		})
	}
}

// An unknown vendor is a wrong command line: exit 2, naming the choices.
func TestServeVoiceUnknown(t *testing.T) {
	code, _, errs := runServe(t, "serve", "--dev", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--voice", "gemini")
	if code != 2 || !strings.Contains(errs, `--voice must be gemini-live or elevenlabs, not "gemini"`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// With --voice the server opens the live session of a live-voice session
// itself: a Hot Seat panel in live mode connects its first juror to the
// vendor, and the client is told the session is open.
func TestServeVoiceHostsLiveSessions(t *testing.T) {
	fake := elevenlabsfake.New(t, elevenlabsfake.Script{AgentID: "agent_panel", APIKey: "xi-key", Voices: bundledElevenLabsVoices(t)})
	t.Setenv("ELEVENLABS_API_KEY", "xi-key")
	t.Setenv("ELEVENLABS_AGENT_ID", "agent_panel")
	t.Setenv("ELEVENLABS_BASE_URL", fake.URL)
	addr := startServe(t, "--voice", "elevenlabs", "--llm-latency", "0s")
	d := websocket.Dialer{HandshakeTimeout: 20 * time.Second}
	ws, _, err := d.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	if err := ws.WriteJSON(map[string]any{"id": "s", "type": "start", "pack": "hotseat", "session_id": "panel", "voice_mode": "live"}); err != nil {
		t.Fatal(err)
	}
	var ack struct {
		Type  string
		State struct {
			ServerVoice bool `json:"server_voice"`
		}
	}
	if err := ws.ReadJSON(&ack); err != nil || ack.Type != "ack" || !ack.State.ServerVoice {
		t.Fatalf("start answered %+v, %v; want an ack with server_voice", ack, err)
	}
	for {
		var f struct{ Type, Code, Message string }
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("no conversation_initiation_metadata frame: %v", err)
		}
		if f.Type == "notice" || f.Type == "error" {
			t.Fatalf("%s %s: %s", f.Type, f.Code, f.Message)
		}
		if f.Type == "conversation_initiation_metadata" {
			break
		}
	}
	select {
	case c := <-fake.Conns():
		override := c.Initiation()["conversation_config_override"].(map[string]any)
		prompt, _ := override["agent"].(map[string]any)["prompt"].(map[string]any)["prompt"].(string)
		if !strings.Contains(prompt, "You are") {
			t.Errorf("the juror's live session was opened with prompt %q", prompt)
		}
		// The juror's ElevenLabs voice, never its Gemini name.
		tts, _ := override["tts"].(map[string]any)
		if id, _ := tts["voice_id"].(string); !slices.Contains(bundledElevenLabsVoices(t), id) {
			t.Errorf("the juror's live session asked for voice_id %q, not one of the pack's ElevenLabs voices", id)
		}
	default:
		t.Fatal("the vendor has no connection")
	}
}

// bundledElevenLabsVoices are the ElevenLabs voice ids the bundled packs
// name, each once.
func bundledElevenLabsVoices(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, name := range scenarios.Names() {
		p, err := rules.Load(scenarios.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Roles {
			if id := p.RoleVoice(&p.Roles[i], rules.VendorElevenLabs); id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// ElevenLabs voice ids belong to an account: --voice elevenlabs asks the
// vendor for the account's voices at start and refuses to start, naming
// the pack, role and voice, when a role's voice is not among them.
func TestServeVoiceRefusesUnknownElevenLabsVoice(t *testing.T) {
	ids := bundledElevenLabsVoices(t)
	missing := "nPczCjzI2devNBz1zQrb" // Hot Seat's marcus
	if !slices.Contains(ids, missing) {
		t.Fatalf("Hot Seat's marcus no longer speaks with %s; pick another voice for this test", missing)
	}
	fake := elevenlabsfake.New(t, elevenlabsfake.Script{AgentID: "agent_panel", APIKey: "xi-key",
		Voices: slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == missing })})
	t.Setenv("ELEVENLABS_API_KEY", "xi-key")
	t.Setenv("ELEVENLABS_AGENT_ID", "agent_panel")
	t.Setenv("ELEVENLABS_BASE_URL", fake.URL)
	code, out, errs := runServe(t, "serve", "--dev", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--voice", "elevenlabs")
	if code != 1 || strings.Contains(out, "listening") {
		t.Fatalf("exit %d, stdout %q; want 1 before listening", code, out)
	}
	if want := `pack hotseat: role marcus: elevenlabs voice "` + missing + `" is not one of the account's voices`; !strings.Contains(errs, want) {
		t.Errorf("stderr %q does not say %q", errs, want)
	}
	if fake.VoiceLists() != 1 {
		t.Errorf("GET /v1/voices asked %d times, want once", fake.VoiceLists())
	}
}
