// Package schema validates JSON values against the subset of JSON Schema
// that tool parameters and structured model output use: type, properties,
// required, additionalProperties, items, enum, minimum, maximum,
// minLength, maxLength, minItems, maxItems. Unknown keywords are refused
// at compile time rather than silently ignored.
package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Schema is a compiled schema.
type Schema struct {
	Types      []string
	Properties map[string]*Schema
	order      []string
	Required   []string
	// Closed refuses properties not listed (additionalProperties: false).
	Closed    bool
	Items     *Schema
	Enum      []any
	Min, Max  *float64
	MinLength *int
	MaxLength *int
	MinItems  *int
	MaxItems  *int
	raw       json.RawMessage
}

// PropertyNames lists the object's properties in name order.
func (s *Schema) PropertyNames() []string { return s.order }

// JSON returns the schema as written, for sending to a model.
func (s *Schema) JSON() json.RawMessage { return s.raw }

var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "minimum": true, "maximum": true, "minLength": true, "maxLength": true,
	"minItems": true, "maxItems": true, "description": true, "title": true,
}

// Compile checks a schema given as decoded JSON/YAML data.
func Compile(v any) (*Schema, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := compile(v, "")
	if err != nil {
		return nil, err
	}
	s.raw = raw
	return s, nil
}

func compile(v any, path string) (*Schema, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema%s: want an object", at(path))
	}
	s := &Schema{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !known[k] {
			return nil, fmt.Errorf("schema%s: unsupported keyword %q", at(path), k)
		}
	}
	switch t := m["type"].(type) {
	case nil:
	case string:
		s.Types = []string{t}
	case []any:
		for _, x := range t {
			str, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("schema%s: type list must hold names", at(path))
			}
			s.Types = append(s.Types, str)
		}
	default:
		return nil, fmt.Errorf("schema%s: type must be a name or a list", at(path))
	}
	for _, t := range s.Types {
		if !slices.Contains([]string{"object", "array", "string", "number", "integer", "boolean", "null"}, t) {
			return nil, fmt.Errorf("schema%s: unknown type %q", at(path), t)
		}
	}
	if p, ok := m["properties"]; ok {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema%s: properties must be an object", at(path))
		}
		s.Properties = map[string]*Schema{}
		for _, k := range sortedKeys(pm) {
			sub, err := compile(pm[k], path+"."+k)
			if err != nil {
				return nil, err
			}
			s.Properties[k] = sub
			s.order = append(s.order, k)
		}
	}
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("schema%s: required must be a list", at(path))
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("schema%s: required must list names", at(path))
			}
			s.Required = append(s.Required, name)
		}
	}
	if ap, ok := m["additionalProperties"]; ok {
		b, ok := ap.(bool)
		if !ok {
			return nil, fmt.Errorf("schema%s: additionalProperties must be true or false", at(path))
		}
		s.Closed = !b
	}
	if it, ok := m["items"]; ok {
		sub, err := compile(it, path+"[]")
		if err != nil {
			return nil, err
		}
		s.Items = sub
	}
	if e, ok := m["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("schema%s: enum must be a non-empty list", at(path))
		}
		s.Enum = list
	}
	var err error
	num := func(k string) *float64 {
		x, ok := m[k]
		if !ok || err != nil {
			return nil
		}
		f, isNum := toFloat(x)
		if !isNum {
			err = fmt.Errorf("schema%s: %s must be a number", at(path), k)
			return nil
		}
		return &f
	}
	count := func(k string) *int {
		f := num(k)
		if f == nil {
			return nil
		}
		if *f < 0 || *f != math.Trunc(*f) {
			err = fmt.Errorf("schema%s: %s must be a whole number", at(path), k)
			return nil
		}
		n := int(*f)
		return &n
	}
	s.Min, s.Max = num("minimum"), num("maximum")
	s.MinLength, s.MaxLength = count("minLength"), count("maxLength")
	s.MinItems, s.MaxItems = count("minItems"), count("maxItems")
	return s, err
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " at " + strings.TrimPrefix(path, ".")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Validate checks a decoded JSON value (as encoding/json produces it, or
// with int64 numbers) and returns every problem, each with its path.
func (s *Schema) Validate(v any) []string {
	var out []string
	s.validate(v, "", &out)
	return out
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		if f, ok := toFloat(x); ok {
			if f == math.Trunc(f) {
				return "integer"
			}
			return "number"
		}
	}
	return fmt.Sprintf("%T", v)
}

func (s *Schema) validate(v any, path string, out *[]string) {
	where := strings.TrimPrefix(path, ".")
	if where == "" {
		where = "value"
	}
	if len(*out) > 20 {
		return
	}
	if len(s.Types) > 0 {
		t := typeOf(v)
		ok := slices.Contains(s.Types, t) || (t == "integer" && slices.Contains(s.Types, "number"))
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", where, strings.Join(s.Types, " or "), t))
			return
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return equal(e, v) }) {
		*out = append(*out, fmt.Sprintf("%s: %v is not one of %v", where, v, s.Enum))
	}
	switch x := v.(type) {
	case string:
		n := len([]rune(x))
		if s.MinLength != nil && n < *s.MinLength {
			*out = append(*out, fmt.Sprintf("%s: shorter than %d", where, *s.MinLength))
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			*out = append(*out, fmt.Sprintf("%s: longer than %d", where, *s.MaxLength))
		}
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				*out = append(*out, fmt.Sprintf("%s: missing %q", where, r))
			}
		}
		for _, k := range sortedKeys(x) {
			sub, ok := s.Properties[k]
			if !ok {
				if s.Closed {
					*out = append(*out, fmt.Sprintf("%s: unexpected property %q", where, k))
				}
				continue
			}
			sub.validate(x[k], path+"."+k, out)
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			*out = append(*out, fmt.Sprintf("%s: fewer than %d items", where, *s.MinItems))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			*out = append(*out, fmt.Sprintf("%s: more than %d items", where, *s.MaxItems))
		}
		if s.Items != nil {
			for i, e := range x {
				s.Items.validate(e, fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
	default:
		if f, ok := toFloat(v); ok {
			if s.Min != nil && f < *s.Min {
				*out = append(*out, fmt.Sprintf("%s: %v is below %v", where, f, *s.Min))
			}
			if s.Max != nil && f > *s.Max {
				*out = append(*out, fmt.Sprintf("%s: %v is above %v", where, f, *s.Max))
			}
		}
	}
}

func equal(a, b any) bool {
	fa, okA := toFloat(a)
	fb, okB := toFloat(b)
	if okA && okB {
		return fa == fb
	}
	return a == b
}

// Example builds a deterministic value that satisfies the schema, used by
// the scripted model when a job asks for JSON. label names the value so the
// output reads sensibly on a timeline.
func (s *Schema) Example(label string) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	t := "string"
	if len(s.Types) > 0 {
		t = s.Types[0]
	}
	switch t {
	case "object":
		out := map[string]any{}
		for _, k := range s.order {
			out[k] = s.Properties[k].Example(label + " " + k)
		}
		return out
	case "array":
		if s.Items == nil {
			return []any{}
		}
		n := 1
		if s.MinItems != nil && *s.MinItems > n {
			n = *s.MinItems
		}
		out := make([]any, n)
		for i := range out {
			out[i] = s.Items.Example(label)
		}
		return out
	case "integer", "number":
		lo, hi := 0.0, 100.0
		if s.Min != nil {
			lo = *s.Min
		}
		if s.Max != nil {
			hi = *s.Max
		}
		if hi < lo {
			hi = lo
		}
		return int64(lo + (hi-lo)*0.7)
	case "boolean":
		return true
	case "null":
		return nil
	}
	text := strings.TrimSpace(label)
	if s.MaxLength != nil && len(text) > *s.MaxLength {
		text = text[:*s.MaxLength]
	}
	for s.MinLength != nil && len(text) < *s.MinLength {
		text += "."
	}
	return text
}
