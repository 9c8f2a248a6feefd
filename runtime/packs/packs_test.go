package packs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
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
		{ref: "nope", err: "nope: no bundled pack of that name (bundled: dayone, hotseat) and no folder nope with a pack.yaml"},
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
	r := &Resolver{Bundled: os.DirFS(bundled), Folder: func(abs string) error {
		asked = append(asked, abs)
		return errors.New("folders are not allowed here")
	}}
	if _, err := r.Open("hotseat"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(filepath.Join(bundled, "hotseat")); err == nil || err.Error() != "folders are not allowed here" {
		t.Fatalf("folder not refused: %v", err)
	}
	if !slices.Equal(asked, []string{filepath.Join(bundled, "hotseat")}) {
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
