package vendorfake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A Schema is a vendor's request body as its reference documents it, a
// tree of Nodes. Check walks a decoded body against it and reports every
// Violation, worded the way the vendor's service words it. The walk is
// strict everywhere: a field the reference does not list is refused at any
// depth, and only a Node of kind AnyObject or Any takes free-form JSON.
type Schema struct {
	Root *Node
	// DotIndex writes list items as "a.0" rather than "a[0]", QuoteKeys
	// map entries as `a["k"]` rather than "a.k", and TagPath adds a
	// tagged union's tag to the paths inside its variant ("a.text.b").
	DotIndex, QuoteKeys, TagPath bool
	// ProtoJSON takes numbers given as strings, and floats as "NaN",
	// "Infinity" or "-Infinity", as proto3 JSON endpoints do.
	ProtoJSON bool
}

// Kind is the JSON shape a Node takes.
type Kind uint8

const (
	String    Kind = iota // a string; Values makes it an enum, Valid a format
	Bytes                 // a string Valid decodes (base64)
	Bool                  // true or false
	Int                   // a whole number within Bits
	Number                // any number
	Object                // Fields; with Elem, a map whose every value is Elem
	List                  // of Elem
	Union                 // one of Variants, picked by Tag or by JSON type
	AnyObject             // any JSON object
	Any                   // any JSON value
)

// Node is one documented value.
type Node struct {
	Kind Kind
	// Name is the vendor's name for the node's type, for its messages.
	Name string

	Values   []string          // String: the enum
	Valid    func(string) bool // String: a format (Pattern); Bytes: decodes
	Pattern  string            // String: Valid's pattern, for messages
	MinLen   int               // String: characters; List: items
	MaxLen   int               // as MinLen; 0 for no limit
	Bits     int               // Int: the 32, 53 or 64 bits a value of the type fits in; 0 for any
	Min, Max *float64          // Int, Number: the documented bounds
	Fields   map[string]*Field // Object: by every name it is accepted under
	Required []string          // Object: in the order they are reported
	Elem     *Node             // List: the items; Object: a map's values

	Variants   []*Node  // Union: objects when Tag is set
	Tag        string   // Union: the property naming the variant
	Untagged   string   // Union: the variant an object without Tag is
	Unmodelled []string // Union: documented tags the fake does not model

	// Then rewrites a value once it is checked, as a shorthand's meaning.
	Then func(any) any
}

// Field is an Object's field.
type Field struct {
	// Key is the field's name in the normalized body; Path its name in
	// violations' paths (Key when empty).
	Key, Path string
	Node      *Node
	// Nullable takes null as the field's absence.
	Nullable bool
	// Oneof names the group of fields of which at most one may be set.
	Oneof string
}

// Tags are the tags of a tagged union's variants, in order.
func (n *Node) Tags() []string {
	var tags []string
	for _, v := range n.Variants {
		tags = append(tags, v.Fields[n.Tag].Node.Values...)
	}
	return tags
}

// Code is what a Violation is.
type Code uint8

const (
	Unknown     Code = iota // Key is not a field of the object at Path
	Duplicate               // Key names a field given under another name too
	OneofTaken              // Field is a second member of its oneof
	Missing                 // the required field at Path is absent
	Null                    // the field at Path is null and may not be
	WrongType               // Value is not of Node's type
	NotInEnum               // Value is not among Node.Values
	Undecodable             // Value is a string Node.Valid cannot decode
	Mismatch                // Value does not have Node's format
	TooShort                // a string of Len characters, a list of Len items
	TooLong                 // as TooShort
	BelowMin                // Value is below Node.Min
	AboveMax                // Value is above Node.Max
	NoTag                   // the union object at Path has no Node.Tag
	UnknownTag              // Value names no variant of the union
	Unmodelled              // Value names a variant the fake does not model
)

// Violation is one way a body breaks its Schema.
type Violation struct {
	Code  Code
	Path  string
	Node  *Node
	Value any
	Key   string
	Field *Field
	Len   int
}

// Check walks val, returning it normalized (every field under its Key,
// numbers in one form, shorthands rewritten) and every violation, as word
// words it.
func Check[T any](s *Schema, val any, word func(Violation) T) (any, []T) {
	w := &walker{Schema: s}
	out := w.value("", s.Root, val)
	words := make([]T, len(w.errs))
	for i, v := range w.errs {
		words[i] = word(v)
	}
	return out, words
}

type walker struct {
	*Schema
	errs []Violation
}

func (w *walker) fail(v Violation) { w.errs = append(w.errs, v) }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (w *walker) value(path string, n *Node, val any) any {
	out := w.check(path, n, val)
	if n.Then != nil {
		out = n.Then(out)
	}
	return out
}

func (w *walker) check(path string, n *Node, val any) any {
	wrong := func() any {
		w.fail(Violation{Code: WrongType, Path: path, Node: n, Value: val})
		return val
	}
	switch n.Kind {
	case String, Bytes:
		s, ok := val.(string)
		if !ok {
			return wrong()
		}
		count := utf8.RuneCountInString(s)
		v := Violation{Path: path, Node: n, Value: val, Len: count}
		switch {
		case n.Values != nil && !slices.Contains(n.Values, s):
			v.Code = NotInEnum
		case n.Kind == Bytes && !n.Valid(s):
			v.Code = Undecodable
		case count < n.MinLen:
			v.Code = TooShort
		case n.MaxLen > 0 && count > n.MaxLen:
			v.Code = TooLong
		case n.Kind == String && n.Valid != nil && !n.Valid(s):
			v.Code = Mismatch
		default:
			return val
		}
		w.fail(v)
	case Bool:
		if _, ok := val.(bool); !ok {
			return wrong()
		}
	case Int, Number:
		f, ok := w.number(val)
		if !ok {
			if s, _ := val.(string); w.ProtoJSON && n.Kind == Number && (s == "NaN" || s == "Infinity" || s == "-Infinity") {
				return nil // valid, but JSON numbers cannot hold it
			}
			return wrong()
		}
		if n.Kind == Int && (f != math.Trunc(f) || !inBits(f, n.Bits)) {
			return wrong()
		}
		if n.Min != nil && f < *n.Min {
			w.fail(Violation{Code: BelowMin, Path: path, Node: n, Value: val})
		}
		if n.Max != nil && f > *n.Max {
			w.fail(Violation{Code: AboveMax, Path: path, Node: n, Value: val})
		}
		if n.Kind == Number {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
		// Proto3 JSON keeps every digit of an int64; the other APIs read
		// numbers as float64s.
		if w.ProtoJSON {
			if i, err := strconv.ParseInt(fmt.Sprint(val), 10, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10))
			}
		} else if math.Abs(f) < 1<<63 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
	case AnyObject:
		if _, ok := val.(map[string]any); !ok {
			return wrong()
		}
	case List:
		arr, ok := val.([]any)
		if !ok {
			return wrong()
		}
		switch {
		case len(arr) < n.MinLen:
			w.fail(Violation{Code: TooShort, Path: path, Node: n, Value: val, Len: len(arr)})
		case n.MaxLen > 0 && len(arr) > n.MaxLen:
			w.fail(Violation{Code: TooLong, Path: path, Node: n, Value: val, Len: len(arr)})
		}
		out := make([]any, len(arr))
		for i, el := range arr {
			at := fmt.Sprintf("%s[%d]", path, i)
			if w.DotIndex {
				at = join(path, strconv.Itoa(i))
			}
			out[i] = w.value(at, n.Elem, el)
		}
		return out
	case Object:
		obj, ok := val.(map[string]any)
		if !ok {
			return wrong()
		}
		if n.Elem == nil {
			return w.object(path, n, obj)
		}
		out := make(map[string]any, len(obj))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			at := join(path, k)
			if w.QuoteKeys {
				at = fmt.Sprintf("%s[%q]", path, k)
			}
			out[k] = w.value(at, n.Elem, obj[k])
		}
		return out
	case Union:
		if n.Tag != "" {
			return w.tagged(path, n, val)
		}
		for _, x := range n.Variants {
			if fits(x, val) {
				return w.value(path, x, val)
			}
		}
		return wrong()
	}
	return val
}

// number reads a JSON number, or with ProtoJSON a string holding one.
func (w *walker) number(val any) (float64, bool) {
	switch x := val.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, w.ProtoJSON && err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return 0, false
}

func inBits(f float64, bits int) bool {
	switch bits {
	case 32:
		return f >= math.MinInt32 && f <= math.MaxInt32
	case 53:
		return math.Abs(f) <= 1<<53
	case 64:
		return f >= -(1<<63) && f <= 1<<63-1
	}
	return true
}

// object checks the fields of obj, in sorted order so that messages are
// the same every time.
func (w *walker) object(path string, n *Node, obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	oneofs := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		val := obj[key]
		f, ok := n.Fields[key]
		if !ok {
			w.fail(Violation{Code: Unknown, Path: path, Node: n, Key: key})
			continue
		}
		if _, dup := out[f.Key]; dup {
			w.fail(Violation{Code: Duplicate, Path: path, Node: n, Key: key})
			continue
		}
		at := join(path, cmp.Or(f.Path, f.Key))
		if val == nil {
			if !f.Nullable {
				w.fail(Violation{Code: Null, Path: at, Node: f.Node})
			}
			continue
		}
		if f.Oneof != "" {
			if oneofs[f.Oneof] {
				w.fail(Violation{Code: OneofTaken, Path: path, Node: n, Key: key, Field: f})
				continue
			}
			oneofs[f.Oneof] = true
		}
		out[f.Key] = w.value(at, f.Node, val)
	}
	for _, name := range n.Required {
		if _, ok := obj[name]; !ok {
			w.fail(Violation{Code: Missing, Path: join(path, name), Node: n, Key: name})
		}
	}
	return out
}

// tagNode is what a union's tag must be: a string.
var tagNode = &Node{Kind: String}

// tagged checks an object of the variant its tag names.
func (w *walker) tagged(path string, n *Node, val any) any {
	obj, ok := val.(map[string]any)
	if !ok {
		w.fail(Violation{Code: WrongType, Path: path, Node: n, Value: val})
		return val
	}
	tag, present := obj[n.Tag]
	name, isStr := tag.(string)
	switch {
	case !present && n.Untagged != "":
		name = n.Untagged
	case !present:
		w.fail(Violation{Code: NoTag, Path: path, Node: n, Key: n.Tag})
		return val
	case !isStr:
		w.fail(Violation{Code: WrongType, Path: join(path, n.Tag), Node: tagNode, Value: tag})
		return val
	}
	if slices.Contains(n.Unmodelled, name) {
		w.fail(Violation{Code: Unmodelled, Path: path, Node: n, Value: name})
		return val
	}
	for _, x := range n.Variants {
		if slices.Contains(x.Fields[n.Tag].Node.Values, name) {
			if w.TagPath {
				path = join(path, name)
			}
			return w.object(path, x, obj)
		}
	}
	w.fail(Violation{Code: UnknownTag, Path: path, Node: n, Value: name, Key: n.Tag})
	return val
}

// fits reports whether val has the JSON type n takes.
func fits(n *Node, val any) bool {
	switch val.(type) {
	case string:
		return n.Kind == String || n.Kind == Bytes
	case bool:
		return n.Kind == Bool
	case json.Number:
		return n.Kind == Int || n.Kind == Number
	case []any:
		return n.Kind == List
	case map[string]any:
		return n.Kind == Object || n.Kind == AnyObject || n.Kind == Union && n.Tag != ""
	}
	return false
}

// Decode decodes a checked body into a new R.
func Decode[R any](body any) (*R, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	r := new(R)
	return r, json.Unmarshal(b, r)
}

// ErrTrailing is the error of DecodeJSON for a body with more than one
// JSON value.
var ErrTrailing = errors.New("unexpected data after the top-level value")

// DecodeJSON parses body as one JSON value with numbers kept exact.
func DecodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, ErrTrailing
	}
	return v, nil
}

// Short renders a value for a message, cut to a readable length.
func Short(x any) string {
	b, _ := json.Marshal(x)
	if s := string(b); len(s) > 60 {
		return s[:57] + "..."
	}
	return string(b)
}
