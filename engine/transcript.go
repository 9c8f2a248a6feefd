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

// tail is the last n lines. Lines are only ever appended, never changed,
// so requests keep the tail as it is, capped at its length so that no
// append through it reaches the transcript: a copy per request was a
// tenth of a session's allocated bytes. Whoever holds one only reads it.
func (t *transcript) tail(n int) []TranscriptLine {
	l := t.lines
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l[:len(l):len(l)]
}
