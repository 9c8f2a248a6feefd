package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

// DecodeLine decodes data, one line of a JSON-lines file, into v, a
// pointer to a struct whose yaml tags name the same fields as its json
// tags. It decodes as encoding/json does, with unknown fields refused, so
// a line means what any JSON reader takes it to mean. Problems come back as
// a rules.ErrorList at file:line:col, line being the line's number in
// file: a line that is valid JSON of the wrong shape is decoded again as
// the YAML it also is, by the pack loader's decoder, which names every
// misspelt field with the nearest known one and every value of the wrong
// kind where it is written, as a pack file's problems are.
func DecodeLine(file string, line int, data []byte, v any) error {
	at := func(off int, format string, args ...any) error {
		return rules.ErrorList{lineError(file, line, data, off, format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return at(skipSpace(data, int(dec.InputOffset())), "invalid JSON: more than one value on the line")
		}
		return nil
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return at(int(syn.Offset)-1, "invalid JSON: %s", syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return at(len(data), "invalid JSON: the line ends inside a value")
	}
	if el := decodeAsYAML(file, line, data, v); el != nil {
		return el
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if _, val, ok := locate(data, strings.Split(te.Field, ".")); ok && te.Field != "" {
			var raw json.RawMessage
			_ = json.NewDecoder(bytes.NewReader(data[val:])).Decode(&raw)
			return at(val, "invalid JSON: %s: expected %s, found %s", te.Field, kindOf(te.Type), clip(string(raw)))
		}
		return at(int(te.Offset), "invalid JSON: %v", err)
	}
	return at(0, "invalid JSON: %v", err)
}

// kindOf says what a Go type takes, in the words the pack loader's
// decoder uses.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "text"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	const most = 40
	if utf8.RuneCountInString(s) <= most {
		return s
	}
	return string([]rune(s)[:most]) + "..."
}

// decodeAsYAML names what is wrong with a line that is JSON, but not the
// JSON v takes, where it is written. It returns nil when the YAML decoder
// finds no problem (it is laxer about scalars: "1" is a number to it), or
// cannot read the line at all, and the JSON decoder's error must do.
func decodeAsYAML(file string, line int, data []byte, v any) rules.ErrorList {
	if !json.Valid(data) {
		return nil
	}
	fresh := reflect.New(reflect.TypeOf(v).Elem())
	var el rules.ErrorList
	if !errors.As(rules.DecodeFile(file, data, fresh.Interface()), &el) || len(el) == 0 {
		return nil
	}
	for _, e := range el {
		// A line of JSON the YAML parser cannot read (an escape YAML
		// lacks) has no problem of shape to report; the line is one
		// line, so every position is on it.
		if strings.HasPrefix(e.Msg, "YAML syntax") || e.Pos.Line != 1 {
			return nil
		}
	}
	out := make(rules.ErrorList, len(el))
	for i, e := range el {
		out[i] = &rules.Error{Pos: rules.Pos{File: file, Line: line, Col: e.Pos.Col}, Msg: e.Msg}
	}
	return out
}

// lineError is a problem at byte offset off of data, as a position in
// characters, which is how the YAML decoder counts columns.
func lineError(file string, line int, data []byte, off int, format string, args ...any) *rules.Error {
	off = min(max(off, 0), len(data))
	return &rules.Error{
		Pos: rules.Pos{File: file, Line: line, Col: utf8.RuneCount(data[:off]) + 1},
		Msg: fmt.Sprintf(format, args...),
	}
}

// locate finds a field of a JSON object by its path (data.text): the
// offsets of its key and of its value.
func locate(data []byte, path []string) (key, val int, ok bool) {
	if len(path) == 0 {
		return 0, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		k := skipSpace(data, int(dec.InputOffset()))
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		name, _ := t.(string)
		v := skipSpace(data, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if name != path[0] {
			continue
		}
		if len(path) == 1 {
			return k, v, true
		}
		k2, v2, ok := locate(raw, path[1:])
		return v + k2, v + v2, ok
	}
	return 0, 0, false
}

// skipSpace skips what lies between JSON tokens: space, and the commas
// and colons the decoder has not consumed yet.
func skipSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}
