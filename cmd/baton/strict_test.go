package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model slower than the preparation lead at second 0 leaves the
// opener unprepared when the clock starts: a warning in the timeline,
// not an adapter error, so --strict passes the run.
func TestDryrunStrictSlowOpener(t *testing.T) {
	dir := copyPack(t, "dayone")
	path := filepath.Join(dir, "pack.yaml")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Slower than llm.prepare's 3s lead, well inside llm.timeout.
	slow := strings.Replace(string(src), "llm_latency: 700ms", "llm_latency: 3500ms", 1)
	if slow == string(src) {
		t.Fatal("dayone's pack sets no llm_latency: 700ms to slow down")
	}
	if err := os.WriteFile(path, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dryrun", "--strict", "-events", os.DevNull, dir)
	if code != 0 {
		t.Fatalf("--strict with a slow opener: exit %d, stderr %q\n%s", code, errs, out)
	}
	if !strings.Contains(out, "warning  preparing: not ready when the session's clock started") {
		t.Errorf("the unprepared opener is not a warning in the timeline:\n%s", out)
	}
	if strings.Contains(out, "adapter_error") {
		t.Errorf("the timeline reports an adapter error:\n%s", out)
	}
}
