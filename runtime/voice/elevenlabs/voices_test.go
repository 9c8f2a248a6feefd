package elevenlabs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/voice/elevenlabs"
	"github.com/batonhq/baton/runtime/voice/elevenlabs/elevenlabsfake"
)

// Voices lists the account's voices from GET /v1/voices, as the strict
// fake serves it; a wrong key is refused with the service's status.
func TestVoicesLists(t *testing.T) {
	srv := elevenlabsfake.New(t, elevenlabsfake.Script{APIKey: "xi-key", Voices: []string{"21m00Tcm4TlvDq8ikWAM", "pNInz6obpgDQGcFmaJgB"}})
	c, err := elevenlabs.New(elevenlabs.Config{APIKey: "xi-key", AgentID: "agent_1", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Voices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].VoiceID != "21m00Tcm4TlvDq8ikWAM" || got[1].VoiceID != "pNInz6obpgDQGcFmaJgB" {
		t.Errorf("voices %+v", got)
	}

	bad := elevenlabsfake.New(t, elevenlabsfake.Script{APIKey: "other", ExpectRefusals: true})
	c, _ = elevenlabs.New(elevenlabs.Config{APIKey: "xi-key", AgentID: "agent_1", BaseURL: bad.URL})
	if _, err := c.Voices(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong key: %v", err)
	}
}
