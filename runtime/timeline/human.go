package timeline

import (
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// humanLane draws the candidate's inputs on the human's lane: microphone
// and typing spans, messages and speech ends as points. Typing ends as
// the engine ends it: typing false, a message, or the pack's typing
// debounce passing without a keystroke.
type humanLane struct {
	b        *builder
	debounce int64 // the pack's typing debounce; -1 without a pack
	// micAt and typeAt are when the open mic or typing span began, -1
	// when none is open; lastKey is the latest keystroke of the typing.
	micAt, typeAt, lastKey int64
	micEntry, typeEntry    int
}

// addHuman draws the human's lane from the run's candidate inputs,
// closing at the axis's end a span still open there.
func (b *builder) addHuman() {
	h := humanLane{b: b, debounce: -1, micAt: -1, typeAt: -1}
	if b.p != nil {
		h.debounce = b.p.TurnTaking.TypingDebounce.MS
	}
	for i := range b.res.Inputs {
		if in := &b.res.Inputs[i]; in.Type == engine.InputCandidate && in.Candidate != nil {
			h.event(in)
		}
	}
	if h.micAt >= 0 {
		h.micBar(b.end)
	}
	h.endTyping(b.end)
}

// event draws one candidate input, with its detail entry.
func (h *humanLane) event(in *engine.Input) {
	ev := in.Candidate
	if h.typeAt >= 0 && h.debounce >= 0 && in.T >= h.lastKey+h.debounce {
		h.endTyping(in.T)
	}
	head := rules.FormatClock(in.T) + "  " + h.b.human + "  " + ev.Type
	if ev.Text != "" {
		head += "  " + ev.Text
	}
	e := h.b.l.addEntry(head, "", in)
	switch {
	case ev.Type == rules.EventMicState && ev.MicActive != nil:
		h.mic(in.T, *ev.MicActive, e)
	case ev.Type == rules.EventTypingState && ev.Typing != nil:
		h.typing(in.T, *ev.Typing, e)
	case ev.Type == rules.EventMessage:
		h.endTyping(in.T)
		h.said(in, e)
	default:
		h.eventPoint(in, e)
	}
}

// said draws a message as a point on the row of what was said, classed
// by where it came from; e is the input's entry.
func (h *humanLane) said(in *engine.Input, e int) {
	ev := in.Candidate
	class := "pt said"
	if ev.Source != "" {
		class += " src-" + cssName(ev.Source)
	}
	h.add(mark{row: rowSaid, t: in.T, typ: ev.Type, class: class, label: clip(ev.Text, 40), entry: e})
}

// eventPoint draws any other event as a point beside the messages, named
// by its type.
func (h *humanLane) eventPoint(in *engine.Input, e int) {
	ev := in.Candidate
	label := ev.Type
	if ev.Type == rules.EventSpeechEnd {
		label = "" // it ends what the message beside it says
	}
	h.add(mark{row: rowSaid, t: in.T, typ: ev.Type, class: "pt ev " + cssName(ev.Type), label: label, entry: e})
}

// mic opens the mic span at t when the mic goes on, and draws it when it
// goes off; e is the input's entry.
func (h *humanLane) mic(t int64, on bool, e int) {
	switch {
	case on && h.micAt < 0:
		h.micAt, h.micEntry = t, e
	case !on && h.micAt >= 0:
		h.micBar(t)
	}
}

// micBar draws the open mic span as ending at t.
func (h *humanLane) micBar(t int64) {
	h.add(mark{row: rowMic, t: h.micAt, d: max(t-h.micAt, 1), typ: "mic", class: "mic", entry: h.micEntry, label: "mic"})
	h.micAt = -1
}

// typing opens the typing span at t, keeps it open on a later keystroke
// and ends it when typing stops; e is the input's entry.
func (h *humanLane) typing(t int64, on bool, e int) {
	switch {
	case on && h.typeAt < 0:
		h.typeAt, h.typeEntry, h.lastKey = t, e, t
	case on:
		h.lastKey = t
	default:
		h.endTyping(t)
	}
}

// endTyping draws the open typing span as ending at t, or sooner where
// the debounce ended it.
func (h *humanLane) endTyping(t int64) {
	if h.typeAt < 0 {
		return
	}
	if h.debounce >= 0 {
		t = min(t, h.lastKey+h.debounce)
	}
	h.add(mark{row: rowTyping, t: h.typeAt, d: max(t-h.typeAt, 1), typ: "typing", class: "typing", entry: h.typeEntry, label: "typing"})
	h.typeAt = -1
}

// add draws m on the human's lane.
func (h *humanLane) add(m mark) {
	m.lane = h.b.human
	h.b.l.marks = append(h.b.l.marks, m)
}
