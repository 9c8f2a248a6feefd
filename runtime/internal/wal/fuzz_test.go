package wal

import (
	"bytes"
	"testing"

	"github.com/batonhq/baton/engine"
)

// FuzzWALRecord feeds arbitrary bytes to the log reader: it must never
// panic, must only report a valid prefix, and whatever it accepts must
// survive being written out again record by record.
func FuzzWALRecord(f *testing.F) {
	var seed []byte
	seed = append(seed, Magic...)
	h := testHeader("fuzz")
	seed, _ = appendRecord(seed, &Record{Kind: KindHeader, Header: &h})
	for i, in := range sampleInputs() {
		in := in
		seed, _ = appendRecord(seed, &Record{Kind: KindInput, Seq: uint64(i + 1), Input: &in})
	}
	seed, _ = appendRecord(seed, &Record{Kind: KindStep, Seq: 5, Step: &Step{Effects: []EffectDigest{{T: 1, Type: engine.EffectNote, Hash: "ab"}}}})
	seed, _ = appendRecord(seed, &Record{Kind: KindEnd, End: &End{Reason: "x"}})
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte(Magic))
	f.Add([]byte("BTNWAL1\n\x05\x00\x00\x00\x00\x00\x00\x00{}{}{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Parse(data)
		if err != nil {
			return
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
