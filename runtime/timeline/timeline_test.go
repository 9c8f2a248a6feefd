package timeline

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

// runPack dry-runs a bundled pack with its own candidate.
func runPack(tb testing.TB, name string) (*rules.Pack, *record.Result) {
	tb.Helper()
	p, err := rules.Load(scenarios.FS, name)
	if err != nil {
		tb.Fatal(err)
	}
	var opt dryrun.Options
	if p.DryRun.Candidate != "" {
		f, err := p.FS.Open(p.DryRun.Candidate)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		if opt.Events, err = events.ReadFile(p.DryRun.Candidate, f); err != nil {
			tb.Fatal(err)
		}
	}
	res, err := dryrun.Run(p, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return p, res
}

func render(tb testing.TB, runs ...Run) string {
	tb.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, runs...); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func TestDeterministic(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			p1, r1 := runPack(t, name)
			p2, r2 := runPack(t, name)
			a := render(t, Run{Title: name, Pack: p1, Result: r1})
			b := render(t, Run{Title: name, Pack: p2, Result: r2})
			if a != b {
				t.Fatalf("two pages of the same run differ (%d and %d bytes)", len(a), len(b))
			}
			if d := render(t, Run{Title: name, Pack: p1, Result: r1}, Run{Title: name, Pack: p2, Result: r2}); strings.Contains(d, `data-diff="`) {
				t.Errorf("a run against itself shows differences")
			}
		})
	}
}

// count is how many elements of the page match the attribute text.
func count(html, attrs string) int { return strings.Count(html, attrs) }

func TestDayOneMarks(t *testing.T) {
	p, res := runPack(t, "dayone")
	html := render(t, Run{Title: "dayone", Pack: p, Result: res})
	says := 0
	for i := range res.Records {
		if res.Records[i].Type == engine.EffectAgentMessage {
			says++
		}
	}
	for _, tc := range []struct {
		name, attrs string
		want        int
	}{
		{"qa lane", `data-lane="qa" data-run="0" data-t="0"`, 1},
		{"tech_lead lane", `data-lane="tech_lead" data-run="0" data-t="0"`, 1},
		{"ba lane", `data-lane="ba" data-run="0" data-t="0"`, 1},
		{"the human's lane", `<rect class="lane lk-human`, 1},
		{"speech bars", `data-type="agent_message"`, says},
		{"windows", `data-type="window"`, len(p.Timeline.Windows)},
		{"the interrupt anchor", `<line class="v anchor " data-type="anchor" data-rule="A1_BA_INTERRUPT" data-run="0" data-t="180000"`, 1},
		{"the end", `<line class="v session_end end" data-type="session_end" data-rule="A2_END" data-run="0" data-t="600000"`, 1},
		{"silence auto-advances", `data-type="auto_advance"`, 8},
		{"deferrals", `data-type="deferred"`, 7},
		{"held turns", `data-type="held"`, 7},
		{"a guardrail regeneration", `data-type="guardrail"`, 1},
		{"routing", `class="m pt routed"`, 12},
		{"mic spans", `data-type="mic"`, -1},
		{"typing spans", `data-type="typing"`, -1},
		{"candidate messages", `data-type="candidate_message"`, -1},
		{"no differences", `data-diff="`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := count(html, tc.attrs)
			if tc.want < 0 && got == 0 || tc.want >= 0 && got != tc.want {
				t.Errorf("%s: %d, want %d (-1: some)", tc.attrs, got, tc.want)
			}
		})
	}
	// Windows are coloured by what happened to them.
	if !strings.Contains(html, `class="m win deferred" data-lane="timeline" data-run="0" data-type="window" data-t="147000" data-rule="W3_TL_PRIORITY_CHALLENGE"`) &&
		!strings.Contains(html, `data-rule="W3_TL_PRIORITY_CHALLENGE"`) {
		t.Errorf("no band for window W3_TL_PRIORITY_CHALLENGE")
	}
	for _, w := range p.Timeline.Windows {
		if !regexp.MustCompile(`class="m win (taken|deferred|skipped|untaken)" [^>]*data-rule="` + w.ID + `"`).MatchString(html) {
			t.Errorf("window %s has no band with a status", w.ID)
		}
	}
}

// TestDetails checks what hovering shows: each effect's JSON and where
// the pack declares its rule.
func TestDetails(t *testing.T) {
	p, res := runPack(t, "dayone")
	l := build(Run{Pack: p, Result: res}, nil)
	it, ok := p.Where("A1_BA_INTERRUPT")
	if !ok {
		t.Fatal("the pack declares no A1_BA_INTERRUPT")
	}
	for _, tc := range []struct{ head, where, json string }{
		{"anchor", it.Pos.String(), `"rule":"A1_BA_INTERRUPT"`},
		{"W3_TL_PRIORITY_CHALLENGE", "window W3_TL_PRIORITY_CHALLENGE", `"original":`},
		{"candidate_message", "", `"event_type":"candidate_message"`},
	} {
		found := false
		for _, e := range l.entries {
			if strings.Contains(e.Head, tc.head) && strings.Contains(e.Where, tc.where) && strings.Contains(string(e.JSON), tc.json) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no detail with head %q, where %q and JSON %s", tc.head, tc.where, tc.json)
		}
	}
}

func TestWhatIf(t *testing.T) {
	p, base := runPack(t, "dayone")
	// The what-if: one line gone, one said 1.5 s later, one new.
	other := *base
	other.Records = nil
	var gone, moved string
	for _, r := range base.Records {
		switch {
		case gone == "" && r.Type == engine.EffectAgentMessage && r.Kind == "nudge":
			gone = r.Text
			continue
		case moved == "" && r.Type == engine.EffectAgentMessage && r.Kind == "window" && r.T > 0:
			moved = r.Text
			r.T += 1500
		}
		other.Records = append(other.Records, r)
	}
	other.Records = append(other.Records, record.Record{Effect: engine.Effect{T: 590_000, Type: engine.EffectFlag, Rule: "NEW_FLAG", Reason: "only here"}})
	html := render(t, Run{Title: "recorded", Pack: p, Result: base}, Run{Title: "edited", Pack: p, Result: &other})
	for _, tc := range []struct {
		name, re string
		want     int
	}{
		{"the line only the baseline has", `data-run="0" data-type="agent_message"[^>]*data-diff="only"`, 1},
		{"the flag only the what-if has", `data-run="1" data-type="flag"[^>]*data-diff="only"`, 1},
		{"the moved line", `data-run="1" data-type="agent_message"[^>]*data-diff="shifted" data-shift="1500"`, 1},
		{"where it was", `<line class="shift" [^>]*data-shift="1500"`, 1},
		{"nothing else differs", `data-diff="(only|shifted)"`, 3},
		{"the list of differences", `<li data-go="\d+" class="(only|shifted) r[01]">`, 3},
		{"both runs' lanes", `<rect class="lane lk-human" data-lane="candidate" data-run="[01]"`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(regexp.MustCompile(tc.re).FindAllString(html, -1)); got != tc.want {
				t.Errorf("%s: %d, want %d", tc.re, got, tc.want)
			}
		})
	}
	if !strings.Contains(html, "shifted +1.5s from the baseline") {
		t.Errorf("the moved line's shift is not shown")
	}
}

// A what-if page marks and counts the differences record.Diff finds with
// the page's options, the ones baton replay's text diff prints: a
// routing decision that changed is marked only when verbose, as the text
// diff prints it only with -v.
func TestWhatIfCountsTheDiff(t *testing.T) {
	p, base := runPack(t, "dayone")
	other := *base
	other.Records = slices.Clone(base.Records)
	rerouted, moved := false, false
	for i := range other.Records {
		r := &other.Records[i]
		switch {
		case !rerouted && r.Type == engine.EffectRouted:
			r.Rule += "_ELSEWHERE"
			rerouted = true
		case !moved && r.Type == engine.EffectAgentMessage && r.Kind == "nudge":
			r.T += 4000
			moved = true
		}
	}
	if !rerouted || !moved {
		t.Fatal("the dayone run has no routing decision or no nudge to change")
	}
	heading := regexp.MustCompile(`<h2>(\d+) difference\(s\)</h2>`)
	for _, tc := range []struct {
		opt      record.DiffOptions
		rerouted bool
	}{{record.DiffOptions{}, false}, {record.DiffOptions{Verbose: true}, true}} {
		t.Run(tc.opt.String(), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteWhatIf(&b, Run{Title: "recorded", Pack: p, Result: base}, Run{Title: "edited", Pack: p, Result: &other}, tc.opt); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			want := 0
			for _, d := range record.Diff(base.Records, other.Records, tc.opt) {
				if d.Change != record.Same {
					want++
				}
			}
			m := heading.FindStringSubmatch(html)
			if m == nil || m[1] != strconv.Itoa(want) {
				t.Errorf("heading %q, want %d difference(s)", m, want)
			}
			if got := len(regexp.MustCompile(`data-diff="(only|shifted)"`).FindAllString(html, -1)); got != want {
				t.Errorf("%d marks, want %d", got, want)
			}
			if got := strings.Count(html, `<li data-go=`); got != want {
				t.Errorf("%d listed differences, want %d", got, want)
			}
			if got := regexp.MustCompile(`data-run="1" data-type="routed"[^>]*data-rule="[^"]*_ELSEWHERE"[^>]*data-diff="only"`).MatchString(html); got != tc.rerouted {
				t.Errorf("the rerouted decision marked %v, want %v", got, tc.rerouted)
			}
			if !strings.Contains(html, "Compared: "+tc.opt.String()) {
				t.Errorf("the page does not say what it compared")
			}
		})
	}
}

// TestSelfContained checks the page loads nothing and no run's text can
// break out of its element.
func TestSelfContained(t *testing.T) {
	res := &record.Result{EndMS: 5000, Records: []record.Record{
		{Effect: engine.Effect{T: 1000, Type: engine.EffectAgentMessage, Agent: "x", Kind: "reply", Text: "</script><script>alert(1)</script>"}, SpeechMS: 800},
		{Effect: engine.Effect{T: 2000, Type: engine.EffectNote, Text: `<img src=x onerror=alert(1)> & "quotes"`}},
	}}
	html := render(t, Run{Title: `<b>title</b>`, Result: res}) // no pack: lanes come from the effects
	for _, tc := range []struct {
		name, bad string
	}{
		{"a script end in a line", "</script><script>alert"},
		{"markup in a note", "<img src=x"},
		{"markup in the title", "<b>title</b>"},
		{"a remote script", `src="http`},
		{"a stylesheet link", `<link`},
		{"an import", `@import`},
	} {
		if strings.Contains(html, tc.bad) {
			t.Errorf("%s: the page holds %q", tc.name, tc.bad)
		}
	}
	if !strings.Contains(html, `data-lane="x"`) {
		t.Errorf("no lane for agent x of a run without a pack")
	}
}

func TestErrors(t *testing.T) {
	_, res := runPack(t, "dayone")
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"none", nil, "no run"},
		{"three", []Run{{Result: res}, {Result: res}, {Result: res}}, "3 runs"},
		{"no result", []Run{{Title: "empty"}}, `run 1 ("empty") has no result`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteHTML(&bytes.Buffer{}, tc.runs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestClipJSON(t *testing.T) {
	long := strings.Repeat("é", maxString+5)
	for _, tc := range []struct{ name, in, want string }{
		{"short", `{"a":1}`, `{"a":1}`},
		{"order kept", `{"z":"` + long + `","a":[1,2.5,true,null,{"b":"c"}]}`,
			`{"z":"` + strings.Repeat("é", maxString) + `… (5 more characters)","a":[1,2.5,true,null,{"b":"c"}]}`},
		{"long keys are kept", `{"` + long + `":0}`, `{"` + long + `":0}`},
		{"not JSON", `{"a":` + long, `{"a":` + long},
		{"escaped quotes inside", `["` + strings.Repeat(`a\"`, maxString) + `"]`, `["` + strings.Repeat(`a\"`, maxString/2) + `… (` + itoa(maxString) + ` more characters)"]`},
		{"long but under the limit", `["` + strings.Repeat("a", maxString) + `",1]`, `["` + strings.Repeat("a", maxString) + `",1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(clipJSON([]byte(tc.in))); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func BenchmarkWriteHTML(b *testing.B) {
	p, res := runPack(b, "dayone")
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, Run{Title: "dayone", Pack: p, Result: res}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// A line the candidate talked over is drawn as long as it played: to its
// interrupted speech_done, not to where the voice would have ended it.
func TestCutLine(t *testing.T) {
	res := &record.Result{EndMS: 9000,
		Records: []record.Record{
			{Effect: engine.Effect{T: 1000, Type: engine.EffectAgentMessage, ID: "m1", Agent: "x", Kind: "reply", Text: "cut"}, SpeechMS: 4000},
			{Effect: engine.Effect{T: 6000, Type: engine.EffectAgentMessage, ID: "m2", Agent: "x", Kind: "reply", Text: "whole"}, SpeechMS: 2000},
			// As a recording rebuilds it: the record already says where it stopped.
			{Effect: engine.Effect{T: 8500, Type: engine.EffectAgentMessage, ID: "m3", Agent: "x", Kind: "reply", Text: "cut before"}, SpeechMS: 300},
		},
		Inputs: []engine.Input{
			{T: 2500, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: "m1", Interrupted: true}},
			{T: 8800, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: "m3", Interrupted: true}},
			{T: 8000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: "m2"}},
		}}
	html := render(t, Run{Result: res})
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<rect[^>]*class="m say k-reply cut"[^>]*data-t="1000"[^>]*data-d="1500"`),
		regexp.MustCompile(`<rect[^>]*class="m say k-reply"[^>]*data-t="6000"[^>]*data-d="2000"`),
		regexp.MustCompile(`<rect[^>]*class="m say k-reply cut"[^>]*data-t="8500"[^>]*data-d="300"`),
	} {
		if !want.MatchString(html) {
			t.Errorf("no %s in the page", want)
		}
	}
}
