package voice

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestEstimatorDuration(t *testing.T) {
	rates := Estimator{WPM: map[string]float64{"qa": 120, "ba": 200, "broken": -5, "nan": math.NaN(), "inf": math.Inf(1)}}
	tests := []struct {
		name string
		e    Estimator
		role string
		text string
		want time.Duration
	}{
		{"zero value uses 160 wpm", Estimator{}, "qa", "one two three four", 1500 * time.Millisecond},
		{"role rate", rates, "qa", "one two three four", 2 * time.Second},
		{"other role rate", rates, "ba", "one two three four five", 1500 * time.Millisecond},
		{"unknown role falls back", rates, "tech_lead", "one two three four", 1500 * time.Millisecond},
		{"custom default", Estimator{DefaultWPM: 60}, "x", "a b", 2 * time.Second},
		{"negative rate ignored", rates, "broken", "one two three four", 1500 * time.Millisecond},
		{"NaN rate ignored", rates, "nan", "one two three four", 1500 * time.Millisecond},
		{"infinite rate ignored", rates, "inf", "one two three four", 1500 * time.Millisecond},
		{"bad default ignored", Estimator{DefaultWPM: 0.5}, "x", "one two three four", 1500 * time.Millisecond},
		{"whitespace only", Estimator{}, "qa", " \n\t ", 0},
		{"empty", Estimator{}, "qa", "", 0},
		{"rounds to milliseconds", Estimator{DefaultWPM: 7}, "x", "a", 8571 * time.Millisecond},
		{"punctuation and newlines", Estimator{}, "qa", "Share your first containment step.\nI will validate with replay tests.", 4125 * time.Millisecond}, // 11 words,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.e.Speak(context.Background(), tt.role, "Puck", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if u.Duration != tt.want || u.Audio != nil {
				t.Fatalf("Speak = %v (audio %d bytes), want %v and no audio", u.Duration, len(u.Audio), tt.want)
			}
			if u.Duration%time.Millisecond != 0 {
				t.Fatalf("duration %v is not whole milliseconds", u.Duration)
			}
		})
	}
}

func TestEstimatorLongTextDoesNotOverflow(t *testing.T) {
	text := strings.Repeat("word ", 100_000)
	d := Estimator{DefaultWPM: 1}.Duration("x", text)
	if want := 100_000 * time.Minute; d != want {
		t.Fatalf("duration = %v, want %v", d, want)
	}
}

func TestCountWordsMatchesFields(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a ", "a  b\tc\nd", "héllo wörld", "\u00a0x\u2003y", "x\xffy z"} {
		if got, want := countWords(s), len(strings.Fields(s)); got != want {
			t.Errorf("countWords(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestEstimatorCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Estimator{}).Speak(ctx, "qa", "", "hi"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
