package cluster

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/logtest"
)

// TestOpenKeepsAskingForTheStream: JetStream that cannot place the
// session stream (here three replicas on one server; in practice a
// cluster whose peers have not all reported yet) is asked again, with
// each try logged, until the caller's context ends, and the error names
// the stream. The context ends once two tries are logged, however long
// a busy machine takes for them.
func TestOpenKeepsAskingForTheStream(t *testing.T) {
	cfg := soloConfig(t)
	cfg.Replicas = 3
	var logs logtest.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		c   *Cluster
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Open(ctx, cfg)
		done <- result{c, err}
	}()
	tries := func() int { return strings.Count(logs.String(), "cannot take the session stream") }
	waitFor(t, 30*time.Second, "second try logged", func() bool {
		select {
		case r := <-done:
			done <- r
			return true
		default:
			return tries() >= 2
		}
	})
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Open went on after its context ended")
	}
	if r.err == nil {
		r.c.Close()
		t.Fatal("Open placed three replicas on one server")
	}
	if !strings.Contains(r.err.Error(), "stream "+cfg.Stream) {
		t.Fatalf("error %q does not name stream %s", r.err, cfg.Stream)
	}
	if n := tries(); n < 2 {
		t.Fatalf("%d tries logged before giving up, want several:\n%s", n, logs.String())
	}
}
