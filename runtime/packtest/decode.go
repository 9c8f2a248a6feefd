package packtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/sim"
)

// A case file is decoded by rules.DecodeFile, the pack loader's decoder, so
// it reads like the pack it tests and its author sees every problem at
// once, each at its file:line:col. What is checked here is what a case adds
// to its shape: times that parse, events the pack takes, given one way and
// going forward, and the files it names, read and checked as they will be
// played, each problem in them at its own line.

// Check loads every test case in p's tests/ folder and every file the
// cases or the pack name (events files, reply scripts, the pack's
// dryrun.candidate), and checks them as Run would before playing them,
// without running anything. The error is a rules.ErrorList of every
// problem, each at file:line:col, files named from the pack's root as
// rules.Load names them. A pack without tests has nothing to check here.
func Check(p *rules.Pack) error {
	fx := newFixtures(p)
	var errs rules.ErrorList
	if name := p.DryRun.Candidate; name != "" {
		if _, el, err := fx.events(name); err != nil {
			errs = append(errs, &rules.Error{Pos: rules.Pos{File: rules.PackFile}, Msg: fmt.Sprintf("dryrun.candidate: %v", err)})
		} else {
			errs = append(errs, el...)
		}
	}
	names, err := caseFiles(p)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := readCase(p, n, fx); err != nil {
			errs = append(errs, asList(n, err)...)
		}
	}
	// A case in a .yml file would never run, and nothing else would say so.
	if ents, err := fs.ReadDir(p.FS, Dir); err == nil {
		for _, e := range ents {
			if !e.IsDir() && path.Ext(e.Name()) == ".yml" {
				errs = append(errs, &rules.Error{Pos: rules.Pos{File: Dir + "/" + e.Name()},
					Msg: "not run: test cases are " + Dir + "/*.yaml"})
			}
		}
	}
	return errs.Err()
}

// caseFiles lists the pack's case files, sorted.
func caseFiles(p *rules.Pack) ([]string, error) {
	names, err := fs.Glob(p.FS, Dir+"/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// asList makes any error of reading a file a list of problems in it.
func asList(file string, err error) rules.ErrorList {
	var el rules.ErrorList
	if errors.As(err, &el) {
		return el
	}
	var e *rules.Error
	if errors.As(err, &e) {
		return rules.ErrorList{e}
	}
	return rules.ErrorList{{Pos: rules.Pos{File: file}, Msg: err.Error()}}
}

func readCase(p *rules.Pack, name string, fx *fixtures) (*Case, error) {
	data, err := fs.ReadFile(p.FS, name)
	if err != nil {
		return nil, err
	}
	c := Case{file: name}
	var errs rules.ErrorList
	if err := rules.DecodeFile(name, data, &c); err != nil && !errors.As(err, &errs) {
		return nil, err
	}
	if len(errs) == 0 && c.Line == 0 {
		return nil, &rules.Error{Pos: rules.Pos{File: name}, Msg: "empty test case"}
	}
	errs = append(errs, c.check(p, fx)...)
	if c.Inputs.Key.Line != 0 && !c.Inputs.Bad {
		errs = append(errs, c.readInputs(p, data)...)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return &c, nil
}

// readInputs reads the case's inputs: from its own YAML node, so each
// value and every file it names is reported at its line, and bound, so
// a value the pack refuses is too.
func (c *Case) readInputs(p *rules.Pack, data []byte) rules.ErrorList {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil // DecodeFile said why
	}
	root := doc.Content[0]
	var n *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "inputs" {
			n = root.Content[i+1]
		}
	}
	if n == nil {
		return nil
	}
	dir := path.Dir(c.file)
	y, errs := dryrun.InputsOfNode(p, c.file, n, func(name string) ([]byte, error) {
		return readLimited(p.FS, path.Join(dir, name))
	})
	if len(errs) > 0 {
		return errs
	}
	if errs := y.Check(p); len(errs) > 0 {
		return errs
	}
	c.inputs = y.Supplied
	return nil
}

// check converts the inline events, parses the match times and reads the
// files the case names now, so a mistake in any of them is reported with
// the file's other problems, at its line, rather than when the case runs.
func (c *Case) check(p *rules.Pack, fx *fixtures) rules.ErrorList {
	var errs rules.ErrorList
	add := func(p rules.Pos, format string, args ...any) {
		errs = append(errs, &rules.Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
	}
	if c.EventsFile.Val != "" && len(c.Events.Val) > 0 {
		add(c.Events.Key, "give events or events_file, not both")
	}
	if c.LLMFile.Val != "" && len(c.LLM.Val) > 0 {
		add(c.LLM.Key, "give llm or llm_file, not both")
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
		// The check a live session makes of an event before it takes it;
		// the dry run would make it too, but could not say where.
		if err := engine.CheckEvent(p, &ev.Event); err != nil {
			add(e.Pos, "%v", err)
		}
		last = max(last, ev.T)
		c.timed = append(c.timed, ev)
	}
	if f := c.EventsFile; f.Val != "" {
		evs, el, err := fx.events(f.Val)
		if err != nil {
			add(f.Pos, "events_file: %v", err)
		}
		errs = append(errs, el...)
		c.timed = evs
	}
	c.replies = c.LLM.Val
	if f := c.LLMFile; f.Val != "" {
		reps, el, err := fx.replies(f.Val)
		if err != nil {
			add(f.Pos, "llm_file: %v", err)
		}
		errs = append(errs, el...)
		c.replies = reps
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

// fixtures reads the files cases name, each once however many cases name
// it: its content, the problems in it (at their own lines), or the error
// that it could not be read (for the key that names it).
type fixtures struct {
	p    *rules.Pack
	read map[string]*fixture
}

type fixture struct {
	evs     []events.Timed
	replies []dryrun.Reply
	errs    rules.ErrorList
	err     error
}

func newFixtures(p *rules.Pack) *fixtures {
	return &fixtures{p: p, read: map[string]*fixture{}}
}

// events reads an events file of the pack and checks each event as a
// session of the pack would take it.
func (fx *fixtures) events(name string) ([]events.Timed, rules.ErrorList, error) {
	f := fx.load("events", name, func(f *fixture, data []byte) {
		// With an error, evs are the lines that read: checked too, so the
		// file's every problem is reported at once, but never played.
		evs, err := events.ReadFile(name, bytes.NewReader(data))
		if err != nil {
			f.errs = asList(name, err)
		}
		for i := range evs {
			if err := engine.CheckEvent(fx.p, &evs[i].Event); err != nil {
				f.errs = append(f.errs, &rules.Error{Pos: evs[i].Pos(), Msg: err.Error()})
			}
		}
		if len(f.errs) == 0 {
			f.evs = evs
		}
	})
	return f.evs, f.errs, f.err
}

// replies reads a reply script of the pack.
func (fx *fixtures) replies(name string) ([]dryrun.Reply, rules.ErrorList, error) {
	f := fx.load("llm", name, func(f *fixture, data []byte) {
		reps, err := sim.ReadRepliesFile(name, data)
		if err != nil {
			f.errs = asList(name, err)
			return
		}
		f.replies = reps
	})
	return f.replies, f.errs, f.err
}

func (fx *fixtures) load(kind, name string, parse func(*fixture, []byte)) *fixture {
	key := kind + "\x00" + name
	if f, ok := fx.read[key]; ok {
		return f
	}
	f := &fixture{}
	fx.read[key] = f
	data, err := readLimited(fx.p.FS, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.err = fmt.Errorf("no file %s in the pack (names are from the pack's folder)", name)
	case err != nil:
		f.err = err
	default:
		parse(f, data)
	}
	if len(f.errs) == 0 {
		f.errs = nil
	}
	return f
}

// readLimited reads a file of the pack, no larger than the pack loader
// reads any file.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	if !fs.ValidPath(name) || strings.Contains(name, "\\") {
		return nil, fmt.Errorf("%q is not a path inside the pack (write a/b.jsonl, from the pack's folder)", name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, rules.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > rules.MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, rules.MaxFileSize)
	}
	return data, nil
}
