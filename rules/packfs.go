package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// ErrOutsidePack is matched (errors.Is) by the error for a file that a
// symbolic link takes outside its pack folder.
var ErrOutsidePack = errors.New("leads outside the pack folder")

// maxLinks bounds how many symbolic links one name may pass through, as
// the operating system and os.Root do, so a loop of links ends.
const maxLinks = 8

// outsideError names the file asked for and the link that leaves the pack.
type outsideError struct {
	name, link string
	loop       bool
}

func (e *outsideError) Error() string {
	what := "is a symbolic link that leads outside the pack folder"
	if e.loop {
		what = fmt.Sprintf("passes more than %d symbolic links", maxLinks)
	}
	if e.link == e.name {
		return e.name + " " + what + "; copy what it points to into the pack instead of linking to it"
	}
	return fmt.Sprintf("%s: folder %s %s; copy what it points to into the pack instead of linking to it", e.name, e.link, what)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutsidePack && !e.loop }

// packFS serves the files of one pack folder. A pack is everything its
// folder holds and nothing else: a symbolic link inside it may point to
// another file or folder of the pack, which reaches nothing the pack does
// not hold, but a name that a link takes outside the folder, through an
// absolute target or "..", is refused before it is opened. Otherwise
// `baton check` would pass a pack whose attachment is /etc/passwd, its
// hash would follow a file nobody reviewed, and the server would send the
// model whatever it can read.
//
// The check reads links through fs.ReadLinkFS (os.DirFS, os.Root's FS,
// fstest.MapFS); a file system without links (embed) passes as it is.
// The check and the open are two steps, so a folder that changes in
// between could still be raced; runtime/packs therefore opens folders
// through os.Root, which refuses escapes as it opens, and this check
// gives the error its file name and place.
type packFS struct{ fsys fs.FS }

func (p packFS) Open(name string) (fs.File, error) {
	if err := p.inside(name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return p.fsys.Open(name)
}

func (p packFS) Stat(name string) (fs.FileInfo, error) {
	if err := p.inside(name); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fs.Stat(p.fsys, name)
}

func (p packFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := p.inside(name); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return fs.ReadDir(p.fsys, name)
}

// inside resolves name one element at a time, following links as the
// operating system would, and fails if a link is absolute or climbs above
// the pack folder. Names that do not exist pass: opening them reports it.
func (p packFS) inside(name string) error {
	if !fs.ValidPath(name) {
		return fs.ErrInvalid
	}
	if name == "." {
		return nil
	}
	todo := strings.Split(name, "/")
	var done []string // resolved elements, none of them a link
	links := 0
	via := name // the last link followed, which a ".." escape is blamed on
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return &outsideError{name: name, link: via}
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(path.Join(done...), elem)
		fi, err := fs.Lstat(p.fsys, cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// Missing, or not a link: opening it will tell.
			done = append(done, elem)
			continue
		}
		if links++; links > maxLinks {
			return &outsideError{name: name, link: cur, loop: true}
		}
		target, err := fs.ReadLink(p.fsys, cur)
		if err != nil {
			return err
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			return &outsideError{name: name, link: cur}
		}
		// The target is relative to the folder holding the link; a ".."
		// in it that climbs above the pack is caught above.
		via = cur
		todo = append(strings.Split(target, "/"), todo...)
	}
	return nil
}
