package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// A crash after a session ended but before its log was finished (and so
// perhaps before its archive was written): recovery ends the session
// again, writes the archive its files make and only then finishes the
// log.
func TestRecoveryArchivesAnEndedSession(t *testing.T) {
	dir, err := filepath.Abs("../../scenarios/boardroom")
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "candidate.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := events.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		t.Fatal(err)
	}

	// The session's whole log, as a server would have written it, up to
	// the crash: every input, no end record.
	data := t.TempDir()
	d, err := wal.OpenDir(data, wal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Create(wal.Header{Engine: engine.Version, Pack: p.Name, PackRef: dir, PackHash: p.Hash,
		SessionID: "ended1", CandidateID: "c1", StartWall: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range res.Inputs {
		seq, err := l.Append(in, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.AppendStep(seq, wal.Digest(res.Steps[i].Effects, res.Steps[i].Err)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	d.Close()

	srv, err := New(Config{DataDir: data, Dev: true, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	rep, err := srv.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Finished) != 1 {
		t.Fatalf("recovery: %+v", rep)
	}
	root := filepath.Join(data, ArchiveDir, "ended1")
	t.Cleanup(func() { _ = archive.Unlock(root) })
	m, err := archive.Verify(root)
	if err != nil {
		t.Fatalf("no whole archive after recovery: %v", err)
	}
	_, content := archive.Layout(m, res.Files)
	for _, f := range m.Files {
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil || string(got) != content[f.Path] {
			t.Fatalf("%s: archived %q, the session holds %q (%v)", f.Path, got, content[f.Path], err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "ended1.done")); err != nil {
		t.Fatalf("the log was not finished: %v", err)
	}
}
