package geminitts

import (
	"context"
	"errors"

	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini"
)

// classify maps an error from the SDK call to *llm.Error with the shared
// Gemini classification (gemini.Classify), plus one case of its own:
//
//   - A response over the byte budget is bad_request, not retried: the same
//     text would produce the same amount of audio. Split the line or raise
//     Config.MaxResponseBytes.
func classify(ctx context.Context, err error) *llm.Error {
	var big *tooLargeError
	if errors.As(err, &big) {
		return llm.NewError(llm.KindBadRequest, 0, err, "%s", big.Error())
	}
	return gemini.Classify(ctx, err, "geminitts")
}
