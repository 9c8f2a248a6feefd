package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"ms wins", http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1250"}}, 1250 * time.Millisecond},
		{"http date from now", http.Header{"Retry-After": {date(3 * time.Second)}}, 3 * time.Second},
		{"http date from the response's date", http.Header{"Retry-After": {date(10 * time.Second)}, "Date": {date(4 * time.Second)}}, 6 * time.Second},
		{"date in the past", http.Header{"Retry-After": {date(-time.Minute)}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"huge seconds", http.Header{"Retry-After": {"99999999999"}}, MaxRetryHint},
		{"1e300", http.Header{"Retry-After": {"1e300"}}, MaxRetryHint},
		{"inf", http.Header{"Retry-After": {"inf"}}, MaxRetryHint},
		{"NaN", http.Header{"Retry-After": {"NaN"}}, 0},
		{"ms inf", http.Header{"Retry-After-Ms": {"+Inf"}}, MaxRetryHint},
		{"ms huge", http.Header{"Retry-After-Ms": {"1e300"}}, MaxRetryHint},
		{"date far ahead", http.Header{"Retry-After": {date(1000 * time.Hour)}}, MaxRetryHint},
	}
	for _, tt := range tests {
		if got := RetryAfterHeader(tt.h, now); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
