package wal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/batonhq/baton/engine"
)

// FuzzWALRecord feeds arbitrary bytes to the log reader: it must never
// panic, must only report a valid prefix, and whatever it accepts must
// survive being written out again record by record.
func FuzzWALRecord(f *testing.F) {
	// A small seed (see FuzzWALPayload on why).
	var seed []byte
	seed = append(seed, Magic...)
	h := Header{Format: FormatVersion, SessionID: "f"}
	seed, _ = appendRecord(seed, &Record{Kind: KindHeader, Header: &h})
	for i, in := range sampleInputs()[:3] {
		in := in
		seed, _ = appendRecord(seed, &Record{Kind: KindInput, Seq: uint64(i + 1), Input: &in})
	}
	seed, _ = appendRecord(seed, &Record{Kind: KindStep, Seq: 3, Step: &Step{Effects: []EffectDigest{{T: 1, Type: engine.EffectNote, Hash: "ab"}}}})
	seed, _ = appendRecord(seed, &Record{Kind: KindEnd, End: &End{Reason: "x"}})
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte(Magic))
	f.Add([]byte("BTNWAL1\n\x05\x00\x00\x00\x00\x00\x00\x00{}{}{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return
		}
		rec, err := Parse(data)
		var dmg *DamageError
		if errors.As(err, &dmg) {
			if dmg.NextValid >= 0 {
				if _, _, bad := frameAt(data, dmg.NextValid); bad != "" {
					t.Fatalf("damage names a next valid record at %d that is not valid: %s", dmg.NextValid, bad)
				}
			}
			return
		}
		if err != nil {
			return
		}
		if rec.Tail != nil && nextValid(data, rec.Tail.Offset+1) >= 0 {
			t.Fatalf("tail at %d has a valid record after it", rec.Tail.Offset)
		}
		if rec.Size > int64(len(data)) || rec.Size < int64(len(Magic)) {
			t.Fatalf("valid size %d outside the input (%d bytes)", rec.Size, len(data))
		}
		if (rec.Tail == nil) != (rec.Size == int64(len(data))) {
			t.Fatalf("tail %v but size %d of %d", rec.Tail, rec.Size, len(data))
		}
		if len(rec.Steps) != len(rec.Inputs) {
			t.Fatalf("%d steps for %d inputs", len(rec.Steps), len(rec.Inputs))
		}
		// The valid prefix parses to the same thing on its own.
		again, err := Parse(data[:rec.Size])
		if err != nil || again.Tail != nil || len(again.Inputs) != len(rec.Inputs) {
			t.Fatalf("prefix reparse: err %v tail %v inputs %d/%d", err, again.Tail, len(again.Inputs), len(rec.Inputs))
		}
		// Re-encoding what was accepted gives a log that reads back whole.
		out := append([]byte(nil), Magic...)
		out, err = appendRecord(out, &Record{Kind: KindHeader, Header: &rec.Header})
		if err != nil {
			t.Fatal(err)
		}
		for i := range rec.Inputs {
			out, _ = appendRecord(out, &Record{Kind: KindInput, Seq: uint64(i + 1), Input: &rec.Inputs[i]})
		}
		back, err := Parse(out)
		if err != nil || back.Tail != nil || len(back.Inputs) != len(rec.Inputs) {
			t.Fatalf("re-encoded log: err %v tail %v", err, back.Tail)
		}
		if !bytes.HasPrefix(out, []byte(Magic)) {
			t.Fatal("lost magic")
		}
	})
}

// FuzzWALPayload fuzzes beneath the framing: each line of the input
// becomes one correctly framed record, so mutations reach the record
// decoder and the order checks instead of failing the checksum. Every
// frame is valid, so there is never a tail: a log is read whole, or it is
// damage (or, without a header, unborn).
func FuzzWALPayload(f *testing.F) {
	// Seeds stay small: Go's minimizer is quadratic in an input's length,
	// and every new input grown from a multi-kilobyte seed would cost up
	// to -fuzzminimizetime of minimizing, exploring nothing meanwhile.
	h := Header{Format: FormatVersion, SessionID: "f"}
	lines := [][]byte{mustJSON(f, &Record{Kind: KindHeader, Header: &h})}
	for i, in := range sampleInputs()[1:4] {
		in := in
		lines = append(lines, mustJSON(f, &Record{Kind: KindInput, Seq: uint64(i + 1), Input: &in}))
		lines = append(lines, mustJSON(f, &Record{Kind: KindStep, Seq: uint64(i + 1), Step: &Step{Effects: []EffectDigest{{T: in.T, Type: engine.EffectNote, Hash: "ab"}}}}))
	}
	lines = append(lines, mustJSON(f, &Record{Kind: KindEnd, End: &End{Reason: "x"}}))
	f.Add(bytes.Join(lines, []byte("\n")))
	f.Add(bytes.Join(lines[:4], []byte("\n")))
	f.Add([]byte(`{"k":"header"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return
		}
		log := []byte(Magic)
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 || len(line) > MaxRecord {
				continue
			}
			var hdr [frame]byte
			binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(line)))
			binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(line, castagnoli))
			log = append(append(log, hdr[:]...), line...)
		}
		rec, err := Parse(log)
		var dmg *DamageError
		switch {
		case errors.As(err, &dmg):
			if dmg.Offset < int64(len(Magic)) || dmg.Offset >= int64(len(log)) {
				t.Fatalf("damage at %d outside the log (%d bytes)", dmg.Offset, len(log))
			}
			return
		case errors.Is(err, ErrUnborn):
			return
		case err != nil:
			t.Fatalf("neither whole, damaged nor unborn: %v", err)
		}
		if rec.Tail != nil || rec.Size != int64(len(log)) {
			t.Fatalf("all frames valid, yet tail %v size %d of %d", rec.Tail, rec.Size, len(log))
		}
		// What was accepted encodes back to a log that reads the same.
		out := append([]byte(nil), Magic...)
		out, _ = appendRecord(out, &Record{Kind: KindHeader, Header: &rec.Header})
		for i := range rec.Inputs {
			out, _ = appendRecord(out, &Record{Kind: KindInput, Seq: uint64(i + 1), Input: &rec.Inputs[i]})
			if st := rec.Steps[i]; st != nil {
				out, _ = appendRecord(out, &Record{Kind: KindStep, Seq: uint64(i + 1), Step: st})
			}
		}
		if rec.End != nil {
			out, _ = appendRecord(out, &Record{Kind: KindEnd, End: rec.End})
		}
		back, err := Parse(out)
		if err != nil || back.Tail != nil || len(back.Inputs) != len(rec.Inputs) || (back.End == nil) != (rec.End == nil) {
			t.Fatalf("re-encoded log: err %v", err)
		}
		if rec.End != nil {
			if _, err := parse(out, true); err != nil {
				t.Fatalf("re-encoded finished log: %v", err)
			}
		}
	})
}

func mustJSON(f *testing.F, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
