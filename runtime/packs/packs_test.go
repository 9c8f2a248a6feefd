package packs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/runtime/internal/dirtest"
)

// TestPrecedence walks the three rules with a working directory that has
// folders shadowing a bundled name and a folder of its own.
func TestPrecedence(t *testing.T) {
	bundled, err := filepath.Abs("../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Bundled: os.DirFS(bundled)}
	want, err := r.Open("dayone")
	if err != nil {
		t.Fatal(err)
	}
	if want.Dir != "" {
		t.Fatalf("bundled pack has Dir %q", want.Dir)
	}

	wd := t.TempDir()
	for _, name := range []string{"dayone", "mine"} {
		dst := filepath.Join(wd, name)
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(bundled, "dayone"))); err != nil {
			t.Fatal(err)
		}
		// A local edit, so the folder and the bundled pack differ.
		f, err := os.OpenFile(filepath.Join(dst, "pack.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("# edited\n")
		f.Close()
	}
	t.Chdir(wd)

	for _, tc := range []struct {
		ref     string
		bundled bool   // want the bundled dayone
		dir     string // else want this folder
		err     string // else want this error
	}{
		{ref: "dayone", bundled: true},
		{ref: "./dayone", dir: "./dayone"},
		{ref: "dayone/", dir: "dayone/"},
		{ref: filepath.Join(wd, "dayone"), dir: filepath.Join(wd, "dayone")},
		{ref: "mine", dir: "mine"},
		{ref: "/typo/dayone", err: "/typo/dayone: no pack.yaml there (a path names a folder; for the bundled pack write dayone)"},
		{ref: "typo/dayone", err: "typo/dayone: no pack.yaml there"},
		{ref: "typo/mine", err: "typo/mine: no pack.yaml there"},
		{ref: "mine/pack.yaml", err: "mine/pack.yaml: no pack.yaml there"},
		{ref: "nope", err: "nope: no bundled pack of that name (bundled: boardroom, brain, dayone, hotseat, training) and no folder nope with a pack.yaml"},
		{ref: "", err: "no pack named"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			p, err := r.Open(tc.ref)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Open(%q) = %v, %v; want error %q", tc.ref, p, err, tc.err)
				}
				if p != nil {
					t.Fatalf("Open(%q) returned a pack (%s) with its error", tc.ref, p.Name)
				}
			case err != nil:
				t.Fatal(err)
			case tc.bundled:
				if p.Hash != want.Hash || p.Dir != "" {
					t.Fatalf("Open(%q): dir %q hash %.12s, want the bundled pack", tc.ref, p.Dir, p.Hash)
				}
			default:
				if p.Hash == want.Hash || p.Dir != tc.dir {
					t.Fatalf("Open(%q): dir %q hash %.12s, want folder %s", tc.ref, p.Dir, p.Hash, tc.dir)
				}
			}
		})
	}
}

// Folder guards folders only: bundled packs are always available.
func TestFolderGuard(t *testing.T) {
	bundled, err := filepath.Abs("../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	r := &Resolver{Bundled: os.DirFS(bundled), Folder: func(real string) (*os.Root, error) {
		asked = append(asked, real)
		return nil, errors.New("folders are not allowed here")
	}}
	if _, err := r.Open("hotseat"); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(bundled, "hotseat")
	if _, err := r.Open(folder); err == nil || err.Error() != folder+": folders are not allowed here" {
		t.Fatalf("folder not refused: %v", err)
	}
	real, err := filepath.EvalSymlinks(folder)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{real}) {
		t.Fatalf("guard asked about %v", asked)
	}
}

func TestNamesFromTheFS(t *testing.T) {
	r := &Resolver{Bundled: fstest.MapFS{
		"b/pack.yaml":     {Data: []byte("name: b\n")},
		"a/pack.yaml":     {Data: []byte("name: a\n")},
		"notes/readme.md": {Data: []byte("not a pack\n")},
		"top.yaml":        {Data: []byte("x: 1\n")},
	}}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Names() = %v", got)
	}
	if r.IsBundled("./a") || !r.IsBundled("a") || r.IsBundled("notes") {
		t.Fatal("IsBundled disagrees with Names")
	}
	if (&Resolver{}).Names() != nil {
		t.Fatal("a resolver without bundled packs lists some")
	}
}

// linkedPacks makes top/elsewhere/secret.csv and, under top/packs, a pack
// "leaky" whose attachment links to it, a pack "ok", and "evil", a link
// to the folder top/elsewhere/pack.
func linkedPacks(t *testing.T) (top string) {
	t.Helper()
	top = t.TempDir()
	const pack = "name: p\nduration: 1m\nroles: {qa: {persona: p}}\n"
	files := map[string]string{
		"elsewhere/secret.csv":     "root:x:0:0\n",
		"elsewhere/pack/pack.yaml": pack,
		"packs/ok/pack.yaml":       pack,
		"packs/leaky/pack.yaml":    pack + "scenario:\n  attachments: {passwd: files/passwd.csv}\n",
	}
	links := map[string]string{
		"packs/leaky/files/passwd.csv": "../../../elsewhere/secret.csv",
		"packs/evil":                   filepath.Join(top, "elsewhere", "pack"),
	}
	dirtest.Write(t, top, files, links)
	return top
}

// The guard is asked about where a folder really is, so a link inside an
// allowed place that leads out of it is judged by where it leads.
func TestFolderGuardSeesThroughLinks(t *testing.T) {
	top := linkedPacks(t)
	allowed, err := filepath.EvalSymlinks(filepath.Join(top, "packs"))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	r := &Resolver{Folder: func(real string) (*os.Root, error) {
		asked = append(asked, real)
		if real != allowed && !strings.HasPrefix(real, allowed+string(filepath.Separator)) {
			return nil, errors.New("outside")
		}
		return os.OpenRoot(real)
	}}
	if _, err := r.Open(filepath.Join(top, "packs", "ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(filepath.Join(top, "packs", "evil")); err == nil || !strings.HasSuffix(err.Error(), ": outside") {
		t.Fatalf("a link out of the allowed folder was opened: %v", err)
	}
	elsewhere, _ := filepath.EvalSymlinks(filepath.Join(top, "elsewhere", "pack"))
	if len(asked) != 2 || asked[1] != elsewhere {
		t.Fatalf("guard asked about %v, want the link's target %s last", asked, elsewhere)
	}
}

// Files of a folder pack are read inside it: an attachment that links out
// is refused, named as the pack wrote it, on the command line's resolver
// too (baton check opens packs with it).
func TestFolderFilesStayInside(t *testing.T) {
	top := linkedPacks(t)
	r := &Resolver{}
	dir := filepath.Join(top, "packs", "leaky")
	_, err := r.Open(dir)
	want := filepath.Join(dir, "pack.yaml") + ":5:17: attachment passwd: files/passwd.csv is a symbolic link that leads outside the pack folder"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	// A folder named through a link is the user's own choice on the
	// command line: it opens where the link leads.
	p, err := r.Open(filepath.Join(top, "packs", "evil"))
	if err != nil || p.Name != "p" {
		t.Fatalf("linked folder: %v", err)
	}
}

// Show names folder references in errors, so a server can keep its own
// paths out of what it tells clients.
func TestShowNamesFolders(t *testing.T) {
	top := linkedPacks(t)
	r := &Resolver{Show: func(ref string) string { return "<" + filepath.Base(ref) + ">" }}
	for _, tc := range []struct{ ref, want string }{
		{filepath.Join(top, "packs", "none"), "<none>: no pack.yaml there"},
		{filepath.Join(top, "packs", "leaky"), "pack <leaky> has 1 problem(s):\n" + filepath.Join("<leaky>", "pack.yaml") + ":5:17: attachment passwd"},
	} {
		_, err := r.Open(tc.ref)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), top) {
			t.Errorf("Open(%s) = %v, want %q and no %s", tc.ref, err, tc.want, top)
		}
	}
}
