package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// JSONSchema describes the pack format as a JSON Schema (draft 2020-12), so
// editors can complete and check pack YAML as authors type. Each file of a
// pack (pack.yaml or an included file) is an object of sections.
//
// The schema is derived from the model types by reflection, and its closed
// word lists from the loader's own tables (enums, engine triggers, action
// kinds, prompt parts, built-in names), so it cannot drift from what Load
// decodes. The rule it keeps is that a file Load accepts always validates:
// where the loader takes a reference to something the pack defines, the
// schema checks only its spelling, and null is accepted wherever the
// loader reads it as left out. A value's scalar form follows the loader's
// reading of YAML, not its tag: a text field takes 42 or true (read as
// "42", "true"), a whole number "42", a boolean yes or off.
func JSONSchema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root := g.object(reflect.TypeFor[Pack]())
	// An empty file is an empty set of sections.
	root["type"] = []string{"object", "null"}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "baton rule pack"
	root["description"] = "One file of a rule pack: pack.yaml, or a file it includes. Each section is defined in one file only, and include only in pack.yaml."
	root["$defs"] = g.defs
	if g.err != nil {
		return nil, g.err
	}
	// Patterns and descriptions hold < > &, which HTML escaping would
	// make unreadable.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return asciiJSON(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// asciiJSON escapes every non-ASCII character of a JSON document as \uXXXX,
// which JSON reads as the same string: the spaces in the patterns are
// invisible otherwise.
func asciiJSON(doc []byte) []byte {
	var out bytes.Buffer
	for _, r := range string(doc) {
		switch {
		case r < utf8.RuneSelf:
			out.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&out, "\\u%04x", r)
		}
	}
	return out.Bytes()
}

// jsch is one schema object; encoding/json writes its keys sorted, so the
// document is the same on every run.
type jsch = map[string]any

type schemaGen struct {
	defs map[string]any
	err  error
}

func (g *schemaGen) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("rules.JSONSchema: "+format, args...)
	}
}

var (
	strMapType   = reflect.TypeFor[StrMap]()
	policiesType = reflect.TypeFor[Policies]()
	triggerType  = reflect.TypeFor[TriggerSpec]()
	actionsType  = reflect.TypeFor[Actions]()
	prepareType  = reflect.TypeFor[Prepare]()
	assemblyType = reflect.TypeFor[AssemblyItem]()
	stepType     = reflect.TypeFor[SequenceStep]()
	ruleType     = reflect.TypeFor[Rule]()
	enumType     = reflect.TypeFor[enum]()
)

// Patterns. Each is written in the common subset of Go's RE2 and
// ECMA-262 (what editors run), whole-value anchored, and tested against
// the loader function it stands for (jsonschema_test.go).
const (
	identRE = `[A-Za-z_][A-Za-z0-9_]*`
	// spaceRE is what strings.TrimSpace takes off (unicode.IsSpace),
	// written out because \s differs between the two engines.
	spaceRE = "[\\t\\n\\v\\f\\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
	// notSpaceRE is one character that is none of them.
	notSpaceRE = "[^\\t\\n\\v\\f\\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)

// whole anchors a pattern at both ends.
func whole(alts ...string) string { return "^(?:" + strings.Join(alts, "|") + ")$" }

// durationPattern is what Duration.decodeNode takes: a constant's name,
// or ParseDuration's syntax. ParseDuration trims spaces, then takes "0",
// a clock time (mm:ss, mm:ss.f, hh:mm:ss, minutes and seconds below 60)
// or Go's time.ParseDuration syntax, which is not negative. A pattern
// cannot bound a value's size (the loader refuses overflows and clock
// times past 1e9 seconds), and leaves out what only odd spellings reach:
// a clock part written 1e1, 0x1p1 or 1_0, and a negative that truncates
// to 0ns (-0.5ns). TestJSONSchemaDurationCases pins them.
var durationPattern = func() string {
	num := `(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)`
	zero := `(?:0+(?:\.0*)?|\.0+)`
	unit := `(?:ns|us|µs|μs|ms|s|m|h)`
	// A minus sign only on a zero: -0s is 0, -1s is refused.
	goDur := `(?:\+?(?:0|(?:` + num + unit + `)+)|-(?:0|(?:` + zero + unit + `)+))`
	// Clock parts: a whole number, and below 60 after the first.
	minusZero := `-` + zero
	first := `(?:\+?(?:[0-9]+(?:\.0*)?|\.0+)|` + minusZero + `)`
	mid := `(?:\+?(?:0*[0-5]?[0-9](?:\.0*)?|\.0+)|` + minusZero + `)`
	last := `(?:\+?(?:0*[0-5]?[0-9](?:\.[0-9]*)?|\.[0-9]+)|` + minusZero + `)`
	clock := `(?:` + first + `:` + last + `|` + first + `:` + mid + `:` + last + `)`
	return whole(identRE, spaceRE+`*(?:`+goDur+`|`+clock+`)`+spaceRE+`*`)
}()

// numberPattern is what Number.decodeNode takes as text: a constant's
// name, or a finite number in strconv.ParseFloat's syntax (underscores
// between digits, exponents, hexadecimal with a p exponent).
var numberPattern = func() string {
	dig := `[0-9](?:_?[0-9])*`
	hex := `[0-9a-fA-F](?:_?[0-9a-fA-F])*`
	dec := `(?:` + dig + `(?:\.(?:` + dig + `)?)?|\.` + dig + `)(?:[eE][+-]?` + dig + `)?`
	hexf := `0[xX](?:_?` + hex + `(?:\.(?:` + hex + `)?)?|\.` + hex + `)[pP][+-]?` + dig
	return whole(identRE, `[+-]?(?:`+dec+`|`+hexf+`)`)
}()

// intPattern is a whole number written as text: the loader drops
// underscores before strconv.ParseInt.
var intPattern = whole(`_*(?:[+-]_*)?(?:[0-9]_*)+`)

// scriptRefPattern is ScriptRef's syntax: function, or file.js#function.
// The file must name one of scripts/*.js once the path is cleaned, so it
// holds ".js"; that it exists is for Load to say.
var scriptRefPattern = whole(`(?:(?:[^#]*\.js[^#]*)?#)?[A-Za-z_$][A-Za-z0-9_$]*`)

// templatePattern is Template.parse's syntax: {{SLOT}} placeholders and
// ${expression} parts, each closed, a slot named by an identifier, an
// expression not empty. A { or $ not followed by { is text; before ${
// it is text too ({${x}, $${x}).
var templatePattern = func() string {
	slot := `\{\{` + spaceRE + `*` + identRE + spaceRE + `*\}\}`
	notBraceSpace := strings.Replace(notSpaceRE, "[^", "[^}", 1)
	expr := `\$\{[^}]*` + notBraceSpace + `[^}]*\}`
	return "^(?:" + strings.Join([]string{
		`[^{$]`,
		`[{$]\$*(?:[^{$]|$)`,
		`(?:[{$]\$*)?` + expr,
		slot,
	}, "|") + ")*$"
}()

// fileNamePattern is isFileName: lower-case letters, digits, '-', '_'
// and '.', not starting with '.' or '-', no "..", at most 64 (maxLength).
var fileNamePattern = whole(`[a-z0-9_](?:[a-z0-9_-]|\.[a-z0-9_-])*\.?`)

// nameRE is isName: what tool:, job: and sequence: triggers name.
var (
	nameRE      = fmt.Sprintf(`[A-Za-z0-9_-]{1,%d}`, MaxEventType)
	namePattern = whole(nameRE)
)

// fencePattern is a gate's fence: one line, no '=', no spaces around it.
var fencePattern = func() string {
	edge := strings.Replace(notSpaceRE, "[^", "[^=", 1)
	return `^(?:` + edge + `(?:[^=\n]*` + edge + `)?)?$`
}()

// textTypes are the JSON types of a YAML scalar, which the loader reads
// as its text.
var textTypes = []string{"string", "number", "boolean"}

func textSchema() jsch { return jsch{"type": textTypes} }

func str(pattern, desc string) jsch {
	s := jsch{"type": "string", "pattern": pattern}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func words(list []string) jsch {
	var out []string
	for _, w := range list {
		if w != "" {
			out = append(out, w)
		}
	}
	return jsch{"type": "string", "enum": out}
}

func durationSchema() jsch {
	return jsch{
		"type": []string{"string", "integer"}, "pattern": durationPattern, "minimum": 0, "maximum": 0,
		"description": "a duration (800ms, 12s, 1m30s, 03:00, 01:02:03.5) or a duration constant's name; as a number, only 0",
	}
}

func identSchema(desc string) jsch { return str(whole(identRE), desc) }

// notWords is s refusing some words that its pattern would take.
func notWords(s jsch, list ...string) jsch {
	s["not"] = jsch{"enum": slices.Clone(list)}
	return s
}

func fileNameSchema(desc string) jsch {
	s := str(fileNamePattern, desc)
	s["maxLength"] = 64
	return s
}

func scriptRefSchema() jsch {
	return str(scriptRefPattern, "a function of the pack's scripts/*.js: name, or file.js#name")
}

// fieldKey names one field of a model type by its YAML key.
type fieldKey struct {
	t   reflect.Type
	key string
}

func fk[T any](key string) fieldKey { return fieldKey{reflect.TypeFor[T](), key} }

// fieldSchemas are fields whose syntax the checker fixes beyond their Go
// type: ids it checks the spelling of, and references to what the pack
// defines whose ids have such a spelling. A reference is listed only where
// it is checked whatever else the pack says: a turn's role is not (an
// anchor that ends the session never checks its turn), nor a route's
// fields its type does not use.
var fieldSchemas = map[fieldKey]func(g *schemaGen) jsch{
	fk[Pack]("schema"): func(*schemaGen) jsch {
		return jsch{"type": []string{"integer", "string"}, "minimum": 0, "maximum": 1, "pattern": intPattern, "description": "the pack format's version: 1"}
	},
	fk[Role]("id"): func(*schemaGen) jsch {
		return notWords(identSchema("letters, digits and _"), RoleLast, RoleSame, RoleAddressed, RoleActive)
	},
	fk[Constant]("id"): func(*schemaGen) jsch {
		return notWords(identSchema("letters, digits and _, not a built-in name"), builtinNames...)
	},
	fk[Var]("id"): func(*schemaGen) jsch {
		return notWords(identSchema("letters, digits and _, not a built-in name"), builtinNames...)
	},
	fk[Constant]("value"): func(*schemaGen) jsch {
		return jsch{"type": textTypes, "description": "a number, text, boolean or duration (12s, 03:00)"}
	},
	fk[Var]("initial"): func(*schemaGen) jsch {
		return jsch{"type": textTypes, "description": "a number, text or boolean; it fixes the variable's type"}
	},
	fk[Tool]("id"):        func(*schemaGen) jsch { return identSchema("letters, digits and _") },
	fk[GateFlag]("id"):    func(*schemaGen) jsch { return identSchema("letters, digits and _") },
	fk[Sequence]("id"):    func(*schemaGen) jsch { return str(namePattern, "letters, digits, _ and -") },
	fk[ContextFile]("id"): func(*schemaGen) jsch { return notWords(fileNameSchema("such as focus-brief.md"), partWords()...) },
	fk[GateFlag]("fallback"): func(*schemaGen) jsch {
		return jsch{"type": []string{"boolean", "string"}, "description": "the value used when a reply has no valid block: true or false for a bool flag, else text"}
	},
	fk[Job]("role"): func(*schemaGen) jsch {
		return str(whole(identRE, `args\.`+identRE), "a role id, or args.NAME for the role an argument names")
	},
	fk[SequenceStep]("role"): func(*schemaGen) jsch { return identSchema("a role id") },
	fk[Gate]("role"):         func(*schemaGen) jsch { return identSchema("the role id of one of the sequence's steps") },
	fk[Weight]("id"):         func(*schemaGen) jsch { return identSchema("a role id") },
	fk[ContextFile]("roles"): func(*schemaGen) jsch {
		return jsch{"type": "array", "items": identSchema("a role id")}
	},
	fk[Tickets]("roles"): func(*schemaGen) jsch {
		return jsch{"type": "array", "items": identSchema("a role id"), "minItems": 1}
	},
	fk[ContextBudget]("trim"): func(*schemaGen) jsch {
		return jsch{"type": "array", "uniqueItems": true,
			"items": fileNameSchema("a context file's name, or a sequence part (" + strings.Join(SequenceParts, ", ") + ")")}
	},
	fk[Gate]("fence"): func(*schemaGen) jsch {
		return jsch{"type": textTypes, "pattern": fencePattern, "description": "the line that opens and closes the block (default ---): no '=', no spaces around it"}
	},
	fk[Tool]("parameters"):         func(g *schemaGen) jsch { return g.toolSchema() },
	fk[Job]("schema"):              func(g *schemaGen) jsch { return g.toolSchema() },
	fk[SetAction]("var"):           func(*schemaGen) jsch { return identSchema("a declared variable") },
	fk[SlotAction]("name"):         func(*schemaGen) jsch { return identSchema("letters, digits and _") },
	fk[RecordAction]("name"):       func(*schemaGen) jsch { return identSchema("letters, digits and _") },
	fk[WriteAction]("file"):        func(*schemaGen) jsch { return fileNameSchema("a declared context file") },
	fk[AppendAction]("file"):       func(*schemaGen) jsch { return fileNameSchema("a declared context file") },
	fk[SequenceAction]("id"):       func(*schemaGen) jsch { return str(namePattern, "a sequence of the pack") },
	fk[CancelSequenceAction]("id"): func(*schemaGen) jsch { return str(namePattern, "a sequence of the pack") },
}

// required lists, per type, the fields the checker refuses to go without,
// whatever else the pack says; a field set to null or "" counts as left
// out, as the loader reads it.
var required = map[reflect.Type][]string{
	reflect.TypeFor[Route]():                {"type"},
	reflect.TypeFor[Rule]():                 {"do"},
	reflect.TypeFor[Check]():                {"when", "do"},
	reflect.TypeFor[EndRule]():              {"when"},
	reflect.TypeFor[Job]():                  {"prompt"},
	reflect.TypeFor[Sequence]():             {"steps"},
	reflect.TypeFor[Gate]():                 {"flags"},
	reflect.TypeFor[GateFlag]():             {"fallback"},
	reflect.TypeFor[Window]():               {"close"},
	reflect.TypeFor[SilenceStep]():          {"after"},
	reflect.TypeFor[Hook]():                 {"script"},
	reflect.TypeFor[Tickets]():              {"roles", "total"},
	reflect.TypeFor[Phase]():                {"job"},
	reflect.TypeFor[Attachment]():           {"file"},
	reflect.TypeFor[SetAction]():            {"var", "value"},
	reflect.TypeFor[TicketAction]():         {"role"},
	reflect.TypeFor[InjectAction]():         {"role"},
	reflect.TypeFor[JobAction]():            {"id"},
	reflect.TypeFor[SequenceAction]():       {"id"},
	reflect.TypeFor[CancelSequenceAction](): {"id"},
	reflect.TypeFor[MemoryAction]():         {"role"},
	reflect.TypeFor[SlotAction]():           {"name"},
	reflect.TypeFor[WriteAction]():          {"file"},
	reflect.TypeFor[AppendAction]():         {"file", "text"},
	reflect.TypeFor[RecordAction]():         {"name", "value"},
	reflect.TypeFor[ReportAction]():         {"kind", "value"},
	reflect.TypeFor[ConfidenceStep]():       {"count", "turn"},
}

// idRequired lists the keyed types whose id the checker refuses to go
// without; written as a list, each entry then needs its id: key.
var idRequired = []reflect.Type{
	reflect.TypeFor[Constant](), reflect.TypeFor[Var](), reflect.TypeFor[Role](), reflect.TypeFor[Tool](),
	reflect.TypeFor[ContextFile](), reflect.TypeFor[Sequence](), reflect.TypeFor[GateFlag](), reflect.TypeFor[Weight](),
	reflect.TypeFor[Anchor](), reflect.TypeFor[Window](), reflect.TypeFor[Route](), reflect.TypeFor[Rule](),
	reflect.TypeFor[EndRule](), reflect.TypeFor[Check](),
}

// of is the schema of a value the decoder reads into a field of type t.
// The decoder skips null before it looks at the type, so every such value
// may be null.
func (g *schemaGen) of(t reflect.Type) jsch {
	if v, ok := atValue(t); ok {
		return g.of(v) // At keeps where its value is written; the value is what is written
	}
	if t.Kind() == reflect.Struct && !special(t) {
		return g.ref(t) // its definition takes null
	}
	return g.nullable(g.base(t))
}

// atValue is the type of the value an At[T] holds.
func atValue(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct || t.PkgPath() != atPkg || !strings.HasPrefix(t.Name(), "At[") {
		return nil, false
	}
	return t.Field(0).Type, true
}

var atPkg = reflect.TypeFor[At[string]]().PkgPath()

func special(t reflect.Type) bool {
	switch t {
	case durationType, numberType, exprType, valueType, scriptType, templateType,
		prepareType, actionsType, assemblyType, stepType, triggerType, strMapType, policiesType:
		return true
	}
	return false
}

// base is the schema of a t that is written, null aside.
func (g *schemaGen) base(t reflect.Type) jsch {
	switch t {
	case durationType:
		return durationSchema()
	case numberType:
		return jsch{"type": []string{"number", "string"}, "pattern": numberPattern, "description": "a number, or a numeric constant's name"}
	case exprType:
		return jsch{
			"type": []string{"string", "number", "boolean", "object"}, "maxLength": MaxExprLen,
			"additionalProperties": false, "required": []string{"script"},
			"properties":  jsch{"script": scriptRefSchema()},
			"description": "a condition: an expr expression, or {script: file.js#function} returning a boolean",
		}
	case valueType:
		return jsch{"type": textTypes, "maxLength": MaxExprLen, "description": "an expr expression"}
	case scriptType:
		return scriptRefSchema()
	case templateType:
		return jsch{"type": textTypes, "pattern": templatePattern, "description": "text with {{SLOT}} placeholders and ${expression} parts"}
	case prepareType:
		// A lead time, a word for off (a word for on is refused), or the
		// full form.
		s := g.object(t)
		s["type"] = []string{"string", "integer", "boolean", "object"}
		s["pattern"], s["minimum"], s["maximum"] = durationPattern, 0, 0
		s["not"] = jsch{"enum": append([]any{true}, anys(trueWords)...)}
		s["description"] = "a lead time (3s), off, or {lead, on_stale}"
		return s
	case actionsType:
		g.actionsDef()
		return jsch{"$ref": "#/$defs/Actions"}
	case assemblyType:
		return fileNameSchema("a prompt part (" + strings.Join(partWords(), ", ") + ") or a context file's name")
	case stepType:
		s := g.object(t)
		s["type"] = []string{"string", "object"}
		s["pattern"] = whole(identRE)
		s["description"] = "a role id, or {role, when}"
		return s
	case triggerType:
		var plain, docs, prefixes []string
		for _, e := range engineTriggers {
			if named(e.name) {
				prefixes = append(prefixes, strings.TrimSuffix(e.name, ":"))
				docs = append(docs, e.name+"NAME: "+e.doc)
				continue
			}
			plain = append(plain, e.name)
			docs = append(docs, e.name+": "+e.doc)
		}
		return jsch{
			"description": "a candidate event type (snake_case), or one of the engine's triggers: " + strings.Join(docs, "; "),
			"anyOf": []any{
				words(plain),
				str(whole(`(?:`+strings.Join(prefixes, "|")+`):`+nameRE), "a trigger naming a tool, job or sequence of the pack"),
				str(whole(fmt.Sprintf(`[a-z_][a-z0-9_]{0,%d}`, MaxEventType-1)), "a candidate event type"),
			},
		}
	case strMapType:
		return jsch{"type": "object", "additionalProperties": nullable(textSchema())}
	case policiesType:
		one := words(onViolationWords)
		return jsch{
			"description": "a guardrail policy, or a chain of them tried in order",
			"anyOf":       []any{one, jsch{"type": "array", "items": one, "uniqueItems": true}},
		}
	}
	if t.Kind() != reflect.Pointer && t.Implements(enumType) {
		return words(reflect.Zero(t).Interface().(enum).enumWords())
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.base(t.Elem())
	case reflect.String:
		return textSchema()
	case reflect.Bool:
		return jsch{"type": []string{"boolean", "string"}, "enum": append([]any{true, false}, anys(slices.Concat(trueWords, falseWords))...)}
	case reflect.Int, reflect.Int64:
		return jsch{"type": []string{"integer", "string"}, "pattern": intPattern}
	case reflect.Float64:
		return jsch{"type": []string{"number", "string"}, "pattern": numberPattern}
	case reflect.Interface:
		return jsch{}
	case reflect.Slice:
		return g.slice(t)
	case reflect.Struct:
		return g.object(t)
	}
	g.fail("no schema for %s", t)
	return jsch{}
}

func anys(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// ref is a reference to t's definition, made once.
func (g *schemaGen) ref(t reflect.Type) jsch {
	name := t.Name()
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = true // placeholder against recursion
		s := g.object(t)
		if forms, _, ok := g.shorthand(t); ok && len(forms) > 0 {
			s = union(append([]jsch{s}, forms...)...)
		}
		g.defs[name] = nullable(s)
	}
	return jsch{"$ref": "#/$defs/" + name}
}

// slice allows a list, and for structs keyed by id a mapping from id to
// the rest (or the scalar shorthand where the type has one).
func (g *schemaGen) slice(t reflect.Type) jsch {
	et := t.Elem()
	if et.Kind() != reflect.Struct || special(et) {
		return jsch{"type": "array", "items": g.of(et)}
	}
	idx, _ := fieldIndex(et)
	if _, keyed := idx["id"]; !keyed {
		return jsch{"type": "array", "items": g.of(et)}
	}
	value := g.of(et)
	item := jsch{"$ref": value["$ref"]}
	if forms, _, ok := g.shorthand(et); ok && len(forms) > 0 {
		item["type"] = []string{"object", "null"} // the shorthand is for mappings
	}
	if slices.Contains(idRequired, et) {
		item["required"] = []string{"id"}
		item["type"] = "object"
	}
	s := jsch{"type": []string{"object", "array"}, "additionalProperties": value, "items": item}
	// An id the checker spells a certain way: keys are matched by their
	// pattern rather than by propertyNames, so a validator names the key
	// that is wrong, and a reserved word is a key of its own that takes
	// nothing.
	id := g.fieldSchema(et, "id")
	if pattern, ok := id["pattern"].(string); ok {
		s["patternProperties"] = jsch{pattern: value}
		s["additionalProperties"] = false
		if not, ok := id["not"].(jsch); ok {
			reserved := jsch{}
			for _, w := range not["enum"].([]string) {
				reserved[w] = false
			}
			s["properties"] = reserved
		}
		if n, ok := id["maxLength"]; ok {
			s["propertyNames"] = jsch{"maxLength": n}
		}
	}
	return s
}

// fieldSchema is the schema of t's field key, null aside, or nil when t
// has no such field.
func (g *schemaGen) fieldSchema(t reflect.Type, key string) jsch {
	if f, ok := fieldSchemas[fieldKey{t, key}]; ok && f != nil {
		return f(g)
	}
	idx, _ := fieldIndex(t)
	i, ok := idx[key]
	if !ok {
		return nil
	}
	return g.base(t.Field(i).Type)
}

func (g *schemaGen) object(t reflect.Type) jsch {
	idx, names := fieldIndex(t)
	props := jsch{}
	for _, name := range names {
		if f, ok := fieldSchemas[fieldKey{t, name}]; ok && f != nil {
			props[name] = g.nullable(f(g))
		} else {
			props[name] = g.of(t.Field(idx[name]).Type)
		}
	}
	s := jsch{"type": "object", "additionalProperties": false, "properties": props}
	for _, key := range required[t] {
		p, ok := props[key].(jsch)
		if !ok {
			g.fail("%s has no field %s to require", t, key)
			continue
		}
		props[key] = g.notUnset(p)
	}
	if req := required[t]; len(req) > 0 {
		s["required"] = req
	}
	if t == ruleType {
		// A rule runs on exactly one of them.
		var one []any
		for _, key := range []string{"trigger", "at", "every"} {
			one = append(one, jsch{"required": []string{key}, "properties": jsch{key: jsch{"not": jsch{"type": "null"}}}})
		}
		s["oneOf"] = one
	}
	return s
}

// shorthand finds how a type with a setShorthand may be written instead
// of as a mapping, by handing it what a pack could write and seeing what
// it takes: a scalar, a list (each as the schema of the field it fills),
// and null. ok is false when t has no shorthand.
func (g *schemaGen) shorthand(t reflect.Type) (forms []jsch, null, ok bool) {
	if !reflect.PointerTo(t).Implements(shorthandType) {
		return nil, false, false
	}
	x := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x"}
	probe := func(n *yaml.Node) (reflect.StructField, bool, bool) {
		v := reflect.New(t)
		var errs ErrorList
		v.Interface().(shorthand).setShorthand(&decoder{file: "probe", errs: &errs}, n)
		if len(errs) > 0 {
			return reflect.StructField{}, false, false
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && f.Type != posType && !v.Elem().Field(i).IsZero() {
				return f, true, true
			}
		}
		return reflect.StructField{}, false, true
	}
	// A shorthand that fills a closed set of words takes none but those:
	// probe with one.
	for i := range t.NumField() {
		if ft := t.Field(i).Type; ft.Kind() == reflect.Uint8 && ft.Implements(reflect.TypeFor[enum]()) {
			e := reflect.Zero(ft).Interface().(enum)
			for _, w := range e.enumWords() {
				if w != "" {
					x = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: w}
					break
				}
			}
		}
	}
	if f, filled, accepted := probe(x); accepted && filled {
		s := g.fieldOf(t, f)
		if f.Type.Kind() == reflect.Slice {
			s = g.base(f.Type.Elem())
		}
		forms = append(forms, s)
	}
	if f, filled, accepted := probe(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{x}}); accepted && filled {
		if s := g.fieldOf(t, f); hasType(s, "array") {
			forms = append(forms, s)
		}
	}
	_, _, null = probe(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"})
	return forms, null, true
}

// fieldOf is the schema of field f of t, null aside.
func (g *schemaGen) fieldOf(t reflect.Type, f reflect.StructField) jsch {
	if key, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); key != "" {
		if s := g.fieldSchema(t, key); s != nil {
			return s
		}
	}
	return g.base(f.Type)
}

// actionsDef defines Actions: a list of mappings with one key, the kind,
// whose value is that kind's body.
func (g *schemaGen) actionsDef() {
	if _, ok := g.defs["Actions"]; ok {
		return
	}
	g.defs["Actions"] = true
	bodies := jsch{}
	for _, k := range actionKinds {
		bodies[k.key] = g.actionBody(k.key, k.new(), k.doc)
	}
	g.defs["Actions"] = jsch{
		"type": []string{"array", "null"},
		"items": jsch{
			"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": false,
			"properties": bodies, "description": "an action: a mapping with one key, the action's kind",
		},
	}
}

// actionBody follows decodeAction: a kind with its own decoder is its one
// field (say is a turn, run a hook); a kind whose body is a value takes
// it only in its shorthand; any other is a mapping of its fields, or its
// shorthand.
func (g *schemaGen) actionBody(key string, a Action, doc string) jsch {
	t := reflect.TypeOf(a).Elem()
	var forms []jsch
	if reflect.PointerTo(t).Implements(nodeDecoderType) {
		var field reflect.Type
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Type != posType {
				field = f.Type
			}
		}
		if field == nil {
			g.fail("action %s decodes itself but has no field", key)
			return jsch{}
		}
		body := g.of(field)
		if _, isRef := body["$ref"]; isRef {
			body["type"] = "object"
		}
		forms = append(forms, body)
	} else if _, valued := a.(valueBody); !valued {
		if idx, _ := fieldIndex(t); len(idx) > 0 {
			forms = append(forms, g.object(t))
		}
	}
	sh, null, _ := g.shorthand(t)
	forms = append(forms, sh...)
	if len(forms) == 0 {
		g.fail("action %s has no form a pack can write", key)
		return jsch{}
	}
	body := union(forms...)
	if null {
		body = nullable(body)
	}
	body["description"] = doc
	return body
}

// toolSchema defines ToolSchema: the subset of JSON Schema that package
// rules/schema compiles for tool parameters and job output, recursively.
func (g *schemaGen) toolSchema() jsch {
	if _, ok := g.defs["ToolSchema"]; !ok {
		// Null stands for no schema where a tool or job takes one; inside
		// a schema, rules/schema wants an object everywhere.
		self := jsch{"$ref": "#/$defs/ToolSchema", "type": "object"}
		typ := words(toolSchemaTypes)
		count := jsch{"type": "integer", "minimum": 0}
		props := jsch{
			"type":                 jsch{"anyOf": []any{typ, jsch{"type": "array", "items": typ}, jsch{"type": "null"}}},
			"properties":           jsch{"type": "object", "additionalProperties": self},
			"required":             jsch{"type": "array", "items": jsch{"type": "string"}},
			"additionalProperties": jsch{"type": "boolean"},
			"items":                self,
			"enum":                 jsch{"type": "array", "minItems": 1},
			"minimum":              jsch{"type": "number"},
			"maximum":              jsch{"type": "number"},
			"minLength":            count,
			"maxLength":            count,
			"minItems":             count,
			"maxItems":             count,
			"description":          jsch{},
			"title":                jsch{},
		}
		for _, k := range toolSchemaKeywords {
			if _, ok := props[k]; !ok {
				g.fail("tool schema keyword %s has no schema", k)
			}
		}
		g.defs["ToolSchema"] = jsch{
			"type": []string{"object", "null"}, "additionalProperties": false, "properties": props,
			"description": "a JSON Schema in the subset tools and jobs take: " + strings.Join(toolSchemaKeywords, ", "),
		}
	}
	return jsch{"$ref": "#/$defs/ToolSchema"}
}

// toolSchemaKeywords and toolSchemaTypes are what rules/schema compiles;
// it keeps them unexported, so they are repeated here, and a test holds
// the two lists together.
var (
	toolSchemaKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "enum",
		"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "description", "title"}
	toolSchemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}
)

// typedKeywords are the keywords that apply to one JSON type only, so
// schemas of different types can share one object.
var typedKeywords = map[string]string{
	"properties": "object", "additionalProperties": "object", "propertyNames": "object", "required": "object",
	"minProperties": "object", "maxProperties": "object",
	"items": "array", "uniqueItems": "array", "minItems": "array", "maxItems": "array",
	"pattern": "string", "minLength": "string", "maxLength": "string",
	"minimum": "number", "maximum": "number",
}

func typesOf(s jsch) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []string:
		return t
	}
	return nil
}

func hasType(s jsch, t string) bool { return slices.Contains(typesOf(s), t) }

func setTypes(s jsch, ts []string) {
	if len(ts) == 1 {
		s["type"] = ts[0]
	} else {
		s["type"] = ts
	}
}

// union is a schema for a value written in any of the forms. Forms of
// different JSON types whose keywords do not meet are merged into one
// schema, so a validator reports a problem against the form the value
// has; others become anyOf.
func union(forms ...jsch) jsch {
	if len(forms) == 1 {
		return forms[0]
	}
	out := jsch{}
	var types []string
	for _, f := range forms {
		ts := typesOf(f)
		if ts == nil {
			return jsch{"anyOf": anysOf(forms)}
		}
		for _, t := range ts {
			if slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number") || t == "number" && slices.Contains(types, "integer") {
				return jsch{"anyOf": anysOf(forms)}
			}
		}
		types = append(types, ts...)
		for k, v := range f {
			switch {
			case k == "type":
			case k == "description":
				if d, ok := out[k].(string); ok {
					v = d + "; or " + v.(string)
				}
				out[k] = v
			case typedKeywords[k] == "" || out[k] != nil:
				return jsch{"anyOf": anysOf(forms)}
			default:
				out[k] = v
			}
		}
	}
	setTypes(out, types)
	return out
}

func anysOf(forms []jsch) []any {
	out := make([]any, len(forms))
	for i, f := range forms {
		out[i] = f
	}
	return out
}

// nullable is s also taking null; a reference to a definition that
// takes null already is left as it is.
func (g *schemaGen) nullable(s jsch) jsch {
	if r, ok := s["$ref"].(string); ok && len(s) == 1 {
		if def, ok := g.defs[strings.TrimPrefix(r, "#/$defs/")].(jsch); ok && hasType(def, "null") {
			return s
		}
	}
	return nullable(s)
}

// nullable is s also taking null.
func nullable(s jsch) jsch {
	switch {
	case s["$ref"] != nil || s["const"] != nil:
		return jsch{"anyOf": []any{s, jsch{"type": "null"}}}
	case s["anyOf"] != nil:
		alts := s["anyOf"].([]any)
		for _, a := range alts {
			if hasType(a.(jsch), "null") {
				return s
			}
		}
		s["anyOf"] = append(alts, jsch{"type": "null"})
		return s
	case s["type"] == nil:
		return s // takes anything already
	}
	if ts := typesOf(s); !slices.Contains(ts, "null") {
		setTypes(s, append(slices.Clone(ts), "null"))
	}
	if e, ok := s["enum"]; ok {
		switch list := e.(type) {
		case []string:
			s["enum"] = append(anys(list), nil)
		case []any:
			if !slices.Contains(list, nil) {
				s["enum"] = append(list, nil)
			}
		}
	}
	return s
}

// notUnset is a field's schema when the checker needs it: not null, and
// not empty, which the loader reads as left out too.
func (g *schemaGen) notUnset(s jsch) jsch {
	if r, isRef := s["$ref"].(string); isRef {
		def, _ := g.defs[strings.TrimPrefix(r, "#/$defs/")].(jsch)
		out := jsch{"$ref": r}
		ts := slices.DeleteFunc(slices.Clone(typesOf(def)), func(t string) bool { return t == "null" })
		if len(ts) == 0 {
			g.fail("%s cannot be required: its definition is not built yet", r)
		}
		setTypes(out, ts)
		if hasType(out, "array") {
			out["minItems"] = 1
		}
		return out
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var keep []any
		for _, a := range alts {
			if ts := typesOf(a.(jsch)); len(ts) == 1 && ts[0] == "null" {
				continue
			}
			keep = append(keep, a)
		}
		if len(keep) == 1 {
			return g.notUnset(keep[0].(jsch))
		}
		s["anyOf"] = keep
		return s
	}
	if ts := typesOf(s); ts != nil {
		setTypes(s, slices.DeleteFunc(slices.Clone(ts), func(t string) bool { return t == "null" }))
	}
	if list, ok := s["enum"].([]any); ok {
		s["enum"] = slices.DeleteFunc(slices.Clone(list), func(v any) bool { return v == nil })
	}
	if hasType(s, "array") {
		s["minItems"] = 1
	}
	if hasType(s, "string") && s["enum"] == nil && s["minLength"] == nil {
		s["minLength"] = 1
	}
	if hasType(s, "object") && s["properties"] == nil {
		s["minProperties"] = 1
	}
	return s
}
