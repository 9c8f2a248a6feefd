package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Call executes one tool call by operation name, "open" (open_file) or
// "write" (write_file), with the model's JSON parameters, and returns the
// JSON result to send back and whether it is an error result; an error
// result is {"error": "..."} in words the model can act on. Parameters
// are decoded strictly: a field the tool does not take, a field in
// another case, a wrong type or trailing bytes are errors naming the
// field, because a silently ignored "txt" or "Line" would make the model
// believe an edit happened that did not. Call never panics, whatever the
// bytes.
func (w *Workspace) Call(op string, params []byte) (result []byte, isError bool) {
	var res any
	var err error
	switch op {
	case "open":
		var p string
		if p, err = decodeOpen(params); err == nil {
			res, err = w.Open(p)
		}
	case "write":
		var p WriteParams
		if p, err = decodeWrite(params); err == nil {
			res, err = w.Write(p)
		}
	default:
		err = fmt.Errorf("unknown operation %q; the workspace runs open and write", op)
	}
	if err != nil {
		return marshal(errorResult{Error: err.Error()}), true
	}
	return marshal(res), false
}

type errorResult struct {
	Error string `json:"error"`
}

// marshal encodes v without escaping <, > and &, which code is full of
// and which the model would otherwise read as \u003c.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The result types hold only strings, ints and bools, which
		// always encode; this keeps the promise of a JSON answer anyway.
		return []byte(`{"error":"the result could not be encoded"}`)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func decodeOpen(params []byte) (string, error) {
	m, err := object(params, "the parameters", `{"path": "index.js"}`)
	if err != nil {
		return "", err
	}
	if err := known(m, "parameter", "open_file takes only path", "path"); err != nil {
		return "", err
	}
	p, err := str(m, "path")
	if err != nil || p == nil {
		return "", err
	}
	return *p, nil
}

func decodeWrite(params []byte) (WriteParams, error) {
	var p WriteParams
	m, err := object(params, "the parameters", `{"path": "index.js", "lineEdits": [{"op": "replace", "line": 3, "text": "..."}]}`)
	if err != nil {
		return p, err
	}
	if err := known(m, "parameter", "write_file takes path, content and lineEdits", "path", "content", "lineEdits"); err != nil {
		return p, err
	}
	path, err := str(m, "path")
	if err != nil {
		return p, err
	}
	if path != nil {
		p.Path = *path
	}
	if p.Content, err = str(m, "content"); err != nil {
		return p, err
	}
	raw, ok := m["lineEdits"]
	if !ok || isNull(raw) {
		return p, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return p, fmt.Errorf("lineEdits must be a list of edits, not %s", kind(raw))
	}
	switch {
	case len(list) == 0:
		return p, errors.New("lineEdits is empty; give at least one edit")
	case len(list) > MaxEdits:
		return p, fmt.Errorf("%d edits in one call; at most %d, so split them over several write_file calls", len(list), MaxEdits)
	}
	p.LineEdits = make([]LineEdit, len(list))
	var bad []string
	for i, raw := range list {
		if err := decodeEdit(raw, &p.LineEdits[i]); err != nil {
			bad = append(bad, fmt.Sprintf("edit %d: %v", i+1, err))
		}
	}
	if bad != nil {
		return p, errors.New(strings.Join(bad, "\n"))
	}
	return p, nil
}

func decodeEdit(raw json.RawMessage, e *LineEdit) error {
	if isNull(raw) {
		return errors.New(`an edit must be an object like {"op": "replace", "line": 3, "text": "..."}, not null`)
	}
	m, err := object(raw, "an edit", `{"op": "replace", "line": 3, "text": "..."}`)
	if err != nil {
		return err
	}
	if err := known(m, "field", "an edit takes op, line, text and position", "op", "line", "text", "position"); err != nil {
		return err
	}
	op, err := str(m, "op")
	if err != nil {
		return err
	}
	if op != nil {
		e.Op = *op
	}
	line, ok := m["line"]
	if !ok || isNull(line) {
		return errors.New("line is missing; give the 1-based line number open_file shows")
	}
	if json.Unmarshal(line, &e.Line) != nil {
		return fmt.Errorf("line must be a whole number such as 12, not %s", kind(line))
	}
	if e.Text, err = str(m, "text"); err != nil {
		return err
	}
	pos, err := str(m, "position")
	if err != nil {
		return err
	}
	if pos != nil {
		e.Position = *pos
	}
	return nil
}

// object decodes raw as one JSON object; empty input is an empty object,
// since a model calling open_file with no arguments may send nothing. A
// key given twice is refused rather than resolved, as the model may have
// meant either value.
func object(raw []byte, what, example string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	invalid := func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("it ends too early")
		}
		return fmt.Errorf("%s are not valid JSON (%v at byte %d); send an object like %s", what, err, dec.InputOffset(), example)
	}
	if tok, err := dec.Token(); err != nil {
		return nil, invalid(err)
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("%s must be an object like %s, not %s", what, example, kind(raw))
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid(err)
		}
		key, _ := tok.(string) // the decoder allows nothing else here
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid(err)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%q is given twice in %s; give it once", key, what)
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalid(err)
	}
	switch _, err := dec.Token(); err {
	case io.EOF:
	case nil:
		return nil, fmt.Errorf("%s hold more than one JSON value; send one object like %s", what, example)
	default:
		return nil, invalid(err)
	}
	return m, nil
}

// known refuses any key not in allowed, naming them all in sorted order.
func known(m map[string]json.RawMessage, noun, hint string, allowed ...string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if unknown == nil {
		return nil
	}
	slices.Sort(unknown)
	if len(unknown) > 1 {
		noun += "s"
	}
	return fmt.Errorf("unknown %s %s; %s", noun, strings.Join(unknown, ", "), hint)
}

// str decodes m[key] as a string; absent and null are nil.
func str(m map[string]json.RawMessage, key string) (*string, error) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, fmt.Errorf("%s must be a string, not %s", key, kind(raw))
	}
	return &s, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// kind names a JSON value's type for an error, quoting short numbers so
// "not 1.5" says what was wrong.
func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) <= 24 {
		return string(raw)
	}
	return "a number"
}
