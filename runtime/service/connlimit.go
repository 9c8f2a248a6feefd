package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// refuseLinger bounds the time spent answering one refused
	// connection.
	refuseLinger = time.Second
	// maxRefusing bounds refused connections being answered at once; past
	// it a refused connection is closed without an answer, so a flood of
	// them cannot make the refusals themselves cost goroutines.
	maxRefusing = 64
)

// connLimiter caps open connections, in all and per client address, at
// accept time. Every accepted connection counts until it is closed: idle
// keep-alive ones, and WebSockets, which keep their net.Conn through the
// upgrade.
type connLimiter struct {
	max, perIP    int // <= 0: no cap
	limitLoopback bool
	log           *slog.Logger

	mu    sync.Mutex
	open  int
	byKey map[string]int

	refusing chan struct{}
	refused  *prometheus.CounterVec
}

func newConnLimiter(cfg *Config, reg prometheus.Registerer) *connLimiter {
	l := &connLimiter{
		max: cfg.MaxConns, perIP: cfg.MaxConnsPerIP, limitLoopback: cfg.LimitLoopback, log: cfg.Logger,
		byKey:    map[string]int{},
		refusing: make(chan struct{}, maxRefusing),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_connections_refused_total",
			Help: "Connections refused at accept because a cap was reached, by cap (total or per_ip).",
		}, []string{"limit"}),
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_connections_open",
		Help: "Open client connections, HTTP and WebSocket, as counted against the connection caps.",
	}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(l.open)
	})
	reg.MustRegister(l.refused, open)
	l.refused.WithLabelValues("total")
	l.refused.WithLabelValues("per_ip")
	return l
}

// wrap applies the caps to the connections ln accepts.
func (l *connLimiter) wrap(ln net.Listener) net.Listener { return &limitListener{Listener: ln, l: l} }

// clientKey is what the per-address cap counts by: the IP, or for IPv6
// its /64, which one client usually holds whole. exempt is set for
// loopback (unless limitLoopback) and for non-IP addresses.
func (l *connLimiter) clientKey(addr net.Addr) (key string, exempt bool) {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.AddrPort().Addr()
	default:
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return "", true
		}
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	if !ip.IsValid() || (ip.IsLoopback() && !l.limitLoopback) {
		return "", true
	}
	if ip.Is6() {
		p, err := ip.Prefix(64)
		if err != nil {
			return "", true
		}
		return p.String(), false
	}
	return ip.String(), false
}

// acquire counts a new connection from addr, or says which cap refuses it.
func (l *connLimiter) acquire(addr net.Addr) (key string, refusedBy string) {
	key, exempt := l.clientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return "", "total"
	}
	if !exempt && l.perIP > 0 {
		if l.byKey[key] >= l.perIP {
			return "", "per_ip"
		}
		l.byKey[key]++
	} else {
		key = ""
	}
	l.open++
	return key, ""
}

func (l *connLimiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if key == "" {
		return
	}
	if n := l.byKey[key] - 1; n > 0 {
		l.byKey[key] = n
	} else {
		delete(l.byKey, key)
	}
}

// refusal is the whole HTTP answer to a refused connection: written
// before the request is read, so it costs no parsing, and in the body
// format of every other HTTP error.
func refusal(status int, code, msg string) []byte {
	var b httpErrorBody
	b.Error.Code, b.Error.Message = code, msg
	body, err := json.Marshal(b)
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// refuse answers a refused connection with 503 too_many_connections and
// closes it, off the accept loop.
func (l *connLimiter) refuse(c net.Conn, by string) {
	l.refused.WithLabelValues(by).Inc()
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	msg := fmt.Sprintf("the server has its maximum of %d connections open; try again later", l.max)
	if by == "per_ip" {
		msg = fmt.Sprintf("%d connections from your address are open, the most allowed; close one or try again later", l.perIP)
	}
	l.log.Debug("connection refused", "remote", c.RemoteAddr().String(), "limit", by)
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := c.Write(refusal(http.StatusServiceUnavailable, CodeTooManyConnections, msg)); err != nil {
			return
		}
		// Half-close, then read what the client sent until it closes:
		// closing with its request unread would reset the connection, and
		// a reset can destroy the answer before the client reads it.
		if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		}
	}()
}

type limitListener struct {
	net.Listener
	l *connLimiter
}

// Accept returns the next connection within the caps, answering and
// closing the ones over them.
func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, by := ln.l.acquire(c.RemoteAddr())
		if by == "" {
			return &limitedConn{Conn: c, l: ln.l, key: key}, nil
		}
		ln.l.refuse(c, by)
	}
}

// limitedConn gives its slot back when closed, whoever closes it: the
// HTTP server, or the WebSocket code after the upgrade.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	key  string
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.release(c.key) })
	return c.Conn.Close()
}

// CloseWrite keeps the TCP half-close net/http uses to let a client read
// an answer before the connection goes.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connection cannot half-close")
}
