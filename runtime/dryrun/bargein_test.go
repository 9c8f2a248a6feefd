package dryrun_test

import (
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

// A candidate who talks over every agent line cuts its speech short: the
// host stops playback there (an interrupted speech_done), and the speech
// never heard is counted by role, so a role's talk time is what was
// played, not what the voice would have taken.
func TestBargeInCutsTalk(t *testing.T) {
	const src = `name: talker
schema: 1
tick: 100ms
duration: 3m
roles:
  qa: {name: Quinn, persona: You are Quinn., fallback: {default: "Go on. Tell me more about how you would test the retry path, and why?"}}
timeline:
  windows:
    - {id: W1, open: "00:00", close: "00:10", turn: {role: qa, line: "Walk me through how you would reproduce the double charge, step by step, from the logs?"}}
routing:
  - {id: R1, type: role, role: qa}
dryrun:
  candidate_model:
    answer_latency: 1s
    answer_words: 4
    silence: 0
    talk_over: 1
    typing: 0
    pause: 0
    answers: ["one two three four"]
`
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dryrun.NewCandidateModel(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Run(p, dryrun.Options{Seed: 3, Candidate: m})
	if err != nil {
		t.Fatal(err)
	}
	// What the records say each line would take, less what the
	// interrupted speech_done inputs cut off, is what played.
	var planned, cut int64
	ends := map[string]int64{}
	for _, r := range res.Records {
		if r.Type == engine.EffectAgentMessage {
			planned += r.SpeechMS
			ends[r.ID] = r.T + r.SpeechMS
		}
	}
	interrupted := 0
	for _, in := range res.Inputs {
		if in.Type == engine.InputSpeechDone && in.Speech.Interrupted {
			interrupted++
			cut += ends[in.Speech.ID] - in.T
		}
	}
	if interrupted == 0 {
		t.Fatal("no line was talked over")
	}
	if got := res.Candidate.CutMS["qa"]; got != cut || got <= 0 || got >= planned {
		t.Fatalf("cut %dms of qa's %dms, want %dms (%d lines interrupted)", got, planned, cut, interrupted)
	}
}
