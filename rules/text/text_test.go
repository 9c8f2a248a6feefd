package text_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/rules/text"
)

func TestTextHelpers(t *testing.T) {
	cases := []struct {
		text                        string
		sentences, questions, words int
	}{
		{"", 0, 0, 0},
		{"What is priority? What is rollback? What monitoring do you add?", 3, 3, 11},
		{"Pick one now: hotfix first or VIP feature first, and why?", 1, 1, 11},
		{"Version 1.2 shipped. Really?? Yes", 3, 1, 5},
		{"No punctuation at all", 1, 0, 4},
	}
	for _, c := range cases {
		if got := text.CountSentences(c.text); got != c.sentences {
			t.Errorf("CountSentences(%q) = %d, want %d", c.text, got, c.sentences)
		}
		if got := len(text.SplitSentences(c.text)); got != c.sentences {
			t.Errorf("SplitSentences(%q) = %d, want %d", c.text, got, c.sentences)
		}
		if got := text.CountQuestions(c.text); got != c.questions {
			t.Errorf("CountQuestions(%q) = %d, want %d", c.text, got, c.questions)
		}
		if got := text.CountWords(c.text); got != c.words {
			t.Errorf("CountWords(%q) = %d, want %d", c.text, got, c.words)
		}
	}
	if !text.ContainsWord("Testing the logs", "test*") || text.ContainsWord("contest", "test*") || text.ContainsWord("logsy", "logs") {
		t.Error("ContainsWord boundaries")
	}
}

func TestKeywords(t *testing.T) {
	k := text.CompileKeywords([]string{"repro*", "log", "roll back", "trade-off*", "VIP"})
	cases := map[string]int{
		"":                                0,
		"Reproducing it from the LOG":     2,
		"logs and reproduce":              1,
		"we roll back, a trade-offs talk": 2,
		"vip vip VIP":                     1,
		"rollback":                        0,
		"catalog":                         0,
		// Curly quotes, dashes and ellipses separate words; letters
		// beyond ASCII do not.
		"“Reproduce” it—log…": 2,
		"«log» VIP’s":         2,
		"logé":                0,
		"reprôduce":           0,
	}
	for in, want := range cases {
		if got := k.Hits(in); got != want {
			t.Errorf("Hits(%q) = %d, want %d", in, got, want)
		}
		// Same answer as the reference scan.
		ref := text.CountKeywordHits(in, []string{"repro*", "log", "roll back", "trade-off*", "VIP"})
		if ref != want {
			t.Errorf("CountKeywordHits(%q) = %d, want %d", in, ref, want)
		}
	}
}

// FuzzKeywords checks the compiled matcher against the reference scan,
// CountKeywordHits: each distinct keyword (ignoring case) counts once if
// ContainsWord finds it. The list is the input's first line, split at '|'; the text the rest.
func FuzzKeywords(f *testing.F) {
	for _, s := range []string{
		"repro*|log|roll back|trade-off*|VIP\nReproducing it from the LOG, we roll back",
		"café|naïve*|test\nCAFÉ NAÏVETÉ tests",
		"-x|it's|a b*|K\nit's a bee, -x k",
		"log|LOG|log*\nlogging log",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij\nabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij",
		"ab*\nabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijxyz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		head, body, _ := strings.Cut(in, "\n")
		list := strings.Split(head, "|")
		if len(list) > text.MaxKeywords {
			list = list[:text.MaxKeywords]
		}
		want := text.CountKeywordHits(body, list)
		if got := text.CompileKeywords(list).Hits(body); got != want {
			t.Fatalf("Hits = %d, ContainsWord finds %d, list %q in %q", got, want, list, body)
		}
	})
}

// A keyword listed twice, in any case, counts once, in both forms.
func TestKeywordsCountDistinct(t *testing.T) {
	for _, list := range [][]string{{"refund*", "Refund*"}, {"roll back", "Roll Back"}, {"log", " LOG "}} {
		in := "refunding now, roll back the log"
		if got := text.CompileKeywords(list).Hits(in); got != 1 {
			t.Errorf("Hits(%q) with %q = %d, want 1", in, list, got)
		}
		if got := text.CountKeywordHits(in, list); got != 1 {
			t.Errorf("CountKeywordHits(%q, %q) = %d, want 1", in, list, got)
		}
	}
}

// FuzzCounts holds the counting measures to their plain definitions:
// CountSentences to SplitSentences, CountWords to strings.Fields.
func FuzzCounts(f *testing.F) {
	for _, s := range []string{"", "One. Two? Three!", "Version 1.2 shipped. Really?? Yes", "a\u00a0b\u2003c", "end.\u0085next", "“Quoted.” Then", "x.'y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := text.CountSentences(s), len(text.SplitSentences(s)); got != want {
			t.Errorf("CountSentences(%q) = %d, SplitSentences finds %d", s, got, want)
		}
		if got, want := text.CountWords(s), len(strings.Fields(s)); got != want {
			t.Errorf("CountWords(%q) = %d, strings.Fields finds %d", s, got, want)
		}
	})
}
