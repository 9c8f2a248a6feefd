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
	// Missing lists sessions with entries but no log file at all.
	Missing []string
	// Damaged lists sessions left as they were because an entry starts
	// past the end of their file: the bytes between are lost. Open and
	// Read of them return the *DamageError until the process exits.
	Damaged []RedoDamage
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
// reads a session file. Damage in the journal (anything but a torn tail
// of its last segment) fails it and changes nothing.
func (d *Dir) redoJournal() (RedoReport, error) {
	var rep RedoReport
	segs, err := d.listSegments()
	if err != nil {
		return rep, err
	}
	if len(segs) == 0 {
		return rep, d.removeJournalDir()
	}
	rep.Segments = len(segs)
	byID := map[string][]jentry{}
	var tailSeg *segment
	for i, s := range segs {
		rel := filepath.Join(JournalDir, filepath.Base(s.path))
		data, err := readAll(d.fs, s.path)
		if err != nil {
			return rep, fmt.Errorf("reading %s: %w", rel, err)
		}
		ents, tail, err := parseSegment(data, rel, i == len(segs)-1)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", filepath.Join(d.path, rel), err)
		}
		if tail != nil {
			rep.Tail, rep.TailSegment, tailSeg = tail, rel, s
		}
		for _, e := range ents {
			byID[e.id] = append(byID[e.id], e)
		}
	}
	if tailSeg != nil {
		// Cut before anything else: the journal is deleted below, but a
		// crash in between must not find the same garbage twice.
		if err := d.truncateFile(tailSeg.path, rep.Tail.Offset); err != nil {
			return rep, fmt.Errorf("cutting the torn tail of %s: %w", rep.TailSegment, err)
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	rep.Sessions = len(ids)
	for _, id := range ids {
		if err := d.redoSession(id, byID[id], &rep); err != nil {
			return rep, err
		}
	}
	if len(rep.Damaged) > 0 {
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
			rep.Damaged = append(rep.Damaged, RedoDamage{ID: id, Err: dmg})
			d.mu.Lock()
			if d.gaps == nil {
				d.gaps = map[string]error{}
			}
			d.gaps[id] = fmt.Errorf("log %s: %w", id, dmg)
			d.mu.Unlock()
			return nil
		}
		out = append(out[:e.off], e.data...)
		rep.Entries++
	}
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

// gapError is the damage redo found in id's log, if any.
func (d *Dir) gapError(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gaps[id]
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
