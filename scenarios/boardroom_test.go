package scenarios_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

var boardMembers = []string{"skeptic", "analyst", "contrarian"}

// The seed's table: the order of a board member's context, then the
// turn brief.
var memberAssembly = []string{
	"persona.md", "domain-knowledge.md", "session-config.md", "deck-content.md", "external-intel.md",
	"presenter-transcript.md", "exchange-history.md", "focus-brief.md", "exchange-notes.md",
	"presenter-profile.md", "candidate-question.md", "role", "goal", "constraints",
}

var moderatorAssembly = []string{
	"persona.md", "orchestration.md", "phrase-library.md", "session-config.md", "deck-content.md",
	"external-intel.md", "board-dossier.md", "presenter-transcript.md", "exchange-history.md", "session-state.md",
	"debrief-notes.md", "role", "goal", "constraints",
}

func runBoardroom(t *testing.T, p *rules.Pack, evs []events.Timed, replies []dryrun.Reply) *record.Result {
	t.Helper()
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r.Type == engine.EffectEngineError || r.Type == engine.EffectScriptError {
			t.Fatalf("%s at %s: %s", r.Type, rules.FormatClock(r.T), r.Reason)
		}
	}
	return res
}

// Every model call a role makes lays out its context files in the order
// its assembly declares: a member's as the seed's table, the moderator's
// its own. Each file is the role's own copy or the shared one.
func TestBoardroomAssemblyOrder(t *testing.T) {
	p, evs := loadBundled(t, "boardroom")
	res := runBoardroom(t, p, evs, nil)
	calls := map[string]int{}
	trimmed := 0
	for _, r := range res.Records {
		if r.Type != engine.EffectLLMRequest {
			continue
		}
		req := r.Request
		want := memberAssembly
		if req.Role == "moderator" {
			want = moderatorAssembly
		}
		if !slices.Equal(req.Assembly, want) {
			t.Fatalf("%s %s at %s: assembly %v, want %v", req.Role, r.ID, rules.FormatClock(r.T), req.Assembly, want)
		}
		at := -1
		total := 0
		for _, f := range req.Files {
			total += len(f.Text)
			if f.Path == "shared/presenter-transcript.md" && f.Trimmed > 0 {
				// The newest lines are kept, within the file's 3,000.
				trimmed++
				if len(f.Text) > 3000 || !strings.HasPrefix(f.Text, "[... ") {
					t.Fatalf("%s's call %s: transcript cut to %d bytes: %.80q", req.Role, r.ID, len(f.Text), f.Text)
				}
			}
			scope, name, _ := strings.Cut(f.Path, "/")
			if scope != "shared" && scope != req.Role {
				t.Fatalf("%s's call %s carries %s, another role's file", req.Role, r.ID, f.Path)
			}
			i := slices.Index(want, name)
			if i <= at {
				t.Fatalf("%s's call %s: %s is out of the assembly's order: %v", req.Role, r.ID, f.Path, paths(req.Files))
			}
			at = i
		}
		if total > p.LLM.ContextBudget.MaxChars {
			t.Fatalf("%s's call %s carries %d bytes of files, over the budget", req.Role, r.ID, total)
		}
		calls[req.Role]++
		// Once the session is under way every file a member reads is
		// written, except what it has not yet earned: exchange notes,
		// a profile, an unrefilled question.
		if req.Role != "moderator" && r.T > 60_000 && len(req.Files) < 8 {
			t.Fatalf("%s's call %s at %s carries only %v", req.Role, r.ID, rules.FormatClock(r.T), paths(req.Files))
		}
	}
	if trimmed == 0 {
		t.Fatal("no call carried a cut transcript; the session's transcript outgrows max_chars")
	}
	for _, m := range append([]string{"moderator"}, boardMembers...) {
		if calls[m] == 0 {
			t.Fatalf("no model call from %s", m)
		}
	}
}

func mustSlot(t *testing.T, p *rules.Pack, path string) int {
	t.Helper()
	i, ok := p.FileByPath(path)
	if !ok {
		t.Fatalf("no file %s", path)
	}
	return i
}

func paths(fs []engine.FilePart) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}

// Each file changes only as its class allows, over the whole session:
// immutable files never, write-once files once, append-only files only
// grow and keep what they held.
func TestBoardroomFileClasses(t *testing.T) {
	p, evs := loadBundled(t, "boardroom")
	res := runBoardroom(t, p, evs, nil)
	class := map[string]rules.FileClass{}
	for _, s := range p.FileSlots() {
		class[s.Path] = s.File.Class
	}
	last := map[string]string{}
	for _, s := range p.FileSlots() {
		last[s.Path] = s.Initial
	}
	writes := map[string]int{}
	for _, r := range res.Records {
		switch r.Type {
		case engine.EffectContextViolation:
			t.Fatalf("the pack broke a file's class: %s", r.Reason)
		case engine.EffectContext:
		default:
			continue
		}
		var w engine.FileWritten
		if err := json.Unmarshal(r.Data, &w); err != nil {
			t.Fatal(err)
		}
		path := r.Text
		writes[path]++
		switch class[path] {
		case rules.ClassImmutable:
			t.Fatalf("immutable %s written at %s", path, rules.FormatClock(r.T))
		case rules.ClassWriteOnce:
			if w.Writes != 1 {
				t.Fatalf("write_once %s written %d times", path, w.Writes)
			}
		case rules.ClassAppendOnly:
			if r.Kind != "append" {
				t.Fatalf("append_only %s: %s", path, r.Kind)
			}
		case rules.ClassWriteFew:
			if slot := p.FileSlots()[mustSlot(t, p, path)]; w.Writes > slot.File.MaxWrites {
				t.Fatalf("write_few %s written %d times, over %d", path, w.Writes, slot.File.MaxWrites)
			}
		}
		if r.Kind == "append" && last[path] != "" {
			if !strings.HasSuffix(last[path], "\n") {
				last[path] += "\n"
			}
			last[path] += w.Text
		} else {
			last[path] = w.Text
		}
	}
	if writes["shared/external-intel.md"] != 1 {
		t.Fatalf("external-intel.md written %d times during the session; the presenter's run sends one update", writes["shared/external-intel.md"])
	}
	// What the effects say was written is what the session holds.
	for _, f := range res.Files {
		if f.Text != last[f.Path] {
			t.Fatalf("%s holds %q, its writes make %q", f.Path, f.Text, last[f.Path])
		}
	}
	for _, path := range []string{"shared/presenter-transcript.md", "shared/exchange-history.md", "moderator/debrief-notes.md", "skeptic/presenter-profile.md", "moderator/generated-phrases.md"} {
		if writes[path] < 2 {
			t.Fatalf("%s written %d times; the session should grow it", path, writes[path])
		}
	}
}

// The question buffer: each member's question is asked for on the 15 s
// period and on every slide change, never twice at once; a start while
// one is running is skipped (the period) or run once when it lands (a
// slide change).
func TestBoardroomBufferRefresh(t *testing.T) {
	p, evs := loadBundled(t, "boardroom")
	for _, tc := range []struct {
		name    string
		replies []dryrun.Reply
	}{
		{"scripted model", nil},
		// Slower than the period (and just inside the job timeout):
		// starts meet the run in flight.
		{"19 s model", []dryrun.Reply{{Job: "question", Repeat: true, DelayMS: ptr(int64(19_000))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runBoardroom(t, p, evs, tc.replies)
			type run struct{ start, end int64 }
			runs := map[string][]*run{}
			open := map[string]*run{}
			byID := map[string]string{}
			for _, r := range res.Records {
				switch {
				case r.Type == engine.EffectLLMRequest && r.Request.Job == "question":
					m := r.Agent
					if o := open[m]; o != nil {
						t.Fatalf("%s: a second question for %s at %s while the one from %s runs", tc.name, m, rules.FormatClock(r.T), rules.FormatClock(o.start))
					}
					open[m] = &run{start: r.T, end: -1}
					runs[m] = append(runs[m], open[m])
					byID[r.ID] = m
				case (r.Type == engine.EffectJobResult || r.Type == engine.EffectJobError) && r.Rule == "question":
					m := byID[r.ID]
					open[m].end = r.T
					open[m] = nil
				}
			}
			// busy reports whether m had a question running at t.
			busy := func(m string, t int64) bool {
				for _, x := range runs[m] {
					if x.start < t && (x.end < 0 || x.end >= t) {
						return true
					}
				}
				return false
			}
			started := func(m string, t int64) bool {
				for _, x := range runs[m] {
					if x.start == t {
						return true
					}
				}
				return false
			}
			closing := int64(9*60+50) * 1000
			slides := 0
			for _, r := range res.Records {
				if r.Type == engine.EffectContext && r.Rule == "slide_changed" && r.Text == "shared/presenter-transcript.md" {
					slides++
				}
			}
			for _, m := range boardMembers {
				// Never more than the period, the slide changes, the
				// questions asked and setup call for.
				if most := int(closing/15_000) + slides + 3 + 1; len(runs[m]) > most {
					t.Fatalf("%s: %d questions asked of %s, at most %d expected", tc.name, len(runs[m]), m, most)
				}
				for at := int64(15_000); at < closing; at += 15_000 {
					if !started(m, at) && !busy(m, at) {
						t.Fatalf("%s: no question for %s on the period at %s", tc.name, m, rules.FormatClock(at))
					}
				}
				for _, r := range res.Records {
					if r.Type != engine.EffectContext || r.Rule != "slide_changed" || r.Text != "shared/presenter-transcript.md" {
						continue
					}
					// Asked at the change, or right after the run in flight.
					ok := started(m, r.T)
					for _, x := range runs[m] {
						ok = ok || x.start < r.T && x.end >= r.T && started(m, x.end)
					}
					if !ok {
						t.Fatalf("%s: the slide change at %s did not refresh %s", tc.name, rules.FormatClock(r.T), m)
					}
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A member given the floor from a warm buffer speaks the moment the
// moderator's handover ends: no model call, no lateness.
func TestBoardroomWarmBufferSpeaksAtOnce(t *testing.T) {
	p, evs := loadBundled(t, "boardroom")
	res := runBoardroom(t, p, evs, nil)
	questions := 0
	var handoverEnd int64 = -1
	for _, r := range res.Records {
		if r.Type != engine.EffectAgentMessage {
			continue
		}
		if r.Agent == "moderator" && r.Kind == "transition" {
			handoverEnd = r.T + r.SpeechMS
			continue
		}
		if r.Kind != "question" {
			continue
		}
		questions++
		// The handover's end is reported within the tick it falls in.
		if r.LateMS != 0 || r.T-handoverEnd > p.Tick.MS || handoverEnd-r.T >= p.Tick.MS {
			t.Fatalf("%s's question at %s: late %dms, %dms after the handover ended", r.Agent, rules.FormatClock(r.T), r.LateMS, r.T-handoverEnd)
		}
	}
	if questions != 6 {
		t.Fatalf("%d questions asked, want one per slide", questions)
	}
}

// withRule loads the boardroom pack with one more rule and script: a
// pack built on it that tries to break its files' classes.
func withRule(t *testing.T, rule, js string) *rules.Pack {
	t.Helper()
	return editedBoardroom(t, func(mfs fstest.MapFS) {
		pack := mfs["pack.yaml"]
		pack.Data = bytes.Replace(pack.Data, []byte("\nrules:\n"), []byte("\nrules:\n"+rule), 1)
		mfs["scripts/tamper.js"] = &fstest.MapFile{Data: []byte(js)}
	})
}

// editedBoardroom loads the boardroom pack after edit changes its files.
func editedBoardroom(t *testing.T, edit func(fstest.MapFS)) *rules.Pack {
	t.Helper()
	mfs := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS("boardroom"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join("boardroom", path))
		mfs[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	edit(mfs)
	p, err := rules.Load(mfs, ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Under a tighter budget each member's call stays within it, and the
// files are cut in the budget's order: the transcript first (after its
// own max_chars), then the exchange history, then the outside intel;
// every other file is sent whole.
func TestBoardroomBudgetTrimOrder(t *testing.T) {
	const budget = 7000
	p := editedBoardroom(t, func(mfs fstest.MapFS) {
		pack := mfs["pack.yaml"]
		pack.Data = bytes.Replace(pack.Data, []byte("max_chars: 24000"), []byte(fmt.Sprintf("max_chars: %d", budget)), 1)
	})
	_, evs := loadBundled(t, "boardroom")
	res := runBoardroom(t, p, evs, nil)
	order := []string{"shared/presenter-transcript.md", "shared/exchange-history.md", "shared/external-intel.md"}
	deep := 0
	for _, r := range res.Records {
		if r.Type != engine.EffectLLMRequest || r.Request.Role == "moderator" {
			continue
		}
		total, sent := 0, map[string]engine.FilePart{}
		for _, f := range r.Request.Files {
			total += len(f.Text)
			sent[f.Path] = f
		}
		if total > budget {
			t.Fatalf("%s's call %s carries %d bytes, over %d", r.Request.Role, r.ID, total, budget)
		}
		for _, f := range r.Request.Files {
			i := slices.Index(order, f.Path)
			switch {
			case f.Trimmed == 0:
				continue
			case i < 0 && !strings.HasSuffix(f.Path, "/exchange-notes.md") && !strings.HasSuffix(f.Path, "/presenter-profile.md"):
				t.Fatalf("call %s cut %s, which neither the budget nor a max_chars names", r.ID, f.Path)
			case i > 0:
				deep++
				for _, before := range order[:i] {
					if b, ok := sent[before]; ok && b.Text != "" {
						t.Fatalf("call %s cut %s while %s still had %d bytes", r.ID, f.Path, before, len(b.Text))
					}
				}
			}
		}
	}
	if deep == 0 {
		t.Fatal("no call cut past the transcript; the budget's order went untested")
	}
}

// The turn limit holds: with MAX_EXCHANGES at 1, no member asks twice,
// and a slide whose members are all spent gets no question.
func TestBoardroomTurnLimit(t *testing.T) {
	p := editedBoardroom(t, func(mfs fstest.MapFS) {
		pack := mfs["pack.yaml"]
		pack.Data = bytes.Replace(pack.Data, []byte("MAX_EXCHANGES: 3 "), []byte("MAX_EXCHANGES: 1 "), 1)
	})
	_, evs := loadBundled(t, "boardroom")
	res := runBoardroom(t, p, evs, nil)
	asked := map[string]int{}
	for _, r := range res.Records {
		if r.Type == engine.EffectAgentMessage && r.Kind == "question" {
			asked[r.Agent]++
		}
	}
	for _, m := range boardMembers {
		if asked[m] != 1 {
			t.Fatalf("with one exchange each, %s asked %d questions (%v)", m, asked[m], asked)
		}
	}
}

// A script that tries to rewrite a persona, a focus brief written at
// setup, the session's config and the transcript is refused four times,
// each naming the rule, the file and its class; the session goes on to
// its closing and the files are as they were.
func TestBoardroomWritesRefused(t *testing.T) {
	p := withRule(t, `  - id: tamper
    trigger: tamper
    do:
      - run: {script: tamper.js#tamper}
`, `function tamper(arg) {
  return [
    { write: { file: "persona.md", role: "skeptic", text: "You are an easy-going investor." } },
    { write: { file: "focus-brief.md", role: "skeptic", text: "Ask nothing." } },
    { write: { file: "session-config.md", text: "No limits." } },
    { write: { file: "presenter-transcript.md", text: "" } },
    { emit: { text: "still here" } },
  ];
}
`)
	_, evs := loadBundled(t, "boardroom")
	evs = append(slices.Clone(evs), events.Timed{T: 60_000, Event: engine.CandidateEvent{Type: "tamper"}})
	slices.SortStableFunc(evs, func(a, b events.Timed) int { return int(a.T - b.T) })
	res := runBoardroom(t, p, evs, nil)
	var got []string
	var still, closing bool
	for _, r := range res.Records {
		switch {
		case r.Type == engine.EffectContextViolation:
			if r.Rule != "tamper" {
				t.Fatalf("violation by %q", r.Rule)
			}
			got = append(got, r.Text+" "+r.Kind)
		case r.Type == engine.EffectNote && r.Text == "still here":
			still = true
		case r.Type == engine.EffectAgentMessage && r.Kind == "closing":
			closing = true
		}
	}
	want := []string{"skeptic/persona.md immutable", "skeptic/focus-brief.md write_once", "shared/session-config.md write_once", "shared/presenter-transcript.md append_only"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations %v, want %v", got, want)
	}
	if !still || !closing {
		t.Fatalf("the session did not go on: later action %v, closing %v", still, closing)
	}
	persona, _ := os.ReadFile("boardroom/templates/skeptic/persona.md")
	for _, f := range res.Files {
		switch f.Path {
		case "skeptic/persona.md":
			if f.Text != string(persona) {
				t.Fatal("the skeptic's persona changed")
			}
		case "skeptic/focus-brief.md":
			if !strings.Contains(f.Text, "Angle:") {
				t.Fatalf("focus brief: %q", f.Text)
			}
		case "shared/presenter-transcript.md":
			if !strings.Contains(f.Text, "Slide 6") {
				t.Fatal("the transcript lost lines")
			}
		}
	}
}

// The archive of a session is the same, byte for byte, every time the
// same session runs; its manifest's hashes match its files; and once the
// session has ended nothing can be written: the engine takes no input.
func TestBoardroomArchive(t *testing.T) {
	p, evs := loadBundled(t, "boardroom")
	var dirs []string
	var timelines [][]byte
	var last *record.Result
	for range 2 {
		res := runBoardroom(t, p, evs, nil)
		var tl bytes.Buffer
		if err := record.WriteText(&tl, res.Records, record.FormatOptions{Verbose: true}); err != nil {
			t.Fatal(err)
		}
		timelines = append(timelines, tl.Bytes())
		m := archive.Manifest{Session: "board", Pack: p.Name, PackHash: p.Hash, Engine: engine.Version, EndedMS: res.EndMS, Reason: res.EndReason()}
		dir, err := archive.Write(t.TempDir(), m, res.Files)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = archive.Unlock(dir) }) // its folders are read-only
		if _, err := archive.Verify(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		last = res
	}
	if !bytes.Equal(timelines[0], timelines[1]) {
		t.Fatal("two runs of the same session printed different timelines")
	}
	a, b := readTree(t, dirs[0]), readTree(t, dirs[1])
	if len(a) != len(last.Files)+1 {
		t.Fatalf("archive holds %d files, the session %d (+ manifest)", len(a), len(last.Files))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Fatalf("%s differs between two runs of the same session", name)
		}
	}
	for _, want := range []string{"shared/presenter-transcript.md", "skeptic/focus-brief.md", "moderator/debrief-notes.md", "templates/skeptic/persona.md", "manifest.json"} {
		if _, ok := a[want]; !ok {
			t.Fatalf("archive has no %s", want)
		}
	}

	// Replayed, the session ends the same; after its end no input is
	// taken, so no file can change.
	s := engine.New(p, engine.Options{})
	var out []engine.Effect
	for _, in := range last.Inputs {
		out, _ = s.Step(in, out[:0])
	}
	if !s.Ended() {
		t.Fatal("replayed session did not end")
	}
	before := s.ContextFiles()
	_, err := s.Step(engine.Input{T: s.Now() + 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "candidate_message", Text: "One more thing."}}, nil)
	if !errors.Is(err, engine.ErrEnded) {
		t.Fatalf("an input after the end: %v", err)
	}
	if fmt.Sprint(s.ContextFiles()) != fmt.Sprint(before) || fmt.Sprint(before) != fmt.Sprint(last.Files) {
		t.Fatal("context files changed after the end, or differ from the dry run's")
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
