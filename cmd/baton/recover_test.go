package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// baton recover finds a damaged log, exits 1 naming it and the command
// that retires it, retires it on request with a copy kept, and then
// finds the directory whole.
func TestRecoverRetiresDamage(t *testing.T) {
	path, data := recordedLog(t)
	id := strings.TrimSuffix(filepath.Base(path), ".done")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, id+".done"), flip(data, len(data)/2), 0o400); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "recover", dir)
	if code != 1 || !strings.Contains(out, "damaged "+id+": ") || !strings.Contains(errs, "baton recover --retire "+id+" "+dir) {
		t.Fatalf("recover of a damaged directory: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "recover", "-retire", id, dir)
	if code != 0 || !strings.Contains(out, "retired "+id+": its log is kept as damaged/") {
		t.Fatalf("recover -retire: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, id+".done")); !os.IsNotExist(err) {
		t.Fatalf("the retired log is still there: %v", err)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "damaged", id+"-*.done"))
	if len(kept) != 1 {
		t.Fatalf("copies kept: %v", kept)
	}
	if code, out, errs := runCLI(t, "recover", dir); code != 0 || !strings.Contains(out, "0 live sessions, 0 finished") {
		t.Fatalf("recover after retiring: exit %d\n%s\n%s", code, out, errs)
	}
	// A session that can recover is never retired.
	if err := os.WriteFile(filepath.Join(dir, id+".done"), data, 0o400); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "recover", "-retire", id, dir); code == 0 || !strings.Contains(errs, "not damaged") {
		t.Fatalf("recover -retire of a whole log: exit %d\n%s", code, errs)
	}
}
