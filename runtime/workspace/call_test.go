package workspace

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCallJSON(t *testing.T) {
	for _, c := range []struct {
		name, op, params, want string
		isError                bool
	}{
		{
			name: "open", op: "open", params: `{"path":"index.js"}`,
			want: `{"path":"index.js","content":"L1:if (a<b && c>d) {\nL2:}","lines":2}`,
		},
		{
			name: "open the active file with no parameters", op: "open", params: ``,
			want: `{"path":"index.js","content":"L1:if (a<b && c>d) {\nL2:}","lines":2}`,
		},
		{
			name: "line edits", op: "write",
			params: `{"path":"./index.js","lineEdits":[{"op":"replace","line":2,"text":"} // <end>"},{"op":"insert","line":2,"text":"  x();\n  y();","position":"before"}]}`,
			want:   `{"ok":true,"mode":"lineEdits","path":"index.js","diffs":[{"op":"replace","line":2,"removed":["}"],"added":["} // <end>"]},{"op":"insert","line":2,"position":"before","added":["  x();","  y();"]}],"lines":4}`,
		},
		{
			name: "identical content", op: "write", params: `{"content":"if (a<b && c>d) {\r\n}\r\n"}`,
			want: `{"ok":true,"mode":"replace","path":"index.js","diffs":[],"lines":2}`,
		},
		{
			name: "a path outside", op: "write", params: `{"path":"/etc/passwd","content":"x"}`, isError: true,
			want: `{"error":"the path \"/etc/passwd\" is outside /workspace; only files in /workspace can be opened or written; files in /workspace: index.js"}`,
		},
		{
			name: "a bad line", op: "write", params: `{"lineEdits":[{"op":"delete","line":42}]}`, isError: true,
			want: `{"error":"edit 1: line 42 is outside 1..2 of index.js; call open_file to see its lines\nthe edit was not applied"}`,
		},
		{
			name: "unknown operation", op: "delete", params: `{}`, isError: true,
			want: `{"error":"unknown operation \"delete\"; the workspace runs open and write"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := New("")
			const content = "if (a<b && c>d) {\r\n}\r\n"
			if err := w.Put("index.js", content); err != nil {
				t.Fatal(err)
			}
			got, isError := w.Call(c.op, []byte(c.params))
			if string(got) != c.want || isError != c.isError {
				t.Fatalf("got %v\n%s\nwant %v\n%s", isError, got, c.isError, c.want)
			}
			if now, _ := w.Get("index.js"); isError && now != content {
				t.Errorf("an error result changed the file to %q", now)
			}
		})
	}
}

func TestStrictParams(t *testing.T) {
	const files = "files in /workspace: index.js"
	for _, c := range []struct {
		name, op, params string
		err              string // the exact error, or its start when it ends in "..."
	}{
		{"unknown parameter", "write", `{"path":"index.js","conten":"x"}`,
			`unknown parameter "conten"; write_file takes path, content and lineEdits`},
		{"parameters in another case", "write", `{"Path":"index.js","Content":"x","z":1}`,
			`unknown parameters "Content", "Path", "z"; write_file takes path, content and lineEdits`},
		{"unknown field in an edit", "write", `{"lineEdits":[{"op":"delete","line":1},{"op":"replace","line":1,"txt":"x"}]}`,
			`edit 2: unknown field "txt"; an edit takes op, line, text and position`},
		{"open takes only path", "open", `{"path":"index.js","line":3}`,
			`unknown parameter "line"; open_file takes only path`},
		{"both modes", "write", `{"content":"x","lineEdits":[{"op":"delete","line":1}]}`,
			`give either content (the whole file) or lineEdits, not both`},
		{"neither mode", "write", `{"path":"index.js"}`,
			`give content (the whole new file) or lineEdits (changes to some of its lines)`},
		{"null modes are no modes", "write", `{"content":null,"lineEdits":null}`,
			`give content (the whole new file) or lineEdits (changes to some of its lines)`},
		{"no edits", "write", `{"lineEdits":[]}`,
			`lineEdits is empty; give at least one edit`},
		{"bad op", "write", `{"lineEdits":[{"op":"move","line":1}]}`,
			"edit 1: op \"move\" is not replace, insert or delete\nthe edit was not applied"},
		{"text on delete", "write", `{"lineEdits":[{"op":"delete","line":1,"text":"x"}]}`,
			"edit 1: delete takes no text; to change the line, use replace\nthe edit was not applied"},
		{"no text on insert", "write", `{"lineEdits":[{"op":"insert","line":1,"text":null}]}`,
			"edit 1: insert needs text (the new lines)\nthe edit was not applied"},
		{"path not a string", "write", `{"path":5,"content":"x"}`, `path must be a string, not 5`},
		{"content not a string", "write", `{"content":["x"]}`, `content must be a string, not a list`},
		{"lineEdits not a list", "write", `{"lineEdits":{"op":"delete","line":1}}`, `lineEdits must be a list of edits, not an object`},
		{"line as a string", "write", `{"lineEdits":[{"op":"delete","line":"1"}]}`, `edit 1: line must be a whole number such as 12, not a string`},
		{"fractional line", "write", `{"lineEdits":[{"op":"delete","line":1.5}]}`, `edit 1: line must be a whole number such as 12, not 1.5`},
		{"missing line", "write", `{"lineEdits":[{"op":"delete"}]}`, `edit 1: line is missing; give the 1-based line number open_file shows`},
		{"op not a string", "write", `{"lineEdits":[{"op":true,"line":1}]}`, `edit 1: op must be a string, not a boolean`},
		{"position not a string", "write", `{"lineEdits":[{"op":"insert","line":1,"text":"x","position":1}]}`, `edit 1: position must be a string, not 1`},
		{"a null edit", "write", `{"lineEdits":[null]}`,
			`edit 1: an edit must be an object like {"op": "replace", "line": 3, "text": "..."}, not null`},
		{"every undecodable edit", "write", `{"lineEdits":["x",{"op":"delete"}]}`,
			"edit 1: an edit must be an object like {\"op\": \"replace\", \"line\": 3, \"text\": \"...\"}, not a string\nedit 2: line is missing; give the 1-based line number open_file shows"},
		{"parameters not an object", "write", `[1]`,
			`the parameters must be an object like {"path": "index.js", "lineEdits": [{"op": "replace", "line": 3, "text": "..."}]}, not a list`},
		{"invalid JSON", "write", `{"path":"index.js" "content":"x"}`, `the parameters are not valid JSON (...`},
		{"cut-off JSON", "write", `{"path":`, `the parameters are not valid JSON (it ends too early at byte 8); send an object like {"path": "index.js", "lineEdits": [{"op": "replace", "line": 3, "text": "..."}]}`},
		{"two objects", "write", `{"content":"x"} {"content":"y"}`,
			`the parameters hold more than one JSON value; send one object like {"path": "index.js", "lineEdits": [{"op": "replace", "line": 3, "text": "..."}]}`},
		{"trailing bytes", "write", `{"content":"x"} x`, `the parameters are not valid JSON (...`},
		{"a truncated edit", "write", `{"lineEdits":[{"op":"delete","line":1}`, `the parameters are not valid JSON (...`},
		{"a parameter twice", "write", `{"content":"x","content":"y"}`, `"content" is given twice in the parameters; give it once`},
		{"an edit field twice", "write", `{"lineEdits":[{"op":"insert","line":"","line":1,"text":""}]}`, `edit 1: "line" is given twice in an edit; give it once`},
		{"too many edits", "write", `{"lineEdits":[` + strings.Repeat(`{"op":"delete","line":1},`, MaxEdits) + `{"op":"delete","line":1}]}`,
			`501 edits in one call; at most 500, so split them over several write_file calls`},
		{"missing file", "open", `{"path":"main.js"}`, `there is no file main.js in /workspace; ` + files},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := New("")
			if err := w.Put("index.js", "a\nb\n"); err != nil {
				t.Fatal(err)
			}
			got, isError := w.Call(c.op, []byte(c.params))
			var res struct {
				Error *string `json:"error"`
			}
			if err := json.Unmarshal(got, &res); err != nil || !isError || res.Error == nil {
				t.Fatalf("not an error result: %v %s", isError, got)
			}
			if start, ok := strings.CutSuffix(c.err, "..."); ok {
				if !strings.HasPrefix(*res.Error, start) {
					t.Errorf("error %q\nwant it to start %q", *res.Error, start)
				}
			} else if *res.Error != c.err {
				t.Errorf("error %q\nwant %q", *res.Error, c.err)
			}
			if now, _ := w.Get("index.js"); now != "a\nb\n" || len(w.Paths()) != 1 {
				t.Errorf("an error result changed the workspace: %q, %q", now, w.Paths())
			}
		})
	}
}
