package packtest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
)

// A reply script, in each of its shapes, names every problem at once at
// file:line:col, a misspelt key with the nearest known one, as a pack
// does.
func TestReadRepliesFile(t *testing.T) {
	const known = "(known: call, delay_ms, error, goal, intent_tag, job, json, kind, misbehave, no_reply, repeat, role, text, tool_calls)"
	cases := []struct {
		name, in, want string
		replies        int
	}{
		{"yaml", "# a script\n- {call: 1, error: server}\n- role: qa\n  text: Hi.\n  delay_ms: 1200\n  repeat: true\n", "", 2},
		{"json list", `[{"call": 1, "text": "a\/b \ud83d\ude00"}, {"no_reply": true}]`, "", 2},
		{"json lines", "{\"call\":1,\"error\":\"server\"}\r\n\n{\"kind\":\"nudge\",\"text\":\"Still there?\",\"json\":{\"a\":[1]},\"tool_calls\":[{\"name\":\"t\",\"args\":{\"x\":1}}]}\n", "", 2},
		{"empty", "  \n# nothing\n", "", 0},
		{"yaml typo", "- {call: 1, txt: hi}\n- {kind: nudge, delay_ms: soon, repeat: maybe}\n- tool_calls: [{nme: t}]\n",
			"r.yaml:1:13: unknown field \"txt\": did you mean text? " + known + "\n" +
				"r.yaml:2:27: expected a whole number, found \"soon\"\n" +
				"r.yaml:2:41: expected true or false, found \"maybe\"\n" +
				"r.yaml:3:17: unknown field \"nme\": did you mean name? (known: args, name)", 0},
		{"not a list", "text: hi\n", "r.yaml:1:1: expected a list, found a mapping", 0},
		{"json list typo", `[{"call": 1}, {"txt": "hi"}]`, "r.yaml:1:16: unknown field \"txt\": did you mean text? " + known, 0},
		// JSON YAML cannot read ("\/") is read as JSON, and its problems
		// placed as JSON's decoder finds them.
		{"json list escapes", "[{\"text\": \"a\\/b\"},\n {\"call\": \"x\"}]", "r.yaml:2:14: invalid JSON: json: cannot unmarshal string into Go struct field Reply.call of type int", 0},
		{"json lines typo", "{\"call\":1}\n\n  {\"txt\":\"hi\",\"delay_ms\":\"soon\"}\n{\"call\":\"2\"}\n{\"call\":3,\n",
			"r.yaml:3:4: unknown field \"txt\": did you mean text? " + known + "\n" +
				"r.yaml:3:26: expected a whole number, found \"soon\"\n" +
				"r.yaml:4:9: invalid JSON: call: expected a whole number, found \"2\"\n" +
				"r.yaml:5:11: invalid JSON: the line ends inside a value", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reps, err := sim.ReadRepliesFile("r.yaml", []byte(c.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, c.want)
			}
			if len(reps) != c.replies {
				t.Fatalf("%d replies, want %d: %+v", len(reps), c.replies, reps)
			}
		})
	}
}

// The YAML and JSON-lines shapes of a script mean the same replies.
func TestRepliesShapesAgree(t *testing.T) {
	y, err := sim.ReadRepliesFile("r.yaml", []byte("- {role: qa, kind: nudge, text: Hi., delay_ms: 0, repeat: true, json: {a: [1]}, tool_calls: [{name: t, args: {x: 1}}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := sim.ReadRepliesFile("r.jsonl", []byte(`{"role":"qa","kind":"nudge","text":"Hi.","delay_ms":0,"repeat":true,"json":{"a":[1]},"tool_calls":[{"name":"t","args":{"x":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Numbers in free-form values are int from YAML and float64 from JSON;
	// what the model is given is their JSON, which is the same.
	if len(y) != 1 || len(j) != 1 || y[0].Text != j[0].Text || *y[0].DelayMS != *j[0].DelayMS || !y[0].Repeat || !j[0].Repeat ||
		y[0].ToolCalls[0].Name != j[0].ToolCalls[0].Name {
		t.Fatalf("yaml %+v\njson %+v", y, j)
	}
}

// ReadReplies names a file it is given by the file's own name.
func TestReadRepliesNamesItsFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "replies.yaml")
	if err := os.WriteFile(name, []byte("- {txt: hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = sim.ReadReplies(f)
	if err == nil || !strings.HasPrefix(err.Error(), name+":1:4: unknown field \"txt\"") {
		t.Fatalf("err = %v", err)
	}
	_, err = sim.ReadReplies(strings.NewReader("- {txt: hi}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "LLM script:1:4: unknown field \"txt\"") {
		t.Fatalf("err = %v", err)
	}
}

// JSON lines are placed by decoding them again as YAML, which only works
// while the json and yaml tags of a reply name the same fields.
func TestReplyTagsAgree(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[sim.Reply](), reflect.TypeFor[sim.ReplyTool]()} {
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if j != y {
				t.Errorf("%s.%s: json %q, yaml %q", typ.Name(), f.Name, j, y)
			}
		}
	}
}

// A file of JSON lines that is not a script at all is not reported line by
// line without end.
func TestReadRepliesFileBoundsProblems(t *testing.T) {
	_, err := sim.ReadRepliesFile("r.jsonl", []byte(strings.Repeat("{\"txt\":1}\n", 500)))
	var el rules.ErrorList
	if !errors.As(err, &el) || len(el) != 101 || el[100].Msg != "more than 100 problems; fix these first" || el[99].Pos.Line != 100 {
		t.Fatalf("%d problems: %v", len(el), err)
	}
}
