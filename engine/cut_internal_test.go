package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// cut never panics, never splits a character, never sends more than it
// may, and says exactly how much it left out, for every keep of texts
// with and without line breaks at their ends and with characters of one
// to four bytes.
func TestCutEveryKeep(t *testing.T) {
	texts := []string{
		"aaaa\nbbbb\ncccc\ndddd",
		"\nleading and trailing\n",
		"prix: 12 €, café, 。",
		"emoji 😀 at the end 😀",
		"€",
		"a\n\n\nb",
	}
	for _, text := range texts {
		for _, end := range []bool{false, true} {
			for keep := 0; keep < len(text); keep++ {
				got, dropped := cut(text, keep, end)
				if !utf8.ValidString(got) {
					t.Fatalf("cut(%q, %d, %v) split a character: %q", text, keep, end, got)
				}
				if got == "" {
					if dropped != len(text) {
						t.Fatalf("cut(%q, %d, %v) sent nothing but reports %d left out", text, keep, end, dropped)
					}
					continue
				}
				if kept := len(text) - dropped; kept > keep || kept <= 0 {
					t.Fatalf("cut(%q, %d, %v) kept %d bytes", text, keep, end, kept)
				}
				body := strings.Replace(got, "\n"+trimMark(dropped), "", 1)
				if end {
					body = strings.Replace(got, trimMark(dropped)+"\n", "", 1)
				}
				if len(body) != len(text)-dropped || !strings.Contains(text, body) {
					t.Fatalf("cut(%q, %d, %v) = %q, %d: not the text less what it says it dropped", text, keep, end, got, dropped)
				}
			}
		}
	}
}
