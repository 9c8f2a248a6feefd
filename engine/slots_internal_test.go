package engine

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The caps hold for any buffer, focus and cap, and a numbered value keeps
// whole lines: every kept line is a line of the buffer, numbered as it
// was, and the kept lines are one run that contains the focus.
func TestNumberedAroundKeepsCapsAndLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"const", "x", "=", "greet()", "return", "'hi';", "é", "日本", "{", "}", "\t", ""}
	for i := range 3000 {
		n := rng.IntN(80)
		var lines []string
		for range n {
			var w []string
			for range rng.IntN(12) {
				w = append(w, words[rng.IntN(len(words))])
			}
			lines = append(lines, strings.Join(w, " "))
		}
		value := strings.Join(lines, "\n")
		if len(lines) > 1 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // a final newline ends the line before
		}
		maxBytes := []int{0, 64, 100, 512, 2048}[rng.IntN(5)]
		maxChars := []int{0, 64, 300}[rng.IntN(3)]
		focus := rng.IntN(n + 3)
		out, cut := numberedAround(value, focus, maxBytes, maxChars)
		if maxBytes > 0 && len(out) > maxBytes || maxChars > 0 && utf8.RuneCountInString(out) > maxChars {
			t.Fatalf("case %d: %d bytes, %d chars over caps %d/%d:\n%s", i, len(out), utf8.RuneCountInString(out), maxBytes, maxChars, out)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("case %d: cut inside a character: %q", i, out)
		}
		var kept []int
		for _, l := range strings.Split(out, "\n") {
			if l == "" && value == "" || strings.HasPrefix(l, "[… ") {
				continue
			}
			num, text, ok := strings.Cut(strings.TrimPrefix(l, "L"), ":")
			k, err := strconv.Atoi(num)
			if !ok || err != nil || k < 1 || k > len(lines) {
				t.Fatalf("case %d: %q is not a numbered line of the buffer", i, l)
			}
			if text != lines[k-1] && !strings.HasSuffix(text, "[…]") {
				t.Fatalf("case %d: line %d cut: %q, was %q", i, k, text, lines[k-1])
			}
			kept = append(kept, k)
		}
		for j := 1; j < len(kept); j++ {
			if kept[j] != kept[j-1]+1 {
				t.Fatalf("case %d: kept lines %v are not one run", i, kept)
			}
		}
		if f := min(max(focus, 1), len(lines)); len(kept) > 0 && (f < kept[0] || f > kept[len(kept)-1]) {
			t.Fatalf("case %d: focus %d outside kept lines %v", i, f, kept)
		}
		whole := value == "" || len(kept) == len(lines) && !strings.Contains(out, "[…]")
		if cut == whole {
			t.Fatalf("case %d: cut %v, but %d of %d lines kept:\n%s", i, cut, len(kept), len(lines), out)
		}
	}
}

// Marker room is kept only for a side that has lines left out: at the
// smallest cap, a buffer cut only below keeps every line that fits.
func TestNumberedAroundMarkerRoom(t *testing.T) {
	out, cut := numberedAround("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np", 1, 64, 0)
	want := "L1:a\nL2:b\nL3:c\nL4:d\nL5:e\nL6:f\nL7:g\nL8:h\nL9:i\n[… 7 lines below]" // 64 bytes
	if out != want || !cut {
		t.Fatalf("got %q (cut %v), want %q", out, cut, want)
	}
	// One line alone over the cap is the one that is cut, and says so.
	out, cut = numberedAround(strings.Repeat("x", 300), 1, 64, 0)
	if len(out) > 64 || !cut || !strings.HasPrefix(out, "L1:xxx") {
		t.Fatalf("got %q (%d bytes, cut %v)", out, len(out), cut)
	}
}

func TestCutHead(t *testing.T) {
	for _, tc := range []struct {
		in              string
		maxBytes, chars int
		want            string
	}{
		{"short", 64, 0, "short"},
		{strings.Repeat("ab ", 40), 0, 20, "ab ab ab ab ab a […]"}, // 16 characters and the mark
		{strings.Repeat("é", 40), 20, 0, "ééééééé […]"},            // 14 bytes and the mark's 6
		{"ab" + strings.Repeat(" ", 40), 0, 20, "ab […]"},
	} {
		if got := cutHead(tc.in, tc.maxBytes, tc.chars); got != tc.want {
			t.Errorf("cutHead(%q, %d, %d) = %q, want %q", tc.in, tc.maxBytes, tc.chars, got, tc.want)
		}
	}
}

// BenchmarkNumberedAround cuts a 500-line buffer to the editor slot's
// 2 KB around a cursor in the middle: what every debounced editor change
// costs before it reaches a prompt.
func BenchmarkNumberedAround(b *testing.B) {
	var lines []string
	for i := range 500 {
		lines = append(lines, "  const value"+strconv.Itoa(i)+" = compute(input, "+strconv.Itoa(i)+"); // keep it readable")
	}
	buf := strings.Join(lines, "\n")
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := numberedAround(buf, 250, 2048, 0); len(out) > 2048 {
			b.Fatal("over the cap")
		}
	}
}
