package rules_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
)

// inputsPack declares one input of each type; a number input sets the
// tickets' total and a duration input an anchor's time, so binding other
// values compiles the pack again.
const inputsPack = `
name: inputs
duration: 10m
inputs:
  DEPTH: {type: number, whole: true, min: 3, max: 12, default: 5}
  WRAP_AT: {type: duration, min: 1m, max: 9m, default: "08:00"}
  SCENARIO: {type: text, max_chars: 40, default: "a payments migration"}
  LEVEL: {type: enum, values: [junior, senior], default: senior}
  STRICT: {type: bool}
  TOPICS: {type: list, max_items: 2, max_chars: 10}
  CONTEXT:
    type: object
    schema: {type: object, properties: {bug: {type: string}}, required: [bug], additionalProperties: false}
    default: {bug: double charge}
  NAME: {type: text, required: true}
  deck: {type: file, media: [text/markdown, application/pdf], max_bytes: 64, max_files: 2, default: files/deck.md}
scenario:
  context_from: input:CONTEXT
  attachments: {docs: input:deck}
roles:
  - {id: qa, persona: "You test {{SCENARIO}} for {{NAME}}."}
  - {id: ba, persona: ba}
tickets: {roles: [qa, ba], total: DEPTH}
timeline:
  anchors:
    - {id: WRAP, at: WRAP_AT, turn: {role: qa, line: "Time to wrap up."}}
files:
  deck.md: {class: write_once, from: input:deck}
end:
  - {id: deep, when: "DEPTH > 10 && LEVEL == 'senior' && len(TOPICS) >= 0 && !STRICT", reason: deep}
`

func loadInputsPack(t *testing.T) *rules.Pack {
	t.Helper()
	p, err := rules.LoadFS(fstest.MapFS{
		rules.PackFile:  {Data: []byte(inputsPack)},
		"files/deck.md": {Data: []byte("# Deck\nWe grow.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sup(kv ...string) rules.Supplied {
	s := rules.Supplied{}
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i]] = json.RawMessage(kv[i+1])
	}
	return s
}

func TestBindRefusesEachInputWithItsCode(t *testing.T) {
	p := loadInputsPack(t)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name  string
		sup   rules.Supplied
		code  string
		input string
		msg   string
	}{
		{"missing", sup(), rules.CodeInputMissing, "NAME", "required"},
		{"unknown", sup("NAME", `"Ada"`, "COLOUR", `"red"`), rules.CodeInputUnknown, "COLOUR", "it takes DEPTH"},
		{"wrong type", sup("NAME", `7`), rules.CodeInputType, "NAME", "want text"},
		{"text too long", sup("NAME", `"Ada"`, "SCENARIO", `"`+strings.Repeat("x", 41)+`"`), rules.CodeInputTooLarge, "SCENARIO", "at most 40"},
		{"below min", sup("NAME", `"Ada"`, "DEPTH", `2`), rules.CodeInputRange, "DEPTH", "below the minimum 3"},
		{"not whole", sup("NAME", `"Ada"`, "DEPTH", `4.5`), rules.CodeInputType, "DEPTH", "whole number"},
		{"duration above max", sup("NAME", `"Ada"`, "WRAP_AT", `"09:30"`), rules.CodeInputRange, "WRAP_AT", "above the maximum 09:00.0"},
		{"enum", sup("NAME", `"Ada"`, "LEVEL", `"staff"`), rules.CodeInputType, "LEVEL", "one of junior, senior"},
		{"list too long", sup("NAME", `"Ada"`, "TOPICS", `["a","b","c"]`), rules.CodeInputTooLarge, "TOPICS", "at most 2"},
		{"object schema", sup("NAME", `"Ada"`, "CONTEXT", `{"pressure": "x"}`), rules.CodeInputType, "CONTEXT", "bug"},
		{"file too large", sup("NAME", `"Ada"`, "deck", `{"name": "d.md", "text": "`+strings.Repeat("x", 65)+`"}`), rules.CodeInputTooLarge, "deck", "at most 64 bytes"},
		{"too many files", sup("NAME", `"Ada"`, "deck", `[{"name": "a.md", "text": "a"}, {"name": "b.md", "text": "b"}, {"name": "c.md", "text": "c"}]`), rules.CodeInputTooMany, "deck", "at most 2"},
		{"media type", sup("NAME", `"Ada"`, "deck", `{"name": "a.png", "data": "`+b64("png")+`"}`), rules.CodeInputMedia, "deck", "image/png"},
		{"text media not text", sup("NAME", `"Ada"`, "deck", `{"name": "a.md", "data": "`+base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe})+`"}`), rules.CodeInputMedia, "deck", "not UTF-8"},
		{"bad base64", sup("NAME", `"Ada"`, "deck", `{"name": "a.md", "data": "%%%"}`), rules.CodeInputType, "deck", "base64"},
		{"unknown upload", sup("NAME", `"Ada"`, "deck", `{"name": "a.md", "sha256": "`+strings.Repeat("ab", 32)+`"}`), rules.CodeInputUpload, "deck", "upload it first"},
		{"path escapes", sup("NAME", `"Ada"`, "deck", `{"name": "../a.md", "text": "a"}`), rules.CodeInputType, "deck", "contains .."},
		{"name with a format character", sup("NAME", `"Ada"`, "deck", `{"name": "\u202egnp.md", "text": "a"}`), rules.CodeInputType, "deck", "control character U+202E"},
		{"whole number beyond 2^53", sup("NAME", `"Ada"`, "DEPTH", `1e19`), rules.CodeInputRange, "DEPTH", "beyond ±2^53"},
		{"media type from no system table", sup("NAME", `"Ada"`, "deck", `{"name": "a.weird", "text": "a"}`), rules.CodeInputMedia, "deck", "give media_type"},
		{"two of data and text", sup("NAME", `"Ada"`, "deck", `{"name": "a.md", "text": "a", "data": "YQ=="}`), rules.CodeInputType, "deck", "exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Bind(tc.sup, rules.BindOptions{})
			var list rules.InputErrors
			if !errors.As(err, &list) {
				t.Fatalf("want InputErrors, got %v", err)
			}
			if list.Code() != tc.code || list[0].Input != tc.input || !strings.Contains(list[0].Msg, tc.msg) {
				t.Fatalf("got %s %s %q; want %s %s ~%q", list.Code(), list[0].Input, list[0].Msg, tc.code, tc.input, tc.msg)
			}
		})
	}
}

// Names the pack does not declare are one refusal however many there
// are, and the answer stays small.
func TestBindUnknownInputsAreOneRefusal(t *testing.T) {
	p := loadInputsPack(t)
	s := sup("NAME", `"Ada"`)
	for i := range 100_000 {
		s[fmt.Sprintf("x%06d", i)] = json.RawMessage(`1`)
	}
	_, err := p.Bind(s, rules.BindOptions{})
	var list rules.InputErrors
	if !errors.As(err, &list) || len(list) != 1 || list.Code() != rules.CodeInputUnknown || len(err.Error()) > 400 {
		t.Fatalf("want one short input_unknown, got %d refusals, %d bytes: %.200s", len(list), len(err.Error()), err)
	}
	if !strings.Contains(list[0].Msg, "100000 inputs (x000000, x000001, x000002, …)") {
		t.Fatalf("message %q", list[0].Msg)
	}
}

// What a session's log keeps fits its header: inputs whose JSON would not
// are refused by name, not left to fail in storage.
func TestBindBoundsWhatTheLogKeeps(t *testing.T) {
	src := strings.Replace(inputsPack, "CONTEXT:\n    type: object\n    schema: {type: object, properties: {bug: {type: string}}, required: [bug], additionalProperties: false}",
		"CONTEXT:\n    type: object\n    schema: {type: object}", 1)
	p, err := rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: []byte(src)}, "files/deck.md": {Data: []byte("# Deck")}})
	if err != nil {
		t.Fatal(err)
	}
	// JSON writes each < as six bytes: a million of them are 6 MB.
	_, err = p.Bind(sup("NAME", `"Ada"`, "CONTEXT", `{"bug": "`+strings.Repeat("<", 1_000_000)+`"}`), rules.BindOptions{})
	var list rules.InputErrors
	if !errors.As(err, &list) || list.Code() != rules.CodeInputTooLarge || list[0].Input != "CONTEXT" {
		t.Fatalf("want CONTEXT input_too_large, got %v", err)
	}
}

// A workspace's files are named as its tools name them, and a name is a
// file or a folder, not both.
func TestWorkspaceInputNames(t *testing.T) {
	src := `
name: ws
duration: 1m
inputs:
  code: {type: file, max_files: 5}
workspace: {from: input:code}
roles: [{id: qa, persona: p}]
`
	p, err := rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ files, want string }{
		{`[{"name": "notes~.md", "text": "a"}]`, "contains ~"},
		{`[{"name": "a\tb.js", "text": "a"}]`, "control character"},
		{`[{"name": "src", "media_type": "text/plain", "text": "a"}, {"name": "src/a.js", "text": "b"}]`, "one name"},
	} {
		_, err := p.Bind(sup("code", tc.files), rules.BindOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", tc.files, tc.want, err)
		}
	}
	in, err := p.Bind(sup("code", `[{"name": "src/a.js", "text": "a"}, {"name": "README.md", "text": "b"}]`), rules.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ws := p.WorkspaceOf(in); len(ws) != 2 || ws[0].Path != "src/a.js" {
		t.Fatalf("workspace %+v", ws)
	}
}

// A pack's own files get their media type from one fixed table, so a
// machine whose MIME database names .js otherwise loads the same pack.
func TestInputMediaTypesIgnoreTheMachine(t *testing.T) {
	if err := mime.AddExtensionType(".js", "application/javascript"); err != nil {
		t.Fatal(err)
	}
	src := "name: ws\nduration: 1m\ninputs:\n  code: {type: file, media: [text/*], default: files/index.js}\nroles: [{id: qa, persona: p}]\n"
	p, err := rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: []byte(src)}, "files/index.js": {Data: []byte("x()")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.DefaultInputs().Files("code")[0].MediaType; got != "text/javascript" {
		t.Fatalf("media type %q", got)
	}
}

func TestBindReportsEveryRefusalAtOnce(t *testing.T) {
	p := loadInputsPack(t)
	_, err := p.Bind(sup("DEPTH", `99`, "LEVEL", `1`), rules.BindOptions{})
	var list rules.InputErrors
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("want DEPTH, LEVEL and NAME refused, got %v", err)
	}
	for i, want := range []string{"DEPTH", "LEVEL", "NAME"} {
		if list[i].Input != want {
			t.Fatalf("refusal %d is %s, want %s (declaration order)", i, list[i].Input, want)
		}
	}
}

func TestBindValuesReachThePack(t *testing.T) {
	p := loadInputsPack(t)
	// Defaults: the pack as loaded runs.
	in, err := p.Bind(sup("NAME", `"Ada"`), rules.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Pack() != p {
		t.Fatal("default values compiled the pack again")
	}
	if got := in.Text("deck"); got != "# Deck\nWe grow." {
		t.Fatalf("default file: %q", got)
	}
	if in.Supplied() == nil || string(in.Supplied()["NAME"]) != `"Ada"` || len(in.Supplied()) != 1 {
		t.Fatalf("supplied keeps only what was given: %s", in.Supplied())
	}

	// A number and a duration the pack's fields name: the same pack
	// compiled with them, cached.
	in, err = p.Bind(sup("NAME", `"Ada"`, "DEPTH", `9`, "WRAP_AT", `"07:30"`), rules.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := in.Pack()
	if q == p || q.Hash != p.Hash {
		t.Fatalf("bound pack: same=%v hash %s vs %s", q == p, q.Hash, p.Hash)
	}
	if q.Tickets.Total.Value != 9 || q.Timeline.Anchors[0].At.MS != 450000 {
		t.Fatalf("bound values: total %v, anchor %d", q.Tickets.Total.Value, q.Timeline.Anchors[0].At.MS)
	}
	if p.Tickets.Total.Value != 5 || p.Timeline.Anchors[0].At.MS != 480000 {
		t.Fatal("binding changed the pack it was called on")
	}
	again, _ := p.Bind(sup("WRAP_AT", `"07:30"`, "NAME", `"Bo"`, "DEPTH", `9`), rules.BindOptions{})
	if again.Pack() != q {
		t.Fatal("the same values compiled the pack a second time")
	}

	// Files, the context object and an upload by hash.
	data := []byte("%PDF-1.4 plan")
	sum := "bdf5d8ac7a53ab6a3c2c6b3bd5a1f27a32e2b8d0a8e0e8f0b1f31e0c0b0c9a11"
	_, err = p.Bind(sup("NAME", `"Ada"`, "CONTEXT", `{"bug": "lost refund"}`,
		"deck", `[{"name": "notes.md", "text": "# Notes"}, {"name": "plan.pdf", "sha256": "`+sum+`"}]`),
		rules.BindOptions{Upload: func(h string) ([]byte, bool) { return data, h == sum }})
	var list rules.InputErrors
	if errors.As(err, &list) && list.Code() == rules.CodeInputUpload && strings.Contains(list[0].Msg, "does not match") {
		// The store's content is checked against the hash it is named by.
	} else {
		t.Fatalf("an upload whose content does not match its hash: %v", err)
	}
	good := sha256hex(data)
	in, err = p.Bind(sup("NAME", `"Ada"`, "CONTEXT", `{"bug": "lost refund"}`,
		"deck", `[{"name": "notes.md", "text": "# Notes"}, {"name": "plan.pdf", "sha256": "`+good+`"}]`),
		rules.BindOptions{Upload: func(h string) ([]byte, bool) { return data, h == good }})
	if err != nil {
		t.Fatal(err)
	}
	files := in.Files("deck")
	if len(files) != 2 || files[1].MediaType != "application/pdf" || string(files[1].Data) != string(data) {
		t.Fatalf("files: %+v", files)
	}
	if att := p.AttachmentsOf(in); len(att) != 2 || att[0].Name != "notes.md" {
		t.Fatalf("attachments from the input: %+v", att)
	}
	if ctx := p.ScenarioContext(in); len(ctx) != 1 || ctx[0].Value != "lost refund" {
		t.Fatalf("scenario context: %+v", ctx)
	}
	// The log keeps the upload's content, not its hash.
	if s := string(in.Supplied()["deck"]); !strings.Contains(s, base64.StdEncoding.EncodeToString(data)) || strings.Contains(s, "sha256") {
		t.Fatalf("canonical files: %s", s)
	}
}

func TestInputDeclarationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, inputs, want string
	}{
		{"bad type", `X: {type: colour}`, `"colour" is not one of text, number`},
		{"field of another type", `X: {type: text, min: 3}`, `input X: min applies to number and duration inputs, not text`},
		{"enum without values", `X: {type: enum}`, `an enum lists its values`},
		{"bad default", `X: {type: number, max: 3, default: 9}`, `input X: default: 9 is above the maximum 3`},
		{"bad size", `X: {type: file, max_bytes: lots}`, `bad size "lots"`},
		{"files over the session limit", `X: {type: file, max_bytes: 3MiB}`, `a session's files are at most 2 MiB`},
		{"missing default file", `X: {type: file, default: files/none.md}`, `default "files/none.md"`},
		{"shadows a constant", "X: {type: text}\nconstants: {X: 1}", `input "X": a constant or variable of that name`},
		{"text as a duration", "X: {type: text}\ntick: X", `input "X" is a text input; a duration names a duration input`},
		{"bad media", `X: {type: file, media: [pdf]}`, `media "pdf"`},
		{"object schema not an object", `X: {type: object, schema: {type: string}}`, `an object input's schema has type: object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: x\nduration: 1m\nroles: [{id: qa, persona: p}]\ninputs:\n  " + tc.inputs + "\n"
			_, err := rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: []byte(src)}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestInputReferencesChecked(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"attachment names no input", "scenario: {attachments: {a: input:nope}}", `attachment a: input:nope names no input`},
		{"attachment names a text input", "inputs: {T: {type: text}}\nscenario: {attachments: {a: input:T}}", `input T is a text input; this takes a file input`},
		{"context_from not an object", "inputs: {T: {type: text}}\nscenario: {context_from: input:T}", `takes a object input`},
		{"workspace.from not a reference", "workspace: {from: files/x}", `write input:NAME`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: x\nduration: 1m\nroles: [{id: qa, persona: p}]\n" + tc.src + "\n"
			_, err := rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: []byte(src)}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestParseInputArg(t *testing.T) {
	p := loadInputsPack(t)
	read := func(name string) ([]byte, error) { return []byte("# from " + name), nil }
	for _, tc := range []struct{ arg, want string }{
		{"DEPTH=7", `7`},
		{"SCENARIO=7", `"7"`},
		{"STRICT=true", `true`},
		{"TOPICS=a, b", `["a","b"]`},
		{`CONTEXT={"bug": "x"}`, `{"bug": "x"}`},
		{"deck=@a.md,@b.md", `[{"name":"a.md","media_type":"","data":"IyBmcm9tIGEubWQ="},{"name":"b.md","media_type":"","data":"IyBmcm9tIGIubWQ="}]`},
	} {
		name, raw, err := p.ParseInputArg(tc.arg, read)
		if err != nil || string(raw) != tc.want {
			t.Errorf("%s: got %s %s %v, want %s", tc.arg, name, raw, err, tc.want)
		}
	}
	for _, bad := range []string{"DEPTH=many", "nope=1", "STRICT=maybe", "deck=a.md", "CONTEXT={"} {
		if _, _, err := p.ParseInputArg(bad, read); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func sha256hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// BenchmarkBind is what a start with inputs costs before its session is
// built: a text, a number that recompiles the pack (cached after the
// first) and a 100 KB file.
func BenchmarkBind(b *testing.B) {
	src := strings.Replace(inputsPack, "max_bytes: 64", "max_bytes: 256KiB", 1)
	p, err := rules.LoadFS(fstest.MapFS{
		rules.PackFile:  {Data: []byte(src)},
		"files/deck.md": {Data: []byte("# Deck\nWe grow.")},
	})
	if err != nil {
		b.Fatal(err)
	}
	doc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("The plan holds. ", 6400)))
	s := sup("NAME", `"Ada"`, "DEPTH", `9`, "deck", `{"name": "cv.md", "data": "`+doc+`"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Bind(s, rules.BindOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
