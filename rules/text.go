package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text helpers shared by guardrails and expressions. They must behave the
// same everywhere a pack can observe them, so they live in one place.

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
	for i := 0; i+len(word) <= len(text); i++ {
		if !strings.EqualFold(text[i:i+len(word)], word) {
			continue
		}
		if i > 0 && isWordByte(text[i-1]) {
			continue
		}
		end := i + len(word)
		if !prefix && end < len(text) && isWordByte(text[end]) {
			continue
		}
		return true
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
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
