// Package text holds the text measures shared by guardrails, expressions
// and scripts, so that all three agree on what a sentence or a question is.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SplitSentences splits text after '.', '!' or '?' runs that are followed by
// space or the end. Abbreviation handling is deliberately absent: agent
// lines are short and a predictable rule beats a clever one.
func SplitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		for i < len(text) && (text[i] == '.' || text[i] == '!' || text[i] == '?') {
			i++
		}
		if i < len(text) {
			next, _ := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsSpace(next) && next != '"' && next != '\'' {
				continue
			}
		}
		if s := strings.TrimSpace(text[start:i]); s != "" {
			out = append(out, s)
		}
		start = i
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// CountSentences is len(SplitSentences(text)) without allocating.
func CountSentences(text string) int {
	n := 0
	inSentence := false
	for i := 0; i < len(text); {
		b := text[i]
		switch {
		case b == '.' || b == '!' || b == '?':
			i++
			for i < len(text) && (text[i] == '.' || text[i] == '!' || text[i] == '?') {
				i++
			}
			boundary := i >= len(text)
			if !boundary {
				sp, _ := spaceAt(text, i)
				boundary = sp || text[i] == '"' || text[i] == '\''
			}
			if boundary {
				n++
				inSentence = false
			} else {
				inSentence = true
			}
		default:
			sp, size := spaceAt(text, i)
			i += size
			if !sp {
				inSentence = true
			}
		}
	}
	if inSentence {
		n++
	}
	return n
}

// spaceAt reports whether the character at text[i] is white space, and
// its length: ASCII by the byte, the rest by unicode.IsSpace.
func spaceAt(text string, i int) (bool, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return b == ' ' || b >= '\t' && b <= '\r', 1
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	return unicode.IsSpace(r), size
}

// CountQuestions counts question marks, treating "??" as one question.
func CountQuestions(text string) int {
	n := 0
	prev := false
	for i := 0; i < len(text); i++ {
		q := text[i] == '?'
		if q && !prev {
			n++
		}
		prev = q
	}
	return n
}

// CountWords counts runs of non-space characters.
func CountWords(text string) int {
	n := 0
	in := false
	for i := 0; i < len(text); {
		sp, size := spaceAt(text, i)
		i += size
		if sp {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// ContainsWord reports whether text contains word (or phrase) at word
// boundaries, ignoring case. Keywords may end in '*' to match a prefix
// ("test*" matches "testing").
func ContainsWord(text, word string) bool {
	prefix := strings.HasSuffix(word, "*")
	word = strings.TrimSuffix(word, "*")
	if word == "" {
		return false
	}
	// Only word starts can match, and a cheap first-byte check rejects
	// most of them before the full case-insensitive comparison.
	first := lowerASCII(word[0])
	startsWord := wordAt(word, 0) > 0
	for i := 0; i+len(word) <= len(text); i++ {
		if startsWord && i > 0 && wordBefore(text, i) {
			continue
		}
		if first < 0x80 && lowerASCII(text[i]) != first {
			continue
		}
		if !strings.EqualFold(text[i:i+len(word)], word) {
			continue
		}
		end := i + len(word)
		if !prefix && end < len(text) && wordAt(text, end) > 0 {
			continue
		}
		return true
	}
	return false
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// wordAt returns the length of the word character at text[i], or 0 if it
// is none. Beyond ASCII, letters, digits and marks are word characters and
// everything else (curly quotes, dashes, ellipses) separates words, so
// “Ignore and ignore are the same word.
func wordAt(text string, i int) int {
	b := text[i]
	if b < utf8.RuneSelf {
		if isWordByte(b) {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
		return n
	}
	return 0
}

// wordBefore reports whether the character ending at text[i-1] is a word
// character.
func wordBefore(text string, i int) bool {
	if b := text[i-1]; b < utf8.RuneSelf {
		return isWordByte(b)
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// CountKeywordHits counts how many distinct keywords occur in text, by
// ContainsWord: the reference Keywords.Hits answers like. Keywords are
// trimmed, and one listed twice (ignoring case) counts once.
func CountKeywordHits(text string, keywords []string) int {
	n := 0
	seen := make(map[string]bool, len(keywords))
	for _, k := range keywords {
		lk := strings.ToLower(strings.TrimSpace(k))
		if strings.TrimSuffix(lk, "*") == "" || seen[lk] {
			continue
		}
		seen[lk] = true
		if ContainsWord(text, lk) {
			n++
		}
	}
	return n
}

// Keywords is a compiled keyword list: the text is walked once, word by
// word, and each word is looked up, instead of scanning the text once per
// keyword. Hits gives the same answer as ContainsWord per keyword.
type Keywords struct {
	exact map[string]int // lower-case ASCII word -> keyword index
	// lens and firsts (bit b: a byte b) say which lengths and first
	// bytes the exact words have: most words of a text match neither,
	// and skip the map.
	lens     uint64
	firsts   [2]uint64
	prefixes []keyword // ASCII words ending in '*'
	// phrases are ASCII keywords of several words ("roll back",
	// "trade-off*"), tried at each word start.
	phrases []keyword
	// scan are the rest (letters beyond ASCII, which match ignoring
	// case by Unicode's rules, or a first character that is not a
	// letter or digit): ContainsWord over the whole text.
	scan []keyword
	n    int
}

type keyword struct {
	text   string // lower case, without the '*'
	raw    string // lower case, as listed: ContainsWord's form
	prefix bool
	idx    int
}

// MaxKeywords bounds one keyword list (hits are tracked in a bit set).
const MaxKeywords = 64

// maxWord is the longest word looked up in place; longer keywords are
// scanned.
const maxWord = 64

// CompileKeywords prepares a list; keywords ending in '*' match prefixes.
// A keyword listed twice (ignoring case) counts once.
func CompileKeywords(list []string) *Keywords {
	k := &Keywords{exact: map[string]int{}, n: len(list)}
	seen := map[string]bool{}
	for i, w := range list {
		if i >= MaxKeywords {
			break
		}
		lw := strings.ToLower(strings.TrimSpace(w))
		bare := strings.TrimSuffix(lw, "*")
		if bare == "" || seen[lw] {
			continue
		}
		seen[lw] = true
		kw := keyword{text: bare, raw: lw, prefix: bare != lw, idx: i}
		ascii, words := true, true
		for x := range len(bare) {
			ascii = ascii && bare[x] < utf8.RuneSelf
			words = words && isWordByte(bare[x])
		}
		switch {
		case !ascii || !isWordByte(bare[0]) || len(bare) > maxWord:
			k.scan = append(k.scan, kw)
		case !words:
			k.phrases = append(k.phrases, kw)
		case kw.prefix:
			k.prefixes = append(k.prefixes, kw)
		default:
			k.exact[bare] = i
			k.lens |= 1 << uint(len(bare)-1)
			k.firsts[bare[0]>>6] |= 1 << (bare[0] & 63)
		}
	}
	return k
}

// Hits counts how many distinct keywords occur in text.
func (k *Keywords) Hits(text string) int {
	if k == nil || k.n == 0 {
		return 0
	}
	var seen uint64
	var buf [maxWord]byte
	for i := 0; i < len(text); {
		// Word characters are mostly ASCII: a byte test, where wordAt
		// decodes a rune.
		start, ascii := i, true
		for i < len(text) {
			if b := text[i]; b < utf8.RuneSelf {
				if !isWordByte(b) {
					break
				}
				i++
				continue
			}
			n := wordAt(text, i)
			if n == 0 {
				break
			}
			ascii = false
			i += n
		}
		if i == start {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		for _, p := range k.phrases {
			if seen&(1<<uint(p.idx)) == 0 && phraseAt(text, start, p) {
				seen |= 1 << uint(p.idx)
			}
		}
		word := text[start:i]
		lw := buf[:min(len(word), maxWord)]
		for x := range lw {
			lw[x] = lowerASCII(word[x])
		}
		// Keywords looked up here are ASCII, and no word with a letter
		// beyond ASCII folds to one of the same length.
		if ascii && len(word) <= maxWord && k.lens&(1<<uint(len(lw)-1)) != 0 && k.firsts[lw[0]>>6]&(1<<(lw[0]&63)) != 0 {
			// string(lw) in a map index does not allocate.
			if idx, ok := k.exact[string(lw)]; ok {
				seen |= 1 << uint(idx)
			}
		}
		for _, p := range k.prefixes {
			if len(lw) >= len(p.text) && string(lw[:len(p.text)]) == p.text {
				seen |= 1 << uint(p.idx)
			}
		}
	}
	for _, p := range k.scan {
		if seen&(1<<uint(p.idx)) == 0 && ContainsWord(text, p.raw) {
			seen |= 1 << uint(p.idx)
		}
	}
	n := 0
	for ; seen != 0; seen &= seen - 1 {
		n++
	}
	return n
}

// phraseAt reports whether ASCII phrase p starts at text[i], a word's
// start, and ends at a word's end (or anywhere, for a prefix).
func phraseAt(text string, i int, p keyword) bool {
	end := i + len(p.text)
	if end > len(text) {
		return false
	}
	for x := range len(p.text) {
		if lowerASCII(text[i+x]) != p.text[x] {
			return false
		}
	}
	return p.prefix || end == len(text) || wordAt(text, end) == 0
}

// Plural picks the word for n: one when n is 1, many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
