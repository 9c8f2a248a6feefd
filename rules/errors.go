package rules

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pos is a position in a pack file. Model types embed it so that every
// semantic check can point an author at the exact line and column.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// Error is one problem in a pack, anchored at a position.
type Error struct {
	Pos Pos
	Msg string
	// cause is set on a root cause: a problem that leaves part of the
	// pack unknown (a file that could not be read, a section that was
	// dropped, a constant that cannot be used). It names what is unknown:
	// a section name, a "constant:NAME", or causeAll for anything at all.
	cause string
	// needs is set on a knock-on error: the causes, separated by spaces,
	// of which a root cause (or one with causeAll) explains it, such as an
	// unknown role when a file that may define roles is missing. Fixing
	// the root cause fixes it or shows it again, so it is not listed
	// beside one.
	needs string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// causeAll is the cause of a problem that may have lost any definition: a
// missing or unreadable file could have held any section.
const causeAll = "*"

// explains reports whether root cause e accounts for knock-on error k.
func (e *Error) explains(k *Error) bool {
	if e.cause == "" || k.needs == "" {
		return false
	}
	return e.cause == causeAll || slices.Contains(strings.Fields(k.needs), e.cause)
}

// ErrorList collects every problem found while loading a pack so authors
// fix them all in one pass instead of one per run. Root causes come first;
// knock-on errors that a root cause explains are left out, and every other
// problem is still listed.
type ErrorList []*Error

// add records an independent problem.
func (l *ErrorList) add(p Pos, format string, args ...any) {
	l.push(&Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// addRoot records a root cause that leaves cause unknown.
func (l *ErrorList) addRoot(p Pos, cause, format string, args ...any) {
	l.push(&Error{Pos: p, Msg: fmt.Sprintf(format, args...), cause: cause})
}

// addNeeds records a problem that a root cause leaving needs unknown
// would explain.
func (l *ErrorList) addNeeds(p Pos, needs, format string, args ...any) {
	l.push(&Error{Pos: p, Msg: fmt.Sprintf(format, args...), needs: needs})
}

// markRoots makes the problems recorded from index from on root causes:
// what made a file unreadable is only known to be one once the file is
// dropped.
func (l ErrorList) markRoots(from int, cause string) {
	for _, e := range l[from:] {
		e.cause, e.needs = cause, ""
	}
}

func (l *ErrorList) push(e *Error) {
	if e.needs != "" && slices.ContainsFunc(*l, func(r *Error) bool { return r.explains(e) }) {
		// Dropped now rather than when listed, so that knock-ons cannot
		// fill the bound below and crowd out independent problems.
		return
	}
	switch {
	case len(*l) < maxErrors:
		*l = append(*l, e)
	case len(*l) == maxErrors:
		// A list this long is one mistake repeated; a bound keeps a large
		// broken file from costing memory without end.
		*l = append(*l, &Error{Pos: e.Pos, Msg: fmt.Sprintf("more than %d problems; fix these first", maxErrors)})
	}
}

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// sorted lists root causes first, then every other problem, each group by
// file and position; it drops knock-on errors a root cause explains (one
// found before its root cause was) and exact duplicates, so output is
// stable no matter which check found a problem first.
func (l ErrorList) sorted() ErrorList {
	var roots ErrorList
	for _, e := range l {
		if e.cause != "" {
			roots = append(roots, e)
		}
	}
	out := slices.DeleteFunc(slices.Clone(l), func(k *Error) bool {
		return slices.ContainsFunc(roots, func(r *Error) bool { return r.explains(k) })
	})
	slices.SortStableFunc(out, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(rank(a), rank(b)),
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
		)
	})
	return slices.CompactFunc(out, func(a, b *Error) bool { return *a == *b })
}

// rank puts root causes before the problems they may have caused.
func rank(e *Error) int {
	if e.cause != "" {
		return 0
	}
	return 1
}

// Err returns nil for an empty list, so callers can `return errs.Err()`.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}
