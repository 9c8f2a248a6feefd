package text_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules/text"
)

func TestStripMarkdown(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Plain line, nothing to do.", "Plain line, nothing to do."},
		{"### Question\nWhat broke?", "What broke?"},
		{"### A title that is a sentence.\nWhat broke?", "A title that is a sentence.\nWhat broke?"},
		{"### Only a title", "Only a title"},
		{"## Plan\n### Risks\n- Rollback first.", "Rollback first."},
		{"That is **really** *important* and __very bold__ too.", "That is really important and very bold too."},
		{"**Bold**, _very quiet_, _Calm_ and ***both***.", "Bold, very quiet, Calm and both."},
		{"**bold *inner* words**", "bold inner words"},
		{"Keep snake_case and my_var as they are.", "Keep snake_case and my_var as they are."},
		{"Two things:\n- rollback\n- monitoring", "Two things:\nrollback\nmonitoring"},
		{"Steps:\n1. deploy\n2) verify", "Steps:\ndeploy\nverify"},
		{"Run `git bisect` first.", "Run git bisect first."},
		{"```go\nx := 1\n```\nSee above.", "x := 1\nSee above."},
		{"Read [the runbook](https://x.example/rb) now.", "Read the runbook now."},
		{"> quoted\n>> deeper", "quoted\ndeeper"},
		{"Before\n---\nAfter", "Before\nAfter"},
		{"| a | b |\n|---|:---:|\n| 1 | 2 |", "a b\n1 2"},
		{"• first point", "first point"},
		{"C# and #1 stay.", "C# and #1 stay."},
		{"Version 1.2 is out.", "Version 1.2 is out."},
		{"~~old~~ new", "old new"},
		{"", ""},
		// What could be ordinary text stays.
		{"What's 2*3?", "What's 2*3?"},
		{"SELECT * FROM users", "SELECT * FROM users"},
		{"Is 2*3*4 still 24?", "Is 2*3*4 still 24?"},
		{"Match x*Foo* in C.", "Match x*Foo* in C."},
		{"Is 2 * 3*, or 6?", "Is 2 * 3*, or 6?"},
		{"Override __init__ first.", "Override __init__ first."},
		{"__init__", "__init__"},
		{"~/config and the _id field", "~/config and the _id field"},
		{"The _id_ key.", "The _id_ key."},
		{"Approx ~5 or ~~ maybe.", "Approx ~5 or ~~ maybe."},
		{"# of retries", "# of retries"},
		{"# of retries matters.\nWhy?", "# of retries matters.\nWhy?"},
		{"arr[0](x)", "arr[0](x)"},
		{"See [the notes](my notes) later.", "See [the notes](my notes) later."},
		{"See https://x.example/a_b_c/*/~u?q=*x* now.", "See https://x.example/a_b_c/*/~u?q=*x* now."},
		{"**Visit** www.x.example/~me_too_ today.", "Visit www.x.example/~me_too_ today."},
		{"Run `SELECT * FROM users` and `__init__` and `~/x`.", "Run SELECT * FROM users and __init__ and ~/x."},
		{"A lone ` backtick.", "A lone ` backtick."},
		{"Use ``a`b`` here.", "Use a`b here."},
		{"## 2 questions\nWhat broke?", "What broke?"},
		{"#hashtag stays.", "#hashtag stays."},
		{"####### seven is no heading", "####### seven is no heading"},
		{"- **Bullet** one\n* two\n+ three", "Bullet one\ntwo\nthree"},
		{"![diagram](img/d.png) shows it.", "diagram shows it."},
	}
	for _, c := range cases {
		if got := text.StripMarkdown(c.in); got != c.want {
			t.Errorf("StripMarkdown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The speaking role's own names and the other roles'.
var (
	own    = []string{"qa", "Quinn (QA)", "Quinn"}
	others = []string{"QA Lead", "Theo", "tech_lead", "Priya", "marcus", "Marcus Webb", "Marcus", "brain", "The Brain"}
)

func TestStripLabels(t *testing.T) {
	cases := []struct{ in, want string }{
		{"What would you test first?", "What would you test first?"},
		{"qa: What would you test first?", "What would you test first?"},
		{"QA Lead: Tell me more.", "Tell me more."},
		{"**Theo:** Let's begin.", "Let's begin."},
		{"**Theo**: Let's begin.", "Let's begin."},
		{"[Priya]: Go on.", "Go on."},
		{"qa: Theo: tech_lead: Go on.", "Go on."},
		{"Theo:", "Theo:"},
		{"Theodore: hello", "Theodore: hello"},
		{"Theo said it works.", "Theo said it works."},
		{"Theo-like answer.", "Theo-like answer."},
		// The speaker's own names go before a dash too.
		{"quinn - fine.", "fine."},
		{"Quinn — fine.", "fine."},
		{"**Quinn (QA)** – fine.", "fine."},
		{"QA - Marcus: fine.", "fine."},
		// A dash after another role's name addresses them.
		{"Marcus — over to you: what would you ask about the rollout?", "Marcus — over to you: what would you ask about the rollout?"},
		{"Priya - your question, please.", "Priya - your question, please."},
		{"Marcus Webb – your turn.", "Marcus Webb – your turn."},
		{"The — honestly — the key question is rollback.", "The — honestly — the key question is rollback."},
		{"Quinn: Priya - over to you.", "Priya - over to you."},
	}
	for _, c := range cases {
		if got := text.StripLabels(c.in, own, others); got != c.want {
			t.Errorf("StripLabels(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSpeakerNames(t *testing.T) {
	cases := []struct {
		id, name string
		want     []string
	}{
		{"tech_lead", "Theo (Tech Lead)", []string{"tech_lead", "Theo (Tech Lead)", "Theo"}},
		{"brain", "The Brain", []string{"brain", "The Brain"}},
		{"ada", "Dr Ada Lovelace", []string{"ada", "Dr Ada Lovelace"}},
		{"mo", "Mo Salah", []string{"mo", "Mo Salah"}},
		{"sam", "Sam", []string{"sam", "Sam"}},
		{"x", "", []string{"x"}},
		{"jo", "O'Brien-Smith Jo", []string{"jo", "O'Brien-Smith Jo", "O'Brien-Smith"}},
	}
	for _, c := range cases {
		if got := text.SpeakerNames(c.id, c.name); !slices.Equal(got, c.want) {
			t.Errorf("SpeakerNames(%q, %q) = %q, want %q", c.id, c.name, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	cases := []struct {
		in              string
		words, sentence int
		want            string
	}{
		{"Short enough.", 5, 0, "Short enough."},
		{"One two three. Four five six. Seven eight.", 6, 0, "One two three. Four five six."},
		{"One two three. Four five six. Seven eight.", 7, 1, "One two three."},
		{"One two three four five six seven, eight nine.", 6, 0, "One two three four five six."},
		{"One two three four, five six.", 4, 0, "One two three four."},
		{"Why would you? I ask because.", 3, 0, "Why would you?"},
	}
	for _, c := range cases {
		got := text.Cut(c.in, c.words, c.sentence)
		if got != c.want {
			t.Errorf("Cut(%q, %d, %d) = %q, want %q", c.in, c.words, c.sentence, got, c.want)
		}
		if n := text.CountWords(got); n > c.words {
			t.Errorf("Cut(%q) kept %d words, over %d", c.in, n, c.words)
		}
	}
}

// Nothing to clean allocates nothing: the engine cleans every line.
func TestCleanAllocs(t *testing.T) {
	line := "What would you check first, and why? Take your time."
	if n := testing.AllocsPerRun(100, func() {
		_ = text.StripLabels(text.StripMarkdown(line), own, others)
	}); n != 0 {
		t.Errorf("cleaning a clean line allocated %v times", n)
	}
}

func FuzzSpeech(f *testing.F) {
	for _, s := range []string{"**qa:** ### Hi\n- a\n- b", "[x](y) `z` __w__", "| a | b |\n|--|--|", "1. one\n2) two", "a_ _b", "Theo: qa - x", "> > q", "_*_a_*_", "`a*b*` **`x**`", "https://x.y/*a* [t](u.v) arr[0](x)", "# of x\n## Y", "Quinn — Marcus - x"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		md := text.StripMarkdown(s)
		if len(md) > len(s) {
			t.Fatalf("StripMarkdown grew %q to %q", s, md)
		}
		if again := text.StripMarkdown(md); again != md {
			t.Fatalf("StripMarkdown not idempotent: %q -> %q -> %q", s, md, again)
		}
		lb := text.StripLabels(s, own, others)
		if len(lb) > len(s) {
			t.Fatalf("StripLabels grew %q to %q", s, lb)
		}
		if again := text.StripLabels(lb, own, others); again != lb {
			t.Fatalf("StripLabels not idempotent: %q -> %q -> %q", s, lb, again)
		}
		n = n%200 + 1
		if n < 1 {
			n += 200
		}
		cut := text.Cut(s, n, 0)
		if w := text.CountWords(cut); w > n {
			t.Fatalf("Cut(%q, %d) kept %d words", s, n, w)
		}
		if strings.TrimSpace(s) != "" && strings.TrimSpace(cut) == "" {
			t.Fatalf("Cut(%q, %d) kept nothing", s, n)
		}
	})
}
