package scenarios_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/llm/gemini/geminifake"
	"github.com/batonhq/baton/runtime/record"
)

// standIn plays Hot Seat's Brain and jurors the way a cooperative model
// does, reading only what the Gemini API puts in front of a model: valid
// JSON for every schema, a question on a juror's first turn and a
// transfer on its second, endPanel as soon as it is the only tool, and a
// question again when a call comes back refused. patient makes it ask its
// question when its turn's goal says so even if endPanel is the only
// tool, as a model that reads the whole brief does. stubborn makes its
// first transfer of each turn go to a finished juror when there is one,
// named in the tool's description, as a model that skims the roster would.
type standIn struct {
	patient  bool
	stubborn bool

	mu     sync.Mutex
	turns  map[string]int // juror turns seen, by the system instruction's name
	wrongs int
}

func (m *standIn) behave(req *geminifake.Request) geminifake.Reply {
	if gc := req.GenerationConfig; gc != nil && len(gc.ResponseJSONSchema) > 0 {
		var sc map[string]any
		if err := json.Unmarshal(gc.ResponseJSONSchema, &sc); err != nil {
			return geminifake.Error(400, "schema: "+err.Error())
		}
		return geminifake.JSON(instance(sc))
	}
	decls := map[string]geminifake.FunctionDeclaration{}
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			decls[d.Name] = d
		}
	}
	if len(decls) == 0 {
		return geminifake.Text("Noted: the cut-over night, the token export and the missing rollback are the weak points.")
	}
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil && strings.Contains(string(p.FunctionResponse.Response), `"error"`) {
			if _, ok := decls["transfer"]; ok {
				r := m.transfer(decls["transfer"], false)
				r.Text = "" // it has said its line already
				return r
			}
			return geminifake.Text("Before we close: what happens to refunds during the cut-over?")
		}
	}
	if _, ok := decls["transfer"]; !ok {
		if m.patient && strings.Contains(lastText(req), "ask_loaded_question") {
			return geminifake.Text("Last question from me: what happens to refunds during the cut-over?")
		}
		return geminifake.Calls(geminifake.Call{Name: "endPanel", Args: map[string]any{}})
	}
	who := systemText(req)
	m.mu.Lock()
	m.turns[who]++
	n := m.turns[who]
	m.mu.Unlock()
	if n%2 == 1 {
		return geminifake.Text("How will you prove the export worked before you switch traffic?")
	}
	return m.transfer(decls["transfer"], m.stubborn)
}

func (m *standIn) transfer(d geminifake.FunctionDeclaration, stubborn bool) geminifake.Reply {
	var sc struct {
		Properties struct {
			Colleague struct {
				Enum []string `json:"enum"`
			} `json:"colleague"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(d.ParametersJSONSchema, &sc)
	to := ""
	if enum := sc.Properties.Colleague.Enum; len(enum) > 0 {
		to = enum[0]
	}
	if _, finished, ok := strings.Cut(d.Description, "Finished, do not call: "); stubborn && ok {
		to = strings.TrimRight(strings.Split(finished, ",")[0], ". ")
		m.mu.Lock()
		m.wrongs++
		m.mu.Unlock()
	}
	return geminifake.Reply{
		Text:  "Thank you, that answers my question.",
		Calls: []geminifake.Call{{Name: "transfer", Args: map[string]any{"colleague": to, "reason": "answered", "summary": "the candidate answered"}}},
	}
}

// lastText is the text of the newest user turn: baton's brief of the turn.
func lastText(req *geminifake.Request) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if c := req.Contents[i]; c.Role == "user" {
			var b strings.Builder
			for _, p := range c.Parts {
				b.WriteString(p.TextOf())
			}
			if b.Len() > 0 {
				return b.String()
			}
		}
	}
	return ""
}

func systemText(req *geminifake.Request) string {
	if req.SystemInstruction == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range req.SystemInstruction.Parts {
		b.WriteString(p.TextOf())
	}
	s := b.String()
	if i := strings.Index(s, "You are "); i >= 0 {
		s = s[i:]
		if j := strings.Index(s, ","); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

// instance makes a value that satisfies a JSON schema: enum values,
// minimums, minItems copies of the item, every required property.
func instance(sc map[string]any) any {
	if e, ok := sc["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch sc["type"] {
	case "object":
		out := map[string]any{}
		props, _ := sc["properties"].(map[string]any)
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				out[k] = instance(sub)
			}
		}
		return out
	case "array":
		items, _ := sc["items"].(map[string]any)
		n, _ := sc["minItems"].(float64)
		out := []any{}
		for range max(int(n), 1) {
			out = append(out, instance(items))
		}
		return out
	case "integer", "number":
		if v, ok := sc["minimum"].(float64); ok {
			return v + 60
		}
		return 70
	case "boolean":
		return false
	}
	return "A considered answer."
}

func runHotSeatOnGemini(t *testing.T, m *standIn) (*rules.Pack, *record.Result, *geminifake.Server) {
	t.Helper()
	m.turns = map[string]int{}
	srv := geminifake.New(m.behave)
	t.Cleanup(srv.Close)
	p, res := runBundled(t, "hotseat", srv)
	srv.RequireValid(t)
	return p, res, srv
}

func timeline(recs []record.Record) string {
	var b strings.Builder
	for i := range recs {
		b.WriteString(record.TextLine(&recs[i]) + "\n")
	}
	return b.String()
}

// TestHotSeatOnGemini runs Hot Seat through the official SDK against a
// strict stand-in of the Gemini API (a Gemini 3 model, so signatures are
// enforced) playing a cooperative model: the jurors are told whom they may
// call and never guess, nothing is refused, the panel reaches its verdict,
// and the recorded run replays byte for byte, vendor signatures included.
func TestHotSeatOnGemini(t *testing.T) {
	m := &standIn{patient: true}
	p, res, srv := runHotSeatOnGemini(t, m)
	tl := timeline(res.Records)
	if err := outcomes["hotseat"](res.Records); err != nil {
		t.Fatalf("%v\n%s", err, tl)
	}
	var refusedTransfers, endPanelRefused, endPanelOK, adapterErrors int
	for _, r := range res.Records {
		switch {
		case r.Type == engine.EffectToolResult && r.Kind == "transfer" && r.IsError:
			refusedTransfers++
		case r.Type == engine.EffectToolResult && r.Kind == "endPanel" && r.IsError:
			endPanelRefused++
		case r.Type == engine.EffectToolResult && r.Kind == "endPanel":
			endPanelOK++
		case r.Type == engine.EffectAdapterError:
			adapterErrors++
		}
	}
	if refusedTransfers != 0 || adapterErrors != 0 {
		t.Errorf("%d refused transfers, %d adapter errors; want none\n%s", refusedTransfers, adapterErrors, tl)
	}
	if endPanelRefused != 0 || endPanelOK != 1 {
		t.Errorf("endPanel refused %d times and accepted %d; want one call, after the answer, accepted\n%s", endPanelRefused, endPanelOK, tl)
	}

	// The model saw each attachment labelled, and every juror turn that
	// offered transfer named the colleagues it may call.
	sawLabel, offered := false, 0
	for _, r := range srv.Requests() {
		for _, c := range r.Request.Contents {
			for _, part := range c.Parts {
				sawLabel = sawLabel || strings.Contains(part.TextOf(), "architecture.pdf")
			}
		}
		for _, tool := range r.Request.Tools {
			for _, d := range tool.FunctionDeclarations {
				if d.Name == "transfer" {
					offered++
					if !strings.Contains(d.Description, "Available colleagues") || !strings.Contains(string(d.ParametersJSONSchema), `"enum"`) {
						t.Errorf("transfer offered without its roster: %q %s", d.Description, d.ParametersJSONSchema)
					}
				}
			}
		}
	}
	if !sawLabel || offered == 0 {
		t.Errorf("attachment labelled: %t; transfer offered %d times", sawLabel, offered)
	}

	replaysByteForByte(t, p, res)
}

// TestHotSeatEndPanelAtOnce: a final juror that calls endPanel the moment
// it is the only tool is refused with a reason it acts on: it asks, the
// candidate answers, and then the panel closes.
func TestHotSeatEndPanelAtOnce(t *testing.T) {
	m := &standIn{}
	_, res, _ := runHotSeatOnGemini(t, m)
	tl := timeline(res.Records)
	if err := outcomes["hotseat"](res.Records); err != nil {
		t.Fatalf("%v\n%s", err, tl)
	}
	var seq []string
	for _, r := range res.Records {
		switch {
		case r.Type == engine.EffectToolResult && r.Kind == "endPanel" && r.IsError:
			seq = append(seq, "refused")
		case r.Type == engine.EffectToolResult && r.Kind == "endPanel":
			seq = append(seq, "accepted")
		case r.Type == engine.EffectAgentMessage && r.Agent == "james" && r.Kind == "handoff":
			seq = append(seq, "asked")
		case r.Type == engine.EffectRouted && r.Agent == "james":
			seq = append(seq, "answered")
		}
	}
	if got := strings.Join(seq, " "); got != "refused asked answered accepted" {
		t.Fatalf("final juror: %s; want refused asked answered accepted\n%s", got, tl)
	}
}

// TestHotSeatJurorPicksFinished: a juror that names a finished colleague
// recovers within one refusal, because the refusal and the tool's enum
// both name who may be called.
func TestHotSeatJurorPicksFinished(t *testing.T) {
	m := &standIn{stubborn: true}
	_, res, _ := runHotSeatOnGemini(t, m)
	tl := timeline(res.Records)
	if err := outcomes["hotseat"](res.Records); err != nil {
		t.Fatalf("%v\n%s", err, tl)
	}
	if m.wrongs == 0 {
		t.Fatalf("the stand-in never picked a finished juror: the test proves nothing\n%s", tl)
	}
	// Every refused transfer is followed by an accepted one from the same
	// juror before anything else that juror does with the tool.
	pending := map[string]int{}
	for _, r := range res.Records {
		if r.Type != engine.EffectToolResult || r.Kind != "transfer" {
			continue
		}
		if r.IsError {
			pending[r.Agent]++
			if pending[r.Agent] > 1 {
				t.Fatalf("%s refused twice in a row at %s\n%s", r.Agent, rules.FormatClock(r.T), tl)
			}
			continue
		}
		pending[r.Agent] = 0
	}
	for who, n := range pending {
		if n > 0 {
			t.Errorf("%s never recovered from a refused transfer", who)
		}
	}
}
