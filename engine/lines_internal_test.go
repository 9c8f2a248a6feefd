package engine

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzLineKey checks appendLineKey's byte-wise ASCII path against the
// plain rune-by-rune form of the rule: lower case, runs of white space
// as one space, none at the ends.
func FuzzLineKey(f *testing.F) {
	for _, s := range []string{"", "  Hello,\tWORLD \n", "Ünïcode  \u00a0 ÀB", "a\x85b\xffc", "\v\f\r x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var want []byte
		space := false
		for _, r := range text {
			if unicode.IsSpace(r) {
				space = len(want) > 0
				continue
			}
			if space {
				want = append(want, ' ')
				space = false
			}
			want = utf8.AppendRune(want, unicode.ToLower(r))
		}
		if got := appendLineKey(nil, text); string(got) != string(want) {
			t.Fatalf("appendLineKey(%q) = %q, want %q", text, got, want)
		}
	})
}
