package engine

// The views a script reads as ctx.msg, ctx.candidate, ctx.session and
// ctx.floor, each a field at a time: an input check runs on every
// message, and building each view as a map, boxing every value, was most
// of what a call allocated. The fields are the views' expr names; Keys
// are sorted, as script.Object asks. A view reads through its call's
// facade, so one a script keeps past its call reads as empty (no keys,
// no fields), as the facade does.

type msgObject struct{ f *facade }

var msgKeys = []string{"addressed_to", "code", "confidence", "line", "low_confidence", "source", "text", "type"}

func (o msgObject) Keys() []string {
	if o.f.s == nil {
		return nil
	}
	return msgKeys
}

func (o msgObject) Field(k string) (any, bool) {
	if o.f.s == nil {
		return nil, false
	}
	m := &o.f.s.env.Msg
	switch k {
	case "type":
		return m.Type, true
	case "text":
		return m.Text, true
	case "source":
		return m.Source, true
	case "confidence":
		return m.Confidence, true
	case "addressed_to":
		return m.AddressedTo, true
	case "low_confidence":
		return m.LowConfidence, true
	case "code":
		return m.Code, true
	case "line":
		return m.Line, true
	}
	return nil, false
}

type candidateObject struct{ f *facade }

var candidateKeys = []string{"last_message", "last_message_ms", "low_stt_count", "messages", "mic_active", "speaking", "typing"}

func (o candidateObject) Keys() []string {
	if o.f.s == nil {
		return nil
	}
	return candidateKeys
}

func (o candidateObject) Field(k string) (any, bool) {
	if o.f.s == nil {
		return nil, false
	}
	c := &o.f.s.env.Candidate
	switch k {
	case "mic_active":
		return c.MicActive, true
	case "typing":
		return c.Typing, true
	case "speaking":
		return c.Speaking, true
	case "low_stt_count":
		return c.LowSTTCount, true
	case "messages":
		return c.Messages, true
	case "last_message_ms":
		return c.LastMessageMS, true
	case "last_message":
		return c.LastMessage, true
	}
	return nil, false
}

type sessionObject struct{ f *facade }

var sessionKeys = []string{"agent_speaking", "awaiting_reply", "hard_turn_pending", "last_role", "turn_pending", "turns"}

func (o sessionObject) Keys() []string {
	if o.f.s == nil {
		return nil
	}
	return sessionKeys
}

func (o sessionObject) Field(k string) (any, bool) {
	if o.f.s == nil {
		return nil, false
	}
	v := &o.f.s.env.Session
	switch k {
	case "last_role":
		return v.LastRole, true
	case "turns":
		return v.Turns, true
	case "agent_speaking":
		return v.AgentSpeaking, true
	case "awaiting_reply":
		return v.AwaitingReply, true
	case "turn_pending":
		return v.TurnPending, true
	case "hard_turn_pending":
		return v.HardTurnPending, true
	}
	return nil, false
}

type floorObject struct{ f *facade }

var floorKeys = []string{"answers", "auto_advances", "holder", "lines", "since_ms"}

func (o floorObject) Keys() []string {
	if o.f.s == nil {
		return nil
	}
	return floorKeys
}

func (o floorObject) Field(k string) (any, bool) {
	if o.f.s == nil {
		return nil, false
	}
	fl := &o.f.s.env.Floor
	switch k {
	case "holder":
		return fl.Holder, true
	case "since_ms":
		return fl.SinceMS, true
	case "lines":
		return fl.Lines, true
	case "answers":
		return fl.Answers, true
	case "auto_advances":
		return fl.AutoAdvances, true
	}
	return nil, false
}
