package rules_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
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
