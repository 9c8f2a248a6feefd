package service

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

// Uploads are files a client sends before the start that names them by
// their SHA-256: a session's input files too large for a start frame.
//
// The store is kept in memory, not under the data directory. An upload
// is material for a start that is about to happen, nothing more: the
// start resolves it into the session's inputs, and the session's log
// keeps its own copy in its header (rules.Inputs.Supplied), so recovery
// and replay never need the upload again. Writing uploads to disk would
// buy durability nobody reads, and add files to sync and sweep; in a
// cluster the data directory is the node's own in any case. What a
// restart loses, a client uploads again (its start answers
// input_upload_unknown).
type uploads struct {
	clock clock.Clock
	ttl   time.Duration
	limit int64 // bytes held together, each upload's overhead counted

	mu    sync.Mutex
	total int64
	byKey map[string]*list.Element // of *upload
	order list.List                // oldest first
}

type upload struct {
	sum  string
	data []byte
	at   time.Time
}

// uploadOverhead is what an upload costs besides its bytes (its entry,
// key and list element), counted against the limit so a flood of tiny
// uploads is bounded as surely as a few large ones.
const uploadOverhead = 256

func (up *upload) cost() int64 { return int64(len(up.data)) + uploadOverhead }

func newUploads(c clock.Clock, ttl time.Duration, limit int64) *uploads {
	return &uploads{clock: c, ttl: ttl, limit: limit, byKey: map[string]*list.Element{}}
}

// put keeps data and returns its SHA-256 (hex). Uploading the same
// content again renews it.
func (u *uploads) put(data []byte) string {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	now := u.clock.Now()
	up := &upload{sum: sum, data: data, at: now}
	u.mu.Lock()
	defer u.mu.Unlock()
	if old, ok := u.byKey[sum]; ok {
		u.drop(old)
	}
	u.expire(now)
	for u.total+up.cost() > u.limit && u.order.Len() > 0 {
		u.drop(u.order.Front())
	}
	u.byKey[sum] = u.order.PushBack(up)
	u.total += up.cost()
	return sum
}

// get is BindOptions.Upload: an upload's content by its SHA-256.
func (u *uploads) get(sum string) ([]byte, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire(u.clock.Now())
	e, ok := u.byKey[sum]
	if !ok {
		return nil, false
	}
	return e.Value.(*upload).data, true
}

// expire drops the uploads older than the TTL.
func (u *uploads) expire(now time.Time) {
	for e := u.order.Front(); e != nil && now.Sub(e.Value.(*upload).at) >= u.ttl; e = u.order.Front() {
		u.drop(e)
	}
}

func (u *uploads) drop(e *list.Element) {
	up := u.order.Remove(e).(*upload)
	delete(u.byKey, up.sum)
	u.total -= up.cost()
}

// UploadResponse answers POST /v1/uploads.
type UploadResponse struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// handleUpload is POST /v1/uploads: the body is the file's bytes, kept
// for a start that names {"sha256": ...} in an input.
func (srv *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	data, pe := srv.readBody(w, r, srv.cfg.MaxUploadBytes)
	if pe != nil {
		srv.WriteError(w, pe)
		return
	}
	sum := srv.uploads.put(data)
	srv.log.Info("upload kept", "sha256", sum, "size", len(data), "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, UploadResponse{SHA256: sum, Size: int64(len(data))})
}
