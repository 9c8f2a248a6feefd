package rules

import (
	"encoding/json"
	"reflect"
	"strings"
)

// JSONSchema describes the pack format as a JSON Schema (draft 2020-12), so
// editors can complete and check pack YAML as authors type. It is derived
// from the model types by reflection, so it cannot drift from what Load
// accepts; each file of a pack (pack.yaml or an included file) is an
// object of sections.
func JSONSchema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root := g.object(reflect.TypeFor[Pack]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "baton rule pack"
	root["$defs"] = g.defs
	return json.MarshalIndent(root, "", "  ")
}

type schemaGen struct {
	defs map[string]any
}

var (
	strMapType   = reflect.TypeFor[StrMap]()
	policiesType = reflect.TypeFor[Policies]()
	triggerType  = reflect.TypeFor[TriggerSpec]()
	actionsType  = reflect.TypeFor[Actions]()
	prepareType  = reflect.TypeFor[Prepare]()
	assemblyType = reflect.TypeFor[AssemblyItem]()
	stepType     = reflect.TypeFor[SequenceStep]()
	enumType     = reflect.TypeFor[enum]()
	durationRE   = `^(0|[0-9.]+(ms|s|m|h)([0-9.]+(ms|s|m|h))*|[0-9]{1,2}(:[0-9]{1,2}){1,2}(\.[0-9]+)?|[A-Za-z_][A-Za-z0-9_]*)$`
	identRE      = `^[A-Za-z_][A-Za-z0-9_]*$`
	scriptRefRE  = `^([A-Za-z0-9_.-]+\.js#)?[A-Za-z_$][A-Za-z0-9_$]*$`
	scriptObject = map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"script"},
		"properties": map[string]any{"script": map[string]any{"type": "string", "pattern": scriptRefRE}},
	}
)

func (g *schemaGen) of(t reflect.Type) any {
	switch t {
	case durationType:
		return map[string]any{"description": "a duration (800ms, 12s, 1m30s, 03:00) or the name of a duration constant",
			"anyOf": []any{map[string]any{"type": "string", "pattern": durationRE}, map[string]any{"const": 0}}}
	case numberType:
		return map[string]any{"description": "a number or the name of a numeric constant",
			"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "string", "pattern": identRE}}}
	case exprType:
		return map[string]any{"description": "an expr expression, or {script: file.js#function}",
			"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "boolean"}, scriptObject}}
	case scriptType:
		return map[string]any{"type": "string", "pattern": scriptRefRE, "description": "file.js#function"}
	case templateType:
		return map[string]any{"type": "string", "description": "text with {{SLOT}} placeholders and ${expression} parts"}
	case valueType:
		return map[string]any{"description": "an expr expression of any type"}
	case prepareType:
		obj := g.object(t)
		return map[string]any{"description": "a lead time (3s), off, or {lead, on_stale}",
			"anyOf": []any{g.of(durationType), map[string]any{"const": "off"}, map[string]any{"const": false}, obj}}
	case actionsType:
		return g.actions()
	case assemblyType:
		return map[string]any{"type": "string", "description": "a prompt part (" + strings.Join(partWords(), ", ") + ") or a context file's name"}
	case stepType:
		return map[string]any{"description": "a role id, or {role, when}", "anyOf": []any{map[string]any{"type": "string"}, g.object(t)}}
	case triggerType:
		return map[string]any{"type": "string", "description": "a candidate event type (snake_case) or one of: " + strings.Join(EngineTriggerNames(), ", ")}
	case strMapType:
		return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	case policiesType:
		one := map[string]any{"type": "string", "enum": OnViolation(0).enumWords()}
		return map[string]any{"description": "a guardrail policy, or a chain of them tried in order",
			"anyOf": []any{one, map[string]any{"type": "array", "items": one}}}
	}
	if t.Kind() != reflect.Pointer && t.Implements(enumType) {
		var words []string
		for _, w := range reflect.Zero(t).Interface().(enum).enumWords() {
			if w != "" {
				words = append(words, w)
			}
		}
		return map[string]any{"type": "string", "enum": words}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Slice:
		return g.slice(t)
	case reflect.Struct:
		name := t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = true // placeholder against recursion
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return map[string]any{}
}

// slice allows a list, and for structs keyed by id a mapping from id to
// the rest, with the scalar shorthand where the loader has one.
func (g *schemaGen) slice(t reflect.Type) any {
	et := t.Elem()
	list := map[string]any{"type": "array", "items": g.of(et)}
	if et.Kind() != reflect.Struct {
		return list
	}
	idx, _ := fieldIndex(et)
	if _, keyed := idx["id"]; !keyed {
		return list
	}
	value := g.object(et)
	props := value["properties"].(map[string]any)
	delete(props, "id")
	var alts []any
	alts = append(alts, value)
	if reflect.PointerTo(et).Implements(shorthandType) {
		alts = append(alts, map[string]any{"type": []string{"string", "number", "boolean", "array"}})
	}
	mapping := map[string]any{"type": "object", "additionalProperties": map[string]any{"anyOf": alts}}
	return map[string]any{"anyOf": []any{mapping, list}}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	idx, names := fieldIndex(t)
	props := map[string]any{}
	for _, name := range names {
		props[name] = g.of(t.Field(idx[name]).Type)
	}
	return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
}

// actions is a list of one-key objects, one alternative per action kind,
// built from the one list of kinds.
func (g *schemaGen) actions() any {
	var alts []any
	for _, k := range actionKinds {
		t := reflect.TypeOf(k.new()).Elem()
		var body any
		// An action that is a turn (say, refuse) is written as one; its
		// setShorthand only explains that it takes one.
		f, hasTurn := t.FieldByName("Turn")
		turn := hasTurn && f.Type == reflect.TypeFor[TurnSpec]()
		switch {
		case turn:
			body = g.of(reflect.TypeFor[TurnSpec]())
		case t == reflect.TypeFor[RunAction]():
			body = g.of(reflect.TypeFor[Hook]())
		default:
			body = g.object(t)
		}
		if reflect.PointerTo(t).Implements(shorthandType) && !turn {
			body = map[string]any{"anyOf": []any{body, map[string]any{"type": []string{"string", "number", "boolean"}}}}
		}
		alts = append(alts, map[string]any{
			"type": "object", "additionalProperties": false, "minProperties": 1, "maxProperties": 1,
			"description": k.doc, "properties": map[string]any{k.key: body},
		})
	}
	return map[string]any{"type": "array", "items": map[string]any{"oneOf": alts}}
}
