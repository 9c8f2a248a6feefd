package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log sink the node's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOpenKeepsAskingForTheStream: JetStream that cannot place the
// session stream (here three replicas on one server; in practice a
// cluster whose peers have not all reported yet) is asked again, with
// each try logged, until the caller's context ends, and the error names
// the stream.
func TestOpenKeepsAskingForTheStream(t *testing.T) {
	cfg := soloConfig(t)
	cfg.Replicas = 3
	var logs lockedBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	c, err := Open(ctx, cfg)
	if err == nil {
		c.Close()
		t.Fatal("Open placed three replicas on one server")
	}
	if !strings.Contains(err.Error(), "stream "+cfg.Stream) {
		t.Fatalf("error %q does not name stream %s", err, cfg.Stream)
	}
	if n := strings.Count(logs.String(), "cannot take the session stream"); n < 2 {
		t.Fatalf("%d tries logged before giving up, want several:\n%s", n, logs.String())
	}
}
