package sim

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

const modelPack = `name: model
schema: 1
tick: 100ms
duration: 10m
roles:
  qa: {name: Quinn, persona: You are Quinn., fallback: {default: "Go on."}}
routing:
  - {id: R1, type: addressed, field: addressed_to, mentions: {"@qa": qa}}
  - {id: R2, type: role, role: qa}
speech_confidence:
  threshold: 0.7
  steps:
    - {count: 1, turn: {role: last, kind: repeat_request, line: "Again?"}}
dryrun:
  candidate_model:
    answer_latency: 1s
    answer_words: 4
    silence: SILENCE
    talk_over: 0
    typing: 0
    low_confidence: 0
    addressed: 0
    pause: 0
    pause_length: 500ms
    speaking_wpm: 60
    typing_wpm: 40
    answers: ["@qa one two three four five"]
constants:
  SILENCE: 0
`

// model loads modelPack with some of its model's keys changed.
func model(t *testing.T, set map[string]string) *CandidateModel {
	t.Helper()
	src := modelPack
	for k, v := range set {
		re := regexp.MustCompile(`(?m)^( *)` + k + `:.*$`)
		if !re.MatchString(src) {
			t.Fatalf("no key %s", k)
		}
		src = re.ReplaceAllString(src, "${1}"+k+": "+v)
	}
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewCandidateModel(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type got struct {
	t  int64
	ev engine.CandidateEvent
}

// drain answers one question from qa said at 1s for 2s, and takes every
// event the candidate then plans.
func drain(c *Candidate) []got {
	c.Observe(&engine.Effect{T: 1000, Type: engine.EffectAgentMessage, ID: "m1", Agent: "qa", Kind: "window"}, 2000)
	var out []got
	for {
		if _, ok := c.Next(); !ok {
			return out
		}
		t, ev := c.Pop()
		out = append(out, got{t, ev})
	}
}

func TestCandidateAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   map[string]string
		check func(t *testing.T, evs []got)
	}{
		{"spoken after the question's speech and the latency", nil, func(t *testing.T, evs []got) {
			// 4 words at 60 a minute: 4s of speech from 1s + 2s + 1s.
			want := []string{"mic_state_changed@4000", "mic_state_changed@8000", "speech_end@8000", "candidate_message@8200"}
			if s := kinds(evs); !reflect.DeepEqual(s, want) {
				t.Fatalf("%v, want %v", s, want)
			}
			last := evs[len(evs)-1].ev
			if last.Text != "one two three four" || last.Source != "voice" || *last.STTConfidence < 0.7 || last.AddressedTo != "" {
				t.Fatalf("message %+v: the mention is the model's to add, and the words are 4", last)
			}
		}},
		{"silent", map[string]string{"silence": "1"}, func(t *testing.T, evs []got) {
			if len(evs) != 0 {
				t.Fatalf("a silent candidate said %v", kinds(evs))
			}
		}},
		{"silence from a constant", map[string]string{"silence": "SILENCE", "SILENCE": "1"}, func(t *testing.T, evs []got) {
			if len(evs) != 0 {
				t.Fatalf("a silent candidate said %v", kinds(evs))
			}
		}},
		{"typed", map[string]string{"typing": "1", "typing_wpm": "30"}, func(t *testing.T, evs []got) {
			// 4 words at 30 a minute: 8s of typing from 4s, kept alive.
			last := evs[len(evs)-1]
			if last.t != 12000 || last.ev.Source != "text" || evs[0].ev.Type != engine.EventTypingState || evs[0].t != 4000 {
				t.Fatalf("%v", kinds(evs))
			}
		}},
		{"talks over", map[string]string{"talk_over": "1"}, func(t *testing.T, evs []got) {
			if evs[0].t < 1000 || evs[0].t >= 3000 || !*evs[0].ev.MicActive {
				t.Fatalf("barge-in at %d, not during the speech (1s to 3s)", evs[0].t)
			}
		}},
		{"low confidence", map[string]string{"low_confidence": "1"}, func(t *testing.T, evs []got) {
			if c := *evs[len(evs)-1].ev.STTConfidence; c >= 0.7 {
				t.Fatalf("confidence %v is not below the threshold", c)
			}
		}},
		{"addressed", map[string]string{"addressed": "1"}, func(t *testing.T, evs []got) {
			m := evs[len(evs)-1].ev
			if m.AddressedTo != "qa" && !strings.HasPrefix(m.Text, "@qa ") {
				t.Fatalf("message %+v names nobody", m)
			}
		}},
		{"pauses", map[string]string{"pause": "1", "pause_length": "1s"}, func(t *testing.T, evs []got) {
			want := []string{"mic_state_changed@4000", "mic_state_changed", "mic_state_changed", "mic_state_changed@9000", "speech_end@9000", "candidate_message@9200"}
			s := kinds(evs)
			for i := range s {
				if !strings.Contains(want[i], "@") {
					s[i], _, _ = strings.Cut(s[i], "@")
				}
			}
			if !reflect.DeepEqual(s, want) {
				t.Fatalf("%v, want %v", s, want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, drain(model(t, tc.set).NewCandidate(1)))
		})
	}
}

func kinds(evs []got) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ev.Type+"@"+itoa(e.t))
	}
	return out
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// A new question before the answer starts replaces it; one during the
// answer is talked over.
func TestCandidateReplansOnlyBeforeItStarts(t *testing.T) {
	c := model(t, nil).NewCandidate(1)
	c.Observe(&engine.Effect{T: 1000, Type: engine.EffectAgentMessage, ID: "m1", Agent: "qa"}, 2000)
	c.Observe(&engine.Effect{T: 2500, Type: engine.EffectAgentMessage, ID: "m2", Agent: "qa"}, 2000)
	if at, _ := c.Next(); at != 5500 {
		t.Fatalf("answer at %d, want 5500 (after the second question)", at)
	}
	c.Pop() // the mic goes on: the answer is under way
	c.Observe(&engine.Effect{T: 6000, Type: engine.EffectAgentMessage, ID: "m3", Agent: "qa"}, 2000)
	n := 0
	for {
		if _, ok := c.Next(); !ok {
			break
		}
		c.Pop()
		n++
	}
	if n != 3 {
		t.Fatalf("%d events after the mic went on, want the answer's other 3", n)
	}
}

// Same model and seed, same events; another seed, others.
func TestCandidateSeeded(t *testing.T) {
	m := model(t, map[string]string{"answer_latency": "{median: 2s, p90: 9s}", "answer_words": "{min: 1, max: 30}", "pause": "0.5", "typing": "0.3"})
	run := func(seed uint64) []got {
		c := m.NewCandidate(seed)
		var all []got
		for q := range 20 {
			c.Observe(&engine.Effect{T: int64(q) * 30000, Type: engine.EffectAgentMessage, Agent: "qa"}, 3000)
			for {
				at, ok := c.Next()
				if !ok || at >= int64(q+1)*30000 {
					break
				}
				t, ev := c.Pop()
				all = append(all, got{t, ev})
			}
		}
		return all
	}
	if a, b := run(5), run(5); !reflect.DeepEqual(a, b) {
		t.Fatal("one seed played two ways")
	}
	if a, b := run(5), run(6); reflect.DeepEqual(a, b) {
		t.Fatal("two seeds played one way")
	}
}
