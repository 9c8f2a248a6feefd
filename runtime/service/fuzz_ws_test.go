package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/llm"
)

// fuzzCodes are the error codes a WebSocket client may be sent.
var fuzzCodes = map[string]bool{
	CodeBadJSON: true, CodeBadFrame: true, CodeUnknownType: true, CodeBadEvent: true, CodeUnknownEventType: true,
	CodeTimeBackwards: true, CodeTooLarge: true, CodeRateLimited: true, CodeNoSession: true, CodeAlreadyBound: true,
	CodeBadSessionID: true, CodeSessionExists: true, CodeSessionNotFound: true, CodeSessionEnded: true,
	CodeSessionFailed: true, CodeBadPack: true, CodeUnknownMessage: true, CodeNotClientPlayed: true, CodeBusy: true,
	CodeStorage: true, CodeInternal: true, CodeShuttingDown: true,
}

// FuzzSessionFrames feeds a live session what a WebSocket client sends:
// the input is split into frames at newlines and each goes through the
// function the connection's reader calls for a frame it read (rate limit,
// size limit, parse, checks, the session's inbox, the engine step, the
// reply), on a connection bound to a fresh session of a server started
// once per fuzzing process. A line "+N" moves the server's clock N ms on;
// a line starting with a 0x02 byte is sent as a binary frame.
//
// Every reply must be a well-formed frame with a known code, every frame
// must get exactly one reply, effects must be numbered without gaps, acks
// must not go back in time, and a valid event sent last must still be
// acknowledged (or refused as session_ended, when the frames ended it).
func FuzzSessionFrames(f *testing.F) {
	for _, s := range []string{
		`{"id":"e1","type":"event","event":{"event_type":"candidate_message","ts_sec":0.5,"data":{"source":"voice","text":"I'd replay the failed payment and check the gateway logs.","stt_confidence":0.93,"addressed_to":"tech_lead"}}}`,
		"+1000\n" + `{"id":"m","type":"event","event":{"event_type":"mic_state_changed","data":{"mic_active":true}}}` + "\n" +
			`{"id":"f","type":"event","event":{"event_type":"speech_end","ts_sec":100000}}` + "\n+2000\n" +
			`{"id":"n","type":"event","event":{"event_type":"speech_end","ts_ms":2500}}`,
		`{"id":"t1","type":"tool_call","tool":{"id":"call-1","name":"transfer","role":"qa","args":{"colleague":"priya"}}}` + "\n" +
			`{"id":"a1","type":"agent_transcript","agent":{"role":"tech_lead","text":"How do the tokens reach the new processor?"}}`,
		`{"id":"d1","type":"speech_done","message_id":"m3","interrupted":true}` + "\n" + `{"id":"p","type":"ping"}`,
		`{"id":"s","type":"start","pack":"frames","session_id":"other"}` + "\n" + `{"id":"r","type":"resume","session_id":"other","last_seq":1}`,
		"+700000\n" + `{"id":"late","type":"event","event":{"event_type":"speech_end"}}`,
		`{"id":"x","type":"end","reason":"candidate_left"}` + "\n" + `{"id":"y","type":"event","event":{"event_type":"speech_end"}}`,
		"nope\n[]\n{\"id\":7}\n\x02{}\n" + `{"id":"u","type":"fly"}` + "\n" + `{"id":"k","type":"ping","colour":"red"}`,
		`{"id":"k","type":"ping","` + strings.Repeat("k", 200) + `":1}` + "\n" + `{"id":"a","type":"agent_transcript","agent":{"role":"` + strings.Repeat("r", 200) + `","text":"hi"}}`,
		`{"id":"b","type":"event","event":{"event_type":"Dance!","ts_ms":1}}` + "\n" + `{"id":"c","type":"event","event":{"event_type":"speech_end","ts_ms":5,"ts_sec":1}}`,
	} {
		f.Add([]byte(s))
	}
	fz := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's minimizer is quadratic in an input's length: a long input
		// that turns up new coverage would stall the search for up to
		// -fuzzminimizetime while it is cut down. A kilobyte holds five
		// to ten frames.
		if len(data) > 1<<10 {
			return
		}
		fz.run(t, data)
	})
}

type fuzzServer struct {
	srv   *Server
	clk   *clocktest.Fake
	nonce uint32
	next  atomic.Int64
}

func newFuzzServer(f testing.TB) *fuzzServer {
	// Creating and finishing a log syncs its directory even without
	// fsync of the inputs: in memory that costs nothing.
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "baton-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	clk := clocktest.NewFake(epoch)
	srv, err := New(Config{
		DataDir: dir, Dev: true, Clock: clk, Packs: os.DirFS("testdata"), NoSync: true,
		// Discarded before it is formatted: formatting costs time and,
		// with values that differ from run to run, coverage that is noise.
		Logger: slog.New(slog.DiscardHandler),
		// The limits are the connection's business, tested elsewhere;
		// here every frame should reach the session.
		EventRate: 1e9, EventBurst: 1 << 30, SendQueue: 1024, MaxMessageBytes: 4 << 10,
		// A model that never answers, and is never given up on within a
		// run, leaves nothing to happen off the session's goroutine: the
		// fuzzer's coverage of a run does not depend on scheduling (it
		// would take every run for new coverage and spend its time
		// minimizing). The engine's own request timeouts still fire.
		Model:    func(string, *rules.Pack, clock.Clock) llm.Answerer { return neverModel{} },
		LLMGrace: 100000 * time.Hour,
	})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return &fuzzServer{srv: srv, clk: clk, nonce: rand.Uint32()}
}

// fuzzReplies checks what a connection is sent, frame by frame.
type fuzzReplies struct {
	t       *testing.T
	replies int // acks, pongs and errors
	lastSeq uint64
	lastT   int64
	byID    map[string]ServerFrame
}

func (r *fuzzReplies) check(b []byte) {
	t := r.t
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f ServerFrame
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("reply %q: %v", b, err)
	}
	switch f.Type {
	case FrameError:
		if !fuzzCodes[f.Code] || f.Message == "" || len(f.ID) > MaxFrameID {
			t.Fatalf("error frame %.300q", b)
		}
		if clipMessage(f.Message) != f.Message {
			t.Fatalf("error message quotes more than %d bytes of a value or is over %d bytes: %.300q", maxEcho, maxErrorMessage, f.Message)
		}
		if f.Code == CodeSessionFailed && f.ID == "" {
			return // told to every watcher, answering no frame
		}
	case FrameAck:
		if f.ID == "" {
			t.Fatalf("ack without id: %s", b)
		}
		if f.T != nil {
			if *f.T < r.lastT {
				t.Fatalf("ack at %d after one at %d: %s", *f.T, r.lastT, b)
			}
			r.lastT = *f.T
		}
		for _, e := range f.Missed {
			r.effect(e.Seq)
		}
	case FramePong:
		if f.ID == "" {
			t.Fatalf("pong without id: %s", b)
		}
	case FrameEffect:
		if f.Effect == nil {
			t.Fatalf("effect frame without effect: %s", b)
		}
		r.effect(f.Seq)
		return
	case FrameNotice:
		return
	default:
		t.Fatalf("frame of type %q: %s", f.Type, b)
	}
	r.replies++
	if f.ID != "" {
		r.byID[f.ID] = f
	}
}

func (r *fuzzReplies) effect(seq uint64) {
	if seq != r.lastSeq+1 {
		r.t.Fatalf("effect seq %d after %d", seq, r.lastSeq)
	}
	r.lastSeq = seq
}

func (fz *fuzzServer) run(t *testing.T, data []byte) {
	srv := fz.srv
	// A session id no fuzzed frame will name by chance, of the same
	// length in every run: the fuzzer counts loop turns, and a longer id
	// would read to it as new behaviour.
	id := fmt.Sprintf("fz%08x-%012d", fz.nonce, fz.next.Add(1))
	// Every run starts on a whole minute, so that the times it prints
	// have the same digits in every run of the same input.
	now := fz.clk.Now()
	fz.clk.Advance(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	c := srv.newConn(nil, srv.log)
	defer c.kill(websocket.CloseNormalClosure, "", false)
	r := &fuzzReplies{t: t, byID: map[string]ServerFrame{}}
	sent := 0
	send := func(typ int, frame []byte) {
		t.Helper()
		sent++
		if err := c.frame(typ, bytes.NewReader(frame), fz.clk.Now()); err != nil {
			t.Fatalf("frame %.200q: %v", frame, err)
		}
		if c.stopped() {
			t.Fatalf("connection closed (%d %s) after frame %.200q", c.code, c.reason, frame)
		}
	}
	// ask sends one of the run's own frames and returns its answer. The
	// session has settled, so every answer to an earlier frame is queued
	// already and a fuzzed frame with the same id cannot be mistaken for it.
	ask := func(frameID string, frame []byte) ServerFrame {
		t.Helper()
		for len(c.sendq) > 0 {
			r.check(<-c.sendq)
		}
		delete(r.byID, frameID)
		send(websocket.TextMessage, frame)
		timeout := time.After(waitLimit)
		for {
			if f, ok := r.byID[frameID]; ok {
				return f
			}
			select {
			case b := <-c.sendq:
				r.check(b)
			case <-timeout:
				t.Fatalf("no reply to %s", frameID)
			}
		}
	}

	if a := ask("start", mustJSON(map[string]any{"id": "start", "type": "start", "pack": "frames", "session_id": id})); a.Type != FrameAck {
		t.Fatalf("start: %+v", a)
	}
	defer fz.reset(t)

	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 64 {
		lines = lines[:64]
	}
	for _, line := range lines {
		if ms, ok := bytes.CutPrefix(line, []byte("+")); ok {
			if n, err := strconv.ParseUint(string(ms), 10, 20); err == nil {
				fz.clk.Advance(time.Duration(n) * time.Millisecond)
				settle(t, c.sess)
				continue
			}
		}
		typ := websocket.TextMessage
		if len(line) > 0 && line[0] == 2 {
			typ = websocket.BinaryMessage
		}
		send(typ, line)
		if f, pe := parseFrame(line); pe == nil && f.Type != FramePing {
			settle(t, c.sess) // the frame went to a session
		}
	}
	final := ask("final~", []byte(`{"id":"final~","type":"event","event":{"event_type":"candidate_message","data":{"text":"still there?"}}}`))
	switch {
	case final.Type == FrameAck:
	case final.Type == FrameError && final.Code == CodeSessionEnded:
	default:
		t.Fatalf("a valid event after the frames: %+v", final)
	}
	settle(t, c.sess)
	for len(c.sendq) > 0 {
		r.check(<-c.sendq)
	}
	if r.replies != sent {
		t.Fatalf("%d frames sent, %d answered", sent, r.replies)
	}
}

// reset ends every session, waits for them and their model calls to
// stop and removes their logs and archives, so that a long run holds
// none from one input to the next (and a failed run does not hold up the
// next). An archive left behind would cost every later session's end:
// archive.Write reads the whole archive folder.
func (fz *fuzzServer) reset(t *testing.T) {
	srv := fz.srv
	srv.mu.Lock()
	var live []*session
	for _, s := range srv.sessions {
		live = append(live, s)
	}
	srv.mu.Unlock()
	for _, s := range live {
		s.post(context.Background(), &evMsg{input: &engine.Input{Type: engine.InputEnd, End: &engine.EndRequest{Reason: "fuzz"}}})
		select {
		case <-s.done:
		case <-time.After(waitLimit):
			t.Errorf("session %s still running after its end", s.id)
			return
		}
	}
	stopped := make(chan struct{})
	go func() { srv.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(waitLimit):
		t.Error("model calls still running after their sessions ended")
		return
	}
	ents, _ := os.ReadDir(srv.cfg.DataDir)
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".done") || strings.HasSuffix(n, ".wal") {
			os.Remove(filepath.Join(srv.cfg.DataDir, n))
		}
	}
	arch := filepath.Join(srv.cfg.DataDir, ArchiveDir)
	ents, _ = os.ReadDir(arch)
	for _, e := range ents {
		p := filepath.Join(arch, e.Name())
		archive.Unlock(p) // archives are read-only
		if err := os.RemoveAll(p); err != nil {
			t.Errorf("removing archive: %v", err)
		}
	}
}

// settle waits until a session has handled everything sent to it and
// everything due at the current time, so that a run does not depend on
// how goroutines happen to be scheduled.
func settle(t *testing.T, s *session) {
	t.Helper()
	if s == nil {
		return
	}
	deadline := time.Now().Add(waitLimit)
	for {
		reply := make(chan sessionStatus, 1)
		if s.post(context.Background(), statusMsg{reply: reply}) != nil {
			exited(t, s)
			return
		}
		var st sessionStatus
		select {
		case st = <-reply:
		case <-s.done:
			return
		}
		if st.Ended {
			// An ended session exits at once; waiting for it keeps the
			// next frame from racing its exit (answered by the session
			// or by its closed inbox).
			exited(t, s)
			return
		}
		if st.Inbox == 0 && (!st.HasWake || st.Wake > st.Now) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session did not settle: %+v", st)
		}
		runtime.Gosched()
	}
}

// exited waits for a session that is stopping to be gone.
func exited(t *testing.T, s *session) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		t.Fatalf("session %s did not exit", s.id)
	}
}

// neverModel never answers a request.
type neverModel struct{}

func (neverModel) Answer(context.Context, string, *engine.LLMRequest) llm.Answer {
	return llm.Answer{Never: true}
}
