package voice

import (
	"context"
	"math"
	"time"
	"unicode"
)

// DefaultWPM is a typical conversational speaking rate.
const DefaultWPM = 160

// Estimator is a deterministic Speaker for dry runs and replays: it
// produces no audio and estimates playback time from the word count, so a
// simulated session advances its clock the way a spoken one would.
//
// The zero value speaks every role at DefaultWPM. Estimator is read-only
// after construction and safe for concurrent use; do not mutate WPM while
// it is in use.
type Estimator struct {
	// WPM maps a role to its speaking rate in words per minute.
	WPM map[string]float64
	// DefaultWPM applies to roles missing from WPM; 0 means DefaultWPM.
	DefaultWPM float64
}

var _ Speaker = Estimator{}

// Speak returns the estimated duration, rounded to whole milliseconds
// because engine time is integer milliseconds. Invalid rates (below one
// word per minute, NaN, infinite) fall back to the default rate rather
// than yielding a zero or practically endless utterance.
func (e Estimator) Speak(ctx context.Context, role, _ string, text string) (Utterance, error) {
	if err := ctx.Err(); err != nil {
		return Utterance{}, err
	}
	return Utterance{Duration: e.Duration(role, text)}, nil
}

// Duration estimates how long text takes to say as role.
func (e Estimator) Duration(role, text string) time.Duration {
	words := countWords(text)
	if words == 0 {
		return 0
	}
	wpm := float64(DefaultWPM)
	if validRate(e.DefaultWPM) {
		wpm = e.DefaultWPM
	}
	if r, ok := e.WPM[role]; ok && validRate(r) {
		wpm = r
	}
	ms := math.Round(float64(words) * 60000 / wpm)
	return time.Duration(ms) * time.Millisecond
}

// countWords counts whitespace-separated words like strings.Fields, without
// allocating the slice of words.
func countWords(s string) int {
	n, inWord := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			inWord = false
		} else if !inWord {
			inWord = true
			n++
		}
	}
	return n
}

func validRate(r float64) bool {
	return r >= 1 && !math.IsInf(r, 0)
}
