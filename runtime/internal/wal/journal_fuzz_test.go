package wal

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzJournalSegment feeds arbitrary bytes to the segment reader redo
// uses. It must never panic, must answer damage or entries, and what it
// calls a tail must be one: the segment cut there reads as the same
// entries with no tail, which is what redo leaves behind.
func FuzzJournalSegment(f *testing.F) {
	e1 := appendEntry(nil, "a", 100, []byte("first"))
	e2 := appendEntry(nil, "b", 200, []byte("second entry"))
	v2 := appendBatch(appendBatch([]byte(JournalMagic), e1), e2, e1)
	v1 := append(append([]byte(journalMagicV1), e1...), e2...)
	f.Add(v2, true)
	f.Add(append(v2, make([]byte, 64)...), true)
	f.Add(v2[:len(v2)-5], true)
	f.Add(v1, false)
	f.Add(v1[:len(v1)-3], true)
	f.Add([]byte(JournalMagic), true)
	f.Fuzz(func(t *testing.T, data []byte, last bool) {
		ents, tail, err := parseSegment(data, "journal/f.jnl", last)
		if err != nil {
			var dmg *DamageError
			if !errors.As(err, &dmg) {
				t.Fatalf("error %v is not a *DamageError", err)
			}
			return
		}
		if tail == nil {
			return
		}
		if !last {
			t.Fatal("a tail in a segment that is not the last")
		}
		if tail.Offset < 0 || tail.Offset > int64(len(data)) {
			t.Fatalf("tail at %d of %d bytes", tail.Offset, len(data))
		}
		again, tail2, err := parseSegment(data[:tail.Offset], "journal/f.jnl", true)
		if err != nil || tail2 != nil && tail.Offset > 0 {
			t.Fatalf("cut at the tail (%d): err %v, tail %v", tail.Offset, err, tail2)
		}
		if len(again) != len(ents) {
			t.Fatalf("cut at the tail: %d entries, before %d", len(again), len(ents))
		}
		for i := range ents {
			if ents[i].id != again[i].id || ents[i].off != again[i].off || !bytes.Equal(ents[i].data, again[i].data) {
				t.Fatalf("entry %d differs after the cut", i)
			}
		}
	})
}
