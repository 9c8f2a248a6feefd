// Command nats runs a NATS JetStream cluster on loopback for trying and
// measuring baton serve --nats without installing nats-server: the same
// embedded servers the cluster tests run (runtime/cluster/natstest).
//
//	go run ./examples/cluster/nats -servers 3 -port 14222 -dir /tmp/js
//
// It prints the client URLs, comma-separated as --nats takes them, and
// runs until interrupted.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton/runtime/cluster/natstest"
	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	n := flag.Int("servers", 3, "servers in the cluster (1: a lone server, no routes)")
	port := flag.Int("port", 14222, "client port of the first server; the others take the next ones, and routes take port+100 and up")
	dir := flag.String("dir", "", "folder for the servers' stores (default: a new temporary folder)")
	flag.Parse()
	if err := run(*n, *port, *dir); err != nil {
		slog.Error("nats", "err", err)
		os.Exit(1)
	}
}

func run(n, port int, dir string) error {
	if n < 1 {
		return fmt.Errorf("-servers %d: need at least one", n)
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "baton-nats-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var routes []int
	if n > 1 {
		for i := range n {
			routes = append(routes, port+100+i)
		}
	}
	var servers []*server.Server
	defer func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}()
	urls := make([]string, 0, n)
	for i := range n {
		cp := 0
		if n > 1 {
			cp = routes[i]
		}
		s, err := natstest.Start(filepath.Join(dir, fmt.Sprint("n", i+1)), fmt.Sprint("n", i+1), port+i, cp, routes)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	// Print the URLs only once the servers can take JetStream requests: a
	// node that asks for its stream before a meta leader is elected
	// fails to start.
	if n > 1 {
		deadline := time.Now().Add(30 * time.Second)
		for !slices.ContainsFunc(servers, (*server.Server).JetStreamIsLeader) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the %d servers elected no JetStream meta leader within 30s", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	fmt.Println(strings.Join(urls, ","))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}
