package wal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordStarts returns the offset of every record in a whole log.
func recordStarts(t *testing.T, data []byte) []int64 {
	t.Helper()
	var starts []int64
	for off := int64(len(Magic)); off < int64(len(data)); {
		starts = append(starts, off)
		off += frame + int64(binary.LittleEndian.Uint32(data[off:]))
	}
	return starts
}

// TestMidLogDamageNeverTruncates flips one bit in every byte of a log in
// turn. Anywhere before the last record it is damage: reported with its
// offset, the file untouched. Only in the last record is it a torn tail.
func TestMidLogDamageNeverTruncates(t *testing.T) {
	d := openDir(t, Options{})
	data, last := writeSample(t, d, "flip")
	starts := recordStarts(t, data)
	recordAt := func(off int64) int {
		i := 0
		for i+1 < len(starts) && starts[i+1] <= off {
			i++
		}
		return i
	}
	for i := int64(len(Magic)); i < int64(len(data)); i++ {
		b := bytes.Clone(data)
		b[i] ^= 1 << (i % 8)
		if err := os.WriteFile(d.LivePath("flip"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		l, rec, err := d.Open("flip")
		if i >= last {
			if err != nil || rec.Tail == nil || rec.Tail.Offset != last {
				t.Fatalf("flip at %d (last record): err %v tail %v, want a torn tail at %d", i, err, rec.Tail, last)
			}
			l.Close()
			continue
		}
		var dmg *DamageError
		if !errors.As(err, &dmg) {
			t.Fatalf("flip at %d: err %v, want damage", i, err)
		}
		if want := starts[recordAt(i)]; dmg.Offset != want || dmg.Record != recordAt(i) {
			t.Fatalf("flip at %d: damage at offset %d record %d, want %d record %d", i, dmg.Offset, dmg.Record, want, recordAt(i))
		}
		got, _ := os.ReadFile(d.LivePath("flip"))
		if !bytes.Equal(got, b) {
			t.Fatalf("flip at %d: the damaged file was changed (%d bytes, was %d)", i, len(got), len(b))
		}
	}
}

func TestDamageKinds(t *testing.T) {
	d := openDir(t, Options{})
	data, _ := writeSample(t, d, "kinds")
	starts := recordStarts(t, data)
	mid := starts[len(starts)/2]
	tests := []struct {
		name   string
		mangle func([]byte) []byte
		next   int64 // where the damage report says the next valid record is
	}{
		{"length huge", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[mid:], MaxRecord+1); return b }, starts[len(starts)/2+1]},
		{"length zero", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[mid:], 0); return b }, starts[len(starts)/2+1]},
		{"length past the end", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[mid:], uint32(len(b))); return b }, starts[len(starts)/2+1]},
		{"length one longer", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[mid:], binary.LittleEndian.Uint32(b[mid:])+1)
			return b
		}, starts[len(starts)/2+1]},
		{"zeroed page inside", func(b []byte) []byte { clear(b[mid+3 : mid+20]); return b }, starts[len(starts)/2+1]},
		{"record duplicated", func(b []byte) []byte {
			r := b[mid:starts[len(starts)/2+1]]
			return append(b[:mid+int64(len(r)):mid+int64(len(r))], append(bytes.Clone(r), b[mid+int64(len(r)):]...)...)
		}, -3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mangle(bytes.Clone(data))
			_, err := Parse(b)
			var dmg *DamageError
			if !errors.As(err, &dmg) {
				t.Fatalf("err %v, want damage", err)
			}
			if tc.next == -3 { // checksum holds: any next offset, but it is content damage
				if !strings.Contains(dmg.Reason, "content") {
					t.Fatalf("%v: want a content error", dmg)
				}
				return
			}
			if dmg.NextValid != tc.next {
				t.Fatalf("%v: next valid at %d, want %d", dmg, dmg.NextValid, tc.next)
			}
		})
	}
}

// A finished log was synced whole before it was renamed: a tail, a cut or
// a flip anywhere in it is damage.
func TestFinishedLogMustBeWhole(t *testing.T) {
	d := openDir(t, Options{})
	l, err := d.Create(testHeader("fin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range sampleInputs() {
		if _, err := l.AppendInput(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Finish(End{Reason: "done", T: 9}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(d.DonePath("fin"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := parse(data, true); err != nil || rec.End == nil {
		t.Fatalf("whole finished log: %v", err)
	}
	for i := len(Magic); i < len(data); i++ {
		b := bytes.Clone(data)
		b[i] ^= 0x10
		var dmg *DamageError
		if _, err := parse(b, true); !errors.As(err, &dmg) {
			t.Fatalf("flip at %d: %v, want damage", i, err)
		}
	}
	for cut := len(Magic); cut < len(data); cut += 7 {
		var dmg *DamageError
		if _, err := parse(data[:cut], true); !errors.As(err, &dmg) {
			t.Fatalf("cut at %d: %v, want damage", cut, err)
		}
	}
	if err := os.Chmod(d.DonePath("fin"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(data)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(d.DonePath("fin"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var dmg *DamageError
	if _, err := d.Read("fin"); !errors.As(err, &dmg) {
		t.Fatalf("Dir.Read of a damaged finished log: %v", err)
	}
	if _, err := ReadFile(d.DonePath("fin")); !errors.As(err, &dmg) {
		t.Fatalf("ReadFile of a damaged finished log: %v", err)
	}
}

// A crash inside Create leaves a log with no whole header. Nothing in it
// was acknowledged, so its id is free again.
func TestUnbornLogFreesItsID(t *testing.T) {
	d := openDir(t, Options{})
	full, _ := writeSample(t, d, "unborn")
	hdrEnd := recordStarts(t, full)[1]
	for _, size := range []int64{0, 3, int64(len(Magic)), int64(len(Magic)) + 5, hdrEnd - 1} {
		if err := os.WriteFile(d.LivePath("unborn"), full[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.Open("unborn"); !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrUnborn) {
			t.Fatalf("%d bytes: open %v, want not found (unborn)", size, err)
		}
		if _, err := os.Stat(d.LivePath("unborn")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%d bytes: unborn log still there: %v", size, err)
		}
		if size > 0 {
			// Removed, but never without a copy.
			sum := sha256.Sum256(full[:size])
			kept, err := os.ReadFile(filepath.Join(d.Path(), EvidenceDir, "unborn-"+hex.EncodeToString(sum[:6])+extLive))
			if err != nil || !bytes.Equal(kept, full[:size]) {
				t.Fatalf("%d bytes: no copy of the unborn log: %v", size, err)
			}
		}
		if err := os.WriteFile(d.LivePath("unborn"), full[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := d.Create(testHeader("unborn"))
		if err != nil {
			t.Fatalf("%d bytes: create over an unborn log: %v", size, err)
		}
		l.Close()
		os.Remove(d.LivePath("unborn"))
	}
	// A whole header is a born log, however short.
	if err := os.WriteFile(d.LivePath("unborn"), full[:hdrEnd], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(testHeader("unborn")); !errors.Is(err, ErrExists) {
		t.Fatalf("create over a header-only log: %v, want exists", err)
	}
}

// A directory entry can reach the disk before the header written under
// it: zeros, or part of the magic then zeros, with nothing valid after.
// That is a Create that never returned.
func TestZeroedHeaderIsUnborn(t *testing.T) {
	for _, data := range [][]byte{make([]byte, 300), append([]byte("BTNW"), make([]byte, 200)...), []byte(Magic[:3])} {
		if _, err := Parse(data); !errors.Is(err, ErrUnborn) {
			t.Fatalf("%q: %v, want unborn", data[:min(len(data), 12)], err)
		}
	}
	var dmg *DamageError
	if _, err := Parse(append(make([]byte, 300), 'x')); !errors.As(err, &dmg) {
		t.Fatalf("zeros then a byte: %v, want damage", err)
	}
	// Longer than Create ever writes: a zeroed log, not a torn creation.
	long := append([]byte(Magic), make([]byte, maxUnborn)...)
	for _, data := range [][]byte{make([]byte, maxUnborn+1), long} {
		if _, err := Parse(data); !errors.As(err, &dmg) {
			t.Fatalf("%d zeroed bytes: %v, want damage", len(data), err)
		}
	}
}

// A log this process is creating or holds open is never removed as
// unborn, whatever it looks like on disk: two starts of one id at once
// must not delete the first one's log.
func TestBusyLogIsNotUnborn(t *testing.T) {
	d := openDir(t, Options{})
	if !d.claim("x") {
		t.Fatal("claim")
	}
	if err := os.WriteFile(d.LivePath("x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(testHeader("x")); !errors.Is(err, ErrExists) {
		t.Fatalf("create while another create holds the id: %v", err)
	}
	if _, _, err := d.Open("x"); err == nil {
		t.Fatal("open while a create holds the id: no error")
	}
	if _, err := os.Stat(d.LivePath("x")); err != nil {
		t.Fatalf("the log being created was removed: %v", err)
	}
	d.release("x")
	l, err := d.Create(testHeader("x"))
	if err != nil {
		t.Fatalf("create once the id is free: %v", err)
	}
	if _, err := d.Create(testHeader("x")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create of an open log: %v", err)
	}
	l.Close()
	if _, err := d.Create(testHeader("x")); !errors.Is(err, ErrExists) {
		t.Fatalf("create over a closed whole log: %v", err)
	}
	l, _, err = d.Open("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(End{Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(testHeader("x")); !errors.Is(err, ErrFinished) {
		t.Fatalf("create over a finished log: %v", err)
	}
}
