package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules/schema"
)

func compile(t testing.TB, src string) *schema.Schema {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const grading = `{"type":"object","properties":{
  "grade":{"type":"integer","minimum":0,"maximum":100},
  "critique":{"type":"string","minLength":1,"maxLength":20},
  "verdict":{"type":"string","enum":["pass","fail"]},
  "reasons":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2},
  "score":{"type":["number","null"]}},
  "required":["grade","verdict"],"additionalProperties":false}`

func TestValidate(t *testing.T) {
	s := compile(t, grading)
	cases := []struct {
		value string
		want  []string // substrings, one per expected problem; empty for valid
	}{
		{`{"grade":70,"verdict":"pass"}`, nil},
		{`{"grade":70,"verdict":"pass","reasons":["a"],"score":null,"critique":"ok"}`, nil},
		{`{"grade":70.0,"verdict":"pass","score":1.5}`, nil},
		{`{"grade":101,"verdict":"maybe"}`, []string{"grade: 101 is above 100", `verdict: maybe is not one of`}},
		{`{"grade":-1,"verdict":"fail"}`, []string{"below 0"}},
		{`{"grade":1.5,"verdict":"fail"}`, []string{"want integer, got number"}},
		{`{"verdict":"fail"}`, []string{`missing "grade"`}},
		{`{"grade":1,"verdict":"fail","extra":1}`, []string{`unexpected property "extra"`}},
		{`{"grade":1,"verdict":"fail","reasons":[]}`, []string{"fewer than 1 items"}},
		{`{"grade":1,"verdict":"fail","reasons":["a","b","c"]}`, []string{"more than 2 items"}},
		{`{"grade":1,"verdict":"fail","reasons":[3]}`, []string{"reasons[0]: want string"}},
		{`{"grade":1,"verdict":"fail","critique":""}`, []string{"shorter than 1"}},
		{`{"grade":1,"verdict":"fail","critique":"abcdefghijklmnopqrstuvwxyz"}`, []string{"longer than 20"}},
		{`"text"`, []string{"want object, got string"}},
		{`null`, []string{"want object, got null"}},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.value), &v); err != nil {
			t.Fatal(err)
		}
		got := s.Validate(v)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %q, want %d problem(s) %q", c.value, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %d = %q, want it to contain %q", c.value, i, got[i], w)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]string{
		`{"type":"thing"}`:                "unknown type",
		`{"type":"object","pattern":"x"}`: `unsupported keyword "pattern"`,
		`{"properties":[]}`:               "properties must be an object",
		`{"required":"a"}`:                "required must be a list",
		`{"enum":[]}`:                     "enum must be a non-empty list",
		`{"minLength":-1}`:                "whole number",
		`{"minimum":"1"}`:                 "must be a number",
		`{"properties":{"a":{"type":1}}}`: "at a: type must be",
		`[1]`:                             "want an object",
	}
	for src, want := range cases {
		var v any
		if err := json.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := schema.Compile(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want error containing %q, got %v", src, want, err)
		}
	}
}

// Example always produces a value the schema accepts; the scripted model
// relies on it.
func TestExampleValidates(t *testing.T) {
	for _, src := range []string{grading,
		`{"type":"object","properties":{"q":{"type":"string","minLength":30}},"required":["q"]}`,
		`{"type":"array","items":{"type":"integer","minimum":5,"maximum":9},"minItems":3}`,
		`{"type":"boolean"}`,
	} {
		s := compile(t, src)
		raw, _ := json.Marshal(s.Example("x"))
		var v any
		_ = json.Unmarshal(raw, &v)
		if problems := s.Validate(v); len(problems) > 0 {
			t.Errorf("example %s for %s: %v", raw, src, problems)
		}
	}
}

func FuzzSchema(f *testing.F) {
	f.Add(grading, `{"grade":70,"verdict":"pass"}`)
	f.Add(`{"type":["string","null"],"enum":["a",null]}`, `null`)
	f.Add(`{"items":{"items":{"type":"array"}}}`, `[[[]]]`)
	f.Fuzz(func(t *testing.T, schemaSrc, valueSrc string) {
		var sv, vv any
		if json.Unmarshal([]byte(schemaSrc), &sv) != nil || json.Unmarshal([]byte(valueSrc), &vv) != nil {
			return
		}
		s, err := schema.Compile(sv)
		if err != nil {
			return
		}
		_ = s.Validate(vv)
		ex := s.Example("fuzz")
		raw, err := json.Marshal(ex)
		if err != nil {
			t.Fatalf("example does not marshal: %v", err)
		}
		_ = raw
	})
}
