package llm

import (
	"context"
	"testing"
)

func BenchmarkFromTurn(b *testing.B) {
	req := seedRequest()
	b.ReportAllocs()
	for b.Loop() {
		_ = FromTurn(req)
	}
}

func BenchmarkParseReply(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"plain", "Share your first containment step. I will validate with replay tests."},
		{"fenced_json", "```json\n{\"text\":\"Share your first containment step.\",\"intent_tag\":\"qa_repro_validation\"}\n```"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = ParseReply(bc.in)
			}
		})
	}
}

// BenchmarkWithPolicyParallel measures the retry wrapper's own cost on the
// success path from many goroutines at once; it holds no shared mutable
// state, so ns/op should fall with more CPUs rather than rise.
func BenchmarkWithPolicyParallel(b *testing.B) {
	ok := ModelFunc(func(context.Context, Request) (Response, error) { return Response{Text: "ok"}, nil })
	m := WithPolicy(ok, DefaultRetryPolicy(), nil)
	req := FromTurn(seedRequest())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
