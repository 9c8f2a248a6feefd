package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Vary sweeps one of the pack's inputs over values: session i of the
// population takes Values[i mod len(Values)], so each value gets an equal
// share of the sessions (to one) and the seeds of one value are spread
// over the whole sweep, not a block of it.
type Vary struct {
	Input  string
	Values []string // as written, for the report and the commands
	raw    []json.RawMessage
}

// ParseVary reads NAME=V1,V2,... for p's input NAME, each value written
// as --input writes it (a file input's as @path, read by read); a list or
// object input's values are a JSON list of them instead. Each value is
// bound to p with base, the inputs every session supplies, so one the
// pack refuses is refused here, before anything plays.
func ParseVary(p *rules.Pack, base rules.Supplied, arg string, read func(path string) ([]byte, error)) (*Vary, error) {
	name, list, ok := strings.Cut(arg, "=")
	if !ok || name == "" || list == "" {
		return nil, fmt.Errorf("--vary %q: want NAME=V1,V2 (two values or more)", arg)
	}
	decl, ok := p.Input(name)
	if !ok {
		return nil, fmt.Errorf("--vary %s: the pack declares no such input", name)
	}
	var vals []string
	if decl.Type == rules.InputList || decl.Type == rules.InputObject {
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(list), &items); err != nil {
			return nil, fmt.Errorf("--vary %s: a %s input's values are a JSON list of them: %v", name, decl.Type, err)
		}
		for _, it := range items {
			vals = append(vals, string(it))
		}
	} else {
		for _, v := range strings.Split(list, ",") {
			vals = append(vals, strings.TrimSpace(v))
		}
	}
	v := &Vary{Input: name}
	var errs []error
	for _, val := range vals {
		if slices.Contains(v.Values, val) {
			errs = append(errs, fmt.Errorf("--vary %s: %s is given twice", name, val))
			continue
		}
		raw, err := decl.ArgJSON(val, read)
		if err == nil {
			sup := maps.Clone(base)
			if sup == nil {
				sup = rules.Supplied{}
			}
			sup[name] = raw
			_, err = p.Bind(sup, rules.BindOptions{})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--vary %s=%s: %w", name, val, err))
			continue
		}
		v.Values, v.raw = append(v.Values, val), append(v.raw, raw)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(v.Values) < 2 {
		return nil, fmt.Errorf("--vary %s: give two values or more, comma-separated (one value is --input)", name)
	}
	return v, nil
}

// Vary sets the inputs every session supplies, with args, the command
// line words that supply them (--input NAME=VALUE, --inputs FILE) for
// the commands that play a session again, and the one input that varies
// over the sessions (nil: none). A value of v wins over inputs'. It
// returns m.
func (m *Model) Vary(inputs rules.Supplied, args []string, v *Vary) *Model {
	m.inputs, m.args, m.vary = inputs, args, v
	return m
}

// Groups names the values the sessions are grouped by, for the report.
func (m *Model) Groups() (input string, values []string) {
	if m.vary == nil {
		return "", nil
	}
	return m.vary.Input, m.vary.Values
}

// sessionInputs are session i's inputs, and its group.
func (m *Model) sessionInputs(i int) (rules.Supplied, int, []string) {
	if len(m.inputs) == 0 && m.vary == nil {
		return nil, 0, nil
	}
	sup := maps.Clone(m.inputs)
	if sup == nil {
		sup = rules.Supplied{}
	}
	group := 0
	var flags []string
	for _, a := range m.args {
		flags = append(flags, shellWord(a))
	}
	if m.vary != nil {
		group = i % len(m.vary.Values)
		sup[m.vary.Input] = m.vary.raw[group]
		flags = append(flags, "--input", shellWord(m.vary.Input+"="+m.vary.Values[group]))
	}
	return sup, group, flags
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/@,=+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
