package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"

	"github.com/batonhq/baton/runtime/llm"
)

// classify maps an error from a chat completion call to *llm.Error, with
// messages prefixed "openai". resp is the HTTP response, nil when none
// arrived.
//
//   - An error status: 429 is rate_limit, 408 timeout, 5xx server, all
//     retryable except 501; other 4xx are bad_request. retry-after-ms or
//     Retry-After on the response becomes RetryAfter. The status counts
//     even when the body is not OpenAI's error shape (a proxy's HTML page,
//     a compatible server's {"error": "..."}), which the SDK reports as a
//     decoding error rather than an API error.
//   - A context error is timeout or canceled: the caller's context says
//     which one it was, and the SDK returns the context's error itself.
//   - An SDK panic while sending is unknown and not retried: nothing says
//     a second attempt would fare better.
//   - Transport errors are network (llm.Classify); anything else unknown.
//
// A 2xx body that cannot be used never reaches here: decodeResponse
// reports it as a retryable server error.
func classify(ctx context.Context, err error, resp *http.Response) *llm.Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromStatus(apiErr.StatusCode, apiErr.Message, apiErr.Response, err)
	}
	if resp != nil && resp.StatusCode >= 400 {
		return fromStatus(resp.StatusCode, "", resp, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return llm.NewError(llm.KindCanceled, 0, err, "openai: request canceled: %v", firstLine(err.Error()))
		}
		return llm.NewError(llm.KindTimeout, 0, err, "openai: deadline exceeded: %v", firstLine(err.Error()))
	}
	if errors.Is(err, ErrSDKPanic) {
		return llm.NewError(llm.KindUnknown, 0, err, "openai: %v", firstLine(err.Error()))
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: "openai: " + firstLine(e.Message), Status: e.Status, Retryable: e.Retryable, Err: err}
}

// fromStatus classifies an error status. msg is the API's message; when it
// is empty, the start of the body stands in, so a log line still says what
// the server said.
func fromStatus(status int, msg string, resp *http.Response, cause error) *llm.Error {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = bodyExcerpt(resp)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	var kind llm.Kind
	switch {
	case status == http.StatusTooManyRequests:
		kind = llm.KindRateLimit
	case status == http.StatusRequestTimeout:
		kind = llm.KindTimeout
	case status >= 500 && status <= 599:
		kind = llm.KindServer
	case status >= 400 && status <= 499:
		kind = llm.KindBadRequest
	default:
		kind = llm.KindUnknown
	}
	out := llm.NewError(kind, status, cause, "openai: %s", firstLine(msg))
	// 501 will not start working on a retry.
	if status == http.StatusNotImplemented {
		out.Retryable = false
	}
	if resp != nil {
		out.RetryAfter = llm.RetryAfterHeader(resp.Header, time.Now())
	}
	return out
}

// bodyExcerpt returns the start of an error response's body. The SDK has
// already read it and put it back in memory, so this reads no network.
func bodyExcerpt(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return strings.TrimSpace(string(b))
}

// firstLine keeps log lines short: error texts can embed a whole response
// body after a newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
