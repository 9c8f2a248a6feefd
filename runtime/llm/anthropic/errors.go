package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/batonhq/baton/runtime/llm"
)

// statusOverloaded is the status Anthropic answers when its servers are
// overloaded (error type overloaded_error); it is not a registered HTTP
// status.
const statusOverloaded = 529

// classify maps an error from a Messages call to *llm.Error, with
// messages prefixed "anthropic" so a log line names the vendor.
//
//   - An error status from the API (*sdk.Error): 429 is rate_limit, 408
//     timeout, 529 (overloaded) and other 5xx server, all retryable except
//     501; other 4xx are bad_request. The message is the one the API put in
//     its error body (a 529's always says "overloaded"), and Retry-After
//     on the response becomes RetryAfter.
//   - A context error is timeout or canceled: the caller's context says
//     which, and the SDK may hand back either the context's error or the
//     transport's.
//   - A panic inside the SDK is unknown and not retried: nothing says
//     whether repeating the call would end differently.
//   - Transport errors are network; anything else unknown.
func classify(ctx context.Context, err error) *llm.Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return llm.NewError(llm.KindCanceled, 0, err, "anthropic: request canceled: %s", firstLine(err.Error()))
		}
		return llm.NewError(llm.KindTimeout, 0, err, "anthropic: deadline exceeded: %s", firstLine(err.Error()))
	}
	if errors.Is(err, ErrSDKPanic) {
		return llm.NewError(llm.KindUnknown, 0, err, "anthropic: %s", firstLine(err.Error()))
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: "anthropic: " + firstLine(e.Message), Status: e.Status, Retryable: e.Retryable, Err: err}
}

// fromAPIError classifies an error status returned by the API.
func fromAPIError(e *sdk.Error) *llm.Error {
	code := e.StatusCode
	var kind llm.Kind
	switch {
	case code == http.StatusTooManyRequests:
		kind = llm.KindRateLimit
	case code == http.StatusRequestTimeout:
		kind = llm.KindTimeout
	case code == statusOverloaded, code >= 500 && code <= 599:
		kind = llm.KindServer
	case code >= 400 && code <= 499:
		kind = llm.KindBadRequest
	default:
		kind = llm.KindUnknown
	}
	out := llm.NewError(kind, code, e, "anthropic: %s", apiMessage(e))
	// 501 will not start working on a retry.
	if code == http.StatusNotImplemented {
		out.Retryable = false
	}
	if code == statusOverloaded && !strings.Contains(out.Message, "overloaded") {
		out.Message = "anthropic: overloaded: " + strings.TrimPrefix(out.Message, "anthropic: ")
	}
	if e.Response != nil {
		out.RetryAfter = llm.RetryAfterHeader(e.Response.Header, time.Now())
	}
	return out
}

// apiMessage is the message of an error body,
// {"type":"error","error":{"type":"...","message":"..."}}, or the first
// line of a body in another shape (a proxy's plain text), or the status
// text of an empty one.
func apiMessage(e *sdk.Error) string {
	raw := strings.TrimSpace(e.RawJSON())
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil {
		if msg := strings.TrimSpace(body.Error.Message); msg != "" {
			return firstLine(msg)
		}
		if body.Error.Type != "" {
			return body.Error.Type
		}
	}
	if raw != "" {
		return firstLine(raw)
	}
	if e.StatusCode == statusOverloaded {
		return "overloaded"
	}
	return http.StatusText(e.StatusCode)
}

// firstLine keeps log lines short: error texts can embed a whole response
// body after a newline, and a proxy's error page can be long.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const limit = 500
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
