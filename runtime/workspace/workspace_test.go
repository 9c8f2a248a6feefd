package workspace

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func twoFiles(t *testing.T, root string) *Workspace {
	t.Helper()
	w := New(root)
	for _, p := range []string{"src/a.js", "index.js"} {
		if err := w.Put(p, "x\n"); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestResolve(t *testing.T) {
	const files = "files in /workspace: index.js, src/a.js"
	for _, c := range []struct {
		in, want string
		err      string // a part of the error, which must also list files
	}{
		{in: "index.js", want: "index.js"},
		{in: "./src/a.js", want: "src/a.js"},
		{in: "/workspace/index.js", want: "index.js"},
		{in: "/workspace/./src/a.js", want: "src/a.js"},
		{in: "new/file.go", want: "new/file.go"},
		{in: "a.js.", want: "a.js."},
		{in: ".env", want: ".env"},
		{in: strings.Repeat("a", MaxPathBytes), want: strings.Repeat("a", MaxPathBytes)},

		{in: "/etc/passwd", err: `the path "/etc/passwd" is outside /workspace; only files in /workspace can be opened or written`},
		{in: "/workspace2/x", err: `the path "/workspace2/x" is outside /workspace`},
		{in: "/workspacex", err: `the path "/workspacex" is outside /workspace`},
		{in: "/", err: `the path "/" is outside /workspace`},
		{in: "../index.js", err: `the path "../index.js" contains ..; name files from /workspace down`},
		{in: "src/../index.js", err: `contains ..`},
		{in: "/workspace/../workspace/index.js", err: `contains ..`},
		{in: "/workspace/..", err: `contains ..`},
		{in: "..", err: `contains ..`},
		{in: `src\a.js`, err: `contains a backslash; separate folders with /`},
		{in: `..\..\etc\passwd`, err: `contains a backslash`},
		{in: "a\x00b", err: `the path "a\x00b" contains the control character U+0000`},
		{in: "a\nb", err: `contains the control character U+000A`},
		{in: "a\x7f", err: `contains the control character U+007F`},
		{in: "a\u202egp.js", err: `contains the control character U+202E`},
		{in: "\xff.js", err: `is not valid UTF-8`},
		{in: "~/index.js", err: `contains ~; there is no home folder, only /workspace`},
		{in: "~root", err: `contains ~`},
		{in: "src//a.js", err: `has an empty or . part or ends in /`},
		{in: "src/./a.js", err: `has an empty or . part`},
		{in: "././index.js", err: `has an empty or . part`},
		{in: "src/", err: `ends in /`},
		{in: "/workspace//etc/passwd", err: `has an empty or . part`},
		{in: "/workspace", err: `the path "/workspace" is the folder /workspace itself; name a file in it`},
		{in: "/workspace/", err: `is the folder /workspace itself`},
		{in: "/workspace/.", err: `is the folder /workspace itself`},
		{in: ".", err: `is the folder /workspace itself`},
		{in: "./", err: `is the folder /workspace itself`},
		{in: "", err: `the path is empty; give a file path such as index.js`},
		{in: strings.Repeat("a", MaxPathBytes+1), err: `the path is 257 bytes long; paths are at most 256 bytes`},
	} {
		t.Run(fmt.Sprintf("%q", c.in), func(t *testing.T) {
			w := twoFiles(t, "")
			got, err := w.Resolve(c.in)
			if c.err == "" {
				if err != nil || got != c.want {
					t.Fatalf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %q", got)
			}
			if !strings.Contains(err.Error(), c.err) || !strings.HasSuffix(err.Error(), files) {
				t.Fatalf("error %q\nwants %q and to end with %q", err, c.err, files)
			}
			// Every entry point refuses what Resolve refuses.
			if w.Put(c.in, "y") == nil || w.SetActive(c.in) == nil {
				t.Error("Put or SetActive accepted it")
			}
			// An empty path is the active file to the tools.
			if _, err := w.Open(c.in); err == nil && c.in != "" {
				t.Error("Open accepted it")
			}
			if _, err := w.Write(WriteParams{Path: c.in, LineEdits: []LineEdit{ins(1, "y")}}); err == nil && c.in != "" {
				t.Error("Write accepted it")
			}
			if _, ok := w.Get(c.in); ok || w.LastEdit(c.in) != 0 {
				t.Error("Get or LastEdit found it")
			}
			if p := w.Paths(); !slices.Equal(p, []string{"index.js", "src/a.js"}) {
				t.Errorf("files now %q", p)
			}
		})
	}
}

func TestOtherRoot(t *testing.T) {
	for _, c := range []struct {
		root, in, want, err string
	}{
		{root: "/srv/code/", in: "/srv/code/a.js", want: "a.js"},
		{root: "/srv/code", in: "a.js", want: "a.js"},
		{root: "/srv/code", in: "/workspace/a.js", err: `the path "/workspace/a.js" is outside /srv/code`},
		{root: "/srv/code", in: "/srv/code", err: `is the folder /srv/code itself`},
		{root: "/", in: "/a.js", want: "a.js"},
		{root: "/", in: "/", err: `is the folder / itself`},
	} {
		w := New(c.root)
		got, err := w.Resolve(c.in)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("root %s: %q: got %q, %v; want %q", c.root, c.in, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("root %s: %q: error %v, want %q", c.root, c.in, err, c.err)
		}
	}
}

func TestActive(t *testing.T) {
	var zero Workspace
	if _, err := zero.Open(""); err == nil || err.Error() != "no path was given and no file is open; give a path; /workspace has no files yet; write_file with content creates one" {
		t.Errorf("open with nothing open: %v", err)
	}
	if _, err := zero.Write(WriteParams{Content: txt("x")}); err == nil {
		t.Error("write with no path and no file open was accepted")
	}
	// The zero value works; the first file written becomes active.
	if _, err := zero.Write(WriteParams{Path: "b.js", Content: txt("b\n")}); err != nil {
		t.Fatal(err)
	}
	if err := zero.Put("a.js", "a\n"); err != nil {
		t.Fatal(err)
	}
	if zero.Active() != "b.js" {
		t.Errorf("active %q, want the first file, b.js", zero.Active())
	}
	if r, err := zero.Open(""); err != nil || r.Path != "b.js" || r.Content != "L1:b" {
		t.Errorf("open the active file: %+v, %v", r, err)
	}
	if err := zero.SetActive("/workspace/a.js"); err != nil || zero.Active() != "a.js" {
		t.Fatalf("SetActive: %v, active %q", err, zero.Active())
	}
	if _, err := zero.Write(WriteParams{LineEdits: []LineEdit{rep(1, "A")}}); err != nil {
		t.Fatal(err)
	}
	if a, _ := zero.Get("a.js"); a != "A\n" {
		t.Errorf("a write with no path went elsewhere: a.js is %q", a)
	}
	if r, _ := zero.Open("b.js"); zero.Active() != "a.js" || r.Path != "b.js" {
		t.Errorf("opening b.js made it active (%q) or missed it", zero.Active())
	}
	if err := zero.SetActive("c.js"); err == nil || err.Error() != "there is no file c.js in /workspace; files in /workspace: a.js, b.js" {
		t.Errorf("SetActive on a missing file: %v", err)
	}
	if zero.Active() != "a.js" {
		t.Errorf("a refused SetActive changed the active file to %q", zero.Active())
	}
}

func TestMissingFile(t *testing.T) {
	w := twoFiles(t, "")
	for _, c := range []struct {
		name string
		do   func() error
		want string
	}{
		{"open", func() error { _, err := w.Open("b.js"); return err },
			"there is no file b.js in /workspace; files in /workspace: index.js, src/a.js"},
		{"open a folder", func() error { _, err := w.Open("src"); return err },
			"there is no file src in /workspace; files in /workspace: index.js, src/a.js"},
		{"line edits", func() error {
			_, err := w.Write(WriteParams{Path: "b.js", LineEdits: []LineEdit{ins(1, "x")}})
			return err
		},
			"there is no file b.js in /workspace; lineEdits change an existing file; write_file with content creates one; files in /workspace: index.js, src/a.js"},
	} {
		if err := c.do(); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
	if _, ok := w.Get("b.js"); ok {
		t.Error("a line edit created b.js")
	}
}

func TestFileAndFolder(t *testing.T) {
	w := twoFiles(t, "")
	for _, c := range []struct{ path, err string }{
		{"index.js/x.js", "index.js is a file, so it cannot also be a folder holding index.js/x.js"},
		{"src", "src is a folder (it holds src/a.js), so it cannot also be a file"},
		{"src/a.js/b/c", "src/a.js is a file, so it cannot also be a folder holding src/a.js/b/c"},
	} {
		if err := w.Put(c.path, "y"); err == nil || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.path, err, c.err)
		}
	}
	for _, ok := range []string{"src/b/c.js", "src.js", "src-2/a.js", "index.js.map"} {
		if err := w.Put(ok, "y"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	want := []string{"index.js", "index.js.map", "src-2/a.js", "src.js", "src/a.js", "src/b/c.js"}
	if p := w.Paths(); !slices.Equal(p, want) {
		t.Errorf("paths %q, want %q", p, want)
	}
}

func TestLimits(t *testing.T) {
	t.Run("edits per call", func(t *testing.T) {
		w := New("")
		if err := w.Put("a.js", "x\n"); err != nil {
			t.Fatal(err)
		}
		edits := make([]LineEdit, MaxEdits+1)
		for i := range edits {
			edits[i] = ins(1, "y")
		}
		if _, err := w.Write(WriteParams{Path: "a.js", LineEdits: edits}); err == nil || err.Error() != "501 edits in one call; at most 500, so split them over several write_file calls" {
			t.Errorf("501 edits: %v", err)
		}
		if res, err := w.Write(WriteParams{Path: "a.js", LineEdits: edits[:MaxEdits]}); err != nil || res.Lines != 501 {
			t.Errorf("500 edits: %v, %d lines", err, res.Lines)
		}
	})
	t.Run("file size", func(t *testing.T) {
		w := New("")
		full := strings.Repeat("x", MaxFileBytes-2) + "\n"
		if err := w.Put("a.js", full); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(WriteParams{Path: "a.js", LineEdits: []LineEdit{ins(1, "yy")}}); err == nil || err.Error() != "a.js would be 1048578 bytes; a file holds at most 1048576 bytes (1 MiB)" {
			t.Errorf("an edit past 1 MiB: %v", err)
		}
		if got, _ := w.Get("a.js"); got != full {
			t.Error("a refused edit changed the file")
		}
		if res, err := w.Write(WriteParams{Path: "a.js", LineEdits: []LineEdit{ins(1, "")}}); err != nil || res.Lines != 2 {
			t.Errorf("an edit to exactly 1 MiB: %v", err)
		}
		big := strings.Repeat("x", MaxFileBytes+1)
		if _, err := w.Write(WriteParams{Path: "b.js", Content: &big}); err == nil {
			t.Error("content past 1 MiB was written")
		}
		if err := w.Put("b.js", big); err == nil {
			t.Error("Put past 1 MiB was accepted")
		}
		if _, ok := w.Get("b.js"); ok {
			t.Error("a refused write created b.js")
		}
	})
	t.Run("files", func(t *testing.T) {
		w := New("")
		for i := range MaxFiles {
			if err := w.Put(fmt.Sprintf("f%03d.js", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		err := w.Put("one-more.js", "")
		if err == nil || !strings.HasPrefix(err.Error(), "/workspace already holds 200 files, the most it takes; edit an existing file instead; files in /workspace: f000.js, f001.js,") ||
			!strings.HasSuffix(err.Error(), ", f019.js and 180 more") {
			t.Errorf("file 201: %v", err)
		}
		if _, err := w.Write(WriteParams{Path: "one-more.js", Content: txt("")}); err == nil {
			t.Error("write_file created file 201")
		}
		if _, err := w.Write(WriteParams{Path: "f199.js", Content: txt("x")}); err != nil {
			t.Errorf("rewriting a file of a full workspace: %v", err)
		}
		if n := len(w.Paths()); n != MaxFiles {
			t.Errorf("%d files", n)
		}
	})
}

func TestNumbered(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"a", "L1:a"},
		{"a\n", "L1:a"},
		{"a\nb", "L1:a\nL2:b"},
		{"\n", "L1:"},
		{"\n\n", "L1:\nL2:"},
		{"a\r\nb\r\n", "L1:a\nL2:b"},
		{"a\rb\r", "L1:ab"},
		{numberedLines(10), "L1:l1\nL2:l2\nL3:l3\nL4:l4\nL5:l5\nL6:l6\nL7:l7\nL8:l8\nL9:l9\nL10:l10"},
	} {
		if got := Numbered(c.in); got != c.want {
			t.Errorf("Numbered(%q) = %q, want %q", c.in, got, c.want)
		}
		if n, want := strings.Count(Numbered(c.in), "\nL")+1, countLines(c.in); c.in != "" && n != want {
			t.Errorf("Numbered(%q) shows %d lines, the file has %d", c.in, n, want)
		}
	}
}
