package packtest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A case file is decoded from yaml.Node trees by hand, like the pack loader
// does: yaml.v3's own decoder reports unknown keys and type errors with a
// line but no column and in Go's type names, while an author fixing a test
// wants every problem in the file at once, each at its file:line:col.

// problem is one thing wrong in a case file.
type problem struct {
	line, col int
	msg       string
}

// problems collects what is wrong with one case file.
type problems struct {
	file string
	list []problem
	// failed marks nodes that already have a problem inside them, so checks
	// on the decoded value do not add a second, derived complaint.
	failed map[*yaml.Node]bool
}

func newProblems(file string) *problems {
	return &problems{file: file, failed: map[*yaml.Node]bool{}}
}

func (p *problems) add(n *yaml.Node, format string, args ...any) {
	p.list = append(p.list, problem{n.Line, n.Column, fmt.Sprintf(format, args...)})
}

// err lists every problem, in file order, one "file:line:col: message" a
// line, so editors and terminals can jump to each.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	l := slices.Clone(p.list)
	slices.SortStableFunc(l, func(a, b problem) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col))
	})
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", p.file, e.line, e.col, e.msg)
	}
	return caseError(b.String())
}

type caseError string

func (e caseError) Error() string { return string(e) }

// nodeChecker is implemented by case types with rules beyond their shape
// (times that must parse, events that must go forward). It runs even when
// the value has other problems, so one pass reports them all.
type nodeChecker interface {
	checkNode(p *problems, n *yaml.Node)
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && (n.Kind == yaml.AliasNode || n.Kind == yaml.DocumentNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			return nil
		}
	}
	return n
}

func isNull(n *yaml.Node) bool { return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unexpected node"
}

// value returns the value node of key in mapping n, or nil.
func value(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], resolve(n.Content[i+1])
		}
	}
	return nil, nil
}

func (p *problems) decode(n *yaml.Node, v reflect.Value) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	before := len(p.list)
	defer func() {
		if len(p.list) > before {
			p.failed[n] = true
		}
	}()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		p.decode(n, v.Elem())
	case reflect.Struct:
		p.decodeStruct(n, v)
		if c, ok := v.Addr().Interface().(nodeChecker); ok {
			c.checkNode(p, n)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.add(n, "expected a list, found %s", kindName(n))
			return
		}
		out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			p.decode(c, out.Index(i))
		}
		v.Set(out)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			p.add(n, "expected text, found %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			p.add(n, "expected true or false, found %s", kindName(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(scalar(n), 10, 64)
		if err != nil {
			p.add(n, "expected a whole number, found %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(scalar(n), 64)
		if err != nil {
			p.add(n, "expected a number, found %s", kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		// Free-form JSON answers and tool arguments: any shape goes, and
		// yaml.v3 builds it; only its message needs the column.
		if err := n.Decode(v.Addr().Interface()); err != nil {
			p.add(n, "%s", yamlMessage(err))
		}
	}
}

func scalar(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return "\x00" // never parses as a number
	}
	return strings.ReplaceAll(n.Value, "_", "")
}

// scalarBool accepts the spellings the pack loader accepts, so a case file
// and the pack it tests read alike.
func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch n.Value {
	case "true", "True", "TRUE", "yes", "on":
		return true, true
	case "false", "False", "FALSE", "no", "off":
		return false, true
	}
	return false, false
}

// yamlMessage drops yaml.v3's "unmarshal errors: line N:" framing; the
// caller reports the position itself.
func yamlMessage(err error) string {
	te, ok := err.(*yaml.TypeError)
	if !ok {
		return err.Error()
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				m = after
			}
		}
		msgs[i] = m
	}
	return strings.Join(msgs, "; ")
}

func (p *problems) decodeStruct(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		p.add(n, "expected a mapping, found %s", kindName(n))
		return
	}
	idx, names := fieldIndex(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fi, ok := idx[k.Value]
		switch {
		case !ok:
			p.add(k, "unknown field %q (known: %s)", k.Value, strings.Join(names, ", "))
		case seen[k.Value]:
			p.add(k, "field %q given twice", k.Value)
		default:
			seen[k.Value] = true
			p.decode(val, v.Field(fi))
		}
	}
}

// fieldIndex maps YAML keys to struct fields.
func fieldIndex(t reflect.Type) (map[string]int, []string) {
	idx := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		idx[name] = i
		names = append(names, name)
	}
	slices.Sort(names)
	return idx, names
}
