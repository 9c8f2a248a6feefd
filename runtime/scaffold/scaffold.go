// Package scaffold writes a new rule pack for an author to start from
// (`baton init NAME`): two roles, an anchor, a window, a silence ladder, a
// guardrail rewrite script, a dry-run candidate and a timeline test, with
// comments that point to the parts of docs/packs.md that explain them.
//
// The pack is the folder template/, embedded in the binary, with its name
// written in; it is a pack in its own right, so it is loaded, tested and
// dry-run by this package's tests exactly as an author's copy would be.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

//go:embed template
var files embed.FS

// root is the embedded folder that holds the pack.
const root = "template"

// placeholder stands for the pack's name in the template's files. It is a
// name the loader accepts, so the template itself loads as a pack.
const placeholder = "__PACK_NAME__"

// MaxNameLen bounds a pack name: a dry run's session log is named
// dryrun-NAME-NANOSECONDS, and session log ids are at most 64 characters.
const MaxNameLen = 32

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// CheckName reports whether name may name a pack. The loader only needs
// it to be non-empty, but the name also ends up in session log ids
// (letters, digits, - and _ only), metric labels and usually a folder
// name, so it is held to lowercase letters, digits, - and _, starting
// with a letter: one spelling per pack, on any file system.
func CheckName(name string) error {
	if name == "" {
		return errors.New("the pack needs a name")
	}
	if len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("pack name %q: use lowercase letters, digits, - and _, starting with a letter, at most %d characters (for example %s)",
			clip(name), MaxNameLen, suggest(name))
	}
	return nil
}

// Write creates the folder dir (or uses it if it exists and is empty),
// writes a new pack named name into it and returns the files it wrote,
// relative to dir with forward slashes, sorted. It never overwrites: a
// dir that holds anything is refused, naming the first entry in it. If
// writing fails part way, what it wrote is removed again (dir too, if
// Write made it), so a retry starts from where this one did.
func Write(dir, name string) ([]string, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	out, err := render(name)
	if err != nil {
		return nil, err
	}
	made, err := prepare(dir)
	if err != nil {
		return nil, err
	}
	return put(dir, made, out)
}

// put writes out into the folder dir, which is empty (made says Write
// made it), and undoes what it wrote if it cannot finish.
func put(dir string, made bool, out []file) ([]string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, undo(dir, made, nil, err)
	}
	defer r.Close()
	var done []string // files and folders written, in order, for undo
	var list []string
	for _, f := range out {
		shown := filepath.Join(dir, filepath.FromSlash(f.path))
		if f.dir {
			if err := r.Mkdir(f.path, 0o755); err != nil {
				return nil, undo(dir, made, removeAll(r, done), fmt.Errorf("creating %s: %w", shown, err))
			}
		} else if err := writeNew(r, f.path, f.data); err != nil {
			// writeNew removes a file it created and could not finish.
			return nil, undo(dir, made, removeAll(r, done), fmt.Errorf("writing %s: %w", shown, err))
		}
		done = append(done, f.path)
		if !f.dir {
			list = append(list, f.path)
		}
	}
	slices.Sort(list)
	return list, nil
}

type file struct {
	path string // relative to the pack folder, with forward slashes
	dir  bool
	data []byte
}

// render is the pack named name, folders before the files in them.
func render(name string) ([]file, error) {
	var out []file
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		if d.IsDir() {
			out = append(out, file{path: rel, dir: true})
			return nil
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, file{path: rel, data: bytes.ReplaceAll(data, []byte(placeholder), []byte(name))})
		return nil
	})
	if err != nil {
		// The template is compiled in: a failure here is a broken build.
		return nil, fmt.Errorf("reading the pack template: %w", err)
	}
	return out, nil
}

// prepare makes dir, or checks that it is an empty folder; made says it
// was made here, so a failed write can take it away again.
func prepare(dir string) (made bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("creating %s: %w", dir, err)
		}
		return true, nil
	case err != nil:
		return false, err
	case !st.IsDir():
		return false, fmt.Errorf("%s is a file; a new pack needs a new or empty folder", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	if len(ents) > 0 {
		return false, fmt.Errorf("%s is not empty (it holds %s); a new pack is written only into a new or empty folder, so nothing there is overwritten",
			dir, filepath.Join(dir, ents[0].Name()))
	}
	return false, nil
}

// writeNew writes a file that must not exist yet: O_EXCL refuses one that
// appeared since the folder was found empty, rather than overwrite it.
func writeNew(r *os.Root, name string, data []byte) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Remove(name)
	}
	return err
}

// removeAll removes what Write wrote, newest first, so each folder is
// empty when its turn comes; it returns what it could not remove.
func removeAll(r *os.Root, done []string) []string {
	var left []string
	for _, p := range slices.Backward(done) {
		if err := r.Remove(p); err != nil {
			left = append(left, p)
		}
	}
	return left
}

// undo removes dir if Write made it and it is empty again, and adds to
// err what is left behind.
func undo(dir string, made bool, left []string, err error) error {
	if len(left) > 0 {
		return fmt.Errorf("%w (could not remove %s again)", err, strings.Join(left, ", "))
	}
	if made {
		_ = os.Remove(dir)
	}
	return err
}

// suggest is name made into one CheckName accepts, to show the shape.
func suggest(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9' && b.Len() > 0:
			b.WriteRune(c)
		case (c == '-' || c == '_') && b.Len() > 0:
			b.WriteRune(c)
		case (c == ' ' || c == '.') && b.Len() > 0:
			b.WriteByte('_')
		}
		if b.Len() >= MaxNameLen {
			break
		}
	}
	s := strings.TrimRight(b.String(), "_-")
	if s == "" {
		return "my_pack"
	}
	return s
}

// clip keeps an error message readable whatever name it quotes.
func clip(s string) string {
	const n = 40
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
