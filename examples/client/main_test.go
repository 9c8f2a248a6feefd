package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/scenarios"
)

// The example client plays the training pack's interviewer against a
// real server over loopback and runs the agent's client tools in its own
// workspace: the edits the agent asked for are in it at the end.
func TestClientRunsTrainingTools(t *testing.T) {
	srv, err := service.New(service.Config{DataDir: t.TempDir(), Dev: true, Packs: scenarios.FS,
		Model: service.SimModel(0, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	}()
	textOnly = true
	defer func() { textOnly = false }()
	var out bytes.Buffer
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
	// The script up to the fix, at 40x; the agent's lines are shown,
	// not spoken, so nothing waits for speech.
	if err := run(context.Background(), &out, url, "", "tr", "training", 40, 4, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"client_tool_call     open_file",
		"client_tool_call     write_file",
		"#   11  function greet() {",
		"module.exports = { users, listNames, greet };",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
