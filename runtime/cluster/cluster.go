// Package cluster keeps session logs in NATS JetStream so that any node of
// a `baton serve` cluster can carry on a session another node was
// running. It provides a wal.Store whose logs are replicated and fenced,
// one lease per node, and the ownership of each live session.
//
// The model, its failure cases and the research it rests on are in
// docs/cluster.md. In short: a session's log is the subject
// <prefix>.<session id> of one stream, each message holding whole records
// framed as in a log file; every write names the subject's last sequence
// it expects, so a node that lost a session can never write to it again.
// A node holds a lease (a key with a TTL) that it renews; a session is
// owned by a node's incarnation (one lease registration), and when that
// lease expires the surviving nodes take its sessions over.
//
// Two clocks are involved. Everything this package decides about leases
// runs on Config.Clock (runtime/clock): when a renewal is due, when an
// unrenewed lease is given up, when a lease not seen renewed is stale,
// when an owner whose lease never showed up is dead, how long a restart
// waits for its old lease, and how long a lower-ranked node waits before
// it reports an orphan. What NATS decides runs on the server's clock and
// cannot be injected: a lease key's expiry (the bucket's TTL, MaxAge),
// the expiry marker's own lifetime, and the duplicate window of retried
// writes. Transport bounds stay on the kernel's clock, as they do in the
// rest of the service: how long one NATS request may take (OpTimeout and
// the bounds derived from the TTL), the backoff between its retries, and
// how long Open keeps asking a JetStream cluster that cannot place the
// stream yet.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// Defaults for Config fields left zero.
const (
	DefaultStream        = "BATON_SESSIONS"
	DefaultSubjectPrefix = "baton.log"
	DefaultLeaseTTL      = 2 * time.Second
	DefaultOpTimeout     = 15 * time.Second
	// setupPatience is how long Open keeps asking a JetStream cluster that
	// cannot place the session stream yet.
	setupPatience = time.Minute
)

// ErrOwned is wrapped by *OwnedError.
var ErrOwned = errors.New("session is owned by another node")

// ErrNoLease is returned while this node holds no lease: after it lost
// one and before it has registered again, it may not own anything.
var ErrNoLease = errors.New("this node holds no lease")

// OwnedError says which node owns a session, so that the service can send
// the client there.
type OwnedError struct {
	Session string
	Node    string
	// Advertise is the owner's URL for clients; empty when the owner's
	// lease has not been seen yet (it registered moments ago, or it is
	// dead and the session will be taken over within a lease TTL).
	Advertise string
}

func (e *OwnedError) Error() string {
	if e.Advertise == "" {
		return fmt.Sprintf("session %s is owned by node %s", e.Session, e.Node)
	}
	return fmt.Sprintf("session %s is owned by node %s at %s", e.Session, e.Node, e.Advertise)
}

func (e *OwnedError) Unwrap() error { return ErrOwned }

// Config says how to reach NATS and who this node is.
type Config struct {
	// URLs are NATS servers to connect to; the client fails over among
	// them (and those the cluster gossips).
	URLs []string
	// Replicas is the number of copies JetStream keeps of the log and of
	// both buckets: 1, or 3 to survive the loss of a server. Default 1.
	Replicas int
	// LeaseTTL is how long a node's lease lives unrenewed: a dead node's
	// sessions are taken over about this long after its last renewal.
	// Default 2 s.
	LeaseTTL time.Duration
	// Node names this node, unique in the cluster: letters, digits, '-'
	// and '_'. Default: the host name, with other characters as '-'.
	Node string
	// Advertise is the URL clients use to reach this node, given to
	// clients that reach another node for a session this one owns.
	Advertise string
	// Stream is the JetStream stream of session logs; the buckets are
	// named after it (STREAM_NODES, STREAM_OWNERS). Default
	// BATON_SESSIONS.
	Stream string
	// Streams is how many streams hold the session logs, spread by a hash
	// of the session id (streams.go): 1 (the default) or more, the same
	// on every node. Each stream's leader takes its share of the writes.
	Streams int
	// SubjectPrefix starts every log's subject. Default baton.log.
	SubjectPrefix string
	// EvidenceDir is the local folder where Preserve copies damaged logs.
	EvidenceDir string
	// OpTimeout bounds one store operation, retries included. It must
	// outlast a NATS server crash: its groups elect new leaders after 4-9
	// s by nats-server's raft defaults. Default 15 s.
	OpTimeout time.Duration
	// NATSOptions are passed to nats.Connect after this package's own
	// (credentials, TLS).
	NATSOptions []nats.Option
	Logger      *slog.Logger
	// Clock is the time every lease decision is taken on (see the
	// package comment): the service's clock. Default: the real clock.
	Clock clock.Clock
}

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	subjectRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
)

func (cfg *Config) fill() error {
	if len(cfg.URLs) == 0 {
		return errors.New("cluster: no NATS URL")
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 1 || cfg.Replicas > 5 {
		return fmt.Errorf("cluster: replicas %d: want 1 to 5 (1 or 3 in practice)", cfg.Replicas)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < 300*time.Millisecond {
		// Renewals go every TTL/3; below this a renewal's round trip
		// under load is a fair part of the margin.
		return fmt.Errorf("cluster: lease TTL %s is below 300ms", cfg.LeaseTTL)
	}
	if cfg.Node == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("cluster: no node name and no host name: %w", err)
		}
		cfg.Node = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '-'
		}, host)
	}
	if !nameRE.MatchString(cfg.Node) {
		return fmt.Errorf("cluster: node name %q: want 1-64 of A-Z a-z 0-9 _ -", cfg.Node)
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if !nameRE.MatchString(cfg.Stream) {
		return fmt.Errorf("cluster: stream name %q: want 1-64 of A-Z a-z 0-9 _ -", cfg.Stream)
	}
	if cfg.Streams == 0 {
		cfg.Streams = 1
	}
	if cfg.Streams < 1 || cfg.Streams > maxStreams {
		return fmt.Errorf("cluster: streams %d: want 1 to %d", cfg.Streams, maxStreams)
	}
	if last := fmt.Sprintf("%s_%d", cfg.Stream, cfg.Streams-1); cfg.Streams > 1 && !nameRE.MatchString(last) {
		return fmt.Errorf("cluster: stream name %q is too long for %d streams (%s)", cfg.Stream, cfg.Streams, last)
	}
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = DefaultSubjectPrefix
	}
	if !subjectRE.MatchString(cfg.SubjectPrefix) {
		return fmt.Errorf("cluster: subject prefix %q: want dot-separated tokens of A-Z a-z 0-9 _ -", cfg.SubjectPrefix)
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return nil
}

// lease is a node lease's value.
type lease struct {
	Node        string `json:"node"`
	Incarnation string `json:"incarnation"`
	Advertise   string `json:"advertise,omitempty"`
}

// nodeView is a lease as this node last saw it.
type nodeView struct {
	lease
	// seen is when its last renewal arrived. A lease seen to expire is
	// removed at once; one that merely stops arriving (its expiry marker
	// missed while this node's watcher was cut off) is judged dead after
	// staleLeases TTLs, which no renewing node comes near.
	seen time.Time
}

// staleLeases is how many TTLs a lease may go unseen before it counts as
// dead.
const staleLeases = 3

// owner is a session's entry in the registry.
type owner struct {
	Node        string `json:"node"`
	Incarnation string `json:"incarnation"`
}

func (o owner) key() string { return o.Node + "/" + o.Incarnation }

// ownerView is what this node knows of one registry entry.
type ownerView struct {
	o   owner
	rev uint64
	// seen is when this owner was first seen in the entry: an owner whose
	// lease has not shown up a whole TTL later is dead.
	seen        time.Time
	orphanSince time.Time
	// emitted is the revision last reported on Orphans, so that one
	// orphaning is reported once.
	emitted uint64
}

// Cluster is this node's membership: its lease, its view of every node
// and session owner, and the store of replicated logs.
type Cluster struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	nc     *nats.Conn
	js     jetstream.JetStream
	leases jetstream.KeyValue
	owners jetstream.KeyValue
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	inc       string // this node's incarnation; "" while it holds no lease
	leaseRev  uint64
	lastRenew time.Time // when the last successful renewal was sent
	nodes     map[string]nodeView
	gone      map[string]time.Time // owner.key() of incarnations seen to end
	sessions  map[string]*ownerView
	owned     map[string]uint64 // id → registry revision this incarnation wrote
	logs      map[string]*sessionLog
	closed    bool
	closeErr  error

	orphans *queue
	lost    *queue
	kick    chan struct{}

	// Test hooks: a paused heartbeat lets the lease expire; paused watch
	// processing makes a zombie that does not learn it lost anything.
	hbPaused    atomic.Bool
	watchPaused atomic.Bool
	watchGate   chan struct{}
}

// Open connects to NATS, creates the stream and buckets if needed,
// registers this node's lease and waits until its view of the cluster is
// complete. ctx bounds only the opening.
func Open(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg: cfg, log: cfg.Logger.With("node", cfg.Node), clock: cfg.Clock,
		nodes: map[string]nodeView{}, gone: map[string]time.Time{}, sessions: map[string]*ownerView{},
		owned: map[string]uint64{}, logs: map[string]*sessionLog{},
		kick: make(chan struct{}, 1), watchGate: make(chan struct{}),
	}
	c.orphans, c.lost = newQueue(), newQueue()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	opts := append([]nats.Option{
		nats.Name("baton " + cfg.Node),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			c.log.Warn("disconnected from NATS", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			c.log.Info("reconnected to NATS", "server", nc.ConnectedUrlRedacted())
		}),
	}, cfg.NATSOptions...)
	nc, err := nats.Connect(strings.Join(cfg.URLs, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to %s: %w", strings.Join(cfg.URLs, ","), err)
	}
	c.nc = nc
	if err := c.setup(ctx); err != nil {
		c.cancel()
		c.wg.Wait()
		nc.Close()
		return nil, err
	}
	return c, nil
}

// createAssets creates (or checks and updates) the session streams and
// the two buckets, each within OpTimeout.
func (c *Cluster) createAssets(ctx context.Context, js jetstream.JetStream) error {
	if err := c.createStreams(ctx, js); err != nil {
		return err
	}
	op, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	var err error
	c.leases, err = js.CreateOrUpdateKeyValue(op, jetstream.KeyValueConfig{
		Bucket:      c.cfg.Stream + "_NODES",
		Description: "baton node leases",
		TTL:         c.cfg.LeaseTTL,
		// Without markers an expired key vanishes silently; with them a
		// watcher sees a purge the moment the server expires it.
		LimitMarkerTTL: max(time.Second, 5*c.cfg.LeaseTTL),
		Storage:        jetstream.FileStorage,
		Replicas:       c.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("cluster: lease bucket: %w", err)
	}
	op, cancel = context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	c.owners, err = js.CreateOrUpdateKeyValue(op, jetstream.KeyValueConfig{
		Bucket:      c.cfg.Stream + "_OWNERS",
		Description: "baton live sessions and their owners",
		Storage:     jetstream.FileStorage,
		Replicas:    c.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("cluster: owner bucket: %w", err)
	}
	return nil
}

func (c *Cluster) setup(ctx context.Context) error {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.js = js
	// A JetStream cluster that has just elected its meta leader may not
	// yet place replicated streams (its peers have not all reported), and
	// nodes started with it ask at once: keep asking for a while rather
	// than fail the node's start. Waiting for JetStream is transport, on
	// the kernel's clock.
	patience, stop := context.WithTimeout(ctx, setupPatience)
	defer stop()
	for attempt := 1; ; attempt++ {
		err = c.createAssets(ctx, js)
		if err == nil || errors.Is(err, ErrLayout) || patience.Err() != nil {
			break
		}
		c.log.Warn("JetStream cannot take the session stream and buckets yet; retrying", "stream", c.cfg.Stream, "attempt", attempt, "err", err)
		select {
		case <-patience.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	for _, w := range []struct {
		kv    jetstream.KeyValue
		apply func(jetstream.KeyValueEntry)
	}{{c.leases, c.applyLease}, {c.owners, c.applyOwner}} {
		watcher, err := w.kv.WatchAll(c.ctx)
		if err != nil {
			return fmt.Errorf("cluster: watching %s: %w", w.kv.Bucket(), err)
		}
		ready := make(chan struct{})
		c.wg.Add(1)
		go c.watch(watcher, w.apply, ready)
		select {
		case <-ready:
		case <-ctx.Done():
			return fmt.Errorf("cluster: reading %s: %w", w.kv.Bucket(), ctx.Err())
		}
	}
	if err := c.registerFirst(ctx); err != nil {
		return err
	}
	// The tickers start now, so that Open returns with both armed.
	c.wg.Add(2)
	go c.heartbeat(newTicker(c.clock, c.cfg.LeaseTTL/3))
	go c.scan(newTicker(c.clock, c.cfg.LeaseTTL/4))
	return nil
}

// registerFirst registers this node's lease, waiting out a lease left by
// this node's previous run. A lease that outlives two TTLs (on this
// node's clock) is renewed by a live process: another node of the same
// name.
func (c *Cluster) registerFirst(ctx context.Context) error {
	deadline := c.clock.Now().Add(2*c.cfg.LeaseTTL + time.Second)
	for {
		err := c.register(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("cluster: registering node %s: %w", c.cfg.Node, err)
		}
		if c.clock.Now().After(deadline) {
			return fmt.Errorf("cluster: node %s is registered by a running process; give this one another node name", c.cfg.Node)
		}
		if err := clock.Sleep(ctx, c.clock, c.cfg.LeaseTTL/4); err != nil {
			return fmt.Errorf("cluster: registering node %s: %w", c.cfg.Node, err)
		}
	}
}

// register creates this node's lease under a new incarnation.
func (c *Cluster) register(ctx context.Context) error {
	inc := newIncarnation()
	val, _ := json.Marshal(lease{Node: c.cfg.Node, Incarnation: inc, Advertise: c.cfg.Advertise})
	sent := c.clock.Now()
	// The request's bound is transport, on the kernel's clock.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL)
	defer cancel()
	rev, err := c.leases.Create(ctx, c.cfg.Node, val)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.inc, c.leaseRev, c.lastRenew = inc, rev, sent
	c.mu.Unlock()
	c.log.Info("node lease registered", "incarnation", inc)
	c.signal()
	return nil
}

func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// heartbeat renews the lease every TTL/3. A renewal refused means the
// lease expired (this process was paused or cut off longer than the TTL)
// and its sessions may already be someone else's; a lease not renewed for
// a whole TTL is given up for the same reason, before anyone can be sure.
func (c *Cluster) heartbeat(t *ticker) {
	defer c.wg.Done()
	defer t.stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.c():
		}
		if !c.hbPaused.Load() {
			c.renew()
		}
		t.rearm()
	}
}

// ticker ticks every period on a clock.Clock, at fixed times as a
// time.Ticker does; a tick handled so late that the next is already due
// (a long renewal, a paused process, a clock moved far at once) drops the
// ones it overran. Its receiver rearms it once it has handled a tick, so
// a test driving a fake clock knows a tick was handled when the timer is
// armed again.
type ticker struct {
	clk    clock.Clock
	t      clock.Timer
	period time.Duration
	next   time.Time
}

func newTicker(clk clock.Clock, period time.Duration) *ticker {
	return &ticker{clk: clk, t: clk.NewTimer(period), period: period, next: clk.Now().Add(period)}
}

func (k *ticker) c() <-chan time.Time { return k.t.C() }

func (k *ticker) stop() { k.t.Stop() }

// rearm schedules the tick after the one just handled.
func (k *ticker) rearm() {
	now := k.clk.Now()
	k.next = k.next.Add(k.period)
	if !k.next.After(now) {
		k.next = now.Add(k.period)
	}
	k.t.Reset(k.next.Sub(now))
}

func (c *Cluster) renew() {
	c.mu.Lock()
	inc, rev := c.inc, c.leaseRev
	c.mu.Unlock()
	if inc == "" {
		if err := c.register(c.ctx); err != nil && c.ctx.Err() == nil {
			c.log.Warn("could not register the node lease again", "err", err)
		}
		return
	}
	val, _ := json.Marshal(lease{Node: c.cfg.Node, Incarnation: inc, Advertise: c.cfg.Advertise})
	sent := c.clock.Now()
	// The request's bound is transport, on the kernel's clock; whether
	// the lease is late is decided on this node's clock below.
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.LeaseTTL/3)
	defer cancel()
	newRev, err := c.leases.Update(ctx, c.cfg.Node, val, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// An earlier renewal whose answer timed out may have been
		// stored: a lease that still holds this incarnation is this
		// node's, since nobody else writes it and an expired one holds
		// a marker. Renew from its revision.
		if e, gerr := c.leases.Get(ctx, c.cfg.Node); gerr == nil {
			var l lease
			if json.Unmarshal(e.Value(), &l) == nil && l.Incarnation == inc {
				newRev, err = c.leases.Update(ctx, c.cfg.Node, val, e.Revision())
			}
		}
	}
	switch {
	case err == nil:
		c.mu.Lock()
		if c.inc == inc {
			c.leaseRev, c.lastRenew = newRev, sent
		}
		c.mu.Unlock()
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound):
		c.loseLease(inc, "its renewal was refused: the lease had expired")
		if err := c.register(c.ctx); err != nil && c.ctx.Err() == nil {
			c.log.Warn("could not register the node lease again", "err", err)
		}
	case c.ctx.Err() != nil:
	default:
		c.mu.Lock()
		late := c.inc == inc && c.clock.Now().Sub(c.lastRenew) >= c.cfg.LeaseTTL
		c.mu.Unlock()
		c.log.Warn("could not renew the node lease", "err", err)
		if late {
			c.loseLease(inc, "it could not be renewed for a whole TTL")
		}
	}
}

// loseLease gives up incarnation inc: every session it owned is reported
// on Lost and every open log is fenced, since another node may be taking
// them over now.
func (c *Cluster) loseLease(inc, why string) {
	c.mu.Lock()
	if c.inc != inc || inc == "" {
		c.mu.Unlock()
		return
	}
	c.inc = ""
	c.gone[owner{c.cfg.Node, inc}.key()] = c.clock.Now()
	ids := make([]string, 0, len(c.owned))
	for id := range c.owned {
		ids = append(ids, id)
	}
	c.owned = map[string]uint64{}
	logs := make([]*sessionLog, 0, len(c.logs))
	for _, l := range c.logs {
		logs = append(logs, l)
	}
	c.mu.Unlock()
	slices.Sort(ids)
	c.log.Warn("node lease lost; giving up its sessions", "incarnation", inc, "why", why, "sessions", len(ids))
	cause := fmt.Errorf("%w: this node's lease was lost (%s)", wal.ErrFenced, why)
	for _, l := range logs {
		l.kill(cause)
	}
	for _, id := range ids {
		c.lost.push(id)
	}
}

// watch applies a bucket's entries to the view until Close.
func (c *Cluster) watch(w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry), ready chan struct{}) {
	defer c.wg.Done()
	defer func() { _ = w.Stop() }()
	initial := true
	for {
		select {
		case <-c.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				if c.ctx.Err() == nil {
					// The view stops here; takeovers still check the
					// lease bucket's leader before replacing an owner.
					c.log.Error("a bucket watch ended; this node's view of the cluster is frozen")
				}
				return
			}
			if e == nil {
				if initial {
					close(ready)
					initial = false
				}
				continue
			}
			for c.watchPaused.Load() {
				select {
				case <-c.ctx.Done():
					return
				case <-c.watchGate:
				}
			}
			apply(e)
			c.signal()
		}
	}
}

func (c *Cluster) signal() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func deleted(e jetstream.KeyValueEntry) bool {
	return e.Operation() == jetstream.KeyValueDelete || e.Operation() == jetstream.KeyValuePurge
}

func (c *Cluster) applyLease(e jetstream.KeyValueEntry) {
	node := e.Key()
	var lose string
	c.mu.Lock()
	prev, had := c.nodes[node]
	if deleted(e) {
		if had {
			c.gone[owner{node, prev.Incarnation}.key()] = c.clock.Now()
			delete(c.nodes, node)
			if node == c.cfg.Node && prev.Incarnation == c.inc {
				lose = prev.Incarnation
			}
		}
		c.mu.Unlock()
		if lose != "" {
			c.loseLease(lose, "it expired or was deleted")
		}
		return
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil || l.Incarnation == "" {
		c.mu.Unlock()
		c.log.Warn("ignoring a malformed node lease", "key", node, "err", err)
		return
	}
	l.Node = node
	now := c.clock.Now()
	if had && prev.Incarnation != l.Incarnation {
		c.gone[owner{node, prev.Incarnation}.key()] = now
	}
	c.nodes[node] = nodeView{lease: l, seen: now}
	c.mu.Unlock()
}

func (c *Cluster) applyOwner(e jetstream.KeyValueEntry) {
	id := e.Key()
	var lostLog *sessionLog
	lost := false
	c.mu.Lock()
	me := owner{c.cfg.Node, c.inc}
	if deleted(e) {
		delete(c.sessions, id)
		if r, ok := c.owned[id]; ok && e.Revision() > r {
			lost = true
		}
	} else {
		var o owner
		if err := json.Unmarshal(e.Value(), &o); err != nil || o.Node == "" {
			c.mu.Unlock()
			c.log.Warn("ignoring a malformed session owner", "session", id, "err", err)
			return
		}
		v := c.sessions[id]
		if v == nil || v.o != o {
			v = &ownerView{o: o, seen: c.clock.Now()}
			c.sessions[id] = v
		}
		v.rev = e.Revision()
		if r, ok := c.owned[id]; ok && e.Revision() > r && o != me {
			lost = true
		}
	}
	if lost {
		delete(c.owned, id)
		lostLog = c.logs[id]
	}
	c.mu.Unlock()
	if lost {
		c.log.Warn("session taken over by another node", "session_id", id)
		if lostLog != nil {
			lostLog.kill(fmt.Errorf("%w: the registry names another owner", wal.ErrFenced))
		}
		c.lost.push(id)
	}
}

// ownerState classifies an owner: alive (its lease is held), dead (its
// lease was seen to end, or has not been seen for a whole TTL), or not
// known yet. Two buckets are watched apart, so an owner entry can arrive
// before the lease of the node that wrote it; only time settles that.
type liveness int

const (
	unknown liveness = iota
	alive
	dead
)

func (c *Cluster) ownerStateLocked(v *ownerView, now time.Time) liveness {
	if n, ok := c.nodes[v.o.Node]; ok && n.Incarnation == v.o.Incarnation {
		if c.staleLocked(n, now) {
			return dead
		}
		return alive
	}
	if _, ok := c.gone[v.o.key()]; ok {
		return dead
	}
	if now.Sub(v.seen) >= c.cfg.LeaseTTL {
		return dead
	}
	return unknown
}

func (c *Cluster) staleLocked(n nodeView, now time.Time) bool {
	return n.Node != c.cfg.Node && now.Sub(n.seen) >= staleLeases*c.cfg.LeaseTTL
}

// scan reports orphaned sessions: at once for those this node ranks
// first for, later for the others in case the first ranked dies too.
func (c *Cluster) scan(t *ticker) {
	defer c.wg.Done()
	defer t.stop()
	for {
		tick := false
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
		case <-t.c():
			tick = true
		}
		c.scanOnce(c.clock.Now())
		if tick {
			t.rearm()
		}
	}
}

func (c *Cluster) scanOnce(now time.Time) {
	var out []string
	c.mu.Lock()
	if c.inc == "" || c.closed {
		c.mu.Unlock()
		return
	}
	live := make([]string, 0, len(c.nodes)+1)
	for name, n := range c.nodes {
		if !c.staleLocked(n, now) {
			live = append(live, name)
		}
	}
	if _, ok := c.nodes[c.cfg.Node]; !ok {
		live = append(live, c.cfg.Node)
	}
	for id, v := range c.sessions {
		switch c.ownerStateLocked(v, now) {
		case alive:
			v.orphanSince = time.Time{}
			continue
		case unknown:
			continue
		}
		if v.emitted == v.rev {
			continue
		}
		if v.orphanSince.IsZero() {
			v.orphanSince = now
		}
		r := rank(id, c.cfg.Node, v.o.Node, live)
		if r == 0 || now.Sub(v.orphanSince) >= time.Duration(r)*c.cfg.LeaseTTL {
			v.emitted = v.rev
			out = append(out, id)
		}
	}
	for k, t := range c.gone {
		if now.Sub(t) > time.Hour {
			delete(c.gone, k)
		}
	}
	c.mu.Unlock()
	slices.Sort(out)
	for _, id := range out {
		c.orphans.push(id)
	}
}

// rank is how many live nodes come before node for session id. The
// previous owner's node comes first if it is alive under a new
// incarnation: when a NATS outage outlasts every lease at once, each node
// takes its own sessions back and no client has to move. Otherwise
// rendezvous hashing orders them: each orphan has one first choice that
// every node agrees on without talking, and losing a node moves only its
// sessions.
func rank(id, node, prev string, live []string) int {
	if node == prev {
		return 0
	}
	r := 0
	mine := score(node, id)
	for _, n := range live {
		if n == node {
			continue
		}
		if n == prev {
			r++
			continue
		}
		if s := score(n, id); s > mine || s == mine && n < node {
			r++
		}
	}
	return r
}

func score(node, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(id))
	x := h.Sum64()
	// FNV's high bits mix poorly over short keys; a finalizer spreads them.
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Store is the replicated session store. A log is written only by the
// session's owner: Create and Open acquire the session first (Open takes
// over one whose owner is dead), and fail with *OwnedError if a live node
// owns it.
func (c *Cluster) Store() wal.Store { return store{c} }

// Node is this node's name.
func (c *Cluster) Node() string { return c.cfg.Node }

// Acquire makes this node the session's owner: it creates the session's
// registry entry, or takes over one whose owner's lease has ended
// (compare-and-set on the entry's revision, so of two nodes racing
// exactly one wins). It returns nil if this node owns it already, an
// *OwnedError (errors.Is ErrOwned) if a live node does, ErrNoLease while
// this node holds no lease. Create and Open call it themselves.
func (c *Cluster) Acquire(ctx context.Context, id string) error {
	if err := wal.ValidID(id); err != nil {
		return err
	}
	_, err := c.acquire(ctx, id, false)
	return err
}

// acquire returns fresh when it created the entry (no session of that id
// was registered). With create, an entry whose owner is dead is not
// taken over: it is a live session, so the id is taken (ErrExists).
func (c *Cluster) acquire(ctx context.Context, id string, create bool) (fresh bool, err error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		me := owner{c.cfg.Node, c.inc}
		c.mu.Unlock()
		if me.Incarnation == "" {
			return false, fmt.Errorf("session %s: %w", id, ErrNoLease)
		}
		val, _ := json.Marshal(me)
		if attempt == 10 {
			return false, fmt.Errorf("session %s: the registry entry kept changing under this node", id)
		}
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return false, fmt.Errorf("session %s: acquiring: %w", id, ctx.Err())
			case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
			}
		}
		e, err := c.owners.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rev, err := c.owners.Create(ctx, id, val)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("session %s: registering: %w", id, err)
			}
			c.own(id, rev, me)
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("session %s: reading its owner: %w", id, err)
		}
		var o owner
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			return false, fmt.Errorf("session %s: malformed owner entry: %w", id, err)
		}
		if o == me {
			c.own(id, e.Revision(), me)
			return false, nil
		}
		c.mu.Lock()
		v := c.sessions[id]
		if v == nil || v.o != o {
			// Not in the view yet: judge it from now on.
			v = &ownerView{o: o, rev: e.Revision(), seen: c.clock.Now()}
		}
		state := c.ownerStateLocked(v, c.clock.Now())
		adv := ""
		if state == alive {
			adv = c.nodes[o.Node].Advertise
		}
		c.mu.Unlock()
		if state != dead {
			return false, &OwnedError{Session: id, Node: o.Node, Advertise: adv}
		}
		// The view says dead, but a view can be behind (this node's
		// watcher cut off for a while makes every lease look stale): the
		// lease bucket's leader has the last word before a takeover, and
		// before a start of an id that is taken.
		held, adv, err := c.leaseHeld(ctx, o)
		if err != nil {
			return false, fmt.Errorf("session %s: checking its owner's lease: %w", id, err)
		}
		if held {
			return false, &OwnedError{Session: id, Node: o.Node, Advertise: adv}
		}
		if create {
			return false, fmt.Errorf("session %s: %w (its owner %s is gone; it will be taken over)", id, wal.ErrExists, o.Node)
		}
		rev, err := c.owners.Update(ctx, id, val, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("session %s: taking over from %s: %w", id, o.Node, err)
		}
		c.log.Info("session taken over", "session_id", id, "from", o.Node, "from_incarnation", o.Incarnation)
		c.own(id, rev, me)
		return false, nil
	}
}

// leaseHeld reads o's node lease from the lease bucket's leader: whether
// it still holds o's incarnation, and where that node is reached.
func (c *Cluster) leaseHeld(ctx context.Context, o owner) (bool, string, error) {
	bucket := c.leases.Bucket()
	m, err := c.lastMsgOf(ctx, "KV_"+bucket, "$KV."+bucket+"."+o.Node)
	if err != nil || m == nil {
		return false, "", err
	}
	if m.Header.Get("KV-Operation") != "" || m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return false, "", nil // deleted, purged or expired
	}
	var l lease
	if err := json.Unmarshal(m.Data, &l); err != nil {
		return false, "", fmt.Errorf("malformed lease of %s: %w", o.Node, err)
	}
	return l.Incarnation == o.Incarnation, l.Advertise, nil
}

func (c *Cluster) own(id string, rev uint64, me owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.sessions[id]; v != nil && v.rev > rev {
		// Another node's write after ours was seen first: not ours.
		return
	}
	if c.inc == me.Incarnation && rev > c.owned[id] {
		c.owned[id] = rev
	}
}

// Owner says which node owns a session and where clients reach it; ok
// is false if no live node does (the session is unknown, finished, or
// its owner died and it is about to be taken over).
func (c *Cluster) Owner(id string) (node, advertise string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, mine := c.owned[id]; mine {
		return c.cfg.Node, c.cfg.Advertise, true
	}
	v := c.sessions[id]
	if v == nil {
		return "", "", false
	}
	n, up := c.nodes[v.o.Node]
	if !up || n.Incarnation != v.o.Incarnation || c.staleLocked(n, c.clock.Now()) {
		return v.o.Node, "", false
	}
	return v.o.Node, n.Advertise, true
}

// Orphans reports live sessions whose owner died and that this node
// should take over now: the service opens each with Store().Open, which
// acquires it (an *OwnedError if another node got there first: skip it)
// and fences the old owner out, then replays it. Each orphaning is
// reported once. The channel is closed by Close.
func (c *Cluster) Orphans() <-chan string { return c.orphans.out }

// Lost reports sessions this node no longer owns: its lease expired (it
// was paused or cut off longer than the TTL) or another node took the
// session over. Their logs already refuse writes (ErrFenced); the service
// stops them and sends their clients to the new owner. The channel is
// closed by Close.
func (c *Cluster) Lost() <-chan string { return c.lost.out }

// Release lets go of a session this node owns: its registry entry is
// deleted, so nobody will take it over. Finish does it itself; the
// service calls it only for a session it drops for good. It is an error
// wrapping wal.ErrFenced if another node owns the session now.
func (c *Cluster) Release(id string) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.OpTimeout)
	defer cancel()
	return c.release(ctx, id)
}

func (c *Cluster) release(ctx context.Context, id string) error {
	c.mu.Lock()
	rev, ok := c.owned[id]
	delete(c.owned, id)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	err := c.owners.Delete(ctx, id, jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("session %s: %w: the registry names another owner", id, wal.ErrFenced)
	}
	if err != nil {
		return fmt.Errorf("session %s: releasing: %w", id, err)
	}
	return nil
}

// live lists every session in the registry, whoever owns it.
func (c *Cluster) live() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.sessions)+len(c.owned))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	for id := range c.owned {
		if c.sessions[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Close closes this node's open logs (sending what they hold), deletes
// its lease so that the other nodes take its sessions over at once
// instead of a TTL later, and disconnects. Sessions stay live.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.closeErr
	}
	c.closed = true
	logs := make([]*sessionLog, 0, len(c.logs))
	for _, l := range c.logs {
		logs = append(logs, l)
	}
	c.mu.Unlock()
	var errs []error
	for _, l := range logs {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	inc, rev := c.inc, c.leaseRev
	c.inc = ""
	c.mu.Unlock()
	if inc != "" {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LeaseTTL)
		err := c.leases.Delete(ctx, c.cfg.Node, jetstream.LastRevision(rev))
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			errs = append(errs, fmt.Errorf("deleting the node lease: %w", err))
		}
	}
	if err := c.nc.Drain(); err != nil {
		c.nc.Close()
	}
	c.orphans.close()
	c.lost.close()
	c.mu.Lock()
	c.closeErr = errors.Join(errs...)
	c.mu.Unlock()
	return c.closeErr
}

// queue is an unbounded queue in front of a channel: the cluster's
// goroutines never block on a service slow to take orphans or losses.
type queue struct {
	mu     sync.Mutex
	items  []string
	wake   chan struct{}
	done   chan struct{}
	out    chan string
	closed bool
}

func newQueue() *queue {
	q := &queue{wake: make(chan struct{}, 1), done: make(chan struct{}), out: make(chan string)}
	go q.run()
	return q
}

func (q *queue) push(id string) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, id)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.done)
	}
	q.mu.Unlock()
}

func (q *queue) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		var next string
		have := len(q.items) > 0
		if have {
			next = q.items[0]
			q.items = q.items[1:]
		}
		q.mu.Unlock()
		if !have {
			select {
			case <-q.wake:
				continue
			case <-q.done:
				return
			}
		}
		select {
		case q.out <- next:
		case <-q.done:
			return
		}
	}
}

// opContext bounds one store operation.
func (c *Cluster) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.cfg.OpTimeout)
}
