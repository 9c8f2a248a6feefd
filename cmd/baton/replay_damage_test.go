package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log damaged anywhere but a torn tail is refused by baton replay,
// which names the offset and exits non-zero; a live log with a torn
// tail still replays.
func TestReplayRefusesDamage(t *testing.T) {
	_, data := recordedLog(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"flip in the middle", flip(data, len(data)/2), "damaged at offset"},
		{"finished log cut in half", data[:len(data)/2], "damaged at offset"},
		{"finished log cut in its last record", data[:len(data)-3], "damaged at offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.done")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runCLI(t, "replay", path)
			if code == 0 || !strings.Contains(errs, tc.want) {
				t.Fatalf("replay of a damaged log: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
	// The same cut in a live log is a torn tail: ignored, and said so.
	live := filepath.Join(t.TempDir(), "s.wal")
	if err := os.WriteFile(live, data[:len(data)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "replay", live)
	if code != 0 || !strings.Contains(out, "# ignored torn tail") || !strings.Contains(out, " 0 differ") {
		t.Fatalf("replay of a live log with a torn tail: exit %d\n%s\n%s", code, out, errs)
	}
}

func flip(b []byte, at int) []byte {
	b = append([]byte(nil), b...)
	b[at] ^= 0x08
	return b
}

// recordedLog records a DayOne dry run and returns its finished log's
// path and bytes.
func recordedLog(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "dryrun", "-seed", "3", "-record", dir, "dayone"); code != 0 {
		t.Fatalf("dryrun -record: exit %d: %s", code, errs)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.done"))
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	return logs[0], data
}
