package wal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RedoReport is what OpenDir found in the journal and did with it.
type RedoReport struct {
	// Segments is how many journal segments were read.
	Segments int
	// Entries is how many journal entries were applied.
	Entries int
	// Sessions is how many sessions had entries.
	Sessions int
	// Repaired lists the sessions whose files the journal changed: bytes
	// a crash kept from their file, or bytes past the last durable batch
	// that were never acknowledged and were cut.
	Repaired []string
	// Finished lists sessions skipped because they had ended: Finish
	// synced their file before renaming it.
	Finished []string
	// Missing lists sessions with entries but no log file at all; each
	// is in Damaged as well.
	Missing []string
	// Damaged lists sessions left as they were because acknowledged
	// bytes of theirs are lost: an entry starts past the end of their
	// file, the journal's damage took entries of theirs, their file is
	// gone or shorter than the ledger says was acknowledged. Open and
	// Read of them return the *DamageError, at this and every later
	// start, until the session is retired (Dir.Retire).
	Damaged []RedoDamage
	// Journal lists the damage found in the journal itself: spans of
	// synced bytes that did not read back, segments cut or missing.
	Journal []*DamageError
	// LedgerLost says why neither copy of the ledger could be read,
	// when both are there: files cut since cannot be found out until
	// the next checkpoint writes it again.
	LedgerLost string
	// Evidence is where the journal was copied when a session was
	// damaged, relative to the data directory.
	Evidence []string
	// Tail is the torn tail cut from the last segment, if any; TailSegment
	// names that segment, relative to the data directory.
	Tail        *TailError
	TailSegment string
}

// RedoDamage is a session the journal could not repair.
type RedoDamage struct {
	ID  string
	Err *DamageError
}

// redoJournal applies the journal to the session files, makes them
// durable, and deletes the journal. It runs in OpenDir before anything
// reads a session file. Damage in the journal fails the sessions whose
// acknowledged bytes it may hold, with the journal kept as evidence; the
// other sessions are redone as usual. Only a journal that cannot be read
// at all (or damage in a segment of the first format) fails it.
func (d *Dir) redoJournal() (RedoReport, error) {
	var rep RedoReport
	segs, err := d.listSegments()
	if err != nil {
		return rep, err
	}
	lg := d.led
	if len(segs) == 0 {
		return rep, errors.Join(d.checkLedger(&rep, nil), d.removeJournalDir())
	}
	rep.Segments = len(segs)
	var all []jentry
	var spans []lostSpan
	missing := func(at int, reason string) {
		spans = append(spans, lostSpan{after: at, err: &DamageError{Segment: JournalDir, Offset: -1, Record: -1, NextValid: -1, Reason: reason}})
	}
	if lg.found != "" && segs[0].no > lg.checkpointed+1 {
		missing(0, fmt.Sprintf("segments %s to %s are missing: the ledger says %s was the last checkpointed",
			segName(lg.checkpointed+1), segName(segs[0].no-1), segName(lg.checkpointed)))
	}
	var tailSeg *segment
	var tailSized bool
	for i, s := range segs {
		if i > 0 && s.no != segs[i-1].no+1 {
			missing(len(all), fmt.Sprintf("segments %s to %s are missing between %s and %s",
				segName(segs[i-1].no+1), segName(s.no-1), segName(segs[i-1].no), segName(s.no)))
		}
		rel := filepath.Join(JournalDir, filepath.Base(s.path))
		data, err := readAll(d.fs, s.path)
		if err != nil {
			return rep, fmt.Errorf("reading %s: %w", rel, err)
		}
		r, err := parseSegment(data, rel, i == len(segs)-1, lg.found != "")
		if err != nil {
			return rep, fmt.Errorf("%s: %w", filepath.Join(d.path, rel), err)
		}
		if r.tail != nil {
			rep.Tail, rep.TailSegment, tailSeg, tailSized = r.tail, rel, s, r.sized
		}
		base := len(all)
		all = append(all, r.ents...)
		for _, sp := range r.lost {
			sp.after += base
			spans = append(spans, sp)
		}
	}
	lg.checkpointed = max(lg.checkpointed, segs[len(segs)-1].no)
	if tailSeg != nil {
		// Cleared before anything else: the journal is deleted below,
		// but a crash in between must not find the same garbage twice.
		// A segment that states its size keeps it: the tail is zeroed.
		if err := d.clearTail(tailSeg.path, rep.Tail.Offset, tailSized); err != nil {
			return rep, fmt.Errorf("clearing the torn tail of %s: %w", rep.TailSegment, err)
		}
	}
	byID := map[string][]jentry{}
	last := map[string]int{} // the index of each session's last entry
	for i, e := range all {
		byID[e.id] = append(byID[e.id], e)
		last[e.id] = i
	}
	damaged := d.journalDamage(all, byID, last, spans, &rep)
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	rep.Sessions = len(ids)
	lg.mu.Lock()
	for _, id := range ids {
		if why, ok := damaged[id]; ok {
			if _, err := d.fs.Stat(d.DonePath(id)); err == nil {
				// Finish synced it whole; what the journal lost of it
				// is in its file.
				rep.Finished = append(rep.Finished, id)
				continue
			}
			d.damagedLocked(&rep, id, &DamageError{Offset: -1, Record: -1, Inputs: -1, NextValid: -1, Reason: why})
			continue
		}
		if err := d.redoSession(id, byID[id], &rep); err != nil {
			lg.mu.Unlock()
			return rep, err
		}
	}
	lg.mu.Unlock()
	for id, why := range damaged {
		if _, ok := byID[id]; !ok {
			lg.mu.Lock()
			d.damagedLocked(&rep, id, &DamageError{Offset: -1, Record: -1, Inputs: -1, NextValid: -1, Reason: why})
			lg.mu.Unlock()
		}
	}
	slices.SortFunc(rep.Damaged, func(a, b RedoDamage) int { return strings.Compare(a.ID, b.ID) })
	if err := d.checkLedger(&rep, byID); err != nil {
		return rep, err
	}
	if len(rep.Damaged) > 0 || len(spans) > 0 {
		// The journal is the only trace of what the damaged sessions
		// lost; keep a copy before it goes.
		for _, s := range segs {
			rel, err := d.keepSegment(s)
			if err != nil {
				return rep, err
			}
			rep.Evidence = append(rep.Evidence, rel)
		}
	}
	// The ledger now holds what redo made of each file, and the damage
	// it found, before the journal that shows either is deleted.
	if err := d.writeLedger(); err != nil {
		return rep, err
	}
	// Oldest first, as the checkpointer does: what is left after a crash
	// here is then a suffix of the journal, which redoes to the same files.
	jdir := filepath.Join(d.path, JournalDir)
	for _, s := range segs {
		if err := d.fs.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("removing %s: %w", s.path, err)
		}
		if err := d.fs.SyncDir(jdir); err != nil {
			return rep, fmt.Errorf("syncing %s: %w", jdir, err)
		}
	}
	return rep, d.removeJournalDir()
}

// journalDamage decides which sessions the journal's damage costs, with
// why: a session whose entries do not follow on from each other lost
// those between; a session whose entry was read from a damaged span by
// its frame alone lost it; and where a span's bytes could not all be
// told apart, every live session that wrote nothing after it may have
// lost its last entries there.
func (d *Dir) journalDamage(all []jentry, byID map[string][]jentry, last map[string]int, spans []lostSpan, rep *RedoReport) map[string]string {
	damaged := map[string]string{}
	for id, ents := range byID {
		for k := 1; k < len(ents); k++ {
			prev, e := ents[k-1], ents[k]
			if end := prev.off + int64(len(prev.data)); e.off != end {
				damaged[id] = fmt.Sprintf("the journal's entries for it skip from file offset %d to %d (%s at %d, then %s at %d): acknowledged bytes between are lost",
					end, e.off, prev.seg, prev.at, e.seg, e.at)
				break
			}
		}
	}
	for i := range spans {
		sp := &spans[i]
		rep.Journal = append(rep.Journal, sp.err)
		for _, e := range sp.entries {
			if !d.fitsChain(e, byID[e.id]) {
				// The id or the offset read is itself damaged: whose
				// entry it was is not known.
				sp.explained = false
				continue
			}
			if _, ok := damaged[e.id]; !ok {
				damaged[e.id] = fmt.Sprintf("its entry at %s offset %d is damaged (%s): acknowledged bytes at file offset %d are lost", e.seg, e.at, sp.err.Reason, e.off)
			}
		}
	}
	var live []string
	for _, sp := range spans {
		if sp.explained {
			continue
		}
		if live == nil {
			live, _ = d.Live()
		}
		for _, id := range live {
			if i, ok := last[id]; ok && i >= sp.after {
				continue // wrote after the damage, and its entries join up
			}
			if _, ok := damaged[id]; !ok {
				damaged[id] = fmt.Sprintf("the journal lost bytes it cannot attribute (%s) and the session wrote nothing after them: its last acknowledged inputs may be among them", sp.err.Error())
			}
		}
	}
	return damaged
}

// fitsChain reports whether an entry read from damaged bytes takes its
// place among its session's intact entries: one of them ends where it
// starts, or one starts where it ends.
func (d *Dir) fitsChain(e jentry, ents []jentry) bool {
	if err := ValidID(e.id); err != nil {
		return false
	}
	end := e.off + int64(len(e.data))
	for _, o := range ents {
		if o.off+int64(len(o.data)) == e.off || o.off == end {
			return true
		}
	}
	if len(ents) == 0 {
		// Its session's only entry: it must name a file that is there
		// and reach no further than it.
		if fi, err := d.fs.Stat(d.LivePath(e.id)); err == nil && e.off <= fi.Size() {
			return true
		}
	}
	return false
}

// damagedLocked records id as damaged, in the report and in the ledger
// (lg.mu held), so that it fails at every start from now on.
func (d *Dir) damagedLocked(rep *RedoReport, id string, dmg *DamageError) {
	rep.Damaged = append(rep.Damaged, RedoDamage{ID: id, Err: dmg})
	d.markDamagedLocked(id, dmg.Reason)
}

// checkLedger holds every live session the ledger lists to it: a file
// gone, or shorter than what was acknowledged of it, is damage. Sessions
// the journal covered are checked by Open (redo may have repaired
// them); finished ones are left to the finished-log rule and dropped.
func (d *Dir) checkLedger(rep *RedoReport, redone map[string][]jentry) error {
	lg := d.led
	lg.mu.Lock()
	defer lg.mu.Unlock()
	ids := make([]string, 0, len(lg.entries))
	for id := range lg.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := lg.entries[id]
		if _, err := d.fs.Stat(d.DonePath(id)); err == nil {
			delete(lg.entries, id)
			continue
		}
		if e.damage != "" {
			continue
		}
		fi, err := d.fs.Stat(d.LivePath(id))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.damagedLocked(rep, id, &DamageError{Offset: -1, Record: -1, Inputs: -1, NextValid: -1,
				Reason: fmt.Sprintf("its log file is gone, but %d bytes of it were acknowledged (ledger)", e.size)})
		case err != nil:
			return fmt.Errorf("checking %s against the ledger: %w", id, err)
		case fi.Size() < e.size:
			if _, ok := redone[id]; ok {
				continue // redo wrote it; Open holds it to the ledger
			}
			d.damagedLocked(rep, id, &DamageError{Offset: fi.Size(), Record: -1, Inputs: -1, NextValid: -1,
				Reason: fmt.Sprintf("the log file is %d bytes, but %d were acknowledged (ledger): the file was cut and acknowledged inputs are lost", fi.Size(), e.size)})
		case fi.Size() > e.size:
			if _, ok := redone[id]; ok || e.size == 0 {
				continue
			}
			// The journal holds nothing of this session, so the ledger
			// has the last word: bytes past it reached the file (written
			// from memory before their batch was synced, by a checkpoint
			// or a Close) but were never acknowledged.
			if err := d.truncateFile(d.LivePath(id), e.size); err != nil {
				return fmt.Errorf("cutting %s back to what was acknowledged: %w", id, err)
			}
			rep.Repaired = append(rep.Repaired, id)
		}
	}
	return nil
}

// clearTail removes a torn tail from a segment: zeroed in one that states
// its size (its length is how a cut is told apart), cut in an older one.
func (d *Dir) clearTail(path string, off int64, sized bool) error {
	if !sized {
		return d.truncateFile(path, off)
	}
	data, err := readAll(d.fs, path)
	if err != nil {
		return err
	}
	f, err := d.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	// Rewritten from the start (File has no seek); the same bytes up to
	// the tail.
	clear(data[off:])
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeJournalDir removes the journal folder if it is empty, as Close
// does: the journal makes it again with its first write, and a directory
// not written before its next clean close should not keep an empty one.
func (d *Dir) removeJournalDir() error {
	// A segment prepared ahead of need holds nothing but zeros.
	if err := d.fs.Remove(filepath.Join(d.path, JournalDir, spareName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the prepared journal segment: %w", err)
	}
	if err := d.fs.Remove(filepath.Join(d.path, JournalDir)); err != nil {
		return nil // absent, or not empty: something else lives there
	}
	if err := d.fs.SyncDir(d.path); err != nil {
		return fmt.Errorf("syncing %s: %w", d.path, err)
	}
	return nil
}

// redoSession brings one session file to what its entries say: each
// entry's bytes at its offset, and nothing after the last (bytes there
// were written after the last durable batch and never acknowledged).
// The file is synced even when nothing changed: after a process crash its
// pages may still be only in the page cache, and the journal that covers
// them is about to be deleted.
func (d *Dir) redoSession(id string, ents []jentry, rep *RedoReport) error {
	if _, err := d.fs.Stat(d.DonePath(id)); err == nil {
		rep.Finished = append(rep.Finished, id)
		return nil
	}
	path := d.LivePath(id)
	old, err := readAll(d.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		rep.Missing = append(rep.Missing, id)
		if !slices.ContainsFunc(ents, func(e jentry) bool { return len(e.data) > 0 }) {
			// Only the empty entry of a Create that failed after it: the
			// start was never acknowledged, and Create removed its file.
			return nil
		}
		d.damagedLocked(rep, id, &DamageError{Offset: -1, Record: -1, Inputs: -1, NextValid: -1,
			Reason: fmt.Sprintf("its log file is gone, but the journal holds %d acknowledged entries for it", len(ents))})
		return nil
	}
	if err != nil {
		return fmt.Errorf("redo of %s: %w", id, err)
	}
	out := slices.Clone(old)
	for _, e := range ents {
		if e.off > int64(len(out)) {
			dmg := &DamageError{Offset: int64(len(out)), Record: -1, Inputs: -1, NextValid: -1,
				Reason: fmt.Sprintf("journal %s entry at offset %d puts %d bytes at file offset %d, but the file ends at %d: the bytes between are lost",
					e.seg, e.at, len(e.data), e.off, len(out))}
			d.damagedLocked(rep, id, dmg)
			return nil
		}
		out = append(out[:e.off], e.data...)
		rep.Entries++
	}
	// What redo leaves in the file was acknowledged: the journal's
	// batches were synced.
	d.ackedLocked(id, int64(len(out)))
	common := 0
	for common < len(old) && common < len(out) && old[common] == out[common] {
		common++
	}
	if common == len(old) && common == len(out) {
		return d.checkpointFile(id, true)
	}
	f, err := d.fs.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("redo of %s: %w", id, err)
	}
	if common < len(old) {
		err = f.Truncate(int64(common))
	}
	if err == nil {
		_, err = f.Write(out[common:])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("redo of %s: %w", id, err)
	}
	rep.Repaired = append(rep.Repaired, id)
	return nil
}

// gapError is the damage recorded against id's log, if any: found by a
// redo, now or at an earlier start.
func (d *Dir) gapError(id string) error {
	e, ok := d.led.get(id)
	if !ok || e.damage == "" {
		return nil
	}
	return checkAcked(id, e, nil)
}

func (d *Dir) truncateFile(path string, size int64) error {
	f, err := d.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// keepSegment copies a journal segment into the evidence folder.
func (d *Dir) keepSegment(s *segment) (string, error) {
	data, err := readAll(d.fs, s.path)
	if err != nil {
		return "", fmt.Errorf("keeping %s: %w", s.path, err)
	}
	dir := filepath.Join(d.path, EvidenceDir)
	if err := d.fs.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("keeping %s: %w", s.path, err)
	}
	if err := d.fs.SyncDir(d.path); err != nil { // the folder's own entry, as Preserve
		return "", fmt.Errorf("keeping %s: %w", s.path, err)
	}
	// Named by content, as Preserve names log copies: the same number
	// comes back in every journal.
	sum := sha256.Sum256(data)
	name := "journal-" + strings.TrimSuffix(filepath.Base(s.path), segExt) + "-" + hex.EncodeToString(sum[:6]) + segExt
	if _, err := d.fs.Stat(filepath.Join(dir, name)); err != nil {
		if err := d.writeSynced(filepath.Join(dir, name), data); err != nil {
			return "", fmt.Errorf("keeping %s: %w", s.path, err)
		}
		if err := d.fs.SyncDir(dir); err != nil {
			return "", fmt.Errorf("keeping %s: %w", s.path, err)
		}
	}
	return filepath.Join(EvidenceDir, name), nil
}
