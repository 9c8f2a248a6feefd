// Package events reads candidate events in the DayOne wire shape (seed
// §5.2): {"event_type": ..., "ts_sec" | "ts_ms": ..., "data": {...}}, one
// JSON object per line.
package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/batonhq/baton/engine"
)

// MaxLine bounds one event line; longer lines are an error, not a stall.
const MaxLine = 1 << 20

// Timed is a candidate event at a time in ms since session start.
type Timed struct {
	T     int64                 `json:"t_ms" yaml:"t_ms"`
	Event engine.CandidateEvent `json:"event" yaml:"event"`
	// Line is the event's line in the file it was read from, if any.
	Line int `json:"-" yaml:"-"`
}

// Where names the event for an error message: its line, or its place in
// a list (index i) when it was not read from lines.
func (t *Timed) Where(i int) string {
	if t.Line > 0 {
		return fmt.Sprintf("line %d", t.Line)
	}
	return fmt.Sprintf("event %d", i+1)
}

// Wire is the JSON shape of one event.
type Wire struct {
	SessionID string   `json:"session_id,omitempty" yaml:"session_id,omitempty"`
	EventType string   `json:"event_type" yaml:"event_type"`
	TsSec     *float64 `json:"ts_sec,omitempty" yaml:"ts_sec,omitempty"`
	TsMS      *int64   `json:"ts_ms,omitempty" yaml:"ts_ms,omitempty"`
	Data      *Data    `json:"data,omitempty" yaml:"data,omitempty"`
}

// Data is the event's data object; which fields matter depends on the type.
type Data struct {
	Source        string   `json:"source,omitempty" yaml:"source,omitempty"`
	Text          string   `json:"text,omitempty" yaml:"text,omitempty"`
	STTConfidence *float64 `json:"stt_confidence,omitempty" yaml:"stt_confidence,omitempty"`
	AddressedTo   string   `json:"addressed_to,omitempty" yaml:"addressed_to,omitempty"`
	MicActive     *bool    `json:"mic_active,omitempty" yaml:"mic_active,omitempty"`
	Typing        *bool    `json:"typing,omitempty" yaml:"typing,omitempty"`
	Code          string   `json:"code,omitempty" yaml:"code,omitempty"`
	Language      string   `json:"language,omitempty" yaml:"language,omitempty"`
	// RunID names the exchange a prompt starts or a cancel is for.
	RunID string `json:"run_id,omitempty" yaml:"run_id,omitempty"`
}

// Parse decodes one event object and checks it.
func Parse(line []byte) (Timed, error) {
	var w Wire
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Timed{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return Timed{}, errors.New("invalid JSON: more than one value on the line")
	}
	return w.Timed()
}

// Timed checks a decoded event and converts it to engine form.
func (w *Wire) Timed() (Timed, error) {
	var t int64
	switch {
	case w.TsSec != nil && w.TsMS != nil:
		return Timed{}, errors.New("give ts_sec or ts_ms, not both")
	case w.TsSec != nil:
		s := *w.TsSec
		if math.IsNaN(s) || s < 0 || s > 1e9 {
			return Timed{}, fmt.Errorf("ts_sec %v out of range", s)
		}
		t = int64(math.Round(s * 1000))
	case w.TsMS != nil:
		if *w.TsMS < 0 || *w.TsMS > 1e12 {
			return Timed{}, fmt.Errorf("ts_ms %d out of range", *w.TsMS)
		}
		t = *w.TsMS
	default:
		return Timed{}, errors.New("missing ts_sec or ts_ms")
	}
	d := w.Data
	if d == nil {
		d = &Data{}
	}
	ev := engine.CandidateEvent{Type: w.EventType, Text: d.Text, Source: d.Source, STTConfidence: d.STTConfidence,
		AddressedTo: d.AddressedTo, MicActive: d.MicActive, Typing: d.Typing, Code: d.Code, RunID: d.RunID}
	if w.EventType == "" {
		return Timed{}, errors.New("missing event_type")
	}
	return Timed{T: t, Event: ev}, nil
}

// ReadAll reads JSON-lines events. Blank lines are skipped. Errors name the
// line; events must not go back in time.
func ReadAll(r io.Reader) ([]Timed, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var out []Timed
	last := int64(-1)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := Parse(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ev.T < last {
			return nil, fmt.Errorf("line %d: time goes backwards (%dms after %dms)", n, ev.T, last)
		}
		last = ev.T
		ev.Line = n
		out = append(out, ev)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, MaxLine)
	} else if err != nil {
		return nil, fmt.Errorf("reading events after line %d: %w", n, err)
	}
	return out, nil
}
