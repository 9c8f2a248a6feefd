package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// syncBuffer is a buffer a watch writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var runLine = regexp.MustCompile(`(?m)^# run (\d+) at [0-9:]+(.*)$`)

// waitRun waits for a run after run `after` and for the watch to settle,
// and returns what the last run printed and its number.
func waitRun(t *testing.T, out *syncBuffer, after int) (string, int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	seen, since := after, time.Now()
	for time.Now().Before(deadline) {
		marks := runLine.FindAllStringSubmatchIndex(out.String(), -1)
		if len(marks) != seen {
			seen, since = len(marks), time.Now()
		}
		// An editor's burst may, on a slow machine, make two runs: the
		// last one is the state the files were left in.
		if seen > after && time.Since(since) > 3*watchSettle {
			s := out.String()
			from := 0
			if seen > 1 {
				from = marks[seen-2][1]
			}
			return s[from:marks[seen-1][1]], seen
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no run after run %d within 10s; output:\n%s", after, out.String())
	return "", 0
}

func TestWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pack")
	if err := os.CopyFS(dir, os.DirFS("../../scenarios/dayone")); err != nil {
		t.Fatal(err)
	}
	packFile := filepath.Join(dir, "pack.yaml")
	orig, err := os.ReadFile(packFile)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to string) []byte {
		if !bytes.Contains(orig, []byte(from)) {
			t.Fatalf("pack.yaml has no %q", from)
		}
		return bytes.Replace(orig, []byte(from), []byte(to), 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- (&cli{stdout: &out, stderr: &errs}).run(ctx, []string{"dryrun", "-watch", dir})
	}()

	got, runs := waitRun(t, &out, 0)
	if !strings.Contains(got, "03:00.0  ba         anchor") {
		t.Fatalf("first run:\n%s", got)
	}
	// Where the constant is, for the error that names it.
	constLine := 1 + bytes.Count(orig[:bytes.Index(orig, []byte("ANCHOR_BA_INTERRUPT:"))], []byte("\n"))
	steps := []struct {
		name   string
		change func() error
		want   []string
		not    []string
	}{
		{"a constant changed", func() error {
			return os.WriteFile(packFile, edit(`ANCHOR_BA_INTERRUPT: "03:00"`, `ANCHOR_BA_INTERRUPT: "03:30"`), 0o644)
		}, []string{"03:30.0  ba         anchor", "# dayone ("}, []string{"03:00.0  ba         anchor", "failed"}},
		{"two problems", func() error {
			broken := bytes.Replace(edit(`ANCHOR_BA_INTERRUPT: "03:00"`, `ANCHOR_BA_INTERRUPT: "banana"`), []byte("\nscenario:"), []byte("\nbogus_section: 1\nscenario:"), 1)
			return os.WriteFile(packFile, broken, 0o644)
		}, []string{"2 problem(s)", fmt.Sprintf("pack.yaml:%d:3: constant ANCHOR_BA_INTERRUPT", constLine), `unknown section "bogus_section"`, "failed; watching"}, []string{"session_end"}},
		{"fixed by an editor's rename over the file", func() error {
			tmp := packFile + ".tmp"
			if err := os.WriteFile(tmp, orig, 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, packFile)
		}, []string{"03:00.0  ba         anchor", "10:00.0  -          session_end"}, []string{"problem"}},
		{"a new folder", func() error { return os.Mkdir(filepath.Join(dir, "notes"), 0o755) }, []string{"session_end"}, nil},
		{"a file in the new folder", func() error {
			return os.WriteFile(filepath.Join(dir, "notes", "todo.txt"), []byte("x"), 0o644)
		}, []string{"session_end"}, nil},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, runs = waitRun(t, &out, runs)
		for _, w := range st.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: run %d shows no %q:\n%s", st.name, runs, w, got)
			}
		}
		for _, w := range st.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: run %d shows %q:\n%s", st.name, runs, w, got)
			}
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("Ctrl-C: exit %d, want 0; stderr: %s", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not stop when its context ended")
	}
}

// TestWatchHTML rewrites the -o page on a change.
func TestWatchHTML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pack")
	if err := os.CopyFS(dir, os.DirFS("../../scenarios/dayone")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "run.html")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- (&cli{stdout: &out, stderr: &errs}).run(ctx, []string{"dryrun", "-watch", "-format", "html", "-o", page, dir})
	}()
	runs := 0
	for i, tc := range []struct{ from, to, want string }{
		{"", "", `data-t="180000" data-i=`},
		{`ANCHOR_BA_INTERRUPT: "03:00"`, `ANCHOR_BA_INTERRUPT: "04:00"`, `data-t="240000" data-i=`},
	} {
		if tc.from != "" {
			f := filepath.Join(dir, "pack.yaml")
			data, _ := os.ReadFile(f)
			if err := os.WriteFile(f, bytes.Replace(data, []byte(tc.from), []byte(tc.to), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var got string
		if got, runs = waitRun(t, &out, runs); !strings.Contains(got, "wrote "+page) {
			t.Errorf("run %d: %s", runs, got)
		}
		html, err := os.ReadFile(page)
		if err != nil || !regexp.MustCompile(`data-type="anchor" data-rule="A1_BA_INTERRUPT" data-run="0" `+tc.want).Match(html) {
			t.Errorf("run %d: the page has no A1_BA_INTERRUPT line with %s (%v)", i+1, tc.want, err)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errs.String())
	}
}

func TestWatchRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pack.yaml")
	os.WriteFile(file, []byte("name: x\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"a bundled pack", []string{"dayone"}, 1, "dayone is the pack built into baton, which has no folder to watch"},
		{"no such folder", []string{"./nowhere"}, 1, "pack folder ./nowhere"},
		{"a file", []string{file}, 1, "is not a folder"},
		{"recording", []string{"-record", t.TempDir(), "../../scenarios/dayone"}, 2, "--watch and --record"},
		{"a real model", []string{"-llm", "gemini", "../../scenarios/dayone"}, 2, "every save would call the vendor"},
		{"stdin", []string{"-events", "-", "../../scenarios/dayone"}, 2, "stdin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"dryrun", "-watch"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tc.code, tc.err)
			}
		})
	}
}

// TestWatchNoise: the writes around a save, and a run's own -o, are not
// changes to the pack.
func TestWatchNoise(t *testing.T) {
	root := filepath.Join(t.TempDir(), "pack")
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The same folder through a link: -o may name it either way.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out, file string
		op              fsnotify.Op
		ignore          bool
	}{
		{"the pack", "", "pack.yaml", fsnotify.Write, false},
		{"a script", "", "scripts/score.star", fsnotify.Create, false},
		{"a renamed-away file", "", "pack.yaml.tmp", fsnotify.Rename, false},
		{"a plain number", "", "4914", fsnotify.Create, false},
		{"metadata", "", "pack.yaml", fsnotify.Chmod, true},
		{"a swap file", "", ".pack.yaml.swp", fsnotify.Write, true},
		{"in a hidden folder", "", ".git/index", fsnotify.Write, true},
		{"a backup", "", "pack.yaml~", fsnotify.Create, true},
		{"an auto-save", "", "#pack.yaml#", fsnotify.Write, true},
		{"a probe", "", "4913", fsnotify.Create, true},
		{"the next probe", "", "5036", fsnotify.Remove, true},
		{"-o in the folder", filepath.Join(root, "out.html"), "out.html", fsnotify.Create, true},
		{"-o's temp file", filepath.Join(root, "out.html"), ".out.html.12345", fsnotify.Rename, true},
		{"-o through a link", filepath.Join(link, "out.html"), "out.html", fsnotify.Create, true},
		{"-o elsewhere", filepath.Join(t.TempDir(), "out.html"), "out.html", fsnotify.Create, false},
		{"-o's name in a subfolder", filepath.Join(root, "out.html"), "scripts/out.html", fsnotify.Write, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := newWatchNoise(root, tc.out)
			if err != nil {
				t.Fatal(err)
			}
			ev := fsnotify.Event{Name: filepath.Join(root, filepath.FromSlash(tc.file)), Op: tc.op}
			if got := n.ignore(ev); got != tc.ignore {
				t.Errorf("ignore(%s) = %v, want %v", ev, got, tc.ignore)
			}
		})
	}
}

// TestWatchOutInFolder: a page written into the pack's own folder is not
// a change to the pack, nor is an editor's swap file: one run, then the
// next only after a real edit.
func TestWatchOutInFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pack")
	if err := os.CopyFS(dir, os.DirFS("../../scenarios/dayone")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "run.html")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- (&cli{stdout: &out, stderr: &errs}).run(ctx, []string{"dryrun", "-watch", "-format", "html", "-o", page, dir})
	}()
	// A run that set off the next would never let the watch settle.
	if _, runs := waitRun(t, &out, 0); runs != 1 {
		t.Fatalf("%d runs before any edit:\n%s", runs, out.String())
	}
	for _, f := range []string{".pack.yaml.swp", "pack.yaml~", "4913"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := filepath.Join(dir, "pack.yaml")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// The swap files' events came first: had they started a run, this
	// edit's would be the third, or the second would show the old page.
	time.Sleep(3 * watchSettle)
	if err := os.WriteFile(f, bytes.Replace(data, []byte(`ANCHOR_BA_INTERRUPT: "03:00"`), []byte(`ANCHOR_BA_INTERRUPT: "04:00"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	got, runs := waitRun(t, &out, 1)
	if runs != 2 || !strings.Contains(got, "# run 2 at") {
		t.Fatalf("runs %d after one edit:\n%s", runs, out.String())
	}
	html, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(html, []byte(`data-rule="A1_BA_INTERRUPT" data-run="0" data-t="240000"`)) {
		t.Errorf("the page does not show the edit (%v)", err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errs.String())
	}
}
