package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock/clocktest"
)

// Tiny uploads are bounded as surely as large ones: each is counted with
// what keeping it costs, and the oldest go first.
func TestUploadStoreCountsEachUpload(t *testing.T) {
	u := newUploads(clocktest.NewFake(epoch), time.Hour, 64<<10)
	var first, last string
	for i := range 10_000 {
		sum := u.put(fmt.Appendf(nil, "%04d", i))
		if i == 0 {
			first = sum
		}
		last = sum
	}
	if n, most := len(u.byKey), (64<<10)/(4+uploadOverhead); n > most || u.total > 64<<10 {
		t.Fatalf("%d uploads, %d bytes held; at most %d uploads in 64 KiB", n, u.total, most)
	}
	if _, ok := u.get(first); ok {
		t.Fatal("the oldest upload was kept")
	}
	if _, ok := u.get(last); !ok {
		t.Fatal("the newest upload was dropped")
	}
}
