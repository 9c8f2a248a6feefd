package rules

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder turns yaml.Node trees into model structs. yaml.v3's own decoder
// reports unknown fields and type errors with a line but no column and stops
// associating positions with values; authors need every problem at once with
// file:line:col, so the model is decoded by hand with reflection.
type decoder struct {
	file string
	errs *ErrorList
	// literal decodes what a script returned: expressions and templates
	// are values and text, not source.
	literal bool
	// unique makes a key given twice in one mapping a problem instead of
	// the later one winning. DecodeFile sets it; Load does not, because
	// packs that load today would start to fail.
	unique bool
}

// nodeDecoder is implemented by model types with their own YAML syntax
// (durations, expressions, ordered string maps).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node)
}

var (
	posType         = reflect.TypeFor[Pos]()
	nodeDecoderType = reflect.TypeFor[nodeDecoder]()
)

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errs.add(d.pos(n), format, args...)
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

// pairs lists a mapping's key/value pairs with YAML merge keys expanded:
// `<<: *shared` (or a list of aliases) brings in the keys of the merged
// mappings that the mapping does not set itself, so authors can share
// role settings. Merged mappings may merge in turn; a merge of a mapping
// into itself never reaches here (checkTree refuses alias cycles).
func (d *decoder) pairs(n *yaml.Node) [][2]*yaml.Node {
	var own, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			src := resolve(v)
			var srcs []*yaml.Node
			switch {
			case src != nil && src.Kind == yaml.MappingNode:
				srcs = []*yaml.Node{src}
			case src != nil && src.Kind == yaml.SequenceNode:
				for _, e := range src.Content {
					srcs = append(srcs, resolve(e))
				}
			default:
				srcs = []*yaml.Node{src}
			}
			for _, m := range srcs {
				if m == nil || m.Kind != yaml.MappingNode {
					d.errorf(v, "<< merges a mapping (or a list of them), written as an alias such as *shared")
					continue
				}
				merged = append(merged, d.pairs(m)...)
			}
			continue
		}
		own = append(own, [2]*yaml.Node{k, v})
	}
	if len(merged) == 0 {
		return own
	}
	out := own
	have := make(map[string]bool, len(own)+len(merged))
	for _, o := range own {
		have[o[0].Value] = true
	}
	for _, m := range merged {
		if !have[m[0].Value] {
			have[m[0].Value] = true
			out = append(out, m)
		}
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", clip(n.Value))
	}
	return "an unexpected node"
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value) {
	n = resolve(n)
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(nodeDecoderType) {
		v.Addr().Interface().(nodeDecoder).decodeNode(d, n)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem())
	case reflect.Struct:
		d.decodeStruct(n, v)
	case reflect.Slice:
		d.decodeSlice(n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, "expected text, found %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			d.errorf(n, "expected true or false, found %s", kindName(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(scalar(n), 10, 64)
		if err != nil {
			d.errorf(n, "expected a whole number, found %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(scalar(n), 64)
		if err != nil {
			d.errorf(n, "expected a number, found %s", kindName(n))
			return
		}
		v.SetFloat(f)
	case reflect.Map:
		// Free-form mappings (a scripted tool call's arguments) take any
		// shape, so yaml.v3 builds them.
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.errorf(n, "%v", err)
		}
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.errorf(n, "%v", err)
			return
		}
		v.Set(reflect.ValueOf(&x).Elem())
	default:
		d.errorf(n, "internal: cannot decode into %s", v.Type())
	}
}

func scalar(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return "\x00" // never parses as a number
	}
	return strings.ReplaceAll(n.Value, "_", "")
}

// The words scalarBool reads as true and false (the schema lists them
// too).
var (
	trueWords  = []string{"true", "True", "TRUE", "yes", "on"}
	falseWords = []string{"false", "False", "FALSE", "no", "off"}
)

func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch {
	case slices.Contains(trueWords, n.Value):
		return true, true
	case slices.Contains(falseWords, n.Value):
		return false, true
	}
	return false, false
}

// fieldIndex maps YAML keys to struct fields, and lists the keys sorted.
// Types are few and fixed, so each is worked out once; callers must not
// change what it returns.
func fieldIndex(t reflect.Type) (map[string]int, []string) {
	if f, ok := fieldCache.Load(t); ok {
		f := f.(*fields)
		return f.idx, f.names
	}
	idx := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			continue
		}
		idx[name] = i
		names = append(names, name)
	}
	slices.Sort(names)
	fieldCache.Store(t, &fields{idx, names})
	return idx, names
}

type fields struct {
	idx   map[string]int
	names []string
}

var fieldCache sync.Map // reflect.Type -> *fields

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Type == posType && t.Field(i).Anonymous {
			v.Field(i).Set(reflect.ValueOf(d.pos(n)))
		}
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "expected a mapping, found %s", kindName(n))
		return
	}
	idx, names := fieldIndex(t)
	seen := map[string]bool{}
	for _, kv := range d.pairs(n) {
		k, val := kv[0], kv[1]
		fi, ok := idx[k.Value]
		if !ok {
			d.unknownField(k, idx, names)
			continue
		}
		if d.unique && seen[k.Value] {
			d.errorf(k, "field %q given twice", k.Value)
			continue
		}
		seen[k.Value] = true
		f := v.Field(fi)
		if kf, ok := f.Addr().Interface().(keyed); ok {
			kf.setKey(d.pos(k))
		}
		d.decode(val, f)
	}
}

// renamedKeys maps a key the format no longer takes to the one that
// replaced it. YAML 1.1 tools (PyYAML, most JavaScript YAML libraries and
// the editors built on them) read on, off, yes and no as booleans, so a
// pack with such a key cannot be read or validated by them.
var renamedKeys = map[string]string{"on": "trigger"}

// unknownField reports a key the struct does not have, naming the key it
// was renamed to, or the nearest known key, before listing them all.
func (d *decoder) unknownField(k *yaml.Node, idx map[string]int, names []string) {
	if to, ok := renamedKeys[k.Value]; ok {
		if _, known := idx[to]; known {
			d.errorf(k, "%s: is now written %s: (YAML 1.1 tools read %s: as a boolean); rename the key", k.Value, to, k.Value)
			return
		}
	}
	if near, ok := Nearest(k.Value, names); ok {
		d.errorf(k, "unknown field %q: did you mean %s? (known: %s)", k.Value, near, strings.Join(names, ", "))
		return
	}
	d.errorf(k, "unknown field %q (known: %s)", k.Value, strings.Join(names, ", "))
}

// decodeSlice accepts a list, or for slices of structs with an "id" field,
// a mapping whose keys become the ids; authors write roles and constants as
// mappings but the model keeps their order.
func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value) {
	et := v.Type().Elem()
	switch n.Kind {
	case yaml.SequenceNode:
		out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, out.Index(i))
		}
		v.Set(out)
	case yaml.MappingNode:
		idField := -1
		if et.Kind() == reflect.Struct {
			idx, _ := fieldIndex(et)
			if i, ok := idx["id"]; ok {
				idField = i
			}
		}
		if idField < 0 {
			d.errorf(n, "expected a list, found a mapping")
			return
		}
		pairs := d.pairs(n)
		out := reflect.MakeSlice(v.Type(), len(pairs), len(pairs))
		for i, kv := range pairs {
			k, val := kv[0], resolve(kv[1])
			el := out.Index(i)
			if val != nil && val.Kind != yaml.MappingNode && val.Tag != "!!null" && reflect.PointerTo(et).Implements(shorthandType) {
				// "KEY: value" shorthand for a struct with one main field.
				el.Addr().Interface().(shorthand).setShorthand(d, val)
			} else {
				d.decode(val, el)
			}
			el.Field(idField).SetString(k.Value)
			setPos(el, d.pos(k))
		}
		v.Set(out)
	default:
		d.errorf(n, "expected a list, found %s", kindName(n))
	}
}

// shorthand lets a keyed struct be written as a bare scalar value.
type shorthand interface {
	setShorthand(d *decoder, n *yaml.Node)
}

var shorthandType = reflect.TypeFor[shorthand]()

func setPos(v reflect.Value, p Pos) {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Type == posType && t.Field(i).Anonymous {
			v.Field(i).Set(reflect.ValueOf(p))
		}
	}
}

// DecodeFile decodes the YAML document data into v, a pointer, as Load
// decodes a pack, so every YAML file of the project reads and reports
// alike: unknown fields are named with the known ones, merge keys are
// expanded, rules types (Duration, Expr, ...) take their own syntax, and a
// key given twice in one mapping is a problem. Every problem comes back at
// once in an ErrorList, sorted, each at file:line:col; file is the name
// positions give. An empty document leaves v as it was. Fields of type At
// keep where their values were written, for the caller's own checks.
func DecodeFile(file string, data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("rules.DecodeFile: want a non-nil pointer, got %T", v)
	}
	var errs ErrorList
	root, _, err := parseFile(oneFile(data), file, MaxYAML, &errs)
	if err != nil {
		return err
	}
	if root != nil && root.Kind != 0 {
		d := &decoder{file: file, errs: &errs, unique: true}
		d.decode(root, rv.Elem())
	}
	return errs.Err()
}

// oneFile serves data under any name, so DecodeFile parses through Load's
// parseFile, syntax errors and size limit included, whatever file is.
type oneFile []byte

func (f oneFile) Open(name string) (fs.File, error) {
	return &openFile{Reader: bytes.NewReader(f), name: path.Base(name), size: int64(len(f))}, nil
}

// openFile is oneFile opened, a regular file that is its own FileInfo;
// written here rather than taken from testing/fstest, which would link a
// testing package into every binary.
type openFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *openFile) Close() error               { return nil }
func (f *openFile) Name() string               { return f.name }
func (f *openFile) Size() int64                { return f.size }
func (f *openFile) Mode() fs.FileMode          { return 0o444 }
func (f *openFile) ModTime() time.Time         { return time.Time{} }
func (f *openFile) IsDir() bool                { return false }
func (f *openFile) Sys() any                   { return nil }

// At is a value with where it was written, for callers of DecodeFile whose
// own checks point at it: a time that does not parse, fields that exclude
// each other.
type At[T any] struct {
	Val T
	// Pos is where the value is written; Key, for a mapping's field, where
	// its key is, which is where a problem with giving the field belongs.
	Pos, Key Pos
	// Bad is set when decoding the value reported a problem already, so
	// checks of it can stay quiet rather than add a knock-on error.
	Bad bool
}

func (a *At[T]) decodeNode(d *decoder, n *yaml.Node) {
	a.Pos = d.pos(n)
	before := len(*d.errs)
	d.decode(n, refValue(&a.Val))
	a.Bad = len(*d.errs) > before
}

func (a *At[T]) setKey(p Pos) { a.Key = p }

// keyed is implemented by field types that keep where their key was.
type keyed interface{ setKey(Pos) }
