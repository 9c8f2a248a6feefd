package voice

import (
	"errors"
	"testing"
)

// A stream delivers in order and ends with the closed event; an abnormal
// end is an error event too; once stopped, a reader never blocks, and
// what it still delivers goes to the buffer if there is room.
func TestStream(t *testing.T) {
	s := NewStream(4)
	if !s.Emit(Event{Kind: EventAgentText, Text: "a"}) {
		t.Fatal("Emit on an open stream refused")
	}
	boom := errors.New("boom")
	s.Finish(Event{Kind: EventClosed, Err: boom})
	s.Exit()
	var got []EventKind
	for ev := range s.Events() {
		got = append(got, ev.Kind)
	}
	if want := []EventKind{EventAgentText, EventError, EventClosed}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("events %v, want %v", got, want)
	}
	if !s.Exited() {
		t.Fatal("Exited false after Exit")
	}

	// Stopped with a full buffer and nobody reading: Emit returns at once,
	// Finish drops what does not fit.
	s = NewStream(1)
	s.Emit(Event{Kind: EventAgentText})
	s.Stop()
	if !s.Stopped() || s.Emit(Event{Kind: EventAgentText}) {
		t.Fatal("Emit delivered after Stop on a full buffer")
	}
	s.Finish(Event{Kind: EventClosed})
	s.Exit()
	s.Wait()
	if n := len(s.Events()); n != 1 {
		t.Fatalf("%d events buffered, want the one that fit", n)
	}
}
