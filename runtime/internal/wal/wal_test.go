package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
)

func testHeader(id string) Header {
	return Header{Engine: engine.Version, Pack: "dayone", PackRef: "dayone", PackHash: "abc", Options: engine.Options{Seed: 7},
		SessionID: id, CandidateID: "cand", StartWall: time.Date(2026, 2, 20, 23, 0, 0, 0, time.UTC)}
}

func openDir(t *testing.T, opt Options) *Dir {
	t.Helper()
	d, err := OpenDir(t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
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

func TestRoundTrip(t *testing.T) {
	d := openDir(t, Options{})
	var syncs int
	d.opt.OnSync = func(SyncKind, time.Duration) { syncs++ }
	l, err := d.Create(testHeader("sess_001"))
	if err != nil {
		t.Fatal(err)
	}
	ins := sampleInputs()
	for i, in := range ins {
		seq, err := l.AppendInput(in)
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("seq %d, want %d", seq, i+1)
		}
		if i%2 == 0 {
			if err := l.AppendStep(seq, Step{Effects: []EffectDigest{{T: in.T, Type: engine.EffectNote, Hash: "00"}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if syncs != len(ins)+2 {
		t.Errorf("%d syncs, want one per input plus the header's two (its file, its entry in the journal) (%d)", syncs, len(ins)+2)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rec, err := d.Open("sess_001")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tail != nil {
		t.Fatalf("unexpected tail: %v", rec.Tail)
	}
	want := testHeader("sess_001")
	want.Format = FormatVersion
	if !reflect.DeepEqual(rec.Header, want) {
		t.Errorf("header\n got %+v\nwant %+v", rec.Header, want)
	}
	if !reflect.DeepEqual(rec.Inputs, ins) {
		t.Errorf("inputs\n got %+v\nwant %+v", rec.Inputs, ins)
	}
	for i, st := range rec.Steps {
		if (st != nil) != (i%2 == 0) {
			t.Errorf("step %d present=%v", i+1, st != nil)
		}
	}
	// Appending after recovery continues the sequence.
	if seq, err := l2.AppendInput(engine.Input{T: 3000, Type: engine.InputAdvance}); err != nil || seq != 6 {
		t.Fatalf("append after open: seq %d err %v", seq, err)
	}
	if err := l2.Finish(End{Reason: "session_complete", T: 3000, Wall: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.State("sess_001"); st != StateDone {
		t.Fatalf("state %v after finish, want done", st)
	}
	fi, err := os.Stat(d.DonePath("sess_001"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("finished log is writable: %v", fi.Mode())
	}
	rec, err = ReadFile(d.DonePath("sess_001"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.End == nil || rec.End.Reason != "session_complete" || len(rec.Inputs) != 6 {
		t.Fatalf("finished log: end %+v, %d inputs", rec.End, len(rec.Inputs))
	}
	if _, _, err := d.Open("sess_001"); !errors.Is(err, ErrFinished) {
		t.Errorf("open finished: %v, want ErrFinished", err)
	}
	if _, err := d.Create(testHeader("sess_001")); !errors.Is(err, ErrFinished) {
		t.Errorf("create over finished: %v, want ErrFinished", err)
	}
	if _, err := l2.AppendInput(engine.Input{T: 4000, Type: engine.InputAdvance}); !errors.Is(err, ErrClosed) {
		t.Errorf("append after finish: %v, want ErrClosed", err)
	}
	live, err := d.Live()
	if err != nil || len(live) != 0 {
		t.Errorf("live after finish: %v %v", live, err)
	}
}

func TestCreateExisting(t *testing.T) {
	d := openDir(t, Options{})
	l, err := d.Create(testHeader("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := d.Create(testHeader("a")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if _, _, err := d.Open("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open missing: %v, want ErrNotFound", err)
	}
}

// writeSample writes a log with the sample inputs and returns its bytes
// and the offset where the last record starts.
func writeSample(t *testing.T, d *Dir, id string) ([]byte, int64) {
	t.Helper()
	l, err := d.Create(testHeader(id))
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, in := range sampleInputs() {
		last = l.Size()
		if _, err := l.AppendInput(in); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(d.LivePath(id))
	if err != nil {
		t.Fatal(err)
	}
	return data, last
}

func TestTornTailTruncated(t *testing.T) {
	d := openDir(t, Options{})
	data, last := writeSample(t, d, "torn")
	n := len(sampleInputs())
	// Every cut inside the last record must drop exactly that record.
	for cut := last + 1; cut < int64(len(data)); cut++ {
		if err := os.WriteFile(d.LivePath("torn"), data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		l, rec, err := d.Open("torn")
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if rec.Tail == nil || !rec.Tail.Torn || rec.Tail.Offset != last || rec.Tail.Bytes != cut-last {
			t.Fatalf("cut at %d: tail %+v, want torn at %d", cut, rec.Tail, last)
		}
		if len(rec.Inputs) != n-1 {
			t.Fatalf("cut at %d: %d inputs, want %d", cut, len(rec.Inputs), n-1)
		}
		// The file was truncated, and a new append lands right after the
		// last good record.
		if seq, err := l.AppendInput(sampleInputs()[n-1]); err != nil || seq != uint64(n) {
			t.Fatalf("cut at %d: append seq %d err %v", cut, seq, err)
		}
		l.Close()
		rec, err = ReadFile(d.LivePath("torn"))
		if err != nil || rec.Tail != nil || len(rec.Inputs) != n {
			t.Fatalf("cut at %d: after repair: tail %v, %d inputs, err %v", cut, rec.Tail, len(rec.Inputs), err)
		}
	}
}

func TestCorruptRecords(t *testing.T) {
	d := openDir(t, Options{})
	data, last := writeSample(t, d, "bad")
	n := len(sampleInputs())
	tests := []struct {
		name   string
		mangle func(b []byte)
		reason string
	}{
		{"crc flipped", func(b []byte) { b[last+4] ^= 0xff }, "checksum"},
		{"payload bit flip", func(b []byte) { b[len(b)-2] ^= 0x01 }, "checksum"},
		{"length zero", func(b []byte) { binary.LittleEndian.PutUint32(b[last:], 0) }, "length"},
		{"length huge", func(b []byte) { binary.LittleEndian.PutUint32(b[last:], MaxRecord+1) }, "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(data)
			tc.mangle(b)
			if err := os.WriteFile(d.LivePath("bad"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			l, rec, err := d.Open("bad")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if rec.Tail == nil || rec.Tail.Offset != last || !strings.Contains(rec.Tail.Reason, tc.reason) {
				t.Fatalf("tail %+v, want %q at %d", rec.Tail, tc.reason, last)
			}
			if len(rec.Inputs) != n-1 {
				t.Fatalf("%d inputs, want %d", len(rec.Inputs), n-1)
			}
			if fi, _ := os.Stat(d.LivePath("bad")); fi.Size() != last {
				t.Fatalf("file is %d bytes, want truncated to %d", fi.Size(), last)
			}
		})
	}
}

func TestBadHeader(t *testing.T) {
	d := openDir(t, Options{})
	data, _ := writeSample(t, d, "hdr")
	b := bytes.Clone(data)
	b[len(Magic)+10] ^= 0xff // inside the header record
	if err := os.WriteFile(d.LivePath("hdr"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var dmg *DamageError
	if _, _, err := d.Open("hdr"); !errors.As(err, &dmg) || dmg.Record != 0 || dmg.NextValid < 0 {
		t.Fatalf("open with corrupt header and records after it: %v, want damage at record 0", err)
	}
	if _, err := Parse([]byte("garbage")); err == nil {
		t.Fatal("parse garbage: no error")
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"sess_001", true},
		{"A-z_9", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"../etc/passwd", false},
		{"a/b", false},
		{`a\b`, false},
		{".", false},
		{"..", false},
		{"a.wal", false},
		{"a b", false},
		{"a\x00b", false},
		{"sess\n", false},
		{"é", false},
	}
	for _, tc := range tests {
		err := ValidID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("ValidID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadID) {
			t.Errorf("ValidID(%q) error %v is not ErrBadID", tc.id, err)
		}
	}
	d := openDir(t, Options{})
	if _, err := d.Create(testHeader("../x")); !errors.Is(err, ErrBadID) {
		t.Errorf("create ../x: %v", err)
	}
	if _, _, err := d.Open("../x"); !errors.Is(err, ErrBadID) {
		t.Errorf("open ../x: %v", err)
	}
}

func TestDirLock(t *testing.T) {
	dir := t.TempDir()
	d1, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second OpenDir: %v, want in use", err)
	}
	d1.Close()
	d2, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatalf("OpenDir after release: %v", err)
	}
	d2.Close()
}

// TestReplayEquality logs a whole dry run the way the service does and
// checks that replaying the log gives the dry run's effects exactly, with
// every step verified.
func TestReplayEquality(t *testing.T) {
	p, err := (&packs.Resolver{Bundled: scenarios.FS}).Open("dayone")
	if err != nil {
		t.Fatal(err)
	}
	events, err := loadCandidate(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Run(p, dryrun.Options{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	d := openDir(t, Options{NoSync: true})
	h := testHeader("replay")
	h.PackHash = p.Hash
	l, err := d.Create(h)
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{})
	var want []engine.Effect
	var buf []engine.Effect
	for _, in := range res.Inputs {
		seq, err := l.AppendInput(in)
		if err != nil {
			t.Fatal(err)
		}
		var stepErr error
		buf, stepErr = s.Step(in, buf[:0])
		if err := l.AppendStep(seq, Digest(buf, stepErr)); err != nil {
			t.Fatal(err)
		}
		want = append(want, buf...)
	}
	if err := l.Finish(End{Reason: "session_complete", T: s.Now()}); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(res.Records) {
		t.Fatalf("logging run gave %d effects, dry run %d", len(want), len(res.Records))
	}
	rec, err := ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHeader(&rec.Header, p); err != nil {
		t.Fatal(err)
	}
	var got []engine.Effect
	rr, err := Replay(p, rec, func(_ uint64, _ *engine.Input, effects []engine.Effect, _ error) {
		got = append(got, effects...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Mismatches) != 0 || rr.Unverified != 0 {
		t.Fatalf("replay: %d mismatches (%v), %d unverified", len(rr.Mismatches), rr.Mismatches, rr.Unverified)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("replayed effects differ from the recorded run")
	}
	if !rr.Session.Ended() {
		t.Fatal("replayed session did not end")
	}

	// A tampered input must be reported as a mismatch, not accepted.
	for i := range rec.Inputs {
		if in := &rec.Inputs[i]; in.Type == engine.InputLLMResult && in.LLM.Err == nil {
			in.LLM.Text = "Something else entirely. Is this still deterministic?"
			break
		}
	}
	rr, err = Replay(p, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Mismatches) == 0 {
		t.Fatal("tampered log replayed without a mismatch")
	}
	if s := rr.Mismatches[0].String(); !strings.Contains(s, "differs") {
		t.Errorf("mismatch text %q", s)
	}

	// A different pack hash is refused.
	rec.Header.PackHash = "0000"
	if err := CheckHeader(&rec.Header, p); err == nil {
		t.Fatal("CheckHeader accepted a different pack hash")
	}
}

func loadCandidate(p *rules.Pack) ([]events.Timed, error) {
	f, err := p.FS.Open(p.DryRun.Candidate)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return events.ReadAll(f)
}

func TestReadFileMissing(t *testing.T) {
	if _, err := ReadFile(filepath.Join(t.TempDir(), "x.wal")); err == nil {
		t.Fatal("no error for a missing file")
	}
}
