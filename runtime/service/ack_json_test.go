package service

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestAckEncodeFields holds encode to AckFrame's fields: a field added to
// the frame must be written by encode too, or left to encoding/json.
func TestAckEncodeFields(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[AckFrame]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	want := []string{"Type", "ID", "SessionID", "SessionSecret", "T", "InputSeq", "Clamped", "State", "Missed", "Workspace"}
	if !slices.Equal(got, want) {
		t.Fatalf("AckFrame fields %v, encode knows %v: update encode and this list", got, want)
	}
}

func TestAckEncode(t *testing.T) {
	t0, t1 := int64(0), int64(-12)
	cases := []AckFrame{
		{Type: FrameAck, ID: "e1"},
		{Type: FrameAck, ID: "e1", SessionID: "s-1", T: &t0, InputSeq: 7},
		{Type: FrameAck, ID: "e2", SessionID: "s", T: &t1, Clamped: "future"},
		{Type: FrameAck, ID: `quote"d`, SessionID: "s"},
		{Type: FrameAck, ID: "<script>&", SessionID: "s"},
		{Type: FrameAck, ID: "tab\there", SessionID: "sé"},
		{Type: FrameAck, ID: "bad\xffutf8"},
		{Type: FrameAck, ID: "", SessionID: ""},
		{Type: FrameAck, ID: "r", SessionID: "s", State: &SessionState{SessionID: "s", Pack: "dayone"}},
		{Type: FrameAck, ID: "r", SessionID: "s", Missed: []json.RawMessage{json.RawMessage(`{"type":"effect"}`)}},
		{Type: FrameAck, ID: "s", SessionID: "s", SessionSecret: "q3Jk8Vb0yQ2hW5n1cZ7tLm4xR9sD6fA0eU3iO8pG2kE", T: &t0},
	}
	for _, a := range cases {
		checkAck(t, a)
	}
}

func FuzzAckEncode(f *testing.F) {
	f.Add("e1", "s1", int64(5), uint64(3), "", true)
	f.Add("\u2028", "<>", int64(-1), uint64(0), "behind", false)
	f.Fuzz(func(t *testing.T, id, sid string, tm int64, seq uint64, clamped string, hasT bool) {
		a := AckFrame{Type: FrameAck, ID: id, SessionID: sid, InputSeq: seq, Clamped: clamped}
		if hasT {
			a.T = &tm
		}
		checkAck(t, a)
	})
}

func checkAck(t *testing.T, a AckFrame) {
	t.Helper()
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.encode(); string(got) != string(want) {
		t.Errorf("encode\n got %s\nwant %s", got, want)
	}
}
