package rules

// warnTriggerTypos warns of a rule whose trigger: is a candidate event
// type spelt like a built-in event or an engine trigger (candidate_mesage,
// sesion_start). Such a type is valid, since a client may send any type
// a rule handles, but no client sends the misspelling, so the rule never
// runs.
func warnTriggerTypos(c *compiler, w *ErrorList) {
	known := BuiltinEventTypes()
	for _, e := range engineTriggers {
		if !named(e.name) {
			known = append(known, e.name)
		}
	}
	for i := range c.p.Rules {
		r := &c.p.Rules[i]
		if !r.On.Set() || r.On.Kind != TriggerEvent || IsBuiltinEvent(r.On.Name) {
			continue
		}
		if near, ok := Nearest(r.On.Name, known); ok {
			w.add(r.On.Pos, "rule %s: trigger: %s is not a built-in event or engine trigger, so the rule runs only when a client sends an event of that very type; did you mean %s?", r.ID, r.On.Name, near)
		}
	}
}
