package scenarios_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

// The bounds a candidate notices, whatever the model does.
const (
	// maxLineWords bounds a spoken line.
	maxLineWords = 150
	// maxLineSpeechMS bounds how long a line takes to say at its role's
	// rate.
	maxLineSpeechMS = 60_000
)

// Check names, as problems report them.
const (
	checkWords    = "words"
	checkSpeech   = "speech"
	checkLabel    = "label"
	checkMarkdown = "markdown"
	checkJurors   = "jurors"
	checkPending  = "verdict_pending"
	checkAnchor   = "anchor_late"
	checkOutcome  = "outcome"
)

// problem is one bound a session broke.
type problem struct {
	check, msg string
}

func (p problem) String() string { return p.check + ": " + p.msg }

// checkSession checks a session of p as a candidate would see it: every
// spoken line short, unlabelled and plain; in Hot Seat every juror asks
// before the panel ends and no verdict comes while a supervision is
// pending; no hard anchor's line late; and the pack's outcome reached.
func checkSession(p *rules.Pack, recs []record.Record) []problem {
	var out []problem
	add := func(check string, r *record.Record, format string, args ...any) {
		at := ""
		if r != nil {
			at = rules.FormatClock(r.T) + " "
		}
		out = append(out, problem{check, at + fmt.Sprintf(format, args...)})
	}
	anchors := map[string]bool{}
	for _, a := range p.Timeline.Anchors {
		anchors[a.ID] = true
	}
	names := map[string][]string{} // by role id
	for i := range p.Roles {
		n := dryrun.SpeakerNames(&p.Roles[i])
		// The longest first: "Theo (Tech Lead):" is named whole, not "Theo".
		slices.SortStableFunc(n, func(a, b string) int { return len(b) - len(a) })
		names[p.Roles[i].ID] = n
	}
	hotseat := p.Name == "hotseat"
	spoke := map[string]bool{}
	panelEnded := false
	pending := map[string]bool{} // supervise requests not answered yet
	var runs []string            // supervise requests, in the order asked
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case engine.EffectAgentMessage:
			words := text.CountWords(r.Text)
			if words > maxLineWords {
				add(checkWords, r, "%s %s line of %d words (bound %d)", r.Agent, r.Kind, words, maxLineWords)
			}
			if ms := int64(words) * 60_000 / int64(wordsPerMinute(p, r.Agent)); ms > maxLineSpeechMS {
				add(checkSpeech, r, "%s %s line takes %s to say (bound %s)", r.Agent, r.Kind, rules.FormatClock(ms), rules.FormatClock(maxLineSpeechMS))
			}
			if l := speakerLabel(r.Text, r.Agent, names); l != "" {
				add(checkLabel, r, "%s %s line starts with the label %q: %.60q", r.Agent, r.Kind, l, r.Text)
			}
			if m := markdownIn(r.Text); m != "" {
				add(checkMarkdown, r, "%s %s line has markdown (%s): %.60q", r.Agent, r.Kind, m, r.Text)
			}
			if anchors[r.Rule] && r.Lateness != nil && r.LateMS > p.Tick.MS {
				add(checkAnchor, r, "anchor %s said %s late", r.Rule, rules.FormatClock(r.LateMS))
			}
			if !panelEnded {
				spoke[r.Agent] = true
			}
		case engine.EffectLLMRequest:
			if r.Request == nil {
				break
			}
			switch r.Request.Job {
			case "supervise":
				// A request asked again after an unusable answer is the
				// same supervision, not another one.
				if !strings.HasPrefix(r.Reason, "asked again") {
					pending[r.ID] = true
					runs = append(runs, r.ID)
				}
			case "deliberate":
				panelEnded = true
			}
		case engine.EffectJobResult, engine.EffectJobError:
			// A re-asked request's answer lands under its new id: the
			// oldest supervision still open is the one answered.
			if r.Rule == "supervise" && !pending[r.ID] {
				for _, id := range runs {
					if pending[id] {
						delete(pending, id)
						break
					}
				}
			}
			delete(pending, r.ID)
		case engine.EffectNote:
			// Deliberation that stopped waiting names what it lacks:
			// the verdict is then rendered knowingly without it.
			if r.Kind == engine.NoteWarning && strings.Contains(r.Reason, "stopped waiting") {
				clear(pending)
			}
		case engine.EffectReport:
			if hotseat && r.Kind == "verdict" && len(pending) > 0 {
				add(checkPending, r, "verdict while %d supervision(s) pending", len(pending))
			}
		case engine.EffectSessionEnd:
			if hotseat && r.Reason != "duration" {
				for _, j := range p.Tickets.Roles {
					if !spoke[j] {
						add(checkJurors, r, "the panel ended (%s) before juror %s said a line", r.Reason, j)
					}
				}
			}
		}
	}
	if outcome, ok := outcomes[p.Name]; ok {
		if err := outcome(recs); err != nil {
			add(checkOutcome, nil, "%v", err)
		}
	}
	return out
}

func wordsPerMinute(p *rules.Pack, role string) int {
	if r, ok := p.Role(role); ok && r.WordsPerMinute > 0 {
		return r.WordsPerMinute
	}
	if p.Voice.WordsPerMinute > 0 {
		return p.Voice.WordsPerMinute
	}
	return 150
}

// speakerLabel is the role id or name line of role starts with as a
// label, or "": any role's followed by ':' ("qa:", "**Theo:**", any
// case), and role's own followed by a dash too ("Marcus — ..." said by
// marcus). A dash after another role's name addresses them.
func speakerLabel(line, role string, names map[string][]string) string {
	s := strings.TrimLeft(strings.TrimSpace(line), "*_[ ")
	low := strings.ToLower(s)
	for id, ns := range names {
		for _, n := range ns {
			if !strings.HasPrefix(low, strings.ToLower(n)) {
				continue
			}
			rest := strings.TrimLeft(s[len(n):], "*_] ")
			if strings.HasPrefix(rest, ":") {
				return s[:len(n)]
			}
			dashed := strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "—") || strings.HasPrefix(rest, "–")
			if id == role && dashed && rest != s[len(n):] {
				return s[:len(n)]
			}
		}
	}
	return ""
}

// markdownIn names the markdown in line, or "".
func markdownIn(line string) string {
	switch {
	case strings.Contains(line, "**"):
		return "bold"
	case strings.Contains(line, "`"):
		return "code"
	}
	for _, l := range strings.Split(line, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "#"):
			return "heading"
		case strings.HasPrefix(l, "- "), strings.HasPrefix(l, "* "):
			return "bullet"
		}
		if i := strings.IndexFunc(l, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && strings.HasPrefix(l[i:], ". ") {
			return "numbered list"
		}
	}
	return ""
}

// TestCheckerCatchesEachBound feeds the checker sessions made by hand,
// each breaking one bound, and a clean one.
func TestCheckerCatchesEachBound(t *testing.T) {
	dayone, _ := loadBundled(t, "dayone")
	hotseat, _ := loadBundled(t, "hotseat")
	msg := func(at int64, role, line string) record.Record {
		return record.Record{Effect: engine.Effect{T: at, Type: engine.EffectAgentMessage, Agent: role, Kind: "reply", Text: line, Lateness: &engine.Lateness{DueMS: at}}}
	}
	end := func(at int64, reason string) record.Record {
		return record.Record{Effect: engine.Effect{T: at, Type: engine.EffectSessionEnd, Reason: reason}}
	}
	job := func(at int64, typ engine.EffectType, id, job string) record.Record {
		r := record.Record{Effect: engine.Effect{T: at, Type: typ, ID: id, Rule: job}}
		if typ == engine.EffectLLMRequest {
			r.Request = &engine.LLMRequest{Role: "brain", Job: job}
		}
		return r
	}
	verdict := func(at int64) record.Record {
		return record.Record{Effect: engine.Effect{T: at, Type: engine.EffectReport, Kind: "verdict"}}
	}
	ok := "How would you reproduce the double charge?"
	anchor := msg(180_000, "ba", ok)
	anchor.Rule, anchor.Kind = dayone.Timeline.Anchors[0].ID, "anchor"
	late := anchor
	late.Lateness = &engine.Lateness{DueMS: 180_000, LateMS: 2500}
	slowWPM := *dayone
	slowWPM.Voice.WordsPerMinute = 100
	jurors := []record.Record{msg(1000, "marcus", ok), msg(2000, "priya", ok), msg(3000, "james", ok)}
	panel := func(recs ...record.Record) []record.Record { return append(slices.Clone(jurors), recs...) }
	for _, c := range []struct {
		name string
		p    *rules.Pack
		recs []record.Record
		want string // "" for none
	}{
		{"clean dayone", dayone, []record.Record{msg(1000, "qa", ok), anchor, end(300_000, "session_complete")}, ""},
		{"long line", dayone, []record.Record{msg(1000, "qa", strings.Repeat("word ", 151)), end(2000, "session_complete")}, checkWords},
		{"line of 150 words", dayone, []record.Record{msg(1000, "qa", strings.Repeat("word ", 150)), end(2000, "session_complete")}, ""},
		{"slow speech", &slowWPM, []record.Record{msg(1000, "qa", strings.Repeat("word ", 120)), end(2000, "session_complete")}, checkSpeech},
		{"role id label", dayone, []record.Record{msg(1000, "qa", "qa: "+ok), end(2000, "session_complete")}, checkLabel},
		{"label upper", dayone, []record.Record{msg(1000, "qa", "TECH_LEAD : "+ok), end(2000, "session_complete")}, checkLabel},
		{"first name label", dayone, []record.Record{msg(1000, "qa", "theo: "+ok), end(2000, "session_complete")}, checkLabel},
		{"display name label", dayone, []record.Record{msg(1000, "qa", "Bea (BA): "+ok), end(2000, "session_complete")}, checkLabel},
		{"name label", hotseat, panel(msg(4000, "marcus", "MARCUS WEBB: "+ok), verdict(5000), end(5000, "verdict")), checkLabel},
		{"a colon later is no label", dayone, []record.Record{msg(1000, "qa", "Quick one: "+ok), end(2000, "session_complete")}, ""},
		{"own name dash label", hotseat, panel(msg(4000, "marcus", "Marcus — "+ok), verdict(5000), end(5000, "verdict")), checkLabel},
		{"own first name hyphen label", dayone, []record.Record{msg(1000, "tech_lead", "theo - "+ok), end(2000, "session_complete")}, checkLabel},
		{"another's name before a dash addresses them", hotseat, panel(msg(4000, "priya", "Marcus — over to you: what would you ask about the rollout?"), verdict(5000), end(5000, "verdict")), ""},
		{"another's name before a hyphen", dayone, []record.Record{msg(1000, "qa", "Theo - your question, please."), end(2000, "session_complete")}, ""},
		{"The is no first name", hotseat, panel(msg(4000, "brain", "The — honestly — the key question is rollback."), verdict(5000), end(5000, "verdict")), ""},
		{"another's name in brackets", dayone, []record.Record{msg(1000, "qa", "[Theo]: "+ok), end(2000, "session_complete")}, checkLabel},
		{"heading", dayone, []record.Record{msg(1000, "qa", "### Question\n"+ok), end(2000, "session_complete")}, checkMarkdown},
		{"bold", dayone, []record.Record{msg(1000, "qa", "**"+ok+"**"), end(2000, "session_complete")}, checkMarkdown},
		{"code", dayone, []record.Record{msg(1000, "qa", "Run `make` first. "+ok), end(2000, "session_complete")}, checkMarkdown},
		{"bullet", dayone, []record.Record{msg(1000, "qa", ok+"\n- one\n- two"), end(2000, "session_complete")}, checkMarkdown},
		{"star bullet", dayone, []record.Record{msg(1000, "qa", "* one"), end(2000, "session_complete")}, checkMarkdown},
		{"numbered", dayone, []record.Record{msg(1000, "qa", ok+"\n1. one"), end(2000, "session_complete")}, checkMarkdown},
		{"late anchor", dayone, []record.Record{late, end(300_000, "session_complete")}, checkAnchor},
		{"anchor a tick late", dayone, []record.Record{func() record.Record {
			r := late
			r.Lateness = &engine.Lateness{DueMS: 180_000, LateMS: dayone.Tick.MS}
			return r
		}(), end(300_000, "session_complete")}, ""},
		{"anchor a tick and 1ms late", dayone, []record.Record{func() record.Record {
			r := late
			r.Lateness = &engine.Lateness{DueMS: 180_000, LateMS: dayone.Tick.MS + 1}
			return r
		}(), end(300_000, "session_complete")}, checkAnchor},
		{"late reply is not an anchor", dayone, []record.Record{func() record.Record { r := late; r.Rule = "R3_INTENT"; return r }(), end(300_000, "session_complete")}, ""},
		{"no outcome", dayone, []record.Record{msg(1000, "qa", ok), end(2000, "duration")}, checkOutcome},
		{"clean panel", hotseat, panel(job(3500, engine.EffectLLMRequest, "s1", "supervise"), job(3900, engine.EffectJobResult, "s1", "supervise"), verdict(5000), end(5000, "verdict")), ""},
		{"juror never asked", hotseat, []record.Record{msg(1000, "marcus", ok), msg(2000, "priya", ok), job(2500, engine.EffectLLMRequest, "d1", "deliberate"), msg(2600, "james", ok), verdict(5000), end(5000, "verdict")}, checkJurors},
		{"panel at its duration", hotseat, []record.Record{msg(1000, "marcus", ok), end(5000, "duration")}, checkOutcome},
		{"verdict with supervision pending", hotseat, panel(job(3500, engine.EffectLLMRequest, "s1", "supervise"), verdict(5000), end(5000, "verdict")), checkPending},
		{"supervision failed before verdict", hotseat, panel(job(3500, engine.EffectLLMRequest, "s1", "supervise"), job(3900, engine.EffectJobError, "s1", "supervise"), verdict(5000), end(5000, "verdict")), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := checkSession(c.p, c.recs)
			var checks []string
			for _, pr := range got {
				checks = append(checks, pr.check)
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("problems in a clean session: %v", got)
			case c.want != "" && !slices.Contains(checks, c.want):
				t.Errorf("want a %s problem, got %v", c.want, got)
			case c.want != "" && slices.ContainsFunc(checks, func(s string) bool { return s != c.want }):
				t.Errorf("want only %s problems, got %v", c.want, got)
			}
		})
	}
}

// TestMisbehaviourMatrix plays every bundled pack with its own candidate
// against the simulated model misbehaving one way at a time, and every
// way at once ("mixed"), and checks what a candidate would notice
// (checkSession). The row "none" plays the well-behaved model: what fails
// there fails whatever the model does. BATON_MISBEHAVE_DUMP=1 prints the
// timeline of a failing row.
func TestMisbehaviourMatrix(t *testing.T) {
	rows := append([]string{"none"}, dryrun.MisbehaviourNames...)
	rows = append(rows, "mixed")
	for _, name := range scenarios.Names() {
		p, evs := loadBundled(t, name)
		for _, row := range rows {
			t.Run(name+"/"+row, func(t *testing.T) {
				opt := dryrun.Options{Events: evs, Seed: 1}
				switch row {
				case "none":
				case "mixed":
					opt.Misbehave = &dryrun.Misbehave{Seed: 1}
				default:
					opt.Misbehave = &dryrun.Misbehave{Names: []string{row}, Seed: 1}
				}
				res, err := dryrun.Run(p, opt)
				if err != nil {
					t.Fatal(err)
				}
				probs := checkSession(p, res.Records)
				for _, pr := range probs {
					t.Error(pr)
				}
				if len(probs) > 0 && os.Getenv("BATON_MISBEHAVE_DUMP") != "" {
					_ = record.WriteText(os.Stderr, res.Records, record.FormatOptions{Verbose: true})
				}
			})
		}
	}
}

// TestOffRoleAnswersCandidate measures, over DayOne sessions seeded 1 to
// 50 (each with its candidate's events moved by the seed), the share of
// agent lines that answer the candidate's last message (say one of its
// content words that the pack's own lines, personas and focus words do
// not, so a scripted line on the same topic does not count) against a
// model that is always off role and complies only when asked again about
// role fidelity, beside the scripted model. Run with -v to see the
// figures.
func TestOffRoleAnswersCandidate(t *testing.T) {
	p, evs := dayone(t)
	own := packWords(p)
	measure := func(mis *dryrun.Misbehave) (answering, lines int) {
		for seed := uint64(1); seed <= 50; seed++ {
			var m *dryrun.Misbehave
			if mis != nil {
				m = &dryrun.Misbehave{Names: mis.Names, Seed: seed}
			}
			res, err := dryrun.Run(p, dryrun.Options{Events: vary(evs, seed, p.Duration.MS), Misbehave: m, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			a, l := answersCandidate(res, own)
			answering, lines = answering+a, lines+l
		}
		return answering, lines
	}
	a, l := measure(&dryrun.Misbehave{Names: []string{"off_role"}})
	base, baseLines := measure(nil)
	t.Logf("off_role: %d of %d agent lines after a candidate message answer it (%.1f%%); scripted model: %d of %d (%.1f%%)",
		a, l, pct(a, l), base, baseLines, pct(base, baseLines))
	if l == 0 {
		t.Fatal("no agent line followed a candidate message")
	}
	// The off-role model answers the candidate only when a role-fidelity
	// correction says what the candidate said: a correction without it
	// gave 0.3% (5 of 1,711 lines), with it 39%.
	if pct(a, l) < 20 {
		t.Errorf("%.1f%% of lines answered the candidate: corrections do not carry what the candidate said, or the off-role model hardly ever complied", pct(a, l))
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// packWords are the content words of what p's roles say or are told
// without a model: personas, focus words and every set of lines.
func packWords(p *rules.Pack) map[string]bool {
	own := map[string]bool{}
	addAll := func(s string) {
		for _, w := range dryrun.ContentWords(s) {
			own[w] = true
		}
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		addAll(r.Persona)
		addAll(strings.Join(r.Focus, " "))
		for _, sets := range [][]rules.LineSet{r.Lines, r.Fallback, r.Rewrite, r.Cover} {
			for _, ls := range sets {
				addAll(strings.Join(ls.Text, " "))
			}
		}
	}
	return own
}

// answersCandidate counts the agent lines said after a candidate message
// and those that say one of its content words not in own.
func answersCandidate(res *record.Result, own map[string]bool) (answering, lines int) {
	last := ""
	for i, in := range res.Inputs {
		if in.Type == engine.InputCandidate && in.Candidate.Type == engine.EventMessage && in.Candidate.Text != "" {
			last = in.Candidate.Text
		}
		for _, e := range res.Steps[i].Effects {
			if e.Type != engine.EffectAgentMessage || last == "" {
				continue
			}
			lines++
			said := dryrun.ContentWords(e.Text)
			if slices.ContainsFunc(dryrun.ContentWords(last), func(w string) bool { return !own[w] && slices.Contains(said, w) }) {
				answering++
			}
		}
	}
	return answering, lines
}
