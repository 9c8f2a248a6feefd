package geminitts

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/batonhq/baton/runtime/llm"
)

// The mapping below follows runtime/llm/gemini's classify, which that
// package does not export; the two must agree so a pack's fallbacks treat
// a throttled voice like a throttled model.

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

// classify maps an error from the SDK call to *llm.Error.
//
//   - A response over the byte budget is bad_request, not retried: the same
//     text would produce the same amount of audio. Split the line or raise
//     Config.MaxResponseBytes.
//   - genai.APIError: 429 is rate_limit, 408 timeout, 5xx server, all
//     retryable except 501; 499 canceled; other 4xx bad_request.
//   - A context error is timeout or canceled: the SDK wraps the transport's
//     error, and the caller's context says which one it was.
//   - A 2xx body that is not JSON, JSON of the wrong shape (the SDK panics
//     on some of those; generateContent recovers) or audio that is not
//     base64 is server and retryable: the request was accepted, the body
//     was garbled on the serving side.
//   - Transport errors are network; anything else unknown.
func classify(ctx context.Context, err error) *llm.Error {
	var big *tooLargeError
	if errors.As(err, &big) {
		return llm.NewError(llm.KindBadRequest, 0, err, "%s", big.Error())
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return llm.NewError(llm.KindCanceled, 0, err, "geminitts: request canceled: %v", firstLine(err.Error()))
		}
		return llm.NewError(llm.KindTimeout, 0, err, "geminitts: deadline exceeded: %v", firstLine(err.Error()))
	}
	if cause := decodeError(err); cause != nil {
		return llm.NewError(llm.KindServer, 0, err, "geminitts: malformed response body: %v", firstLine(cause.Error()))
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: "geminitts: " + firstLine(e.Message), Status: e.Status, Retryable: e.Retryable, Err: err}
}

// decodeError finds why a 2xx body could not be decoded, or returns nil.
// It returns the innermost cause because the SDK's own wrapping quotes the
// whole decoded body, which for speech is megabytes of base64.
func decodeError(err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		b64Err    base64.CorruptInputError
	)
	switch {
	case errors.Is(err, errSDKPanic):
		return err
	case errors.As(err, &syntaxErr):
		return syntaxErr
	case errors.As(err, &typeErr):
		return typeErr
	case errors.As(err, &b64Err):
		return b64Err
	}
	return nil
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
	out := llm.NewError(kind, code, e, "geminitts: %s", firstLine(msg))
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
// body, here possibly megabytes of base64 audio, after a newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, 300)
}
