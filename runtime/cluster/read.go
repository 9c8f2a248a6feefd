package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// rawMsg is one stored message of a session's subject.
type rawMsg struct {
	Seq    uint64
	Time   time.Time
	Header nats.Header
	Data   []byte
}

// lastMsg asks the log stream's leader for a subject's last message (nil
// if it has none). The leader, not any replica: a replica may lag, and
// what is read here is what a reader waits to see.
func (c *Cluster) lastMsg(ctx context.Context, id string) (*rawMsg, error) {
	return c.lastMsgOf(ctx, c.streamOf(id), c.subject(id))
}

// lastMsgOf is lastMsg for any stream.
func (c *Cluster) lastMsgOf(ctx context.Context, stream, subj string) (*rawMsg, error) {
	req, _ := json.Marshal(struct {
		LastBySubj string `json:"last_by_subj"`
	}{subj})
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq  uint64    `json:"seq"`
			Hdrs []byte    `json:"hdrs"`
			Data []byte    `json:"data"`
			Time time.Time `json:"time"`
		} `json:"message"`
	}
	wait := 20 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := c.nc.RequestWithContext(actx, "$JS.API.STREAM.MSG.GET."+stream, req)
		cancel()
		if err == nil {
			resp.Error, resp.Message = nil, nil
			if err = json.Unmarshal(m.Data, &resp); err != nil {
				return nil, fmt.Errorf("reading %s: %w", subj, err)
			}
			switch {
			case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
				return nil, nil
			case resp.Error != nil && resp.Error.Code < 500:
				return nil, fmt.Errorf("reading %s: %w", subj, resp.Error)
			case resp.Error != nil:
				err = resp.Error // no leader just now: try again
			case resp.Message == nil:
				return nil, fmt.Errorf("reading %s: an empty answer", subj)
			default:
				out := &rawMsg{Seq: resp.Message.Seq, Time: resp.Message.Time, Data: resp.Message.Data, Header: nats.Header{}}
				if len(resp.Message.Hdrs) > 0 {
					if out.Header, err = nats.DecodeHeadersMsg(resp.Message.Hdrs); err != nil {
						return nil, fmt.Errorf("reading %s: message %d headers: %w", subj, out.Seq, err)
					}
				}
				return out, nil
			}
		}
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil, fmt.Errorf("reading %s: %w", subj, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading %s: %w (last error: %w)", subj, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// batchSize is how many messages one direct get returns at most.
const batchSize = 1024

// readMsgs reads every message of a session's subject: the last
// sequence from the leader, then batched direct gets, which any replica
// answers, until that sequence has arrived (a lagging replica's short
// answer is asked again). Batched direct gets beat an ordered consumer
// (BenchmarkOpen), which costs a consumer's creation per read: on three
// servers now as cheap, now a hundred times dearer. Without headers
// (withHeaders false) the server
// sends bare payloads, which is most of the cost saved; then only the
// last message's sequence is known.
func (c *Cluster) readMsgs(ctx context.Context, id string, withHeaders bool) ([]rawMsg, error) {
	subj := c.subject(id)
	last, err := c.lastMsg(ctx, id)
	if err != nil || last == nil {
		return nil, err
	}
	var msgs []rawMsg
	from := uint64(1)
	wait := 10 * time.Millisecond
	for from <= last.Seq {
		batch, end, err := c.directBatch(ctx, c.streamOf(id), subj, from, withHeaders)
		if err != nil {
			return nil, err
		}
		if len(batch) > 0 {
			msgs = append(msgs, batch...)
			from = end + 1
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading %s: messages up to %d did not arrive: %w", subj, last.Seq, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
	if n := len(msgs); n > 0 && !withHeaders {
		msgs[n-1].Seq = from - 1
	}
	return msgs, nil
}

// directBatch asks for up to batchSize messages of subj from sequence
// from on and reads them until the end-of-batch status, which names the
// last one's sequence (end). A batch cut short is returned whole when
// each message names its own sequence, and dropped otherwise.
func (c *Cluster) directBatch(ctx context.Context, stream, subj string, from uint64, withHeaders bool) (msgs []rawMsg, end uint64, err error) {
	req, _ := json.Marshal(struct {
		Seq       uint64 `json:"seq"`
		NextFor   string `json:"next_by_subj"`
		Batch     int    `json:"batch"`
		NoHeaders bool   `json:"no_hdr,omitempty"`
	}{from, subj, batchSize, !withHeaders})
	inbox := c.nc.NewRespInbox()
	// A channel that holds a whole batch and its status line: a
	// synchronous subscription would allocate (and clear) room for 64k.
	ch := make(chan *nats.Msg, batchSize+2)
	sub, err := c.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", subj, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", subj, err)
	}
	cut := func() ([]rawMsg, uint64, error) {
		if !withHeaders || len(msgs) == 0 {
			return nil, 0, nil
		}
		return msgs, msgs[len(msgs)-1].Seq, nil
	}
	timeout := time.NewTimer(2 * time.Second)
	defer timeout.Stop()
	for {
		var m *nats.Msg
		select {
		case m = <-ch:
		case <-timeout.C:
			return cut()
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("reading %s: %w", subj, ctx.Err())
		}
		timeout.Reset(2 * time.Second)
		switch m.Header.Get("Status") {
		case "":
		case "204":
			if len(msgs) == 0 {
				return nil, 0, nil
			}
			last, err := strconv.ParseUint(m.Header.Get(jetstream.LastSequenceHeader), 10, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("reading %s: the end of a batch without its last sequence", subj)
			}
			return msgs, last, nil
		case "404", "408", "503":
			// Nothing (more) there; a timeout; no replica could answer:
			// the caller decides from what arrived.
			return cut()
		default:
			return nil, 0, fmt.Errorf("reading %s: direct get answered %s %s", subj, m.Header.Get("Status"), m.Header.Get("Description"))
		}
		if !withHeaders {
			msgs = append(msgs, rawMsg{Data: m.Data})
			continue
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s: a message without its sequence", subj)
		}
		ts, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		msgs = append(msgs, rawMsg{Seq: seq, Time: ts, Header: m.Header, Data: m.Data})
	}
}

// readLog reads and parses a session's log. Its messages come without
// headers; a damaged log is read again with them, so that the error
// names the message.
func (c *Cluster) readLog(ctx context.Context, id string) (*wal.Recovered, []rawMsg, error) {
	msgs, err := c.readMsgs(ctx, id, false)
	if err != nil || len(msgs) == 0 {
		return nil, msgs, err
	}
	rec, err := c.parse(id, msgs)
	var dmg *wal.DamageError
	if errors.As(err, &dmg) {
		if again, rerr := c.readMsgs(ctx, id, true); rerr == nil && len(again) > 0 {
			if _, err2 := c.parse(id, again); err2 != nil {
				err = err2
			}
		}
	}
	if err != nil {
		return nil, msgs, err
	}
	return rec, msgs, nil
}

// parse reads a session's messages as one log file. Messages are stored
// whole, so what a file would call a torn tail is damage here too.
func (c *Cluster) parse(id string, msgs []rawMsg) (*wal.Recovered, error) {
	var data []byte
	starts := make([]int64, len(msgs))
	for i, m := range msgs {
		starts[i] = int64(len(data))
		data = append(data, m.Data...)
	}
	// where names a byte offset by the message holding it.
	where := func(off int64) string {
		i := len(starts) - 1
		for i > 0 && starts[i] > off {
			i--
		}
		if msgs[i].Seq == 0 {
			return fmt.Sprintf("log %s (stream %s, its message %d, byte %d of the log)", c.subject(id), c.streamOf(id), i+1, off)
		}
		return fmt.Sprintf("log %s (stream %s, message %d, byte %d of the log)", c.subject(id), c.streamOf(id), msgs[i].Seq, off)
	}
	rec, err := wal.Parse(data)
	if errors.Is(err, wal.ErrUnborn) {
		// Create writes the magic and header in one message.
		err = &wal.DamageError{NextValid: -1, Reason: "no whole header: " + err.Error()}
	}
	var dmg *wal.DamageError
	if errors.As(err, &dmg) {
		return nil, fmt.Errorf("%s: %w", where(dmg.Offset), dmg)
	}
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", c.subject(id), err)
	}
	if t := rec.Tail; t != nil {
		records := 1 + len(rec.Inputs)
		for _, st := range rec.Steps {
			if st != nil {
				records++
			}
		}
		if rec.End != nil {
			records++
		}
		dmg := &wal.DamageError{Offset: t.Offset, Record: records, Inputs: len(rec.Inputs), NextValid: -1,
			Reason: t.Reason + " (a stored message is whole, so this is not a torn write)"}
		return nil, fmt.Errorf("%s: %w", where(t.Offset), dmg)
	}
	if rec.Header.SessionID != id {
		dmg := &wal.DamageError{Offset: int64(len(wal.Magic)), NextValid: -1,
			Reason: fmt.Sprintf("header names session %q", rec.Header.SessionID)}
		return nil, fmt.Errorf("%s: %w", where(dmg.Offset), dmg)
	}
	return rec, nil
}
