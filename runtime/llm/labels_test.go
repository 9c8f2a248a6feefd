package llm_test

import (
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/scenarios"
)

// labelRE is what may be a speaker label opening a line: a short name, a
// colon, a space and more words ("qa: ...", "Marcus Webb: ...").
var labelRE = regexp.MustCompile(`^([^:\n]{1,40}): \S`)

// speakerLabel is the label opening text when it names one of speakers
// (lower case): a sentence that happens to have a colon is no label.
func speakerLabel(text string, speakers map[string]bool) string {
	sub := labelRE.FindStringSubmatch(strings.TrimSpace(text))
	if sub == nil || !speakers[strings.ToLower(strings.TrimSpace(sub[1]))] {
		return ""
	}
	return sub[1]
}

// imitator stands in for a model that copies the speaker labels it is
// shown: when a line of its own (model) turns, or of another speaker's
// words as the model reads them (the message's text, and the
// llm.Attributed form of vendors without a name field), opens with the
// name of one of speakers and a colon, its answer opens with the last
// such label. Models do this with transcripts of "name: line" turns, and
// the label is then read aloud.
func imitator(speakers map[string]bool) llm.Model {
	return llm.ModelFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		label := ""
		for _, m := range req.Messages {
			var texts []string
			switch {
			case m.Role == llm.RoleModel:
				texts = []string{m.Text}
			case m.Role == llm.RoleUser && m.Speaker != "":
				texts = []string{m.Text, llm.Attributed(m.Speaker, m.Text)}
			}
			for _, text := range texts {
				for _, line := range strings.Split(text, "\n") {
					if l := speakerLabel(line, speakers); l != "" {
						label = l
					}
				}
			}
		}
		answer := "Can you show me the failing test?"
		if label != "" {
			answer = label + ": " + answer
		}
		return llm.Response{Text: answer}, nil
	})
}

// speakersOf is everyone who speaks in req's session, as far as it shows:
// the role asking, the person and the transcript's speakers, lower case.
func speakersOf(req *engine.LLMRequest) map[string]bool {
	s := map[string]bool{strings.ToLower(req.Role): true, llm.CandidateSpeaker: true, "agent": true}
	if req.Human != "" {
		s[strings.ToLower(req.Human)] = true
	}
	for _, l := range req.TranscriptTail {
		s[strings.ToLower(strings.TrimSpace(l.Speaker))] = true
	}
	return s
}

// packRequests plays every bundled pack with its dry-run candidate and
// the pack's scripted lines, and returns the model requests the sessions
// made that speak a line (jobs and sequence calls write no line).
func packRequests(t *testing.T) map[string][]*engine.LLMRequest {
	t.Helper()
	out := map[string][]*engine.LLMRequest{}
	for _, name := range scenarios.Names() {
		sub, err := fs.Sub(scenarios.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := rules.Load(sub, ".")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var evs []events.Timed
		if p.DryRun.Candidate != "" {
			f, err := p.FS.Open(p.DryRun.Candidate)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			evs, err = events.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		res, err := dryrun.Run(p, dryrun.Options{Events: evs})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, r := range res.Records {
			if r.Type == engine.EffectLLMRequest && r.Request != nil && r.Request.Job == "" && r.Request.Sequence == nil {
				out[name] = append(out[name], r.Request)
			}
		}
	}
	return out
}

// Every line-speaking request the bundled packs make, answered by a model
// that imitates labels, yields no label to speak: nothing the model reads
// as its own turn, nor another speaker's words, opens with "name: ".
func TestBundledPacksInviteNoSpeakerLabel(t *testing.T) {
	total, labelled, multi := 0, 0, 0
	all := packRequests(t)
	for _, name := range scenarios.Names() {
		reqs := all[name]
		n := 0
		for _, req := range reqs {
			speakers := speakersOf(req)
			in := map[string]bool{}
			for _, l := range req.TranscriptTail {
				in[l.Speaker] = true
			}
			if len(in) > 2 {
				multi++
			}
			resp, err := imitator(speakers).Generate(context.Background(), llm.FromTurn(req))
			if err != nil {
				t.Fatal(err)
			}
			if reply, _ := llm.ParseReply(resp.Text); speakerLabel(reply, speakers) != "" {
				n++
				if n == 1 {
					t.Errorf("%s: a %s turn of %s would say %q", name, req.Kind, req.Role, reply)
				}
			}
		}
		t.Logf("%s: %d of %d requests would speak a label", name, n, len(reqs))
		total += len(reqs)
		labelled += n
	}
	t.Logf("all packs: %d of %d requests would speak a label (%d with three or more speakers in the tail)", labelled, total, multi)
	if total == 0 || multi == 0 {
		t.Fatalf("the bundled packs made %d requests, %d with several agents in the tail: nothing measured", total, multi)
	}
	if labelled != 0 {
		t.Errorf("%d of %d requests would speak a label", labelled, total)
	}
}

// Every line a bundled pack's request carries goes to the model once:
// a line said in a tool round is not repeated from the transcript.
func TestBundledPacksSendEachLineOnce(t *testing.T) {
	rounds := 0
	all := packRequests(t)
	for _, name := range scenarios.Names() {
		for _, req := range all[name] {
			msgs := llm.FromTurn(req).Messages
			for _, round := range req.ToolRounds {
				said := strings.TrimSpace(round.Text)
				if said == "" {
					continue
				}
				rounds++
				n := 0
				for _, m := range msgs {
					n += strings.Count(m.Text, said)
				}
				if n != 1 {
					t.Errorf("%s: %s's round line %q is sent %d times", name, req.Role, said, n)
				}
			}
		}
	}
	t.Logf("%d tool rounds with a line", rounds)
}
