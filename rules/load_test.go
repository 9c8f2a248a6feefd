package rules_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

func TestLoadDayOne(t *testing.T) {
	p, err := rules.Load(os.DirFS("../scenarios"), "dayone")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.RoleIDs(); strings.Join(got, ",") != "qa,ba,tech_lead" {
		t.Fatalf("roles in file order: got %v", got)
	}
	a := p.Timeline.Anchors[0]
	if a.ID != "A1_BA_INTERRUPT" || a.At.MS != 180000 {
		t.Fatalf("anchor from constant: got %s at %d", a.ID, a.At.MS)
	}
	if p.Silence.Steps[0].After.MS != 12000 || p.Silence.Steps[1].After.MS != 8000 {
		t.Fatalf("silence ladder from constants: %+v", p.Silence.Steps)
	}
	if p.SpeechConfidence.Threshold.Value != 0.75 || p.SpeechConfidence.Steps[1].Count.Value != 2 {
		t.Fatalf("speech confidence from constants: %+v", p.SpeechConfidence)
	}
	if len(p.Hash) != 64 {
		t.Fatalf("hash: %q", p.Hash)
	}
}

// Every problem is reported at once, each with file:line:col.
func TestLoadErrorsListEverything(t *testing.T) {
	src := `name: broken
duration: 10m
tick: 100ms
bogus_section: 1
constants:
  WAIT: 12s
  LIMIT: 0.75
roles:
  qa: {persona: x, colour: red}
timeline:
  anchors:
    - {id: A1, at: NOPE, turn: {role: qa, kind: anchor}}
    - {id: A2, at: 11m, turn: {role: ghost, kind: anchor}}
  windows:
    - {id: W1, open: 30s, close: 10s, turn: {role: qa}}
routing:
  - {id: R1, type: intent, when: "msg.txt == 'x'", intents: [{role: qa, keywords: [a]}]}
  - {id: R2, type: magic}
silence:
  steps:
    - {after: LIMIT, action: auto_advance}
end:
  - {id: E1, when: "now() >= WAIT +"}
`
	_, err := rules.LoadBytes([]byte(src))
	var el rules.ErrorList
	if !errors.As(err, &el) {
		t.Fatalf("want an ErrorList, got %v", err)
	}
	want := []string{
		`pack.yaml:4:1: unknown section "bogus_section"`,
		`pack.yaml:9:20: unknown field "colour"`,
		`pack.yaml:12:20: unknown constant "NOPE"`,
		`pack.yaml:13:20: anchor A2 11:00.0 is after the end of the session`,
		`pack.yaml:13:31: anchor A2: unknown role "ghost"`,
		`pack.yaml:15:7: window W1: close must be after open`,
		`pack.yaml:17:39: expression "msg.txt == 'x'": msg has no field txt`,
		`pack.yaml:18:20: "magic" is not one of anchor, addressed, intent, role, script`,
		`pack.yaml:21:15: constant "LIMIT" is not a duration`,
		`pack.yaml:23:35: expression "now() >= WAIT +": unexpected token EOF`,
	}
	msg := err.Error()
	if strings.Contains(msg, "route R2 needs a type") {
		t.Errorf("a wrong route type is also reported as a missing one:\n%s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("missing %q in:\n%s", w, msg)
		}
	}
	if len(el) < len(want) {
		t.Errorf("want at least %d errors, got %d:\n%s", len(want), len(el), msg)
	}
}

func TestIncludes(t *testing.T) {
	fsys := fstest.MapFS{
		"pack.yaml":  {Data: []byte("name: inc\nduration: 1m\ninclude: [roles.yaml]\n")},
		"roles.yaml": {Data: []byte("roles:\n  a: {persona: hi}\n")},
	}
	p, err := rules.LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Roles) != 1 || p.Roles[0].ID != "a" {
		t.Fatalf("roles from include: %+v", p.Roles)
	}
	fsys["roles.yaml"] = &fstest.MapFile{Data: []byte("roles:\n  a: {persona: hi}\nname: again\n")}
	_, err = rules.LoadFS(fsys)
	if err == nil || !strings.Contains(err.Error(), `roles.yaml:3:1: section "name" is already defined at pack.yaml:1:1`) {
		t.Fatalf("duplicate section across files: %v", err)
	}
	fsys["pack.yaml"] = &fstest.MapFile{Data: []byte("name: inc\nduration: 1m\ninclude: [../etc/passwd.yaml]\n")}
	_, err = rules.LoadFS(fsys)
	if err == nil || !strings.Contains(err.Error(), "inside the pack folder") {
		t.Fatalf("include escaping the folder: %v", err)
	}
}

func TestDurations(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"800ms", 800, false}, {"12s", 12000, false}, {"1m30s", 90000, false},
		{"03:00", 180000, false}, {"03:00.5", 180500, false}, {"1:00:00", 3600000, false},
		{"12", 0, true}, {"-1s", 0, true}, {"03:75", 0, true}, {"1.5:00", 0, true}, {":", 0, true}, {"1:2:3:4", 0, true},
	}
	for _, c := range cases {
		got, err := rules.ParseDuration(c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
}

func FuzzLoad(f *testing.F) {
	seed, err := os.ReadFile("../scenarios/dayone/pack.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("name: x\nduration: 1m\nroles: {a: {persona: p}}\n"))
	f.Add([]byte("roles: [1, 2]\ntimeline: {anchors: [{at: '1:2:3'}]}\n"))
	f.Add([]byte("constants: {A: &x 1, B: *x}\nend: [{id: e, when: 'A + '}]\n"))
	f.Add([]byte("{{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := rules.LoadBytes(data)
		if err == nil {
			// A pack that loads can start a session without panicking.
			_ = p.NewEnv()
			return
		}
		var el rules.ErrorList
		if errors.As(err, &el) {
			for _, e := range el {
				if e.Pos.File == "" || e.Msg == "" {
					t.Fatalf("error without position or message: %+v", e)
				}
			}
		}
	})
}

func FuzzTemplate(f *testing.F) {
	f.Add("You are {{NAME}} and ${tool.args.colleague} said ${join(available(), ', ')}.")
	f.Add("{{ unclosed")
	f.Add("${}")
	f.Add("$$ {{}} }} ${")
	f.Fuzz(func(t *testing.T, tpl string) {
		if !utf8.ValidString(tpl) {
			return // YAML text is UTF-8; quoting would alter the bytes
		}
		src := "name: t\nduration: 1m\nroles: {a: {persona: p}}\ntemplates:\n  x: " + strconvQuote(tpl) + "\n"
		p, err := rules.LoadBytes([]byte(src))
		if err != nil {
			return
		}
		tp, ok := p.Template("x")
		if !ok {
			t.Fatal("template lost")
		}
		out, _ := tp.Render(func(string) string { return "S" }, func(*rules.Expr) (any, error) { return "E", nil })
		if !strings.Contains(tpl, "{{") && !strings.Contains(tpl, "${") && out != tpl {
			t.Fatalf("plain text changed: %q -> %q", tpl, out)
		}
	})
}

// strconvQuote renders s as a YAML double-quoted scalar.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A rule's on: is a trigger in one of two namespaces; what no client can
// send and no engine fires is refused where it is written.
func TestRuleTriggers(t *testing.T) {
	src := `name: triggers
duration: 1m
roles:
  qa: {persona: x}
tools:
  pass: {description: pass it on}
rules:
  - {id: ok1, on: tool_loop, do: [emit: {text: a}]}
  - {id: ok2, on: "tool:pass", do: [emit: {text: b}]}
  - {id: ok3, on: slide_changed, do: [emit: {text: c}]}
  - {id: bad1, on: "tool:pas", do: [emit: {text: d}]}
  - {id: bad2, on: Slide-Changed, do: [emit: {text: e}]}
  - {id: bad3, on: "tool:", do: [emit: {text: f}]}
`
	_, err := rules.LoadBytes([]byte(src))
	if err == nil {
		t.Fatal("loaded a pack with bad triggers")
	}
	for _, w := range []string{
		`pack.yaml:11:20: rule bad1: on: tool:pas names no tool of this pack (did you mean pass?)`,
		`pack.yaml:12:20: on: event type "Slide-Changed": use snake_case`,
		`pack.yaml:13:20: on: tool:: a tool trigger names a tool`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%s", w, err)
		}
	}
	if strings.Contains(err.Error(), "needs exactly one of on") {
		t.Errorf("a bad on: also reported as a missing trigger:\n%s", err)
	}
	if strings.Contains(err.Error(), "ok1") || strings.Contains(err.Error(), "ok2") || strings.Contains(err.Error(), "ok3") {
		t.Errorf("a valid trigger was refused:\n%s", err)
	}
	p, err := rules.LoadBytes([]byte(strings.Split(src, "  - {id: bad1")[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    rules.Trigger
		want string
	}{
		{rules.EngineTrigger(rules.TriggerToolLoop), "ok1"},
		{rules.ToolTrigger("pass"), "ok2"},
		{rules.EventTrigger("slide_changed"), "ok3"},
		{rules.EventTrigger("tool_loop"), ""},
	} {
		got := ""
		if rs := p.RulesOn(c.t); len(rs) > 0 {
			got = rs[0].ID
		}
		if got != c.want {
			t.Errorf("RulesOn(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// YAML merge keys share settings between roles; a role's own keys win.
func TestMergeKeys(t *testing.T) {
	src := `name: merge
duration: 1m
roles:
  qa: &shared
    persona: You are on the panel.
    fallback: {default: "Let's go on?"}
    focus: [risk]
  ba:
    <<: *shared
    focus: [money]
    voice: Kore
  tl:
    <<: [*shared]
`
	p, err := rules.LoadBytes([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ba, _ := p.Role("ba")
	if ba.Persona != "You are on the panel." || ba.Voice != "Kore" || strings.Join(ba.Focus, ",") != "money" {
		t.Fatalf("ba: %+v", ba)
	}
	if line, _ := ba.Fallback.Get("default"); line != "Let's go on?" {
		t.Fatalf("ba fallback %q", line)
	}
	tl, _ := p.Role("tl")
	if tl.Persona != "You are on the panel." || strings.Join(tl.Focus, ",") != "risk" {
		t.Fatalf("tl: %+v", tl)
	}
	if _, err := rules.LoadBytes([]byte("name: m\nduration: 1m\nroles:\n  qa:\n    <<: 5\n    persona: x\n")); err == nil || !strings.Contains(err.Error(), "pack.yaml:5:9: << merges a mapping") {
		t.Fatalf("bad merge: %v", err)
	}
}
