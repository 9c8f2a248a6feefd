package rules

// Nearest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo, so errors can say "did you mean".
func Nearest(s string, candidates []string) (string, bool) {
	// A third of the word may differ: close enough for a slip of the
	// fingers, far enough that colour is not taken for cover.
	best, bestD := "", max(1, (len(s)+1)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != ""
}

// DidYouMean formats Nearest's answer for the end of an error message, or
// is empty when no candidate is close.
func DidYouMean(s string, candidates []string) string {
	if n, ok := Nearest(s, candidates); ok {
		return " (did you mean " + n + "?)"
	}
	return ""
}

func (c *compiler) suggest(s string, candidates []string) string { return DidYouMean(s, candidates) }

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours (goldne, golden) count
// one each.
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
