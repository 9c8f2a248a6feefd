package cluster

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// frameLen is the length and checksum before each record's payload.
const frameLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord frames r onto buf exactly as a local log file does.
//
// PRIVATE COPY of wal's unexported appendRecord (runtime/internal/wal/
// framing.go): the replicated log must write the very bytes a file holds,
// so that wal.Parse reads both alike. Replace it with
// wal.AppendRecord(dst []byte, r *wal.Record) ([]byte, error) once wal
// exports it; TestRoundTripMatchesFile fails if the two ever differ.
func appendRecord(buf []byte, r *wal.Record) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return buf, fmt.Errorf("encoding %s record: %w", r.Kind, err)
	}
	if len(payload) > wal.MaxRecord {
		return buf, fmt.Errorf("%s record of %d bytes exceeds %d", r.Kind, len(payload), wal.MaxRecord)
	}
	var hdr [frameLen]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(payload, castagnoli))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...), nil
}
