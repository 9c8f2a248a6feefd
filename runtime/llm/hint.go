package llm

import (
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
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		now = d
	}
	return max(at.Sub(now), 0)
}
