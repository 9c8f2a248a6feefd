package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/cluster/natstest"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// The cluster's names, as `baton serve --nats` makes them by default
// (docs/cluster.md, "What is replicated").
const (
	ccStream  = "BATON_SESSIONS"
	ccOwners  = ccStream + "_OWNERS"
	ccSubject = "baton.log."
	ccLease   = 2 * time.Second
	// ccBound bounds every wait of the cluster test: a hang, not a
	// timing. A takeover waits for a lease and a NATS loss for an
	// election, so it is longer than waitLimit.
	ccBound = 40 * time.Second
)

// ccFrame is a server frame with the url a moved error carries.
type ccFrame struct {
	ServerFrame
	URL string `json:"url"`
}

var errConnClosed = errors.New("connection closed")

// ccConn is one WebSocket to one node. Its reader records every effect
// into its session and hands acks and errors to whoever waits for them.
type ccConn struct {
	url     string
	ws      *websocket.Conn
	replies chan ccFrame
	done    chan struct{}
}

func (s *ccSession) dial(url string) (*ccConn, error) {
	// A paused node accepts the TCP connection and never answers the
	// upgrade: the handshake timeout is when a client tries elsewhere.
	d := websocket.Dialer{HandshakeTimeout: 2 * time.Second}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	c := &ccConn{url: url, ws: ws, replies: make(chan ccFrame, 1024), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			var f ccFrame
			if err := ws.ReadJSON(&f); err != nil {
				return
			}
			s.record(&f.ServerFrame)
			if f.Type == FrameAck || f.Type == FrameError {
				select {
				case c.replies <- f:
				default:
					s.fault("%s: more than %d replies unread", s.id, cap(c.replies))
				}
			}
		}
	}()
	return c, nil
}

func (c *ccConn) close() {
	c.ws.Close()
	<-c.done
}

// request sends frame and returns the reply to its id. An error frame
// with no id (a session moved away from under its clients) answers too
// unless exact: the connection serves that session no more.
func (c *ccConn) request(frame map[string]any, exact bool) (ccFrame, error) {
	id, _ := frame["id"].(string)
	if err := c.ws.WriteJSON(frame); err != nil {
		return ccFrame{}, errConnClosed
	}
	return c.await(id, exact)
}

func (c *ccConn) await(id string, exact bool) (ccFrame, error) {
	bound := time.NewTimer(ccBound)
	defer bound.Stop()
	for {
		select {
		case f := <-c.replies:
			if f.ID == id || !exact && f.ID == "" && f.Type == FrameError {
				return f, nil
			}
		case <-c.done:
			// Replies read before the close still count.
			for {
				select {
				case f := <-c.replies:
					if f.ID == id {
						return f, nil
					}
				default:
					return ccFrame{}, errConnClosed
				}
			}
		case <-bound.C:
			return ccFrame{}, fmt.Errorf("no reply to %s from %s within %s", id, c.url, ccBound)
		}
	}
}

// ccResume is one successful resume of a session.
type ccResume struct {
	at  time.Time
	url string
}

// ccSession is one client's view of one session, kept across the
// connections it goes through. Its driver sends events one after
// another and, when its node dies or sends it away, resumes it
// elsewhere with the last effect it saw.
type ccSession struct {
	id   string
	home int // the node it was started on
	// secret is what the start answered; every resume carries it, on
	// whichever node.
	secret string

	mu       sync.Mutex
	acked    map[uint64]string // input seq -> text of each acknowledged event
	ackTimes []time.Time
	effects  map[uint64]string // effect seq -> the frame's JSON
	faults   []string          // what the client saw that it should not have
	resumes  []ccResume
	refusals map[string]int // replies other than an ack to a resume

	// conn and prefer belong to the driver, and to the test while the
	// driver is parked.
	conn   *ccConn
	prefer string
	gate   ccGate
}

func newCCSession(i int) *ccSession {
	return &ccSession{id: fmt.Sprintf("cc%02d", i), home: i % 3, acked: map[uint64]string{},
		effects: map[uint64]string{}, refusals: map[string]int{}}
}

func (s *ccSession) fault(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fmt.Sprintf(format, args...))
}

func (s *ccSession) record(f *ServerFrame) {
	add := func(e EffectFrame) {
		b := string(mustJSON(e))
		if prev, ok := s.effects[e.Seq]; ok && prev != b {
			s.faults = append(s.faults, fmt.Sprintf("effect %d seen twice, differently:\n%s\n%s", e.Seq, prev, b))
		}
		s.effects[e.Seq] = b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Type == FrameEffect || f.Type == FrameClientToolCall {
		add(EffectFrame{Type: f.Type, SessionID: f.SessionID, Seq: f.Seq, Effect: *f.Effect, ClientToolCall: f.ClientToolCall})
	}
	for _, e := range f.Missed {
		add(e)
	}
}

func (s *ccSession) lastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m uint64
	for seq := range s.effects {
		m = max(m, seq)
	}
	return m
}

// acksSince counts the events acknowledged after t.
func (s *ccSession) acksSince(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.ackTimes {
		if a.After(t) {
			n++
		}
	}
	return n
}

// resumedAfter is the first resume after t.
func (s *ccSession) resumedAfter(t time.Time) (ccResume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.resumes {
		if r.at.After(t) {
			return r, true
		}
	}
	return ccResume{}, false
}

// maxAckGap is the longest wait between two acknowledgements, or from
// from to the first, among those after from.
func (s *ccSession) maxAckGap(from time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gap time.Duration
	prev := from
	for _, a := range s.ackTimes {
		if a.After(from) {
			gap = max(gap, a.Sub(prev))
			prev = a
		}
	}
	return gap
}

// ccGate parks a driver between two events, its connection left open.
type ccGate struct {
	mu     sync.Mutex
	held   bool
	done   bool
	parked chan struct{}
	open   chan struct{}
}

// hold asks the driver to park; the channel closes once it has.
func (g *ccGate) hold() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.done = true, false
	g.parked, g.open = make(chan struct{}), make(chan struct{})
	return g.parked
}

func (g *ccGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	close(g.open)
}

func (g *ccGate) wait(ctx context.Context) {
	g.mu.Lock()
	if !g.held {
		g.mu.Unlock()
		return
	}
	if !g.done {
		g.done = true
		close(g.parked)
	}
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
	}
}

// ccFleet is the node URLs a client knows, as a load balancer would.
type ccFleet struct {
	mu   sync.Mutex
	urls []string
}

func (f *ccFleet) pick(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.urls[i%len(f.urls)]
}

func (f *ccFleet) set(i int, url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.urls[i] = url
}

func (s *ccSession) start(url string) error {
	c, err := s.dial(url)
	if err != nil {
		return fmt.Errorf("%s: dial %s: %w", s.id, url, err)
	}
	f, err := c.request(startFrame("s", s.id), true)
	if err != nil || f.Type != FrameAck {
		c.close()
		return fmt.Errorf("%s: start on %s: %v %s %s", s.id, url, err, f.Code, f.Message)
	}
	s.conn, s.secret = c, f.SessionSecret
	return nil
}

// reconnect resumes the session from the last effect seen: at the node
// a moved error named, else at the nodes in turn from its home on.
func (s *ccSession) reconnect(ctx context.Context, fleet *ccFleet) error {
	last := s.lastSeq()
	begin := time.Now()
	var why string
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if time.Since(begin) > ccBound {
			return fmt.Errorf("%s: not resumed within %s; last refusal: %s", s.id, ccBound, why)
		}
		url := s.prefer
		s.prefer = ""
		if url == "" {
			url = fleet.pick(s.home + attempt)
		}
		c, err := s.dial(url)
		if err != nil {
			why = err.Error()
			pause(ctx, 50*time.Millisecond)
			continue
		}
		f, err := c.request(map[string]any{"id": "r", "type": "resume", "session_id": s.id, "last_seq": last, "session_secret": s.secret}, true)
		if err == nil && f.Type == FrameAck {
			s.mu.Lock()
			s.resumes = append(s.resumes, ccResume{at: time.Now(), url: url})
			s.mu.Unlock()
			s.conn = c
			return nil
		}
		c.close()
		s.mu.Lock()
		s.refusals[f.Code]++
		s.mu.Unlock()
		why = fmt.Sprintf("%s: %v %s %s", url, err, f.Code, f.Message)
		if f.Code == CodeMoved && f.URL != "" {
			s.prefer = f.URL
			continue
		}
		pause(ctx, 50*time.Millisecond)
	}
	return nil
}

func (s *ccSession) drop() {
	if s.conn != nil {
		s.conn.close()
		s.conn = nil
	}
}

// drive sends an event every pace until ctx ends, resuming the session
// wherever it runs whenever its connection is lost or sent away.
func (s *ccSession) drive(ctx context.Context, fleet *ccFleet, pace time.Duration) error {
	defer s.drop()
	for n := 0; ; n++ {
		s.gate.wait(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if s.conn == nil {
			if err := s.reconnect(ctx, fleet); err != nil || ctx.Err() != nil {
				return err
			}
		}
		text := fmt.Sprintf("%s answer %d: roll back the retry path, then read the gateway logs", s.id, n)
		id := fmt.Sprint("e", n)
		f, err := s.conn.request(eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": text}}), false)
		switch {
		case errors.Is(err, errConnClosed):
			s.drop()
		case err != nil:
			return fmt.Errorf("%s: %w", s.id, err)
		case f.Type == FrameAck:
			s.mu.Lock()
			if prev, ok := s.acked[f.InputSeq]; ok {
				s.faults = append(s.faults, fmt.Sprintf("input %d acknowledged twice: %q and %q", f.InputSeq, prev, text))
			}
			s.acked[f.InputSeq] = text
			s.ackTimes = append(s.ackTimes, time.Now())
			s.mu.Unlock()
		case f.Code == CodeMoved:
			s.prefer = f.URL
			s.drop()
		default:
			s.mu.Lock()
			s.refusals["event "+f.Code]++
			s.mu.Unlock()
			s.drop()
		}
		pause(ctx, pace)
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ccWait polls cond; the bound only catches a hang.
func ccWait(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	begin := time.Now()
	for !cond() {
		if time.Since(begin) > ccBound {
			t.Fatalf("not %s within %s", what, ccBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(begin)
}

// ccOwner reads a session's owner from the cluster's registry.
func ccOwner(t *testing.T, kv jetstream.KeyValue, id string) (node, incarnation string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ccBound)
	defer cancel()
	e, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatalf("owner of %s: %v", id, err)
	}
	var o struct {
		Node        string `json:"node"`
		Incarnation string `json:"incarnation"`
	}
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		t.Fatalf("owner of %s: %v", id, err)
	}
	return o.Node, o.Incarnation
}

// ccMsg is one message of a session's subject.
type ccMsg struct {
	seq    uint64
	writer string
	fence  bool
	data   []byte
}

// ccLog reads every message of a session's subject, headers included.
// The test's own connection may be finding a new server after the loss
// of one, so a failed read is tried again until the bound.
func ccLog(t *testing.T, js jetstream.JetStream, id string) []ccMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ccBound)
	defer cancel()
	for {
		msgs, err := ccRead(ctx, js, id)
		if err == nil {
			return msgs
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: reading its log: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ccRead(ctx context.Context, js jetstream.JetStream, id string) ([]ccMsg, error) {
	st, err := js.Stream(ctx, ccStream)
	if err != nil {
		return nil, err
	}
	last, err := st.GetLastMsgForSubject(ctx, ccSubject+id)
	if err != nil {
		return nil, fmt.Errorf("last message: %w", err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{ccSubject + id}})
	if err != nil {
		return nil, err
	}
	var out []ccMsg
	for len(out) == 0 || out[len(out)-1].seq < last.Sequence {
		before := len(out)
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			out = append(out, ccMsg{seq: md.Sequence.Stream, writer: m.Headers().Get("Baton-Writer"),
				fence: m.Headers().Get("Baton-Fence") != "", data: m.Data()})
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read %d messages, up to stream sequence %d: %w", len(out), last.Sequence, ctx.Err())
		}
		if len(out) == before {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out, nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// TestClusterProcesses runs three `baton serve --nats` processes on three
// JetStream servers (replicas 3) with DayOne sessions spread over them,
// and breaks the cluster the ways docs/cluster.md says it survives:
// a node SIGKILLed mid-session (its clients resume elsewhere once its
// lease lapses, and every session goes on), a NATS server lost (events
// are still acknowledged), a node paused past its lease (it acknowledges
// nothing once its sessions are taken over and writes nothing after the
// new owner's fence), and a client at the wrong node (moved, with the
// owner's URL). At the end every acknowledged event is in its session's
// log where it was acknowledged, and a resume from the first effect
// re-derives exactly what each client saw, with no gap and no duplicate.
func TestClusterProcesses(t *testing.T) {
	const sessions = 30
	bin := buildBaton(t)
	ns := natstest.StartCluster(t, 3)
	natsURLs := strings.Join(ns.URLs(), ",")

	names := []string{"n1", "n2", "n3"}
	datas := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	startNode := func(i int) *proc {
		return startBaton(t, bin, datas[i], "--nats", natsURLs, "--nats-replicas", "3", "--lease-ttl", ccLease.String(),
			"--node", names[i], "--rate", "1000", "--burst", "1000")
	}
	procs := make([]*proc, 3)
	fleet := &ccFleet{urls: make([]string, 3)}
	for i := range procs {
		procs[i] = startNode(i)
		fleet.set(i, "ws://"+procs[i].addr+"/ws")
	}
	urlOf := func(node string) string { return fleet.pick(slices.Index(names, node)) }

	nc, err := nats.Connect(strings.Join(ns.URLs(), ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kvCtx, kvCancel := context.WithTimeout(context.Background(), ccBound)
	owners, err := js.KeyValue(kvCtx, ccOwners)
	kvCancel()
	if err != nil {
		t.Fatal(err)
	}

	// Client i starts its session on node i%3.
	ss := make([]*ccSession, sessions)
	var wg sync.WaitGroup
	startErrs := make(chan error, sessions)
	for i := range ss {
		ss[i] = newCCSession(i)
		wg.Go(func() { startErrs <- ss[i].start(fleet.pick(i)) })
	}
	wg.Wait()
	close(startErrs)
	for err := range startErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range ss {
		if node, _ := ccOwner(t, owners, s.id); node != names[s.home] {
			t.Fatalf("%s was started on %s but %s owns it", s.id, names[s.home], node)
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	driveErrs := make(chan error, sessions)
	var drivers sync.WaitGroup
	for _, s := range ss {
		drivers.Go(func() { driveErrs <- s.drive(ctx, fleet, 150*time.Millisecond) })
	}
	defer func() {
		stop()
		drivers.Wait()
	}()
	// checkDrivers fails the test on the first driver that gave up.
	checkDrivers := func(t *testing.T) {
		t.Helper()
		select {
		case err := <-driveErrs:
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
	}
	allAcked := func(t *testing.T, set []*ccSession, since time.Time, n int) func() bool {
		return func() bool {
			checkDrivers(t)
			for _, s := range set {
				if s.acksSince(since) < n {
					return false
				}
			}
			return true
		}
	}
	// allResumed: every session of set resumed after since and had n
	// events acknowledged where it resumed.
	allResumed := func(t *testing.T, set []*ccSession, since time.Time, n int) func() bool {
		return func() bool {
			checkDrivers(t)
			for _, s := range set {
				r, ok := s.resumedAfter(since)
				if !ok || s.acksSince(r.at) < n {
					return false
				}
			}
			return true
		}
	}
	ccWait(t, "every session acknowledging events", allAcked(t, ss, time.Time{}, 3))

	if !t.Run("a node killed mid-session", func(t *testing.T) {
		var victims, others []*ccSession
		for _, s := range ss {
			if s.home == 0 {
				victims = append(victims, s)
			} else {
				others = append(others, s)
			}
		}
		killed := time.Now()
		if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-procs[0].exited
		ccWait(t, "every session of the killed node resumed and acknowledging events again", allResumed(t, victims, killed, 3))
		ccWait(t, "the other sessions acknowledging events", allAcked(t, others, killed, 3))
		var lat []time.Duration
		for _, s := range victims {
			r, _ := s.resumedAfter(killed)
			lat = append(lat, r.at.Sub(killed))
			if r.url == "ws://"+procs[0].addr+"/ws" {
				t.Errorf("%s resumed on the killed node", s.id)
			}
		}
		moved := 0
		for _, s := range others {
			if _, ok := s.resumedAfter(killed); ok {
				moved++
			}
		}
		t.Logf("kill -> resume ack over %d sessions (lease %s): p50 %s, p99 %s, max %s; %d of the %d other sessions had to resume",
			len(lat), ccLease, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond),
			slices.Max(lat).Round(time.Millisecond), moved, len(others))
		// The node comes back under its name, with a new lease.
		procs[0] = startNode(0)
		fleet.set(0, "ws://"+procs[0].addr+"/ws")
	}) {
		return
	}

	if !t.Run("a NATS server lost", func(t *testing.T) {
		victim := ns.StreamLeader(ccStream)
		if victim < 0 {
			victim = 0
		}
		lost := time.Now()
		ns.Stop(victim)
		stopped := time.Now()
		ccWait(t, "every session acknowledging events after the NATS server stopped", allAcked(t, ss, stopped, 3))
		var gap time.Duration
		moved := 0
		for _, s := range ss {
			gap = max(gap, s.maxAckGap(lost))
			if _, ok := s.resumedAfter(lost); ok {
				moved++
			}
		}
		t.Logf("NATS server s%d (the stream's leader) stopped in %s; the longest wait for an ack since: %s; %d of %d sessions had to resume",
			victim+1, stopped.Sub(lost).Round(time.Millisecond), gap.Round(time.Millisecond), moved, len(ss))
	}) {
		return
	}

	// zombieWriter and zombies are what the paused node wrote as before
	// its pause and the sessions it had, for the check of the logs.
	var zombieWriter string
	var zombies []*ccSession
	zombieText := func(s *ccSession) string { return s.id + " sent to the paused node after the takeover" }

	if !t.Run("a node paused past its lease", func(t *testing.T) {
		const z = 1
		var inc string
		for _, s := range ss {
			if node, i := ccOwner(t, owners, s.id); node == names[z] {
				zombies, inc = append(zombies, s), i
			}
		}
		if len(zombies) == 0 {
			t.Fatalf("node %s owns no session", names[z])
		}
		zombieWriter = names[z] + "/" + inc
		for _, s := range zombies {
			parked := s.gate.hold()
			select {
			case <-parked:
			case <-time.After(ccBound):
				t.Fatalf("%s's client did not stop sending", s.id)
			}
			if s.conn == nil || s.conn.url != urlOf(names[z]) {
				t.Fatalf("%s's client is not connected to its owner %s", s.id, names[z])
			}
		}
		paused := time.Now()
		if err := procs[z].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// The others take every session over: the registry names them,
		// and each session answers a resume there, which it does only
		// once its log is fenced and replayed.
		took := ccWait(t, "the paused node's sessions taken over", func() bool {
			for _, s := range zombies {
				if node, _ := ccOwner(t, owners, s.id); node == names[z] {
					return false
				}
			}
			return true
		})
		for _, s := range zombies {
			node, _ := ccOwner(t, owners, s.id)
			probe := newCCSession(0)
			probe.id = s.id
			c, err := probe.dial(urlOf(node))
			if err != nil {
				t.Fatal(err)
			}
			f, err := c.request(map[string]any{"id": "p", "type": "resume", "session_id": s.id, "last_seq": 0, "session_secret": s.secret}, true)
			c.close()
			if err != nil || f.Type != FrameAck {
				t.Fatalf("%s: resume at its new owner %s: %v %s %s", s.id, node, err, f.Code, f.Message)
			}
		}
		served := time.Since(paused)
		// Each client still connected to the paused node sends an event
		// it will read when it wakes.
		for _, s := range zombies {
			if err := s.conn.ws.WriteJSON(eventFrame("zombie", map[string]any{"event_type": "candidate_message",
				"data": map[string]any{"source": "text", "text": zombieText(s)}})); err != nil {
				t.Fatalf("%s: %v", s.id, err)
			}
		}
		if err := procs[z].cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		outcomes := map[string]int{}
		for _, s := range zombies {
			f, err := s.conn.await("zombie", true)
			switch {
			case errors.Is(err, errConnClosed):
				outcomes["closed"]++
			case err != nil:
				t.Errorf("%s: the paused node neither answered the event nor closed: %v", s.id, err)
			case f.Type == FrameAck:
				t.Errorf("%s: the paused node acknowledged an event (input %d) after its session was taken over", s.id, f.InputSeq)
			default:
				outcomes[f.Code]++
				s.prefer = f.URL
			}
			s.drop()
		}
		resumed := time.Now()
		for _, s := range zombies {
			s.gate.release()
		}
		ccWait(t, "the paused node's sessions acknowledging events at their new owners", allResumed(t, zombies, resumed, 3))
		ccWait(t, "every session acknowledging events", allAcked(t, ss, resumed, 3))
		t.Logf("%s paused with %d sessions: registry moved them after %s, all served by others after %s; its answers to an event sent meanwhile: %v",
			names[z], len(zombies), took.Round(time.Millisecond), served.Round(time.Millisecond), outcomes)
	}) {
		return
	}

	// A client that reaches a node not running its session, whichever
	// node that is and however it asks, is sent to the owner, where it
	// resumes. The nodes asked include one restarted and one paused and
	// resumed moments ago. Without the session's secret it is told, by
	// every node, the owner too, only that there is no such session.
	t.Run("a client at the wrong node", func(t *testing.T) {
		ask := func(s *ccSession, url string, frame map[string]any) (ccFrame, error) {
			probe := newCCSession(0)
			probe.id = s.id
			c, err := probe.dial(url)
			if err != nil {
				return ccFrame{}, err
			}
			defer c.close()
			return c.request(frame, true)
		}
		frames := []struct {
			name  string
			frame func(s *ccSession) map[string]any
		}{
			{"resume", func(s *ccSession) map[string]any {
				return map[string]any{"id": "w", "type": "resume", "session_id": s.id, "last_seq": 0, "session_secret": s.secret}
			}},
			{"start", func(s *ccSession) map[string]any { return startFrame("w", s.id) }},
		}
		wrong := 0
		for _, s := range ss {
			node, _ := ccOwner(t, owners, s.id)
			for _, other := range names {
				f, err := ask(s, urlOf(other), map[string]any{"id": "w", "type": "resume", "session_id": s.id, "last_seq": 0})
				if want := notFound(s.id); err != nil || f.Type != FrameError || f.Code != want.Code || f.Message != want.Message || f.URL != "" {
					t.Errorf("resume of %s (owner %s) at %s without its secret: %v %s %s %q, url %q; want %s %q",
						s.id, node, other, err, f.Type, f.Code, f.Message, f.URL, want.Code, want.Message)
				}
				if other == node {
					continue
				}
				for _, fr := range frames {
					f, err := ask(s, urlOf(other), fr.frame(s))
					if err != nil || f.Code != CodeMoved || f.URL != urlOf(node) {
						wrong++
						t.Errorf("%s of %s (owner %s) at %s: %v %s %s %q, url %q; want moved to %s",
							fr.name, s.id, node, other, err, f.Type, f.Code, f.Message, f.URL, urlOf(node))
						continue
					}
					if f, err = ask(s, f.URL, frames[0].frame(s)); err != nil || f.Type != FrameAck {
						t.Errorf("%s: resume where moved sent it: %v %s %s", s.id, err, f.Code, f.Message)
					}
				}
			}
		}
		t.Logf("%d of %d asks at a node not running the session were not sent to its owner", wrong, len(ss)*2*len(frames))
	})

	stop()
	drivers.Wait()
	close(driveErrs)
	for err := range driveErrs {
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("nothing acknowledged lost, nothing seen twice", func(t *testing.T) {
		acks, effects := 0, 0
		for _, s := range ss {
			for _, f := range s.faults {
				t.Errorf("%s: %s", s.id, f)
			}
			// A new client resumes from nothing: the owner re-derives
			// every effect, which must extend what this client saw.
			probe := newCCSession(s.home)
			probe.id, probe.secret = s.id, s.secret
			if err := probe.reconnect(context.Background(), fleet); err != nil {
				t.Fatal(err)
			}
			probe.drop()
			if len(probe.faults) > 0 {
				t.Fatalf("%s: %v", s.id, probe.faults)
			}
			n := uint64(len(probe.effects))
			for seq := uint64(1); seq <= n; seq++ {
				if _, ok := probe.effects[seq]; !ok {
					t.Fatalf("%s: effects 1..%d re-derived with %d missing", s.id, n, seq)
				}
			}
			for seq, e := range s.effects {
				if seq > n {
					t.Fatalf("%s: the client saw effect %d, the log re-derives %d", s.id, seq, n)
				}
				if probe.effects[seq] != e {
					t.Fatalf("%s: effect %d differs:\n saw %s\n log %s", s.id, seq, e, probe.effects[seq])
				}
			}
			effects += len(s.effects)

			msgs := ccLog(t, js, s.id)
			var raw []byte
			for _, m := range msgs {
				raw = append(raw, m.data...)
			}
			rec, err := wal.Parse(raw)
			if err != nil {
				t.Fatalf("%s: %v", s.id, err)
			}
			for seq, text := range s.acked {
				if seq == 0 || seq > uint64(len(rec.Inputs)) {
					t.Fatalf("%s: acknowledged input %d missing: the log holds %d inputs", s.id, seq, len(rec.Inputs))
				}
				if in := rec.Inputs[seq-1]; in.Type != engine.InputCandidate || in.Candidate.Text != text {
					t.Fatalf("%s: acknowledged input %d is %+v, want %q", s.id, seq, in, text)
				}
			}
			acks += len(s.acked)
			for i, in := range rec.Inputs {
				if in.Type == engine.InputCandidate && in.Candidate.Text == zombieText(s) {
					t.Errorf("%s: input %d is the event sent to the paused node after the takeover", s.id, i+1)
				}
			}
			if slices.Contains(zombies, s) {
				fenced := false
				for _, m := range msgs {
					if m.fence && m.writer != zombieWriter {
						fenced = true
					}
					if fenced && m.writer == zombieWriter {
						t.Errorf("%s: message %d written by the paused node after the new owner's fence", s.id, m.seq)
					}
				}
				if !fenced {
					t.Errorf("%s: taken over with no fence in its log", s.id)
				}
			}
			// And the log replays offline to what the engine did.
			file := filepath.Join(t.TempDir(), s.id+".wal")
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "replay", file).CombinedOutput(); err != nil || !strings.Contains(string(out), " 0 differ") {
				t.Fatalf("%s: baton replay: %v\n%s", s.id, err, out)
			}
		}
		refusals := map[string]int{}
		for _, s := range ss {
			for code, n := range s.refusals {
				refusals[code] += n
			}
		}
		t.Logf("%d sessions: %d acknowledged events all in their logs, %d effects seen all re-derived; replies other than an ack on the way: %v",
			len(ss), acks, effects, refusals)
	})
}
