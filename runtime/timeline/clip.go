package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxString is the most of one JSON string a mark's detail shows. A
// model request carries whole prompts and context files; kept whole, a
// pack with a few hundred background jobs makes a page of megabytes,
// too big to embed in a sweep report, for text no one reads on hover.
const maxString = 400

// clipJSON rewrites data with every string longer than maxString runes
// cut, saying how much was left out; members keep their order.
func clipJSON(data []byte) []byte {
	if !hasLongString(data) {
		return data // most effects: no need to take them apart
	}
	out, err := clipTokens(data)
	if err != nil {
		return data // not JSON this package made; shown as it is
	}
	return out
}

// hasLongString reports whether data may hold a string longer than
// maxString: a stretch of more than maxString bytes between quotes. A
// quote after a backslash does not end the stretch, so an escaped
// backslash before a quote can only make it say yes.
func hasLongString(data []byte) bool {
	run := 0
	for i, c := range data {
		if c == '"' && (i == 0 || data[i-1] != '\\') {
			run = 0
			continue
		}
		if run++; run > maxString {
			return true
		}
	}
	return false
}

func clipTokens(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b bytes.Buffer
	// For each open object or array: how many tokens it has held, so a
	// key is followed by ':' and a member by ','.
	var open []struct {
		obj bool
		n   int
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return b.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			b.WriteByte(byte(d))
			open = open[:len(open)-1]
			continue
		}
		key := false
		if len(open) > 0 {
			f := &open[len(open)-1]
			key = f.obj && f.n%2 == 0
			switch {
			case f.obj && f.n%2 == 1:
				b.WriteByte(':')
			case f.n > 0:
				b.WriteByte(',')
			}
			f.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			open = append(open, struct {
				obj bool
				n   int
			}{obj: v == '{'})
		case string:
			if n := utf8.RuneCountInString(v); n > maxString && !key {
				v = string([]rune(v)[:maxString]) + "… (" + strconv.Itoa(n-maxString) + " more characters)"
			}
			s, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b.Write(s)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteString("null")
		default:
			return nil, errors.New("unexpected JSON token")
		}
	}
}
