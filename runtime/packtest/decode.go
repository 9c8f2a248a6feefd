package packtest

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/batonhq/baton/rules"
)

// A case file is decoded by rules.DecodeFile, the pack loader's decoder, so
// it reads like the pack it tests and its author sees every problem at
// once, each at its file:line:col. What is checked here is what a case adds
// to its shape: times that parse, events given one way and going forward.

func readCase(fsys fs.FS, name string) (*Case, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	c := Case{file: name}
	var errs rules.ErrorList
	if err := rules.DecodeFile(name, data, &c); err != nil && !errors.As(err, &errs) {
		return nil, err
	}
	if len(errs) == 0 && c.Line == 0 {
		return nil, fmt.Errorf("%s: empty test case", name)
	}
	errs = append(errs, c.check()...)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return &c, nil
}

// check converts the inline events and parses the match times now, so a
// mistake in them is reported with the file's other problems, at its line,
// rather than when the case runs.
func (c *Case) check() rules.ErrorList {
	var errs rules.ErrorList
	add := func(p rules.Pos, format string, args ...any) {
		errs = append(errs, &rules.Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
	}
	if c.EventsFile != "" && len(c.Events.Val) > 0 {
		add(c.Events.Key, "give events or events_file, not both")
	}
	last := int64(-1)
	for _, e := range c.Events.Val {
		if e.Bad {
			continue
		}
		ev, err := e.Val.Timed()
		if err != nil {
			add(e.Pos, "%v", err)
			continue
		}
		if ev.T < last {
			add(e.Pos, "time goes backwards (%s after %s)", rules.FormatClock(ev.T), rules.FormatClock(last))
		}
		last = ev.T
		c.timed = append(c.timed, ev)
	}
	for _, ms := range [][]Match{c.Expect, c.Forbid} {
		for i := range ms {
			ms[i].parseTimes(add)
		}
	}
	return errs
}

// parseTimes parses the match's times, reporting each bad one at its value;
// an unset time is -1.
func (m *Match) parseTimes(add func(p rules.Pos, format string, args ...any)) {
	for _, f := range []struct {
		key string
		src rules.At[string]
		dst *int64
	}{
		{"at", m.At, &m.at}, {"after", m.After, &m.after}, {"before", m.Before, &m.before},
		{"then_nothing_until", m.ThenNothingUntil, &m.until},
	} {
		*f.dst = -1
		if f.src.Val == "" {
			continue
		}
		t, err := rules.ParseDuration(f.src.Val)
		if err != nil {
			add(f.src.Pos, "%s: %v", f.key, err)
		}
		*f.dst = t
	}
}
