package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Speech cleaning: a model writing for a chat window decorates its lines
// with markdown and sometimes signs them with its name; a voice would
// read both aloud. StripMarkdown and StripLabels undo that. Both return
// their input unchanged, without allocating, when it has nothing to
// clean, never make a text longer, and are idempotent.

// markdownBytes are the bytes that may start inline markdown; a text
// without any of them, and without a line starting like a list, a rule
// or a table, is returned as it is.
const markdownBytes = "*_`#[>|~"

// StripMarkdown removes markdown a voice would read aloud: headings,
// bold and italic markers, list bullets and numbers, code fences and
// backticks, links (their text stays), block quotes, horizontal rules and
// table pipes. Lines left empty are dropped and runs of spaces collapse.
func StripMarkdown(s string) string {
	if !hasMarkdown(s) {
		return s
	}
	for {
		next := markdownPass(s)
		if next == s {
			return s
		}
		s = next // each pass shrinks the text or replaces a pipe: it ends
	}
}

func hasMarkdown(s string) bool {
	if strings.ContainsAny(s, markdownBytes) {
		return true
	}
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); listMarker(t) > 0 || isRule(t) {
			return true
		}
	}
	return strings.Contains(s, "•")
}

// markdownPass makes one pass over s's lines.
func markdownPass(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	// A title ("### My question") is structure, not speech: spoken, it is
	// a fragment before the line. It is dropped when the text says
	// something else, and kept when it is all there is.
	titles := hasTitle(s)
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") || isRule(t) || isTableRule(t) {
			continue
		}
		for strings.HasPrefix(t, ">") {
			t = strings.TrimLeft(t[1:], " \t")
		}
		if h := stripHeading(t); h != t {
			if titles && !endsSentence(h) {
				continue
			}
			t = h
		}
		if n := listMarker(t); n > 0 {
			t = t[n:]
		}
		if strings.HasPrefix(t, "|") {
			t = strings.ReplaceAll(t, "|", " ")
		}
		t = inline(t)
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}

// hasTitle reports whether s has a heading that is not a sentence and a
// line that is not a heading.
func hasTitle(s string) bool {
	title, other := false, false
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "```") || isRule(t) {
			continue
		}
		if h := stripHeading(t); h != t {
			title = title || !endsSentence(h)
			continue
		}
		other = true
	}
	return title && other
}

// endsSentence reports whether t ends as a sentence does.
func endsSentence(t string) bool {
	t = strings.TrimRight(strings.TrimSpace(t), "*_`\"')")
	return strings.HasSuffix(t, ".") || strings.HasSuffix(t, "?") || strings.HasSuffix(t, "!")
}

// isRule reports a horizontal rule: three or more of one of - * _,
// spaces allowed between them.
func isRule(t string) bool {
	if len(t) < 3 || (t[0] != '-' && t[0] != '*' && t[0] != '_') {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case t[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// isTableRule reports a table's separator row: | --- | :---: |.
func isTableRule(t string) bool {
	if !strings.HasPrefix(t, "|") || !strings.Contains(t, "-") {
		return false
	}
	return strings.Trim(t, "|-: \t") == ""
}

func stripHeading(t string) string {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return t
	}
	return strings.TrimLeft(t[n:], " \t")
}

// listMarker is the length of a list item's marker and the space after
// it at the start of t ("- ", "* ", "+ ", "• ", "12. ", "3) "), or 0.
func listMarker(t string) int {
	switch {
	case strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "), strings.HasPrefix(t, "+ "):
		return 2
	case strings.HasPrefix(t, "• "):
		return len("• ")
	}
	n := 0
	for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n == 0 || n+1 >= len(t) || (t[n] != '.' && t[n] != ')') || t[n+1] != ' ' {
		return 0
	}
	return n + 2
}

// inline removes emphasis, strikethrough and code markers and reduces
// links to their text, collapsing runs of spaces.
func inline(t string) string {
	var b strings.Builder
	b.Grow(len(t))
	space := false
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == '*' || c == '`' || c == '~':
			i++
			continue
		case c == '_':
			j := i
			for j < len(t) && t[j] == '_' {
				j++
			}
			if j-i >= 2 || i == 0 || j == len(t) || !alnumBefore(t, i) || !alnumAt(t, j) {
				i = j // emphasis, not a snake_case word's joint
				continue
			}
		case c == '[' || (c == '!' && i+1 < len(t) && t[i+1] == '['):
			open := i
			if c == '!' {
				open++
			}
			if txt, end, ok := link(t, open); ok {
				if space && strings.HasPrefix(txt, " ") {
					txt = strings.TrimLeft(txt, " ")
				}
				b.WriteString(txt)
				space = strings.HasSuffix(txt, " ")
				i = end
				continue
			}
		case c == ' ' || c == '\t':
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(t[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(c)
		} else {
			b.WriteString(t[i : i+size])
		}
		space = false
		i += size
	}
	return strings.TrimRight(b.String(), " ")
}

// link parses [text](url) at t[i] == '[': its text and the index after it.
func link(t string, i int) (string, int, bool) {
	close := strings.IndexByte(t[i+1:], ']')
	if close < 0 {
		return "", 0, false
	}
	close += i + 1
	if close+1 >= len(t) || t[close+1] != '(' {
		return "", 0, false
	}
	end := strings.IndexByte(t[close+2:], ')')
	if end < 0 {
		return "", 0, false
	}
	return t[i+1 : close], close + 2 + end + 1, true
}

// StripLabels removes speaker labels at the start of s: one of names (a
// role's id or display name, in any case), bare or in ** or [ ], followed
// by ':', " -" or " —". Repeated labels ("qa: Theo: ...") all go. A label
// with nothing after it is kept: it is the whole line.
func StripLabels(s string, names []string) string {
	for {
		rest, ok := label(s, names)
		if !ok {
			return s
		}
		s = rest
	}
}

// label strips one leading label from s.
func label(s string, names []string) (string, bool) {
	t := strings.TrimLeft(s, " \t\n")
	open := ""
	for _, o := range []string{"**", "__", "["} {
		if strings.HasPrefix(t, o) {
			open, t = o, t[len(o):]
			break
		}
	}
	best := 0
	for _, n := range names {
		if len(n) > best && len(n) <= len(t) && strings.EqualFold(t[:len(n)], n) {
			best = len(n)
		}
	}
	if best == 0 {
		return "", false
	}
	t = t[best:]
	closeMark := open
	if open == "[" {
		closeMark = "]"
	}
	// The separator may sit inside the markers (**Theo:**) or after them.
	closed := closeMark == "" || strings.HasPrefix(t, closeMark)
	if closed {
		t = t[len(closeMark):]
	}
	sep := separator(t)
	if sep == 0 {
		return "", false
	}
	t = t[sep:]
	if !closed {
		if !strings.HasPrefix(t, closeMark) {
			return "", false
		}
		t = t[len(closeMark):]
	}
	t = strings.TrimLeftFunc(t, unicode.IsSpace)
	if t == "" {
		return "", false
	}
	return t, true
}

// separator is the length of a label's separator at the start of t.
func separator(t string) int {
	switch {
	case strings.HasPrefix(t, ":"):
		return 1
	case strings.HasPrefix(t, " - "), strings.HasPrefix(t, " -\n"):
		return 2
	case strings.HasPrefix(t, " —"):
		return len(" —")
	case strings.HasPrefix(t, " –"):
		return len(" –")
	}
	return 0
}

// Cut bounds s to maxWords words and, if maxSentences > 0, that many
// sentences: the longest run of whole sentences within both. When the
// first sentence alone is too long it is cut at a word boundary and ends
// with a full stop. A text within the bounds is returned as it is.
func Cut(s string, maxWords, maxSentences int) string {
	if maxWords <= 0 || (CountWords(s) <= maxWords && (maxSentences <= 0 || CountSentences(s) <= maxSentences)) {
		return s
	}
	var kept []string
	words := 0
	for _, sen := range SplitSentences(s) {
		n := CountWords(sen)
		if words+n > maxWords || (maxSentences > 0 && len(kept) == maxSentences) {
			break
		}
		kept = append(kept, sen)
		words += n
	}
	if len(kept) > 0 {
		return strings.Join(kept, " ")
	}
	return cutWords(strings.TrimSpace(s), maxWords)
}

// cutWords keeps s's first n words and ends them with a full stop.
func cutWords(s string, n int) string {
	end, in, count := len(s), false, 0
	for i, r := range s {
		if unicode.IsSpace(r) {
			if in && count == n {
				end = i
				break
			}
			in = false
		} else if !in {
			in = true
			count++
		}
	}
	out := strings.TrimRightFunc(s[:end], func(r rune) bool {
		return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r)
	})
	if out == "" {
		return s[:end]
	}
	return out + "."
}

func alnumAt(t string, i int) bool {
	r, _ := utf8.DecodeRuneInString(t[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func alnumBefore(t string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(t[:i])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}
