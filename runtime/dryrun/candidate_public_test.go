package dryrun_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

const candidatePackHead = `name: cand
schema: 1
tick: 100ms
duration: 5m
roles:
  qa: {name: Quinn, persona: You are Quinn., fallback: {default: "Go on."}}
routing:
  - {id: R1, type: role, role: qa}
`

// question is the agent message every candidate below is asked.
var question = engine.Effect{T: 1000, Type: engine.EffectAgentMessage, ID: "m1", Agent: "qa", Kind: "window", Text: "How would you reproduce it?"}

// answerTo plays one question to a fresh candidate of m and returns every
// event it then sends, with its time, until it has nothing more planned.
func answerTo(t *testing.T, m *dryrun.CandidateModel, seed uint64) (times []int64, evs []engine.CandidateEvent) {
	t.Helper()
	c := m.NewCandidate(seed)
	q := question
	c.Observe(&q, 2000)
	for range 1000 {
		if _, ok := c.Next(); !ok {
			return times, evs
		}
		at, ev := c.Pop()
		times, evs = append(times, at), append(evs, ev)
	}
	t.Fatal("the candidate never stops answering one question")
	return nil, nil
}

// The door a live host plays a candidate through: the pack's model when
// it has one, else the built-in candidate (every key at its default)
// answering with the pack's own candidate lines.
func TestCandidateModelFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pack  string
		files map[string]string
		// ownModel: the pack declares a model, so NewCandidateModel
		// accepts it too.
		ownModel bool
		// words every answer is made of.
		words string
		// firstAt, when set, is when the first answer starts: the
		// pack's constant latency, which no default would give.
		firstAt int64
	}{
		{
			name: "the pack's own model",
			pack: candidatePackHead + `dryrun:
  candidate_model: {answer_latency: 1s, silence: 0, talk_over: 0, typing: 0, pause: 0, answers: ["alpha beta gamma"]}
`,
			ownModel: true, words: "alpha beta gamma", firstAt: 1000 + 2000 + 1000,
		},
		{
			name: "no model: the built-in candidate says the pack's candidate lines",
			pack: candidatePackHead + `dryrun:
  candidate: candidate.jsonl
`,
			files: map[string]string{"candidate.jsonl": `{"event_type":"candidate_message","ts_ms":500,"data":{"text":"replay the failed payment"}}` + "\n"},
			words: "replay the failed payment",
		},
		{
			name:  "no model and no candidate lines: the built-in answer",
			pack:  candidatePackHead,
			words: "I would check that first.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"pack.yaml": {Data: []byte(tc.pack)}}
			for name, data := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			p, err := rules.LoadFS(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dryrun.NewCandidateModel(p); (err == nil) != tc.ownModel {
				t.Fatalf("NewCandidateModel error = %v; the pack declares a model: %v", err, tc.ownModel)
			}
			m, err := dryrun.CandidateModelFor(p)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ownModel && p.DryRun.CandidateModel != nil {
				t.Fatal("CandidateModelFor gave the pack a model of its own")
			}
			allowed := strings.Fields(tc.words)
			messages := 0
			for seed := range uint64(20) {
				times, evs := answerTo(t, m, seed)
				again, evsAgain := answerTo(t, m, seed)
				if !reflect.DeepEqual(times, again) || !reflect.DeepEqual(evs, evsAgain) {
					t.Fatalf("seed %d played twice differs:\n%v %v\n%v %v", seed, times, evs, again, evsAgain)
				}
				if tc.firstAt != 0 && (len(times) == 0 || times[0] != tc.firstAt) {
					t.Fatalf("seed %d: answer starts at %v, want %d (the pack's latency)", seed, times, tc.firstAt)
				}
				for i, ev := range evs {
					if times[i] < question.T {
						t.Errorf("seed %d: %s at %d, before the question", seed, ev.Type, times[i])
					}
					if ev.Type != engine.EventMessage {
						continue
					}
					messages++
					for _, w := range strings.Fields(ev.Text) {
						if !slices.Contains(allowed, w) {
							t.Errorf("seed %d: answer %q has %q, not one of the pack's words %q", seed, ev.Text, w, tc.words)
						}
					}
				}
			}
			if messages == 0 {
				t.Fatal("twenty seeds and not one answer")
			}
		})
	}
}

// A candidate that saw the session end plans nothing more, even an
// answer it had planned.
func TestCandidateStopsAtSessionEnd(t *testing.T) {
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(candidatePackHead)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dryrun.CandidateModelFor(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		effect engine.Effect
		want   bool
	}{
		{"a note leaves the answer planned", engine.Effect{T: 1500, Type: engine.EffectNote}, true},
		{"the end drops it", engine.Effect{T: 1500, Type: engine.EffectSessionEnd, Reason: "session_complete"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Seed 0 answers (the defaults' silence is 5 %); checked.
			c := m.NewCandidate(0)
			q := question
			c.Observe(&q, 2000)
			if _, ok := c.Next(); !ok {
				t.Fatal("seed 0 plans no answer; pick a seed that does")
			}
			e := tc.effect
			c.Observe(&e, 0)
			if _, ok := c.Next(); ok != tc.want {
				t.Fatalf("after %s something planned = %v, want %v", e.Type, ok, tc.want)
			}
		})
	}
}
