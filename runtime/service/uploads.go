package service

import (
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
	limit int64 // bytes held together

	mu    sync.Mutex
	total int64
	byKey map[string]*upload
	order []*upload // oldest first
}

type upload struct {
	sum  string
	data []byte
	at   time.Time
}

func newUploads(c clock.Clock, ttl time.Duration, limit int64) *uploads {
	return &uploads{clock: c, ttl: ttl, limit: limit, byKey: map[string]*upload{}}
}

// put keeps data and returns its SHA-256 (hex). Uploading the same
// content again renews it.
func (u *uploads) put(data []byte) string {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	now := u.clock.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if old, ok := u.byKey[sum]; ok {
		u.drop(old)
	}
	u.expire(now)
	for u.total+int64(len(data)) > u.limit && len(u.order) > 0 {
		u.drop(u.order[0])
	}
	up := &upload{sum: sum, data: data, at: now}
	u.byKey[sum] = up
	u.order = append(u.order, up)
	u.total += int64(len(data))
	return sum
}

// get is BindOptions.Upload: an upload's content by its SHA-256.
func (u *uploads) get(sum string) ([]byte, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire(u.clock.Now())
	up, ok := u.byKey[sum]
	if !ok {
		return nil, false
	}
	return up.data, true
}

// expire drops the uploads older than the TTL.
func (u *uploads) expire(now time.Time) {
	for len(u.order) > 0 && now.Sub(u.order[0].at) >= u.ttl {
		u.drop(u.order[0])
	}
}

func (u *uploads) drop(up *upload) {
	delete(u.byKey, up.sum)
	for i, o := range u.order {
		if o == up {
			u.order = append(u.order[:i], u.order[i+1:]...)
			break
		}
	}
	u.total -= int64(len(up.data))
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
