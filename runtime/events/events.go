// Package events reads candidate events in the DayOne wire shape (seed
// §5.2): {"event_type": ..., "ts_sec" | "ts_ms": ..., "data": {...}}, one
// JSON object per line.
package events

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// MaxLine bounds one event line; longer lines are an error, not a stall.
const MaxLine = 1 << 20

// Timed is a candidate event at a time in ms since session start.
type Timed struct {
	T     int64                 `json:"t_ms" yaml:"t_ms"`
	Event engine.CandidateEvent `json:"event" yaml:"event"`
	// Line is the event's line in the file it was read from, if any.
	Line int `json:"-" yaml:"-"`
	// File and Col, set by ReadFile, complete where the event was read.
	// Col is its event_type's value: the checks made after reading (a type
	// the pack does not take, data the type needs) are about that.
	File string `json:"-" yaml:"-"`
	Col  int    `json:"-" yaml:"-"`
}

// Where names the event for an error message: its file:line:col, its
// line, or its place in a list (index i) when it was not read from lines.
func (t *Timed) Where(i int) string {
	switch {
	case t.File != "" && t.Line > 0:
		return t.Pos().String()
	case t.Line > 0:
		return fmt.Sprintf("line %d", t.Line)
	}
	return fmt.Sprintf("event %d", i+1)
}

// Pos is where ReadFile read the event, for a rules.Error about it.
func (t *Timed) Pos() rules.Pos { return rules.Pos{File: t.File, Line: t.Line, Col: t.Col} }

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
	// Line is a 1-based line the event is about: an editor's cursor.
	Line int `json:"line,omitempty" yaml:"line,omitempty"`
}

// Parse decodes one event object and checks it.
func Parse(line []byte) (Timed, error) {
	ev, errs := parseLine("", 0, line)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Msg
		}
		return Timed{}, errors.New(strings.Join(msgs, "; "))
	}
	return ev, nil
}

// parseLine decodes and checks line n of file, every problem at its
// column.
func parseLine(file string, n int, line []byte) (Timed, rules.ErrorList) {
	var w Wire
	if err := DecodeLine(file, n, line, &w); err != nil {
		var el rules.ErrorList
		if errors.As(err, &el) {
			return Timed{}, el
		}
		return Timed{}, rules.ErrorList{lineError(file, n, line, 0, "%v", err)}
	}
	ev, field, err := w.check()
	if err != nil {
		// A problem with a field is at its value, one of giving a field at
		// its key, and one of the whole event at its opening brace.
		off := skipSpace(line, 0)
		if key, val, ok := locate(line, []string{strings.TrimPrefix(field, "key:")}); ok {
			off = val
			if strings.HasPrefix(field, "key:") {
				off = key
			}
		}
		return Timed{}, rules.ErrorList{lineError(file, n, line, off, "%v", err)}
	}
	ev.File, ev.Line = file, n
	if _, val, ok := locate(line, []string{"event_type"}); ok {
		ev.Col = lineError(file, n, line, val, "").Pos.Col
	}
	return ev, nil
}

// Timed checks a decoded event and converts it to engine form.
func (w *Wire) Timed() (Timed, error) {
	ev, _, err := w.check()
	return ev, err
}

// check is Timed, also naming the field a problem is about: a field's
// name for its value, "key:" and the name for giving it, "" for the event.
func (w *Wire) check() (Timed, string, error) {
	var t int64
	switch {
	case w.TsSec != nil && w.TsMS != nil:
		return Timed{}, "key:ts_ms", errors.New("give ts_sec or ts_ms, not both")
	case w.TsSec != nil:
		s := *w.TsSec
		if math.IsNaN(s) || s < 0 || s > 1e9 {
			return Timed{}, "ts_sec", fmt.Errorf("ts_sec %v out of range", s)
		}
		t = int64(math.Round(s * 1000))
	case w.TsMS != nil:
		if *w.TsMS < 0 || *w.TsMS > 1e12 {
			return Timed{}, "ts_ms", fmt.Errorf("ts_ms %d out of range", *w.TsMS)
		}
		t = *w.TsMS
	default:
		return Timed{}, "", errors.New("missing ts_sec or ts_ms")
	}
	d := w.Data
	if d == nil {
		d = &Data{}
	}
	ev := engine.CandidateEvent{Type: w.EventType, Text: d.Text, Source: d.Source, STTConfidence: d.STTConfidence,
		AddressedTo: d.AddressedTo, MicActive: d.MicActive, Typing: d.Typing, Code: d.Code, RunID: d.RunID, Line: d.Line}
	if w.EventType == "" {
		return Timed{}, "", errors.New("missing event_type")
	}
	return Timed{T: t, Event: ev}, "", nil
}

// maxProblems bounds the problems ReadFile reports: a list longer than
// this is one mistake repeated, or a file that is not events at all.
const maxProblems = 100

// ReadFile reads JSON-lines events from r, which holds the file name.
// Blank lines are skipped; events must not go back in time. The error is a
// rules.ErrorList naming every problem at name:line:col, and the events
// keep where they were read (Timed.Pos), for the checks that follow. With
// an error, the events of the lines that read are returned too, so that a
// checker can check them and report every problem of the file at once;
// they are not the file's events, and nothing should play them.
func ReadFile(name string, r io.Reader) ([]Timed, error) {
	return read(name, r, true)
}

// ReadAll reads JSON-lines events. Blank lines are skipped. The error
// names the line of the first problem; events must not go back in time.
func ReadAll(r io.Reader) ([]Timed, error) {
	return read("", r, false)
}

func read(file string, r io.Reader, all bool) ([]Timed, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var (
		out  []Timed
		errs rules.ErrorList
	)
	fail := func(el ...*rules.Error) bool {
		for _, e := range el {
			if len(errs) == maxProblems {
				errs = append(errs, &rules.Error{Pos: e.Pos, Msg: fmt.Sprintf("more than %d problems; fix these first", maxProblems)})
				return true
			}
			errs = append(errs, e)
		}
		return !all
	}
	last := int64(-1)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		ev, el := parseLine(file, n, raw)
		if len(el) > 0 {
			if fail(el...) {
				break
			}
			continue
		}
		if ev.T < last {
			_, val, _ := locate(raw, []string{tsField(raw)})
			if fail(lineError(file, n, raw, val, "time goes backwards (%s after %s)", rules.FormatClock(ev.T), rules.FormatClock(last))) {
				break
			}
		}
		last = max(last, ev.T)
		out = append(out, ev)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		fail(&rules.Error{Pos: rules.Pos{File: file, Line: n + 1, Col: 1}, Msg: fmt.Sprintf("longer than %d bytes", MaxLine)})
	} else if err != nil {
		return nil, fmt.Errorf("reading events after line %d: %w", n, err)
	}
	if len(errs) == 0 {
		return out, nil
	}
	if !all {
		return nil, fmt.Errorf("line %d: %s", errs[0].Pos.Line, errs[0].Msg)
	}
	return out, errs.Err()
}

// tsField is the field that gives a line's time.
func tsField(line []byte) string {
	if _, _, ok := locate(line, []string{"ts_ms"}); ok {
		return "ts_ms"
	}
	return "ts_sec"
}
