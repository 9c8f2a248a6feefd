package service

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// awaitEffect polls the effects c has recorded (live or as missed) until
// one matches pred. Unlike waitFor it consumes no frame, so it also finds
// an effect that arrived before an ack the test was waiting for.
func awaitEffect(t *testing.T, c *wsClient, what string, pred func(*EffectFrame) bool) EffectFrame {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		for _, f := range c.effectList() {
			if pred(&f) {
				return f
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s (last seq %d)", what, waitLimit, c.lastSeq())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func contextData(t *testing.T, f *EffectFrame) engine.FileWritten {
	t.Helper()
	var w engine.FileWritten
	if err := json.Unmarshal(f.Effect.Data, &w); err != nil {
		t.Fatalf("context effect %d: data %s: %v", f.Seq, f.Effect.Data, err)
	}
	return w
}

// isWrite matches a context effect on path whose write count is at least n.
func isWrite(t *testing.T, path string, n int) func(*EffectFrame) bool {
	return func(f *EffectFrame) bool {
		return f.Effect.Type == engine.EffectContext && f.Effect.Text == path && contextData(t, f).Writes >= n
	}
}

// TestBoardroomRecoveryRestoresContextFiles runs the boardroom pack on the
// real binary, SIGKILLs it once the presenter has changed slide and
// spoken, restarts it on the same data directory and ends the session
// there. The archive the restarted process writes must hold exactly the
// context files an offline replay of the finished log rebuilds, and the
// context effects the client saw before the crash must be the replay's.
func TestBoardroomRecoveryRestoresContextFiles(t *testing.T) {
	bin := buildBaton(t)
	data := t.TempDir()
	pack, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "boardroom"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "board1"
	transcript := "shared/presenter-transcript.md"
	members := []string{"skeptic", "analyst", "contrarian"}
	dialAt := func(addr string) *wsClient {
		c, _, err := dialURL(t, "ws://"+addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var said []string
	say := func(c *wsClient, n int) {
		t.Helper()
		text := fmt.Sprintf("Answer %d: our pilot cities cut unplanned pump failures by a third.", n)
		fid := fmt.Sprintf("m%d", n)
		c.send(eventFrame(fid, map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": text}}))
		c.expectAck(fid)
		said = append(said, text)
	}

	p1 := startBaton(t, bin, data, "--llm-latency", "50ms")
	c1 := dialAt(p1.addr)
	c1.send(map[string]any{"id": "s", "type": "start", "pack": pack, "session_id": id, "candidate_id": "founder"})
	secret := c1.expectAck("s").SessionSecret
	// Setup: the dossier, then each member's focus brief and first question.
	awaitEffect(t, c1, "live", func(f *EffectFrame) bool { return f.Effect.Type == engine.EffectLive })
	awaitEffect(t, c1, "opening", func(f *EffectFrame) bool {
		return f.Effect.Type == engine.EffectAgentMessage && f.Effect.Kind == "opening"
	})
	awaitEffect(t, c1, "the dossier", isWrite(t, "shared/board-dossier.md", 1))
	for _, m := range members {
		awaitEffect(t, c1, m+"'s focus brief", isWrite(t, m+"/focus-brief.md", 1))
	}

	c1.send(eventFrame("slide", map[string]any{"event_type": "slide_changed", "data": map[string]any{"text": "Slide 1: The problem"}}))
	c1.expectAck("slide")
	awaitEffect(t, c1, "the session state on the slide change", isWrite(t, "moderator/session-state.md", 2))
	say(c1, 1)
	time.Sleep(300 * time.Millisecond)
	say(c1, 2)
	awaitEffect(t, c1, "the transcript's third append", isWrite(t, transcript, 3))
	// The slide change reruns every member's question buffer.
	for _, m := range members {
		awaitEffect(t, c1, m+"'s question for slide 1", func(f *EffectFrame) bool {
			return isWrite(t, m+"/candidate-question.md", 2)(f) && strings.HasPrefix(contextData(t, f).Text, "<!-- slide 1 -->")
		})
	}
	seen := c1.lastSeq()

	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.exited
	c1.waitClose()
	// What the first client saw is fixed now.
	before := c1.effectList()
	var beforeContext []EffectFrame
	for _, f := range before {
		if f.Effect.Type == engine.EffectContext || f.Effect.Type == engine.EffectContextViolation {
			beforeContext = append(beforeContext, f)
		}
	}

	p2 := startBaton(t, bin, data, "--llm-latency", "50ms")
	if !strings.HasPrefix(p2.lastLine, "ready: 1 sessions resumed") {
		t.Fatalf("restart: %q", p2.lastLine)
	}
	c2 := dialAt(p2.addr)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": id, "last_seq": seen, "session_secret": secret})
	if a := c2.expectAck("r"); a.State == nil || a.State.Ended {
		t.Fatalf("resume after crash: %+v", a.State)
	}
	say(c2, 3)
	awaitEffect(t, c2, "the transcript's append after the restart", isWrite(t, transcript, 4))
	c2.send(map[string]any{"id": "end", "type": "end", "reason": "presenter_left"})
	c2.expectAck("end")
	awaitEffect(t, c2, "session_end", func(f *EffectFrame) bool { return f.Effect.Type == engine.EffectSessionEnd })

	p2.stopGracefully(t)

	// The finished log, replayed offline on a fresh engine.
	rec, err := wal.ReadFile(filepath.Join(data, id+".done"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.End == nil || rec.Tail != nil || rec.End.Reason != "presenter_left" {
		t.Fatalf("finished log: end %+v tail %v", rec.End, rec.Tail)
	}
	srv, err := New(Config{DataDir: t.TempDir(), Dev: true, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	p, err := srv.packs.open(rec.Header.PackRef)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rederive(srv, rec, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wal.Replay(p, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatches) > 0 {
		t.Fatalf("offline replay differs from the log at %d steps, first: %s", len(res.Mismatches), res.Mismatches[0].String())
	}
	if !res.Session.Ended() {
		t.Fatal("the offline replay did not end")
	}
	files := res.Session.ContextFiles()
	byPath := map[string]engine.ContextFileState{}
	for _, f := range files {
		byPath[f.Path] = f
	}

	// Every context effect the first client saw before the crash is the
	// replay's, at the same seq.
	if len(beforeContext) == 0 {
		t.Fatal("the first client saw no context effect")
	}
	for _, f := range beforeContext {
		if f.Seq == 0 || f.Seq > uint64(len(want)) {
			t.Fatalf("context effect seq %d outside the replay's %d effects", f.Seq, len(want))
		}
		if g, w := mustJSON(f), mustJSON(want[f.Seq-1]); string(g) != string(w) {
			t.Fatalf("context effect %d seen before the crash differs from the replay:\n got %s\nwant %s", f.Seq, g, w)
		}
	}
	// And everything both clients saw, before and after, is the replay.
	merged := map[uint64]EffectFrame{}
	for _, c := range []*wsClient{c1, c2} {
		for _, f := range c.effectList() {
			if prev, ok := merged[f.Seq]; ok && string(mustJSON(prev)) != string(mustJSON(f)) {
				t.Fatalf("effect %d seen twice, differently", f.Seq)
			}
			merged[f.Seq] = f
		}
	}
	var got []EffectFrame
	for i := uint64(1); i <= uint64(len(want)); i++ {
		f, ok := merged[i]
		if !ok {
			t.Fatalf("clients never saw effect %d of %d", i, len(want))
		}
		got = append(got, f)
	}
	sameFrames(t, got, want)

	// The replay's files are what its context effects say, folded from the
	// pack's starting content: an account of each file that does not go
	// through the engine's own file state.
	folded := foldContext(t, p, want)
	for _, f := range files {
		w := folded[f.Path]
		if f.Text != w.Text || f.Writes != w.Writes || f.UpdatedMS != w.UpdatedMS {
			t.Fatalf("%s: the engine holds %d writes (at %d ms) of %q; its context effects make %d writes (at %d ms) of %q",
				f.Path, f.Writes, f.UpdatedMS, f.Text, w.Writes, w.UpdatedMS, w.Text)
		}
	}
	// What the session went through is in the files.
	tr := byPath[transcript].Text
	last := 0
	for _, s := range append([]string{"-- Slide 1: The problem --"}, said...) {
		i := strings.Index(tr[last:], s)
		if i < 0 {
			t.Fatalf("the transcript lacks %q after byte %d:\n%s", s, last, tr)
		}
		last += i + len(s)
	}
	if got := byPath[transcript].Writes; got != 1+len(said) {
		t.Fatalf("the transcript has %d writes, want %d", got, 1+len(said))
	}
	if !strings.Contains(byPath["moderator/session-state.md"].Text, "- slide: 1") {
		t.Fatalf("session state: %q", byPath["moderator/session-state.md"].Text)
	}
	for _, path := range []string{"shared/session-config.md", "shared/board-dossier.md"} {
		if f := byPath[path]; f.Writes != 1 || f.Text == "" {
			t.Fatalf("%s: %+v", path, f)
		}
	}
	for _, m := range members {
		if f := byPath[m+"/focus-brief.md"]; f.Writes != 1 || !strings.HasPrefix(f.Text, "# Focus brief") {
			t.Fatalf("%s's focus brief: %+v", m, f)
		}
	}

	// The archive the restarted process wrote: whole, hashed, and the
	// replay's files byte for byte.
	dir := filepath.Join(data, ArchiveDir, id)
	t.Cleanup(func() { _ = archive.Unlock(dir) }) // its folders are read-only
	man, err := archive.Verify(dir)
	if err != nil {
		t.Fatalf("archive.Verify: %v", err)
	}
	if man.Session != id || man.Pack != p.Name || man.PackHash != p.Hash || man.Engine != engine.Version ||
		man.Reason != rec.End.Reason || man.EndedMS != res.Session.Now() {
		t.Fatalf("manifest header %+v; want session %s pack %s %s engine %s reason %s ended %d",
			man, id, p.Name, p.Hash, engine.Version, rec.End.Reason, res.Session.Now())
	}
	wantMan, content := archive.Layout(archive.Manifest{}, files)
	if len(man.Files) != len(files) {
		t.Fatalf("manifest lists %d files, the session has %d", len(man.Files), len(files))
	}
	listed := map[string]archive.File{}
	for _, f := range man.Files {
		listed[f.Path] = f
	}
	for i, f := range files {
		ap := f.Path
		if f.Class == "immutable" {
			ap = "templates/" + f.Path
		}
		mf, ok := listed[ap]
		if !ok {
			t.Fatalf("manifest does not list %s (as %s)", f.Path, ap)
		}
		if !reflect.DeepEqual(mf, wantMan.Files[i]) {
			t.Fatalf("manifest entry %+v, want %+v", mf, wantMan.Files[i])
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ap)))
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != f.Text || content[ap] != f.Text {
			t.Fatalf("archived %s (%d bytes) differs from the replay's %s (%d bytes):\n got %q\nwant %q",
				ap, len(raw), f.Path, len(f.Text), raw, f.Text)
		}
		// An immutable file is the pack's own text, kept where the pack
		// keeps it.
		if f.Class == "immutable" {
			src, err := os.ReadFile(filepath.Join(pack, filepath.FromSlash(ap)))
			if err != nil {
				t.Fatal(err)
			}
			if string(src) != string(raw) {
				t.Fatalf("archived %s differs from the pack's", ap)
			}
		}
	}
	t.Logf("%d effects (%d seen before the kill, %d of them context), %d context files archived, transcript %d bytes",
		len(want), len(before), len(beforeContext), len(files), len(tr))
}

// foldContext rebuilds every context file from the pack's starting
// content and the session's context effects, checking each effect's
// size and write count as it goes.
func foldContext(t *testing.T, p *rules.Pack, frames []EffectFrame) map[string]engine.ContextFileState {
	t.Helper()
	out := map[string]engine.ContextFileState{}
	for _, s := range p.FileSlots() {
		f := engine.ContextFileState{Path: s.Path, Class: s.File.Class.String(), Text: s.Initial, UpdatedMS: -1}
		if s.Initial != "" {
			f.Writes, f.UpdatedMS = 1, 0
		}
		out[s.Path] = f
	}
	for i := range frames {
		e := &frames[i].Effect
		if e.Type != engine.EffectContext {
			continue
		}
		f, ok := out[e.Text]
		if !ok {
			t.Fatalf("context effect %d writes %q, not a file of the pack", frames[i].Seq, e.Text)
		}
		w := contextData(t, &frames[i])
		switch e.Kind {
		case "write":
			f.Text = w.Text
		case "append":
			if f.Text != "" && !strings.HasSuffix(f.Text, "\n") {
				f.Text += "\n"
			}
			f.Text += w.Text
		default:
			t.Fatalf("context effect %d: kind %q", frames[i].Seq, e.Kind)
		}
		f.Writes++
		f.UpdatedMS = e.T
		if len(f.Text) != w.Chars || f.Writes != w.Writes {
			t.Fatalf("context effect %d on %s: %d chars and %d writes, it says %d and %d", frames[i].Seq, e.Text, len(f.Text), f.Writes, w.Chars, w.Writes)
		}
		out[e.Text] = f
	}
	return out
}
