package engine

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/rules"
)

// memory is what roles know beyond their persona: template slots (per role
// and for the session), memories appended during the session,
// instructions queued for a role's next prompt, and named records. A
// role's persona never changes; what it knows grows here.
type memory struct {
	slots   []map[string]string // by pack role index; nil until set
	notes   [][]string          // memories, by pack role index
	inject  [][]string          // for the next prompt, by pack role index
	session map[string]string   // session slots
	records map[string][]any
}

func (m *memory) init(s *Session) {
	p := s.p
	m.slots = make([]map[string]string, len(p.Roles))
	m.notes = make([][]string, len(p.Roles))
	m.inject = make([][]string, len(p.Roles))
	m.session = map[string]string{}
	m.records = map[string][]any{}
}

// injected prepends the instructions queued for role (a handoff notice, a
// roster) to system, once.
func (s *Session) injected(role, system string, take bool) string {
	i := s.roleIdx(role)
	if i < 0 || len(s.memory.inject[i]) == 0 {
		return system
	}
	system = strings.Join(s.memory.inject[i], "\n\n") + "\n\n" + system
	if take {
		s.memory.inject[i] = nil
	}
	return system
}

// takeInstructions drops the instructions queued for role: they went out
// with a request made earlier (a prepared line's).
func (s *Session) takeInstructions(role string) {
	if i := s.roleIdx(role); i >= 0 {
		s.memory.inject[i] = nil
	}
}

func (s *Session) setSlot(role, name, value string) {
	if i := s.roleIdx(role); i >= 0 {
		if s.memory.slots[i] == nil {
			s.memory.slots[i] = map[string]string{}
		}
		s.memory.slots[i][name] = value
		return
	}
	if d, ok := s.p.SlotDeclOf(name); ok {
		s.slots.write(s, d, value)
		return
	}
	s.memory.session[name] = value
}

// voice is the Gemini voice role speaks with now: the value of its voice
// slot (rules.Voice.Slot) when that is a Gemini voice, else the one
// written in the pack. Effects carry the Gemini voice; a host speaking
// through another vendor takes that vendor's voice from the pack.
func (s *Session) voice(role string) string {
	pr, ok := s.p.Role(role)
	if !ok {
		return ""
	}
	if slot := s.p.VoiceSlot(pr); slot != "" {
		if v := s.slot(role, slot); rules.IsGeminiVoice(v) {
			return v
		}
	}
	return s.p.RoleVoice(pr, rules.VendorGemini)
}

// checkVoiceSlot reports a value set in a slot that chooses a role's
// voice when it is no Gemini voice: the role keeps its written voice.
func (s *Session) checkVoiceSlot(rule, role, name, value string) {
	if value == "" || rules.IsGeminiVoice(value) {
		return
	}
	for i := range s.p.Roles {
		r := &s.p.Roles[i]
		if (role == "" || role == r.ID) && s.p.VoiceSlot(r) == name {
			s.emit(Effect{Type: EffectNote, Kind: NoteWarning, Agent: r.ID, Rule: rule,
				Reason: fmt.Sprintf("slot %s: %q is not a Gemini voice; %s keeps its voice %s", name, value, r.ID, s.p.RoleVoice(r, rules.VendorGemini))})
		}
	}
}

func (s *Session) remember(role, text string) {
	if i := s.roleIdx(role); i >= 0 && text != "" {
		s.memory.notes[i] = append(s.memory.notes[i], text)
	}
}

func (s *Session) queueInstruction(role, text string) {
	if i := s.roleIdx(role); i >= 0 {
		s.memory.inject[i] = append(s.memory.inject[i], text)
	}
}

func (s *Session) record(name string, v any) {
	s.memory.records[name] = append(s.memory.records[name], v)
}

// slot resolves {{NAME}} for a role: the role's slots as set during the
// session, then as written in the pack, then the session's, then NAME,
// VOICE and MEMORY from the role itself.
func (s *Session) slot(role, name string) string {
	i := s.roleIdx(role)
	if i >= 0 {
		if v, ok := s.memory.slots[i][name]; ok {
			return v
		}
	}
	pr, ok := s.p.Role(role)
	if !ok {
		if v, ok := s.memory.session[name]; ok {
			return v
		}
		return s.inputText(name)
	}
	if v, ok := pr.Slots.Get(name); ok {
		return v
	}
	if v, ok := s.memory.session[name]; ok {
		return v
	}
	switch name {
	case "NAME":
		return pr.Name
	case "VOICE":
		return s.p.RoleVoice(pr, rules.VendorGemini)
	case "MEMORY":
		return strings.Join(s.memory.notes[i], "\n")
	}
	return s.inputText(name)
}

// inputText is a session input as a template's {{NAME}} shows it, or ""
// when the pack declares no input of that name.
func (s *Session) inputText(name string) string {
	if _, ok := s.p.Input(name); ok {
		return s.in.Text(name)
	}
	return ""
}

func (s *Session) render(t *rules.Template, role string) string {
	out, err := t.Render(func(name string) string { return s.slot(role, name) }, func(x *rules.Expr) (any, error) {
		s.env.SetRole(role)
		return s.env.Eval(x)
	})
	if err != nil {
		s.emit(Effect{Type: EffectNote, Agent: role, Reason: "template: " + err.Error()})
	}
	return out
}

// persona is a role's system instruction: its template rendered with its
// slots, or its persona text.
func (s *Session) persona(role string) string {
	pr, ok := s.p.Role(role)
	if !ok {
		return ""
	}
	if pr.Template != "" {
		if t, ok := s.p.Template(pr.Template); ok {
			return s.render(t, role)
		}
	}
	return pr.Persona
}

func (s *Session) roleIdx(id string) int { return s.p.RoleIndex(id) }

// human is the person's name for requests: empty for the default, so
// requests of packs that keep it stay as they were.
func (s *Session) human() string {
	if h := s.p.HumanName(); h != rules.DefaultHuman {
		return h
	}
	return ""
}

// modelFor sets where req's role's calls go: the one place a request
// gets its vendor, model and token cap.
func (s *Session) modelFor(req *LLMRequest) {
	m := s.p.ModelFor(req.Role)
	req.Provider, req.Model, req.MaxTokens = m.Provider.String(), m.Model, m.MaxTokens
}
