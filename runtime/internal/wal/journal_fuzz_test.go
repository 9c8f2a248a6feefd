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
	v2 := appendBatch(appendBatch([]byte(journalMagicV2), e1), e2, e1)
	v3 := appendBatch(appendBatch(appendSegHeader(nil, 200), e1), e2)
	v3 = append(v3, make([]byte, 200-len(v3))...)
	v1 := append(append([]byte(journalMagicV1), e1...), e2...)
	f.Add(v2, true)
	f.Add(append(v2, make([]byte, 64)...), true)
	f.Add(v2[:len(v2)-5], true)
	f.Add(v1, false)
	f.Add(v1[:len(v1)-3], true)
	f.Add([]byte(journalMagicV2), true)
	f.Add(v3, true)
	f.Add(v3[:150], true)
	f.Add(v3[:len(v3)-1], false)
	f.Fuzz(func(t *testing.T, data []byte, last bool) {
		r, err := parseSegment(data, "journal/f.jnl", last, false)
		ents, tail := r.ents, r.tail
		for _, sp := range r.lost {
			if sp.err == nil || sp.err.Segment == "" {
				t.Fatalf("damage without its report: %+v", sp)
			}
			if sp.after < 0 || sp.after > len(ents) {
				t.Fatalf("damage after %d of %d entries", sp.after, len(ents))
			}
		}
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
		// What redo leaves: a sized segment's tail zeroed, an older
		// one's cut.
		left := data[:tail.Offset]
		if r.sized {
			left = append(bytes.Clone(left), make([]byte, len(data)-int(tail.Offset))...)
		}
		r2, err := parseSegment(left, "journal/f.jnl", true, false)
		again, tail2 := r2.ents, r2.tail
		if err != nil || tail2 != nil && tail.Offset > 0 || len(r2.lost) != len(r.lost) {
			t.Fatalf("cut at the tail (%d): err %v, tail %v, damage %d then %d", tail.Offset, err, tail2, len(r.lost), len(r2.lost))
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
