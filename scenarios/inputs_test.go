package scenarios_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/record"
)

func raw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runWith(t *testing.T, name string, opt dryrun.Options) *record.Result {
	t.Helper()
	p, evs := loadBundled(t, name)
	opt.Events = evs
	res, err := dryrun.Run(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func requests(res *record.Result) []*engine.LLMRequest {
	var out []*engine.LLMRequest
	for _, r := range res.Records {
		if r.Type == engine.EffectLLMRequest && r.Request != nil {
			out = append(out, r.Request)
		}
	}
	return out
}

// A Hot Seat session brings its own scenario, documents and depth: the
// analyze request attaches exactly the documents, by name, and says the
// scenario; seven questions split [3, 2, 2] (each juror one, the four
// left by equal weight, 1 1/3 each: one more each, the last to the
// first juror); the panel reaches a verdict, the same bytes every run.
func TestHotSeatSessionInputs(t *testing.T) {
	scenario := "We will replace our on-call rota with an AI triage bot by Friday."
	pdf := []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")
	opt := dryrun.Options{Inputs: rules.Supplied{
		"scenario_text": raw(t, scenario),
		"documents": raw(t, []map[string]string{
			{"name": "rota.pdf", "media_type": "application/pdf", "data": base64.StdEncoding.EncodeToString(pdf)},
			{"name": "notes.md", "text": "# Notes\nThe bot pages nobody at night."},
		}),
		"depth":          raw(t, 7),
		"candidate_name": raw(t, "Dana Ruiz"),
	}}
	var first []byte
	for run := 0; run < 2; run++ {
		res := runWith(t, "hotseat", opt)
		var b bytes.Buffer
		if err := record.WriteJSONL(&b, res.Records, record.FormatOptions{Verbose: true}); err != nil {
			t.Fatal(err)
		}
		if run == 1 {
			if !bytes.Equal(first, b.Bytes()) {
				t.Fatal("the same inputs played twice differ")
			}
			break
		}
		first = b.Bytes()
		var analyze *engine.LLMRequest
		for _, q := range requests(res) {
			if q.Job == "analyze" {
				analyze = q
			}
		}
		if analyze == nil {
			t.Fatal("no analyze request")
		}
		var names []string
		for _, a := range analyze.Attachments {
			names = append(names, a.Name+" "+a.MIME)
		}
		if want := []string{"rota.pdf application/pdf", "notes.md text/markdown"}; !slices.Equal(names, want) {
			t.Fatalf("attachments %q, want %q", names, want)
		}
		if !bytes.Equal(analyze.Attachments[0].Data, pdf) {
			t.Fatal("the PDF's bytes changed on the way")
		}
		for _, want := range []string{`User scenario: "` + scenario + `"`, "Attached files: rota.pdf, notes.md\n"} {
			if !strings.Contains(analyze.Prompt, want) {
				t.Fatalf("analyze prompt lacks %q:\n%s", want, analyze.Prompt)
			}
		}
		if got := analyze.ScenarioContext; len(got) != 1 || got[0].Key != "scenario" || got[0].Value != scenario {
			t.Fatalf("scenario_context %v", got)
		}
		tickets := ticketsOf(t, res)
		if tickets["marcus"] != 3 || tickets["priya"] != 2 || tickets["james"] != 2 {
			t.Fatalf("tickets %v, want marcus 3, priya 2, james 2", tickets)
		}
		juror := false
		for _, q := range requests(res) {
			if q.Role == "marcus" && strings.Contains(q.System, "interviewing Dana Ruiz about") {
				juror = true
			}
		}
		if !juror {
			t.Fatal("no juror request names the candidate")
		}
		if !bytes.Contains(first, []byte(`"type":"report","kind":"verdict"`)) {
			t.Fatal("no verdict")
		}
	}
}

// A client's deck is what the board reads: a sentence of it reaches the
// members' setup requests as deck-content.md.
func TestBoardroomSuppliedDeck(t *testing.T) {
	const line = "Slide 3: Quayside sells tidal-lock sensors to 14 harbour authorities."
	deck := "# Quayside\n\n" + line + "\n"
	res := runWith(t, "boardroom", dryrun.Options{Inputs: rules.Supplied{
		"deck":    raw(t, map[string]string{"name": "quayside.md", "text": deck}),
		"company": raw(t, "Quayside"),
	}})
	var focus, named int
	for _, q := range requests(res) {
		for _, f := range q.Files {
			if strings.HasSuffix(f.Path, "deck-content.md") {
				if strings.Contains(f.Text, "Tidewater") {
					t.Fatalf("%s %s still reads the pack's deck", q.Role, q.Kind)
				}
				if q.Job == "focus" && strings.Contains(f.Text, line) {
					focus++
				}
			}
		}
		if q.Job == "focus" && strings.Contains(q.Prompt, "Quayside's deck") {
			named++
		}
	}
	if focus != 3 || named != 3 {
		t.Fatalf("focus requests quoting the deck: %d, naming the company: %d; want 3 each", focus, named)
	}
}

// A DayOne session's scenario context is what every agent request
// carries, in key order, and the session's id with it.
func TestDayOneSuppliedContext(t *testing.T) {
	res := runWith(t, "dayone", dryrun.Options{SessionID: "sess_001", Inputs: rules.Supplied{
		"scenario_context": json.RawMessage(`{"business_pressure": "quarter-end billing run tonight", "bug_summary": "refunds posted twice", "region": "EU"}`),
		"candidate_id":     raw(t, "cand_demo"),
	}})
	reqs := requests(res)
	if len(reqs) == 0 {
		t.Fatal("no requests")
	}
	want := `{"bug_summary":"refunds posted twice","business_pressure":"quarter-end billing run tonight","region":"EU"}`
	for _, q := range reqs {
		got, err := json.Marshal(q.ScenarioContext)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s %s: scenario_context %s, want %s", q.Role, q.Kind, got, want)
		}
		if q.SessionID != "sess_001" {
			t.Fatalf("%s %s: session_id %q", q.Role, q.Kind, q.SessionID)
		}
	}
}

// A Training session's starting files are what the client's editor
// holds: open_file answers with them and the run ends with both files.
func TestTrainingSuppliedWorkspace(t *testing.T) {
	index := "// Supplied by the interviewer.\nexport function total(items) {\n  return items.length;\n}\n"
	res := runWith(t, "training", dryrun.Options{Inputs: rules.Supplied{
		"workspace": raw(t, []map[string]string{
			{"name": "index.js", "text": index},
			{"name": "lib/format.js", "text": "export const money = (n) => n.toFixed(2);\n"},
		}),
		"brief": raw(t, "Add a sum function to index.js."),
	}})
	opened := false
	for _, in := range res.Inputs {
		if in.Type == engine.InputClientToolResult && in.ClientTool != nil && strings.Contains(string(in.ClientTool.Result), "Supplied by the interviewer.") {
			opened = true
		}
	}
	if !opened {
		t.Fatal("no open_file result carries the supplied index.js")
	}
	var paths []string
	for _, f := range res.Workspace {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"index.js", "lib/format.js"}) {
		t.Fatalf("workspace %v", paths)
	}
	brief := false
	for _, q := range requests(res) {
		if strings.Contains(q.System, "Add a sum function to index.js.") {
			brief = true
		}
	}
	if !brief {
		t.Fatal("no request carries the supplied brief")
	}
}
