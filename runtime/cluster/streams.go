package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Session logs over several streams. One JetStream stream is one raft
// group: every write of every session goes through its leader, so one
// stream caps a cluster's write rate at what one server's leader can do
// (docs/scaling.md). With Config.Streams above 1 the logs are spread
// over that many streams by a hash of the session id, and with them their
// leaders over the servers.
//
// Layout, with prefix the subject prefix and STREAM the stream name:
//
//	Streams 1 (the default, and the only layout before there were more):
//	  stream STREAM, subject prefix.<id>
//	Streams N > 1:
//	  streams STREAM_0 … STREAM_<N-1>; id's log is in STREAM_<k>, subject
//	  prefix.<k>.<id>, k = fnv32a(id) mod N
//
// Every node must use the same layout, or a session's nodes would look
// for its log in different streams. Each stream records N in its
// metadata, and a node refuses to start on a layout other than its own.

// ErrLayout is wrapped by the error of a node started for another stream
// layout than the cluster's: asking again will not help.
var ErrLayout = errors.New("another stream layout")

// maxStreams bounds Config.Streams: past a few hundred streams the raft
// groups cost more than they spread.
const maxStreams = 256

// streamsKey is the stream metadata entry that records the layout.
const streamsKey = "baton_streams"

// partition is which stream holds id's log.
func (c *Cluster) partition(id string) int {
	if c.cfg.Streams == 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(c.cfg.Streams))
}

// streamName is the k-th stream of the layout.
func (c *Cluster) streamName(k int) string {
	if c.cfg.Streams == 1 {
		return c.cfg.Stream
	}
	return c.cfg.Stream + "_" + strconv.Itoa(k)
}

// streamOf is the stream that holds id's log.
func (c *Cluster) streamOf(id string) string { return c.streamName(c.partition(id)) }

// subject is id's log's subject.
func (c *Cluster) subject(id string) string {
	if c.cfg.Streams == 1 {
		return c.cfg.SubjectPrefix + "." + id
	}
	return c.cfg.SubjectPrefix + "." + strconv.Itoa(c.partition(id)) + "." + id
}

// streamSubjects is what the k-th stream captures.
func (c *Cluster) streamSubjects(k int) []string {
	if c.cfg.Streams == 1 {
		return []string{c.cfg.SubjectPrefix + ".*"}
	}
	return []string{c.cfg.SubjectPrefix + "." + strconv.Itoa(k) + ".*"}
}

// checkLayout refuses a stream layout other than this node's: a stream of
// the other layout that exists, or streams that record another count.
func (c *Cluster) checkLayout(ctx context.Context, js jetstream.JetStream) error {
	// The first stream of the other layout.
	other := c.cfg.Stream
	if c.cfg.Streams == 1 {
		other = c.cfg.Stream + "_0"
	}
	s, err := js.Stream(ctx, other)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return fmt.Errorf("cluster: stream %s: %w", other, err)
	default:
		return c.layoutError(other, recordedStreams(s.CachedInfo().Config.Metadata, c.unrecorded(other)))
	}
	s, err = js.Stream(ctx, c.streamName(0))
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("cluster: stream %s: %w", c.streamName(0), err)
	}
	if n := recordedStreams(s.CachedInfo().Config.Metadata, c.unrecorded(c.streamName(0))); n != c.cfg.Streams {
		return c.layoutError(c.streamName(0), n)
	}
	return nil
}

// layoutError says that stream name holds logs of a layout of found
// streams (0: none recorded) rather than this node's.
func (c *Cluster) layoutError(name string, found int) error {
	if found == 0 {
		return fmt.Errorf("cluster: %w: stream %s records no layout (was it made by baton?); this node was started for %d stream(s)", ErrLayout, name, c.cfg.Streams)
	}
	return fmt.Errorf("cluster: %w: the session logs are kept in %d stream(s) (found %s), this node was started for %d; start every node with --nats-streams %d",
		ErrLayout, found, name, c.cfg.Streams, found)
}

// unrecorded is the layout a stream named name is taken to have when its
// metadata records none: the single layout's stream may predate recorded
// layouts (1); a numbered stream always records its layout (0: unknown).
func (c *Cluster) unrecorded(name string) int {
	if name == c.cfg.Stream {
		return 1
	}
	return 0
}

// recordedStreams is the layout a stream's metadata records, or def.
func recordedStreams(md map[string]string, def int) int {
	if n, err := strconv.Atoi(md[streamsKey]); err == nil && n > 0 {
		return n
	}
	return def
}

// createStreams creates (or checks and updates) every log stream, each
// within OpTimeout. A stream that exists is updated only when it records
// this node's layout, and the layout is checked again once every stream
// is there: two nodes started at the same moment for different layouts
// then refuse each other rather than split the logs.
func (c *Cluster) createStreams(ctx context.Context, js jetstream.JetStream) error {
	op, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	if err := c.checkLayout(op, js); err != nil {
		return err
	}
	for k := range c.cfg.Streams {
		if err := c.createStream(ctx, js, k); err != nil {
			return err
		}
	}
	op, cancel = context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	return c.checkLayout(op, js)
}

func (c *Cluster) createStream(ctx context.Context, js jetstream.JetStream, k int) error {
	op, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	name := c.streamName(k)
	cfg := jetstream.StreamConfig{
		Name:        name,
		Description: "baton session logs, one subject per session",
		Subjects:    c.streamSubjects(k),
		Storage:     jetstream.FileStorage,
		Replicas:    c.cfg.Replicas,
		Retention:   jetstream.LimitsPolicy,
		// A log is never trimmed: finished sessions are removed by an
		// operator's purge of their subject, never by a limit.
		MaxMsgs:  -1,
		MaxBytes: -1,
		// Retries of an unacknowledged write carry the same message id
		// and must fall inside this window: OpTimeout is far below it.
		Duplicates:  2 * time.Minute,
		AllowDirect: true,
		DenyDelete:  true,
		Metadata:    map[string]string{streamsKey: strconv.Itoa(c.cfg.Streams)},
	}
	_, err := js.CreateStream(op, cfg)
	if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if err != nil {
			return fmt.Errorf("cluster: stream %s: %w", name, err)
		}
		return nil
	}
	s, err := js.Stream(op, name)
	if err != nil {
		return fmt.Errorf("cluster: stream %s: %w", name, err)
	}
	if n := recordedStreams(s.CachedInfo().Config.Metadata, c.unrecorded(name)); n != c.cfg.Streams {
		return c.layoutError(name, n)
	}
	if _, err := js.UpdateStream(op, cfg); err != nil {
		return fmt.Errorf("cluster: stream %s: %w", name, err)
	}
	return nil
}
