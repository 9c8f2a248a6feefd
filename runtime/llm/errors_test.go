package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	"github.com/batonhq/baton/engine"
)

func TestClassify(t *testing.T) {
	own := &Error{Kind: KindRateLimit, Message: "slow down", Status: 429, Retryable: true}
	dnsErr := &net.DNSError{Err: "no such host", Name: "example.invalid"}
	timeoutErr := &net.DNSError{Err: "i/o timeout", Name: "example.invalid", IsTimeout: true}
	tests := []struct {
		name      string
		err       error
		kind      Kind
		retryable bool
	}{
		{"own error passes through", own, KindRateLimit, true},
		{"wrapped own error", fmt.Errorf("gemini: %w", own), KindRateLimit, true},
		{"canceled", fmt.Errorf("call: %w", context.Canceled), KindCanceled, false},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), KindTimeout, true},
		{"net error", dnsErr, KindNetwork, true},
		{"net timeout", timeoutErr, KindTimeout, true},
		{"os deadline", os.ErrDeadlineExceeded, KindTimeout, true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), KindNetwork, true},
		{"closed conn", net.ErrClosed, KindNetwork, true},
		{"anything else", errors.New("boom"), KindUnknown, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.err)
			if got.Kind != tt.kind || got.Retryable != tt.retryable {
				t.Fatalf("Classify(%v) = %s retryable=%v, want %s retryable=%v", tt.err, got.Kind, got.Retryable, tt.kind, tt.retryable)
			}
			if !errors.Is(got, tt.err) && !errors.Is(tt.err, got) {
				t.Errorf("Classify lost the cause %v", tt.err)
			}
		})
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

func TestAsAdapterError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want *engine.AdapterError
	}{
		{"nil", nil, nil},
		{"classified", &Error{Kind: KindServer, Message: "backend unavailable", Status: 503}, &engine.AdapterError{Kind: "server", Message: "backend unavailable"}},
		{"bad request", fmt.Errorf("x: %w", &Error{Kind: KindBadRequest, Message: "bad schema"}), &engine.AdapterError{Kind: "bad_request", Message: "bad schema"}},
		{"deadline", context.DeadlineExceeded, &engine.AdapterError{Kind: "timeout", Message: "context deadline exceeded"}},
		{"plain", errors.New("boom"), &engine.AdapterError{Kind: "unknown", Message: "boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AsAdapterError(tt.err)
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("AsAdapterError(%v) = %+v, want %+v", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: KindRateLimit, Status: 429, Message: "quota"}, "llm rate_limit (HTTP 429): quota"},
		{&Error{Kind: KindNetwork, Message: "reset"}, "llm network: reset"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
