// Package packtest runs a pack's timeline tests: files in the pack's tests/
// folder that read like transcripts (candidate events at times, expected
// effects at times, "nothing else until"), plus optional golden timelines
// rewritten with an update flag and reviewed as diffs.
package packtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

// Dir is the folder inside a pack that holds its tests.
const Dir = "tests"

// Case is one test file.
type Case struct {
	// Pos is where the case starts, set by decoding, so a file with no
	// case in it shows as one without a position.
	rules.Pos
	Name  string `yaml:"name"`
	About string `yaml:"about"`
	// Events are candidate events in the wire shape; EventsFile names a
	// JSON-lines file in the pack instead ("candidate.jsonl"). Each event
	// keeps where it was written, for the checks that convert it.
	Events     rules.At[[]rules.At[events.Wire]] `yaml:"events"`
	EventsFile rules.At[string]                  `yaml:"events_file"`
	// LLM scripts the model; LLMFile names a reply script in the pack
	// instead (the format of baton dryrun -llm), for replies cases share.
	LLM     rules.At[[]dryrun.Reply] `yaml:"llm"`
	LLMFile rules.At[string]         `yaml:"llm_file"`
	Expect  []Match                  `yaml:"expect"`
	Forbid  []Match                  `yaml:"forbid"`
	// Golden compares the whole printed timeline, and the workspace as
	// the session ended, with tests/NAME.golden.
	Golden bool `yaml:"golden"`
	// Inputs supply the pack's declared inputs, name to value, as a
	// --inputs file does (a file input's @path is from the case's folder).
	Inputs rules.At[map[string]any] `yaml:"inputs"`

	file    string
	timed   []events.Timed // Events or EventsFile's, checked and converted when read
	replies []dryrun.Reply // LLM or LLMFile's
	inputs  rules.Supplied // Inputs, read and bound when read
}

// Match selects effects. Every field that is set must hold. Times keep
// where they were written, to report one that does not parse there.
type Match struct {
	At           rules.At[string] `yaml:"at"`
	After        rules.At[string] `yaml:"after"`
	Before       rules.At[string] `yaml:"before"`
	Type         string           `yaml:"type"`
	Agent        string           `yaml:"agent"`
	Kind         string           `yaml:"kind"`
	Rule         string           `yaml:"rule"`
	Text         string           `yaml:"text"`
	TextContains string           `yaml:"text_contains"`
	IntentTag    string           `yaml:"intent_tag"`
	Reason       string           `yaml:"reason_contains"`
	Fallback     *bool            `yaml:"fallback"`
	Guardrail    string           `yaml:"guardrail"`
	// DataContains matches the effect's JSON payload, compacted.
	DataContains string `yaml:"data_contains"`
	// RequestContains matches an llm_request's request, as compact JSON.
	RequestContains string `yaml:"request_contains"`
	// Outcome is what the guardrails did with an agent message.
	Outcome string `yaml:"outcome"`
	IsError *bool  `yaml:"is_error"`
	// ThenNothingUntil: after this effect, no other visible effect occurs
	// before the given time.
	ThenNothingUntil rules.At[string] `yaml:"then_nothing_until"`

	at, after, before, until int64
}

// Result is the outcome of one case.
type Result struct {
	File string
	Name string
	Err  error
	// Updated is set when a golden file was (re)written.
	Updated bool
	// Coverage counts, by index in the pack's CoverItems, how often the
	// case's session exercised each item, whether or not the case passed:
	// what ran was exercised all the same, as go test -cover counts a
	// failing test's statements. Nil for a case that did not run.
	Coverage []uint32
}

// Options for running a pack's tests.
type Options struct {
	// Update rewrites golden files; needs the pack on disk (WriteDir).
	Update   bool
	WriteDir string
	// Run, if set, runs only the cases whose name, or file name without
	// .yaml, it matches (as go test -run does); the others are left out of
	// the results. A case that does not read is always in them.
	Run *regexp.Regexp
}

// Run runs every tests/*.yaml case of p.
func Run(p *rules.Pack, opt Options) ([]Result, error) {
	names, err := caseFiles(p)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("pack %s has no tests (%s/*.yaml)", p.Name, Dir)
	}
	fx := newFixtures(p)
	out := []Result{}
	for _, n := range names {
		res := Result{File: n, Name: strings.TrimSuffix(path.Base(n), ".yaml")}
		stem := res.Name
		c, err := readCase(p, n, fx)
		if c != nil && c.Name != "" {
			res.Name = c.Name
		}
		// A case that does not read is never left out: its name may be
		// the very thing that is wrong, and a filter must not turn a broken
		// case into a green run.
		if err == nil && opt.Run != nil && !opt.Run.MatchString(res.Name) && !opt.Run.MatchString(stem) {
			continue
		}
		if err != nil {
			res.Err = err
		} else {
			res.Updated, res.Coverage, res.Err = c.run(p, opt)
		}
		out = append(out, res)
	}
	return out, nil
}

func (c *Case) run(p *rules.Pack, opt Options) (updated bool, cover []uint32, err error) {
	res, err := dryrun.Run(p, dryrun.Options{Events: c.timed, Replies: c.replies, Inputs: c.inputs})
	if err != nil {
		return false, nil, fmt.Errorf("%s: %w", c.file, err)
	}
	cover = res.Coverage
	recs := res.Records
	var errs []error
	for i := range recs {
		// The engine saying it had to stop itself fails every case, whatever
		// the case expects.
		if recs[i].Type == engine.EffectEngineError {
			errs = append(errs, fmt.Errorf("engine error: %s", record.TextLine(&recs[i])))
		}
	}
	pos := 0
	for i := range c.Expect {
		m := &c.Expect[i]
		j := slices.IndexFunc(recs[pos:], m.matches)
		if j < 0 {
			errs = append(errs, fmt.Errorf("expect[%d] %s: not found after %s", i, m, clockAt(recs, pos)))
			continue
		}
		pos += j
		if m.until >= 0 {
			for _, r := range recs[pos+1:] {
				if r.T >= m.until {
					break
				}
				if visible(r.Type) {
					errs = append(errs, fmt.Errorf("expect[%d] %s: then nothing until %s, but: %s", i, m, m.ThenNothingUntil.Val, record.TextLine(&r)))
					break
				}
			}
		}
		pos++
	}
	for i := range c.Forbid {
		m := &c.Forbid[i]
		if j := slices.IndexFunc(recs, m.matches); j >= 0 {
			errs = append(errs, fmt.Errorf("forbid[%d] %s: found %s", i, m, record.TextLine(&recs[j])))
		}
	}
	if c.Golden {
		u, err := c.golden(p, res, opt)
		updated = u
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		var b bytes.Buffer
		_ = record.WriteText(&b, recs, record.FormatOptions{Verbose: true})
		return updated, cover, fmt.Errorf("%s:\n%w\ntimeline:\n%s", c.file, errors.Join(errs...), b.String())
	}
	return updated, cover, nil
}

func (c *Case) golden(p *rules.Pack, res *record.Result, opt Options) (bool, error) {
	var b bytes.Buffer
	if err := record.WriteText(&b, res.Records, record.FormatOptions{}); err != nil {
		return false, err
	}
	// What the agents' edits left in the workspace, as a dry run prints
	// it (nothing for a pack without one).
	if err := record.WriteWorkspace(&b, p.Workspace.RootDir(), res.Workspace); err != nil {
		return false, err
	}
	name := strings.TrimSuffix(c.file, ".yaml") + ".golden"
	want, err := fs.ReadFile(p.FS, name)
	if err == nil && bytes.Equal(want, b.Bytes()) {
		return false, nil
	}
	if opt.Update && opt.WriteDir != "" {
		if err := os.WriteFile(filepath.Join(opt.WriteDir, filepath.FromSlash(name)), b.Bytes(), 0o644); err != nil {
			return false, err
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("golden %s missing (run with -update to create it)", name)
	}
	// A unified diff with context shows every change and where it sits in
	// the timeline, not only the first; the anchored diff matches on lines
	// that occur once, which keeps hunks readable, in O(n log n).
	d := diff.Diff(name, want, "got", b.Bytes())
	return false, fmt.Errorf("golden %s differs (run with -update and review the diff):\n%s", name, bytes.TrimSuffix(d, []byte("\n")))
}

func visible(t engine.EffectType) bool {
	switch t {
	case engine.EffectLLMRequest, engine.EffectRouted, engine.EffectDeferred:
		return false
	}
	return true
}

func clockAt(recs []record.Record, pos int) string {
	if pos == 0 || pos > len(recs) {
		return "the start"
	}
	return rules.FormatClock(recs[pos-1].T)
}

func (m *Match) matches(r record.Record) bool {
	switch {
	case m.at >= 0 && r.T != m.at,
		m.after >= 0 && r.T < m.after,
		m.before >= 0 && r.T > m.before,
		m.Type != "" && string(r.Type) != m.Type,
		m.Agent != "" && r.Agent != m.Agent,
		m.Kind != "" && r.Kind != m.Kind,
		m.Rule != "" && r.Rule != m.Rule,
		m.Text != "" && r.Text != m.Text,
		m.TextContains != "" && !strings.Contains(r.Text, m.TextContains),
		m.IntentTag != "" && r.IntentTag != m.IntentTag,
		m.Reason != "" && !strings.Contains(r.Reason, m.Reason),
		m.Fallback != nil && r.Fallback != *m.Fallback,
		m.Guardrail != "" && !slices.Contains(r.Guardrail, m.Guardrail),
		m.DataContains != "" && !strings.Contains(compact(r.Data), m.DataContains),
		m.RequestContains != "" && !strings.Contains(requestJSON(r.Request), m.RequestContains),
		m.Outcome != "" && r.Outcome != m.Outcome,
		m.IsError != nil && r.IsError != *m.IsError:
		return false
	}
	return true
}

func (m *Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("at", m.At.Val)
	add("after", m.After.Val)
	add("before", m.Before.Val)
	add("type", m.Type)
	add("agent", m.Agent)
	add("kind", m.Kind)
	add("rule", m.Rule)
	add("text", m.Text)
	add("text_contains", m.TextContains)
	add("intent_tag", m.IntentTag)
	add("reason_contains", m.Reason)
	add("guardrail", m.Guardrail)
	add("data_contains", m.DataContains)
	add("request_contains", m.RequestContains)
	add("outcome", m.Outcome)
	if m.Fallback != nil {
		add("fallback", fmt.Sprint(*m.Fallback))
	}
	if m.IsError != nil {
		add("is_error", fmt.Sprint(*m.IsError))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func requestJSON(req *engine.LLMRequest) string {
	if req == nil {
		return ""
	}
	// As written: an author's "Q&A" must match, not "Q\u0026A".
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(req) != nil {
		return ""
	}
	return b.String()
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
