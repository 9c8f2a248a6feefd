// Package natstest runs NATS JetStream servers inside a test process, on
// loopback, with their stores in the test's temporary folders: one
// server, or a cluster of them joined by routes, for tests of code that
// keeps its state in JetStream (runtime/cluster and the nodes built on it).
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startLimit bounds a server's start and a cluster's first meta leader
// election. It only catches a hang: on a loaded machine both may be slow.
const startLimit = 30 * time.Second

// Start runs a JetStream server on loopback with its store in dir. A port
// of -1 picks a free one. With a cluster port it joins the servers
// listening on routes (which may include its own).
func Start(dir, name string, port, clusterPort int, routes []int) (*server.Server, error) {
	opts := &server.Options{
		ServerName: name, Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	}
	if clusterPort > 0 {
		opts.Cluster = server.ClusterOpts{Name: "baton-test", Host: "127.0.0.1", Port: clusterPort}
		for _, p := range routes {
			opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", name, err)
	}
	go s.Start()
	if !s.ReadyForConnections(startLimit) {
		s.Shutdown()
		return nil, fmt.Errorf("server %s did not start within %s", name, startLimit)
	}
	return s, nil
}

// FreePorts finds n free loopback ports. Cluster routes need them: every
// server of a cluster must know the others' ports before any starts.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Cluster is n clustered JetStream servers in this process.
type Cluster struct {
	Servers []*server.Server
	stopped []bool
}

// StartCluster runs n clustered JetStream servers named s1…sn, each with
// its store in its own t.TempDir, waits until they have elected a meta
// leader, and shuts them down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := FreePorts(t, n)
	c := &Cluster{Servers: make([]*server.Server, n), stopped: make([]bool, n)}
	for i := range n {
		s, err := Start(t.TempDir(), fmt.Sprintf("s%d", i+1), -1, ports[i], ports)
		if err != nil {
			t.Fatal(err)
		}
		c.Servers[i] = s
		t.Cleanup(func() { c.Stop(i) })
	}
	deadline := time.Now().Add(startLimit)
	for c.MetaLeader() < 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the %d servers elected no JetStream meta leader within %s", n, startLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// URLs are the client URLs of the servers still running.
func (c *Cluster) URLs() []string {
	var out []string
	for i, s := range c.Servers {
		if !c.stopped[i] {
			out = append(out, s.ClientURL())
		}
	}
	return out
}

// MetaLeader is the index of the server leading JetStream's meta group,
// or -1 while there is none.
func (c *Cluster) MetaLeader() int {
	for i, s := range c.Servers {
		if !c.stopped[i] && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// StreamLeader is the index of the server leading a stream of the
// default account, or -1 while there is none.
func (c *Cluster) StreamLeader(stream string) int {
	for i, s := range c.Servers {
		if !c.stopped[i] && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// Stop shuts server i down and waits until it has. The server steps down
// from the raft groups it leads first, as a server told to stop does; a
// crash is what only a server in its own process can show. Stopping a
// stopped server does nothing.
func (c *Cluster) Stop(i int) {
	if c.stopped[i] {
		return
	}
	c.stopped[i] = true
	c.Servers[i].Shutdown()
	c.Servers[i].WaitForShutdown()
}
