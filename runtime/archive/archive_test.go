package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
)

func sample() []engine.ContextFileState {
	return []engine.ContextFileState{
		{Path: "skeptic/persona.md", Class: "immutable", Writes: 1, Text: "You are Marcus.\n"},
		{Path: "shared/presenter-transcript.md", Class: "append_only", Writes: 2, UpdatedMS: 4000, Text: "- one\n- two"},
		{Path: "skeptic/candidate-question.md", Class: "overwrite", UpdatedMS: -1},
	}
}

// tempDir is a test folder whose archives are unlocked before it is
// removed, so the cleanup works without root.
func tempDir(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			_ = Unlock(filepath.Join(dir, e.Name()))
		}
	})
	return dir
}

func TestWriteVerify(t *testing.T) {
	dir := tempDir(t)
	m := Manifest{Session: "s1", Pack: "boardroom", PackHash: "abc", Engine: engine.Version, EndedMS: 5000, Reason: "done"}
	got, err := Write(dir, m, sample())
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(dir, "s1") {
		t.Fatalf("archive at %s", got)
	}
	man, err := Verify(got)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	paths := []string{}
	for _, f := range man.Files {
		paths = append(paths, f.Path)
	}
	if want := "templates/skeptic/persona.md shared/presenter-transcript.md skeptic/candidate-question.md"; strings.Join(paths, " ") != want {
		t.Fatalf("paths %v, want %s", paths, want)
	}
	data, err := os.ReadFile(filepath.Join(got, "shared", "presenter-transcript.md"))
	if err != nil || string(data) != "- one\n- two" {
		t.Fatalf("transcript %q, %v", data, err)
	}
	for _, p := range []string{"templates/skeptic/persona.md", "templates/skeptic", "templates", "shared", "."} {
		st, err := os.Stat(filepath.Join(got, p))
		if err != nil || st.Mode().Perm()&0o222 != 0 {
			t.Fatalf("%s is writable: %v %v", p, st.Mode(), err)
		}
	}
	// No temporary folder is left beside it.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("archive folder holds %d entries", len(ents))
	}
	// An archive that exists is kept as it is.
	other := sample()
	other[1].Text = "changed"
	if again, err := Write(dir, m, other); err != nil || again != got {
		t.Fatalf("second write: %s, %v", again, err)
	}
	if data, _ := os.ReadFile(filepath.Join(got, "shared", "presenter-transcript.md")); string(data) != "- one\n- two" {
		t.Fatalf("an existing archive was rewritten: %q", data)
	}
}

// Verify notices a changed file, a missing one and an extra one.
func TestVerifyFindsTampering(t *testing.T) {
	for name, tamper := range map[string]func(root string) error{
		"changed": func(root string) error {
			p := filepath.Join(root, "shared", "presenter-transcript.md")
			os.Chmod(p, 0o644)
			return os.WriteFile(p, []byte("- one\n- three"), 0o644)
		},
		"missing": func(root string) error { return os.Remove(filepath.Join(root, "skeptic", "candidate-question.md")) },
		"extra":   func(root string) error { return os.WriteFile(filepath.Join(root, "shared", "notes.md"), nil, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			root, err := Write(tempDir(t), Manifest{Session: "s"}, sample())
			if err != nil {
				t.Fatal(err)
			}
			if err := Unlock(root); err != nil {
				t.Fatal(err)
			}
			if err := tamper(root); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(root); err == nil {
				t.Fatal("tampering not noticed")
			}
		})
	}
}

func TestWriteRefusesBadIDs(t *testing.T) {
	for _, id := range []string{"", "../x", "a/b", ".hidden"} {
		if _, err := Write(tempDir(t), Manifest{Session: id}, sample()); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
}

// What an interrupted Write left (its temporary folder, read-only) is
// cleared by the next Write of that session.
func TestWriteClearsInterruptedWrite(t *testing.T) {
	dir := tempDir(t)
	stale := filepath.Join(dir, ".s1.tmp-123")
	if err := os.MkdirAll(filepath.Join(stale, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(stale, "shared"), 0o555); err != nil {
		t.Fatal(err)
	}
	// A young one may be another Write's, filling: it is left alone.
	young := filepath.Join(dir, ".s1.tmp-456")
	if err := os.Mkdir(young, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, Manifest{Session: "s1"}, sample()); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 || ents[0].Name() != ".s1.tmp-456" || ents[1].Name() != "s1" {
		t.Fatalf("folder holds %v", ents)
	}
}

// Writers racing on one id all end with the one whole archive.
func TestConcurrentWrites(t *testing.T) {
	dir := tempDir(t)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := Write(dir, Manifest{Session: "s1"}, sample())
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Verify(filepath.Join(dir, "s1")); err != nil {
		t.Fatal(err)
	}
}

// A folder where the archive should be that is not whole is reported,
// never passed off as the archive.
func TestWriteRefusesBrokenArchive(t *testing.T) {
	dir := tempDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, Manifest{Session: "s1"}, sample()); err == nil {
		t.Fatal("an empty folder passed for an archive")
	}
}
