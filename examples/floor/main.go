// Command floor is the least a durable WebSocket service can do for each
// event on a machine: read a frame, append it to one file under a group
// commit (one fdatasync covers every frame that came while the previous
// one ran), then write an ack. It speaks just enough of baton's protocol
// for examples/loadgen to drive it (every frame is acknowledged; there
// are no sessions, rules or effects), so the two can be run side by side
// with the same load: whatever latency the floor shows on a machine, no
// server with an fsync per acknowledged event will go below it there.
// It also answers the simulator's HTTP routes that examples/n8n/bench
// posts to, appending each body the same way.
//
// With -nats, each frame is published instead to a JetStream stream, one
// subject per session, and answered once JetStream acknowledges it: the
// floor under baton serve --nats.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18282", "listen address")
	path := flag.String("file", "floor.log", "the file appended to")
	noSync := flag.Bool("no-sync", false, "write without fdatasync")
	natsURL := flag.String("nats", "", "publish to JetStream at these URLs (comma-separated) instead of the file")
	replicas := flag.Int("nats-replicas", 1, "copies JetStream keeps of the stream")
	flag.Parse()
	var log appender
	if *natsURL != "" {
		js, err := openStream(*natsURL, *replicas)
		if err != nil {
			slog.Error("opening the stream", "err", err)
			os.Exit(1)
		}
		log = js
	} else {
		f, err := os.OpenFile(*path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
		if err != nil {
			slog.Error("opening the file", "err", err)
			os.Exit(1)
		}
		log = newJournal(f, !*noSync)
	}
	slog.Info("floor listening", "addr", *addr)
	if err := http.ListenAndServe(*addr, handler(log)); err != nil {
		slog.Error("serving", "err", err)
		os.Exit(1)
	}
}

// handler serves /ws, and /debug/stats as a server with nothing to
// report (the generator reads it after a run).
func handler(j appender) http.Handler {
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		serve(c, j)
	})
	mux.HandleFunc("/debug/stats", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) })
	// The simulator's HTTP routes, as examples/n8n/bench drives them:
	// each body is appended and answered with a sequence number.
	var seq atomic.Uint64
	mux.HandleFunc("POST /sim/session/{op}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = j.append("http", body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(strconv.AppendUint([]byte(`{"ok":true,"input_seq":`), seq.Add(1), 10))
		w.Write([]byte("}"))
	})
	return mux
}

type inFrame struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
}

func serve(c *websocket.Conn, j appender) {
	defer c.Close()
	sid := ""
	var buf []byte
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		var fr inFrame
		if json.Unmarshal(data, &fr) != nil {
			return
		}
		if fr.SessionID != "" {
			sid = fr.SessionID
		}
		if err := j.append(sid, data); err != nil {
			return
		}
		buf = append(buf[:0], `{"type":"ack","id":`...)
		buf = appendJSONString(buf, fr.ID)
		buf = append(buf, `,"session_id":`...)
		buf = appendJSONString(buf, sid)
		buf = append(buf, `,"t_ms":0}`...)
		if c.WriteMessage(websocket.TextMessage, buf) != nil {
			return
		}
	}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(buf, b...)
}

// appender makes b durable, as the session's (or the route's) bytes.
type appender interface {
	append(session string, b []byte) error
}

// stream publishes to JetStream, one subject per session.
type stream struct{ js jetstream.JetStream }

func openStream(urls string, replicas int) (*stream, error) {
	nc, err := nats.Connect(urls)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"}, Replicas: replicas, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, err
	}
	return &stream{js: js}, nil
}

func (s *stream) append(session string, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if session == "" {
		session = "none" // a frame before its session's id
	}
	_, err := s.js.Publish(ctx, "floor."+session, b)
	return err
}

// journal is a group commit: appenders queue their bytes and wait; the
// committer writes everything queued and syncs once.
type journal struct {
	f    *os.File
	sync bool
	mu   sync.Mutex
	buf  []byte
	wait []chan error
	kick chan struct{}
}

func newJournal(f *os.File, sync bool) *journal {
	j := &journal{f: f, sync: sync, kick: make(chan struct{}, 1)}
	go j.commitLoop()
	return j
}

// append returns once b is written and, unless syncing is off, synced.
func (j *journal) append(_ string, b []byte) error {
	done := make(chan error, 1)
	j.mu.Lock()
	j.buf = append(j.buf, b...)
	j.buf = append(j.buf, '\n')
	j.wait = append(j.wait, done)
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
	return <-done
}

func (j *journal) commitLoop() {
	var out []byte
	var wait []chan error
	for range j.kick {
		j.mu.Lock()
		out, j.buf = j.buf, out[:0]
		wait, j.wait = j.wait, wait[:0]
		j.mu.Unlock()
		if len(wait) == 0 {
			continue
		}
		_, err := j.f.Write(out)
		if err == nil && j.sync {
			err = syscall.Fdatasync(int(j.f.Fd()))
		}
		if err != nil {
			slog.Error("appending", "err", err)
		}
		for _, d := range wait {
			d <- err
		}
	}
}
