package rules

import "reflect"

// warnEmptyRoles warns of a role written with nothing but its id (qa: {}
// or qa: with no value). The engine needs no more than the id, so the
// pack runs, but the role's model calls carry no persona, it has no
// fallback lines (a failed call says "Let's continue."), and its lines
// are in no voice: most likely the role's settings were lost or never
// written.
func warnEmptyRoles(c *compiler, w *ErrorList) {
	idx, _ := fieldIndex(reflect.TypeFor[Role]())
	for i := range c.p.Roles {
		r := &c.p.Roles[i]
		v := reflect.ValueOf(r).Elem()
		empty := true
		for name, fi := range idx {
			if name != "id" && !v.Field(fi).IsZero() {
				empty = false
				break
			}
		}
		if empty {
			w.add(r.Pos, "role %s is empty: its model calls say nothing of who it is and a failed one is answered with \"Let's continue.\"; give it a persona (or a template) and fallback lines", r.ID)
		}
	}
}
