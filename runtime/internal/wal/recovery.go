package wal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

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
	// Tail describes a torn or corrupt tail that was dropped, if any.
	Tail *TailError
}

// TailError describes the invalid bytes at the end of a log.
type TailError struct {
	Offset int64 // where the first invalid record starts
	Bytes  int64 // how many bytes were dropped
	Reason string
	// Torn is true when the file simply ends mid-record (an interrupted
	// write); false means a complete record failed its checks.
	Torn bool
}

func (e *TailError) Error() string {
	kind := "corrupt"
	if e.Torn {
		kind = "torn"
	}
	return fmt.Sprintf("%s tail at offset %d (%d bytes dropped): %s", kind, e.Offset, e.Bytes, e.Reason)
}

// ReadFile reads a log file (live or finished) without changing it.
func ReadFile(path string) (*Recovered, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// Read parses a log. Invalid records at the end are reported in Tail, not
// as an error; an error means there is no usable header.
func Read(r io.Reader) (*Recovered, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading log: %w", err)
	}
	return Parse(data)
}

// Parse parses a whole log held in memory.
func Parse(data []byte) (*Recovered, error) {
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		return nil, errors.New("not a baton log (bad magic)")
	}
	rec := &Recovered{}
	off := int64(len(Magic))
	total := int64(len(data))
	sawHeader := false
	fail := func(torn bool, format string, args ...any) {
		rec.Tail = &TailError{Offset: off, Bytes: total - off, Reason: fmt.Sprintf(format, args...), Torn: torn}
	}
	for off < total {
		if total-off < frame {
			fail(true, "%d bytes where a record frame needs %d", total-off, frame)
			break
		}
		n := int64(binary.LittleEndian.Uint32(data[off : off+4]))
		sum := binary.LittleEndian.Uint32(data[off+4 : off+8])
		if n == 0 || n > MaxRecord {
			fail(false, "record length %d out of range", n)
			break
		}
		if total-off-frame < n {
			fail(true, "record of %d bytes cut short at %d", n, total-off-frame)
			break
		}
		payload := data[off+frame : off+frame+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			fail(false, "checksum mismatch")
			break
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			fail(false, "record payload: %v", err)
			break
		}
		if err := rec.add(&r, sawHeader); err != nil {
			fail(false, "%v", err)
			break
		}
		sawHeader = true
		off += frame + n
		rec.Size = off
	}
	if !sawHeader {
		if rec.Tail != nil {
			return nil, fmt.Errorf("no valid header: %w", rec.Tail)
		}
		return nil, errors.New("no header record")
	}
	return rec, nil
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
