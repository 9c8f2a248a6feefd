package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The ledger is the durable record of how much of each live session's
// file was acknowledged. A torn tail is only what was never
// acknowledged; without a record of what was, a file cut short (by a
// disk, a file system or a person) reads as a torn tail and its
// acknowledged inputs vanish without a word. The journal covers a
// session's bytes until its segment is checkpointed; from then on the
// session file is the only copy, so the checkpoint writes the ledger
// before it deletes the segment. A live log shorter than its ledger
// length is damage.
//
// The ledger is written whole, alternately to LedgerA and LedgerB, each
// write synced before the segment it accounts for is deleted. A reader
// takes the valid copy with the higher generation: a write torn by a
// power cut, or a copy damaged later, leaves the other, older copy,
// whose lengths are never longer than the truth (they only grow).
const (
	LedgerA = "ledger.0"
	LedgerB = "ledger.1"
)

// ledgerMagic starts both copies of the ledger.
const ledgerMagic = "BTNLDG1\n"

// ledgerEntry is one live session in the ledger.
type ledgerEntry struct {
	// size is the length of the session's file that was acknowledged:
	// the end of its last entry in a checkpointed, synced segment (or of
	// the last entry redo applied).
	size int64
	// damage, once set, fails the session at every start until someone
	// retires it (baton recover): the evidence it is about may be gone
	// from the journal by then.
	damage string
}

// ledger is the in-memory copy. mu serializes writes and guards the map.
type ledger struct {
	mu  sync.Mutex
	gen uint64
	// checkpointed is the number of the last journal segment whose
	// bytes are in the session files: segments are numbered on across
	// starts, so the journal's oldest segment is at most the next one,
	// and a missing segment is found out.
	checkpointed uint64
	entries      map[string]ledgerEntry
	// found says where the copy read at start came from, for reports.
	found string
}

func newLedger() *ledger { return &ledger{entries: map[string]ledgerEntry{}} }

// get returns id's entry.
func (lg *ledger) get(id string) (ledgerEntry, bool) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	e, ok := lg.entries[id]
	return e, ok
}

// encode lays the ledger out: magic, then one frame holding the
// generation and the entries sorted by id.
func (lg *ledger) encode(gen uint64) []byte {
	ids := make([]string, 0, len(lg.entries))
	for id := range lg.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	body := binary.LittleEndian.AppendUint64(nil, gen)
	body = binary.LittleEndian.AppendUint64(body, lg.checkpointed)
	body = binary.LittleEndian.AppendUint32(body, uint32(len(ids)))
	for _, id := range ids {
		e := lg.entries[id]
		body = append(body, byte(len(id)))
		body = append(body, id...)
		body = binary.LittleEndian.AppendUint64(body, uint64(e.size))
		dmg := e.damage
		if len(dmg) > 1<<15 {
			dmg = dmg[:1<<15]
		}
		body = binary.LittleEndian.AppendUint16(body, uint16(len(dmg)))
		body = append(body, dmg...)
	}
	out := make([]byte, 0, len(ledgerMagic)+frame+len(body))
	out = append(out, ledgerMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

// decodeLedger reads one copy; an error means it is not a whole ledger.
func decodeLedger(data []byte) (gen, checkpointed uint64, entries map[string]ledgerEntry, err error) {
	if len(data) < len(ledgerMagic)+frame || string(data[:len(ledgerMagic)]) != ledgerMagic {
		return 0, 0, nil, errors.New("no ledger magic")
	}
	n := int64(binary.LittleEndian.Uint32(data[len(ledgerMagic):]))
	body := data[len(ledgerMagic)+frame:]
	if int64(len(body)) != n {
		return 0, 0, nil, fmt.Errorf("ledger body of %d bytes, its frame says %d", len(body), n)
	}
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(ledgerMagic)+4:]) {
		return 0, 0, nil, errors.New("ledger checksum mismatch")
	}
	short := errors.New("ledger entry cut short")
	if len(body) < 20 {
		return 0, 0, nil, short
	}
	gen = binary.LittleEndian.Uint64(body)
	checkpointed = binary.LittleEndian.Uint64(body[8:])
	count := binary.LittleEndian.Uint32(body[16:])
	p := body[20:]
	entries = make(map[string]ledgerEntry, min(count, 1<<16))
	for range count {
		if len(p) < 1 {
			return 0, 0, nil, short
		}
		k := int(p[0])
		if len(p) < 1+k+8+2 {
			return 0, 0, nil, short
		}
		id := string(p[1 : 1+k])
		if err := ValidID(id); err != nil {
			return 0, 0, nil, fmt.Errorf("ledger entry: %w", err)
		}
		size := int64(binary.LittleEndian.Uint64(p[1+k:]))
		m := int(binary.LittleEndian.Uint16(p[1+k+8:]))
		p = p[1+k+8+2:]
		if len(p) < m || size < 0 {
			return 0, 0, nil, short
		}
		entries[id] = ledgerEntry{size: size, damage: string(p[:m])}
		p = p[m:]
	}
	if len(p) != 0 {
		return 0, 0, nil, fmt.Errorf("%d bytes after the ledger's last entry", len(p))
	}
	return gen, checkpointed, entries, nil
}

// readLedger reads the newer valid copy of dir's ledger. Neither copy
// there is a fresh directory (or one written before the ledger existed):
// nothing to check against. A copy there but none valid is reported in
// bad; the directory then runs as if it had none.
func readLedger(fsys FS, dir string) (lg *ledger, bad string, err error) {
	lg = newLedger()
	var whys []string
	for _, name := range []string{LedgerA, LedgerB} {
		data, err := readAll(fsys, filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		gen, checkpointed, entries, derr := decodeLedger(data)
		if derr != nil {
			whys = append(whys, name+": "+derr.Error())
			continue
		}
		if lg.found == "" || gen > lg.gen {
			lg.gen, lg.checkpointed, lg.entries, lg.found = gen, checkpointed, entries, name
		}
	}
	if lg.found == "" && len(whys) > 0 {
		bad = strings.Join(whys, "; ")
	}
	return lg, bad, nil
}

// write makes the ledger durable: the next generation over the older
// copy, so that the newer one stays whole whatever happens to this write.
// The caller holds lg.mu.
func (d *Dir) writeLedgerLocked() error {
	lg := d.led
	gen := lg.gen + 1
	name := LedgerA
	if gen%2 == 1 {
		name = LedgerB
	}
	path := filepath.Join(d.path, name)
	_, statErr := d.fs.Stat(path)
	f, err := d.openRetrying(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(lg.encode(gen))
	}
	if err == nil && !d.opt.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && statErr != nil {
		// A new copy's own directory entry.
		err = d.fs.SyncDir(d.path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	lg.gen = gen
	return nil
}

// writeLedger writes the ledger under its lock.
func (d *Dir) writeLedger() error {
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	return d.writeLedgerLocked()
}

// acked records that id's file holds size acknowledged bytes, durably.
// A finished log is left out: Finish synced it whole, and it is held to
// the finished-log rule instead. The caller holds lg.mu.
func (d *Dir) ackedLocked(id string, size int64) {
	lg := d.led
	e, ok := lg.entries[id]
	if ok && e.size >= size {
		return
	}
	if !ok {
		if _, err := d.fs.Stat(d.DonePath(id)); err == nil {
			return
		}
	}
	e.size = size
	lg.entries[id] = e
}

// forget drops a finished session from the ledger (written with the next
// checkpoint).
func (d *Dir) forget(id string) {
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	delete(d.led.entries, id)
}

// markDamaged records err, a *DamageError found in id's log, in the
// ledger and writes it: from now on id fails at every start, even once
// the file is changed or the evidence gone. A failed write is logged;
// the damage is found again at the next start.
func (d *Dir) markDamaged(id string, err error) {
	var dmg *DamageError
	if !errors.As(err, &dmg) {
		return
	}
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	if e := d.led.entries[id]; e.damage != "" {
		return
	}
	d.markDamagedLocked(id, strings.TrimPrefix(dmg.Error(), "log damaged "))
	if werr := d.writeLedgerLocked(); werr != nil {
		d.opt.logger().Error("recording a damaged log in the ledger", "session_id", id, "err", werr)
	}
}

// markDamagedLocked fails id at this and every later start once the
// ledger is next written. The caller holds lg.mu.
func (d *Dir) markDamagedLocked(id, why string) {
	e := d.led.entries[id]
	if e.damage == "" {
		e.damage = why
	}
	d.led.entries[id] = e
}

// ledgerDamage is the damage the ledger records for id, or a log shorter
// than its acknowledged length, as a *DamageError; nil if neither.
func (d *Dir) ledgerDamage(id string, rec *Recovered) error {
	e, ok := d.led.get(id)
	if !ok {
		return nil
	}
	return checkAcked(id, e, rec)
}

// checkAcked holds a live log read as rec to its ledger entry.
func checkAcked(id string, e ledgerEntry, rec *Recovered) error {
	if e.damage != "" {
		return fmt.Errorf("log %s: %w", id, &DamageError{Offset: -1, Record: -1, Inputs: -1, NextValid: -1, Reason: e.damage})
	}
	if rec == nil || rec.Size >= e.size {
		return nil
	}
	at := rec.Size
	reason := fmt.Sprintf("the log's valid records end at byte %d (after input %d), but %d bytes were acknowledged (ledger): the file was cut and acknowledged inputs are lost",
		rec.Size, len(rec.Inputs), e.size)
	if rec.Tail != nil {
		reason += "; what follows is not a torn tail"
	}
	return fmt.Errorf("log %s: %w", id, &DamageError{Offset: at, Record: -1, Inputs: len(rec.Inputs), NextValid: -1, Reason: reason})
}

// Retire takes a damaged log (live or finished) out of the way once someone has
// decided: a copy is kept in damaged/ (Preserve), the file is removed and
// the ledger forgets it, so the id is free and no start fails it again.
// It refuses a log that is not damaged: a session that can recover is
// never thrown away by this call.
func (d *Dir) Retire(id string, now time.Time) (string, error) {
	if err := ValidID(id); err != nil {
		return "", err
	}
	_, rerr := d.Read(id)
	var dmg *DamageError
	if !errors.As(rerr, &dmg) {
		if rerr == nil {
			return "", fmt.Errorf("session %s is not damaged; only a damaged log is retired", id)
		}
		return "", rerr
	}
	evidence := ""
	for _, path := range []string{d.DonePath(id), d.LivePath(id)} {
		if _, err := d.fs.Stat(path); err != nil {
			continue
		}
		var err error
		if evidence, err = d.Preserve(id, rerr, now); err != nil {
			return "", err
		}
		if err := d.fs.Remove(path); err != nil {
			return "", fmt.Errorf("retiring %s: %w", id, err)
		}
		if err := d.fs.SyncDir(d.path); err != nil {
			return "", fmt.Errorf("retiring %s: %w", id, err)
		}
		break
	}
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	delete(d.led.entries, id)
	if err := d.writeLedgerLocked(); err != nil {
		return evidence, fmt.Errorf("retiring %s: %w", id, err)
	}
	return evidence, nil
}

// Damaged lists the sessions the ledger records as damaged, with why:
// found by a redo or an Open, at this start or an earlier one.
func (d *Dir) Damaged() map[string]string {
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	out := map[string]string{}
	for id, e := range d.led.entries {
		if e.damage != "" {
			out[id] = "log damaged: " + e.damage
		}
	}
	return out
}
