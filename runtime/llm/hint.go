package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfterHeader reads how long a response asks the caller to wait
// before trying again: OpenAI's retry-after-ms (milliseconds, which wins
// as the finer one), else Retry-After in seconds or as an HTTP date
// (RFC 9110 §10.2.3). A date is measured from the response's own Date
// header, so the two clocks that matter are the server's, or from now
// when the response has none. 0 means no hint (or one already past).
func RetryAfterHeader(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return HintDuration(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return HintDuration(s, time.Second)
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		now = d
	}
	return min(max(at.Sub(now), 0), MaxRetryHint)
}

// MaxRetryHint caps a vendor's retry hint: a wait this long is past any
// call's budget, so the call gives up at once rather than waiting.
const MaxRetryHint = 24 * time.Hour

// HintDuration turns n units of a vendor's hint into a duration: 0 for
// a hint that is not a positive number (NaN, negative, zero), at most
// MaxRetryHint, so a huge or infinite hint cannot overflow into a
// negative wait.
func HintDuration(n float64, unit time.Duration) time.Duration {
	if !(n > 0) || math.IsInf(n, 0) || n >= float64(MaxRetryHint)/float64(unit) {
		if n > 0 {
			return MaxRetryHint
		}
		return 0
	}
	return time.Duration(n * float64(unit))
}
