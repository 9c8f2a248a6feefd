package events_test

import (
	"os"
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
