package sim

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/batonhq/baton/rules"
)

const voicePack = `name: voices
schema: 1
tick: 100ms
duration: 1m
voice:
  words_per_minute: 200
roles:
  qa:
    name: Quinn
    persona: You are Quinn.
    fallback: {default: "Go on."}
  slow:
    name: Sam
    persona: You are Sam.
    words_per_minute: 60
    fallback: {default: "Go on."}
timeline:
  anchors:
    - {id: END, at: 1m, action: end, reason: session_complete}
routing:
  - {id: R, type: role, role: qa}
`

func loadVoicePack(t *testing.T) *rules.Pack {
	t.Helper()
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(voicePack)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVoiceDuration pins the one speech model every host uses: words at
// the role's rate, else the pack's, never shorter than MinSpeechMS.
func TestVoiceDuration(t *testing.T) {
	v := NewVoice(loadVoicePack(t))
	for _, tc := range []struct {
		name, role, line string
		want             int64
	}{
		{"pack rate", "qa", "one two three four", 1200},
		{"role rate", "slow", "one two three four", 4000},
		{"unknown role speaks at the pack rate", "ghost", "one two three four", 1200},
		{"punctuation and newlines", "qa", "Share your first containment step.\nI will validate with replay tests.", 3300},
		{"one word is the shortest utterance", "qa", "Yes.", MinSpeechMS},
		{"nothing to say", "qa", " \n\t ", MinSpeechMS},
		{"long text does not overflow", "slow", strings.Repeat("word ", 100_000), 100_000 * 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := v.Duration(tc.role, tc.line); got != tc.want {
				t.Fatalf("Duration = %d ms, want %d", got, tc.want)
			}
			u, err := v.Speak(context.Background(), tc.role, "Kore", tc.line)
			if err != nil || u.Duration != time.Duration(tc.want)*time.Millisecond || u.Audio != nil {
				t.Fatalf("Speak = %v, %d audio bytes, %v; want %d ms and no audio", u.Duration, len(u.Audio), err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Speak(ctx, "qa", "Kore", "hi"); err == nil {
		t.Fatal("Speak on a cancelled context succeeded")
	}
}
