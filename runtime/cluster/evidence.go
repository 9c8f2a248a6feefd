package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// preserve copies a session's messages into Config.EvidenceDir as
// ID-HASH.wal (or .done): their data concatenated, which is the log file
// a data directory would hold, so `baton replay` and wal.ReadFile read
// it. A report ID-HASH.txt beside it says why and lists each message's
// sequence, time, size and headers, which the copy cannot hold. Copies
// are named by content, so preserving the same damage twice writes
// nothing new.
func (c *Cluster) preserve(id string, why error, now time.Time) (string, error) {
	if err := wal.ValidID(id); err != nil {
		return "", err
	}
	if c.cfg.EvidenceDir == "" {
		return "", fmt.Errorf("preserving log %s: no evidence folder configured", id)
	}
	ctx, cancel := c.opContext()
	defer cancel()
	msgs, err := c.readMsgs(ctx, id, true)
	if err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("preserving log %s: %w", id, wal.ErrNotFound)
	}
	var data []byte
	var list strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&list, "message %d at %s: %d bytes from offset %d", m.Seq, m.Time.UTC().Format(time.RFC3339Nano), len(m.Data), len(data))
		keys := make([]string, 0, len(m.Header))
		for k := range m.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&list, "; %s: %s", k, strings.Join(m.Header.Values(k), ", "))
		}
		list.WriteByte('\n')
		data = append(data, m.Data...)
	}
	ext := ".wal"
	if msgs[len(msgs)-1].Header.Get(hdrEnd) != "" {
		ext = ".done"
	}
	sum := sha256.Sum256(data)
	name := id + "-" + hex.EncodeToString(sum[:6])
	dst := filepath.Join(c.cfg.EvidenceDir, name+ext)
	if err := os.MkdirAll(c.cfg.EvidenceDir, 0o700); err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	report := fmt.Sprintf("session: %s\nlog: subject %s of stream %s\nmessages: %d\nbytes: %d\nsha256: %x\nfound: %s\nwhy: %v\n\n%s",
		id, c.subject(id), c.streamOf(id), len(msgs), len(data), sum, now.UTC().Format(time.RFC3339), why, list.String())
	// The report first: a copy without its report would hide why it is
	// there, while a report without its copy is simply written again.
	for _, f := range []struct {
		name string
		data []byte
	}{{name + ".txt", []byte(report)}, {name + ext, data}} {
		if err := writeSynced(filepath.Join(c.cfg.EvidenceDir, f.name), f.data); err != nil {
			return "", fmt.Errorf("preserving log %s: %w", id, err)
		}
	}
	if err := syncDir(c.cfg.EvidenceDir); err != nil {
		return "", fmt.Errorf("preserving log %s: %w", id, err)
	}
	return dst, nil
}

// writeSynced writes a file whole under a temporary name, syncs it and
// renames it into place, replacing a partial one left by a crash.
func writeSynced(name string, data []byte) error {
	tmp := name + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
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
	return os.Rename(tmp, name)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
