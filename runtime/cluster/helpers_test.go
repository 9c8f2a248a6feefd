package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/cluster/natstest"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// shared is one JetStream server for the tests that need no cluster of
// servers; each test uses its own stream and subjects on it.
var shared struct {
	srv *server.Server
	url string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	dir, err := os.MkdirTemp("", "baton-cluster-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := startServer(dir, "solo", 0, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared.srv, shared.url = srv, srv.ClientURL()
	code := m.Run()
	srv.Shutdown()
	srv.WaitForShutdown()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer runs a JetStream server on loopback; with a cluster port
// it joins the servers listening on routes.
func startServer(dir, name string, clusterPort int, routes []int) (*server.Server, error) {
	return startServerOn(dir, name, -1, clusterPort, routes)
}

func startServerOn(dir, name string, port, clusterPort int, routes []int) (*server.Server, error) {
	return natstest.Start(dir, name, port, clusterPort, routes)
}

func freePorts(t testing.TB, n int) []int { return natstest.FreePorts(t, n) }

// startCluster runs n clustered JetStream servers and waits until they
// have a meta leader.
func startCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	ports := freePorts(t, n)
	srvs := make([]*server.Server, n)
	for i := range n {
		s, err := startServer(t.TempDir(), fmt.Sprintf("s%d", i+1), ports[i], ports)
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = s
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
	}
	waitFor(t, 30*time.Second, "a JetStream meta leader", func() bool {
		for _, s := range srvs {
			if s.JetStreamIsLeader() {
				return true
			}
		}
		return false
	})
	return srvs
}

func clientURLs(srvs []*server.Server) []string {
	var out []string
	for _, s := range srvs {
		out = append(out, s.ClientURL())
	}
	return out
}

// waitFor polls cond; the bound only catches a hang.
func waitFor(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var streams atomic.Int64

// namespace is a fresh stream and subject prefix, so that tests sharing
// a server never see each other's logs, leases or owners.
func namespace() (stream, prefix string) {
	n := streams.Add(1)
	return fmt.Sprintf("T%d", n), fmt.Sprintf("t%d.log", n)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// node opens a Cluster as node name in the namespace of cfg.
func node(t testing.TB, cfg Config, name string) *Cluster {
	t.Helper()
	cfg.Node = name
	cfg.Advertise = "ws://" + name + ".test/ws"
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.LeaseTTL == 0 {
		// Long enough that no stall of a busy machine costs a node its
		// lease. A test that needs a lease to expire on the server sets a
		// TTL of its own; one that needs a node dead runs on fake clocks
		// and deletes its lease (expire).
		cfg.LeaseTTL = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// soloConfig is a fresh namespace on the shared server.
func soloConfig(t testing.TB) Config {
	stream, prefix := namespace()
	return Config{URLs: []string{shared.url}, Stream: stream, SubjectPrefix: prefix, EvidenceDir: t.TempDir()}
}

func testHeader(id string) wal.Header {
	return wal.Header{Engine: engine.Version, Pack: "dayone", PackRef: "dayone", PackHash: "abc", Options: engine.Options{Seed: 7},
		SessionID: id, CandidateID: "cand", StartWall: time.Date(2026, 2, 20, 23, 0, 0, 0, time.UTC)}
}

func sampleInputs() []engine.Input {
	yes := true
	conf := 0.9
	return []engine.Input{
		{T: 0, Type: engine.InputAdvance},
		{T: 700, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: "r1", Text: "Hello?"}},
		{T: 900, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMicState, MicActive: &yes}},
		{T: 1500, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: "hi", STTConfidence: &conf}},
		{T: 2000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: "m2"}},
	}
}

// rawLog is a session's messages' data concatenated: a log file's bytes.
func rawLog(t testing.TB, c *Cluster, id string) []byte {
	t.Helper()
	ctx, cancel := c.opContext()
	defer cancel()
	msgs, err := c.readMsgs(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, m := range msgs {
		out = append(out, m.Data...)
	}
	return out
}

// publishRaw puts data on a session's subject as a message nobody owns.
func publishRaw(t testing.TB, c *Cluster, id string, data []byte) {
	t.Helper()
	ctx, cancel := c.opContext()
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: c.subject(id), Data: data}); err != nil {
		t.Fatal(err)
	}
}

// freeze makes c a zombie: its heartbeat stops (its lease expires, or
// expire removes it) and it stops learning from the buckets, but its
// logs still write, as a process paused and resumed would for a moment.
func (c *Cluster) freeze() {
	c.hbPaused.Store(true)
	c.watchPaused.Store(true)
}

// expire deletes c's lease on the server, as the server's expiry of it
// would: the other nodes see it gone at once, and c when it next reads
// its watch.
func expire(t testing.TB, c *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.leases.Delete(ctx, c.cfg.Node); err != nil {
		t.Fatalf("deleting the lease of %s: %v", c.cfg.Node, err)
	}
}

// thaw lets a frozen Cluster carry on.
func (c *Cluster) thaw() {
	c.hbPaused.Store(false)
	c.watchPaused.Store(false)
	close(c.watchGate)
}
