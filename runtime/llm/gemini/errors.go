package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

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

// classify maps an SDK error from the LLM adapter to *llm.Error.
func classify(ctx context.Context, err error) *llm.Error { return Classify(ctx, err, "gemini") }

// Classify maps an error from any genai call to *llm.Error, with messages
// prefixed by component; the LLM, Live and speech adapters share it so a
// pack's failure policy sees a throttled voice like a throttled model.
//
//   - genai.APIError (a value type): 429 is rate_limit, 408 timeout, 5xx
//     server, all retryable except 501; other 4xx are bad_request. A
//     google.rpc.RetryInfo in the details becomes RetryAfter.
//   - A context error is timeout or canceled: the SDK wraps the transport's
//     error, and the caller's context says which one it was.
//   - A 2xx body that is not valid JSON, or is JSON of the wrong shape (the
//     SDK panics on some of those; Generate recovers), is server and
//     retryable: the request was accepted, so the fault is on the serving
//     side, and a truncated or garbled body is usually a transient proxy or
//     backend hiccup rather than something a different request would fix.
//   - Transport errors are network; anything else unknown.
func Classify(ctx context.Context, err error, component string) *llm.Error {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return FromAPIError(apiErr, component)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return llm.NewError(llm.KindCanceled, 0, err, "%s: request canceled: %v", component, firstLine(err.Error()))
		}
		return llm.NewError(llm.KindTimeout, 0, err, "%s: deadline exceeded: %v", component, firstLine(err.Error()))
	}
	if cause := decodeError(err); cause != nil {
		return llm.NewError(llm.KindServer, 0, err, "%s: malformed response body: %v", component, firstLine(cause.Error()))
	}
	e := llm.Classify(err)
	return &llm.Error{Kind: e.Kind, Message: component + ": " + firstLine(e.Message), Status: e.Status, Retryable: e.Retryable, Err: err}
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
	case errors.Is(err, ErrSDKPanic):
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

// FromAPIError classifies an error status returned by the API.
func FromAPIError(e genai.APIError, component string) *llm.Error {
	code := e.Code
	if code == 0 {
		code = statusCode(e.Status)
	}
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = e.Status
	}
	msg = component + ": " + firstLine(msg)
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
	out.RetryAfter = retryDelay(e.Details)
	return out
}

// retryInfoType is the "@type" of the detail in which Google's APIs say
// when a throttled caller may come back.
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// retryDelay reads google.rpc.RetryInfo's retryDelay from an error's
// details: a protobuf Duration in its JSON form ("2s", "0.5s"), or 0.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != retryInfoType {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if !strings.HasSuffix(s, "s") {
			continue
		}
		if secs, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64); err == nil && secs > 0 {
			return llm.HintDuration(secs, time.Second)
		}
	}
	return 0
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
