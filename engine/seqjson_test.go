package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: a string is written exactly as encoding/json writes
// it, whatever its bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "<b>&amp;</b>", "\x00\x1f\x7f", "\u2028\u2029", "é ☃ 😀", "\xff\xfe bad", "\t\n\r\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}

// The sequence effects' data, written by hand, is what encoding/json
// writes for the same fields.
func TestSequenceDataIsJSON(t *testing.T) {
	type plainResponse AgentResponse // the fields and tags, not the method
	responses := []AgentResponse{
		{Agent: "gpt", RunID: "r<1>", Round: 2, Status: StatusSuccess, Content: "I am GPT.\n\"Quoted\" & <tagged>"},
		{Agent: "claude", Status: StatusError, ErrorCode: "rate_limit", ErrorMessage: "rate_limit: 429"},
		{Agent: "gemini", Status: StatusSkipped},
		{Status: StatusTimeout, Content: "\u2028partial\xff"},
	}
	for _, a := range responses {
		want, _ := json.Marshal(plainResponse(a))
		if got := seqData(&a); !bytes.Equal(got, want) {
			t.Errorf("AgentResponse\n got %s\nwant %s", got, want)
		}
	}
	type plainStarted AgentStarted
	st := AgentStarted{Agent: "gemini", RunID: "x", Round: 5, Call: 15}
	if got, want := seqData(&st), mustJSON(t, plainStarted(st)); !bytes.Equal(got, want) {
		t.Errorf("AgentStarted\n got %s\nwant %s", got, want)
	}
	rounds := []SequenceRound{{Number: 1, Responses: responses[:3]}, {Number: 2, Responses: responses[2:]}}
	for _, x := range []Exchange{
		{RunID: "r1", Sequence: "exchange", Prompt: "Why <now>?"},
		{RunID: "r1", Sequence: "exchange", Reason: EndUnanimous, Calls: 6, Rounds: rounds},
		{RunID: "r2", Sequence: "exchange", Reason: "exchange r1 is still running", Running: "r1"},
	} {
		if got, want := seqData(&x), exchangeJSON(t, x); !bytes.Equal(got, want) {
			t.Errorf("Exchange\n got %s\nwant %s", got, want)
		}
	}
	rd := roundDone{runID: "r1", round: &rounds[0]}
	want := mustJSON(t, struct {
		RunID  string `json:"run_id"`
		Number int    `json:"roundNumber"`
	}{"r1", 1})
	want = append(want[:len(want)-1], `,"responsesByAgent":`...)
	want = append(append(want, responsesJSON(t, rounds[0].Responses)...), '}')
	if got := seqData(&rd); !bytes.Equal(got, want) {
		t.Errorf("roundDone\n got %s\nwant %s", got, want)
	}
	g := GateRead{RunID: "r1", Round: 1, Source: "fallback", Flags: Flags{{"CALL_CLAUDE", true}, {"REASON_TAG", "fall<back>"}}, Why: "no flag block"}
	wantGate := []byte(`{"run_id":"r1","round":1,"source":"fallback","flags":{"CALL_CLAUDE":true,"REASON_TAG":"fall\u003cback\u003e"},"why":"no flag block"}`)
	if got := seqData(&g); !bytes.Equal(got, wantGate) || !json.Valid(got) {
		t.Errorf("GateRead\n got %s\nwant %s", got, wantGate)
	}
	// And they read back.
	var back Exchange
	if err := json.Unmarshal(seqData(&Exchange{RunID: "r", Sequence: "s", Rounds: rounds}), &back); err != nil || len(back.Rounds) != 2 || len(back.Rounds[0].Responses) != 3 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// responsesJSON is a round's answers as encoding/json writes each, keyed
// by agent in the order asked.
func responsesJSON(t *testing.T, rs Responses) []byte {
	type plainResponse AgentResponse
	b := []byte{'{'}
	for i, a := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, mustJSON(t, a.Agent)...), ':')
		a.Agent, a.RunID, a.Round = "", "", 0
		b = append(b, mustJSON(t, plainResponse(a))...)
	}
	return append(b, '}')
}

func exchangeJSON(t *testing.T, x Exchange) []byte {
	type round struct {
		Number    int             `json:"roundNumber"`
		Responses json.RawMessage `json:"responsesByAgent"`
	}
	type plain struct {
		RunID    string  `json:"run_id"`
		Sequence string  `json:"sequence"`
		Prompt   string  `json:"prompt,omitempty"`
		Reason   string  `json:"reason,omitempty"`
		Running  string  `json:"running,omitempty"`
		Calls    int     `json:"calls,omitempty"`
		Rounds   []round `json:"rounds,omitempty"`
	}
	p := plain{x.RunID, x.Sequence, x.Prompt, x.Reason, x.Running, x.Calls, nil}
	for _, rd := range x.Rounds {
		p.Rounds = append(p.Rounds, round{rd.Number, responsesJSON(t, rd.Responses)})
	}
	return mustJSON(t, p)
}
