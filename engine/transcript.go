package engine

// transcript is what was said, by whom and when, shared by every role's
// requests, and the scenario context they all carry.
type transcript struct {
	lines   []TranscriptLine
	context Context // built once and shared by requests; hosts must not modify
}

func (t *transcript) init(s *Session) {
	p := s.p
	for _, kv := range p.ScenarioContext(s.in) {
		t.context = append(t.context, KV{Key: kv.Key, Value: kv.Value})
	}
}

func (t *transcript) add(at int64, speaker, text string, unclear bool) {
	t.lines = append(t.lines, TranscriptLine{T: at, Speaker: speaker, Text: text, Unclear: unclear})
}

// tail is the last n lines, shared (callers copy what they keep).
func (t *transcript) tail(n int) []TranscriptLine {
	if len(t.lines) > n {
		return t.lines[len(t.lines)-n:]
	}
	return t.lines
}
