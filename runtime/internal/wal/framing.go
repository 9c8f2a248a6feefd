package wal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/batonhq/baton/engine"
)

// Magic starts every log file.
const Magic = "BTNWAL1\n"

// FormatVersion is the header's format number.
const FormatVersion = 1

// MaxRecord bounds one record's payload. A larger length field can only be
// corruption, so the reader stops there instead of allocating it.
const MaxRecord = 4 << 20

// MaxHeader bounds the header record, which carries the session's inputs
// and their files (rules.MaxInputFiles, base64 in JSON). A live log with
// no whole header is unborn only if it is no longer than Create's one
// write could make it.
const MaxHeader = MaxRecord

const maxUnborn = len(Magic) + frame + MaxHeader

// frame is the length and checksum before each record's payload.
const frame = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record kinds.
const (
	KindHeader = "header"
	KindInput  = "input"
	KindStep   = "step"
	KindEnd    = "end"
)

// Record is one log entry; exactly the field matching Kind is set.
type Record struct {
	Kind   string        `json:"k"`
	Seq    uint64        `json:"seq,omitempty"`
	Header *Header       `json:"header,omitempty"`
	Input  *engine.Input `json:"in,omitempty"`
	Step   *Step         `json:"step,omitempty"`
	End    *End          `json:"end,omitempty"`
}

// Header identifies what a session ran on, so a replay on a different
// engine or pack is reported instead of trusted.
type Header struct {
	Format   int    `json:"format"`
	Engine   string `json:"engine"`
	Pack     string `json:"pack"`
	PackRef  string `json:"pack_ref"`
	PackHash string `json:"pack_hash"`
	// Options are the engine options the session was built with.
	Options     engine.Options `json:"options"`
	SessionID   string         `json:"session_id"`
	CandidateID string         `json:"candidate_id"`
	// StartWall is the wall time of engine time 0.
	StartWall time.Time `json:"start_wall"`
	// Host is the host's own session options (webhooks, playback mode),
	// opaque to the log but needed to carry on after recovery.
	Host json.RawMessage `json:"host,omitempty"`
}

// Step holds digests of the effects one input produced.
type Step struct {
	Effects []EffectDigest `json:"effects"`
	// Err is the engine's error for the input, if it refused it.
	Err string `json:"err,omitempty"`
	// Scripts are the step's script calls stopped at their time budget:
	// the one outcome a replay cannot recompute, so it is recorded.
	Scripts *engine.ScriptFacts `json:"scripts,omitempty"`
	// StartWall is set on the step that started a session's clock after
	// it waited for prepared lines: engine time 0 is then, not at the
	// header's start_wall (when the log was created).
	StartWall *time.Time `json:"start_wall,omitempty"`
}

// EffectDigest names one effect and hashes its full JSON form.
type EffectDigest struct {
	T    int64             `json:"t"`
	Type engine.EffectType `json:"type"`
	ID   string            `json:"id,omitempty"`
	Hash string            `json:"h"`
}

// End closes a finished session.
type End struct {
	Reason string    `json:"reason"`
	T      int64     `json:"t_ms"`
	Wall   time.Time `json:"wall"`
}

// Digest summarizes effects for a step record. Effects are plain data with
// a fixed field order and no maps, so their JSON is canonical.
func Digest(effects []engine.Effect, stepErr error) Step {
	st := Step{Effects: make([]EffectDigest, len(effects)), Scripts: engine.FactsOf(effects)}
	for i := range effects {
		st.Effects[i] = DigestEffect(&effects[i])
	}
	if stepErr != nil {
		st.Err = stepErr.Error()
	}
	return st
}

// DigestEffect summarizes one effect.
func DigestEffect(e *engine.Effect) EffectDigest {
	b, err := json.Marshal(e)
	if err != nil {
		// An Effect is plain strings, ints and bools: Marshal cannot fail.
		panic(fmt.Sprintf("wal: encoding effect: %v", err))
	}
	sum := sha256.Sum256(b)
	return EffectDigest{T: e.T, Type: e.Type, ID: e.ID, Hash: hex.EncodeToString(sum[:8])}
}

// appendRecord frames r onto buf.
func appendRecord(buf []byte, r *Record) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return buf, fmt.Errorf("encoding %s record: %w", r.Kind, err)
	}
	if len(payload) > MaxRecord {
		return buf, fmt.Errorf("%s record of %d bytes exceeds %d", r.Kind, len(payload), MaxRecord)
	}
	var hdr [frame]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(payload, castagnoli))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...), nil
}
