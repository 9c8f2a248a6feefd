package geminitts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// ErrResponseTooLarge is wrapped by the bad_request error Speak returns
// when the API sends more than Config.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("geminitts: response too large")

type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("geminitts: response exceeds the %d-byte limit (Config.MaxResponseBytes); split the line or raise the limit", e.limit)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

// The SDK reads whole response bodies with io.ReadAll and offers no size
// option, so the limit is enforced beneath it, in the HTTP transport. The
// budget travels in the request context rather than living in the
// transport because it belongs to one Speak call: the SDK may make more
// than one request for a call (automatic continuation), and their bodies
// together must stay within the limit.
type budgetKey struct{}

type budget struct {
	limit int64
	left  atomic.Int64
}

func withBudget(ctx context.Context, limit int64) context.Context {
	b := &budget{limit: limit}
	b.left.Store(limit)
	return context.WithValue(ctx, budgetKey{}, b)
}

// limitClient returns a copy of hc whose transport meters response bodies.
func limitClient(hc *http.Client) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *hc
	c.Transport = limitTransport{base: base}
	return &c
}

type limitTransport struct{ base http.RoundTripper }

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	b, _ := req.Context().Value(budgetKey{}).(*budget)
	if b == nil {
		// Every request this package makes carries a budget; anything
		// else is not ours to meter.
		return resp, nil
	}
	if resp.ContentLength > b.left.Load() {
		// Refuse before reading: a declared length over budget would
		// only be read to be thrown away.
		resp.Body.Close()
		return nil, &tooLargeError{limit: b.limit}
	}
	resp.Body = &limitedBody{rc: resp.Body, b: b}
	return resp, nil
}

type limitedBody struct {
	rc io.ReadCloser
	b  *budget
}

func (l *limitedBody) Read(p []byte) (int, error) {
	left := l.b.left.Load()
	if left <= 0 {
		// A body that ends exactly at the limit is within it; only a
		// byte past it is an overrun.
		var probe [1]byte
		n, err := l.rc.Read(probe[:])
		if n > 0 {
			return 0, &tooLargeError{limit: l.b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := l.rc.Read(p)
	l.b.left.Add(-int64(n))
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
