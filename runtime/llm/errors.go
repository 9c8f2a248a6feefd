package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/batonhq/baton/engine"
)

// Kind classifies a failed call so packs can react to it (a rate limit may
// deserve a different fallback line than a bad request).
type Kind string

// Error kinds. All but KindCanceled appear in engine.AdapterError's list;
// canceled is kept distinct because a call abandoned by the host (session
// ended, turn preempted) is not a provider failure and must not be retried.
const (
	KindTimeout    Kind = "timeout"
	KindRateLimit  Kind = "rate_limit"
	KindServer     Kind = "server"
	KindBadRequest Kind = "bad_request"
	KindNetwork    Kind = "network"
	KindCanceled   Kind = "canceled"
	KindUnknown    Kind = "unknown"
	// The answer came but was of no use, after the engine asked once
	// more: cut by the token limit, empty, or withheld by the vendor.
	// Adapters never return these; the engine reports them.
	KindTruncated Kind = "truncated"
	KindEmpty     Kind = "empty"
	KindBlocked   Kind = "blocked"
)

// Kinds lists every error kind, for checks of what a script may name.
var Kinds = []Kind{KindTimeout, KindRateLimit, KindServer, KindBadRequest, KindNetwork, KindCanceled, KindUnknown, KindTruncated, KindEmpty, KindBlocked}

// Error is a classified adapter failure.
type Error struct {
	Kind    Kind
	Message string
	// Status is the provider's HTTP status, 0 when there was none.
	Status int
	// Retryable says whether repeating the same request may succeed.
	Retryable bool
	// RetryAfter is how long the vendor asked the caller to wait before
	// trying again (Retry-After, retry-after-ms, Gemini's RetryInfo),
	// 0 when it said nothing. A retry never comes sooner.
	RetryAfter time.Duration
	// Err is the underlying cause, kept for errors.Is/As and logs.
	Err error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm %s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("llm %s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// NewError builds an *Error whose Retryable flag follows the kind's default.
func NewError(kind Kind, status int, cause error, format string, args ...any) *Error {
	return &Error{
		Kind:      kind,
		Message:   fmt.Sprintf(format, args...),
		Status:    status,
		Retryable: DefaultRetryable(kind),
		Err:       cause,
	}
}

// DefaultRetryable reports whether a kind is worth retrying in general:
// throttling, server faults, transport trouble and a single slow attempt.
func DefaultRetryable(k Kind) bool {
	switch k {
	case KindRateLimit, KindServer, KindNetwork, KindTimeout:
		return true
	}
	return false
}

// Classify turns any error into an *Error. An *Error anywhere in the chain
// is returned as is; context and transport errors are recognized; anything
// else is unknown and not retried, since repeating an unexplained failure
// usually just burns the time budget. Classify(nil) is nil.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	// Context errors first: *url.Error also implements net.Error, and a
	// deadline must read as a timeout, not as a network fault.
	switch {
	case errors.Is(err, context.Canceled):
		return NewError(KindCanceled, 0, err, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return NewError(KindTimeout, 0, err, "%v", err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return NewError(KindTimeout, 0, err, "%v", err)
		}
		return NewError(KindNetwork, 0, err, "%v", err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return NewError(KindNetwork, 0, err, "%v", err)
	}
	return NewError(KindUnknown, 0, err, "%v", err)
}

// AsAdapterError maps any error to the engine's adapter error. nil maps to
// nil so the result can be stored in engine.LLMResult.Err directly.
func AsAdapterError(err error) *engine.AdapterError {
	e := Classify(err)
	if e == nil {
		return nil
	}
	return &engine.AdapterError{Kind: string(e.Kind), Message: e.Message}
}
