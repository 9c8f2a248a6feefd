package rules

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Speech vendors a role's voice is named for. A voice written as one
// name is Gemini's: the bundled packs were written for Gemini's prebuilt
// voices, and Gemini is the speech of dry runs' live mode and of
// baton serve --voice gemini-live.
const (
	VendorGemini     = "gemini"
	VendorElevenLabs = "elevenlabs"
)

// GeminiVoices are the prebuilt voices of Gemini's speech models (TTS and
// Live), as the Gemini API documents them
// (https://ai.google.dev/gemini-api/docs/speech-generation#voices). The
// list is fixed, so a name outside it is refused at load.
var GeminiVoices = []string{
	"Zephyr", "Puck", "Charon", "Kore", "Fenrir", "Leda", "Orus", "Aoede",
	"Callirrhoe", "Autonoe", "Enceladus", "Iapetus", "Umbriel", "Algieba",
	"Despina", "Erinome", "Algenib", "Rasalgethi", "Laomedeia", "Achernar",
	"Alnilam", "Schedar", "Gacrux", "Pulcherrima", "Achird", "Zubenelgenubi",
	"Vindemiatrix", "Sadachbia", "Sadaltager", "Sulafat",
}

// IsGeminiVoice reports whether name is one of GeminiVoices.
func IsGeminiVoice(name string) bool { return slices.Contains(GeminiVoices, name) }

// Voice names a voice for each speech vendor: `voice: Puck` (Gemini's), or
// `voice: {gemini: Puck, elevenlabs: 21m00Tcm4TlvDq8ikWAM}`. Gemini names
// are checked at load; ElevenLabs voice ids belong to an account, so
// baton serve --voice elevenlabs checks them with the vendor at start.
type Voice struct {
	Pos
	// Gemini is a prebuilt Gemini voice name (GeminiVoices).
	Gemini string `yaml:"gemini"`
	// ElevenLabs is an ElevenLabs voice id.
	ElevenLabs string `yaml:"elevenlabs"`
	// Slot, if set, names a slot that may choose the Gemini voice during
	// the session (a phase job's pick, say): when the line is spoken, a
	// slot value that is a Gemini voice replaces Gemini; any other value
	// keeps the written voice and is reported.
	Slot string `yaml:"slot"`

	set bool
	// bad marks a voice whose decoding already failed, so check does not
	// report it a second time.
	bad bool
}

// IsSet reports whether the voice was written in the pack.
func (v Voice) IsSet() bool { return v.set }

// For is the voice named for vendor, "" if none.
func (v Voice) For(vendor string) string {
	switch vendor {
	case VendorGemini:
		return v.Gemini
	case VendorElevenLabs:
		return v.ElevenLabs
	}
	return ""
}

func (v *Voice) decodeNode(d *decoder, n *yaml.Node) {
	v.Pos, v.set = d.pos(n), true
	if n.Kind == yaml.ScalarNode {
		v.setShorthand(d, n)
		return
	}
	errs := len(*d.errs)
	d.decodeStruct(n, refValue(v))
	v.bad = len(*d.errs) > errs
}

func (v *Voice) setShorthand(d *decoder, n *yaml.Node) {
	v.Pos, v.set = d.pos(n), true
	d.decode(n, refValue(&v.Gemini))
}

// check refuses a Gemini name outside the documented list, an ElevenLabs
// id that cannot be one, and a slot that is not a slot name.
func (v *Voice) check(c *compiler, what string) {
	if !v.set {
		return
	}
	if g := v.Gemini; g != "" && !IsGeminiVoice(g) {
		hint := c.suggest(g, GeminiVoices)
		if hint == "" {
			hint = "; a plain voice name is Gemini's, other vendors' are written {elevenlabs: ID}"
		}
		c.errorf(v.Pos, "%s: %q is not a Gemini voice%s", what, g, hint)
	}
	if e := v.ElevenLabs; e != "" && strings.ContainsFunc(e, func(r rune) bool { return r <= ' ' || r == '/' }) {
		c.errorf(v.Pos, "%s: elevenlabs voice %q is not a voice id (an id from GET /v1/voices, like 21m00Tcm4TlvDq8ikWAM)", what, e)
	}
	if v.Slot != "" && !isIdent(v.Slot) {
		c.errorf(v.Pos, "%s: voice slot %q is not a slot name (letters, digits and _)", what, v.Slot)
	}
	if v.Gemini == "" && v.ElevenLabs == "" && v.Slot == "" && !v.bad {
		c.errorf(v.Pos, "%s: the voice names no vendor's voice (write a Gemini name, or {gemini: NAME, elevenlabs: ID})", what)
	}
}

// RoleVoice is the voice role r speaks with on vendor's speech: its own,
// else the pack's voice.default. "" means none is named.
func (p *Pack) RoleVoice(r *Role, vendor string) string {
	if v := r.Voice.For(vendor); v != "" {
		return v
	}
	return p.Voice.Default.For(vendor)
}

// VoiceSlot is the slot that may choose role r's Gemini voice during a
// session: its own voice's slot, else voice.default's; "" for none.
func (p *Pack) VoiceSlot(r *Role) string {
	if r.Voice.Slot != "" {
		return r.Voice.Slot
	}
	return p.Voice.Default.Slot
}

// String writes the voice as a pack would: a Gemini name alone, else a
// mapping of what is set.
func (v Voice) String() string {
	if v.ElevenLabs == "" && v.Slot == "" {
		return v.Gemini
	}
	var parts []string
	for _, kv := range [][2]string{{VendorGemini, v.Gemini}, {VendorElevenLabs, v.ElevenLabs}, {"slot", v.Slot}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+": "+kv[1])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
