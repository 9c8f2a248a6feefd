package rules

// Nearest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo, so errors can say "did you mean".
func Nearest(s string, candidates []string) (string, bool) {
	best, bestD := "", len(s)/3+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != ""
}

// DidYouMean formats Nearest's answer for the end of an error message, or
// lists the candidates when none is close.
func DidYouMean(s string, candidates []string) string {
	if n, ok := Nearest(s, candidates); ok {
		return " (did you mean " + n + "?)"
	}
	return ""
}

func (c *compiler) suggest(s string, candidates []string) string { return DidYouMean(s, candidates) }

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
