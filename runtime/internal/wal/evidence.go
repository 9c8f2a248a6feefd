package wal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// EvidenceDir is the folder, inside the data directory, where copies of
// damaged logs are kept.
const EvidenceDir = "damaged"

// Preserve copies id's log (live or finished), byte for byte, into
// DIR/damaged/ as ID-HASH.wal (or .done) beside a report ID-HASH.txt
// holding why, and syncs both. The log itself is not touched: it stays
// where it is, failing its session, until someone decides. Copies are
// named by content, so preserving the same damage twice (a restart)
// writes nothing new. It returns the copy's path relative to the data
// directory.
func (d *Dir) Preserve(id string, why error, now time.Time) (string, error) {
	if err := ValidID(id); err != nil {
		return "", err
	}
	src, ext := d.DonePath(id), extDone
	data, err := readAll(d.fs, src)
	if errors.Is(err, fs.ErrNotExist) {
		src, ext = d.LivePath(id), extLive
		data, err = readAll(d.fs, src)
	}
	if err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	sum := sha256.Sum256(data)
	name := id + "-" + hex.EncodeToString(sum[:6])
	rel := path.Join(EvidenceDir, name+ext)
	dir := filepath.Join(d.path, EvidenceDir)
	if err := d.fs.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	if err := d.fs.SyncDir(d.path); err != nil { // the folder's own entry
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	if _, err := d.fs.Stat(filepath.Join(dir, name+ext)); err == nil {
		return rel, nil
	}
	report := fmt.Sprintf("session: %s\nlog: %s\nbytes: %d\nsha256: %x\nfound: %s\nwhy: %v\n",
		id, id+ext, len(data), sum, now.UTC().Format(time.RFC3339), why)
	// The report first: a copy without its report would hide why it is
	// there, while a report without its copy is simply written again.
	for _, f := range []struct {
		name string
		data []byte
	}{{name + ".txt", []byte(report)}, {name + ext, data}} {
		if err := d.writeSynced(filepath.Join(dir, f.name), f.data); err != nil {
			return "", fmt.Errorf("preserving log %s: %w", id, err)
		}
	}
	if err := d.fs.SyncDir(dir); err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	return rel, nil
}

// writeSynced writes a new file whole, or replaces a partial one left by
// an earlier attempt.
func (d *Dir) writeSynced(name string, data []byte) error {
	tmp := name + ".tmp"
	_ = d.fs.Remove(tmp)
	f, err := d.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o400)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return d.fs.Rename(tmp, name)
}
