package service

import (
	"context"
	"testing"
)

// Logs the server did not start itself, as a restart finds them: one
// written before sessions had secrets takes the server token alone, and
// one whose recovery failed still keeps its failure from anyone without
// its secret: they are told exactly what a server without the session
// says, and its own client gets session_failed.
func TestSecretOfRecoveredLogs(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "model"))
	c.expectAck("s")
	h.quiesce("model")
	rec, err := h.srv.dir.Read("model")
	if err != nil {
		t.Fatal(err)
	}
	create := func(id string, host hostOptions, packHash string) {
		t.Helper()
		hdr := rec.Header
		hdr.SessionID, hdr.Options.SessionID, hdr.Host = id, id, mustJSON(host)
		if packHash != "" {
			hdr.PackHash = packHash
		}
		wl, err := h.srv.logs().Create(hdr)
		if err != nil {
			t.Fatal(err)
		}
		if err := wl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	create("old", hostOptions{}, "")
	create("broken", hostOptions{SecretSHA256: hashSecret("mine")}, "0123456789ab")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h2 := startHarness(t, h.cfg, h.clk, nil)
	if h2.srv.lookup("old") == nil {
		t.Fatal("the log without a secret's hash was not recovered")
	}
	if _, failed := h2.srv.failedReason("broken"); !failed {
		t.Fatal("the log of a changed pack recovered")
	}
	empty := newHarness(t)

	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "old"})
	c2.expectAck("r")

	answer := func(h *harness, secret string) ServerFrame {
		t.Helper()
		c := h.dial(nil)
		f := map[string]any{"id": "r", "type": "resume", "session_id": "broken"}
		if secret != "" {
			f["session_secret"] = secret
		}
		c.send(f)
		return c.reply("r")
	}
	want := answer(empty, "")
	for _, secret := range []string{"", "yours"} {
		if got := answer(h2, secret); string(mustJSON(got)) != string(mustJSON(want)) {
			t.Errorf("resume with %q: %s, want %s", secret, mustJSON(got), mustJSON(want))
		}
	}
	if got := answer(h2, "mine"); got.Code != CodeSessionFailed {
		t.Errorf("resume with its secret: %s, want %s", mustJSON(got), CodeSessionFailed)
	}
}
