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
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList collects every problem found while loading a pack so authors
// fix them all in one pass instead of one per run.
type ErrorList []*Error

func (l *ErrorList) add(p Pos, format string, args ...any) {
	switch {
	case len(*l) < maxErrors:
		*l = append(*l, &Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
	case len(*l) == maxErrors:
		// A list this long is one mistake repeated; a bound keeps a large
		// broken file from costing memory without end.
		*l = append(*l, &Error{Pos: p, Msg: fmt.Sprintf("more than %d problems; fix these first", maxErrors)})
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

// sorted orders errors by file and position and drops exact duplicates, so
// output is stable no matter which check found a problem first.
func (l ErrorList) sorted() ErrorList {
	out := slices.Clone(l)
	slices.SortStableFunc(out, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
		)
	})
	return slices.CompactFunc(out, func(a, b *Error) bool { return *a == *b })
}

// Err returns nil for an empty list, so callers can `return errs.Err()`.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}
