// Package archive exports an ended session's context files as a folder a
// reviewer can read: one markdown file per context file, named as the
// pack names it (shared/ID, ROLE/ID, and the pack's immutable texts under
// templates/), and a manifest with each file's SHA-256, so anyone can
// check that nothing was changed after the session ended.
package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// ManifestFile is the manifest's name in an archive.
const ManifestFile = "manifest.json"

// Manifest describes an archive.
type Manifest struct {
	Session  string `json:"session"`
	Pack     string `json:"pack"`
	PackHash string `json:"pack_hash"`
	Engine   string `json:"engine"`
	EndedMS  int64  `json:"ended_ms"`
	Reason   string `json:"reason"`
	Files    []File `json:"files"`
	// Inputs are the inputs the session had, one per input its pack
	// declares (InputsOf).
	Inputs []Input `json:"inputs,omitempty"`
}

// Input is one of a session's inputs as an archive records it: a value
// as JSON, or for a file input each file's name, size and SHA-256 (the
// files themselves stay in the session's log).
type Input struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Supplied is false for an input that took its default.
	Supplied bool            `json:"supplied"`
	Value    json.RawMessage `json:"value,omitempty"`
	Files    []InputFile     `json:"files,omitempty"`
}

// InputFile is one file of a file input.
type InputFile struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
}

// InputsOf records a session's bound inputs, in the order its pack
// declares them.
func InputsOf(in *rules.Inputs) []Input {
	if in == nil {
		return nil
	}
	p := in.Pack()
	sup := in.Supplied()
	out := make([]Input, 0, len(p.Inputs))
	for i := range p.Inputs {
		d := &p.Inputs[i]
		_, given := sup[d.ID]
		rec := Input{Name: d.ID, Type: d.Type.String(), Supplied: given}
		if d.Type == rules.InputFile {
			for _, f := range in.Files(d.ID) {
				sum := sha256.Sum256(f.Data)
				rec.Files = append(rec.Files, InputFile{Name: f.Name, MediaType: f.MediaType, Bytes: len(f.Data), SHA256: hex.EncodeToString(sum[:])})
			}
		} else if v, ok := in.Value(d.ID); ok {
			rec.Value, _ = json.Marshal(v)
		}
		out = append(out, rec)
	}
	return out
}

// File is one archived file.
type File struct {
	Path      string `json:"path"`
	Class     string `json:"class"`
	Writes    int    `json:"writes"`
	UpdatedMS int64  `json:"updated_ms"`
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
}

// Layout maps context files to their archive paths and hashes them: the
// manifest of an archive of files, without writing anything.
func Layout(m Manifest, files []engine.ContextFileState) (Manifest, map[string]string) {
	content := make(map[string]string, len(files))
	m.Files = make([]File, 0, len(files))
	for _, f := range files {
		p := f.Path
		if f.Class == "immutable" {
			p = path.Join("templates", p)
		}
		sum := sha256.Sum256([]byte(f.Text))
		m.Files = append(m.Files, File{Path: p, Class: f.Class, Writes: f.Writes, UpdatedMS: f.UpdatedMS, Bytes: len(f.Text), SHA256: hex.EncodeToString(sum[:])})
		content[p] = f.Text
	}
	return m, content
}

// staleAfter is how old a temporary folder must be before a Write takes
// it for an interrupted one's and removes it; a Write in progress
// finishes well within it.
const staleAfter = 10 * time.Minute

// Write exports files as dir/ID: written in a temporary folder, synced,
// made read-only (files 0444, folders 0555) and renamed into place, so an
// archive is whole or absent. An archive already there is kept if it is
// whole (a session that ends again after a restart has the same files):
// Write reports its path. What an earlier, interrupted Write of the same
// id left behind is removed first.
func Write(dir string, m Manifest, files []engine.ContextFileState) (string, error) {
	if err := wal.ValidID(m.Session); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	final := filepath.Join(dir, m.Session)
	if _, err := os.Stat(final); err == nil {
		if _, err := Verify(final); err != nil {
			return "", fmt.Errorf("archive: %s is there but not whole; move it aside to write it again: %w", final, err)
		}
		return final, nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("archive: %w", err)
		}
		// The new folder's name must outlive a power cut like its files.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return "", err
		}
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "."+m.Session+".tmp-*"))
	for _, s := range stale {
		// Another Write of this id may be filling a young one.
		if st, err := os.Stat(s); err == nil && time.Since(st.ModTime()) > staleAfter {
			_ = Unlock(s)
			_ = os.RemoveAll(s)
		}
	}
	tmp, err := os.MkdirTemp(dir, "."+m.Session+".tmp-")
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	defer func() { // a no-op once renamed
		_ = Unlock(tmp)
		_ = os.RemoveAll(tmp)
	}()
	man, content := Layout(m, files)
	for _, f := range man.Files {
		if err := writeFile(tmp, f.Path, []byte(content[f.Path])); err != nil {
			return "", err
		}
	}
	raw, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	if err := writeFile(tmp, ManifestFile, append(raw, '\n')); err != nil {
		return "", err
	}
	if err := lockDirs(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, verr := Verify(final); verr == nil {
			return final, nil // another writer finished first
		}
		return "", fmt.Errorf("archive: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return final, fmt.Errorf("archive: %s is written, but the folder holding it could not be synced: %w", final, err)
	}
	return final, nil
}

// writeFile writes one read-only file and syncs it.
func writeFile(root, rel string, data []byte) error {
	name := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive: writing %s: %w", rel, err)
	}
	return nil
}

// lockDirs makes every folder under root read-only and syncs it, deepest
// first, so the names of the files are as durable as their bytes.
func lockDirs(root string) error {
	dirs, err := folders(root)
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if err := syncDir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Unlock makes an archive's folders writable again, so it can be
// removed (os.RemoveAll cannot empty a read-only folder).
func Unlock(root string) error {
	dirs, err := folders(root)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	return nil
}

func folders(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p) // a read-only folder can still be listed
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return dirs, nil
}

func syncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("archive: syncing %s: %w", name, err)
	}
	return nil
}

// Verify reads an archive and checks every file against its manifest:
// present, of its size and hash, and nothing more.
func Verify(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("archive: %w", err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("archive: %s: %w", ManifestFile, err)
	}
	want := map[string]bool{ManifestFile: true}
	var problems []error
	for _, f := range m.Files {
		if !fs.ValidPath(f.Path) {
			problems = append(problems, fmt.Errorf("manifest path %q leaves the archive", f.Path))
			continue
		}
		want[f.Path] = true
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			problems = append(problems, err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 || len(data) != f.Bytes {
			problems = append(problems, fmt.Errorf("%s: sha256 %s, manifest says %s", f.Path, got, f.SHA256))
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !want[filepath.ToSlash(rel)] {
			problems = append(problems, fmt.Errorf("%s is not in the manifest", filepath.ToSlash(rel)))
		}
		return nil
	})
	if err != nil {
		problems = append(problems, err)
	}
	return m, errors.Join(problems...)
}
