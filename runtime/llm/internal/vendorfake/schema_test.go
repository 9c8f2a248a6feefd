package vendorfake

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var codeNames = map[Code]string{
	Unknown: "unknown", Duplicate: "duplicate", OneofTaken: "oneof", Missing: "missing", Null: "null",
	WrongType: "type", NotInEnum: "enum", Undecodable: "undecodable", Mismatch: "mismatch",
	TooShort: "short", TooLong: "long", BelowMin: "min", AboveMax: "max",
	NoTag: "notag", UnknownTag: "tag", Unmodelled: "unmodelled",
}

// The walk, one shape at a time: each body gets exactly the violations
// listed, as "code at path", and valid bodies come out normalized.
func TestCheck(t *testing.T) {
	one, two := 1.0, 2.0
	str := &Node{Kind: String}
	text := &Node{Kind: Object, Required: []string{"type"}, Fields: map[string]*Field{
		"type": {Key: "type", Node: &Node{Kind: String, Values: []string{"text"}}},
		"text": {Key: "text", Node: str},
	}}
	shorthand := &Node{Kind: String, Then: func(v any) any { return []any{map[string]any{"type": "text", "text": v}} }}
	root := &Node{Kind: Object, Required: []string{"id", "n"}, Fields: map[string]*Field{
		"id":    {Key: "id", Node: &Node{Kind: String, MinLen: 1, MaxLen: 4, Valid: regexp.MustCompile(`^[a-z]+$`).MatchString}},
		"n":     {Key: "n", Node: &Node{Kind: Int, Bits: 32, Min: &one, Max: &two}},
		"x":     {Key: "x", Node: &Node{Kind: Number}, Nullable: true},
		"b64":   {Key: "b64", Node: &Node{Kind: Bytes, Valid: func(s string) bool { return s != "!" }}},
		"mode":  {Key: "mode", Node: &Node{Kind: String, Values: []string{"a", "b"}}},
		"list":  {Key: "list", Node: &Node{Kind: List, Elem: str, MinLen: 1, MaxLen: 2}},
		"map":   {Key: "map", Node: &Node{Kind: Object, Elem: &Node{Kind: Bool}}},
		"free":  {Key: "free", Node: &Node{Kind: AnyObject}},
		"any":   {Key: "any", Node: &Node{Kind: Any}},
		"one_a": {Key: "oneA", Path: "one_a", Node: str, Oneof: "one", Nullable: true},
		"oneA":  {Key: "oneA", Path: "one_a", Node: str, Oneof: "one", Nullable: true},
		"one_b": {Key: "oneB", Path: "one_b", Node: str, Oneof: "one", Nullable: true},
		"block": {Key: "block", Node: &Node{Kind: Union, Tag: "type", Variants: []*Node{text}, Unmodelled: []string{"video"}}},
		"body":  {Key: "body", Node: &Node{Kind: Union, Variants: []*Node{shorthand, {Kind: List, Elem: text}}}},
	}}
	tests := []struct {
		schema Schema
		body   string
		want   string // violations; or, after "=", the normalized body
	}{
		{Schema{}, `{"id":"ab","n":1}`, `={"id":"ab","n":1}`},
		{Schema{}, `{"id":"ab","n":2.0,"x":0.50,"body":"hi","map":{"k":true},"any":[null]}`, `={"any":[null],"body":[{"text":"hi","type":"text"}],"id":"ab","map":{"k":true},"n":2,"x":0.5}`},
		{Schema{}, `{"zz":1}`, `unknown at ; missing at id; missing at n`},
		{Schema{}, `{"id":"","n":3}`, `short at id; max at n`},
		{Schema{}, `{"id":"abcde","n":0}`, `long at id; min at n`},
		{Schema{}, `{"id":"AB","n":1.5}`, `mismatch at id; type at n`},
		{Schema{}, `{"id":"ab","n":3000000000}`, `type at n`},
		{Schema{}, `{"id":"ab","n":"1"}`, `type at n`},
		{Schema{ProtoJSON: true}, `{"id":"ab","n":"1","x":"NaN"}`, `={"id":"ab","n":1,"x":null}`},
		{Schema{}, `{"id":null,"n":1,"x":null}`, `null at id`},
		{Schema{}, `{"id":"ab","n":1,"b64":"!","mode":"c","free":[],"map":{"k":1}}`, `undecodable at b64; type at free; type at map.k; enum at mode`},
		{Schema{QuoteKeys: true}, `{"id":"ab","n":1,"map":{"k":1}}`, `type at map["k"]`},
		{Schema{}, `{"id":"ab","n":1,"list":[]}`, `short at list`},
		{Schema{}, `{"id":"ab","n":1,"list":["a",1,null]}`, `long at list; type at list[1]; type at list[2]`},
		{Schema{DotIndex: true}, `{"id":"ab","n":1,"list":["a",1]}`, `type at list.1`},
		{Schema{}, `{"id":"ab","n":1,"one_a":"a","oneA":"b"}`, `duplicate at `},
		{Schema{}, `{"id":"ab","n":1,"oneA":"a","one_b":"b"}`, `oneof at `},
		{Schema{}, `{"id":"ab","n":1,"oneA":null,"one_a":"b"}`, `={"id":"ab","n":1,"oneA":"b"}`},
		{Schema{}, `{"id":"ab","n":1,"block":{}}`, `notag at block`},
		{Schema{}, `{"id":"ab","n":1,"block":{"type":5}}`, `type at block.type`},
		{Schema{}, `{"id":"ab","n":1,"block":{"type":"image"}}`, `tag at block`},
		{Schema{}, `{"id":"ab","n":1,"block":{"type":"video"}}`, `unmodelled at block`},
		{Schema{}, `{"id":"ab","n":1,"block":{"type":"text","text":5}}`, `type at block.text`},
		{Schema{TagPath: true}, `{"id":"ab","n":1,"block":{"type":"text","text":5}}`, `type at block.text.text`},
		{Schema{}, `{"id":"ab","n":1,"body":5}`, `type at body`},
		{Schema{}, `{"id":"ab","n":1,"body":[{"text":"x"}]}`, `missing at body[0].type`},
	}
	for _, tt := range tests {
		raw, err := DecodeJSON([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		s := tt.schema
		s.Root = root
		out, errs := Check(&s, raw, func(v Violation) string { return codeNames[v.Code] + " at " + v.Path })
		got := strings.Join(errs, "; ")
		if len(errs) == 0 {
			b, _ := json.Marshal(out)
			got = "=" + string(b)
		}
		if got != tt.want {
			t.Errorf("%+v %s:\n got %s\nwant %s", tt.schema, tt.body, got, tt.want)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1}`: "<nil>", `{"a":1} {}`: ErrTrailing.Error(), `{"a":`: "unexpected EOF", ``: "EOF",
	} {
		if _, err := DecodeJSON([]byte(body)); fmt.Sprint(err) != want {
			t.Errorf("DecodeJSON(%q) = %v, want %s", body, err, want)
		}
	}
	if v, _ := DecodeJSON([]byte(`12345678901234567890`)); !reflect.DeepEqual(v, json.Number("12345678901234567890")) {
		t.Errorf("numbers are not kept exact: %#v", v)
	}
}
