package events_test

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		want string // "" for success, else part of the error
		t    int64
	}{
		{`{"session_id":"s1","event_type":"candidate_message","ts_sec":88,"data":{"source":"voice","text":"I prioritize hotfix first","stt_confidence":0.92,"addressed_to":"tech_lead"}}`, "", 88000},
		{`{"event_type":"mic_state_changed","ts_ms":1500,"data":{"mic_active":true}}`, "", 1500},
		{`{"event_type":"speech_end","ts_sec":1.25}`, "", 1250},
		{`{"event_type":"code_submitted","ts_sec":3,"data":{"code":"x","language":"go"}}`, "", 3000},
		{`{"event_type":"slide_changed","ts_sec":3}`, "", 3000},
		{`{"event_type":"candidate_message","ts_sec":1,"ts_ms":1000,"data":{"text":"x"}}`, "not both", 0},
		{`{"event_type":"candidate_message","data":{"text":"x"}}`, "missing ts_sec", 0},
		{`{"event_type":"candidate_message","ts_sec":-1,"data":{"text":"x"}}`, "out of range", 0},
		{`{"ts_sec":1}`, "missing event_type", 0},
		{`{"event_type":"speech_end","ts_sec":1,"extra":true}`, "unknown field", 0},
		{`{"event_type":"speech_end","ts_sec":"1"}`, "invalid JSON", 0},
		{`{"event_type":"speech_end","ts_sec":1} {}`, "more than one value", 0},
		{`not json`, "invalid JSON", 0},
	}
	for _, c := range cases {
		ev, err := events.Parse([]byte(c.line))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.line, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: want error containing %q, got %v", c.line, c.want, err)
		case c.want == "" && ev.T != c.t:
			t.Errorf("%s: t=%d, want %d", c.line, ev.T, c.t)
		}
	}
}

// Parsing reads the wire shape; what an event must carry is the engine's
// one input check, against the session's pack.
func TestParsedEventsMeetTheEngineCheck(t *testing.T) {
	p, err := rules.Load(os.DirFS("../../scenarios/dayone"), ".")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ line, want string }{
		{`{"event_type":"candidate_message","ts_sec":1,"data":{"text":"hi"}}`, ""},
		{`{"event_type":"candidate_message","ts_sec":1}`, "needs data.text"},
		{`{"event_type":"mic_state_changed","ts_sec":1,"data":{}}`, "needs data.mic_active"},
		{`{"event_type":"typing_state_changed","ts_sec":1}`, "needs data.typing"},
		{`{"event_type":"candidate_message","ts_sec":1,"data":{"text":"x","stt_confidence":1.5}}`, "between 0 and 1"},
		{`{"event_type":"Bad Type!","ts_sec":1}`, "snake_case"},
		{`{"event_type":"candidate_mesage","ts_sec":1,"data":{"text":"x"}}`, "did you mean candidate_message?"},
		{`{"event_type":"tool_loop","ts_sec":30,"data":{}}`, "engine's own triggers"},
		{`{"event_type":"live_start","ts_sec":30}`, "engine's own triggers"},
		{`{"event_type":"slide_changed","ts_sec":3}`, "not handled by pack dayone"},
	}
	for _, c := range cases {
		ev, err := events.Parse([]byte(c.line))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		err = engine.CheckEvent(p, &ev.Event)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.line, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: want error containing %q, got %v", c.line, c.want, err)
		}
	}
}

func TestReadAllNamesTheLine(t *testing.T) {
	in := "{\"event_type\":\"speech_end\",\"ts_sec\":5}\n\n{\"event_type\":\"speech_end\",\"ts_sec\":4}\n"
	_, err := events.ReadAll(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3: time goes backwards") {
		t.Fatalf("got %v", err)
	}
	_, err = events.ReadAll(strings.NewReader("{\"event_type\":\"speech_end\",\"ts_sec\":5}\n{oops\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Fatalf("got %v", err)
	}
	long := strings.Repeat("x", events.MaxLine+10)
	_, err = events.ReadAll(strings.NewReader("{\"event_type\":\"speech_end\",\"ts_sec\":5}\n" + long))
	if err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Fatalf("got %v", err)
	}
	evs, err := events.ReadAll(strings.NewReader(""))
	if err != nil || len(evs) != 0 {
		t.Fatalf("empty file is a silent candidate: %v %v", evs, err)
	}
}

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("../../scenarios/dayone/candidate.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"event_type":"candidate_message","ts_sec":1e308,"data":{"text":"x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := events.Parse(line)
		if err != nil {
			return
		}
		if ev.T < 0 || ev.Event.Type == "" {
			t.Fatalf("accepted a bad event: %+v", ev)
		}
	})
}

// ReadFile names every problem of a file at once, each at the line and
// column it is at: a misspelt key with the nearest known one, a value of
// the wrong kind at the value, giving both times at the second key, a
// problem of the whole event at its brace.
func TestReadFileNamesEveryProblem(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"good", `{"event_type":"speech_end","ts_sec":5}` + "\r\n\n" + `{"event_type":"speech_end","ts_ms":6000}`, ""},
		{"unknown key", `{"event_type":"candidate_message","ts_sec":6,"data":{"source":"text","txt":"hi"}}`,
			`c.jsonl:1:70: unknown field "txt": did you mean text? (known: addressed_to, code, language, line, mic_active, run_id, source, stt_confidence, text, typing)`},
		{"unknown top key", `{"event_type":"x","ts_sec":11,"dta":{}}`,
			`c.jsonl:1:31: unknown field "dta": did you mean data? (known: data, event_type, session_id, ts_ms, ts_sec)`},
		{"wrong kind", `  {"event_type":"speech_end","ts_sec":"x"}`, `c.jsonl:1:39: expected a number, found "x"`},
		// The YAML decoder takes "1" as a number; JSON does not, and says
		// so at the value.
		{"quoted number", `{"event_type":"speech_end","ts_sec":"1"}`, `c.jsonl:1:37: invalid JSON: ts_sec: expected a number, found "1"`},
		{"nested kinds", `{"event_type":"speech_end","ts_sec":9,"data":{"typing":"maybe","mic_active":1}}`,
			"c.jsonl:1:56: expected true or false, found \"maybe\"\nc.jsonl:1:77: expected true or false, found \"1\""},
		{"both times", `{"event_type":"speech_end","ts_sec":7,"ts_ms":9}`, `c.jsonl:1:39: give ts_sec or ts_ms, not both`},
		{"out of range", `{"event_type":"spéech_end","ts_sec":-7}`, `c.jsonl:1:37: ts_sec -7 out of range`},
		{"no type", ` {"ts_sec":10}`, `c.jsonl:1:2: missing event_type`},
		{"no time", `{"event_type":"speech_end"}`, `c.jsonl:1:1: missing ts_sec or ts_ms`},
		{"cut short", `{"event_type":"speech_end",`, `c.jsonl:1:28: invalid JSON: the line ends inside a value`},
		{"syntax", `{"event_type" "speech_end"}`, `c.jsonl:1:15: invalid JSON: invalid character '"' after object key`},
		{"two values", `{"event_type":"speech_end","ts_sec":9} {}`, `c.jsonl:1:40: invalid JSON: more than one value on the line`},
		{"backwards", "{\"event_type\":\"speech_end\",\"ts_sec\":5}\n{\"event_type\":\"speech_end\",\"ts_ms\":4000}",
			`c.jsonl:2:36: time goes backwards (00:04.0 after 00:05.0)`},
		{"every line", "{\"event_type\":\"speech_end\"}\n\n{\"event_type\":\"speech_end\",\"ts_sec\":1,\"x\":1}\n{\"ts_sec\":2}",
			"c.jsonl:1:1: missing ts_sec or ts_ms\nc.jsonl:3:39: unknown field \"x\" (known: data, event_type, session_id, ts_ms, ts_sec)\nc.jsonl:4:1: missing event_type"},
		// JSON that YAML reads otherwise, or not at all, is read as JSON.
		{"json escapes", `{"event_type":"candidate_message","ts_sec":1,"data":{"text":"a\/b \ud83d\ude00"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, err := events.ReadFile("c.jsonl", strings.NewReader(c.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, c.want)
			}
			if err == nil && len(evs) == 0 {
				t.Fatal("no events")
			}
		})
	}
}

// Events read from a file keep where they were, so a check of one made
// later (the pack's event types) points at its event_type.
func TestReadFilePositions(t *testing.T) {
	in := "\n{\"event_type\":\"speech_end\",\"ts_sec\":5}\n  {\"ts_ms\": 6000, \"event_type\": \"candidate_message\", \"data\": {\"text\": \"é\"}}\n"
	evs, err := events.ReadFile("dir/c.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range evs {
		got = append(got, evs[i].Where(i))
	}
	if w := []string{"dir/c.jsonl:2:15", "dir/c.jsonl:3:33"}; !slices.Equal(got, w) {
		t.Fatalf("got %v, want %v", got, w)
	}
	if evs[1].T != 6000 || evs[1].Event.Text != "é" {
		t.Fatalf("event %+v", evs[1])
	}
	// ReadAll's events have a line and no file.
	evs, err = events.ReadAll(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if w := evs[1].Where(1); w != "line 3" {
		t.Fatalf("Where = %q", w)
	}
	if w := (&events.Timed{}).Where(4); w != "event 5" {
		t.Fatalf("Where = %q", w)
	}
}

// With problems, ReadFile still hands back the events that read, so a
// checker can check those too; ReadAll stops at the first problem.
func TestReadFileKeepsWhatRead(t *testing.T) {
	in := "{\"event_type\":\"speech_end\",\"ts_sec\":5}\n{oops\n{\"event_type\":\"slide_changed\",\"ts_sec\":6}\n"
	evs, err := events.ReadFile("c.jsonl", strings.NewReader(in))
	if err == nil || len(evs) != 2 || evs[1].Event.Type != "slide_changed" || evs[1].Line != 3 {
		t.Fatalf("events %+v, err %v", evs, err)
	}
	evs, err = events.ReadAll(strings.NewReader(in))
	if err == nil || evs != nil || !strings.HasPrefix(err.Error(), "line 2: invalid JSON") {
		t.Fatalf("events %+v, err %v", evs, err)
	}
}

// A file that is not events at all is not reported line by line without
// end.
func TestReadFileBoundsProblems(t *testing.T) {
	in := strings.Repeat("{\"ts_sec\":1}\n", 500)
	_, err := events.ReadFile("c.jsonl", strings.NewReader(in))
	var el rules.ErrorList
	if !errors.As(err, &el) || len(el) != 101 || el[100].Msg != "more than 100 problems; fix these first" {
		t.Fatalf("%d problems, last %v", len(el), el[len(el)-1])
	}
}

// DecodeLine decodes again as YAML to place a problem, which only works
// while the json and yaml tags of the wire types name the same fields.
func TestWireTagsAgree(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[events.Wire](), reflect.TypeFor[events.Data]()} {
		for f := range typ.Fields() {
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if j != y {
				t.Errorf("%s.%s: json %q, yaml %q", typ.Name(), f.Name, j, y)
			}
		}
	}
}
