package describe

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
	"github.com/batonhq/baton/scenarios"
)

func bundled(t *testing.T, name string) *rules.Pack {
	t.Helper()
	sub, err := fs.Sub(scenarios.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.LoadFS(sub)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func event(c Contract, typ string) (Event, bool) {
	i := slices.IndexFunc(c.Events, func(e Event) bool { return e.Type == typ })
	if i < 0 {
		return Event{}, false
	}
	return c.Events[i], true
}

func dataNames(e Event) []string {
	var out []string
	for _, f := range e.Data {
		out = append(out, f.Name)
	}
	return out
}

func toolNames(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// What each bundled pack's contract must say; the events' data are the
// fields its rules really read.
func TestBundledPacks(t *testing.T) {
	for _, tc := range []struct {
		pack        string
		events      map[string][]string // event type -> data fields at least
		clientTools []string
		effects     []string
		noEffects   []string
	}{
		{pack: "training",
			events: map[string][]string{
				"editor_changed":   {"code", "line"},
				"run_error":        {"text"},
				"run_passed":       nil,
				rules.EventMessage: {"text", "stt_confidence", "addressed_to"},
			},
			clientTools: []string{"open_file", "write_file"},
			effects:     []string{"client_tool_call", "tool_result", "slot"},
			noEffects:   []string{"live_session", "sequence"}},
		{pack: "brain",
			events:    map[string][]string{"user_prompt": {"text", "run_id"}, "cancel": {"run_id"}, "leave": nil},
			effects:   []string{"sequence"},
			noEffects: []string{"client_tool_call"}},
		{pack: "boardroom",
			events:    map[string][]string{"slide_changed": nil, "intel_update": nil},
			noEffects: []string{"client_tool_call"}},
		{pack: "dayone", events: map[string][]string{rules.EventMicState: {"mic_active"}}},
		{pack: "hotseat", events: map[string][]string{rules.EventTypingState: {"typing"}}},
	} {
		t.Run(tc.pack, func(t *testing.T) {
			c := Describe(bundled(t, tc.pack))
			if c.Pack.Name != tc.pack || len(c.Roles) == 0 {
				t.Errorf("pack %q with %d roles", c.Pack.Name, len(c.Roles))
			}
			for typ, fields := range tc.events {
				ev, ok := event(c, typ)
				if !ok || !ev.Accepted {
					t.Errorf("event %s missing or not accepted: %+v", typ, ev)
					continue
				}
				for _, f := range fields {
					if !slices.Contains(dataNames(ev), f) {
						t.Errorf("event %s: data %v lacks %s", typ, dataNames(ev), f)
					}
				}
			}
			if got := toolNames(c.ClientTools); !slices.Equal(got, tc.clientTools) {
				t.Errorf("client tools %v, want %v", got, tc.clientTools)
			}
			for _, ct := range c.ClientTools {
				var schema map[string]any
				if err := json.Unmarshal(ct.Parameters, &schema); err != nil || schema["type"] != "object" {
					t.Errorf("tool %s: parameters %s", ct.Name, ct.Parameters)
				}
				if ct.Workspace == nil || len(ct.Workspace.Result) == 0 {
					t.Errorf("tool %s: no workspace result shape", ct.Name)
				}
			}
			var effs []string
			for _, e := range c.Effects {
				effs = append(effs, e.Type)
			}
			for _, e := range tc.effects {
				if !slices.Contains(effs, e) {
					t.Errorf("effects %v lack %s", effs, e)
				}
			}
			for _, e := range tc.noEffects {
				if slices.Contains(effs, e) {
					t.Errorf("effects %v have %s, which the pack cannot produce", effs, e)
				}
			}
			var a, b bytes.Buffer
			WriteJSON(&a, c)
			WriteJSON(&b, Describe(bundled(t, tc.pack)))
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("two descriptions of the same pack differ")
			}
		})
	}
}

// Describe's events hold every event type a pack really reacts to,
// found here without describe's code: each rule's trigger, read from
// the rules, and every event type an expression's source compares
// msg.type against.
func TestConformance(t *testing.T) {
	cmpType := regexp.MustCompile(`msg\.type\s*(?:==|!=)\s*["']([a-z_0-9]+)["']|["']([a-z_0-9]+)["']\s*(?:==|!=)\s*msg\.type`)
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			p := bundled(t, name)
			want := map[string]string{}
			for _, r := range p.Rules {
				if r.On.Set() && r.On.Kind == rules.TriggerEvent {
					want[r.On.Name] = "rule " + r.ID
				}
			}
			for _, src := range exprSources(reflect.ValueOf(p).Elem()) {
				for _, m := range cmpType.FindAllStringSubmatch(src, -1) {
					want[m[1]+m[2]] = "expression " + src
				}
			}
			if len(want) == 0 && name != "dayone" {
				t.Logf("%s: no rule reacts to an event of its own", name)
			}
			c := Describe(p)
			for typ, why := range want {
				if _, ok := event(c, typ); !ok {
					t.Errorf("%s reacts to %s (%s), which describe omits", name, typ, why)
				}
			}
		})
	}
}

// exprSources lists the source of every expression in v, by reflection
// over exported fields.
func exprSources(v reflect.Value) []string {
	if !v.IsValid() {
		return nil
	}
	if x, ok := v.Interface().(rules.Expr); ok {
		return []string{x.Src}
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = exprSources(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("yaml") != "-" {
				out = append(out, exprSources(v.Field(i))...)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, exprSources(v.Index(i))...)
		}
	}
	return out
}

// A rule reading msg fields and comparing msg.type, a route and an
// input check: each field is listed with who reads it.
func TestReads(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte(`
name: reads
duration: "01:00"
roles: [{id: a, persona: A}]
vars: [{id: last, initial: ""}]
routing:
  - {id: R, type: role, role: a, when: "msg.source == 'voice'"}
rules:
  - id: cursor
    trigger: cursor_moved
    when: msg.line > 3 && msg.type != "other_thing"
    do: [set: {var: last, value: msg.code}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := Describe(p)
	for _, tc := range []struct {
		typ    string
		field  string
		reader string
	}{
		{"cursor_moved", "line", "rule:cursor"},
		{"cursor_moved", "code", "rule:cursor"},
		{rules.EventMessage, "source", "route:R"},
	} {
		ev, _ := event(c, tc.typ)
		i := slices.IndexFunc(ev.Data, func(f DataField) bool { return f.Name == tc.field })
		if i < 0 || !slices.Contains(ev.Data[i].ReadBy, tc.reader) {
			t.Errorf("%s: data %+v lacks %s read by %s", tc.typ, ev.Data, tc.field, tc.reader)
		}
	}
	if ev, ok := event(c, "other_thing"); !ok || ev.Accepted {
		t.Errorf("other_thing, compared against msg.type only: %+v", ev)
	}
}

// Declared inputs are described with their limits and defaults.
func TestInputs(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte(`
name: ins
duration: "01:00"
inputs:
  - {id: who, type: text, required: true, description: the candidate's name, max_chars: 80}
  - {id: depth, type: number, min: 1, max: 5, whole: true, default: 3}
  - {id: pace, type: enum, values: [slow, fast]}
  - {id: topics, type: list, max_items: 4}
  - {id: job, type: object, schema: {type: object, properties: {title: {type: string}}}}
  - {id: deck, type: file, media: [text/markdown], max_bytes: 2KiB, max_files: 2}
roles: [{id: a, persona: A}]
`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(Describe(p).Inputs)
	for _, want := range []string{
		`{"id":"who","type":"text","description":"the candidate's name","required":true,"default":"","max_chars":80}`,
		`{"id":"depth","type":"number","required":false,"default":3,"min":1,"max":5,"whole":true}`,
		`"values":["slow","fast"]`,
		`"max_chars":4000,"max_items":4`,
		`"schema":{"properties":{"title":{"type":"string"}},"type":"object"}`,
		`{"id":"deck","type":"file","required":false,"media":["text/markdown"],"max_bytes":2048,"max_total":4096,"max_files":2}`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("inputs\n%s\nlack\n%s", got, want)
		}
	}
}

// Every field of the msg view maps to a field of the wire's data.
func TestMsgData(t *testing.T) {
	mt := reflect.TypeFor[rules.MessageView]()
	for i := range mt.NumField() {
		name := mt.Field(i).Tag.Get("expr")
		data, ok := msgData[name]
		if !ok {
			t.Errorf("msg.%s has no data field in msgData", name)
			continue
		}
		if data != "" && !slices.Contains(wireOrder, data) {
			t.Errorf("msg.%s maps to data.%s, which the wire does not have", name, data)
		}
	}
}

// The effect table names every effect engine/doc.go lists, once.
func TestEffectTable(t *testing.T) {
	doc, err := os.ReadFile("../../engine/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(doc), "// # Effects\n")
	sec, _, _ = strings.Cut(sec, "// # ")
	var want []string
	for _, line := range strings.Split(sec, "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "//")); len(f) > 1 {
			want = append(want, f[0])
		}
	}
	var got []string
	for _, f := range effectFeatures {
		got = append(got, string(f.typ))
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Errorf("effect table\n%v\nengine's effects\n%v", got, want)
	}
}

// The engine's table of required data is what CheckEvent refuses.
func TestEngineRequired(t *testing.T) {
	p := bundled(t, "dayone")
	for _, typ := range rules.BuiltinEventTypes() {
		required := slices.ContainsFunc(engine.EventData(typ), func(f engine.EventField) bool { return f.Required })
		err := engine.CheckEvent(p, &engine.CandidateEvent{Type: typ})
		if required != (err != nil) {
			t.Errorf("%s: table says required %v; an empty event gives %v", typ, required, err)
		}
	}
}
