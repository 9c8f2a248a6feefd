package service

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/internal/logtest"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/internal/dirtest"
)

// A client may name a pack folder only where it really is under a
// --packs root: a symbolic link inside the root that leads out is
// refused, and so is a pack whose files lead out; no refusal tells the
// client where anything is on the server's disk.
func TestPackRootsHoldLinks(t *testing.T) {
	top := t.TempDir()
	const pack = "name: p\nduration: 1m\nroles: {qa: {persona: p}}\n"
	files := map[string]string{
		"elsewhere/secret.csv":     "root:x:0:0\n",
		"elsewhere/pack/pack.yaml": pack,
		"packs/ok/pack.yaml":       pack,
		"packs/leaky/pack.yaml":    pack + "scenario:\n  attachments: {passwd: files/passwd.csv}\n",
	}
	links := map[string]string{
		"packs/evil":                   filepath.Join(top, "elsewhere", "pack"), // a folder leading out
		"packs/up":                     "../elsewhere",                          // up/pack
		"packs/same":                   "ok",                                    // stays inside: allowed
		"packs/leaky/files/passwd.csv": "../../../elsewhere/secret.csv",
	}
	dirtest.Write(t, top, files, links)
	root := filepath.Join(top, "packs")

	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: t.TempDir(), Token: "tok", Clock: clk, Logger: testLogger(),
		EventRate: 1000, EventBurst: 1000, PackRoots: []string{root}, Model: SimModel(0, nil)}
	h := startHarness(t, cfg, clk, nil)
	start := func(id, ref string) ServerFrame {
		t.Helper()
		c := h.dial(http.Header{"Authorization": {"Bearer tok"}}) // a connection runs one session
		c.send(map[string]any{"id": id, "type": "start", "pack": ref, "session_id": "s_" + id, "candidate_id": "c"})
		return c.reply(id)
	}

	for _, tc := range []struct{ id, ref, want string }{
		{"ok", filepath.Join(root, "ok"), ""},
		{"same", filepath.Join(root, "same"), ""},
		{"evil", filepath.Join(root, "evil"), "packs/evil: not a bundled pack (bundled: boardroom, brain, dayone, hotseat, training), and pack folders outside --packs are not allowed"},
		{"up", filepath.Join(root, "up", "pack"), "packs/up/pack: not a bundled pack"},
		{"direct", filepath.Join(top, "elsewhere", "pack"), "…/pack: not a bundled pack"},
		{"leaky", filepath.Join(root, "leaky"), "pack packs/leaky has 1 problem(s):\npacks/leaky/pack.yaml:5:17: attachment passwd: files/passwd.csv is a symbolic link that leads outside the pack folder"},
		{"unknown", filepath.Join(root, "nope"), "packs/nope: no pack.yaml there"},
		{"file", filepath.Join(root, "ok", "pack.yaml"), "packs/ok/pack.yaml: no pack.yaml there"},
		{"relative", "./nope", "nope: not a bundled pack"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			f := start(tc.id, tc.ref)
			if tc.want == "" {
				if f.Type == FrameError {
					t.Fatalf("refused: %s %s", f.Code, f.Message)
				}
				return
			}
			if f.Type != FrameError || f.Code != CodeBadPack || !strings.Contains(f.Message, filepath.FromSlash(tc.want)) {
				t.Fatalf("got %s %s %q, want %s containing %q", f.Type, f.Code, f.Message, CodeBadPack, tc.want)
			}
			wd, _ := os.Getwd()
			for _, secret := range []string{top, wd} {
				if strings.Contains(f.Message, secret) {
					t.Fatalf("the error names the server's path %s: %q", secret, f.Message)
				}
			}
		})
	}
}

// Sessions that name the same folder at once share one load of it; a
// folder that fails is tried again, so fixing it needs no restart.
func TestPackLoadsOnce(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := newPackCache(nil, []string{root}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.open(dir); err == nil || !strings.Contains(err.Error(), "no pack.yaml there") {
		t.Fatalf("empty folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pack.yaml"), []byte("name: p\nduration: 1m\nroles: {qa: {persona: p}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 8)
	for range cap(got) {
		go func() {
			p, err := c.open(dir)
			if err != nil {
				got <- err
				return
			}
			got <- p
		}()
	}
	first := <-got
	for range cap(got) - 1 {
		if p := <-got; p != first {
			t.Fatalf("two loads of one folder: %v and %v", first, p)
		}
	}
	if _, ok := first.(error); ok {
		t.Fatal(first)
	}
}

// A pack that does not load is refused with file:line:col inside the
// pack, named from its --packs root or by its folder's name alone; the
// server's own log keeps where the folder is.
func TestBadPackNamesNoServerPath(t *testing.T) {
	top := t.TempDir()
	dirtest.Write(t, top, map[string]string{"packs/broken/pack.yaml": "name: p\nduration: [\n"}, nil)
	root := filepath.Join(top, "packs")
	ref := filepath.Join(root, "broken")
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"under a root", func(c *Config) { c.Dev, c.PackRoots = false, []string{root} }, "packs/broken/pack.yaml:2:11: YAML syntax"},
		{"any folder (--dev)", func(c *Config) {}, "…/broken/pack.yaml:2:11: YAML syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logtest.Buffer
			h := newHarness(t, tc.cfg, func(c *Config) {
				c.Token = "tok"
				c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			})
			c := h.dial(http.Header{"Authorization": {"Bearer tok"}})
			c.send(map[string]any{"id": "s", "type": "start", "pack": ref, "session_id": "bp", "candidate_id": "c"})
			f := c.expectError("s", CodeBadPack)
			if !strings.Contains(f.Message, filepath.FromSlash(tc.want)) {
				t.Errorf("message %q does not say %q", f.Message, tc.want)
			}
			wd, _ := os.Getwd()
			for _, secret := range []string{top, wd} {
				if strings.Contains(f.Message, secret) {
					t.Errorf("the error names the server's path %s: %q", secret, f.Message)
				}
			}
			refused := logLines(t, &logs, "pack refused")
			if len(refused) != 1 || refused[0]["pack"] != ref || refused[0]["session_id"] != "bp" {
				t.Errorf("server log: %v, want one line naming %s", refused, ref)
			}
		})
	}
}
