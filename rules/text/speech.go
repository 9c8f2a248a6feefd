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
//
// What could be ordinary text stays: a lone '*', '_' or '~' ("2*3",
// "SELECT * FROM", "~/config"), emphasis markers that do not pair up
// around text, a snake_case or dunder word ("__init__", "_id_"), a
// code span's contents, URLs, a '#' not opening a heading ("# of
// retries") and brackets that are not a link to something ("arr[0](x)").
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

// stripHeading is t without its heading marker: one to six '#' and a
// space, followed by a title that does not start with a lowercase letter
// ("# of retries" is a count, not a heading; markup before the first
// letter is passed over). Any other t is returned as it is.
func stripHeading(t string) string {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(t) || (t[n] != ' ' && t[n] != '\t') {
		return t
	}
	h := strings.TrimLeft(t[n:], " \t")
	for _, r := range h {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if unicode.IsLower(r) {
				return t
			}
			break
		}
	}
	return h
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
// links to their text, collapsing runs of spaces. URLs and a code span's
// contents are copied as they are.
func inline(t string) string {
	var b strings.Builder
	b.Grow(len(t))
	space := false
	// write copies u, collapsing its runs of spaces into the output's.
	write := func(u string) {
		for i := 0; i < len(u); i++ {
			if c := u[i]; c == ' ' || c == '\t' {
				if !space && b.Len() > 0 {
					b.WriteByte(' ')
				}
				space = true
				continue
			}
			b.WriteByte(u[i])
			space = false
		}
	}
	var closers []int // where the closing runs of emphasis found so far start
	for i := 0; i < len(t); {
		c := t[i]
		if len(closers) > 0 && closers[0] < i {
			closers = closers[1:] // inside a code span or URL copied whole
			continue
		}
		switch {
		case len(closers) > 0 && closers[0] == i:
			closers = closers[1:]
			i += run(t, i)
			continue
		case c == '*' || c == '_' || c == '~':
			n := run(t, i)
			if end := emphasis(t, i, n); end > 0 {
				closers = insertSorted(closers, end)
				i += n
				continue
			}
			write(t[i : i+n]) // not a marker: a lone '*' or a word's '_'
			i += n
			continue
		case c == '`':
			n := run(t, i)
			if end := strings.Index(t[i+n:], t[i:i+n]); end >= 0 && run(t, i+n+end) == n {
				write(t[i+n : i+n+end])
				i += n + end + n
				continue
			}
			write(t[i : i+n])
			i += n
			continue
		case c == 'h' || c == 'H' || c == 'w' || c == 'W':
			if n := url(t, i); n > 0 {
				write(t[i : i+n])
				i += n
				continue
			}
		case c == '[' || (c == '!' && i+1 < len(t) && t[i+1] == '['):
			open := i
			if c == '!' {
				open++
			}
			if txt, end, ok := link(t, open); ok {
				write(txt)
				i = end
				continue
			}
		}
		write(t[i : i+1])
		i++
	}
	return strings.TrimRight(b.String(), " ")
}

// run is the length of the run of t[i]'s byte starting at i.
func run(t string, i int) int {
	j := i
	for j < len(t) && t[j] == t[i] {
		j++
	}
	return j - i
}

func insertSorted(xs []int, x int) []int {
	i := 0
	for i < len(xs) && xs[i] < x {
		i++
	}
	return append(xs[:i], append([]int{x}, xs[i:]...)...)
}

// emphasis reports whether the run of n markers at t[i] opens emphasis
// and where its closing run starts, or 0. The opening run follows the
// start or a byte that is not a letter or digit and precedes a non-space;
// the closing run, the same marker as many times, follows a non-space and
// precedes the end or a byte that is not a letter or digit. '~' pairs as
// "~~". Around a snake_case word ("__init__", "_id_") '_' is the word's.
func emphasis(t string, i, n int) int {
	c := t[i]
	if n > 3 || (c == '~' && n != 2) || (i > 0 && alnumBefore(t, i)) {
		return 0
	}
	from := i + n
	if from >= len(t) || isSpace(t[from]) {
		return 0
	}
	for j := from; j < len(t); {
		if t[j] != c {
			j++
			continue
		}
		m := run(t, j)
		if m == n && !isSpace(t[j-1]) && (j+m == len(t) || !alnumAt(t, j+m)) {
			if c == '_' && identifier(t[from:j]) {
				return 0
			}
			return j
		}
		j += m
	}
	return 0
}

// identifier reports whether s is all lowercase letters, digits and '_'.
func identifier(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// url is the length of the URL at t[i] (http://, https:// or www., not
// inside a word), up to the next space; 0 if there is none.
func url(t string, i int) int {
	if i > 0 && alnumBefore(t, i) {
		return 0
	}
	rest := t[i:]
	if !hasPrefixFold(rest, "http://") && !hasPrefixFold(rest, "https://") && !hasPrefixFold(rest, "www.") {
		return 0
	}
	if n := strings.IndexAny(rest, " \t\n"); n >= 0 {
		return n
	}
	return len(rest)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// link parses [text](url) at t[i] == '[': its text and the index after
// it. The target must look like one: no spaces, and a ':', '/' or '.'
// ("arr[0](x)" is code, not a link).
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
	target := t[close+2 : close+2+end]
	if target == "" || strings.ContainsAny(target, " \t") || !strings.ContainsAny(target, ":/.") {
		return "", 0, false
	}
	return t[i+1 : close], close + 2 + end + 1, true
}

// CommonWords are words that open a display name without being a name a
// line is labelled with ("The Brain", "Dr Ada Lovelace").
var commonWords = map[string]bool{
	"the": true, "a": true, "an": true, "dr": true, "mr": true, "ms": true, "mrs": true, "mx": true,
	"miss": true, "sir": true, "prof": true, "our": true, "your": true, "my": true, "new": true,
	"old": true, "big": true, "head": true, "chief": true, "lead": true, "team": true, "senior": true,
	"junior": true, "mister": true, "madam": true, "lady": true, "lord": true, "and": true, "not": true,
	"you": true, "one": true, "two": true, "all": true, "any": true, "this": true, "that": true,
}

// SpeakerNames are what a role's line may be labelled with: its id, its
// display name and, for a name of several words, the first word, if that
// is at least three letters and not a common word ("Theo" of "Theo (Tech
// Lead)", but not "The" of "The Brain" nor "Dr" of "Dr Ada").
func SpeakerNames(id, name string) []string {
	names := []string{id}
	if name == "" {
		return names
	}
	names = append(names, name)
	if first, _, ok := strings.Cut(name, " "); ok && firstName(first) {
		names = append(names, first)
	}
	return names
}

func firstName(w string) bool {
	n := 0
	for _, r := range w {
		if !unicode.IsLetter(r) && r != '\'' && r != '-' {
			return false
		}
		n++
	}
	return n >= 3 && !commonWords[strings.ToLower(w)]
}

// StripLabels removes speaker labels at the start of s. A label is a
// name, in any case, bare or in ** or [ ], followed by a separator: the
// speaking role's own names (own) with ':', " -" or " —"; another role's
// (others) only with ':', as a dash after another's name addresses them
// ("Marcus — over to you"). Repeated labels ("qa: Theo: ...") all go. A
// label with nothing after it is kept: it is the whole line.
func StripLabels(s string, own, others []string) string {
	for {
		rest, ok := label(s, own, others)
		if !ok {
			return s
		}
		s = rest
	}
}

// label strips one leading label from s.
func label(s string, own, others []string) (string, bool) {
	t := strings.TrimLeft(s, " \t\n")
	open := ""
	for _, o := range []string{"**", "__", "["} {
		if strings.HasPrefix(t, o) {
			open, t = o, t[len(o):]
			break
		}
	}
	best, dash := 0, false
	for k, names := range [][]string{own, others} {
		for _, n := range names {
			if len(n) > best && len(n) <= len(t) && strings.EqualFold(t[:len(n)], n) {
				best, dash = len(n), k == 0
			}
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
	sep := separator(t, dash)
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

// separator is the length of a label's separator at the start of t: a
// ':' or, if dash, a spaced dash.
func separator(t string, dash bool) int {
	switch {
	case strings.HasPrefix(t, ":"):
		return 1
	case !dash:
		return 0
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
