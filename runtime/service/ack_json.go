package service

import (
	"strconv"
)

// encode returns the ack as json.Marshal would. An input's ack is the
// frame sent most, one per client event, and reflection was most of its
// cost: acks without state, missed frames or a secret (a start's) whose
// strings need no escaping are written directly, and any other goes
// through encoding/json (ack_json_test.go holds the two to the same
// bytes).
func (a *AckFrame) encode() []byte {
	if a.State != nil || a.Missed != nil || a.Workspace != nil || a.SessionSecret != "" || !plainJSON(a.Type) || !plainJSON(a.ID) || !plainJSON(a.SessionID) || !plainJSON(a.Clamped) {
		return mustJSON(a)
	}
	b := make([]byte, 0, 80+len(a.ID)+len(a.SessionID))
	b = append(b, `{"type":"`...)
	b = append(b, a.Type...)
	b = append(b, `","id":"`...)
	b = append(b, a.ID...)
	b = append(b, '"')
	if a.SessionID != "" {
		b = append(b, `,"session_id":"`...)
		b = append(b, a.SessionID...)
		b = append(b, '"')
	}
	if a.T != nil {
		b = append(b, `,"t_ms":`...)
		b = strconv.AppendInt(b, *a.T, 10)
	}
	if a.InputSeq != 0 {
		b = append(b, `,"input_seq":`...)
		b = strconv.AppendUint(b, a.InputSeq, 10)
	}
	if a.Clamped != "" {
		b = append(b, `,"clamped":"`...)
		b = append(b, a.Clamped...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// plainJSON reports whether encoding/json writes s between quotes as it
// is: printable ASCII other than the quote, the backslash and the three
// characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
