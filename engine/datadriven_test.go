package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

// TestDataDriven plays the transcripts in testdata/*.txt. Each file reads
// top to bottom like an interview: load a pack, feed inputs, and the engine's
// answer is printed under each directive. Rewrite the expected output with
//
//	go test ./engine -run TestDataDriven -rewrite
//
// and review the diff like any other change.
//
// Directives:
//
//	pack DIR [seed=N] [voice=live|tts] [live]
//	    Load testdata/packs/DIR and start a session on it. Clears the
//	    events and llm scripts of earlier runs. live holds the pack's
//	    scripts to their budget on the wall clock, as a live host does
//	    (Options.LiveBudgets).
//	session [seed=N] [voice=live|tts] [live]
//	    Start a fresh session on the same loaded pack.
//	step [verbose]
//	    One input per body line, "TIME KIND ARGS", fed to the session with
//	    Step; prints every effect with all its fields (verbose adds each
//	    llm_request's system text, context and tools). TIME is anything a
//	    pack accepts as a duration: 1500ms, 50s, 01:30, 01:30.5. KINDs:
//	      advance
//	      tick EVERY                advance in steps of EVERY up to TIME
//	      say TEXT                  candidate_message
//	      mic on|off, typing on|off, speech_end, code TEXT
//	      candidate {JSON}          any candidate event, wire shape without ts
//	      llm ID TEXT               llm_result
//	      llm-error ID KIND         a failed llm_result
//	      llm-json ID {JSON}        any llm_result, in its JSON shape
//	      speech_done ID [interrupted]
//	      tool [as=ROLE] ID NAME [ARGS-JSON]
//	                                tool_call from a live session (as ROLE)
//	      client-result ID JSON     client_tool_result (client-error: is_error)
//	      end [REASON]
//	      prepare                   the prepare input, before the clock starts
//	    ID may be $llm, $msg or $call: the newest llm_request,
//	    agent_message or client_tool_call id.
//	    TEXT may be a Go-quoted string, to show blanks.
//	state
//	    The session clock, its next deadline and whether it ended.
//	events
//	    Candidate events for later runs, JSON lines in the wire shape.
//	llm
//	    Scripted model replies for later runs (the -llm file format of
//	    baton dryrun: YAML, or JSON lines).
//	run [verbose] [detail] [from=T] [until=T] [types=(a,b,...)] [step=T] [seed=N]
//	    A whole dry run of a fresh session, printed as baton dryrun's
//	    timeline, or with every field of each effect under detail.
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			tr := &transcript{}
			datadriven.RunTest(t, file, tr.do)
		})
	}
}

// transcript is the state one test file builds up.
type transcript struct {
	pack    *rules.Pack
	s       *engine.Session
	out     []engine.Effect
	lastLLM string
	lastMsg string
	// lastCall is the newest client_tool_call's id.
	lastCall string
	events   []events.Timed
	replies  []dryrun.Reply
}

func (tr *transcript) do(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "pack":
		return tr.loadPack(t, d)
	case "session":
		tr.needPack(t, d)
		tr.newSession(t, d)
		return "ok"
	case "step":
		tr.needPack(t, d)
		return tr.step(t, d)
	case "state":
		tr.needPack(t, d)
		return tr.state()
	case "events":
		evs, err := events.ReadAll(strings.NewReader(d.Input))
		if err != nil {
			d.Fatalf(t, "events: %v", err)
		}
		tr.events = evs
		return fmt.Sprintf("%d events", len(evs))
	case "llm":
		reps, err := dryrun.ReadReplies(strings.NewReader(d.Input))
		if err != nil {
			d.Fatalf(t, "llm: %v", err)
		}
		tr.replies = reps
		return fmt.Sprintf("%d replies", len(reps))
	case "run":
		tr.needPack(t, d)
		return tr.run(t, d)
	}
	d.Fatalf(t, "unknown directive %q", d.Cmd)
	return ""
}

func (tr *transcript) needPack(t *testing.T, d *datadriven.TestData) {
	if tr.pack == nil {
		d.Fatalf(t, "%s before pack", d.Cmd)
	}
}

func (tr *transcript) loadPack(t *testing.T, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) > 0 {
		d.Fatalf(t, "usage: pack DIR [base=DIR] [seed=N] [voice=MODE] [live]")
	}
	dir := d.CmdArgs[0].Key
	var fsys fs.FS = os.DirFS(filepath.Join("testdata", "packs", dir))
	if d.HasArg("base") {
		// A variant pack holds only what differs (its pack.yaml); the
		// rest, its scripts, comes from the base pack.
		var base string
		d.ScanArgs(t, "base", &base)
		fsys = overlay{fsys, os.DirFS(filepath.Join("testdata", "packs", base))}
	}
	p, err := rules.Load(fsys, ".")
	if err != nil {
		// A pack that does not load is worth a transcript of its own.
		tr.pack = nil
		return "error: " + err.Error()
	}
	tr.pack = p
	tr.events, tr.replies = nil, nil
	tr.newSession(t, d)
	return "loaded " + p.Name
}

// overlay reads a file from top, or from base when top lacks it.
type overlay struct{ top, base fs.FS }

func (o overlay) Open(name string) (fs.File, error) {
	f, err := o.top.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return o.base.Open(name)
	}
	return f, err
}

func (tr *transcript) options(t *testing.T, d *datadriven.TestData) engine.Options {
	var opts engine.Options
	if d.HasArg("seed") {
		d.ScanArgs(t, "seed", &opts.Seed)
	}
	if d.HasArg("voice") {
		d.ScanArgs(t, "voice", &opts.VoiceMode)
	}
	opts.LiveBudgets = d.HasArg("live")
	return opts
}

func (tr *transcript) newSession(t *testing.T, d *datadriven.TestData) {
	tr.s = engine.New(tr.pack, tr.options(t, d))
	tr.out = tr.out[:0]
	tr.lastLLM, tr.lastMsg, tr.lastCall = "", "", ""
}

func (tr *transcript) state() string {
	next := "none"
	if at, ok := tr.s.NextDeadline(); ok {
		next = clock(at)
	}
	return fmt.Sprintf("now=%s next=%s ended=%t", clock(tr.s.Now()), next, tr.s.Ended())
}

func (tr *transcript) step(t *testing.T, d *datadriven.TestData) string {
	verbose := d.HasArg("verbose")
	var b strings.Builder
	for _, line := range strings.Split(d.Input, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ins, err := tr.parseInput(line)
		if err != nil {
			d.Fatalf(t, "%q: %v", line, err)
		}
		for _, in := range ins {
			var stepErr error
			tr.out, stepErr = tr.s.Step(in, tr.out[:0])
			for i := range tr.out {
				e := &tr.out[i]
				switch e.Type {
				case engine.EffectLLMRequest:
					tr.lastLLM = e.ID
				case engine.EffectAgentMessage:
					tr.lastMsg = e.ID
				case engine.EffectClientToolCall:
					tr.lastCall = e.ID
				}
				writeEffect(&b, e, verbose)
			}
			if stepErr != nil {
				fmt.Fprintf(&b, "error%s: %v\n", sentinel(stepErr), stepErr)
			}
		}
	}
	if b.Len() == 0 {
		return "(no effects)"
	}
	return b.String()
}

// sentinel names the exported error an engine error matches, so a
// transcript checks errors.Is and not only the message.
func sentinel(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrEnded", engine.ErrEnded},
		{"ErrTimeBackwards", engine.ErrTimeBackwards},
		{"ErrBadInput", engine.ErrBadInput},
	} {
		if errors.Is(err, s.err) {
			return " (" + s.name + ")"
		}
	}
	return ""
}

// parseInput reads one step line. Only tick makes more than one input.
func (tr *transcript) parseInput(line string) ([]engine.Input, error) {
	at, rest, _ := strings.Cut(line, " ")
	ms, err := rules.ParseDuration(at)
	if err != nil {
		return nil, err
	}
	kind, rest, _ := strings.Cut(strings.TrimSpace(rest), " ")
	rest = strings.TrimSpace(rest)
	if kind == "tick" {
		every, err := rules.ParseDuration(rest)
		if err != nil || every <= 0 {
			return nil, fmt.Errorf("tick takes a positive step: %v", err)
		}
		var ins []engine.Input
		for t := tr.s.Now() + every; t < ms; t += every {
			ins = append(ins, engine.Input{T: t, Type: engine.InputAdvance})
		}
		return append(ins, engine.Input{T: ms, Type: engine.InputAdvance}), nil
	}
	in, err := tr.parseOne(ms, kind, rest)
	return []engine.Input{in}, err
}

func (tr *transcript) parseOne(ms int64, kind, rest string) (engine.Input, error) {
	var err error
	in := engine.Input{T: ms}
	cand := func(ev engine.CandidateEvent) {
		in.Type = engine.InputCandidate
		in.Candidate = &ev
	}
	switch kind {
	case "advance":
		in.Type = engine.InputAdvance
	case "say":
		text, err := textArg(rest)
		if err != nil {
			return in, err
		}
		cand(engine.CandidateEvent{Type: engine.EventMessage, Text: text})
	case "mic", "typing":
		if rest != "on" && rest != "off" {
			return in, fmt.Errorf("%s takes on or off", kind)
		}
		v := rest == "on"
		if kind == "mic" {
			cand(engine.CandidateEvent{Type: engine.EventMicState, MicActive: &v})
		} else {
			cand(engine.CandidateEvent{Type: engine.EventTypingState, Typing: &v})
		}
	case "speech_end":
		cand(engine.CandidateEvent{Type: engine.EventSpeechEnd})
	case "code":
		text, err := textArg(rest)
		if err != nil {
			return in, err
		}
		cand(engine.CandidateEvent{Type: engine.EventCodeSubmitted, Code: text})
	case "candidate":
		// The wire shape carries its own time; the line's time wins.
		var w events.Wire
		if err := json.Unmarshal([]byte(rest), &w); err != nil {
			return in, err
		}
		w.TsSec, w.TsMS = nil, &ms
		ev, err := w.Timed()
		if err != nil {
			return in, err
		}
		cand(ev.Event)
	case "llm", "llm-error":
		id, arg, _ := strings.Cut(rest, " ")
		res := &engine.LLMResult{ID: tr.ref(id)}
		if kind == "llm-error" {
			res.Err = &engine.AdapterError{Kind: strings.TrimSpace(arg), Message: "scripted failure"}
		} else if res.Text, err = textArg(strings.TrimSpace(arg)); err != nil {
			return in, err
		}
		in.Type, in.LLM = engine.InputLLMResult, res
	case "llm-json":
		id, arg, _ := strings.Cut(rest, " ")
		res := &engine.LLMResult{}
		if err := json.Unmarshal([]byte(arg), res); err != nil {
			return in, fmt.Errorf("llm-json: %w", err)
		}
		res.ID = tr.ref(id)
		in.Type, in.LLM = engine.InputLLMResult, res
	case "speech_done":
		id, flag, _ := strings.Cut(rest, " ")
		in.Type = engine.InputSpeechDone
		in.Speech = &engine.SpeechDone{ID: tr.ref(id), Interrupted: strings.TrimSpace(flag) == "interrupted"}
	case "tool":
		role := ""
		if r, ok := strings.CutPrefix(rest, "as="); ok {
			role, rest, _ = strings.Cut(r, " ")
		}
		f := strings.SplitN(rest, " ", 3)
		if len(f) < 2 {
			return in, errors.New("tool takes [as=ROLE] ID NAME [ARGS]")
		}
		in.Type = engine.InputToolCall
		in.Tool = &engine.ToolCall{ID: f[0], Name: f[1], Role: role}
		if len(f) == 3 {
			in.Tool.Args = json.RawMessage(strings.TrimSpace(f[2]))
		}
	case "client-result", "client-error":
		id, arg, _ := strings.Cut(rest, " ")
		in.Type = engine.InputClientToolResult
		in.ClientTool = &engine.ClientToolResult{ID: tr.ref(id), Result: json.RawMessage(strings.TrimSpace(arg)), IsError: kind == "client-error"}
	case "prepare":
		in.Type = engine.InputPrepare
	case "end":
		in.Type = engine.InputEnd
		in.End = &engine.EndRequest{Reason: rest}
	default:
		return in, fmt.Errorf("unknown input kind %q", kind)
	}
	return in, nil
}

func (tr *transcript) ref(id string) string {
	switch id {
	case "$llm":
		return tr.lastLLM
	case "$msg":
		return tr.lastMsg
	case "$call":
		return tr.lastCall
	}
	return id
}

func textArg(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	return s, nil
}

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	opt := dryrun.Options{Events: tr.events, Replies: tr.replies}
	if d.HasArg("seed") {
		d.ScanArgs(t, "seed", &opt.Seed)
	}
	if d.HasArg("step") {
		opt.StepMS = durationArg(t, d, "step")
	}
	from, until := int64(0), int64(-1)
	if d.HasArg("from") {
		from = durationArg(t, d, "from")
	}
	if d.HasArg("until") {
		until = durationArg(t, d, "until")
	}
	var types map[engine.EffectType]bool
	if arg, ok := d.Arg("types"); ok {
		types = map[engine.EffectType]bool{}
		for _, v := range arg.Vals {
			for _, typ := range strings.Split(v, ",") {
				types[engine.EffectType(strings.TrimSpace(typ))] = true
			}
		}
	}
	res, err := dryrun.Run(tr.pack, opt)
	if err != nil {
		return "error: " + err.Error()
	}
	var recs []record.Record
	for _, r := range res.Records {
		if r.T < from || until >= 0 && r.T > until || types != nil && !types[r.Type] {
			continue
		}
		recs = append(recs, r)
	}
	var b bytes.Buffer
	if d.HasArg("detail") {
		for i := range recs {
			writeEffect(&b, &recs[i].Effect, d.HasArg("verbose"))
		}
	} else {
		// Naming a quiet type in types= asks to see it.
		fo := record.FormatOptions{Verbose: d.HasArg("verbose") || types != nil}
		if err := record.WriteText(&b, recs, fo); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() == 0 {
		return "(no effects)"
	}
	// Columns are padded; trailing blanks would not survive an editor.
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

func durationArg(t *testing.T, d *datadriven.TestData, key string) int64 {
	var s string
	d.ScanArgs(t, key, &s)
	ms, err := rules.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return ms
}

// clock prints a time losslessly: mm:ss.s, with milliseconds when the
// tenths would hide them.
func clock(ms int64) string {
	if ms%100 == 0 {
		return rules.FormatClock(ms)
	}
	return fmt.Sprintf("%02d:%02d.%03d", ms/60000, (ms/1000)%60, ms%1000)
}

var (
	ranFor = regexp.MustCompile(`\(ran [^)]*\)`)
	tookUS = regexp.MustCompile(`"took_us":[0-9]+`)
)

// writeEffect prints every field an effect has set, on one line; verbose
// adds the parts of an llm_request a prompt is built from.
func writeEffect(b interface{ WriteString(string) (int, error) }, e *engine.Effect, verbose bool) {
	var f []string
	quote := func(s string) string {
		if s == "" {
			return ""
		}
		return strconv.Quote(s)
	}
	add := func(k, v string) {
		if v != "" {
			f = append(f, k+"="+v)
		}
	}
	// Names are bare unless a blank would make the line ambiguous.
	name := func(s string) string {
		if strings.ContainsAny(s, " \t\n\"") {
			return quote(s)
		}
		return s
	}
	add("id", name(e.ID))
	add("agent", name(e.Agent))
	add("kind", name(e.Kind))
	add("rule", name(e.Rule))
	add("intent", name(e.IntentTag))
	add("voice", name(e.Voice))
	add("text", quote(e.Text))
	reason, data := e.Reason, e.Data
	if e.Type == engine.EffectScriptError && e.Kind == engine.ScriptBudget {
		// How long a stopped script ran is measured, so it differs from
		// run to run; a replay carries it as a recorded fact.
		reason = ranFor.ReplaceAllString(reason, "(ran …)")
		data = tookUS.ReplaceAll(data, []byte(`"took_us":…`))
	}
	add("reason", quote(reason))
	if e.Fallback {
		f = append(f, "fallback")
	}
	if len(e.Guardrail) > 0 {
		add("guardrail", strings.Join(e.Guardrail, ","))
	}
	add("original", quote(e.Original))
	add("outcome", e.Outcome)
	add("cleaned", quote(e.Cleaned))
	if l := e.Lateness; l != nil && l.LateMS != 0 {
		add("late", clock(l.LateMS)+" due="+clock(l.DueMS))
	}
	if len(data) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, data) == nil {
			add("data", c.String())
		} else {
			add("data", quote(string(data)))
		}
	}
	if e.IsError {
		f = append(f, "is_error")
	}
	r := e.Request
	if r != nil {
		add("goal", name(r.TurnGoal))
		add("job", name(r.Job))
		if p := r.Prepare; p != nil {
			add("prepare", "due="+clock(p.DueMS)+" lead="+clock(p.LeadMS))
		}
		if r.Background {
			f = append(f, "background")
		}
	}
	b.WriteString(clock(e.T) + " " + string(e.Type))
	if len(f) > 0 {
		b.WriteString(" " + strings.Join(f, " "))
	}
	b.WriteString("\n")
	if r == nil || !verbose {
		return
	}
	b.WriteString("  system: " + strconv.Quote(r.System) + "\n")
	if r.Provider != "" || r.MaxTokens > 0 || r.Sequence != nil {
		b.WriteString(fmt.Sprintf("  model: provider=%q model=%q max_tokens=%d timeout=%dms\n", r.Provider, r.Model, r.MaxTokens, r.TimeoutMS))
	}
	if r.CandidateLastMessage != "" {
		b.WriteString("  candidate_last_message: " + strconv.Quote(r.CandidateLastMessage) + "\n")
	}
	if len(r.Assembly) > 0 {
		b.WriteString("  assembly: " + strings.Join(r.Assembly, " ") + "\n")
	}
	for _, fp := range r.Files {
		trimmed := ""
		if fp.Trimmed > 0 {
			trimmed = fmt.Sprintf(" trimmed=%d", fp.Trimmed)
		}
		b.WriteString("  file " + fp.Path + trimmed + ": " + strconv.Quote(fp.Text) + "\n")
	}
	if len(r.ScenarioContext) > 0 {
		kv := make([]string, len(r.ScenarioContext))
		for i, c := range r.ScenarioContext {
			kv[i] = c.Key + "=" + strconv.Quote(c.Value)
		}
		b.WriteString("  context: " + strings.Join(kv, " ") + "\n")
	}
	if len(r.Tools) > 0 {
		names := make([]string, len(r.Tools))
		for i, tl := range r.Tools {
			names[i] = tl.Name
		}
		b.WriteString("  tools: " + strings.Join(names, " ") + "\n")
		for _, tl := range r.Tools {
			// Packs that describe their tools show what the model sees.
			if tl.Description != "" {
				b.WriteString("  tool " + tl.Name + ": " + strconv.Quote(tl.Description) + " " + string(tl.Parameters) + "\n")
			}
		}
	}
	for i, round := range r.ToolRounds {
		b.WriteString(fmt.Sprintf("  round %d: %q", i+1, round.Text))
		if round.Withheld {
			b.WriteString(" withheld")
		}
		b.WriteString("\n")
		for _, st := range round.Steps {
			c := st.Call
			sig := ""
			if len(c.Signature) > 0 {
				sig = " signature=" + strconv.Quote(string(c.Signature))
			}
			b.WriteString(fmt.Sprintf("    call id=%s %s %s%s -> %s\n", c.ID, c.Name, c.Args, sig, st.Result))
		}
	}
	if r.Prompt != "" {
		b.WriteString("  prompt: " + strconv.Quote(r.Prompt) + "\n")
	}
	if c := r.Correction; c != nil {
		b.WriteString(fmt.Sprintf("  correction %d: rejected %q\n    instruction %q\n", c.Attempt, c.Rejected, c.Instruction))
	}
}
