package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

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
// role settings. Merged mappings may merge in turn; cycles are impossible
// in YAML's alias model.
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
	out := own
	for _, m := range merged {
		dup := false
		for _, o := range out {
			if o[0].Value == m[0].Value {
				dup = true
				break
			}
		}
		if !dup {
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
		return fmt.Sprintf("%q", n.Value)
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

// fieldIndex maps YAML keys to struct fields; computed per decode, which is
// only done at pack load.
func fieldIndex(t reflect.Type) (map[string]int, []string) {
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
	return idx, names
}

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
	for _, kv := range d.pairs(n) {
		k, val := kv[0], kv[1]
		fi, ok := idx[k.Value]
		if !ok {
			d.errorf(k, "unknown field %q (known: %s)", k.Value, strings.Join(names, ", "))
			continue
		}
		d.decode(val, v.Field(fi))
	}
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
