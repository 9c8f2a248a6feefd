package workspace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzWrite feeds write_file arbitrary parameters for a workspace holding
// arbitrary content. Whatever the bytes, Call must answer JSON without
// panicking; an error must leave every file as it was; a successful line
// edit must change the line count by exactly what it inserted and
// deleted, and agree with applying the edits from the highest line down.
func FuzzWrite(f *testing.F) {
	for _, c := range editCases {
		params, err := json.Marshal(WriteParams{Path: "index.js", LineEdits: c.edits})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c.content, params)
	}
	f.Add(five, []byte(`{"path":"/workspace/src/a.js","content":"x\r\ny"}`))
	f.Add(five, []byte(`{"content":"a\nX\nc\n"}`))
	f.Add("a\r\nb", []byte(`{"lineEdits":[{"op":"insert","line":1,"text":"x\r\n","position":"before"},{"op":"delete","line":2}]}`))
	f.Add("", []byte(`{"path":"../x","lineEdits":[{"op":"insert","line":0,"text":""}]}`))

	f.Fuzz(func(t *testing.T, content string, params []byte) {
		w := New("")
		if err := w.Put("index.js", content); err != nil {
			return // too big to be a file
		}
		if err := w.Put("src/a.js", "one\ntwo\n"); err != nil {
			t.Fatal(err)
		}
		before := map[string]string{"index.js": content, "src/a.js": "one\ntwo\n"}

		out, isError := w.Call("write", params)
		if !json.Valid(out) {
			t.Fatalf("not JSON: %q", out)
		}
		if isError {
			for p, c := range before {
				if now, _ := w.Get(p); now != c {
					t.Fatalf("an error result changed %s from %q to %q: %s", p, c, now, out)
				}
			}
			if !slices.Equal(w.Paths(), []string{"index.js", "src/a.js"}) {
				t.Fatalf("an error result changed the files to %q", w.Paths())
			}
			return
		}

		var res WriteResult
		if err := json.Unmarshal(out, &res); err != nil || !res.OK {
			t.Fatalf("bad result %s: %v", out, err)
		}
		now, ok := w.Get(res.Path)
		if !ok {
			t.Fatalf("the result names %q, which is not there", res.Path)
		}
		if n := countLines(now); n != res.Lines {
			t.Fatalf("result says %d lines, the file has %d", res.Lines, n)
		}
		if r, err := w.Open(res.Path); err != nil || r.Lines != res.Lines || strings.Contains(r.Content, "\r") {
			t.Fatalf("open after write: %+v, %v", r, err)
		}
		for _, p := range w.Paths() {
			if rel, err := w.Resolve(p); err != nil || rel != p {
				t.Fatalf("stored path %q does not resolve to itself: %q, %v", p, rel, err)
			}
			if c, ok := before[p]; ok && p != res.Path {
				if got, _ := w.Get(p); got != c {
					t.Fatalf("writing %s changed %s", res.Path, p)
				}
			}
		}
		if res.Mode != ModeLineEdits {
			return
		}

		var p WriteParams
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("accepted parameters do not decode: %v", err)
		}
		old := before[res.Path]
		want := countLines(old)
		for _, e := range p.LineEdits {
			if e.Text != nil {
				want += len(textLines(*e.Text))
			}
			if e.Op != OpInsert {
				want--
			}
		}
		if res.Lines != want {
			t.Fatalf("%d lines, want %d = old + inserted - deleted\nold %q\nedits %s\nnew %q", res.Lines, want, old, params, now)
		}
		if ref := descending(displayLines(old), p.LineEdits); !slices.Equal(displayLines(now), ref) {
			t.Fatalf("lines %q, descending order gives %q", displayLines(now), ref)
		}
		if len(res.Diffs) != len(p.LineEdits) {
			t.Fatalf("%d diffs for %d edits", len(res.Diffs), len(p.LineEdits))
		}
		if l := w.LastEdit(res.Path); l < 0 || l > res.Lines {
			t.Fatalf("last edit %d outside 0..%d", l, res.Lines)
		}
	})
}

func bench500() (*Workspace, []LineEdit) {
	w := New("")
	var b strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "    const value%d = compute(%d, options); // line %d\n", i, i, i)
	}
	if err := w.Put("index.js", b.String()); err != nil {
		panic(err)
	}
	// Ten replaces, five inserts and five deletes spread over the file, so
	// the file keeps 500 lines from one iteration to the next.
	var edits []LineEdit
	for i := range 10 {
		edits = append(edits, rep(490-i*48, fmt.Sprintf("    const changed%d = 1;", i)))
	}
	for i := range 5 {
		edits = append(edits, ins(7+i*97, "    log(value);"), del(30+i*97))
	}
	return w, edits
}

// BenchmarkLineEdits applies 20 line edits to a 500-line file.
func BenchmarkLineEdits(b *testing.B) {
	w, edits := bench500()
	p := WriteParams{Path: "index.js", LineEdits: edits}
	for b.Loop() {
		if _, err := w.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen opens a 500-line file as open_file returns it.
func BenchmarkOpen(b *testing.B) {
	w, _ := bench500()
	for b.Loop() {
		if _, err := w.Open("index.js"); err != nil {
			b.Fatal(err)
		}
	}
}
