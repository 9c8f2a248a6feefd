package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// TestCorruptMessage: bytes that are not whole records, wherever they are
// in a session's messages, make Open and Read fail with a *DamageError
// naming the stream and message, never a torn tail to cut: a stored
// message cannot be torn. Preserve keeps the bytes and says why.
func TestCorruptMessage(t *testing.T) {
	goodRecord := func(t *testing.T, seq uint64) []byte {
		b, err := appendRecord(nil, &wal.Record{Kind: wal.KindInput, Seq: seq, Input: in(1)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		header  bool // the session is created normally first
		publish func(t *testing.T) [][]byte
		reason  string
	}{
		{"garbage at the end", true, func(t *testing.T) [][]byte { return [][]byte{[]byte("garbage, not a record")} }, "not a torn write"},
		{"cut record at the end", true, func(t *testing.T) [][]byte { return [][]byte{goodRecord(t, 2)[:20]} }, "not a torn write"},
		{"garbage before a valid record", true, func(t *testing.T) [][]byte {
			return [][]byte{[]byte("\xff\xff\xff\xffjunk"), goodRecord(t, 2)}
		}, "a valid record follows"},
		{"record that is not one", true, func(t *testing.T) [][]byte { return [][]byte{rawFrame([]byte(`{"k":"input","seq":2,"bogus":true}`))} }, "record content"},
		{"no log at all", false, func(t *testing.T) [][]byte { return [][]byte{[]byte("hello")} }, "bad magic"},
		{"part of the magic", false, func(t *testing.T) [][]byte { return [][]byte{[]byte("BTNW")} }, "no whole header"},
	}
	cfg := soloConfig(t)
	c := node(t, cfg, "a")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("d%d", i)
			if tt.header {
				l, err := c.Store().Create(testHeader(id))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Append(*in(0), true); err != nil {
					t.Fatal(err)
				}
				l.Close()
			}
			for _, p := range tt.publish(t) {
				publishRaw(t, c, id, p)
			}
			_, _, err := c.Store().Open(id)
			var dmg *wal.DamageError
			if !errors.As(err, &dmg) {
				t.Fatalf("Open: %v, want a *wal.DamageError", err)
			}
			if !strings.Contains(err.Error(), "stream "+cfg.Stream+", message ") || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Open: %v; want the stream, the message and %q", err, tt.reason)
			}
			if _, err := c.Store().Read(id); !errors.As(err, &dmg) {
				t.Fatalf("Read: %v, want a *wal.DamageError", err)
			}
			path, err := c.Store().Preserve(id, err, testHeader(id).StartWall)
			if err != nil {
				t.Fatal(err)
			}
			kept, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kept, rawLog(t, c, id)) {
				t.Fatal("the evidence copy is not the log's bytes")
			}
			report, err := os.ReadFile(strings.TrimSuffix(path, ".wal") + ".txt")
			if err != nil || !strings.Contains(string(report), dmg.Reason) {
				t.Fatalf("report %q, %v: want the reason", report, err)
			}
			if again, err := c.Store().Preserve(id, err, testHeader(id).StartWall); err != nil || again != path {
				t.Fatalf("preserving again: %q, %v; want %q", again, err, path)
			}
		})
	}
}

// rawFrame frames payload as a record would be, whatever it holds.
func rawFrame(payload []byte) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, castagnoli))
	return append(out, payload...)
}
