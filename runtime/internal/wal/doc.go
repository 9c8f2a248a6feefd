// Package wal is the write-ahead log of live sessions. A session's log is
// a header and then every engine input in the order it was applied.
// Because the engine is deterministic, folding the inputs through a new
// engine.Session (Replay) rebuilds the session exactly; that one
// operation is crash recovery, `baton replay` and nondeterminism
// detection. Logs live in a Store: a data directory (Dir) or a replicated
// log (runtime/cluster).
//
// A data directory keeps every log in two layers: a journal shared by all
// sessions, through which every byte after a log's header passes first,
// and one file per session, written behind it. docs/journal.md tells why;
// docs/protocol.md ("Durability") says what clients are promised.
//
// # The journal
//
// Every write a Log makes after its header (an input record with any step
// record held before it, a held step record alone, the end record) is one
// entry of the journal: session id, offset in the session file, bytes.
// Entries queue in the batch being filled. One committer goroutine per
// directory takes the whole batch, everything queued while its previous
// sync ran, writes it to the current segment with one write call, makes it
// durable with one fdatasync (fsync off Linux; this is group commit) and
// closes the batch's channel, which wakes every Append waiting on it at
// once. A synced Append
// returns only then, and only then may its input be applied or
// acknowledged. An unsynced one joins the batch without waiting and
// becomes durable with the next synced one; a batch that reaches 4 MiB is
// written even if nobody waits for it, so memory stays bounded.
//
// A failed journal write or sync poisons the journal: the kernel may have
// dropped the dirty pages and cleared the error, so no later success
// would prove anything. That batch's waiters get the error, and so does
// every later write by any session: nothing is journaled after it.
//
// Segments, journal/NNNNNNNN.jnl, are retired once they reach
// Options.SegmentSize (16 MiB by default). When the current one is half
// full the next is prepared ahead of need, journal/next.spare, a
// segment's worth of synced zeros that rotation renames and writes over,
// so that an fdatasync of it has no size or block allocation to commit
// and does not wait for the file system's own journal. A new segment's directory entry is synced before anything in
// it is acknowledged. A checkpointer goroutine takes retired segments
// oldest first: it writes each session's pending bytes to its file, makes
// them durable with one syncfs of the file system (where it reports
// writeback errors, Linux 5.8 on; elsewhere each file is fsynced), and
// only then deletes the segment and syncs the journal folder. A file it
// cannot open or write keeps the segment for another try 100 ms later; a
// failed sync poisons the journal. Out of descriptors, the creation of a
// segment and the short opens of session files wait and try again rather
// than fail. Dir.Close writes the last batch, checkpoints every segment
// and removes the folder: a cleanly closed directory has no journal.
//
// # The session files
//
// A session's file is ID.wal while it runs and ID.done, read-only, once
// it has ended. Create writes the magic and the header with one write and
// syncs the file and the directory before it returns: the one write a
// session file gets ahead of the journal. After that a Log keeps what it
// journals as pending bytes in memory, and holds no descriptor between
// calls. The pending bytes reach the file at the checkpoint of the
// segment that holds them, or sooner: Finish writes them and fsyncs the
// file before renaming it to ID.done (a finished log is read without the
// journal); Close and Flush write them without a sync (the journal holds
// them); Dir.Open and Dir.Read of a session write its pending bytes
// before reading, so nothing read through the directory is behind the
// journal. A tool reading a session file from outside the process sees it
// as of its last such write: shorter, but a valid log.
//
// # On disk
//
// A session file starts with the magic "BTNWAL1\n" and continues with
// records, each framed as
//
//	length  uint32 little endian, bytes of payload (at most MaxRecord)
//	crc     uint32 little endian, CRC-32C (Castagnoli) of payload
//	payload JSON object (Record)
//
// The first record is the header (at most MaxHeader bytes). Input records
// follow, numbered from 1, each possibly followed by a step record with
// digests of the effects it produced, and a finished log ends with an end
// record. A step record is held in memory and written with the next
// record, in the same write; one lost in a crash only leaves its input
// unverified.
//
// A journal segment starts with the magic "BTNJNL2\n" and continues with
// batches, each what one write call wrote:
//
//	header  a frame as above (length 9, CRC-32C) around 'B', the body's
//	        length uint32 LE and the body's CRC-32C uint32 LE
//	body    entries, each a frame as above around
//	          id length uint8, then the session id
//	          offset uint64 LE, where the bytes start in the session file
//	          the bytes
//
// Segments of the first format ("BTNJNL1\n", entries without batches,
// never prepared) are still read.
//
// damaged/ keeps evidence: a damaged log's copy as ID-HASH.wal or
// ID-HASH.done beside a report ID-HASH.txt (Preserve), and, when redo
// could not repair a session, every journal segment as
// journal-NNNNNNNN-HASH.jnl. Copies are named by content, so a restart
// keeps no second one. LOCK holds the flock (on Unix) that keeps a second
// process out of the directory.
//
// # Recovery
//
// OpenDir redoes the journal before anything reads a session file. It
// reads the segments in order and, for each session with entries, skips
// it if ID.done exists (Finish synced it) or reports it missing if it has
// no file; otherwise it applies the entries in order, each as
// data = data[:offset] + bytes, drops whatever followed the last one
// (written after the last durable batch, never acknowledged), writes
// what changed, and fsyncs the file even when nothing did: after a
// process crash its bytes may be only in the page cache. Then it deletes
// the segments oldest first, so a crash during redo leaves a suffix of
// the journal, which redoes to the same files. Dir.Redo reports what it
// did.
//
// Dir.Open then reads a live log for appending: every valid record, with
// a torn tail cut and the cut synced. A live log with no whole header and no
// longer than Create's one write is unborn (ErrUnborn), a crash inside a
// Create that never returned: it is copied to damaged/ if it holds any
// byte, removed, and reported as ErrNotFound. Dir.Read reads a log
// without changing it; a finished log must be whole, end record included.
// CheckHeader refuses a log written by another engine version or with
// other pack contents, and Replay checks every recorded step against the
// effects the engine produces again.
//
// # Torn tail or damage
//
// A power cut leaves one kind of invalid bytes only: the end of a write
// that was never synced, so never acknowledged. That is a torn tail, and
// it is cut. Anything else is damage, synced bytes changed by the disk,
// the file system or a person: a *DamageError, never truncated, the file
// left as it was for someone to look at.
//
// In a session file, at the first record that fails its checks:
//
//   - a frame that fails (length zero or over MaxRecord, running past the
//     end of the file, checksum mismatch) with no verifying record (frame,
//     checksum and JSON all hold) at any later byte offset is a torn tail
//     in a live log, and damage in a finished one;
//   - a frame that fails with a verifying record after it is damage, and
//     so is one whose search for such a record would checksum more than
//     64 MiB;
//   - a record whose frame holds but whose content is wrong (JSON that is
//     not a Record, a first record that is not the header, a sequence
//     out of order, anything after the end record) is damage;
//   - a finished log without its end record is damage.
//
// In the journal only the last batch of the last segment can be torn. An
// invalid batch there with no valid batch after it is cut, whatever its
// bytes: writes over a prepared segment reach the disk a sector at a time
// in no set order, and only the batch's own checksum tells that from
// damage. An invalid batch followed by a valid one, an invalid batch in
// an earlier segment (synced whole before the next began), and an invalid
// entry inside a batch whose checksum holds are damage: OpenDir fails,
// naming the segment and the offset, and changes nothing. Zeros after a
// batch boundary are a prepared segment's unused end. A segment without
// its magic is torn if it is the last and nothing in it verifies, and
// damage otherwise. Segments of the first format follow the session
// file's rule, the last segment standing for a live log and the others
// for finished ones. An entry that starts past the end of its session's file
// means the bytes between are lost: redo leaves that file as it is, and
// Open and Read of the session return the *DamageError for as long as the
// process runs.
package wal
