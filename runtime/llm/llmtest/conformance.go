package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/llm"
)

// Conformance runs every property against v, each as a subtest with its own
// fake. Any request a fake refuses fails the subtest that sent it.
func Conformance(t *testing.T, v Vendor) {
	t.Helper()
	for _, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			p.run(t, v)
		})
	}
}

var properties = []struct {
	name string
	run  func(*testing.T, Vendor)
}{
	{"text", testText},
	{"tool_loop", testToolLoop},
	{"attachments", testAttachments},
	{"schema_output", testSchemaOutput},
	{"errors", testErrors},
	{"deadline", testDeadline},
	{"canceled", testCanceled},
	{"retry_sends_the_same_request", testRetryIdentical},
	{"retries_are_the_policys", testRetryPolicy},
	{"retry_waits_for_the_vendors_hint", testRetryHint},
	{"hint_past_the_budget_gives_up_at_once", testHintPastBudget},
	{"finish_reasons", testFinish},
	{"invalid_request_stays_local", testInvalidStaysLocal},
	{"concurrent_calls", testConcurrent},
	{"fake_is_strict", testFakeIsStrict},
}

// requireValid fails t unless the fake received exactly n requests and
// accepted all of them; it returns them.
func requireValid(t *testing.T, f Fake, n int) []Received {
	t.Helper()
	got := f.Requests()
	for i, r := range got {
		if r.Err != nil {
			t.Errorf("request %d was refused by the fake: %v\nbody: %s", i, r.Err, r.Body)
		}
	}
	if len(got) != n {
		t.Fatalf("the fake received %d requests, want %d", len(got), n)
	}
	if t.Failed() {
		t.FailNow()
	}
	return got
}

func generate(t *testing.T, m llm.Model, req llm.Request) llm.Response {
	t.Helper()
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func text(s string) Part { return Part{Text: s} }

func describe(m Message) string {
	var b strings.Builder
	b.WriteString(m.Role + ":")
	for _, p := range m.Parts {
		switch {
		case p.Blob != nil:
			fmt.Fprintf(&b, " [blob %s %d bytes]", p.Blob.MIME, len(p.Blob.Data))
		case p.Call != nil:
			fmt.Fprintf(&b, " [call id=%q %s %s sig=%d bytes]", p.Call.ID, p.Call.Name, p.Call.Args, len(p.Call.Signature))
		case p.Result != nil:
			fmt.Fprintf(&b, " [result id=%q %s %s]", p.Result.CallID, p.Result.Name, p.Result.Content)
		default:
			fmt.Fprintf(&b, " %q", p.Text)
		}
	}
	return b.String()
}

func describeAll(ms []Message) string {
	var lines []string
	for i, m := range ms {
		lines = append(lines, fmt.Sprintf("  %d %s", i, describe(m)))
	}
	return strings.Join(lines, "\n")
}

// testText: a plain multi-turn conversation reaches the model as written,
// and the answer comes back.
func testText(t *testing.T, v Vendor) {
	f := v.Start(t, Say("Share your first containment step."))
	temp := float32(0.25)
	resp := generate(t, f.Model(), llm.Request{
		System: "You are QA.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Hello"},
			{Role: llm.RoleModel, Text: "tech_lead: Hi."},
			{Role: llm.RoleUser, Text: "Go on"},
		},
		MaxOutputTokens: 256,
		Temperature:     &temp,
	})
	if resp.Text != "Share your first containment step." || len(resp.ToolCalls) != 0 {
		t.Errorf("response = %+v", resp)
	}
	if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	view := requireValid(t, f, 1)[0].View
	if view.System != "You are QA." {
		t.Errorf("system = %q", view.System)
	}
	want := []Message{
		{Role: llm.RoleUser, Parts: []Part{text("Hello")}},
		{Role: llm.RoleModel, Parts: []Part{text("tech_lead: Hi.")}},
		{Role: llm.RoleUser, Parts: []Part{text("Go on")}},
	}
	if !reflect.DeepEqual(view.Messages, want) {
		t.Errorf("the model read:\n%s\nwant:\n%s", describeAll(view.Messages), describeAll(want))
	}
}

// testToolLoop plays three steps of one turn's tool loop: the model speaks
// and calls two tools in parallel, the engine refuses one; the model tries
// another tool; the model answers. It checks that IDs are the model's own
// (never invented), that IDs the engine assigns and signatures come back
// exactly with their calls, that the refusal reaches the model as the
// engine wrote it (not wrapped again), and that each request repeats the
// history before it unchanged.
func testToolLoop(t *testing.T, v Vendor) {
	caps := v.Caps()
	noID := func(id string) string {
		if caps.OptionalCallIDs {
			return ""
		}
		return id
	}
	params := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	tools := []llm.ToolDecl{
		{Name: "lookup_ticket", Description: "Fetch a ticket by id", Parameters: params},
		{Name: "escalate", Description: "Escalate a ticket to the on-call engineer", Parameters: params},
	}
	f := v.Start(t,
		Reply{Text: "Let me check both tickets.", Calls: []Call{
			{ID: "srv-1", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-1"}`)},
			{ID: noID("srv-2"), Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-2"}`)},
		}},
		CallTools(Call{ID: noID("srv-3"), Name: "escalate", Args: json.RawMessage(`{"id":"PAY-2"}`)}),
		Say("PAY-1 is open; PAY-2 is escalated as ESC-7."),
	)
	m := f.Model()

	// The engine gives calls without an ID session-unique ones.
	assigned := 0
	assign := func(calls []llm.ToolCall) []llm.ToolCall {
		out := append([]llm.ToolCall(nil), calls...)
		for i := range out {
			if out[i].ID == "" {
				assigned++
				out[i].ID = fmt.Sprintf("engine-%d", assigned)
			}
		}
		return out
	}

	req := llm.Request{
		System:   "You are the tech lead.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "What is the state of PAY-1 and PAY-2?"}},
		Tools:    tools,
	}
	first := generate(t, m, req)
	if first.Text != "Let me check both tickets." {
		t.Errorf("step 1 text = %q", first.Text)
	}
	if len(first.ToolCalls) != 2 {
		t.Fatalf("step 1 tool calls = %+v, want 2", first.ToolCalls)
	}
	for i, want := range []Call{{ID: "srv-1", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-1"}`)}, {ID: noID("srv-2"), Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-2"}`)}} {
		got := first.ToolCalls[i]
		if got.ID != want.ID {
			t.Errorf("step 1 call %d ID = %q, want %q (the model's own ID, none when it gave none)", i, got.ID, want.ID)
		}
		if got.Name != want.Name || !jsonEqual(got.Args, want.Args) {
			t.Errorf("step 1 call %d = %s %s, want %s %s", i, got.Name, got.Args, want.Name, want.Args)
		}
	}
	if caps.Signatures && len(first.ToolCalls[0].Signature) == 0 {
		t.Errorf("step 1: the first call has no signature")
	}

	calls1 := assign(first.ToolCalls)
	refusal := json.RawMessage(`{"error":"tool lookup_ticket refused: PAY-2 is outside your scope (available: escalate)"}`)
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, Text: first.Text, ToolCalls: calls1},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: calls1[0].ID, Name: calls1[0].Name, Content: json.RawMessage(`{"status":"open"}`)}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: calls1[1].ID, Name: calls1[1].Name, Content: refusal, IsError: true}},
	)
	second := generate(t, m, req)
	if len(second.ToolCalls) != 1 || second.ToolCalls[0].Name != "escalate" || second.ToolCalls[0].ID != noID("srv-3") {
		t.Fatalf("step 2 tool calls = %+v, want one escalate call with ID %q", second.ToolCalls, noID("srv-3"))
	}
	if caps.Signatures && len(second.ToolCalls[0].Signature) == 0 {
		t.Errorf("step 2: the call has no signature")
	}

	calls2 := assign(second.ToolCalls)
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, ToolCalls: calls2},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: calls2[0].ID, Name: calls2[0].Name, Content: json.RawMessage(`{"ticket":"ESC-7"}`)}},
	)
	third := generate(t, m, req)
	if third.Text != "PAY-1 is open; PAY-2 is escalated as ESC-7." || len(third.ToolCalls) != 0 {
		t.Errorf("step 3 response = %+v", third)
	}

	got := requireValid(t, f, 3)
	v2, v3 := got[1].View, got[2].View
	step1 := []Message{
		{Role: llm.RoleModel, Parts: []Part{text(first.Text), callPart(calls1[0]), callPart(calls1[1])}},
		{Role: llm.RoleUser, Parts: []Part{
			resultPart(calls1[0], `{"status":"open"}`),
			resultPart(calls1[1], string(refusal)),
		}},
	}
	checkTail(t, "request 2", v2.Messages, 1, step1)
	step2 := []Message{
		{Role: llm.RoleModel, Parts: []Part{callPart(calls2[0])}},
		{Role: llm.RoleUser, Parts: []Part{resultPart(calls2[0], `{"ticket":"ESC-7"}`)}},
	}
	checkTail(t, "request 3", v3.Messages, 1, append(step1, step2...))
	if len(v3.Messages) < len(v2.Messages) || !reflect.DeepEqual(v3.Messages[:len(v2.Messages)], v2.Messages) {
		t.Errorf("request 3 does not repeat request 2's history unchanged:\nrequest 2:\n%s\nrequest 3:\n%s", describeAll(v2.Messages), describeAll(v3.Messages))
	}
	for _, r := range got {
		checkNotDoubleWrapped(t, r.View)
	}
	if !reflect.DeepEqual(v3.Tools, []string{"lookup_ticket", "escalate"}) {
		t.Errorf("declared tools = %v", v3.Tools)
	}
}

func callPart(c llm.ToolCall) Part {
	return Part{Call: &llm.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args, Signature: c.Signature}}
}

func resultPart(c llm.ToolCall, content string) Part {
	return Part{Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: json.RawMessage(content)}}
}

// checkTail compares the messages of a view after the first skip ones with
// want: calls by ID, name, args (as JSON values) and signature bytes,
// results by call ID, name and content (as JSON values).
func checkTail(t *testing.T, what string, got []Message, skip int, want []Message) {
	t.Helper()
	if len(got) != skip+len(want) {
		t.Errorf("%s: the model read %d messages, want %d:\n%s", what, len(got), skip+len(want), describeAll(got))
		return
	}
	for i, w := range want {
		g := got[skip+i]
		if !sameMessage(g, w) {
			t.Errorf("%s: message %d:\n got %s\nwant %s", what, skip+i, describe(g), describe(w))
		}
	}
}

func sameMessage(g, w Message) bool {
	if g.Role != w.Role || len(g.Parts) != len(w.Parts) {
		return false
	}
	for i := range w.Parts {
		gp, wp := g.Parts[i], w.Parts[i]
		switch {
		case wp.Call != nil:
			if gp.Call == nil || gp.Call.ID != wp.Call.ID || gp.Call.Name != wp.Call.Name ||
				!jsonEqual(orEmpty(gp.Call.Args), orEmpty(wp.Call.Args)) || !bytes.Equal(gp.Call.Signature, wp.Call.Signature) {
				return false
			}
		case wp.Result != nil:
			if gp.Result == nil || gp.Result.CallID != wp.Result.CallID || gp.Result.Name != wp.Result.Name ||
				!jsonEqual(gp.Result.Content, wp.Result.Content) {
				return false
			}
		case wp.Blob != nil:
			if gp.Blob == nil || gp.Blob.MIME != wp.Blob.MIME || !bytes.Equal(gp.Blob.Data, wp.Blob.Data) {
				return false
			}
		default:
			if !gp.IsText() || gp.Text != wp.Text {
				return false
			}
		}
	}
	return true
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

// checkNotDoubleWrapped fails t if a tool result reads as an error inside
// an error ({"error": {"error": ...}}): the engine's refusals are already
// {"error": "..."} and must reach the model as they are.
func checkNotDoubleWrapped(t *testing.T, v View) {
	t.Helper()
	for _, m := range v.Messages {
		for _, p := range m.Parts {
			if p.Result == nil {
				continue
			}
			var obj map[string]any
			if json.Unmarshal(p.Result.Content, &obj) != nil {
				continue
			}
			if inner, ok := obj["error"].(map[string]any); ok {
				if _, again := inner["error"]; again {
					t.Errorf("tool result for %s is an error wrapped in an error: %s", p.Result.Name, p.Result.Content)
				}
			}
		}
	}
}

// testAttachments: each attached file reaches the model with its name and
// type in a text part right before it.
func testAttachments(t *testing.T, v Vendor) {
	f := v.Start(t, Say("The CV lists Go and Kafka."))
	blobs := []llm.Blob{
		{Name: "cv.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7\n% a tiny test document\n")},
		{Name: "notes \"final\".txt", MIME: "text/plain", Data: []byte("line one\nline two\n")},
		{MIME: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
	}
	generate(t, f.Model(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Review the candidate's files.", Blobs: blobs}}})
	view := requireValid(t, f, 1)[0].View
	if len(view.Messages) != 1 {
		t.Fatalf("the model read %d messages:\n%s", len(view.Messages), describeAll(view.Messages))
	}
	parts := view.Messages[0].Parts
	if len(parts) == 0 || !parts[0].IsText() || parts[0].Text != "Review the candidate's files." {
		t.Fatalf("the message does not start with its text:\n%s", describe(view.Messages[0]))
	}
	caps := v.Caps()
	next := 0
	for i, p := range parts {
		if next >= len(blobs) {
			if p.Blob != nil {
				t.Fatalf("more blobs than files:\n%s", describe(view.Messages[0]))
			}
			continue
		}
		want := blobs[next]
		asText := caps.TextFilesAsText && strings.HasPrefix(want.MIME, "text/")
		switch {
		case asText && i > 1 && p.IsText() && p.Text == string(want.Data):
			// The file's content as text, after its label.
		case p.Blob == nil:
			continue
		case asText:
			t.Errorf("file %d (%s) went as a blob; this vendor takes text files as text", next+1, want.Name)
		case p.Blob.MIME != want.MIME || !bytes.Equal(p.Blob.Data, want.Data):
			t.Errorf("blob %d = %s %q, want %s %q", next+1, p.Blob.MIME, p.Blob.Data, want.MIME, want.Data)
		}
		next++
		if i == 0 || !parts[i-1].IsText() {
			t.Errorf("file %d (%s) has no text part right before it:\n%s", next, want.Name, describe(view.Messages[0]))
			continue
		}
		label := parts[i-1].Text
		if !strings.Contains(label, want.MIME) {
			t.Errorf("the text before file %d, %q, does not give its type %s", next, label, want.MIME)
		}
		if want.Name != "" && !strings.Contains(label, want.Name) && !strings.Contains(label, strings.Trim(fmt.Sprintf("%q", want.Name), `"`)) {
			t.Errorf("the text before file %d, %q, does not name it %q", next, label, want.Name)
		}
	}
	if next != len(blobs) {
		t.Errorf("the model read %d files, want %d:\n%s", next, len(blobs), describe(view.Messages[0]))
	}
}

// testSchemaOutput: a response schema reaches the vendor as a JSON schema
// for the output, and the JSON answer comes back as text.
func testSchemaOutput(t *testing.T, v Vendor) {
	answer := `{"text":"Pick one: hotfix or launch?","intent_tag":"tl_priority"}`
	f := v.Start(t, Say(answer))
	resp := generate(t, f.Model(), llm.Request{
		Messages:       []llm.Message{{Role: llm.RoleUser, Text: "Ask the candidate to prioritise."}},
		ResponseSchema: llm.ReplySchema,
	})
	if resp.Text != answer {
		t.Errorf("text = %q, want %q", resp.Text, answer)
	}
	if reply, tag := llm.ParseReply(resp.Text); reply != "Pick one: hotfix or launch?" || tag != "tl_priority" {
		t.Errorf("ParseReply = %q, %q", reply, tag)
	}
	view := requireValid(t, f, 1)[0].View
	if !jsonEqual(view.ResponseSchema, llm.ReplySchema) {
		t.Errorf("response schema = %s, want %s", view.ResponseSchema, llm.ReplySchema)
	}
}

var hello = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

// testErrors: HTTP failures are classified, with the status kept, and the
// adapter makes exactly one request (retrying is llm.WithPolicy's job).
func testErrors(t *testing.T, v Vendor) {
	tests := []struct {
		status    int
		kind      llm.Kind
		retryable bool
	}{
		{http.StatusTooManyRequests, llm.KindRateLimit, true},
		{http.StatusInternalServerError, llm.KindServer, true},
		{http.StatusServiceUnavailable, llm.KindServer, true},
		{http.StatusBadRequest, llm.KindBadRequest, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := v.Start(t, Fail(tt.status))
			_, err := f.Model().Generate(context.Background(), hello)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Errorf("got kind=%s status=%d retryable=%v, want %s %d %v (%v)", e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable, err)
			}
			if ae := llm.AsAdapterError(err); ae == nil || ae.Kind != string(tt.kind) {
				t.Errorf("adapter error = %+v", ae)
			}
			requireValid(t, f, 1)
		})
	}
}

// testDeadline: a call that outlives its context is a retryable timeout
// that keeps the context's error.
func testDeadline(t *testing.T, v Vendor) {
	f := v.Start(t, Stall())
	// The deadline passes once the request is in the fake, not after a
	// set time, so the outcome does not depend on the machine's speed.
	ctx := newDeadline()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for len(f.Requests()) == 0 {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		ctx.expire()
	}()
	_, err := f.Model().Generate(ctx, hello)
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindTimeout || !e.Retryable {
		t.Fatalf("err = %v, want a retryable timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the context's error is lost: %v", err)
	}
	requireValid(t, f, 1)
}

// deadline is a context whose deadline passes when expire is called.
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline() *deadline {
	return &deadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *deadline) expire()                     { d.once.Do(func() { close(d.done) }) }
func (d *deadline) Done() <-chan struct{}       { return d.done }
func (d *deadline) Deadline() (time.Time, bool) { return time.Time{}, false }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// testCanceled: a call the host abandons is canceled, not retried.
func testCanceled(t *testing.T, v Vendor) {
	f := v.Start(t, Stall())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the request is in the fake.
		for len(f.Requests()) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := f.Model().Generate(ctx, hello)
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindCanceled || e.Retryable {
		t.Fatalf("err = %v, want a non-retryable cancel", err)
	}
	requireValid(t, f, 1)
}

// testRetryIdentical: requests are stateless, so a retry of a failed call
// sends byte-identical bytes (and a replayed session the same requests).
func testRetryIdentical(t *testing.T, v Vendor) {
	f := v.Start(t, Fail(http.StatusInternalServerError), Say("ok"))
	req := llm.Request{
		System:   "You are QA.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Walk me through the retry path."}},
		Tools:    []llm.ToolDecl{{Name: "lookup_ticket", Description: "Fetch a ticket", Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}},
	}
	if _, err := f.Model().Generate(context.Background(), req); llm.Classify(err) == nil || llm.Classify(err).Kind != llm.KindServer {
		t.Fatalf("first attempt: err = %v, want a server error", err)
	}
	if resp := generate(t, f.Model(), req); resp.Text != "ok" {
		t.Errorf("second attempt text = %q", resp.Text)
	}
	got := requireValid(t, f, 2)
	if !bytes.Equal(got[0].Body, got[1].Body) {
		t.Errorf("the retry sent different bytes:\n%s\n%s", got[0].Body, got[1].Body)
	}
}

// testRetryPolicy: with the SDK's own retries off, llm.WithPolicy owns
// them: a rate limit and an overloaded server are each retried once the
// policy's backoff has passed on its clock (a fake one the test moves),
// and the third call's answer comes back.
func testRetryPolicy(t *testing.T, v Vendor) {
	f := v.Start(t, Fail(http.StatusTooManyRequests), Fail(http.StatusServiceUnavailable), Say("finally"))
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := llm.DefaultRetryPolicy()
	pol.Rand = func() float64 { return 1 } // the whole step: no jitter
	m := llm.WithPolicy(f.Model(), pol, clk)
	type result struct {
		resp llm.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := m.Generate(context.Background(), hello)
		done <- result{resp, err}
	}()
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		want := clk.Now().Add(wait)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := clk.WaitFor(ctx, func(armed []time.Time) bool { return slices.ContainsFunc(armed, want.Equal) })
		cancel()
		if err != nil {
			t.Fatalf("no %v backoff on the policy's clock (armed: %v)", wait, clk.Armed())
		}
		clk.Advance(wait)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if requireValid(t, f, 3); r.resp.Text != "finally" {
		t.Fatalf("text %q after the retries", r.resp.Text)
	}
}

// testInvalidStaysLocal: a request the adapter cannot express fails as a
// bad request before anything is sent.
func testInvalidStaysLocal(t *testing.T, v Vendor) {
	f := v.Start(t)
	_, err := f.Model().Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "narrator", Text: "x"}}})
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindBadRequest || e.Retryable {
		t.Errorf("err = %v, want a non-retryable bad request", err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("the fake received %d requests, want none", n)
	}
}

// testConcurrent: one Model serves a panel's concurrent calls.
func testConcurrent(t *testing.T, v Vendor) {
	const n = 8
	script := make([]Reply, n)
	for i := range script {
		script[i] = Say("ok")
	}
	f := v.Start(t, script...)
	m := f.Model()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: fmt.Sprintf("agent %d speaks", i)}}}
			resp, err := m.Generate(context.Background(), req)
			if err == nil && resp.Text != "ok" {
				err = fmt.Errorf("text %q", resp.Text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	requireValid(t, f, n)
}

// testFakeIsStrict guards the suite itself: the fake's validation accepts
// what the adapter sent and refuses it with an undocumented field added.
func testFakeIsStrict(t *testing.T, v Vendor) {
	f := v.Start(t, Say("ok"))
	generate(t, f.Model(), hello)
	body := requireValid(t, f, 1)[0].Body
	if err := f.Validate(body); err != nil {
		t.Fatalf("Validate refuses the request the fake accepted: %v", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("the request body is not a JSON object: %v", err)
	}
	obj["llmtestUndocumentedField"] = true
	bad, _ := json.Marshal(obj)
	if err := f.Validate(bad); err == nil {
		t.Errorf("Validate accepts a request with an undocumented field:\n%s", bad)
	}
}

// testRetryHint: a 429 that says when to come back (each vendor's own
// way) is retried no sooner than that, even when the backoff step is
// shorter, and no later than the policy's step would allow beyond it.
func testRetryHint(t *testing.T, v Vendor) {
	f := v.Start(t, Throttle(2*time.Second), Say("after the wait"))
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := llm.RetryPolicy{MaxAttempts: 3, Backoff: []time.Duration{time.Second}, Total: time.Minute, Rand: func() float64 { return 0.5 }}
	done := make(chan error, 1)
	var resp llm.Response
	go func() {
		var err error
		resp, err = llm.WithPolicy(f.Model(), pol, clk).Generate(context.Background(), hello)
		done <- err
	}()
	start := clk.Now()
	want := start.Add(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitFor(ctx, func(armed []time.Time) bool { return slices.ContainsFunc(armed, want.Equal) }); err != nil {
		t.Fatalf("no 2s wait after a 429 asking for 2s (armed: %v)", clk.Armed())
	}
	clk.Advance(2*time.Second - time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the call ended before the hinted wait: %v", err)
	default:
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d requests before the hinted wait was over, want 1", n)
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if requireValid(t, f, 2); resp.Text != "after the wait" {
		t.Fatalf("text %q", resp.Text)
	}
}

// testHintPastBudget: a wait the vendor asks for that the budget cannot
// hold ends the call at once, saying so, instead of sleeping to its end.
func testHintPastBudget(t *testing.T, v Vendor) {
	f := v.Start(t, Throttle(2*time.Minute), Say("never"))
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := llm.RetryPolicy{MaxAttempts: 3, Backoff: []time.Duration{time.Second}, Total: 90 * time.Second}
	done := make(chan error, 1)
	go func() {
		_, err := llm.WithPolicy(f.Model(), pol, clk).Generate(context.Background(), hello)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the call is still waiting (armed: %v), though the hint is past the budget", clk.Armed())
	}
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindRateLimit || !strings.Contains(e.Message, "retry after 2m0s") {
		t.Fatalf("err = %v, want a rate limit naming the 2m hint", err)
	}
	if !clk.Now().Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("the clock moved to %v", clk.Now())
	}
	requireValid(t, f, 1)
}

// testFinish: an answer cut by the token limit or withheld by the vendor
// says so in the engine's words, whatever the vendor's spelling.
func testFinish(t *testing.T, v Vendor) {
	for _, want := range []string{engine.FinishTruncated, engine.FinishBlocked} {
		text := ""
		if want == engine.FinishTruncated {
			text = `{"verdict": "hi`
		}
		f := v.Start(t, Reply{Text: text, Finish: want}, Say("whole"))
		resp := generate(t, f.Model(), hello)
		if resp.Finish != want || resp.Text != text {
			t.Errorf("finish %q text %q (vendor's %q), want %q %q", resp.Finish, resp.Text, resp.FinishReason, want, text)
		}
		if resp = generate(t, f.Model(), hello); resp.Finish != "" {
			t.Errorf("a whole answer has finish %q (vendor's %q)", resp.Finish, resp.FinishReason)
		}
	}
}
