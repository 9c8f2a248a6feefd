package engine

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

// slots keeps the pack's declared slots (slots:): prompt variables whose
// writes are capped, kept as numbered lines if asked, and debounced. A
// held write waits in pending until its slot has been quiet for the
// debounce (or its max wait has passed); only the newest held value is
// applied. Applied values live with every other session slot (memory.go),
// so templates read them as {{NAME}}.
type slots struct {
	pending []heldSlot // by declaration index
}

type heldSlot struct {
	held  bool
	value string
	focus int
	first int64 // when the oldest held write came
}

func (sl *slots) init(s *Session) {
	p := s.p
	sl.pending = make([]heldSlot, len(p.Slots))
	for i := range p.Slots {
		d := &p.Slots[i]
		if d.Value.Set() {
			s.memory.session[d.ID], _ = capSlot(d, s.render(&d.Value, ""), 0)
		}
	}
}

// write takes a value for declared slot i, now or when its debounce
// lets it through.
func (sl *slots) write(s *Session, i int, value string) {
	d := &s.p.Slots[i]
	focus := 0
	if d.Focus.Set() {
		s.env.SetRole("")
		if v, err := s.env.Eval(&d.Focus.Expr); err != nil {
			s.note("", "slot "+d.ID+" focus: "+err.Error())
		} else if n, ok := asInt(v); ok {
			focus = n
		}
	}
	if !d.Debounce.IsSet() {
		sl.apply(s, i, value, focus, 0)
		return
	}
	h := &sl.pending[i]
	if !h.held {
		h.held, h.first = true, s.now
	}
	h.value, h.focus = value, focus
	s.timers.cancel(tSlot, i, "")
	s.addTimer(timer{at: min(s.now+d.Debounce.MS, h.first+d.MaxWait.MS), kind: tSlot, ref: i})
}

// fire applies slot i's held write: its debounce has passed.
func (sl *slots) fire(s *Session, i int) {
	h := &sl.pending[i]
	if !h.held {
		return
	}
	held := *h
	*h = heldSlot{}
	sl.apply(s, i, held.value, held.focus, s.now-held.first)
}

// apply caps value, stores it and reports the update with what was cut.
func (sl *slots) apply(s *Session, i int, value string, focus int, heldMS int64) {
	d := &s.p.Slots[i]
	out, cut := capSlot(d, value, focus)
	s.memory.session[d.ID] = out
	data, _ := json.Marshal(struct {
		Bytes  int   `json:"bytes"`
		Cut    bool  `json:"cut,omitempty"`
		HeldMS int64 `json:"held_ms,omitempty"`
	}{len(out), cut, heldMS})
	s.emit(Effect{Type: EffectSlot, Text: d.ID, Data: data})
}

// capSlot is value as the declaration keeps it: numbered, then cut to
// its caps; cut says whether the caps left anything out.
func capSlot(d *rules.SlotDecl, value string, focus int) (out string, cut bool) {
	maxBytes, maxChars := d.Caps()
	if d.Numbered {
		return numberedAround(value, focus, maxBytes, maxChars)
	}
	out = cutHead(value, maxBytes, maxChars)
	return out, out != value
}

// fits reports whether s is within both caps (0: none).
func fits(n, chars, maxBytes, maxChars int) bool {
	return (maxBytes == 0 || n <= maxBytes) && (maxChars == 0 || chars <= maxChars)
}

// cutHead keeps the head of s within the caps, marking the cut; it never
// splits a character.
func cutHead(s string, maxBytes, maxChars int) string {
	if fits(len(s), utf8.RuneCountInString(s), maxBytes, maxChars) {
		return s
	}
	const mark = " […]"
	room, roomChars := less(maxBytes, len(mark)), less(maxChars, utf8.RuneCountInString(mark))
	n, chars := 0, 0
	for _, r := range s {
		w := utf8.RuneLen(r)
		if maxBytes > 0 && n+w > room || maxChars > 0 && chars+1 > roomChars {
			break
		}
		n += w
		chars++
	}
	return strings.TrimRight(s[:n], " ") + mark
}

// less is cap less n, keeping 0 (no cap) as it is and a cap at least 1.
func less(limit, n int) int {
	if limit == 0 {
		return 0
	}
	return max(1, limit-n)
}

// numberedAround renders value as "L1:..." lines and, when that is over
// the caps, keeps the whole lines nearest focus (1-based; 0 the top),
// growing the kept range a line above and a line below in turn, with a
// marker line for what is left out on each side; cut says whether
// anything was. Lines are never cut, except a focus line that alone is
// over the caps. Only the kept lines are built: a long buffer costs its
// measuring, not its rendering.
func numberedAround(value string, focus, maxBytes, maxChars int) (out string, cut bool) {
	if value == "" {
		return "", false
	}
	lines := strings.Split(strings.ReplaceAll(value, "\r\n", "\n"), "\n")
	if len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // a final newline ends the last line
	}
	// size is line i's numbered length and characters, with its newline.
	size := func(i int) (n, chars int) {
		prefix := 2 + digits(i+1) // "L", the number, ":"
		n = prefix + len(lines[i]) + 1
		if maxChars > 0 {
			chars = prefix + utf8.RuneCountInString(lines[i]) + 1
		}
		return n, chars
	}
	total, totalChars := 0, 0
	for i := range lines {
		n, c := size(i)
		total, totalChars = total+n, totalChars+c
	}
	if fits(total-1, totalChars-1, maxBytes, maxChars) {
		return numberLines(lines, 0, len(lines)), false
	}
	// withMarks is the size of lines[lo:hi] (n bytes, chars characters,
	// newlines included) with the markers for what lies outside it.
	withMarks := func(lo, hi, n, chars int) (int, int) {
		m := len(frame(lo, "", len(lines)-hi)) // its markers and their newlines
		return n - 1 + m, chars - 1 + utf8.RuneCountInString(frame(lo, "", len(lines)-hi))
	}
	f := min(max(focus, 1), len(lines)) - 1
	lo, hi := f, f+1 // kept: lines[lo:hi]
	n, chars := size(f)
	if b, c := withMarks(lo, hi, n, chars); !fits(b, c, maxBytes, maxChars) {
		// One line over the caps: cut it, the one exception.
		marks, markChars := withMarks(lo, hi, 1, 1)
		return frame(f, cutHead(numberLines(lines, f, f+1), less(maxBytes, marks), less(maxChars, markChars)), len(lines)-f-1), true
	}
	for grew := true; grew; {
		grew = false
		for _, below := range []bool{false, true} {
			j, nlo, nhi := lo-1, lo-1, hi
			if below {
				j, nlo, nhi = hi, lo, hi+1
			}
			if j < 0 || j >= len(lines) {
				continue
			}
			w, wc := size(j)
			if b, c := withMarks(nlo, nhi, n+w, chars+wc); !fits(b, c, maxBytes, maxChars) {
				continue
			}
			n, chars, grew = n+w, chars+wc, true
			lo, hi = nlo, nhi
		}
	}
	return frame(lo, numberLines(lines, lo, hi), len(lines)-hi), true
}

// numberLines renders lines[lo:hi] as "L<n>:<line>", one per line.
func numberLines(lines []string, lo, hi int) string {
	var b strings.Builder
	for i := lo; i < hi; i++ {
		if i > lo {
			b.WriteByte('\n')
		}
		b.WriteByte('L')
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteByte(':')
		b.WriteString(lines[i])
	}
	return b.String()
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// frame puts the markers for the lines left out around the kept ones.
func frame(above int, body string, below int) string {
	if above > 0 {
		body = "[… " + strconv.Itoa(above) + " lines above]\n" + body
	}
	if below > 0 {
		body += "\n[… " + strconv.Itoa(below) + " lines below]"
	}
	return body
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		return int(x), true
	}
	return 0, false
}
