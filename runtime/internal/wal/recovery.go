package wal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
)

// Recovered is everything valid read from a log.
type Recovered struct {
	Header Header
	// Inputs in order; Inputs[i] has sequence number i+1.
	Inputs []engine.Input
	// Steps[i] is input i+1's step record, or nil where it was lost.
	Steps []*Step
	// End is set for a finished session.
	End *End
	// Size is the offset just past the last valid record.
	Size int64
	// Tail describes a torn tail that was dropped, if any.
	Tail *TailError
}

// StartWall is the wall time of engine time 0: the header's, unless a
// step record moved it when the clock started after prepared lines.
func (r *Recovered) StartWall() time.Time {
	for _, st := range r.Steps {
		if st != nil && st.StartWall != nil {
			return *st.StartWall
		}
	}
	return r.Header.StartWall
}

// TailError describes a torn tail: invalid bytes at the end of a live log
// that no valid record follows, the trace of a write the power cut
// short. They were never synced, so nothing in them was acknowledged.
type TailError struct {
	Offset int64 // where the first invalid record starts
	Bytes  int64 // how many bytes were dropped
	Reason string
	// Torn is true when the file simply ends mid-record; false means the
	// last record is complete by its length but fails its checksum (the
	// file's size reached the disk before all of its data).
	Torn bool
}

func (e *TailError) Error() string {
	kind := "unfinished"
	if e.Torn {
		kind = "cut"
	}
	return fmt.Sprintf("torn tail (%s last record) at offset %d (%d bytes dropped): %s", kind, e.Offset, e.Bytes, e.Reason)
}

// DamageError is a log that is damaged somewhere a power cut cannot
// explain: a record that fails its checks with a valid record after it, a
// record whose checksum holds but whose content is wrong, or any invalid
// byte in a finished log. Nothing is truncated; the session cannot be
// trusted until someone looks.
type DamageError struct {
	// Offset is where the first bad record starts.
	Offset int64
	// Record is the bad record's ordinal: 0 is the header; -1 when
	// the journal's redo found the damage (a gap before an entry).
	Record int
	// Inputs is how many inputs were read intact before it.
	Inputs int
	Reason string
	// NextValid is where the first valid record after it starts, or -1.
	NextValid int64
	// Segment is set when the damage is in a journal segment (its path
	// relative to the data directory); Record then counts its entries
	// and Inputs means nothing.
	Segment string
}

func (e *DamageError) Error() string {
	if e.Segment != "" && e.Offset < 0 {
		return "journal damaged: " + e.Reason
	}
	if e.Segment != "" {
		s := fmt.Sprintf("journal %s damaged at offset %d (entry %d): %s", e.Segment, e.Offset, e.Record, e.Reason)
		if e.NextValid >= 0 {
			s += fmt.Sprintf("; a valid entry follows at offset %d, so this is not a torn tail", e.NextValid)
		}
		return s
	}
	var s string
	if e.Record < 0 && e.Offset < 0 {
		// Found by the journal's redo or the ledger, not in the file's
		// bytes.
		s = "log damaged: " + e.Reason
	} else if e.Record < 0 {
		// Found by the journal's redo, which does not read records.
		s = fmt.Sprintf("log damaged at offset %d: %s", e.Offset, e.Reason)
	} else {
		s = fmt.Sprintf("log damaged at offset %d (record %d, after input %d): %s", e.Offset, e.Record, e.Inputs, e.Reason)
	}
	if e.NextValid >= 0 {
		s += fmt.Sprintf("; a valid record follows at offset %d, so this is not a torn tail", e.NextValid)
	}
	return s
}

// ErrUnborn is a live log with no complete header and nothing valid after
// it: a crash inside Create, before it synced and returned. No input of
// it was ever acknowledged.
var ErrUnborn = errors.New("log was never completely created")

// ReadFile reads a log file without changing it. A file named *.done is
// held to the finished-log rule: any invalid byte in it is damage. A live
// log in a data directory is held to the directory's ledger: shorter
// than what was acknowledged of it, or recorded as damaged, is damage.
func ReadFile(path string) (*Recovered, error) {
	data, err := readAll(OS, path)
	if err != nil {
		return nil, err
	}
	finished := strings.HasSuffix(path, extDone)
	rec, err := parse(data, finished)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if id, live := strings.CutSuffix(filepath.Base(path), extLive); live && ValidID(id) == nil {
		lg, _, lerr := readLedger(OS, filepath.Dir(path))
		if lerr != nil {
			return nil, fmt.Errorf("%s: %w", path, lerr)
		}
		if e, ok := lg.entries[id]; ok {
			if err := checkAcked(id, e, rec); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return rec, nil
}

// Parse parses a live log held in memory. A torn tail is reported in
// Tail; damage is a *DamageError.
func Parse(data []byte) (*Recovered, error) { return parse(data, false) }

// parse reads records from the start. At the first invalid one it
// decides between a torn tail and damage (docs/protocol.md, "Durability"):
// only frame-level failures (a length out of range or past the end of
// the file, a checksum mismatch) with no verifying record anywhere after
// them are a torn tail, and only in a live log.
func parse(data []byte, finished bool) (*Recovered, error) {
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		// Create writes the magic and the header in one write, then syncs
		// the file; its directory entry can reach the disk first (another
		// log's directory sync), leaving part of the magic, or zeros where
		// the size got ahead of the data.
		if !finished && len(data) <= maxUnborn && strings.HasPrefix(Magic, strings.TrimRight(string(data), "\x00")) {
			return nil, fmt.Errorf("%w: %d bytes, no magic", ErrUnborn, len(data))
		}
		return nil, &DamageError{NextValid: nextValid(data, 0), Reason: "not a baton log (bad magic)"}
	}
	rec := &Recovered{Size: int64(len(Magic))}
	off := int64(len(Magic))
	total := int64(len(data))
	records := 0
	for off < total {
		n, payload, frameErr := frameAt(data, off)
		if records == 0 && frameErr != "" && total > int64(maxUnborn) && nextValid(data, off+1) < 0 {
			// Longer than any Create writes: not a torn creation.
			return nil, &DamageError{Offset: off, NextValid: -1, Reason: "header " + frameErr + ", in a file longer than a log's creation writes"}
		}
		var err error
		if frameErr == "" {
			var r Record
			if err = decodeRecord(payload, &r); err == nil {
				err = rec.add(&r, records > 0)
			}
			if err == nil {
				records++
				off += frame + n
				rec.Size = off
				continue
			}
		}
		next := nextValid(data, off+1)
		dmg := &DamageError{Offset: off, Record: records, Inputs: len(rec.Inputs), NextValid: next}
		switch {
		case err != nil:
			// The checksum holds, so the disk returned what was written.
			dmg.Reason = "record content: " + err.Error()
			return nil, dmg
		case next >= 0:
			dmg.Reason = frameErr
			return nil, dmg
		case next == unvouched:
			dmg.NextValid = -1
			dmg.Reason = fmt.Sprintf("%s, followed by more unverifiable bytes than a torn write leaves", frameErr)
			return nil, dmg
		case finished:
			dmg.Reason = frameErr + " in a finished log"
			return nil, dmg
		case records == 0:
			return nil, fmt.Errorf("%w: header %s", ErrUnborn, frameErr)
		}
		torn := total-off < frame || frame+n > total-off
		rec.Tail = &TailError{Offset: off, Bytes: total - off, Reason: frameErr, Torn: torn}
		break
	}
	if records == 0 {
		if finished {
			return nil, &DamageError{Offset: off, NextValid: -1, Reason: "finished log without a header"}
		}
		return nil, fmt.Errorf("%w: no header record", ErrUnborn)
	}
	if finished && rec.End == nil {
		return nil, &DamageError{Offset: off, Record: records, Inputs: len(rec.Inputs), NextValid: -1,
			Reason: "finished log without its end record (cut short?)"}
	}
	return rec, nil
}

// frameAt checks the frame at off and returns its payload length and
// bytes, or why it is invalid.
func frameAt(data []byte, off int64) (int64, []byte, string) {
	return frameWithin(data, off, MaxRecord)
}

// frameWithin is frameAt for frames of at most max payload bytes.
func frameWithin(data []byte, off, max int64) (int64, []byte, string) {
	total := int64(len(data))
	if total-off < frame {
		return 0, nil, fmt.Sprintf("%d bytes where a record frame needs %d", total-off, frame)
	}
	n := int64(binary.LittleEndian.Uint32(data[off : off+4]))
	if n == 0 || n > max {
		return n, nil, fmt.Sprintf("record length %d out of range", n)
	}
	if total-off-frame < n {
		return n, nil, fmt.Sprintf("record of %d bytes cut short at %d", n, total-off-frame)
	}
	payload := data[off+frame : off+frame+n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[off+4:off+8]) {
		return n, nil, "checksum mismatch"
	}
	return n, payload, ""
}

// maxScan bounds the bytes nextValid checksums. Real tails are one write
// long; past this the bytes cannot be vouched for as a tail, and the
// answer is the safe one: damage.
const maxScan = 64 << 20

// unvouched is nextValid's answer when its budget ran out first.
const unvouched = -2

// nextValid returns the offset of the first verifying record at or after
// from, -1 if there is none, or unvouched. Any offset is tried, because a
// damaged length field hides where the next record starts. A verifying
// record is one whose frame and checksum hold and whose payload decodes as
// a record: a chance match of a 32-bit checksum over arbitrary bytes is
// then far too unlikely to mistake a tail for damage.
func nextValid(data []byte, from int64) int64 {
	return nextVerifying(data, from, MaxRecord, func(payload []byte) bool {
		var r Record
		return decodeRecord(payload, &r) == nil
	})
}

// nextVerifying is nextValid for any frame whose payload is at most max
// bytes and which ok accepts; the journal shares the rule.
func nextVerifying(data []byte, from, max int64, ok func([]byte) bool) int64 {
	total := int64(len(data))
	budget := int64(maxScan)
	for p := from; p+frame < total; p++ {
		n := int64(binary.LittleEndian.Uint32(data[p : p+4]))
		if n == 0 || n > max || n > total-p-frame {
			continue
		}
		if budget -= n; budget < 0 {
			return unvouched
		}
		payload := data[p+frame : p+frame+n]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[p+4:p+8]) {
			continue
		}
		if ok(payload) {
			return p
		}
	}
	return -1
}

func decodeRecord(payload []byte, r *Record) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the record")
	}
	return nil
}

// add checks one record against what came before and keeps it.
func (rec *Recovered) add(r *Record, sawHeader bool) error {
	if !sawHeader {
		if r.Kind != KindHeader || r.Header == nil {
			return fmt.Errorf("first record is %q, not a header", r.Kind)
		}
		if r.Header.Format != FormatVersion {
			return fmt.Errorf("log format %d, this build reads %d", r.Header.Format, FormatVersion)
		}
		if err := ValidID(r.Header.SessionID); err != nil {
			return err
		}
		rec.Header = *r.Header
		return nil
	}
	if rec.End != nil {
		return fmt.Errorf("%s record after the end record", r.Kind)
	}
	switch r.Kind {
	case KindInput:
		if r.Input == nil {
			return errors.New("input record without an input")
		}
		if want := uint64(len(rec.Inputs)) + 1; r.Seq != want {
			return fmt.Errorf("input seq %d, want %d", r.Seq, want)
		}
		rec.Inputs = append(rec.Inputs, *r.Input)
		rec.Steps = append(rec.Steps, nil)
	case KindStep:
		if r.Step == nil {
			return errors.New("step record without a step")
		}
		if r.Seq == 0 || r.Seq != uint64(len(rec.Inputs)) || rec.Steps[r.Seq-1] != nil {
			return fmt.Errorf("step record for input %d after input %d", r.Seq, len(rec.Inputs))
		}
		rec.Steps[r.Seq-1] = r.Step
	case KindEnd:
		if r.End == nil {
			return errors.New("end record without an end")
		}
		rec.End = r.End
	case KindHeader:
		return errors.New("second header record")
	default:
		return fmt.Errorf("unknown record kind %q", r.Kind)
	}
	return nil
}
