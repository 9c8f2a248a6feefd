package rules

import (
	"math"
)

// SlotDecl declares a session slot: a {{NAME}} prompt variable with a
// size cap, an optional numbered-lines form and a debounce, so what a
// client reports (an editor buffer, the last run error) reaches the
// model's context bounded and without flooding it. Rules fill it with the
// slot action, as any slot; the declaration says how the value is kept.
type SlotDecl struct {
	Pos
	ID string `yaml:"id"`
	// Value is the slot's value at the start of a session.
	Value Template `yaml:"value"`
	// MaxBytes and MaxChars cap the value (UTF-8 bytes, characters);
	// 0 means no cap of that kind.
	MaxBytes Number `yaml:"max_bytes"`
	MaxChars Number `yaml:"max_chars"`
	// Numbered keeps the value as "L1:..." numbered lines, and a cut
	// keeps whole lines around Focus instead of the value's head.
	Numbered bool `yaml:"numbered"`
	// Focus is the line (1-based) a numbered value is cut around,
	// evaluated when the slot is written (msg.line, say: the cursor);
	// unset or 0 keeps the top.
	Focus Value `yaml:"focus"`
	// Debounce holds writes until none has come for this long, and at
	// most MaxWait after the first held one (default four times
	// Debounce), so a client typing does not rewrite the context on
	// every keystroke.
	Debounce Duration `yaml:"debounce"`
	MaxWait  Duration `yaml:"max_wait"`
}

// SlotDeclOf returns the index of the declared slot named id.
func (p *Pack) SlotDeclOf(id string) (int, bool) {
	for i := range p.Slots {
		if p.Slots[i].ID == id {
			return i, true
		}
	}
	return -1, false
}

func (sd *SlotDecl) check(c *compiler) {
	c.id(sd.Pos, "slot", "slot:"+sd.ID)
	for _, r := range c.p.Roles {
		if _, ok := r.Slots.Get(sd.ID); ok {
			c.errorf(sd.Pos, "slot %s is declared for the session, and role %s sets a slot of that name, which would hide it from %s's prompts; rename one", sd.ID, r.ID, r.ID)
		}
	}
	if !isIdent(sd.ID) {
		c.errorf(sd.Pos, "slot %q: names are letters, digits and _", sd.ID)
	}
	const least = 64 // room for a cut marker and a line
	for _, n := range []*Number{&sd.MaxBytes, &sd.MaxChars} {
		if v := n.Value; n.IsSet() && (v != math.Trunc(v) || v < least || v > MaxFileSize) {
			c.errorf(n.Pos, "slot %s: a cap is a whole number from %d (room for the value once cut) to %d; leave it out for none", sd.ID, least, MaxFileSize)
		}
	}
	if sd.Focus.Set() && !sd.Numbered {
		c.errorf(sd.Focus.Pos, "slot %s: focus picks the line a numbered value is cut around; add numbered: true or drop focus", sd.ID)
	}
	if sd.MaxWait.IsSet() && !sd.Debounce.IsSet() {
		c.errorf(sd.MaxWait.Pos, "slot %s: max_wait bounds a debounce; set debounce too", sd.ID)
	}
	if sd.Debounce.IsSet() && sd.Debounce.ok() && sd.MaxWait.ok() {
		if !sd.MaxWait.IsSet() {
			sd.MaxWait = Duration{Pos: sd.Debounce.Pos, MS: 4 * sd.Debounce.MS, set: true}
		}
		if sd.Debounce.MS <= 0 || sd.MaxWait.MS < sd.Debounce.MS {
			c.errorf(sd.Debounce.Pos, "slot %s: debounce must be positive and max_wait at least as long", sd.ID)
		}
	}
}

// slotAction checks a slot action against the declarations: a declared
// slot is the session's, so it cannot be given to a role.
func (c *compiler) slotAction(a *SlotAction, where string) {
	if _, ok := c.p.SlotDeclOf(a.Name); ok && a.Role.Set() {
		c.errorf(a.Pos, "%s: slot %s is declared under slots:, which makes it the session's; drop role", where, a.Name)
	}
}

// Caps are the slot's caps in bytes and characters; 0 means none.
func (sd *SlotDecl) Caps() (maxBytes, maxChars int) {
	return int(sd.MaxBytes.Value), int(sd.MaxChars.Value)
}
