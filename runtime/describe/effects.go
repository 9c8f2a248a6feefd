package describe

import (
	"reflect"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// effectFeatures is the one table of which effects a pack can produce:
// each effect type of engine/doc.go's table, and the feature of the pack
// that makes it possible. A row whose feature is nil is produced by any
// pack. A test holds the table to the engine's list of effect types.
var effectFeatures = [...]struct {
	typ     engine.EffectType
	feature string
	has     func(p *rules.Pack) bool
}{
	{engine.EffectAgentMessage, "", nil},
	{engine.EffectLLMRequest, "", nil},
	{engine.EffectRouted, "", nil},
	{engine.EffectDeferred, "", nil},
	{engine.EffectDeferCap, "", nil},
	{engine.EffectPreempted, "", nil},
	{engine.EffectStale, "", nil},
	{engine.EffectGuardrail, "", nil},
	{engine.EffectHandoff, "", nil},
	{engine.EffectNote, "", nil},
	{engine.EffectAdapterError, "", nil},
	{engine.EffectEngineError, "", nil},
	{engine.EffectSessionEnd, "", nil},
	{engine.EffectAnchor, "timeline.anchors", func(p *rules.Pack) bool { return len(p.Timeline.Anchors) > 0 }},
	{engine.EffectWindowSkipped, "timeline.windows", func(p *rules.Pack) bool { return len(p.Timeline.Windows) > 0 }},
	{engine.EffectAutoAdvance, "silence.steps", func(p *rules.Pack) bool { return len(p.Silence.Steps) > 0 }},
	{engine.EffectFlag, "flag actions, guardrails.tripwires or guardrails.input", func(p *rules.Pack) bool {
		return len(p.Guardrails.Tripwires) > 0 || len(p.Guardrails.Input) > 0 || holds[*rules.FlagAction](p) || holds[*rules.RunAction](p)
	}},
	{engine.EffectReport, "report actions", func(p *rules.Pack) bool { return holds[*rules.ReportAction](p) || holds[*rules.RunAction](p) }},
	{engine.EffectToolResult, "tools", func(p *rules.Pack) bool { return len(p.Tools) > 0 }},
	{engine.EffectClientToolCall, "tools with executor: client", func(p *rules.Pack) bool { return len(clientTools(p)) > 0 }},
	{engine.EffectSlot, "slots", func(p *rules.Pack) bool { return len(p.Slots) > 0 }},
	{engine.EffectContext, "files", func(p *rules.Pack) bool { return len(p.Files) > 0 }},
	{engine.EffectContextViolation, "files", func(p *rules.Pack) bool { return len(p.Files) > 0 }},
	{engine.EffectTickets, "tickets", func(p *rules.Pack) bool { return p.Tickets != nil }},
	{engine.EffectJobResult, "jobs", func(p *rules.Pack) bool { return len(p.Jobs) > 0 }},
	{engine.EffectJobError, "jobs", func(p *rules.Pack) bool { return len(p.Jobs) > 0 }},
	{engine.EffectLive, "phases", func(p *rules.Pack) bool { return len(p.Phases) > 0 }},
	{engine.EffectSequence, "sequences", func(p *rules.Pack) bool { return len(p.Sequences) > 0 }},
	{engine.EffectScriptError, "scripts", func(p *rules.Pack) bool { return p.Scripts != nil }},
	{engine.EffectLiveSession, "voice.mode: live", func(p *rules.Pack) bool { return p.Voice.Mode == rules.VoiceLive }},
}

// effects lists the effect types p can produce, in the table's order.
func effects(p *rules.Pack) []Effect {
	var out []Effect
	for _, f := range effectFeatures {
		if f.has == nil || f.has(p) {
			out = append(out, Effect{Type: string(f.typ), Feature: f.feature})
		}
	}
	return out
}

// holds reports whether any exported field of the pack holds a value of
// type T: an action kind written anywhere (rules, checks, hooks).
func holds[T any](p *rules.Pack) bool {
	return find(reflect.ValueOf(p).Elem(), reflect.TypeFor[T]())
}

func find(v reflect.Value, want reflect.Type) bool {
	if !v.IsValid() {
		return false
	}
	if v.Type() == want {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && find(v.Elem(), want)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("yaml") != "-" && find(v.Field(i), want) {
				return true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if find(v.Index(i), want) {
				return true
			}
		}
	}
	return false
}
