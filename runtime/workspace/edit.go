package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// WriteParams are write_file's parameters: exactly one of Content (the
// whole file) and LineEdits. Path "" means the active file.
type WriteParams struct {
	Path      string     `json:"path,omitempty"`
	Content   *string    `json:"content,omitempty"`
	LineEdits []LineEdit `json:"lineEdits,omitempty"`
}

// LineEdit is one edit of a write_file call. Line is 1-based in the file
// as it was before the call.
type LineEdit struct {
	Op       string  `json:"op"`
	Line     int     `json:"line"`
	Text     *string `json:"text,omitempty"`
	Position string  `json:"position,omitempty"`
}

// WriteResult is write_file's answer.
type WriteResult struct {
	OK    bool   `json:"ok"`
	Mode  string `json:"mode"`
	Path  string `json:"path"`
	Diffs []Diff `json:"diffs"`
	Lines int    `json:"lines"`
}

// Diff is what one edit (or, for a whole-file write, the one changed
// stretch) did: Line is in the file as it was before the call, Position
// says on which side of it an insert went. Removed and Added hold at most
// 20 lines and then "... N more lines".
type Diff struct {
	Op       string   `json:"op"`
	Line     int      `json:"line"`
	Position string   `json:"position,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Added    []string `json:"added,omitempty"`
}

// Write modes and edit operations, as the model spells them.
const (
	ModeReplace   = "replace"
	ModeLineEdits = "lineEdits"

	OpReplace = "replace"
	OpInsert  = "insert"
	OpDelete  = "delete"

	Before = "before"
	After  = "after"
)

// diffCap is how many lines a Diff shows of each side: enough to check
// an edit landed, short enough not to echo a whole file back.
const diffCap = 20

// Write executes write_file. On error nothing has changed.
func (w *Workspace) Write(p WriteParams) (WriteResult, error) {
	switch {
	case p.Content != nil && len(p.LineEdits) > 0:
		return WriteResult{}, errors.New("give either content (the whole file) or lineEdits, not both")
	case p.Content == nil && len(p.LineEdits) == 0:
		return WriteResult{}, errors.New("give content (the whole new file) or lineEdits (changes to some of its lines)")
	}
	rel, err := w.target(p.Path)
	if err != nil {
		return WriteResult{}, err
	}
	if p.Content != nil {
		return w.replace(rel, *p.Content)
	}
	return w.lineEdits(rel, p.LineEdits)
}

// replace writes a whole file; its diff is the one stretch between the
// common first and last lines of the old and new content.
func (w *Workspace) replace(rel, content string) (WriteResult, error) {
	if err := w.checkStore(rel, len(content)); err != nil {
		return WriteResult{}, err
	}
	var old string
	if f, ok := w.files[rel]; ok {
		old = f.content
	}
	diffs, last := wholeDiff(old, content)
	f := w.store(rel, content)
	if len(diffs) > 0 {
		f.lastEdit = last
	}
	return WriteResult{OK: true, Mode: ModeReplace, Path: rel, Diffs: diffs, Lines: countLines(content)}, nil
}

// wholeDiff compares old and next line by line, as the model sees them,
// and returns at most one hunk and the last new line it touches. A change
// only to line endings or the final newline shows no hunk.
func wholeDiff(old, next string) ([]Diff, int) {
	diffs := []Diff{}
	if old == next {
		return diffs, 0
	}
	a, b := splitLines(old), splitLines(next)
	pre := 0
	for pre < len(a) && pre < len(b) && display(a[pre]) == display(b[pre]) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && display(a[len(a)-1-suf]) == display(b[len(b)-1-suf]) {
		suf++
	}
	removed, added := a[pre:len(a)-suf], b[pre:len(b)-suf]
	d := Diff{Line: pre + 1, Removed: shown(removed), Added: shown(added)}
	var last int
	switch {
	case len(removed) == 0 && len(added) == 0:
		return diffs, 0
	case len(removed) == 0:
		d.Op = OpInsert
		if pre > 0 {
			d.Line, d.Position = pre, After
		} else {
			d.Position = Before
		}
		last = pre + len(added)
	case len(added) == 0:
		d.Op = OpDelete
		last = min(pre+1, len(b))
	default:
		d.Op = OpReplace
		last = pre + len(added)
	}
	return append(diffs, d), last
}

// shown is lines as a Diff lists them: without carriage returns, capped.
// It returns lines itself when they need no change.
func shown(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	if len(lines) <= diffCap && !slices.ContainsFunc(lines, hasCR) {
		return lines
	}
	n := min(len(lines), diffCap)
	out := make([]string, n, n+1)
	for i := range n {
		out[i] = display(lines[i])
	}
	if len(lines) > diffCap {
		out = append(out, "... "+strconv.Itoa(len(lines)-diffCap)+" more lines")
	}
	return out
}

// splitLines splits s into lines as open_file numbers them, each keeping
// the \r of its \r\n.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineEnding is the break new lines get: "\r\n" if most of the file's
// breaks are, else "\n".
func lineEnding(s string) string {
	if strings.Count(s, "\r\n")*2 > strings.Count(s, "\n") {
		return "\r\n"
	}
	return "\n"
}

// textLines splits an edit's text into lines: its \r\n become \n, and a
// final newline ends the last line rather than adding an empty one, so
// "a\n" is one line and "" is one empty line.
func textLines(text string) []string {
	if strings.IndexByte(text, '\r') >= 0 {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// Where an edit's lines go relative to its line; also the order in which
// the edits of one line are emitted.
const (
	kindBefore = iota
	kindSelf
	kindAfter
)

// step is a checked edit, ready to apply.
type step struct {
	idx  int // in the call, 0-based
	line int // 1-based in the original buffer; 1 for any insert into an empty file
	kind int
	del  bool
	text []string
}

// lineEdits applies edits to rel, all or nothing.
//
// Every edit names a line of the original buffer. The buffer is walked
// once; each edited line emits its before-inserts in the order given,
// then itself (kept, replaced or deleted), then its after-inserts in the
// order given, and the stretches between edited lines are copied whole.
// That is exactly what applying the edits one at a time from the highest
// line to the lowest gives (within one line: its after-inserts last
// first, then its replace or delete, then its before-inserts last
// first), since no edit then shifts a line a later edit names; the walk
// just does it in one pass instead of moving the tail of the buffer once
// per edit.
//
// Lines no edit touches keep their bytes, line break included; new lines
// take the file's usual break (see lineEnding). A file keeps its final
// newline or the lack of one, except that an edit leaving its last line
// empty adds one, since only a final newline can express an empty last
// line. An empty file counts as having a final newline, so lines
// inserted into it end like a text file's.
func (w *Workspace) lineEdits(rel string, edits []LineEdit) (WriteResult, error) {
	f, ok := w.files[rel]
	if !ok {
		return WriteResult{}, w.missing(rel, "lineEdits change an existing file; write_file with content creates one")
	}
	if len(edits) > MaxEdits {
		return WriteResult{}, fmt.Errorf("%d edits in one call; at most %d, so split them over several write_file calls", len(edits), MaxEdits)
	}
	src := f.content
	lines := countLines(src)
	steps, err := check(rel, lines, edits)
	if err != nil {
		return WriteResult{}, err
	}
	slices.SortFunc(steps, func(a, b step) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.kind, b.kind), cmp.Compare(a.idx, b.idx))
	})
	final := src == "" || src[len(src)-1] == '\n'
	ending := lineEnding(src)

	grow := len(src)
	for _, s := range steps {
		for _, l := range s.text {
			grow += len(l) + len(ending)
		}
	}
	var out strings.Builder
	out.Grow(grow)
	// n counts the lines written; lastTerm is the length of the last
	// one's break, lastEmpty whether it is empty, for the final newline.
	n, lastTerm, lastEmpty := 0, 0, false
	emit := func(line, term string) {
		out.WriteString(line)
		out.WriteString(term)
		n++
		lastTerm, lastEmpty = len(term), line == ""
	}
	copyLines := func(chunk string, count int) {
		if count == 0 {
			return
		}
		out.WriteString(chunk)
		n += count
		lastTerm = 1
		if strings.HasSuffix(chunk, "\r\n") {
			lastTerm = 2
		}
		body := chunk[:len(chunk)-lastTerm]
		lastEmpty = body == "" || body[len(body)-1] == '\n'
	}

	diffs := make([]Diff, len(edits))
	removed := make([]string, len(edits)) // one backing array for every Diff's Removed
	touched, gap := 0, 0                  // last new line an insert or replace wrote; first line after the last deletion
	apply := func(s step, line string) {
		e := edits[s.idx]
		d := Diff{Op: e.Op, Line: e.Line}
		switch s.kind {
		case kindBefore:
			d.Position = Before
		case kindAfter:
			d.Position = After
		default:
			removed[s.idx] = display(line)
			d.Removed = removed[s.idx : s.idx+1 : s.idx+1]
		}
		if s.del {
			gap = n + 1
		} else {
			for _, l := range s.text {
				emit(l, ending)
			}
			d.Added = shown(s.text)
			touched = n
		}
		diffs[s.idx] = d
	}

	pos, cur := 0, 1 // line cur of src starts at byte pos
	k := 0
	for k < len(steps) && lines > 0 {
		at := steps[k].line
		from := pos
		for range at - cur {
			pos += strings.IndexByte(src[pos:], '\n') + 1
		}
		copyLines(src[from:pos], at-cur)
		line, next := src[pos:], len(src)
		unterminated := true
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line, next, unterminated = line[:i], pos+i+1, false
		}
		for k < len(steps) && steps[k].line == at && steps[k].kind == kindBefore {
			apply(steps[k], line)
			k++
		}
		if k < len(steps) && steps[k].line == at && steps[k].kind == kindSelf {
			apply(steps[k], line)
			k++
		} else {
			switch {
			case unterminated:
				// The file's last line has no break of its own; it gets
				// one only if a line follows it.
				emit(line, ending)
			case strings.HasSuffix(line, "\r"):
				// Its own \r\n, kept whole so that if it becomes the last
				// line without a final newline, both bytes go.
				emit(line[:len(line)-1], "\r\n")
			default:
				emit(line, "\n")
			}
		}
		for k < len(steps) && steps[k].line == at {
			apply(steps[k], line)
			k++
		}
		pos, cur = next, at+1
	}
	for ; k < len(steps); k++ { // inserts into an empty file
		apply(steps[k], "")
	}
	tail := cur <= lines
	if tail {
		// The stretch after the last edited line ends the file as before.
		out.WriteString(src[pos:])
		n += lines - cur + 1
	}
	content := out.String()
	if !tail && !final && !lastEmpty && n > 0 {
		content = content[:len(content)-lastTerm]
	}
	if err := w.checkStore(rel, len(content)); err != nil {
		return WriteResult{}, err
	}
	f.content = content
	f.lastEdit = max(touched, min(gap, n))
	return WriteResult{OK: true, Mode: ModeLineEdits, Path: rel, Diffs: diffs, Lines: n}, nil
}

// check validates every edit against a buffer of n lines and returns them
// as steps, or one error naming every bad edit.
func check(rel string, n int, edits []LineEdit) ([]step, error) {
	steps := make([]step, 0, len(edits))
	var bad []string
	var owner map[int]int // line -> the edit replacing or deleting it
	for i, e := range edits {
		s, msg := checkOne(rel, n, e)
		if msg == "" && s.kind == kindSelf {
			if j, dup := owner[s.line]; dup {
				msg = fmt.Sprintf("line %d is already %s by edit %d; give each line at most one replace or delete", e.Line, pastTense(edits[j].Op), j+1)
			} else {
				if owner == nil {
					owner = map[int]int{}
				}
				owner[s.line] = i
			}
		}
		if msg != "" {
			bad = append(bad, "edit "+strconv.Itoa(i+1)+": "+msg)
			continue
		}
		s.idx = i
		steps = append(steps, s)
	}
	if bad == nil {
		return steps, nil
	}
	tail := "the edit was not applied"
	if len(edits) > 1 {
		tail = "none of the " + strconv.Itoa(len(edits)) + " edits was applied"
	}
	return nil, errors.New(strings.Join(bad, "\n") + "\n" + tail)
}

func pastTense(op string) string {
	if op == OpDelete {
		return "deleted"
	}
	return "replaced"
}

// checkOne checks one edit; msg says what is wrong with it.
func checkOne(rel string, n int, e LineEdit) (s step, msg string) {
	switch e.Op {
	case OpReplace, OpInsert:
		if e.Text == nil {
			return s, e.Op + " needs text (the new lines)"
		}
		s.text = textLines(*e.Text)
	case OpDelete:
		if e.Text != nil {
			return s, "delete takes no text; to change the line, use replace"
		}
		s.del = true
	case "":
		return s, "op is missing; use replace, insert or delete"
	default:
		return s, fmt.Sprintf("op %q is not replace, insert or delete", e.Op)
	}
	s.kind = kindSelf
	if e.Op == OpInsert {
		switch e.Position {
		case "", After:
			s.kind = kindAfter
		case Before:
			s.kind = kindBefore
		default:
			return s, fmt.Sprintf("position %q is not before or after", e.Position)
		}
	} else if e.Position != "" {
		return s, "position is only for insert; leave it out of " + e.Op
	}
	s.line = e.Line
	switch {
	case n == 0 && e.Op != OpInsert:
		return s, fmt.Sprintf("%s is empty, so it has no line %d to %s; insert at line 1 to add lines", rel, e.Line, e.Op)
	case n == 0 && e.Line != 0 && e.Line != 1:
		return s, fmt.Sprintf("%s is empty, so it has no line %d; insert at line 1 to add lines", rel, e.Line)
	case n == 0:
		s.line = 1
	case e.Line < 1 || e.Line > n:
		return s, fmt.Sprintf("line %d is outside 1..%d of %s; call open_file to see its lines", e.Line, n, rel)
	}
	return s, ""
}
