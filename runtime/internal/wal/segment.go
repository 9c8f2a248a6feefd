package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The journal's segment formats and the rules that read them: which
// invalid bytes are a torn tail, which are damage, and what damage hides.

// JournalMagic starts every journal segment written now. Its header
// states the segment's size: every segment is made whole (zeros,
// synced) before anything is written in it, so a segment shorter than
// its header says was cut, and whatever the cut took had been
// acknowledged.
const JournalMagic = "BTNJNL3\n"

// journalMagicV2 starts segments of batches without a stated size; they
// are still read.
const journalMagicV2 = "BTNJNL2\n"

// journalMagicV1 starts segments written before batches were framed.
const journalMagicV1 = "BTNJNL1\n"

// batchHeader is the length of a batch's header: a frame and its payload.
const batchHeader = frame + 9

// segHeader is the length of a segment's header: the magic, then a frame
// around 'S' and the segment's size (uint64 LE).
const segHeader = len(JournalMagic) + frame + 9

// appendSegHeader lays out a segment's header for a segment of size bytes.
func appendSegHeader(buf []byte, size int64) []byte {
	buf = append(buf, JournalMagic...)
	payload := binary.LittleEndian.AppendUint64([]byte{'S'}, uint64(size))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(payload)))
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
	return append(buf, payload...)
}

// putBatchHeader fills in the header room at the start of buf, a batch.
func putBatchHeader(buf []byte) {
	body := buf[batchHeader:]
	binary.LittleEndian.PutUint32(buf[0:], 9)
	buf[frame] = 'B'
	binary.LittleEndian.PutUint32(buf[frame+1:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[frame+5:], crc32.Checksum(body, castagnoli))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(buf[frame:batchHeader], castagnoli))
}

// batchAt checks the batch at off: its header's frame and checksum, and
// its body's length and checksum. It returns the body and the batch's
// length, or why it is not a batch.
func batchAt(data []byte, off int64) ([]byte, int64, string) {
	n, hdr, why := frameWithin(data, off, 9)
	if why != "" {
		return nil, n, why
	}
	if n != 9 || hdr[0] != 'B' {
		return nil, n, "not a batch header"
	}
	size := int64(binary.LittleEndian.Uint32(hdr[1:]))
	if size == 0 || size > int64(len(data))-off-batchHeader {
		return nil, n, fmt.Sprintf("batch of %d bytes cut short at %d", size, int64(len(data))-off-batchHeader)
	}
	body := data[off+batchHeader : off+batchHeader+size]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(hdr[5:]) {
		return nil, n, "batch checksum mismatch"
	}
	return body, batchHeader + size, ""
}

// segRead is what reading one segment found.
type segRead struct {
	ents []jentry
	// tail is a torn last batch: only in the journal's last segment.
	tail *TailError
	// lost is damage: spans of synced bytes that do not read back.
	lost []lostSpan
	// sized says the segment states its size (JournalMagic); a torn
	// tail is then zeroed, never cut, so the size stays what it says.
	sized bool
}

// lostSpan is damage in a segment, and what it hides.
type lostSpan struct {
	err *DamageError
	// entries are those read inside the span from frames that still
	// tile it, whose checksums fail but whose session id and offset
	// read: entries lost, whose sessions are known.
	entries []jentry
	// explained says every byte of the span was accounted for: batch
	// headers, entries that verify, and entries in entries. When it is
	// false the span may have held entries of any session.
	explained bool
	// after is how many entries of the segment precede the span's end:
	// a session with an entry at or past it wrote after the damage.
	after int
}

// parseSegment reads a segment: its entries, a torn tail (only when last)
// and the damage in it, each with what it hides. Only the last batch of
// the last segment can be torn: batches are written one after another,
// each synced before the next, and a segment is retired only once its
// last batch is synced. sized says the directory writes only segments
// that state their size (it has a ledger): one without its magic was
// then cut or overwritten, never torn, since its header is synced
// before it is named.
func parseSegment(data []byte, name string, last, sized bool) (segRead, error) {
	switch {
	case bytes.HasPrefix(data, []byte(journalMagicV1)):
		ents, tail, err := parseSegmentV1(data, name, last)
		return segRead{ents: ents, tail: tail}, err
	case bytes.HasPrefix(data, []byte(journalMagicV2)):
		var r segRead
		r.parseBatches(data, int64(len(journalMagicV2)), name, last)
		return r, nil
	case bytes.HasPrefix(data, []byte(JournalMagic)):
		return parseSized(data, name, last), nil
	}
	var r segRead
	// The magic is written with the segment's first batch (second
	// format) or before the segment is named (now), so a segment without
	// it never held an acknowledged entry, unless a batch in it verifies.
	next := nextBatch(data, 0)
	if last && next < 0 && !sized {
		r.tail = &TailError{Offset: 0, Bytes: int64(len(data)), Reason: "segment without its magic", Torn: true}
		return r, nil
	}
	end := next
	if end < 0 {
		end = int64(len(data))
	}
	r.damage(data, 0, end, name, "not a journal segment (bad magic)", next)
	r.lost[len(r.lost)-1].explained = false
	if next >= 0 {
		r.parseBatches(data, next, name, last)
	}
	return r, nil
}

// parseSized reads a segment that states its size.
func parseSized(data []byte, name string, last bool) segRead {
	r := segRead{sized: true}
	n, hdr, why := frameWithin(data, int64(len(JournalMagic)), 9)
	if why == "" && (n != 9 || hdr[0] != 'S') {
		why = "not a segment header"
	}
	if why != "" {
		next := nextBatch(data, int64(len(JournalMagic)))
		end := next
		if end < 0 {
			end = int64(len(data))
		}
		r.damage(data, 0, end, name, "segment header: "+why, next)
		if next >= 0 {
			r.parseBatches(data, next, name, false)
		}
		return r
	}
	size := int64(binary.LittleEndian.Uint64(hdr[1:]))
	have := int64(len(data))
	if have > size {
		// Bytes nobody wrote through the journal: nothing acknowledged
		// is lost, but they are not the journal's.
		r.lost = append(r.lost, lostSpan{explained: true, err: &DamageError{Segment: name, Offset: size, Record: -1, NextValid: -1,
			Reason: fmt.Sprintf("segment of %d bytes where its header says %d: %d bytes were added after it was made", have, size, have-size)}})
		data = data[:size]
		have = size
	}
	// A cut segment is read as if last, so that a batch the cut split
	// shows as a tail, which is then counted as damage below.
	r.parseBatches(data, int64(segHeader), name, last || have < size)
	if have < size {
		// Made whole before anything was written in it, so only a cut
		// shortens it, and a cut takes synced, acknowledged batches.
		from := have
		if r.tail != nil {
			from = r.tail.Offset
			r.tail = nil
		}
		r.damage(data, from, have, name, fmt.Sprintf("segment cut: %d bytes of the %d its header states; the %d bytes cut had been synced and acknowledged", have, size, size-have), -1)
		r.lost[len(r.lost)-1].explained = false
	}
	return r
}

// nextBatch returns the offset of the first verifying batch at or after
// from, or -1.
func nextBatch(data []byte, from int64) int64 {
	total := int64(len(data))
	for p := from; p+batchHeader <= total; p++ {
		if binary.LittleEndian.Uint32(data[p:]) != 9 {
			continue
		}
		if _, _, why := batchAt(data, p); why == "" {
			return p
		}
	}
	return -1
}

// parseBatches reads batches from off. An invalid batch with a valid one
// after it is damage, and the valid ones are read on; an invalid entry
// inside a batch whose checksum holds is damage (the disk returned what
// was written). An invalid batch with only zeros after it is a torn tail
// in the last segment (a batch whose earlier sectors never reached the
// disk while later ones did) and damage elsewhere. A batch boundary
// followed by nothing but zeros is a prepared segment's unused end.
func (r *segRead) parseBatches(data []byte, off int64, name string, last bool) {
	zeros := int64(len(bytes.TrimRight(data, "\x00")))
	for off < zeros {
		body, n, why := batchAt(data, off)
		if why == "" {
			start := off + batchHeader
			for at := int64(0); at < int64(len(body)); {
				m, payload, frameErr := frameWithin(body, at, maxEntry)
				var e jentry
				var err error
				if frameErr == "" {
					e, err = decodeEntry(payload)
				}
				if frameErr != "" || err != nil {
					reason := "entry in a whole batch: " + frameErr
					if frameErr == "" {
						reason = "entry content: " + err.Error()
					}
					r.damage(data, start+at, off+n, name, reason, -1)
					break
				}
				e.seg, e.at = name, start+at
				r.ents = append(r.ents, e)
				at += frame + m
			}
			off += n
			continue
		}
		next := nextBatch(data, off+1)
		if next < 0 && last {
			r.tail = &TailError{Offset: off, Bytes: int64(len(data)) - off, Reason: why, Torn: true}
			return
		}
		if next < 0 {
			r.damage(data, off, zeros, name, why+" in a segment that is not the journal's last (it was synced whole before the next began)", -1)
			return
		}
		r.damage(data, off, next, name, why, next)
		off = next
	}
}

// damage records the span [from, to) as damaged and reads what it can
// out of it: entries that still verify are kept, and entries whose
// frames tile the span but fail their checksum are lost ones whose
// session is known, if their id and offset read.
func (r *segRead) damage(data []byte, from, to int64, name, reason string, next int64) {
	sp := lostSpan{explained: true, err: &DamageError{Segment: name, Offset: from, Record: len(r.ents), NextValid: next, Reason: reason}}
	isBatchHeader := func(p []byte) bool { return len(p) == 9 && p[0] == 'B' }
	verifies := func(p []byte) bool {
		if isBatchHeader(p) {
			return true
		}
		_, err := decodeEntry(p)
		return err == nil
	}
	for pos := from; pos < to; {
		if to-pos < frame {
			sp.explained = false
			break
		}
		n := int64(binary.LittleEndian.Uint32(data[pos:]))
		if n == 9 && pos+batchHeader <= to && data[pos+frame] == 'B' {
			pos += batchHeader
			continue
		}
		if n < 1+1+8 || n > maxEntry || pos+frame+n > to {
			// A length the damage changed: where the next entry starts
			// is lost with it, and so is whose bytes lie between.
			sp.explained = false
			nx := nextVerifying(data[:to], pos+1, maxEntry, verifies)
			if nx < 0 {
				break
			}
			pos = nx
			continue
		}
		payload := data[pos+frame : pos+frame+n]
		e, err := decodeEntry(payload)
		switch {
		case err != nil:
			sp.explained = false
		case crc32.Checksum(payload, castagnoli) == binary.LittleEndian.Uint32(data[pos+4:]):
			e.seg, e.at = name, pos
			r.ents = append(r.ents, e)
		default:
			e.seg, e.at = name, pos
			sp.entries = append(sp.entries, e)
		}
		pos += frame + n
	}
	sp.after = len(r.ents)
	r.lost = append(r.lost, sp)
}

// parseSegmentV1 reads a segment of the first format: entries, no
// batches. Damage in it fails the read: such segments predate the rules
// that tell what damage hides.
func parseSegmentV1(data []byte, name string, last bool) ([]jentry, *TailError, error) {
	verifies := func(p []byte) bool { _, err := decodeEntry(p); return err == nil }
	total := int64(len(data))
	dmg := func(off int64, entry int, next int64, reason string) error {
		return &DamageError{Segment: name, Offset: off, Record: entry, NextValid: next, Reason: reason}
	}
	var out []jentry
	off := int64(len(journalMagicV1))
	for off < total {
		n, payload, frameErr := frameWithin(data, off, maxEntry)
		if frameErr == "" {
			e, err := decodeEntry(payload)
			if err != nil {
				// The checksum holds, so the disk returned what was written.
				return nil, nil, dmg(off, len(out), nextVerifying(data, off+1, maxEntry, verifies), "entry content: "+err.Error())
			}
			e.seg, e.at = name, off
			out = append(out, e)
			off += frame + n
			continue
		}
		next := nextVerifying(data, off+1, maxEntry, verifies)
		switch {
		case next >= 0:
			return nil, nil, dmg(off, len(out), next, frameErr)
		case next == unvouched:
			return nil, nil, dmg(off, len(out), -1, frameErr+", followed by more unverifiable bytes than a torn write leaves")
		case !last:
			return nil, nil, dmg(off, len(out), -1, frameErr+" in a segment that is not the journal's last (it was synced whole before the next began)")
		}
		torn := total-off < frame || frame+n > total-off
		return out, &TailError{Offset: off, Bytes: total - off, Reason: frameErr, Torn: torn}, nil
	}
	return out, nil, nil
}
