package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

// files are the session's context files (rules/context.go): one document
// per declared copy, written only through write and append actions, each
// write checked against the file's class. They are session state like
// any other, so a replay or a recovery rebuilds them exactly. Once the
// session has ended no action runs (Step refuses every input), so they
// are frozen as they stand and a host may archive them.
type files struct {
	docs []doc // by pack file slot
}

type doc struct {
	text   string
	writes int
	// at is when it was last written: -1 never, 0 for starting content.
	at int64
}

func (f *files) init(s *Session) {
	p := s.p
	slots := p.FileSlots()
	f.docs = make([]doc, len(slots))
	for i := range slots {
		d := &f.docs[i]
		d.text, d.at = slots[i].InitialOf(s.in), -1
		if d.text != "" {
			// Written when the session was created: it counts.
			d.writes, d.at = 1, 0
		}
	}
}

// write applies a write or append action for rule.
func (f *files) write(s *Session, rule string, a *rules.WriteAction, op rules.FileOp) {
	role := ""
	if a.Role.Set() {
		r, ok := s.evalString(&a.Role, rule)
		if !ok {
			return
		}
		role = r
	}
	id := a.File
	slot, ok := s.p.FileSlot(id, role)
	if !ok {
		s.note(rule, fmt.Sprintf("%s %s at %s: role %q has no copy of it (it is kept for %s); check the role: expression", op, id, a.Pos, role, strings.Join(a.Target().Roles, ", ")))
		return
	}
	text := s.render(&a.Text, role)
	fs := &s.p.FileSlots()[slot]
	d := &f.docs[slot]
	refuse := func(why string) {
		data, _ := json.Marshal(map[string]any{"path": fs.Path, "class": fs.File.Class.String(), "op": op.String()})
		s.emit(Effect{Type: EffectContextViolation, Agent: role, Kind: fs.File.Class.String(), Rule: rule, Text: fs.Path,
			Reason: op.String() + " " + fs.Path + " refused: " + why, Data: data})
	}
	if why := fs.File.Refuses(op, d.writes); why != "" {
		refuse(why)
		return
	}
	if text == "" && (op == rules.OpAppend || fs.File.Class != rules.ClassOverwrite) {
		// Most likely a template whose value was missing: it would add
		// nothing, or use up one of the file's writes on nothing.
		refuse("the text is empty; only an overwrite file may be cleared")
		return
	}
	next := text
	if op == rules.OpAppend && d.text != "" {
		sep := ""
		if !strings.HasSuffix(d.text, "\n") {
			sep = "\n"
		}
		next = d.text + sep + text
	}
	if len(next) > rules.MaxContextFile {
		refuse(fmt.Sprintf("it would hold %d bytes, over the %d a context file may hold", len(next), rules.MaxContextFile))
		return
	}
	d.text, d.writes, d.at = next, d.writes+1, s.now
	data, _ := json.Marshal(FileWritten{Text: text, Chars: len(next), Writes: d.writes})
	s.emit(Effect{Type: EffectContext, Agent: role, Kind: op.String(), Rule: rule, Text: fs.Path, Data: data})
}

// FileWritten is a context effect's data: what was written, and the
// file's size and write count after it.
type FileWritten struct {
	Text   string `json:"text"`
	Chars  int    `json:"chars"`
	Writes int    `json:"writes"`
}

// view is the file at path, for expressions.
func (s *Session) fileView(path string) (rules.FileView, error) {
	i, ok := s.p.FileByPath(path)
	if !ok {
		return rules.FileView{UpdatedMS: -1}, fmt.Errorf("no context file %q%s", path, rules.DidYouMean(path, s.p.FilePaths()))
	}
	st := s.fileState(i)
	return rules.FileView{Text: st.Text, Writes: st.Writes, UpdatedMS: st.UpdatedMS}, nil
}

// contextParts are the parts of a call's prompt that are not files but
// are laid out and budgeted like them: a sequence's history, rounds and
// round. words is the order used when the pack gives the role none;
// protected counts what the call carries whole (the exchange's prompt)
// but the budget counts.
type contextParts struct {
	words     []string
	text      func(part string) string
	starts    func(part string) []int
	protected int
}

// budgeted is one part of a call's context as the budget sees it.
type budgeted struct {
	id      string // the file's or part's name, as the trim list says it
	keep    int    // how much of it is sent
	keepEnd bool
	// starts, if set, are where the part's entries begin (exchanges,
	// rounds): a cut drops whole entries where it can.
	starts []int
}

// assemble lays out role's context for a model call, in its assembly's
// order: its context files, each cut to its max_chars, and the extra
// parts, if any; then, while the call is over llm.context_budget, the
// parts in the budget's trim order cut further. Empty parts are left
// out; the order is kept.
func (f *files) assemble(s *Session, role string, extra *contextParts) ([]string, []FilePart) {
	a := s.p.RoleAssembly(s.roleIdx(role))
	words, slots := a.Words, a.Slots
	if extra == nil && !a.HasFiles {
		return words, nil
	}
	if extra != nil && len(words) == 0 {
		words, slots = extra.words, nil
	}
	fileSlots := s.p.FileSlots()
	parts := make([]FilePart, 0, len(words))
	var metaBuf [16]budgeted
	meta := metaBuf[:0]
	total := 0
	for j, w := range words {
		var b budgeted
		var path, text string
		switch i := -1; {
		case slots != nil && slots[j] >= 0:
			i = slots[j]
			fs := &fileSlots[i]
			path, text = fs.Path, f.docs[i].text
			b = budgeted{id: fs.File.ID, keep: len(text), keepEnd: fs.File.KeepsEnd()}
			if m := fs.File.MaxChars; m > 0 && len(text) > m {
				b.keep = max(m-trimMarkLen(len(text)), 0)
			}
		case extra != nil && slices.Contains(rules.SequenceParts, w):
			path, text = "sequence/"+w, extra.text(w)
			// The newest of an exchange's context matters most.
			b = budgeted{id: w, keep: len(text), keepEnd: true, starts: extra.starts(w)}
		default:
			continue
		}
		if text == "" {
			continue
		}
		parts = append(parts, FilePart{Path: path, Text: text})
		meta = append(meta, b)
		total += sentLen(len(text), b.keep)
	}
	bud := &s.p.LLM.ContextBudget
	limit := bud.MaxChars
	if extra != nil {
		limit -= extra.protected
	}
	for _, id := range bud.Trim {
		if bud.MaxChars == 0 || total <= limit {
			break
		}
		for j := range parts {
			if meta[j].id != id {
				continue
			}
			n := len(parts[j].Text)
			before := sentLen(n, meta[j].keep)
			if want := before - (total - limit); want < n {
				meta[j].keep = min(meta[j].keep, max(want-trimMarkLen(n), 0))
			}
			total += sentLen(n, meta[j].keep) - before
		}
	}
	for j := range parts {
		p := &parts[j]
		if m := &meta[j]; m.keep < len(p.Text) {
			if len(m.starts) > 0 {
				p.Text, p.Trimmed = cutEntries(p.Text, m.keep, m.starts)
			} else {
				p.Text, p.Trimmed = cut(p.Text, m.keep, m.keepEnd)
			}
		}
	}
	return words, parts
}

// cutEntries keeps at most keep bytes of the end of text, dropping its
// oldest entries whole (starts are where each begins): half an exchange
// reads as if it had happened. When even the newest entry does not fit,
// it is cut like a file.
func cutEntries(text string, keep int, starts []int) (string, int) {
	for _, from := range starts {
		if from > 0 && from < len(text) && len(text)-from+trimMarkLen(from) <= keep {
			return trimMark(from) + "\n" + text[from:], from
		}
	}
	return cut(text, keep, true)
}

// trimMark says where a cut file lost text; its length is part of what a
// cut file sends.
func trimMark(n int) string { return "[... " + strconv.Itoa(n) + " bytes trimmed ...]" }

func trimMarkLen(n int) int { return len(trimMark(n)) + 1 }

// sentLen is the length of a file of n bytes sent with only keep of them:
// nothing at all when none is kept (the request still reports the cut).
func sentLen(n, keep int) int {
	switch {
	case keep >= n:
		return n
	case keep <= 0:
		return 0
	}
	return keep + trimMarkLen(n-keep)
}

// cut keeps at most keep bytes of text, from its start or its end, never
// splitting a character, and marks the cut. It prefers to cut at a line
// break near the cut, so an entry is not sent half, but never gives up
// more than half of what it may keep for that. It reports how much it
// left out.
func cut(text string, keep int, end bool) (string, int) {
	if keep <= 0 {
		return "", len(text)
	}
	snap := min(160, keep/2)
	if end {
		from := len(text) - keep
		for from < len(text) && !utf8.RuneStart(text[from]) {
			from++
		}
		if from == len(text) { // less than the last character fits
			return "", len(text)
		}
		// Already at a line's start, or find the next one (not the very
		// end: a trailing line break would leave nothing).
		if from > 0 && text[from-1] != '\n' && from < len(text)-1 {
			if nl := strings.IndexByte(text[from:min(from+snap, len(text)-1)], '\n'); nl >= 0 {
				from += nl + 1
			}
		}
		return trimMark(from) + "\n" + text[from:], from
	}
	to := keep
	for to > 0 && !utf8.RuneStart(text[to]) {
		to--
	}
	// text[to] is the first byte left out: a line break there means the
	// kept part ends a line already.
	if text[to] != '\n' {
		if lo := max(to-snap, 1); lo < to {
			if nl := strings.LastIndexByte(text[lo:to], '\n'); nl >= 0 {
				to = lo + nl
			}
		}
	}
	if to == 0 { // less than the first character fits
		return "", len(text)
	}
	return text[:to] + "\n" + trimMark(len(text)-to), len(text) - to
}

// filesFacade is the context files as a script sees them (arg.files),
// through the call's facade: empty once the call is over.
type filesFacade struct{ f *facade }

func (ff filesFacade) Keys() []string {
	if ff.f.s == nil {
		return nil
	}
	keys := ff.f.s.p.FilePaths()
	slices.Sort(keys)
	return keys
}

func (ff filesFacade) Field(path string) (any, bool) {
	s := ff.f.s
	if s == nil {
		return nil, false
	}
	i, ok := s.p.FileByPath(path)
	if !ok {
		return nil, false
	}
	st := s.fileState(i)
	return map[string]any{"text": st.Text, "writes": st.Writes, "updated_ms": st.UpdatedMS, "class": st.Class}, true
}

// ContextFileState is one context file copy as the session holds it.
type ContextFileState struct {
	Path      string `json:"path"`
	Class     string `json:"class"`
	Writes    int    `json:"writes"`
	UpdatedMS int64  `json:"updated_ms"`
	Text      string `json:"text"`
}

// ContextFiles lists the session's context files in declaration order
// (immutable ones included): what an archive of the session holds.
func (s *Session) ContextFiles() []ContextFileState {
	out := make([]ContextFileState, len(s.files.docs))
	for i := range out {
		out[i] = s.fileState(i)
	}
	return out
}

// fileState is file copy i as the session holds it: the one view
// expressions, scripts and archives are made from.
func (s *Session) fileState(i int) ContextFileState {
	d, slot := &s.files.docs[i], &s.p.FileSlots()[i]
	return ContextFileState{Path: slot.Path, Class: slot.File.Class.String(), Writes: d.writes, UpdatedMS: d.at, Text: d.text}
}
