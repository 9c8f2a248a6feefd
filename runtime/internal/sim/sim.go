// Package sim is the simulated model and voice: the pack's scripted lines
// (or a script of replies) answering after a simulated latency, and
// speech that lasts as long as its words at the role's rate. Dry runs and
// pack tests play sessions with them, and the server uses them unless it
// is given a real model. Same pack, same script, same requests: same
// answers, same timings.
package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/rules/script"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/voice"
)

// Reply is one scripted model answer. Matchers (Call, Role, Kind, Goal) that
// are set must all match the request; the first unused matching reply is
// taken, and used up unless Repeat is set.
type Reply struct {
	Call   int    `json:"call,omitempty" yaml:"call"`
	Role   string `json:"role,omitempty" yaml:"role"`
	Kind   string `json:"kind,omitempty" yaml:"kind"`
	Goal   string `json:"goal,omitempty" yaml:"goal"`
	Repeat bool   `json:"repeat,omitempty" yaml:"repeat"`

	Text      string `json:"text,omitempty" yaml:"text"`
	IntentTag string `json:"intent_tag,omitempty" yaml:"intent_tag"`
	// DelayMS overrides the pack's scripted latency for this call.
	DelayMS *int64 `json:"delay_ms,omitempty" yaml:"delay_ms"`
	// Error makes the call fail with this kind (timeout, rate_limit, server...).
	Error string `json:"error,omitempty" yaml:"error"`
	// NoReply makes the call never answer, so the engine's timeout fires.
	NoReply bool `json:"no_reply,omitempty" yaml:"no_reply"`
	// JSON is a structured answer (for jobs with a schema), sent as text.
	JSON any `json:"json,omitempty" yaml:"json"`
	// ToolCalls the model makes.
	ToolCalls []ReplyTool `json:"tool_calls,omitempty" yaml:"tool_calls"`
	// Job matches job requests by job id.
	Job string `json:"job,omitempty" yaml:"job"`
	// Misbehave names misbehaviours (MisbehaviourNames) this answer
	// shows, whatever the model's own rate.
	Misbehave []string `json:"misbehave,omitempty" yaml:"misbehave"`

	used bool
}

// ReplyTool is a scripted tool call.
type ReplyTool struct {
	Name string         `json:"name" yaml:"name"`
	Args map[string]any `json:"args,omitempty" yaml:"args"`
}

// ReadReplies reads a script as a YAML or JSON list, or JSON lines, from
// r. Its problems are named at file:line:col, the file being r's name
// when r is a file (an *os.File), else "LLM script".
func ReadReplies(r io.Reader) ([]Reply, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxReplies+1))
	if err != nil {
		return nil, fmt.Errorf("reading LLM script: %w", err)
	}
	name := "LLM script"
	if f, ok := r.(interface{ Name() string }); ok && f.Name() != "" {
		name = f.Name()
	}
	return ReadRepliesFile(name, data)
}

// MaxReplies bounds a reply script.
const MaxReplies = 16 << 20

// maxProblems bounds the problems reported for a script of JSON lines.
const maxProblems = 100

// ReadRepliesFile reads a reply script, data, named name in errors: a
// YAML list (or a JSON list, which is YAML too) decoded as the pack
// loader decodes a pack, or JSON lines, one reply an object per line,
// when the first thing in data is "{". Every problem comes back at once, as
// a rules.ErrorList at name:line:col, a misspelt key with the nearest
// known one. A script with no replies is none.
func ReadRepliesFile(name string, data []byte) ([]Reply, error) {
	out, lines, err := readRepliesFile(name, data)
	if err != nil {
		return nil, err
	}
	if err := checkReplies(name, out, lines); err != nil {
		return nil, err
	}
	return out, nil
}

// checkReplies refuses values no request could ever meet: an error kind
// the adapters never report, a negative delay or call number. A reply
// that can never match would otherwise leave its test passing for the
// wrong reason.
// lines, for a JSON-lines script, holds each reply's line.
func checkReplies(name string, replies []Reply, lines []int) error {
	kinds := make([]string, len(llm.Kinds))
	for i, k := range llm.Kinds {
		kinds[i] = string(k)
	}
	var errs rules.ErrorList
	for i := range replies {
		r := &replies[i]
		pos, where := rules.Pos{File: name}, fmt.Sprintf("reply %d: ", i+1)
		if i < len(lines) {
			pos.Line, pos.Col, where = lines[i], 1, ""
		}
		add := func(format string, args ...any) {
			errs = append(errs, &rules.Error{Pos: pos, Msg: where + fmt.Sprintf(format, args...)})
		}
		if r.Error != "" && !slices.Contains(kinds, r.Error) {
			add("error %q is not a kind of failure%s (kinds: %s)", r.Error, rules.DidYouMean(r.Error, kinds), strings.Join(kinds, ", "))
		}
		if r.DelayMS != nil && *r.DelayMS < 0 {
			add("delay_ms %d is negative", *r.DelayMS)
		}
		if r.Call < 0 {
			add("call %d: calls are counted from 1", r.Call)
		}
		for _, n := range r.Misbehave {
			if err := CheckMisbehaviour(n); err != nil {
				add("misbehave: %v", err)
			}
		}
	}
	return errs.Err()
}

func readRepliesFile(name string, data []byte) ([]Reply, []int, error) {
	if len(data) > MaxReplies {
		return nil, nil, fmt.Errorf("%s: LLM script larger than %d bytes", name, MaxReplies)
	}
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return nil, nil, nil
	}
	var out []Reply
	if trim[0] != '{' {
		if trim[0] == '[' {
			if err := decodeJSONList(data, &out); err == nil {
				return out, nil, nil
			} else if json.Valid(data) && yamlCannotRead(name, data) {
				// JSON with an escape YAML lacks: JSON's own error, placed.
				return nil, nil, offsetError(name, data, err)
			}
			out = nil
		}
		if err := rules.DecodeFile(name, data, &out); err != nil {
			return nil, nil, err
		}
		return out, nil, nil
	}
	var errs rules.ErrorList
	var lines []int
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rep Reply
		if err := events.DecodeLine(name, i+1, line, &rep); err != nil {
			var el rules.ErrorList
			if !errors.As(err, &el) {
				return nil, nil, err
			}
			errs = append(errs, el...)
			if len(errs) > maxProblems {
				// One mistake repeated, or not a script at all: the first
				// ones say which.
				errs = append(errs[:maxProblems], &rules.Error{Pos: el[0].Pos, Msg: fmt.Sprintf("more than %d problems; fix these first", maxProblems)})
				break
			}
			continue
		}
		lines = append(lines, i+1)
		out = append(out, rep)
	}
	if err := errs.Err(); err != nil {
		return nil, nil, err
	}
	return out, lines, nil
}

// decodeJSONList decodes a script written as a JSON list as any JSON
// reader would, unknown fields refused.
func decodeJSONList(data []byte, out *[]Reply) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return &json.SyntaxError{Offset: dec.InputOffset()}
	}
	return nil
}

// yamlCannotRead reports whether the pack loader's decoder fails to parse
// data, which it does for some valid JSON ("\/" escapes).
func yamlCannotRead(name string, data []byte) bool {
	var v any
	var el rules.ErrorList
	return errors.As(rules.DecodeFile(name, data, &v), &el) && len(el) > 0 && strings.HasPrefix(el[0].Msg, "YAML syntax")
}

// offsetError places a JSON decoding error at its line and column.
func offsetError(name string, data []byte, err error) error {
	off := int64(0)
	var syn *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1
	case errors.As(err, &te):
		off = te.Offset
	}
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return rules.ErrorList{{Pos: rules.Pos{File: name, Line: line, Col: col}, Msg: "invalid JSON: " + err.Error()}}
}

// Model answers llm_request effects from a script, then from the pack's
// role lines in rotation, each after the pack's dry-run latency. It is per
// session: its answers depend on the calls before (Warm replays them).
type Model struct {
	pack *rules.Pack
	// latency, when not negative, replaces every answer's delay.
	latency time.Duration
	// offline runs the pack's model script under script.ReplayBudget,
	// as every offline call runs: a dry run, a sweep or a what-if gives
	// the same answers on a busy machine (Offline).
	offline bool

	mu     sync.Mutex
	script []Reply
	calls  int
	rotate map[rotateKey]int
	// mis, when set, makes the model misbehave (misbehave.go).
	mis *Misbehave
	// struck are the misbehaviours that struck the last call.
	lastStruck []string
}

var (
	_ llm.Answerer = (*Model)(nil)
	_ llm.Warmer   = (*Model)(nil)
)

// NewModel makes the simulated model of pack p. A latency that is not negative
// replaces every answer's delay (the pack's dry-run latency and the
// script's delay_ms); negative keeps them.
func NewModel(p *rules.Pack, script []Reply, latency time.Duration) *Model {
	s := make([]Reply, len(script))
	copy(s, script)
	return &Model{pack: p, script: s, rotate: map[rotateKey]int{}, latency: latency}
}

// Offline makes the model's script calls those of an offline session,
// bounded by script.ReplayBudget, not the wall-clock second a live
// server gives them: a saturated machine must not stop a call an idle
// one finishes. It returns f.
func (f *Model) Offline() *Model {
	f.offline = true
	return f
}

// Answer implements llm.Answerer. It answers at once; After says when the
// answer is due.
func (f *Model) Answer(ctx context.Context, id string, req *engine.LLMRequest) llm.Answer {
	a, _ := f.AnswerStruck(ctx, id, req)
	return a
}

// AnswerStruck is Answer, also naming the misbehaviours that struck the
// call (MisbehaviourNames order), for a host that plays them itself: a
// rate limit's hint on a vendor's wire, say.
func (f *Model) AnswerStruck(_ context.Context, id string, req *engine.LLMRequest) (llm.Answer, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, delay, ok := f.answer(id, req)
	a := llm.Answer{Result: res, After: time.Duration(delay) * time.Millisecond, Never: !ok}
	if f.latency >= 0 {
		a.After = f.latency.Truncate(time.Millisecond)
	}
	return a, slices.Clone(f.lastStruck)
}

// Warm implements llm.Warmer: it replays the call so the rotation of lines
// and the script's call count match.
func (f *Model) Warm(id string, req *engine.LLMRequest) {
	f.mu.Lock()
	f.answer(id, req)
	f.mu.Unlock()
}

// answer returns the result for a request and its delay in ms; ok is false
// when the script says the call never answers. A misbehaving model
// (Misbehave, or a reply's misbehave list) then spoils the answer.
func (f *Model) answer(id string, req *engine.LLMRequest) (res engine.LLMResult, delay int64, ok bool) {
	f.calls++
	var forced []string
	res, delay, ok = f.answerAs(id, req, &forced)
	f.lastStruck = nil
	if ok {
		f.lastStruck = f.misbehave(f.calls, forced, req, &res, &delay)
	}
	return res, delay, ok
}

// answerAs is the ordinary answer; forced is set to the misbehave list
// of the reply that answered, if any.
func (f *Model) answerAs(id string, req *engine.LLMRequest, forced *[]string) (res engine.LLMResult, delay int64, ok bool) {
	res.ID = id
	delay = f.pack.DryRun.LLMLatency.MS
	for i := range f.script {
		r := &f.script[i]
		if r.used || !r.matches(f.calls, req) {
			continue
		}
		if !r.Repeat {
			r.used = true
		}
		*forced = r.Misbehave
		if r.DelayMS != nil {
			delay = *r.DelayMS
		}
		if r.NoReply {
			return res, delay, false
		}
		if r.Error != "" {
			res.Err = &engine.AdapterError{Kind: r.Error, Message: "scripted failure"}
			return res, delay, true
		}
		if r.JSON != nil {
			b, err := json.Marshal(r.JSON)
			if err != nil {
				res.Err = &engine.AdapterError{Kind: "bad_request", Message: "scripted JSON: " + err.Error()}
				return res, delay, true
			}
			res.Text = string(b)
		}
		if r.Text != "" {
			res.Text = r.Text
		}
		res.IntentTag = r.IntentTag
		for i, tc := range r.ToolCalls {
			args, _ := json.Marshal(tc.Args)
			res.ToolCalls = append(res.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("%s-call-%d", id, i+1), Name: tc.Name, Args: args})
		}
		if res.Text != "" || len(res.ToolCalls) > 0 {
			return res, delay, true
		}
		break
	}
	if f.pack.DryRun.Model.Set() && f.pack.Scripts != nil {
		return f.scripted(id, req, res, delay)
	}
	if req.Job != "" && len(req.Schema) > 0 {
		res.Text = f.example(req)
		return res, delay, true
	}
	res.Text = f.line(req)
	return res, delay, true
}

// example answers a job with a value built from its schema.
func (f *Model) example(req *engine.LLMRequest) string {
	job, ok := f.pack.Job(req.Job)
	if !ok || job.OutputSchema() == nil {
		return "{}"
	}
	b, _ := json.Marshal(job.OutputSchema().Example(req.Role + " " + req.Job))
	return string(b)
}

// scripted asks the pack's dry-run model script. A script failure is
// returned as an adapter error, so it shows on the timeline.
func (f *Model) scripted(id string, req *engine.LLMRequest, res engine.LLMResult, delay int64) (engine.LLMResult, int64, bool) {
	tools := make([]any, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.Name
	}
	steps := []any{}
	for _, round := range req.ToolRounds {
		for _, st := range round.Steps {
			var result any
			_ = json.Unmarshal(st.Result, &result)
			steps = append(steps, map[string]any{"name": st.Call.Name, "result": result, "is_error": st.IsError})
		}
	}
	lines := make([]any, len(req.TranscriptTail))
	for i, l := range req.TranscriptTail {
		lines[i] = map[string]any{"speaker": l.Speaker, "text": l.Text}
	}
	// The context files the call carries, by path, as the model sees them.
	files := make(map[string]any, len(req.Files))
	for _, fp := range req.Files {
		files[fp.Path] = fp.Text
	}
	arg := map[string]any{
		"files": files, "call": f.calls, "role": req.Role, "kind": req.Kind, "goal": req.TurnGoal, "job": req.Job,
		"system": req.System, "prompt": req.Prompt, "tools": tools, "tool_steps": steps,
		"candidate_last_message": req.CandidateLastMessage, "transcript": lines,
		"example": nil, "correction": nil, "sequence": nil, "max_tokens": req.MaxTokens, "provider": req.Provider,
	}
	if sq := req.Sequence; sq != nil {
		arg["sequence"] = map[string]any{"id": sq.ID, "run_id": sq.RunID, "round": sq.Round, "call": sq.Call}
	}
	if c := req.Correction; c != nil {
		arg["correction"] = map[string]any{"rejected": c.Rejected, "instruction": c.Instruction, "attempt": c.Attempt}
	}
	if req.Job != "" && len(req.Schema) > 0 {
		var ex any
		_ = json.Unmarshal([]byte(f.example(req)), &ex)
		arg["example"] = ex
	}
	out, err := f.pack.Scripts.Run(script.Call{Func: f.pack.DryRun.Model.Func, Arg: arg, Budget: time.Second, Replay: f.offline})
	if err != nil {
		res.Err = &engine.AdapterError{Kind: "unknown", Message: "dry-run model script: " + err.Error()}
		return res, delay, true
	}
	m, _ := out.(map[string]any)
	if m == nil {
		res.Text = f.line(req)
		return res, delay, true
	}
	if e, _ := m["error"].(string); e != "" {
		res.Err = &engine.AdapterError{Kind: e, Message: "scripted failure"}
		return res, delay, true
	}
	if d, ok := m["delay_ms"].(int64); ok {
		delay = d
	}
	if js, ok := m["json"]; ok && js != nil {
		b, _ := json.Marshal(js)
		res.Text = string(b)
	}
	if t, _ := m["text"].(string); t != "" {
		res.Text = t
	}
	res.IntentTag, _ = m["intent_tag"].(string)
	calls, _ := m["tool_calls"].([]any)
	for i, c := range calls {
		cm, _ := c.(map[string]any)
		name, _ := cm["name"].(string)
		args, _ := json.Marshal(cm["args"])
		res.ToolCalls = append(res.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("%s-call-%d", id, i+1), Name: name, Args: args})
	}
	if res.Text == "" && len(res.ToolCalls) == 0 {
		res.Text = f.line(req)
	}
	return res, delay, true
}

func (r *Reply) matches(call int, req *engine.LLMRequest) bool {
	return (r.Call == 0 || r.Call == call) &&
		(r.Job == "" || r.Job == req.Job) &&
		(r.Role == "" || r.Role == req.Role) &&
		(r.Kind == "" || r.Kind == req.Kind) &&
		(r.Goal == "" || r.Goal == req.TurnGoal)
}

// rotateKey names a role's line set: a struct, not a joined string, so
// looking one up allocates nothing.
type rotateKey struct{ role, set string }

// line picks the role's next scripted line for the goal, then the kind,
// then "default", then the role's fallback.
func (f *Model) line(req *engine.LLMRequest) string {
	role, ok := f.pack.Role(req.Role)
	if !ok {
		return "Let's continue."
	}
	for _, key := range []string{req.TurnGoal, req.Kind, "default"} {
		for _, ls := range role.Lines {
			if ls.ID != key || len(ls.Text) == 0 {
				continue
			}
			k := rotateKey{req.Role, key}
			i := f.rotate[k]
			f.rotate[k] = i + 1
			return ls.Text[i%len(ls.Text)]
		}
	}
	if l, ok := rules.FindLines(role.Fallback, "default"); ok {
		return l[0]
	}
	return "Let's continue."
}

// Voice simulates speech: a line takes as long as its words at the role's
// words-per-minute rate. It is the one speech-duration model: dry runs,
// the server's simulated playback and offline replays all time speech
// with it, and as a voice.Speaker it stands in for text-to-speech.
type Voice struct {
	pack *rules.Pack
}

var _ voice.Speaker = (*Voice)(nil)

// NewVoice makes a simulated voice for pack p.
func NewVoice(p *rules.Pack) *Voice { return &Voice{pack: p} }

// MinSpeechMS is the shortest simulated utterance.
const MinSpeechMS = 400

// Duration is how long role takes to say line, in ms.
func (v *Voice) Duration(role, line string) int64 {
	wpm := v.pack.Voice.WordsPerMinute
	if r, ok := v.pack.Role(role); ok && r.WordsPerMinute > 0 {
		wpm = r.WordsPerMinute
	}
	words := text.CountWords(strings.TrimSpace(line))
	ms := int64(words) * 60000 / int64(wpm)
	return max(ms, MinSpeechMS)
}

// Speak implements voice.Speaker without audio: the utterance lasts
// Duration.
func (v *Voice) Speak(ctx context.Context, role, _ string, line string) (voice.Utterance, error) {
	if err := ctx.Err(); err != nil {
		return voice.Utterance{}, err
	}
	return voice.Utterance{Duration: time.Duration(v.Duration(role, line)) * time.Millisecond}, nil
}
