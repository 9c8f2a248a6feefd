package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
)

// grpcStatusCodes maps the status names Google APIs put in error bodies to
// HTTP codes, for error bodies that carry a status but no numeric code.
var grpcStatusCodes = map[string]int{
	"INVALID_ARGUMENT":    400,
	"FAILED_PRECONDITION": 400,
	"OUT_OF_RANGE":        400,
	"UNAUTHENTICATED":     401,
	"PERMISSION_DENIED":   403,
	"NOT_FOUND":           404,
	"ALREADY_EXISTS":      409,
	"ABORTED":             409,
	"RESOURCE_EXHAUSTED":  429,
	"CANCELLED":           499,
	"INTERNAL":            500,
	"UNKNOWN":             500,
	"DATA_LOSS":           500,
	"UNIMPLEMENTED":       501,
	"UNAVAILABLE":         503,
	"DEADLINE_EXCEEDED":   504,
}

// classify maps an SDK error to *llm.Error.
//
//   - genai.APIError (a value type): 429 is rate_limit, 408 timeout, 5xx
//     server, all retryable except 501; other 4xx are bad_request.
//   - A context error is timeout or canceled: the SDK wraps the transport's
//     error, and the caller's context says which one it was.
//   - A 2xx body that is not valid JSON, or is JSON of the wrong shape (the
//     SDK panics on some of those; Generate recovers), is server and
//     retryable: the request was accepted, so the fault is on the serving
//     side, and a truncated or garbled body is usually a transient proxy or
//     backend hiccup rather than something a different request would fix.
//   - Transport errors are network; anything else unknown.
func classify(ctx context.Context, err error) *llm.Error {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return llm.NewError(llm.KindCanceled, 0, err, "gemini: request canceled: %v", err)
		}
		return llm.NewError(llm.KindTimeout, 0, err, "gemini: deadline exceeded: %v", err)
	}
	if errors.Is(err, errSDKPanic) {
		return llm.NewError(llm.KindServer, 0, err, "gemini: malformed response body: %v", firstLine(err.Error()))
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return llm.NewError(llm.KindServer, 0, err, "gemini: malformed response body: %v", firstLine(err.Error()))
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: "gemini: " + firstLine(e.Message), Status: e.Status, Retryable: e.Retryable, Err: err}
}

func fromAPIError(e genai.APIError) *llm.Error {
	code := e.Code
	if code == 0 {
		code = statusCode(e.Status)
	}
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = e.Status
	}
	msg = "gemini: " + firstLine(msg)
	var kind llm.Kind
	switch {
	case code == 429:
		kind = llm.KindRateLimit
	case code == 408:
		kind = llm.KindTimeout
	case code >= 500 && code <= 599:
		kind = llm.KindServer
	case code == 499:
		kind = llm.KindCanceled
	case code >= 400 && code <= 499:
		kind = llm.KindBadRequest
	default:
		kind = llm.KindUnknown
	}
	out := llm.NewError(kind, code, e, "%s", msg)
	// 501 will not start working on a retry.
	if code == 501 {
		out.Retryable = false
	}
	return out
}

// statusCode reads a code from "RESOURCE_EXHAUSTED" or "429 Too Many
// Requests" (the SDK puts the HTTP status line there for non-JSON bodies).
func statusCode(status string) int {
	status = strings.TrimSpace(status)
	if c, ok := grpcStatusCodes[status]; ok {
		return c
	}
	if f := strings.Fields(status); len(f) > 0 {
		if c, err := strconv.Atoi(f[0]); err == nil {
			return c
		}
	}
	return 0
}

// firstLine keeps log lines short: SDK errors can embed a whole response
// body after a newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
