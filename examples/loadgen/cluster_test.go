package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/service"
)

// fakeCluster is what the fake nodes share, as a cluster's replicated
// log would: every session, whichever node runs it.
type fakeCluster struct {
	mu       sync.Mutex
	sessions map[string]*fakeSession
}

type fakeSession struct {
	effects []service.EffectFrame
	// acks lists, for each event id, the nodes that acked it.
	acks map[string][]string
	// how a node first took the session ("start" or "resume"), and the
	// last_seq of every resume that found it.
	how     string
	resumes []uint64
	ended   bool
	// secret is what its start answered; a resume without it is
	// answered as for a session that does not exist.
	secret string
}

func newFakeCluster() *fakeCluster { return &fakeCluster{sessions: map[string]*fakeSession{}} }

func (fc *fakeCluster) session(id string) *fakeSession {
	s := fc.sessions[id]
	if s == nil {
		s = &fakeSession{acks: map[string][]string{}}
		fc.sessions[id] = s
	}
	return s
}

// effect adds an effect to session id and returns its frame.
func (fc *fakeCluster) effect(id string, typ engine.EffectType) service.EffectFrame {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	s := fc.session(id)
	f := service.EffectFrame{Type: service.FrameEffect, SessionID: id, Seq: uint64(len(s.effects) + 1),
		Effect: service.WireEffect{Effect: engine.Effect{Type: typ}}}
	s.effects = append(s.effects, f)
	if typ == engine.EffectSessionEnd {
		s.ended = true
	}
	return f
}

// fakeNode is a node that speaks just enough of the protocol: start,
// resume, events (acked, each with one effect) and end. redirect sends
// every start and resume elsewhere, as a node that does not own the
// session does; moveOnEvent moves each session at its first event, as
// a node that lost it to a takeover does.
type fakeNode struct {
	cl   *fakeCluster
	name string
	url  string
	ts   *httptest.Server
	// redirect, when redirects is set, is the url of the moved answer
	// to every start and resume ("" names none). adopt: the session a
	// start asked for is made to exist, as if the node named had
	// started it, so resuming it there finds it.
	redirects bool
	redirect  string
	adopt     bool
	// moveOnEvent, when set, is the url a session is moved to at its
	// first event on this node: the event is not applied, an effect is
	// logged whose frame is lost with the connection, and the
	// connection is closed. The moved error answers the event (its id,
	// as an input refused by a fenced log is) when answerEvent is set,
	// or is sent to the connection as a whole, as a takeover's is.
	moveOnEvent string
	answerEvent bool
	// ackDeadlineMS is advertised in start and resume acks; silent, when
	// set, freezes the node at a session's first event: it reads and
	// answers nothing more until it closes, as a paused process.
	ackDeadlineMS int64
	silent        chan struct{}
}

// newFakeNode makes a node whose url is known before it serves, so its
// peers can name it; start it once they are set up.
func newFakeNode(t *testing.T, cl *fakeCluster, name string) *fakeNode {
	n := &fakeNode{cl: cl, name: name}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", n.serve)
	mux.HandleFunc("/debug/stats", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "{}") })
	n.ts = httptest.NewUnstartedServer(mux)
	n.url = "ws://" + n.ts.Listener.Addr().String() + "/ws"
	t.Cleanup(n.ts.Close)
	return n
}

func (n *fakeNode) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	send := func(v any) {
		data, err := json.Marshal(v)
		if err == nil {
			ws.WriteMessage(websocket.TextMessage, data)
		}
	}
	refuse := func(id, code, msg string) {
		send(service.ErrorFrame{Type: service.FrameError, ID: id, Code: code, Message: msg})
	}
	var sid string // the session this connection runs
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f service.ClientFrame
		if err := json.Unmarshal(data, &f); err != nil {
			refuse("", "bad_json", err.Error())
			continue
		}
		switch f.Type {
		case service.FrameStart, service.FrameResume:
			if n.redirects {
				if n.adopt && f.Type == service.FrameStart {
					n.cl.mu.Lock()
					n.cl.session(f.SessionID)
					n.cl.mu.Unlock()
				}
				send(service.ErrorFrame{Type: service.FrameError, ID: f.ID, Code: service.CodeMoved,
					Message: fmt.Sprintf("session %s runs on node other; resume it there", f.SessionID), URL: n.redirect})
				continue
			}
			if f.Type == service.FrameStart {
				n.cl.mu.Lock()
				_, exists := n.cl.sessions[f.SessionID]
				if !exists {
					fs := n.cl.session(f.SessionID)
					fs.how, fs.secret = "start", "secret-of-"+f.SessionID
				}
				n.cl.mu.Unlock()
				if exists {
					refuse(f.ID, "session_exists", "session "+f.SessionID+" is already running; resume it instead")
					continue
				}
				sid = f.SessionID
				zero := int64(0)
				send(service.AckFrame{Type: service.FrameAck, ID: f.ID, SessionID: sid, SessionSecret: "secret-of-" + sid, T: &zero,
					State: &service.SessionState{SessionID: sid, Pack: "dayone", AckDeadlineMS: n.ackDeadlineMS}})
				send(n.cl.effect(sid, engine.EffectNote))
				continue
			}
			var last uint64
			if f.LastSeq != nil {
				last = *f.LastSeq
			}
			n.cl.mu.Lock()
			s, ok := n.cl.sessions[f.SessionID]
			ok = ok && f.SessionSecret == s.secret
			var ack service.AckFrame
			if ok {
				s.resumes = append(s.resumes, last)
				if s.how == "" {
					s.how = "resume"
				}
				ack = service.AckFrame{Type: service.FrameAck, ID: f.ID, SessionID: f.SessionID,
					State: &service.SessionState{SessionID: f.SessionID, Pack: "dayone", LastSeq: uint64(len(s.effects)), Ended: s.ended,
						AckDeadlineMS: n.ackDeadlineMS},
					Missed: rawFrames(s.effects[min(last, uint64(len(s.effects))):])}
			}
			n.cl.mu.Unlock()
			if !ok {
				refuse(f.ID, service.CodeSessionNotFound, "no session "+f.SessionID+" on this server")
				continue
			}
			sid = f.SessionID
			send(ack)
		case service.FrameEvent:
			if n.silent != nil {
				<-n.silent
				return
			}
			if n.moveOnEvent != "" {
				n.cl.effect(sid, engine.EffectNote)
				id := ""
				if n.answerEvent {
					id = f.ID
				}
				send(service.ErrorFrame{Type: service.FrameError, ID: id, Code: service.CodeMoved,
					Message: "session " + sid + " moved to another node; resume it there", URL: n.moveOnEvent})
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "moved"), time.Now().Add(time.Second))
				return
			}
			n.cl.mu.Lock()
			s := n.cl.session(sid)
			s.acks[f.ID] = append(s.acks[f.ID], n.name)
			n.cl.mu.Unlock()
			zero := int64(0)
			send(service.AckFrame{Type: service.FrameAck, ID: f.ID, SessionID: sid, T: &zero})
			send(n.cl.effect(sid, engine.EffectRouted))
		case service.FrameEnd:
			send(service.AckFrame{Type: service.FrameAck, ID: f.ID, SessionID: sid})
			send(n.cl.effect(sid, engine.EffectSessionEnd))
		}
	}
}

// runCluster runs the generator in-process against urls with a fixed
// cycle at 50 events a second, until what the test checks has happened
// (until) and every event sent has been answered. A run that does not
// return is a failure: a deadline, not a timing assertion.
func runCluster(t *testing.T, urls []string, sessions int, until func(*stats) bool) *summary {
	t.Helper()
	c, err := parseFlags([]string{"-url", strings.Join(urls, ","), "-prefix", "t", "-sessions", fmt.Sprint(sessions),
		"-rate", "50", "-duration", runBound}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c.drain = 30 * time.Second // a bound: the run waits only for answers still due
	c.until = until
	type result struct {
		s   *summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := run(context.Background(), c, io.Discard)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		var text strings.Builder
		if err := r.s.writeText(&text); err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", text.String())
		return r.s
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not return")
		return nil
	}
}

// checkAcks checks that every event the run sent was acked, once, and
// by the node named: none lost in a move and none applied twice.
func checkAcks(t *testing.T, fc *fakeCluster, s *summary, by string) {
	t.Helper()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	acks := 0
	for id, fs := range fc.sessions {
		for ev, nodes := range fs.acks {
			if len(nodes) != 1 || nodes[0] != by {
				t.Errorf("session %s event %s acked by %v, want once by %s", id, ev, nodes, by)
			}
			acks++
		}
		if !fs.ended {
			t.Errorf("session %s was not ended", id)
		}
	}
	if s.EventsSent == 0 || acks != int(s.EventsSent) || s.Ack.N != int(s.EventsSent) || s.Unanswered != 0 {
		t.Errorf("%d events sent, %d acked by the nodes, %d acks timed, %d unanswered", s.EventsSent, acks, s.Ack.N, s.Unanswered)
	}
	if s.ErrorsTotal != 0 || s.SessionsLost != 0 {
		t.Errorf("%d errors %v, %d sessions failed", s.ErrorsTotal, s.Errors, s.SessionsLost)
	}
}

// A start sent to a node that does not run the session is followed to
// the node its moved answer names (or, naming none, the next of -url's
// list) and resumed there; if no node has the session yet, it is started
// there. Sessions dialing b directly are not moved.
func TestClusterStartMoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adopt   bool // b already runs the sessions a sends to it
		noURL   bool // a's moved answer names no node
		wantHow string
	}{
		{"the node named runs the session: it is resumed there", true, false, "resume"},
		{"the node named has not got it: it is started there", false, false, "start"},
		{"no node named: the next of the list", false, true, "start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster()
			a, b := newFakeNode(t, fc, "a"), newFakeNode(t, fc, "b")
			a.redirects, a.adopt = true, tc.adopt
			if !tc.noURL {
				a.redirect = b.url
			}
			a.ts.Start()
			b.ts.Start()
			const n = 6
			// Every session has started (the ramp waits for that) and
			// sent an event.
			s := runCluster(t, []string{a.url, b.url}, n, func(st *stats) bool { return st.sent.Load() >= n })
			if s.Arrivals.Started != n || s.Arrivals.Failed != 0 {
				t.Errorf("arrivals %+v, want all %d started", s.Arrivals, n)
			}
			if want := map[string]int64{a.url: 0, b.url: n}; !maps.Equal(s.Nodes, want) {
				t.Errorf("nodes %v, want %v", s.Nodes, want)
			}
			if want := (moved{Sessions: n / 2, Hops: n / 2}); s.Moved != want {
				t.Errorf("moved %+v, want %+v", s.Moved, want)
			}
			checkAcks(t, fc, s, "b")
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if len(fc.sessions) != n {
				t.Fatalf("%d sessions on the nodes, want %d", len(fc.sessions), n)
			}
			for i := range n {
				fs := fc.sessions[fmt.Sprintf("t_%d", i)]
				switch {
				case fs == nil:
					t.Errorf("session t_%d never reached a node", i)
				case i%2 == 1 && (fs.how != "start" || len(fs.resumes) != 0):
					t.Errorf("session t_%d dialed b: taken by %s, resumed %v; want a plain start", i, fs.how, fs.resumes)
				case i%2 == 0 && fs.how != tc.wantHow:
					t.Errorf("session t_%d was moved: taken by %s, want %s", i, fs.how, tc.wantHow)
				case i%2 == 0 && tc.wantHow == "resume" && !slices.Equal(fs.resumes, []uint64{0}):
					t.Errorf("session t_%d resumed from %v, want from 0 (it had seen nothing)", i, fs.resumes)
				}
			}
		})
	}
}

// A node that loses a session mid-run tells its connection moved and
// closes it: the session resumes on the node named from the last effect
// it saw, and the event the old node did not apply is sent again there
// and acked once.
func TestClusterMovedMidSession(t *testing.T) {
	for _, tc := range []struct {
		name        string
		answerEvent bool
	}{
		{"the connection is told (a takeover)", false},
		{"the event is answered moved (a fenced log)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster()
			b, c := newFakeNode(t, fc, "b"), newFakeNode(t, fc, "c")
			b.moveOnEvent, b.answerEvent = c.url, tc.answerEvent
			b.ts.Start()
			c.ts.Start()
			const n = 4
			// Every session has been moved, at its first event.
			s := runCluster(t, []string{b.url}, n, func(st *stats) bool { return st.movedSessions.Load() == n })
			if s.Arrivals.Started != n {
				t.Errorf("arrivals %+v, want all %d started", s.Arrivals, n)
			}
			if want := (moved{Sessions: n, Hops: n}); s.Moved != want {
				t.Errorf("moved %+v, want %+v", s.Moved, want)
			}
			if s.Nodes != nil {
				t.Errorf("nodes %v for one url and one node that started sessions, want none", s.Nodes)
			}
			checkAcks(t, fc, s, "c")
			fc.mu.Lock()
			defer fc.mu.Unlock()
			for id, fs := range fc.sessions {
				// The start's effect (seq 1) was seen; the one b logged
				// as it lost the session (seq 2) went with the
				// connection.
				if !slices.Equal(fs.resumes, []uint64{1}) {
					t.Errorf("session %s resumed from %v, want once from 1", id, fs.resumes)
				}
				if len(fs.acks["e1"]) != 1 {
					t.Errorf("session %s: its first event, moved before b applied it, acked by %v", id, fs.acks["e1"])
				}
			}
		})
	}
}

// Nodes that send a session to each other for ever make a session error
// within the bound, never a hang.
func TestClusterMovedInCircles(t *testing.T) {
	fc := newFakeCluster()
	a, b := newFakeNode(t, fc, "a"), newFakeNode(t, fc, "b")
	a.redirects, a.redirect = true, b.url
	b.redirects, b.redirect = true, a.url
	a.ts.Start()
	b.ts.Start()
	const n = 3
	s := runCluster(t, []string{a.url}, n, func(st *stats) bool { return st.startFailures.Load() == n })
	if s.Arrivals.Started != 0 || s.Arrivals.Failed != n {
		t.Errorf("arrivals %+v, want all %d failed to start", s.Arrivals, n)
	}
	kind := fmt.Sprintf("moved: %d redirects in a row, no node took the session", maxMoves)
	if s.Errors[kind] != n || s.ErrorsTotal != n {
		t.Errorf("errors %v, want %d of %q", s.Errors, n, kind)
	}
	// The last moved answer is the one refused.
	if want := (moved{Sessions: n, Hops: n * (maxMoves - 1)}); s.Moved != want {
		t.Errorf("moved %+v, want %+v", s.Moved, want)
	}
}

// The bound counts moves in a row before a node takes the session, and
// moves within a window whatever took the session in between: a session
// that keeps moving slower than that goes on.
func TestClusterHopBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gap      time.Duration // between moves
		taken    bool          // a node takes the session between moves
		moves    int
		failAt   int // the move refused (0: none)
		wantKind string
	}{
		{"in a row, however slow", 2 * time.Second, false, maxMoves, maxMoves, "in a row"},
		{"taken each time, but all within the window", 100 * time.Millisecond, true, maxMoves, maxMoves, "within"},
		{"taken each time, slower than the window allows", 300 * time.Millisecond, true, 20, 0, ""},
		{"taken each time, far apart", 2 * time.Second, true, 20, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{c: config{urls: []string{"ws://a", "ws://b", "ws://c"}}, st: newStats()}
			c := &client{r: r}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			failed := 0
			for i := range tc.moves {
				if tc.taken {
					c.unbound = 0
				}
				_, err := c.hop("ws://x", t0.Add(time.Duration(i)*tc.gap))
				if err != nil {
					failed = i + 1
					if !strings.Contains(err.Error(), tc.wantKind) {
						t.Errorf("move %d refused with %q, want it to say %q", i+1, err, tc.wantKind)
					}
					break
				}
			}
			if failed != tc.failAt {
				t.Fatalf("move %d refused, want %d", failed, tc.failAt)
			}
			wantHops := int64(tc.moves)
			if tc.failAt > 0 {
				wantHops = int64(tc.failAt - 1)
			}
			if r.st.hops.Load() != wantHops || r.st.movedSessions.Load() != 1 {
				t.Errorf("%d hops, %d sessions moved; want %d, 1", r.st.hops.Load(), r.st.movedSessions.Load(), wantHops)
			}
		})
	}
}

// A moved answer that names no node sends the session on to the next
// node of the list after the one it dialed.
func TestClusterHopNextNode(t *testing.T) {
	r := &runner{c: config{urls: []string{"ws://a", "ws://b", "ws://c"}}, st: newStats()}
	c := &client{r: r, node: 2}
	for i, want := range []string{"ws://a", "ws://b", "ws://x", "ws://c"} {
		named := ""
		if want == "ws://x" {
			named = want
		}
		c.unbound = 0
		got, err := c.hop(named, time.Date(2026, 1, 1, 0, 0, i*2, 0, time.UTC))
		if err != nil || got != want {
			t.Fatalf("moved naming %q: to %q (%v), want %q", named, got, err, want)
		}
	}
}

// Two real servers given as one list share the sessions round-robin,
// and their figures are summed.
func TestClusterRoundRobin(t *testing.T) {
	srvA, a := startServer(t)
	srvB, b := startServer(t)
	c, err := parseFlags([]string{"-url", a + "," + b, "-prefix", "t", "-sessions", "6", "-rate", "4", "-duration", runBound}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c.drain = 30 * time.Second // a bound: the run waits only for answers still due
	c.until = func(st *stats) bool { return st.sent.Load() >= 6 }
	s, err := run(context.Background(), c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := s.writeText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if want := map[string]int64{a: 3, b: 3}; !maps.Equal(s.Nodes, want) {
		t.Errorf("nodes %v, want %v", s.Nodes, want)
	}
	if line := fmt.Sprintf("nodes              %s: 3, %s: 3\n", a, b); !strings.Contains(text.String(), line) {
		t.Errorf("no %q in the report", line)
	}
	if s.Moved != (moved{}) || strings.Contains(text.String(), "moved") {
		t.Errorf("moved %+v between servers that are no cluster", s.Moved)
	}
	if s.Server == nil || s.Server.SessionsAdded != 6 {
		t.Errorf("server figures %+v, want 6 sessions added over both", s.Server)
	}
	if s.ErrorsTotal != 0 || s.SessionsLost != 0 || s.EventsSent == 0 || s.Ack.N != int(s.EventsSent) {
		t.Errorf("%d errors %v, %d sessions failed, %d events sent, %d acked", s.ErrorsTotal, s.Errors, s.SessionsLost, s.EventsSent, s.Ack.N)
	}
	for deadline := time.Now().Add(60 * time.Second); srvA.Stats(false).Sessions+srvB.Stats(false).Sessions > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("sessions still running after the run: %d and %d", srvA.Stats(false).Sessions, srvB.Stats(false).Sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClusterURLFlag(t *testing.T) {
	for _, tc := range []struct {
		url     string
		want    []string
		wantErr string
	}{
		{"ws://a/ws", []string{"ws://a/ws"}, ""},
		{"ws://a/ws,ws://b/ws, ws://c/ws", []string{"ws://a/ws", "ws://b/ws", "ws://c/ws"}, ""},
		{"ws://a/ws,,ws://b/ws", nil, "an empty entry"},
		{"ws://a/ws,", nil, "an empty entry"},
		{"", nil, "an empty entry"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, err := parseFlags([]string{"-url", tc.url}, io.Discard)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			case !slices.Equal(c.urls, tc.want):
				t.Fatalf("urls %q, want %q", c.urls, tc.want)
			}
		})
	}
}

// The report says where sessions started and how many moved, in text
// and JSON, and a run on one node without moves reads as before.
func TestClusterReportLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       summary
		want    []string
		notWant []string
		json    []string
		notJSON []string
	}{
		{"one node, no moves", summary{}, nil, []string{"nodes", "moved   "}, []string{`"moved": {
    "sessions": 0,
    "hops": 0
  }`}, []string{`"nodes"`}},
		{"nodes and moves", summary{urls: []string{"ws://b", "ws://a"}, Nodes: map[string]int64{"ws://a": 3, "ws://b": 0, "ws://z": 2},
			Moved: moved{Sessions: 2, Hops: 3}},
			[]string{"nodes              ws://b: 0, ws://a: 3, ws://z: 2\n", "moved              2 sessions redirected (3 hops)\n"}, nil,
			[]string{`"nodes": {`, `"ws://z": 2`, `"sessions": 2`, `"hops": 3`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var text, js strings.Builder
			if err := tc.s.writeText(&text); err != nil {
				t.Fatal(err)
			}
			if err := tc.s.writeJSON(&js); err != nil {
				t.Fatal(err)
			}
			holds(t, text.String(), tc.want, tc.notWant)
			holds(t, js.String(), tc.json, tc.notJSON)
		})
	}
}

// holds checks that out has every string of want and none of notWant.
func holds(t *testing.T, out string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
	for _, w := range notWant {
		if strings.Contains(out, w) {
			t.Errorf("%q in\n%s", w, out)
		}
	}
}

// rawFrames encodes effect frames as a node sends them in a resume's ack.
func rawFrames(frs []service.EffectFrame) []json.RawMessage {
	var raw []json.RawMessage
	for i := range frs {
		b, err := json.Marshal(&frs[i])
		if err != nil {
			panic(err)
		}
		raw = append(raw, b)
	}
	return raw
}

// A node that stops answering (paused) past the ack deadline it
// advertised is given up: the session resumes on the next node, the
// events the silent node swallowed count as unanswered and never go
// again (it may have applied them), and the run goes on there.
func TestClusterSilentNode(t *testing.T) {
	fc := newFakeCluster()
	b, c := newFakeNode(t, fc, "b"), newFakeNode(t, fc, "c")
	b.ackDeadlineMS, c.ackDeadlineMS = 200, 200
	b.silent = make(chan struct{})
	t.Cleanup(func() { close(b.silent) }) // before the servers close
	b.ts.Start()
	c.ts.Start()
	// Session 0 starts on b, session 1 on c; b freezes at session 0's
	// first event. The run goes on until c has acked three of session
	// 0's events.
	s := runCluster(t, []string{b.url, c.url}, 2, func(*stats) bool {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		fs := fc.sessions["t_0"]
		return fs != nil && len(fs.acks) >= 3
	})
	if want := (moved{Sessions: 1, Hops: 1}); s.Moved != want {
		t.Errorf("moved %+v, want %+v", s.Moved, want)
	}
	if s.SessionsLost != 0 {
		t.Errorf("%d sessions lost, want none", s.SessionsLost)
	}
	if s.Unanswered == 0 {
		t.Error("no event counted unanswered; the silent node swallowed at least one")
	}
	if n := s.Errors["no answer within the ack deadline"]; n != 1 {
		t.Errorf("errors %v, want the silent node given up once", s.Errors)
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fs := fc.sessions["t_0"]
	if fs == nil || !slices.Equal(fs.resumes, []uint64{1}) {
		t.Fatalf("session t_0 resumed %+v, want once, on c, from the start's effect", fs)
	}
	for ev, nodes := range fs.acks {
		if !slices.Equal(nodes, []string{"c"}) {
			t.Errorf("session t_0 event %s acked by %v, want once by c", ev, nodes)
		}
	}
	if len(fs.acks) == 0 || !fs.ended {
		t.Errorf("session t_0: %d events acked on c, ended %v; want it carried on and ended there", len(fs.acks), fs.ended)
	}
}
