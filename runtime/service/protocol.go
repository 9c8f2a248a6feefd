package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
)

// Client frame types (docs/protocol.md).
const (
	FrameStart      = "start"
	FrameResume     = "resume"
	FrameEvent      = "event"
	FrameSpeechDone = "speech_done"
	FramePing       = "ping"
	// FrameToolCall, FrameAgentTranscript: from a client hosting the live
	// speech session; FrameEnd ends the session early.
	FrameToolCall        = "tool_call"
	FrameAgentTranscript = "agent_transcript"
	FrameEnd             = "end"
	// FrameClientToolResult answers a client_tool_call frame, in the
	// shape of ElevenLabs' conversational agent protocol: tool_call_id,
	// result, is_error (id is optional here; the ack carries
	// tool_call_id when it is left out).
	FrameClientToolResult = "client_tool_result"
)

// Server frame types.
const (
	FrameAck    = "ack"
	FrameError  = "error"
	FrameEffect = "effect"
	FramePong   = "pong"
	FrameNotice = "notice"
	// FrameClientToolCall carries a client_tool_call effect in the shape
	// of ElevenLabs' conversational agent protocol (client_tool_call:
	// {tool_name, tool_call_id, parameters}), with seq and the effect as
	// on any effect frame.
	FrameClientToolCall = "client_tool_call"
)

// Error codes a client can receive, each naming one kind of mistake or
// condition so a client can react without parsing messages.
const (
	CodeBadJSON          = "bad_json"           // not a JSON object
	CodeBadFrame         = "bad_frame"          // wrong field types, unknown or missing fields
	CodeUnknownType      = "unknown_type"       // frame type not in the protocol
	CodeBadEvent         = "bad_event"          // event fails §5.2 checks
	CodeUnknownEventType = "unknown_event_type" // event type the pack does not handle
	CodeTimeBackwards    = "time_backwards"     // explicit ts before this session's previous one
	CodeTooLarge         = "too_large"          // frame or body over the size limit
	CodeRateLimited      = "rate_limited"       // over the event rate; frame dropped
	CodeNoSession        = "no_session"         // event before start or resume
	CodeAlreadyBound     = "already_bound"      // start/resume on a connection that has a session
	CodeBadSessionID     = "bad_session_id"     // id outside ^[A-Za-z0-9_-]{1,64}$
	CodeSessionExists    = "session_exists"     // start of a live or finished id
	CodeSessionNotFound  = "session_not_found"  // resume or event for an unknown id
	CodeSessionEnded     = "session_ended"      // input to a finished session
	CodeSessionFailed    = "session_failed"     // session could not be recovered
	CodeBadPack          = "bad_pack"           // pack or scenario cannot be opened
	CodeUnknownMessage   = "unknown_message"    // speech_done for a message not playing
	CodeNotClientPlayed  = "not_client_playback"
	CodeBusy             = "busy"       // session did not answer in time
	CodeOverloaded       = "overloaded" // start refused: running sessions are answered late
	CodeStorage          = "storage"    // the write-ahead log failed; input not applied
	// CodeUnavailable is an input not acknowledged within the ack
	// deadline (Config.AckDeadline): its outcome says whether it was not
	// applied or is unknown until a resume. Reconnect and resume.
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal" // a bug; reported and recovered
	CodeShuttingDown = "shutting_down"
	CodeUnauthorized = "unauthorized"
	CodeBadWebhook   = "bad_webhook"
	// CodeForbiddenOrigin is a browser Origin not in the allowlist (403).
	CodeForbiddenOrigin = "forbidden_origin"
	// CodeTooManyConnections is a connection cap reached; refused at
	// accept (503).
	CodeTooManyConnections = "too_many_connections"
	// CodeBodyTimeout is a request body not received within the read
	// timeout (408).
	CodeBodyTimeout = "body_timeout"
	// CodeUnknownToolCall is a client_tool_result for a call that is not
	// waiting: never made, already answered, or timed out.
	CodeUnknownToolCall = "unknown_tool_call"
)

// Input codes refuse a start whose inputs the pack does not take
// (rules.Pack.Bind); the message names every refused input and its limit.
const (
	CodeInputMissing  = rules.CodeInputMissing  // a required input not supplied
	CodeInputUnknown  = rules.CodeInputUnknown  // an input the pack does not declare
	CodeInputType     = rules.CodeInputType     // wrong type, bad enum value, bad file form or name
	CodeInputRange    = rules.CodeInputRange    // a number or duration outside min..max
	CodeInputTooLarge = rules.CodeInputTooLarge // text, list or file over its size limit
	CodeInputTooMany  = rules.CodeInputTooMany  // more files than max_files
	CodeInputMedia    = rules.CodeInputMedia    // a file's media type not allowed
	CodeInputUpload   = rules.CodeInputUpload   // a sha256 no upload has (POST /v1/uploads first)
)

// MaxFrameID bounds a client frame id.
const MaxFrameID = 128

// ClientFrame is one message from a client. Which fields are allowed
// depends on Type; see parseFrame.
type ClientFrame struct {
	ID   string `json:"id"`
	Type string `json:"type"`

	// start, resume
	SessionID string `json:"session_id,omitempty"`
	// start
	Pack           string `json:"pack,omitempty"`
	CandidateID    string `json:"candidate_id,omitempty"`
	Seed           *int64 `json:"seed,omitempty"`
	ClientPlayback bool   `json:"client_playback,omitempty"`
	// VoiceMode overrides the pack's voice.mode: "live" or "tts".
	VoiceMode string `json:"voice_mode,omitempty"`
	// ClientVoice: the client hosts the live speech session itself even
	// on a server that could (baton serve --voice).
	ClientVoice bool `json:"client_voice,omitempty"`
	// Inputs are the values the session brings for the pack's declared
	// inputs (rules.Supplied).
	Inputs rules.Supplied `json:"inputs,omitempty"`
	// resume: the last effect seq the client saw (0 for none).
	LastSeq *uint64 `json:"last_seq,omitempty"`
	// resume: the secret the session's start ack carried.
	SessionSecret string `json:"session_secret,omitempty"`
	// event: one candidate event in the seed §5.2 shape.
	Event *events.Wire `json:"event,omitempty"`
	// speech_done
	MessageID   string `json:"message_id,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// tool_call and agent_transcript come from a client that hosts the live
	// speech session itself (a browser talking to the model directly):
	// what the model called, and what it said, as the role holding the floor.
	Tool  *engine.ToolCall  `json:"tool,omitempty"`
	Agent *engine.AgentLine `json:"agent,omitempty"`
	// end: why the session ends early.
	Reason string `json:"reason,omitempty"`
	// client_tool_result: the answer to a client_tool_call.
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
}

// ProtoError is an error with a protocol code.
type ProtoError struct {
	Code    string
	Message string
	// URL, with CodeMoved, is where the session's node takes clients.
	URL string
	// Inputs, with an input_* code, are every refused input of a start.
	Inputs rules.InputErrors
	// Outcome and InputSeq, with CodeUnavailable, say what became of the
	// input (OutcomeNotApplied, OutcomeUnknown) and, when unknown, the log
	// position it takes if its write lands.
	Outcome  string
	InputSeq uint64
}

func (e *ProtoError) Error() string { return e.Code + ": " + e.Message }

// Error messages echo what the client sent only in part, so a frame
// cannot make its own answer large: a quoted value is cut to maxEcho bytes
// and a whole message to maxErrorMessage.
const (
	maxEcho         = 64
	maxErrorMessage = 1024
)

func perr(code, format string, args ...any) *ProtoError {
	return &ProtoError{Code: code, Message: clipMessage(fmt.Sprintf(format, args...))}
}

// clip shortens s to at most n bytes, at a character boundary, and marks
// the cut with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// clipMessage cuts every Go-quoted string in msg (how messages here and
// in the engine quote what a client sent, names and values alike) to
// maxEcho bytes, then the message to maxErrorMessage.
func clipMessage(msg string) string {
	if !strings.Contains(msg, `"`) {
		return clip(msg, maxErrorMessage)
	}
	var b strings.Builder
	for rest := msg; ; {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			b.WriteByte('"')
			rest = rest[1:]
			continue
		}
		rest = rest[len(q):]
		if v, err := strconv.Unquote(q); err == nil && len(v) > maxEcho {
			q = strconv.Quote(clip(v, maxEcho))
		}
		b.WriteString(q)
	}
	return clip(b.String(), maxErrorMessage)
}

// parseFrame decodes and checks one client frame. On error it still
// returns whatever id it could find so the error can be correlated.
func parseFrame(data []byte) (*ClientFrame, *ProtoError) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return &ClientFrame{}, perr(CodeBadJSON, "a frame must be one JSON object")
	}
	var f ClientFrame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&f)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			return &f, perr(CodeBadJSON, "trailing data after the JSON object")
		}
	}
	if err != nil {
		id := salvageID(data)
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return &ClientFrame{ID: id}, perr(CodeBadJSON, "invalid JSON: %v", err)
		case errors.As(err, &typ):
			field := typ.Field
			if field == "" {
				field = "frame"
			}
			return &ClientFrame{ID: id}, perr(CodeBadFrame, "field %s: want %s, got %s", clip(field, maxEcho), typ.Type, clip(typ.Value, maxEcho))
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return &ClientFrame{ID: id}, perr(CodeBadFrame, "%s", strings.TrimPrefix(err.Error(), "json: "))
		default:
			return &ClientFrame{ID: id}, perr(CodeBadFrame, "%v", err)
		}
	}
	if f.ID == "" && f.Type == FrameClientToolResult && f.ToolCallID != "" {
		// A client written for the vendor's protocol sends no id; the
		// call's id answers for it.
		f.ID = f.ToolCallID
	}
	if f.ID == "" {
		return &f, perr(CodeBadFrame, "missing id: every frame carries a client id")
	}
	if len(f.ID) > MaxFrameID {
		id := f.ID[:MaxFrameID]
		f.ID = ""
		return &f, perr(CodeBadFrame, "id longer than %d bytes (starts %q)", MaxFrameID, id[:16])
	}
	if pe := checkFields(&f); pe != nil {
		return &f, pe
	}
	return &f, nil
}

// salvageID finds a string id among the top-level fields of a frame that
// failed to decode, so the id is found even in a frame cut short by the
// size limit.
func salvageID(data []byte) string {
	if id, ok := topString(data, "id"); ok && len(id) <= MaxFrameID {
		return id
	}
	return ""
}

// topString is the text of a frame's top-level field, read token by token
// until the first error.
func topString(data []byte, field string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false
		}
		if key == field {
			t, err := dec.Token()
			s, ok := t.(string)
			return s, err == nil && ok
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// frameFields lists the fields each frame type takes besides id and type;
// any other field that is set is an error, so a typo is reported rather
// than silently ignored.
var frameFields = map[string][]string{
	FrameStart:            {"session_id", "pack", "candidate_id", "seed", "client_playback", "voice_mode", "client_voice", "inputs"},
	FrameResume:           {"session_id", "last_seq", "session_secret"},
	FrameEvent:            {"event"},
	FrameSpeechDone:       {"message_id", "interrupted"},
	FrameToolCall:         {"tool"},
	FrameAgentTranscript:  {"agent"},
	FrameEnd:              {"reason"},
	FrameClientToolResult: {"tool_call_id", "result", "is_error"},
	FramePing:             nil,
}

// setFields names the frame's optional fields that are set, in a fixed
// order.
func (f *ClientFrame) setFields() []string {
	var out []string
	for _, c := range []struct {
		set  bool
		name string
	}{
		{f.SessionID != "", "session_id"}, {f.Pack != "", "pack"}, {f.CandidateID != "", "candidate_id"},
		{f.Seed != nil, "seed"}, {f.ClientPlayback, "client_playback"}, {f.VoiceMode != "", "voice_mode"},
		{f.ClientVoice, "client_voice"}, {f.Inputs != nil, "inputs"}, {f.LastSeq != nil, "last_seq"},
		{f.SessionSecret != "", "session_secret"},
		{f.Event != nil, "event"}, {f.MessageID != "", "message_id"}, {f.Interrupted, "interrupted"},
		{f.Tool != nil, "tool"}, {f.Agent != nil, "agent"}, {f.Reason != "", "reason"},
		{f.ToolCallID != "", "tool_call_id"}, {f.Result != nil, "result"}, {f.IsError, "is_error"},
	} {
		if c.set {
			out = append(out, c.name)
		}
	}
	return out
}

// checkFields checks a frame's required fields and rejects the fields
// that do not belong to its type.
func checkFields(f *ClientFrame) *ProtoError {
	allowed, known := frameFields[f.Type]
	switch {
	case f.Type == "":
		return perr(CodeBadFrame, "missing type")
	case !known:
		return perr(CodeUnknownType, "unknown frame type %q (want start, resume, event, speech_done, tool_call, agent_transcript, client_tool_result, end or ping)", f.Type)
	case f.Type == FrameStart && f.SessionID == "":
		return perr(CodeBadFrame, "start needs session_id")
	case f.Type == FrameStart && f.Pack == "":
		return perr(CodeBadFrame, "start needs pack (a bundled pack name such as \"dayone\", or a pack folder)")
	case f.Type == FrameStart && f.VoiceMode != "" && f.VoiceMode != "live" && f.VoiceMode != "tts":
		return perr(CodeBadFrame, "voice_mode %q: want live or tts (or leave it out for the pack's)", f.VoiceMode)
	case f.Type == FrameResume && f.SessionID == "":
		return perr(CodeBadFrame, "resume needs session_id")
	case f.Type == FrameEvent && f.Event == nil:
		return perr(CodeBadFrame, "event frame needs event (a §5.2 object)")
	case f.Type == FrameSpeechDone && f.MessageID == "":
		return perr(CodeBadFrame, "speech_done needs message_id")
	case f.Type == FrameToolCall && (f.Tool == nil || f.Tool.ID == "" || f.Tool.Name == ""):
		return perr(CodeBadFrame, "tool_call needs tool {id, name, args, role}")
	case f.Type == FrameAgentTranscript && (f.Agent == nil || f.Agent.Role == "" || f.Agent.Text == ""):
		return perr(CodeBadFrame, "agent_transcript needs agent {role, text}")
	case f.Type == FrameClientToolResult && f.ToolCallID == "":
		return perr(CodeBadFrame, "client_tool_result needs tool_call_id (the id of the client_tool_call it answers)")
	case f.Type == FrameClientToolResult && f.Result == nil:
		return perr(CodeBadFrame, "client_tool_result needs result (what the tool returned: a string or any JSON value)")
	case len(f.Reason) > engine.MaxReason:
		return perr(CodeBadFrame, "reason is longer than %d bytes", engine.MaxReason)
	}
	var extra []string
	for _, name := range f.setFields() {
		if slices.Contains(allowed, name) {
			continue
		}
		if name == "session_id" && f.Type == FrameEvent {
			name = "session_id (put it inside event, or leave it out)"
		}
		extra = append(extra, name)
	}
	if len(extra) > 0 {
		return perr(CodeBadFrame, "%s frame does not take %s", f.Type, strings.Join(extra, ", "))
	}
	return nil
}

// candidateEvent converts a §5.2 event to engine form. clientT is nil when
// the event carries no timestamp (the server's time is used).
func candidateEvent(w *events.Wire) (ev engine.CandidateEvent, clientT *int64, pe *ProtoError) {
	if w.EventType == "" {
		return ev, nil, perr(CodeBadEvent, "missing event_type")
	}
	wc := *w
	stamped := wc.TsSec != nil || wc.TsMS != nil
	if !stamped {
		// Timed insists on a time; a placeholder passes its checks and
		// is replaced by the server's clock.
		zero := int64(0)
		wc.TsMS = &zero
	}
	timed, err := wc.Timed()
	if err != nil {
		return ev, nil, perr(CodeBadEvent, "%v", err)
	}
	if stamped {
		t := timed.T
		clientT = &t
	}
	return timed.Event, clientT, nil
}

// Frames the server sends. Every frame has a type; ack, error and pong
// carry the id of the client frame they answer.

// AckFrame answers a client frame that was applied.
type AckFrame struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
	// SessionSecret is set on the ack of a start only: the secret a
	// resume of the session must carry (secret.go).
	SessionSecret string `json:"session_secret,omitempty"`
	// T is the engine time the input was applied at (ms since start).
	T *int64 `json:"t_ms,omitempty"`
	// InputSeq is the input's position in the session's log.
	InputSeq uint64 `json:"input_seq,omitempty"`
	// Clamped says why T differs from the event's own time: "behind"
	// (older than the session clock) or "future" (ahead of the server by
	// more than the tolerance).
	Clamped string `json:"clamped,omitempty"`
	// State is set on start and resume.
	State *SessionState `json:"state,omitempty"`
	// Missed holds, on resume, the effect frames after last_seq in
	// order, each as it was sent.
	Missed []json.RawMessage `json:"missed,omitempty"`
	// Workspace is set on start and resume when the pack has a
	// workspace: the session's starting files, for an editor to show.
	Workspace *WorkspaceState `json:"workspace,omitempty"`
}

// WorkspaceState is a session's workspace as a client seeds its editor
// with it: the root tools name files under, and the starting files (the
// pack's, or those the session supplied for the input workspace.from
// names), the first being the one open.
type WorkspaceState struct {
	Root  string          `json:"root"`
	Files []WorkspaceFile `json:"files"`
}

// WorkspaceFile is one starting file of a workspace.
type WorkspaceFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// SessionState describes a session on start and resume.
type SessionState struct {
	SessionID      string `json:"session_id"`
	CandidateID    string `json:"candidate_id,omitempty"`
	Pack           string `json:"pack"`
	T              int64  `json:"t_ms"`
	LastSeq        uint64 `json:"last_seq"`
	Ended          bool   `json:"ended,omitempty"`
	EndReason      string `json:"end_reason,omitempty"`
	ClientPlayback bool   `json:"client_playback,omitempty"`
	// ServerVoice: the server hosts the session's live speech; the client
	// streams microphone audio and gets audio frames (voice.go).
	ServerVoice bool `json:"server_voice,omitempty"`
	// Playing lists agent messages whose speech has not finished.
	Playing []string `json:"playing,omitempty"`
	// ToolCalls lists the client tool calls still waiting for a
	// client_tool_result, in the order they were made: a client that
	// resumes runs these, and no other client_tool_call among the
	// missed effects (those were answered or timed out).
	ToolCalls []string `json:"tool_calls,omitempty"`
	// Inputs names the inputs the session was started with, sorted
	// (their values stay in the session's log).
	Inputs []string `json:"inputs,omitempty"`
	// AckDeadlineMS is the longest the server takes to answer an input
	// (Config.AckDeadline): a client that has no answer by then, plus a
	// margin for the network, takes the node for dead and resumes.
	AckDeadlineMS int64 `json:"ack_deadline_ms,omitempty"`
	// LastInputSeq is the log position of the last event, speech_done or
	// client_tool_result applied: an input answered unavailable with the
	// outcome unknown at input_seq N was applied if this is N (or more,
	// when another client has sent since).
	LastInputSeq uint64 `json:"last_input_seq,omitempty"`
}

// ErrorFrame reports a frame that was not applied, or a problem.
type ErrorFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// URL, with code moved, is the WebSocket URL of the node that runs
	// the session now.
	URL string `json:"url,omitempty"`
	// Inputs, with an input_* code, list every refused input of a start:
	// {code, input, message}, so a form can mark each field.
	Inputs rules.InputErrors `json:"inputs,omitempty"`
	// Outcome, with code unavailable: not_applied, or unknown until a
	// resume; InputSeq, with unknown, is the log position the input takes
	// if its write lands.
	Outcome  string `json:"outcome,omitempty"`
	InputSeq uint64 `json:"input_seq,omitempty"`
}

// EffectFrame carries one engine effect. A client_tool_call effect
// comes as a frame of type client_tool_call that also carries the call
// in the vendor's shape.
type EffectFrame struct {
	Type           string          `json:"type"`
	SessionID      string          `json:"session_id"`
	Seq            uint64          `json:"seq"`
	ClientToolCall *ClientToolCall `json:"client_tool_call,omitempty"`
	Effect         WireEffect      `json:"effect"`
}

// ClientToolCall is a call for the client to run, as ElevenLabs'
// conversational agent protocol words it.
type ClientToolCall struct {
	ToolName   string          `json:"tool_name"`
	ToolCallID string          `json:"tool_call_id"`
	Parameters json.RawMessage `json:"parameters"`
}

// effectFrame is the frame that carries effect e.
func effectFrame(sessionID string, seq uint64, e *engine.Effect) EffectFrame {
	fr := EffectFrame{Type: FrameEffect, SessionID: sessionID, Seq: seq, Effect: WireEffect{Effect: *e, Role: e.Agent}}
	if e.Type == engine.EffectClientToolCall {
		fr.Type = FrameClientToolCall
		fr.ClientToolCall = &ClientToolCall{ToolName: e.Kind, ToolCallID: e.ID, Parameters: e.Data}
	}
	return fr
}

// WireEffect is an engine effect as clients see it: Role repeats Agent,
// SpeechMS is the simulated playback time the server will wait before
// reporting speech_done, and an llm_request's prompt is left out.
type WireEffect struct {
	engine.Effect
	Role     string `json:"role,omitempty"`
	SpeechMS int64  `json:"speech_ms,omitempty"`
}

// NoticeFrame reports something that happened outside the engine, such as
// a webhook that failed after its retries.
type NoticeFrame struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id,omitempty"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Seq       uint64 `json:"seq,omitempty"`
}

// PongFrame answers a ping.
type PongFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// ServerFrame decodes any server frame; clients use it.
type ServerFrame struct {
	Type          string          `json:"type"`
	ID            string          `json:"id,omitempty"`
	SessionID     string          `json:"session_id,omitempty"`
	SessionSecret string          `json:"session_secret,omitempty"`
	T             *int64          `json:"t_ms,omitempty"`
	InputSeq      uint64          `json:"input_seq,omitempty"`
	Clamped       string          `json:"clamped,omitempty"`
	State         *SessionState   `json:"state,omitempty"`
	Missed        []EffectFrame   `json:"missed,omitempty"`
	Workspace     *WorkspaceState `json:"workspace,omitempty"`
	Code          string          `json:"code,omitempty"`
	Message       string          `json:"message,omitempty"`
	// Inputs are a refused start's refusals, one per input.
	Inputs rules.InputErrors `json:"inputs,omitempty"`
	// Outcome is an unavailable error's (ErrorFrame.Outcome); its
	// input_seq is InputSeq.
	Outcome string      `json:"outcome,omitempty"`
	Seq     uint64      `json:"seq,omitempty"`
	Effect  *WireEffect `json:"effect,omitempty"`
	// ClientToolCall is set on client_tool_call frames.
	ClientToolCall *ClientToolCall `json:"client_tool_call,omitempty"`
	// The event of a server-hosted voice frame (VoiceFrame).
	VoiceEvents
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("service: encoding %T: %v", v, err))
	}
	return b
}
