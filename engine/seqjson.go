package engine

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A sequence emits several effects per agent call, each with the
// exchange's rounds as JSON; encoding/json's reflection (and its
// re-scanning of a MarshalJSON's output) was most of an exchange's
// engine time. These types append their own JSON instead: the bytes
// encoding/json would write for them, field for field (seqjson_test.go
// holds them to it).

// appendString appends s as encoding/json writes a string: quoted, with
// control characters, quotes, backslashes, <, > and & escaped, U+2028
// and U+2029 escaped, and invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// field appends ,"key": (or "key": first).
func field(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func (a *AgentResponse) appendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	str := func(key, v string) {
		if v != "" {
			b = appendString(field(b, first, key), v)
			first = false
		}
	}
	str("agent", a.Agent)
	str("run_id", a.RunID)
	if a.Round != 0 {
		b = strconv.AppendInt(field(b, first, "round"), int64(a.Round), 10)
		first = false
	}
	b = appendString(field(b, first, "status"), a.Status)
	first = false
	str("content", a.Content)
	str("errorCode", a.ErrorCode)
	str("errorMessage", a.ErrorMessage)
	return append(b, '}')
}

// MarshalJSON writes a as encoding/json would, faster.
func (a AgentResponse) MarshalJSON() ([]byte, error) { return a.appendJSON(nil), nil }

func (a *AgentStarted) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"agent":`...), a.Agent)
	b = appendString(append(b, `,"run_id":`...), a.RunID)
	b = strconv.AppendInt(append(b, `,"round":`...), int64(a.Round), 10)
	b = strconv.AppendInt(append(b, `,"call":`...), int64(a.Call), 10)
	return append(b, '}')
}

// MarshalJSON writes a as encoding/json would, faster.
func (a AgentStarted) MarshalJSON() ([]byte, error) { return a.appendJSON(nil), nil }

// appendJSON writes {agent: {status, content...}} in the order asked.
func (r Responses) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i := range r {
		if i > 0 {
			b = append(b, ',')
		}
		a := r[i]
		b = append(appendString(b, a.Agent), ':')
		a.Agent, a.RunID, a.Round = "", "", 0
		b = a.appendJSON(b)
	}
	return append(b, '}')
}

// MarshalJSON writes {agent: {status, content...}} in the order asked.
func (r Responses) MarshalJSON() ([]byte, error) { return r.appendJSON(nil), nil }

func (rd *SequenceRound) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"roundNumber":`...), int64(rd.Number), 10)
	return append(rd.Responses.appendJSON(append(b, `,"responsesByAgent":`...)), '}')
}

// MarshalJSON writes rd as encoding/json would, faster.
func (rd SequenceRound) MarshalJSON() ([]byte, error) { return rd.appendJSON(nil), nil }

func (x *Exchange) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"run_id":`...), x.RunID)
	b = appendString(append(b, `,"sequence":`...), x.Sequence)
	for _, f := range [...]struct{ k, v string }{{"prompt", x.Prompt}, {"reason", x.Reason}, {"running", x.Running}} {
		if f.v != "" {
			b = appendString(field(b, false, f.k), f.v)
		}
	}
	if x.Calls != 0 {
		b = strconv.AppendInt(field(b, false, "calls"), int64(x.Calls), 10)
	}
	if len(x.Rounds) > 0 {
		b = append(field(b, false, "rounds"), '[')
		for i := range x.Rounds {
			if i > 0 {
				b = append(b, ',')
			}
			b = x.Rounds[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// MarshalJSON writes x as encoding/json would, faster.
func (x Exchange) MarshalJSON() ([]byte, error) { return x.appendJSON(nil), nil }

// Flags are a gate's flags in the order the pack declares them; they
// marshal as an object in that order. A value is a bool or a string.
type Flags []Flag

// Flag is one gate flag and its value.
type Flag struct {
	ID    string
	Value any
}

func (fs Flags) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, f.ID), ':')
		switch v := f.Value.(type) {
		case bool:
			b = strconv.AppendBool(b, v)
		case string:
			b = appendString(b, v)
		default:
			raw, _ := json.Marshal(v)
			b = append(b, raw...)
		}
	}
	return append(b, '}')
}

// MarshalJSON writes the flags as an object, in declaration order.
func (fs Flags) MarshalJSON() ([]byte, error) { return fs.appendJSON(nil), nil }

// UnmarshalJSON reads an object of flags; JSON objects have no order,
// so they come back sorted by id.
func (fs *Flags) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*fs = (*fs)[:0]
	for k, v := range m {
		*fs = append(*fs, Flag{k, v})
	}
	slices.SortFunc(*fs, func(a, b Flag) int { return strings.Compare(a.ID, b.ID) })
	return nil
}

// Get is the value of flag id, nil if there is none.
func (fs Flags) Get(id string) any {
	for _, f := range fs {
		if f.ID == id {
			return f.Value
		}
	}
	return nil
}

func (g *GateRead) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"run_id":`...), g.RunID)
	b = strconv.AppendInt(append(b, `,"round":`...), int64(g.Round), 10)
	b = appendString(append(b, `,"source":`...), g.Source)
	b = g.Flags.appendJSON(append(b, `,"flags":`...))
	if g.Why != "" {
		b = appendString(append(b, `,"why":`...), g.Why)
	}
	return append(b, '}')
}

// MarshalJSON writes g as encoding/json would, faster.
func (g GateRead) MarshalJSON() ([]byte, error) { return g.appendJSON(nil), nil }

// roundDone is a ROUND_COMPLETED effect's data: the run and the round,
// {run_id, roundNumber, responsesByAgent}.
type roundDone struct {
	runID string
	round *SequenceRound
}

func (d *roundDone) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"run_id":`...), d.runID)
	b = strconv.AppendInt(append(b, `,"roundNumber":`...), int64(d.round.Number), 10)
	return append(d.round.Responses.appendJSON(append(b, `,"responsesByAgent":`...)), '}')
}

// seqData is the data of a sequence effect: one of the types above, or
// anything else encoding/json writes.
func seqData(v any) json.RawMessage {
	if x, ok := v.(*Exchange); ok {
		// The closing effect carries every answer: one allocation.
		n := 128 + len(x.Prompt)
		for _, rd := range x.Rounds {
			for _, a := range rd.Responses {
				n += 48 + len(a.Agent) + len(a.Content) + len(a.ErrorMessage)
			}
		}
		return x.appendJSON(make([]byte, 0, n))
	}
	if a, ok := v.(interface{ appendJSON([]byte) []byte }); ok {
		return a.appendJSON(make([]byte, 0, 256))
	}
	raw, _ := json.Marshal(v)
	return raw
}
