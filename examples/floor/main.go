// Command floor is the least a durable WebSocket service can do for each
// event on a machine: read a frame, append it to one file under a group
// commit (one fdatasync covers every frame that came while the previous
// one ran), then write an ack. It speaks just enough of baton's protocol
// for examples/loadgen to drive it (every frame is acknowledged; there
// are no sessions, rules or effects), so the two can be run side by side
// with the same load: whatever latency the floor shows on a machine, no
// server with an fsync per acknowledged event will go below it there.
package main

import (
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/gorilla/websocket"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18282", "listen address")
	path := flag.String("file", "floor.log", "the file appended to")
	noSync := flag.Bool("no-sync", false, "write without fdatasync")
	flag.Parse()
	f, err := os.OpenFile(*path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		slog.Error("opening the file", "err", err)
		os.Exit(1)
	}
	j := &journal{f: f, sync: !*noSync, kick: make(chan struct{}, 1)}
	go j.commitLoop()
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024}
	http.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		serve(c, j)
	})
	http.HandleFunc("/debug/stats", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) })
	slog.Info("floor listening", "addr", *addr)
	if err := http.ListenAndServe(*addr, nil); err != nil {
		slog.Error("serving", "err", err)
		os.Exit(1)
	}
}

type inFrame struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
}

func serve(c *websocket.Conn, j *journal) {
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
		j.append(data)
		buf = append(buf[:0], `{"type":"ack","id":`...)
		buf = strconv.AppendQuote(buf, fr.ID)
		buf = append(buf, `,"session_id":`...)
		buf = strconv.AppendQuote(buf, sid)
		buf = append(buf, `,"t_ms":0}`...)
		if c.WriteMessage(websocket.TextMessage, buf) != nil {
			return
		}
	}
}

// journal is a group commit: appenders queue their bytes and wait; the
// committer writes everything queued and syncs once.
type journal struct {
	f    *os.File
	sync bool
	mu   sync.Mutex
	buf  []byte
	wait []chan struct{}
	kick chan struct{}
}

func (j *journal) append(b []byte) {
	done := make(chan struct{})
	j.mu.Lock()
	j.buf = append(j.buf, b...)
	j.buf = append(j.buf, '\n')
	j.wait = append(j.wait, done)
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
	<-done
}

func (j *journal) commitLoop() {
	var out []byte
	var wait []chan struct{}
	for range j.kick {
		j.mu.Lock()
		out, j.buf = j.buf, out[:0]
		wait, j.wait = j.wait, wait[:0]
		j.mu.Unlock()
		if len(wait) == 0 {
			continue
		}
		if _, err := j.f.Write(out); err != nil {
			slog.Error("writing", "err", err)
			os.Exit(1)
		}
		if j.sync {
			if err := syscall.Fdatasync(int(j.f.Fd())); err != nil {
				slog.Error("syncing", "err", err)
				os.Exit(1)
			}
		}
		for _, d := range wait {
			close(d)
		}
	}
}
