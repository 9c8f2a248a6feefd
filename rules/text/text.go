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
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == '.' || r == '!' || r == '?':
			for i < len(text) && (text[i] == '.' || text[i] == '!' || text[i] == '?') {
				i++
			}
			boundary := i >= len(text)
			if !boundary {
				next, _ := utf8.DecodeRuneInString(text[i:])
				boundary = unicode.IsSpace(next) || next == '"' || next == '\''
			}
			if boundary {
				n++
				inSentence = false
			} else {
				inSentence = true
			}
		case !unicode.IsSpace(r):
			inSentence = true
		}
	}
	if inSentence {
		n++
	}
	return n
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
	for _, r := range text {
		if unicode.IsSpace(r) {
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

// CountKeywordHits counts how many keywords occur in text.
func CountKeywordHits(text string, keywords []string) int {
	n := 0
	for _, k := range keywords {
		if ContainsWord(text, k) {
			n++
		}
	}
	return n
}

// Keywords is a compiled keyword list: the text is split into words once
// and each word is looked up, instead of scanning the text per keyword.
type Keywords struct {
	exact    map[string]int // lower-case word -> keyword index
	prefixes []keywordPrefix
	phrases  []keywordPrefix // keywords spanning several words: scanned
	n        int
}

type keywordPrefix struct {
	text string
	idx  int
}

// MaxKeywords bounds one keyword list (hits are tracked in a bit set).
const MaxKeywords = 64

// CompileKeywords prepares a list; keywords ending in '*' match prefixes.
func CompileKeywords(list []string) *Keywords {
	k := &Keywords{exact: map[string]int{}, n: len(list)}
	for i, w := range list {
		if i >= MaxKeywords {
			break
		}
		lw := strings.ToLower(strings.TrimSpace(w))
		bare := strings.TrimSuffix(lw, "*")
		switch {
		case bare == "":
		case strings.IndexFunc(bare, func(r rune) bool { return r < 0x80 && !isWordByte(byte(r)) }) >= 0:
			k.phrases = append(k.phrases, keywordPrefix{lw, i})
		case strings.HasSuffix(lw, "*"):
			k.prefixes = append(k.prefixes, keywordPrefix{bare, i})
		default:
			if _, dup := k.exact[bare]; !dup {
				k.exact[bare] = i
			}
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
	var buf [64]byte
	for i := 0; i < len(text); {
		n := wordAt(text, i)
		if n == 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		j := i + n
		for j < len(text) {
			m := wordAt(text, j)
			if m == 0 {
				break
			}
			j += m
		}
		word := text[i:j]
		i = j
		if len(word) > len(buf) {
			continue
		}
		lw := buf[:len(word)]
		for x := range len(word) {
			lw[x] = lowerASCII(word[x])
		}
		// string(lw) in a map index does not allocate.
		if idx, ok := k.exact[string(lw)]; ok {
			seen |= 1 << uint(idx)
		}
		for _, p := range k.prefixes {
			if len(lw) >= len(p.text) && string(lw[:len(p.text)]) == p.text {
				seen |= 1 << uint(p.idx)
			}
		}
	}
	for _, p := range k.phrases {
		if seen&(1<<uint(p.idx)) == 0 && ContainsWord(text, p.text) {
			seen |= 1 << uint(p.idx)
		}
	}
	n := 0
	for ; seen != 0; seen &= seen - 1 {
		n++
	}
	return n
}

// Plural picks the word for n: one when n is 1, many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
