package rules

import (
	"strings"
	"testing"
	"testing/fstest"
)

const modelBase = `name: m
duration: 1m
constants:
  HALF: 0.5
  BIG: 1.5
  WAIT: 4s
roles:
  qa: {name: Quinn, persona: You are Quinn., fallback: {default: "Go on."}}
routing:
  - {id: R, type: role, role: qa}
rules:
  - {id: slides, trigger: slide_changed, do: [{emit: slide}]}
dryrun:
  candidate_model:
`

func loadModel(t *testing.T, model string) (*Pack, error) {
	t.Helper()
	return LoadFS(fstest.MapFS{PackFile: {Data: []byte(modelBase + model)}})
}

// A model the loader takes, every way its values may be written.
func TestCandidateModelLoads(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		check       func(t *testing.T, m *CandidateModel)
	}{
		{"constants", "    answer_latency: WAIT\n    silence: HALF\n", func(t *testing.T, m *CandidateModel) {
			if d := m.AnswerLatency.Resolved(); d.Kind != DistConstant || d.Value != 4000 || m.Silence.Value != 0.5 {
				t.Fatalf("%+v, silence %v", d, m.Silence.Value)
			}
		}},
		{"lognormal implied", "    answer_latency: {median: 2s, p90: 7s, max: 20s}\n", func(t *testing.T, m *CandidateModel) {
			if d := m.AnswerLatency.Resolved(); d.Kind != DistLognormal || d.Median != 2000 || d.P90 != 7000 || !d.HasMax || d.Max != 20000 {
				t.Fatalf("%+v", d)
			}
		}},
		{"normal words", "    answer_words: {dist: normal, mean: 20, sd: 5, min: 1}\n", func(t *testing.T, m *CandidateModel) {
			if d := m.AnswerWords.Resolved(); d.Kind != DistNormal || d.Mean != 20 || d.SD != 5 || d.Min != 1 {
				t.Fatalf("%+v", d)
			}
		}},
		{"events", "    events:\n      - {type: slide_changed, rate: 2, data: {text: \"slide {n}\"}}\n", func(t *testing.T, m *CandidateModel) {
			if len(m.Events) != 1 || m.Events[0].Rate.Value != 2 || m.Events[0].Data.Text != "slide {n}" {
				t.Fatalf("%+v", m.Events)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadModel(t, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p.DryRun.CandidateModel)
		})
	}
}

// Every problem of a model is named where it is written, all at once:
// at load, including what only the constants' values or the rest of
// the pack show.
func TestCandidateModelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		want        []string // each a line of the errors
	}{
		{"probability above 1", "    silence: 1.5\n", []string{"pack.yaml:15:14: silence 1.5 is a probability: between 0 and 1"}},
		{"negative probability", "    typing: -0.1\n", []string{"pack.yaml:15:13: typing -0.1 is a probability"}},
		{"unknown dist", "    answer_latency: {dist: gamma, mean: 2s, sd: 1s}\n", []string{`pack.yaml:15:28: "gamma" is not one of constant, uniform, normal, lognormal`}},
		{"negative latency", "    answer_latency: -2s\n", []string{`pack.yaml:15:21: bad duration "-2s": negative`}},
		{"negative words", "    answer_words: {mean: -3, sd: 1}\n", []string{"pack.yaml:15:26: mean -3 is negative"}},
		{"p90 below median", "    answer_latency: {median: 5s, p90: 2s}\n", []string{"pack.yaml:15:39: p90 2s is below the median 5s"}},
		{"key of another dist", "    answer_latency: {dist: uniform, min: 1s, max: 2s, sd: 1s}\n", []string{"pack.yaml:15:59: uniform does not take sd (it takes min, max)"}},
		{"uniform without max", "    pause_length: {dist: uniform, min: 1s}\n", []string{"pack.yaml:15:19: uniform needs max"}},
		{"no keys", "    pause_length: {}\n", []string{"pack.yaml:15:19: a distribution needs value"}},
		{"unknown key", "    silense: 0.2\n", []string{`pack.yaml:15:5: unknown field "silense": did you mean silence?`}},
		{"all at once", "    silence: 2\n    talk_over: -1\n    answer_words: {dist: lognormal, median: 10}\n", []string{
			"pack.yaml:15:14: silence 2 is a probability",
			"pack.yaml:16:16: talk_over -1 is a probability",
			"pack.yaml:17:19: lognormal needs p90",
		}},
		{"event nobody handles", "    events: [{type: editor_changed, rate: 1}]\n", []string{"pack.yaml:15:14: event editor_changed: no rule of the pack has trigger: editor_changed"}},
		{"event without rate", "    events: [{type: slide_changed}]\n", []string{"pack.yaml:15:14: event slide_changed needs a rate"}},
		{"probability from a constant", "    silence: BIG\n", []string{"pack.yaml:15:14: silence 1.5 is a probability"}},
		{"low confidence without a threshold", "    low_confidence: 0.2\n", []string{"pack.yaml:15:21: low_confidence needs speech_confidence.threshold"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadModel(t, tc.model)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d:\n got %s\nwant %s...", i+1, lines[i], w)
				}
			}
		})
	}
}
