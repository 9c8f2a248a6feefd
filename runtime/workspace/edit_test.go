package workspace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

func txt(s string) *string { return &s }

func rep(line int, text string) LineEdit { return LineEdit{Op: OpReplace, Line: line, Text: txt(text)} }
func ins(line int, text string) LineEdit { return LineEdit{Op: OpInsert, Line: line, Text: txt(text)} }
func insBefore(line int, text string) LineEdit {
	return LineEdit{Op: OpInsert, Line: line, Text: txt(text), Position: Before}
}
func del(line int) LineEdit { return LineEdit{Op: OpDelete, Line: line} }

const five = "a\nb\nc\nd\ne\n"

// numberedLines is "l1\nl2\n...\lN\n".
func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func upTo(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("l%d", i))
	}
	return out
}

type editCase struct {
	name    string
	content string
	edits   []LineEdit
	want    string
	diffs   []Diff
	last    int
	err     string // the exact error; the file must then be unchanged
}

var editCases = []editCase{
	{
		name: "replace", content: five, edits: []LineEdit{rep(2, "B")},
		want:  "a\nB\nc\nd\ne\n",
		diffs: []Diff{{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{"B"}}},
		last:  2,
	},
	{
		name: "insert goes after by default", content: five, edits: []LineEdit{ins(2, "x")},
		want:  "a\nb\nx\nc\nd\ne\n",
		diffs: []Diff{{Op: "insert", Line: 2, Position: "after", Added: []string{"x"}}},
		last:  3,
	},
	{
		name: "insert before the first line", content: five, edits: []LineEdit{insBefore(1, "x")},
		want:  "x\na\nb\nc\nd\ne\n",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "before", Added: []string{"x"}}},
		last:  1,
	},
	{
		name: "insert after the last line", content: five, edits: []LineEdit{{Op: "insert", Line: 5, Text: txt("f"), Position: "after"}},
		want:  "a\nb\nc\nd\ne\nf\n",
		diffs: []Diff{{Op: "insert", Line: 5, Position: "after", Added: []string{"f"}}},
		last:  6,
	},
	{
		name: "delete", content: five, edits: []LineEdit{del(3)},
		want:  "a\nb\nd\ne\n",
		diffs: []Diff{{Op: "delete", Line: 3, Removed: []string{"c"}}},
		last:  3,
	},
	{
		name: "delete the last line", content: five, edits: []LineEdit{del(5)},
		want:  "a\nb\nc\nd\n",
		diffs: []Diff{{Op: "delete", Line: 5, Removed: []string{"e"}}},
		last:  4,
	},
	{
		name: "edits in any order name the original lines", content: five,
		edits: []LineEdit{ins(2, "x"), del(1), rep(5, "E"), insBefore(4, "y")},
		want:  "b\nx\nc\ny\nd\nE\n",
		diffs: []Diff{
			{Op: "insert", Line: 2, Position: "after", Added: []string{"x"}},
			{Op: "delete", Line: 1, Removed: []string{"a"}},
			{Op: "replace", Line: 5, Removed: []string{"e"}, Added: []string{"E"}},
			{Op: "insert", Line: 4, Position: "before", Added: []string{"y"}},
		},
		last: 6,
	},
	{
		name: "the same edits reversed give the same file", content: five,
		edits: []LineEdit{insBefore(4, "y"), rep(5, "E"), del(1), ins(2, "x")},
		want:  "b\nx\nc\ny\nd\nE\n",
		diffs: []Diff{
			{Op: "insert", Line: 4, Position: "before", Added: []string{"y"}},
			{Op: "replace", Line: 5, Removed: []string{"e"}, Added: []string{"E"}},
			{Op: "delete", Line: 1, Removed: []string{"a"}},
			{Op: "insert", Line: 2, Position: "after", Added: []string{"x"}},
		},
		last: 6,
	},
	{
		name: "inserts around a replaced line keep their given order", content: five,
		edits: []LineEdit{ins(2, "q"), rep(2, "B"), insBefore(2, "p"), ins(2, "q2"), insBefore(2, "p2")},
		want:  "a\np\np2\nB\nq\nq2\nc\nd\ne\n",
		diffs: []Diff{
			{Op: "insert", Line: 2, Position: "after", Added: []string{"q"}},
			{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{"B"}},
			{Op: "insert", Line: 2, Position: "before", Added: []string{"p"}},
			{Op: "insert", Line: 2, Position: "after", Added: []string{"q2"}},
			{Op: "insert", Line: 2, Position: "before", Added: []string{"p2"}},
		},
		last: 6,
	},
	{
		name: "inserts around a deleted line", content: five,
		edits: []LineEdit{del(3), insBefore(3, "x"), ins(3, "y")},
		want:  "a\nb\nx\ny\nd\ne\n",
		diffs: []Diff{
			{Op: "delete", Line: 3, Removed: []string{"c"}},
			{Op: "insert", Line: 3, Position: "before", Added: []string{"x"}},
			{Op: "insert", Line: 3, Position: "after", Added: []string{"y"}},
		},
		last: 4,
	},
	{
		name: "multi-line text", content: five, edits: []LineEdit{rep(2, "x\ny\nz")},
		want:  "a\nx\ny\nz\nc\nd\ne\n",
		diffs: []Diff{{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{"x", "y", "z"}}},
		last:  4,
	},
	{
		name: "a final newline in text ends its last line", content: five, edits: []LineEdit{ins(1, "x\ny\n")},
		want:  "a\nx\ny\nb\nc\nd\ne\n",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "after", Added: []string{"x", "y"}}},
		last:  3,
	},
	{
		name: "empty text is one empty line", content: five, edits: []LineEdit{rep(3, "")},
		want:  "a\nb\n\nd\ne\n",
		diffs: []Diff{{Op: "replace", Line: 3, Removed: []string{"c"}, Added: []string{""}}},
		last:  3,
	},
	{
		name: "a long change is cut to 20 lines", content: five, edits: []LineEdit{rep(1, numberedLines(25))},
		want:  numberedLines(25) + "b\nc\nd\ne\n",
		diffs: []Diff{{Op: "replace", Line: 1, Removed: []string{"a"}, Added: append(upTo(20), "... 5 more lines")}},
		last:  25,
	},
	{
		name: "a line past the end", content: five, edits: []LineEdit{rep(42, "x")},
		err: "edit 1: line 42 is outside 1..5 of index.js; call open_file to see its lines\nthe edit was not applied",
	},
	{
		name: "line 0", content: five, edits: []LineEdit{del(0)},
		err: "edit 1: line 0 is outside 1..5 of index.js; call open_file to see its lines\nthe edit was not applied",
	},
	{
		name: "a negative line", content: five, edits: []LineEdit{insBefore(-1, "x")},
		err: "edit 1: line -1 is outside 1..5 of index.js; call open_file to see its lines\nthe edit was not applied",
	},
	{
		name: "every bad edit is named and none applied", content: five,
		edits: []LineEdit{
			rep(1, "x"),
			rep(9, "y"),
			{Op: "delete", Line: 2, Text: txt("z")},
			{Op: "move", Line: 1},
			{Op: "insert", Line: 1, Text: txt("x"), Position: "above"},
			{Op: "replace", Line: 3, Text: txt("x"), Position: "before"},
			{Op: "replace", Line: 4},
			{Line: 4},
		},
		err: "edit 2: line 9 is outside 1..5 of index.js; call open_file to see its lines\n" +
			"edit 3: delete takes no text; to change the line, use replace\n" +
			"edit 4: op \"move\" is not replace, insert or delete\n" +
			"edit 5: position \"above\" is not before or after\n" +
			"edit 6: position is only for insert; leave it out of replace\n" +
			"edit 7: replace needs text (the new lines)\n" +
			"edit 8: op is missing; use replace, insert or delete\n" +
			"none of the 8 edits was applied",
	},
	{
		name: "one line replaced or deleted twice", content: five,
		edits: []LineEdit{rep(2, "x"), del(2), rep(2, "y"), del(4), rep(4, "z")},
		err: "edit 2: line 2 is already replaced by edit 1; give each line at most one replace or delete\n" +
			"edit 3: line 2 is already replaced by edit 1; give each line at most one replace or delete\n" +
			"edit 5: line 4 is already deleted by edit 4; give each line at most one replace or delete\n" +
			"none of the 5 edits was applied",
	},
	{
		name: "insert into an empty file", content: "", edits: []LineEdit{ins(1, "x\ny")},
		want:  "x\ny\n",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "after", Added: []string{"x", "y"}}},
		last:  2,
	},
	{
		name: "insert at line 0 of an empty file", content: "", edits: []LineEdit{insBefore(0, "x")},
		want:  "x\n",
		diffs: []Diff{{Op: "insert", Line: 0, Position: "before", Added: []string{"x"}}},
		last:  1,
	},
	{
		name: "in an empty file before-inserts come first", content: "", edits: []LineEdit{ins(1, "c"), insBefore(1, "a"), ins(0, "d"), insBefore(1, "b")},
		want: "a\nb\nc\nd\n",
		diffs: []Diff{
			{Op: "insert", Line: 1, Position: "after", Added: []string{"c"}},
			{Op: "insert", Line: 1, Position: "before", Added: []string{"a"}},
			{Op: "insert", Line: 0, Position: "after", Added: []string{"d"}},
			{Op: "insert", Line: 1, Position: "before", Added: []string{"b"}},
		},
		last: 4,
	},
	{
		name: "replace in an empty file", content: "", edits: []LineEdit{rep(1, "x")},
		err: "edit 1: index.js is empty, so it has no line 1 to replace; insert at line 1 to add lines\nthe edit was not applied",
	},
	{
		name: "insert at line 2 of an empty file", content: "", edits: []LineEdit{ins(2, "x")},
		err: "edit 1: index.js is empty, so it has no line 2; insert at line 1 to add lines\nthe edit was not applied",
	},
	{
		name: "CRLF stays CRLF and text's CRLF is normalised", content: "a\r\nb\r\nc\r\n",
		edits: []LineEdit{rep(2, "B"), ins(3, "d\r\ne")},
		want:  "a\r\nB\r\nc\r\nd\r\ne\r\n",
		diffs: []Diff{
			{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{"B"}},
			{Op: "insert", Line: 3, Position: "after", Added: []string{"d", "e"}},
		},
		last: 5,
	},
	{
		name: "CRLF without a final newline, appended to", content: "a\r\nb", edits: []LineEdit{ins(2, "c")},
		want:  "a\r\nb\r\nc",
		diffs: []Diff{{Op: "insert", Line: 2, Position: "after", Added: []string{"c"}}},
		last:  3,
	},
	{
		name: "CRLF without a final newline, last line deleted", content: "a\r\nb\r\nc", edits: []LineEdit{del(3)},
		want:  "a\r\nb",
		diffs: []Diff{{Op: "delete", Line: 3, Removed: []string{"c"}}},
		last:  2,
	},
	{
		name: "CRLF without a final newline, an edited line becomes the last", content: "a\r\nb\r\nc",
		edits: []LineEdit{insBefore(2, "x"), del(3)},
		want:  "a\r\nx\r\nb",
		diffs: []Diff{
			{Op: "insert", Line: 2, Position: "before", Added: []string{"x"}},
			{Op: "delete", Line: 3, Removed: []string{"c"}},
		},
		last: 3,
	},
	{
		name: "a lone carriage return is kept but not shown", content: "a\rb\n", edits: []LineEdit{ins(1, "x\ry"), rep(1, "z\r")},
		want: "z\r\nx\ry\n",
		diffs: []Diff{
			{Op: "insert", Line: 1, Position: "after", Added: []string{"xy"}},
			{Op: "replace", Line: 1, Removed: []string{"ab"}, Added: []string{"z"}},
		},
		last: 2,
	},
	{
		name: "CRLF text into an LF file", content: "a\nb\n", edits: []LineEdit{ins(1, "x\r\ny")},
		want:  "a\nx\ny\nb\n",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "after", Added: []string{"x", "y"}}},
		last:  3,
	},
	{
		name: "mixed endings: new lines take the usual one, old lines keep theirs", content: "a\r\nb\nc\r\n", edits: []LineEdit{ins(1, "x")},
		want:  "a\r\nx\r\nb\nc\r\n",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "after", Added: []string{"x"}}},
		last:  2,
	},
	{
		name: "no final newline: replace the last line", content: "a\nb", edits: []LineEdit{rep(2, "B")},
		want:  "a\nB",
		diffs: []Diff{{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{"B"}}},
		last:  2,
	},
	{
		name: "no final newline: insert after the last line", content: "a\nb", edits: []LineEdit{ins(2, "c")},
		want:  "a\nb\nc",
		diffs: []Diff{{Op: "insert", Line: 2, Position: "after", Added: []string{"c"}}},
		last:  3,
	},
	{
		name: "no final newline: delete the last line", content: "a\nb", edits: []LineEdit{del(2)},
		want:  "a",
		diffs: []Diff{{Op: "delete", Line: 2, Removed: []string{"b"}}},
		last:  1,
	},
	{
		name: "no final newline: insert before the first line", content: "a\nb", edits: []LineEdit{insBefore(1, "x")},
		want:  "x\na\nb",
		diffs: []Diff{{Op: "insert", Line: 1, Position: "before", Added: []string{"x"}}},
		last:  1,
	},
	{
		name: "no final newline: an empty last line gains one", content: "a\nb", edits: []LineEdit{rep(2, "")},
		want:  "a\n\n",
		diffs: []Diff{{Op: "replace", Line: 2, Removed: []string{"b"}, Added: []string{""}}},
		last:  2,
	},
	{
		name: "no final newline: a deletion leaving an empty last line", content: "a\n\nb", edits: []LineEdit{del(3)},
		want:  "a\n\n",
		diffs: []Diff{{Op: "delete", Line: 3, Removed: []string{"b"}}},
		last:  2,
	},
	{
		name: "no final newline: deleting the last line after an empty one", content: "a\n\nb\nc", edits: []LineEdit{rep(1, "A"), del(4)},
		want: "A\n\nb",
		diffs: []Diff{
			{Op: "replace", Line: 1, Removed: []string{"a"}, Added: []string{"A"}},
			{Op: "delete", Line: 4, Removed: []string{"c"}},
		},
		last: 3,
	},
	{
		name: "no final newline: a copied empty line becomes the last", content: "a\nb\n\nc", edits: []LineEdit{rep(1, "A"), del(4)},
		want: "A\nb\n\n",
		diffs: []Diff{
			{Op: "replace", Line: 1, Removed: []string{"a"}, Added: []string{"A"}},
			{Op: "delete", Line: 4, Removed: []string{"c"}},
		},
		last: 3,
	},
	{
		name: "delete every line", content: "a\nb\n", edits: []LineEdit{del(2), del(1)},
		want: "",
		diffs: []Diff{
			{Op: "delete", Line: 2, Removed: []string{"b"}},
			{Op: "delete", Line: 1, Removed: []string{"a"}},
		},
		last: 0,
	},
	{
		name: "a lone newline is one empty line", content: "\n", edits: []LineEdit{rep(1, "x")},
		want:  "x\n",
		diffs: []Diff{{Op: "replace", Line: 1, Removed: []string{""}, Added: []string{"x"}}},
		last:  1,
	},
}

func TestLineEdits(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.name, func(t *testing.T) {
			w := New("")
			if err := w.Put("index.js", c.content); err != nil {
				t.Fatal(err)
			}
			res, err := w.Write(WriteParams{Path: "index.js", LineEdits: c.edits})
			got, _ := w.Get("index.js")
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error:\n%v\nwant:\n%s", err, c.err)
				}
				if got != c.content || w.LastEdit("index.js") != 0 {
					t.Fatalf("a refused write changed the file to %q (last edit %d)", got, w.LastEdit("index.js"))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("content %q, want %q", got, c.want)
			}
			want := WriteResult{OK: true, Mode: "lineEdits", Path: "index.js", Diffs: c.diffs, Lines: countLines(c.want)}
			if d := gocmp.Diff(want, res); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if n := w.LastEdit("index.js"); n != c.last {
				t.Errorf("last edit %d, want %d", n, c.last)
			}
			if ref := descending(displayLines(c.content), c.edits); !slices.Equal(displayLines(got), ref) {
				t.Errorf("lines %q, but applying the edits from the highest line down gives %q", displayLines(got), ref)
			}
		})
	}
}

// displayLines is content split into lines as open_file shows them.
func displayLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, "\r", "")
	}
	return lines
}

// descending is the specification the one-pass walk must equal: the
// edits applied one at a time to a slice, from the highest line down (at
// one line: after-inserts, then the replace or delete, then
// before-inserts, each last given first), so no edit moves a line a
// later one names.
func descending(lines []string, edits []LineEdit) []string {
	type item struct {
		e       LineEdit
		i, kind int
	}
	empty := len(lines) == 0
	items := make([]item, len(edits))
	for i, e := range edits {
		if empty {
			e.Line = 1 // an empty file takes inserts at line 0 or 1 alike
		}
		k := 1
		if e.Op == OpInsert {
			k = 2
			if e.Position == Before {
				k = 0
			}
		}
		items[i] = item{e, i, k}
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(b.e.Line, a.e.Line), cmp.Compare(b.kind, a.kind), cmp.Compare(b.i, a.i))
	})
	out := slices.Clone(lines)
	for _, it := range items {
		var text []string
		if it.e.Text != nil {
			t := strings.ReplaceAll(*it.e.Text, "\r\n", "\n")
			text = strings.Split(strings.TrimSuffix(t, "\n"), "\n")
			for i, l := range text {
				text[i] = strings.ReplaceAll(l, "\r", "")
			}
		}
		at := it.e.Line - 1
		switch {
		case empty:
			out = slices.Insert(out, 0, text...)
		case it.kind == 2:
			out = slices.Insert(out, at+1, text...)
		case it.kind == 0:
			out = slices.Insert(out, at, text...)
		case it.e.Op == OpDelete:
			out = slices.Delete(out, at, at+1)
		default:
			out = slices.Replace(out, at, at+1, text...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func TestReplace(t *testing.T) {
	for _, c := range []struct {
		name      string
		old, new  string
		create    bool
		diffs     []Diff
		last      int
		lastStays bool
	}{
		{
			name: "create", create: true, new: "a\nb\n",
			diffs: []Diff{{Op: "insert", Line: 1, Position: "before", Added: []string{"a", "b"}}},
			last:  2,
		},
		{name: "identical", old: "a\nb\n", new: "a\nb\n", diffs: []Diff{}, lastStays: true},
		{
			name: "change the middle", old: "a\nb\nc\nd\n", new: "a\nX\nY\nd\n",
			diffs: []Diff{{Op: "replace", Line: 2, Removed: []string{"b", "c"}, Added: []string{"X", "Y"}}},
			last:  3,
		},
		{
			name: "append", old: "a\nb\n", new: "a\nb\nc\n",
			diffs: []Diff{{Op: "insert", Line: 2, Position: "after", Added: []string{"c"}}},
			last:  3,
		},
		{
			name: "prepend", old: "a\n", new: "z\na\n",
			diffs: []Diff{{Op: "insert", Line: 1, Position: "before", Added: []string{"z"}}},
			last:  1,
		},
		{
			name: "delete the middle", old: "a\nb\nc\n", new: "a\nc\n",
			diffs: []Diff{{Op: "delete", Line: 2, Removed: []string{"b"}}},
			last:  2,
		},
		{
			name: "delete a repeated line", old: "a\na\n", new: "a\n",
			diffs: []Diff{{Op: "delete", Line: 2, Removed: []string{"a"}}},
			last:  1,
		},
		{
			name: "empty the file", old: "a\n", new: "",
			diffs: []Diff{{Op: "delete", Line: 1, Removed: []string{"a"}}},
			last:  0,
		},
		{name: "line endings alone", old: "a\nb\n", new: "a\r\nb\r\n", diffs: []Diff{}, lastStays: true},
		{name: "final newline alone", old: "a\nb\n", new: "a\nb", diffs: []Diff{}, lastStays: true},
		{
			name: "a long change is cut to 20 lines", old: "l1\n", new: numberedLines(30),
			diffs: []Diff{{Op: "insert", Line: 1, Position: "after", Added: append(upTo(21)[1:], "... 9 more lines")}},
			last:  30,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := New("")
			if !c.create {
				if err := w.Put("index.js", c.old); err != nil {
					t.Fatal(err)
				}
				// A cursor from an earlier edit, to see whether it moves.
				w.files["index.js"].lastEdit = 7
			}
			res, err := w.Write(WriteParams{Path: "/workspace/index.js", Content: txt(c.new)})
			if err != nil {
				t.Fatal(err)
			}
			want := WriteResult{OK: true, Mode: "replace", Path: "index.js", Diffs: c.diffs, Lines: countLines(c.new)}
			if d := gocmp.Diff(want, res); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if res.Diffs == nil {
				t.Error("diffs are nil; they must encode as []")
			}
			if got, _ := w.Get("index.js"); got != c.new {
				t.Errorf("content %q, want %q", got, c.new)
			}
			last := c.last
			if c.lastStays {
				last = 7
			}
			if n := w.LastEdit("index.js"); n != last {
				t.Errorf("last edit %d, want %d", n, last)
			}
			if w.Active() != "index.js" {
				t.Errorf("active %q", w.Active())
			}
		})
	}
}
