package text

import "testing"

// BenchmarkSpeech is what cleaning costs a generated line: nothing to
// clean (the common case), markdown, a label.
func BenchmarkSpeech(b *testing.B) {
	own := SpeakerNames("tech_lead", "Theo (Tech Lead)")
	others := SpeakerNames("qa", "Quinn")
	for _, bc := range []struct{ name, line string }{
		{"clean", "Good. Which log line would confirm the retry fired twice?"},
		{"markdown", "### My question\n**Which** log line would confirm the retry fired *twice*?\n- the webhook log\n- the ledger"},
		{"label", "**Theo:** Good. Which log line would confirm the retry fired twice?"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				StripLabels(StripMarkdown(bc.line), own, others)
			}
		})
	}
}
