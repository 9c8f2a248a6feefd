package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

func sample() []engine.ContextFileState {
	return []engine.ContextFileState{
		{Path: "skeptic/persona.md", Class: "immutable", Writes: 1, Text: "You are Marcus.\n"},
		{Path: "shared/presenter-transcript.md", Class: "append_only", Writes: 2, UpdatedMS: 4000, Text: "- one\n- two"},
		{Path: "skeptic/candidate-question.md", Class: "overwrite", UpdatedMS: -1},
	}
}

func TestWriteVerify(t *testing.T) {
	dir := t.TempDir()
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
	st, err := os.Stat(filepath.Join(got, "templates", "skeptic", "persona.md"))
	if err != nil || st.Mode().Perm()&0o222 != 0 {
		t.Fatalf("archived file is writable: %v %v", st.Mode(), err)
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
			root, err := Write(t.TempDir(), Manifest{Session: "s"}, sample())
			if err != nil {
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
		if _, err := Write(t.TempDir(), Manifest{Session: id}, sample()); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
}
