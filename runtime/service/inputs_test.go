package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/llm"
)

// inputsPack is the test pack declaring an input of each type.
func inputsPack(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("testdata/inputs")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requestLog records the model requests of every session, answered by
// the pack's simulated model.
type requestLog struct {
	mu   sync.Mutex
	reqs map[string][]engine.LLMRequest
}

type recordingModel struct {
	log   *requestLog
	id    string
	inner llm.Answerer
}

func (m *recordingModel) Answer(ctx context.Context, id string, req *engine.LLMRequest) llm.Answer {
	m.log.mu.Lock()
	m.log.reqs[m.id] = append(m.log.reqs[m.id], *req)
	m.log.mu.Unlock()
	return m.inner.Answer(ctx, id, req)
}

func (l *requestLog) factory() ModelFactory {
	inner := SimModel(0, nil)
	return func(id string, p *rules.Pack, c clock.Clock) llm.Answerer {
		return &recordingModel{log: l, id: id, inner: inner(id, p, c)}
	}
}

func (l *requestLog) of(id string) []engine.LLMRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]engine.LLMRequest(nil), l.reqs[id]...)
}

func inputsStart(id, session, pack string, inputs map[string]any) map[string]any {
	f := map[string]any{"id": id, "type": "start", "pack": pack, "session_id": session}
	if inputs != nil {
		f["inputs"] = inputs
	}
	return f
}

func textFile(name, text string) map[string]any { return map[string]any{"name": name, "text": text} }

// firstRequest drives a session until it has asked its model once.
func firstRequest(t *testing.T, h *harness, reqs *requestLog, c *wsClient, id string) engine.LLMRequest {
	t.Helper()
	h.quiesce(id)
	c.send(eventFrame("m", msgEvent(500, "I would check the test log first.")))
	c.expectAck("m")
	for i := 0; i < 40; i++ {
		h.quiesce(id)
		if got := reqs.of(id); len(got) > 0 {
			return got[0]
		}
		h.clk.Advance(100 * time.Millisecond)
	}
	t.Fatalf("session %s asked its model nothing", id)
	return engine.LLMRequest{}
}

// A session's inputs reach its model: the name through a {{NAME}}
// template, a number, a file as a context file, an object as the
// scenario's context.
func TestStartInputsReachModel(t *testing.T) {
	reqs := &requestLog{reqs: map[string][]engine.LLMRequest{}}
	h := newHarness(t, func(c *Config) { c.Model = reqs.factory() })
	pack := inputsPack(t)
	for _, tc := range []struct {
		name    string
		inputs  map[string]any
		system  []string // in the system prompt
		context map[string]string
	}{
		{"text and number", map[string]any{"cand_name": "Ada Lovelace", "years": 7, "level": "senior"},
			[]string{"The candidate is Ada Lovelace, a senior with 7 years.", "Default notes."}, nil},
		{"file", map[string]any{"cand_name": "Grace", "notes": textFile("notes.md", "Asked about flaky tests.")},
			[]string{"The candidate is Grace, a junior with 3 years.", "Asked about flaky tests."}, nil},
		{"object", map[string]any{"cand_name": "Linus", "company": map[string]any{"sector": "payments"}},
			[]string{"The candidate is Linus"}, map[string]string{"sector": "payments", "topic": "session inputs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "in_" + strings.ReplaceAll(tc.name, " ", "_")
			c := h.dial(nil)
			c.send(inputsStart("s", id, pack, tc.inputs))
			ack := c.expectAck("s")
			var names []string
			for k := range tc.inputs {
				names = append(names, k)
			}
			if got := strings.Join(ack.State.Inputs, ","); len(ack.State.Inputs) != len(names) {
				t.Fatalf("ack names inputs %s, want %d", got, len(names))
			}
			req := firstRequest(t, h, reqs, c, id)
			if req.SessionID != id {
				t.Errorf("request session_id %q, want %q", req.SessionID, id)
			}
			for _, want := range tc.system {
				if text := promptText(req); !strings.Contains(text, want) {
					t.Errorf("prompt lacks %q:\n%s", want, text)
				}
			}
			for k, v := range tc.context {
				if got, _ := contextValue(req.ScenarioContext, k); got != v {
					t.Errorf("scenario_context %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// promptText is a request's system prompt and its context files.
func promptText(req engine.LLMRequest) string {
	var b strings.Builder
	b.WriteString(req.System)
	for _, f := range req.Files {
		b.WriteString("\n--- " + f.Path + "\n" + f.Text)
	}
	return b.String()
}

func contextValue(c engine.Context, key string) (string, bool) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", false
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return "", false
	}
	s, ok := m[key].(string)
	return s, ok
}

// traces reports whether anything under the data directory names the
// session: a log, a journal entry, an archive.
func traces(t *testing.T, dir, id string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.Contains(d.Name(), id) {
			found = append(found, p)
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(id)) {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// Each refused input answers its own code, names the input, and leaves
// no session and nothing on disk.
func TestStartInputRefusals(t *testing.T) {
	h := newHarness(t)
	pack := inputsPack(t)
	// Something is logged first, so the directory is not empty anyway.
	ok := h.dial(nil)
	ok.send(inputsStart("s", "refusal_ok", pack, map[string]any{"cand_name": "Ok"}))
	ok.expectAck("s")
	png := map[string]any{"name": "x.png", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString([]byte("\x89PNG"))}
	for _, tc := range []struct {
		name   string
		inputs map[string]any
		code   string
		says   []string
	}{
		{"missing", map[string]any{"years": 2}, CodeInputMissing, []string{"cand_name"}},
		{"type", map[string]any{"cand_name": "A", "years": "ten"}, CodeInputType, []string{"years", "want a number"}},
		{"range", map[string]any{"cand_name": "A", "years": 99}, CodeInputRange, []string{"years", "maximum 50"}},
		{"too large", map[string]any{"cand_name": "A", "notes": textFile("n.md", strings.Repeat("x", 2000))}, CodeInputTooLarge, []string{"notes", "1 KiB"}},
		{"too many", map[string]any{"cand_name": "A", "code": []any{textFile("a.js", "a"), textFile("b.js", "b"), textFile("c.js", "c")}}, CodeInputTooMany, []string{"code", "at most 2"}},
		{"media", map[string]any{"cand_name": "A", "notes": png}, CodeInputMedia, []string{"notes", "image/png"}},
		{"unknown", map[string]any{"cand_name": "A", "bogus": 1}, CodeInputUnknown, []string{"bogus"}},
		{"upload", map[string]any{"cand_name": "A", "notes": map[string]any{"name": "n.md", "sha256": strings.Repeat("ab", 32)}}, CodeInputUpload, []string{"notes", "upload it first"}},
		{"all at once", map[string]any{"years": -1, "bogus": true}, CodeInputUnknown, []string{"bogus", "cand_name", "years"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "refused_" + strings.ReplaceAll(tc.name, " ", "_")
			c := h.dial(nil)
			c.send(inputsStart("s", id, pack, tc.inputs))
			f := c.expectError("s", tc.code)
			for _, w := range tc.says {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q does not say %q", f.Message, w)
				}
			}
			// The same refusals, one per input, for a form to mark.
			if len(f.Inputs) == 0 || f.Inputs[0].Code != tc.code || !strings.Contains(f.Message, f.Inputs[len(f.Inputs)-1].Msg) {
				t.Errorf("refusals %+v do not match the error %s %q", f.Inputs, tc.code, f.Message)
			}
			if tc.name == "all at once" && len(f.Inputs) != 3 {
				t.Errorf("all at once: %d refusals, want 3: %+v", len(f.Inputs), f.Inputs)
			}
			if h.srv.lookup(id) != nil {
				t.Error("a session was created")
			}
			if _, err := h.srv.dir.Read(id); err == nil {
				t.Error("a log was written")
			}
			if found := traces(t, h.dir, id); len(found) > 0 {
				t.Errorf("the data directory names the session: %v", found)
			}
			// The connection is still free to start a session.
			c.send(inputsStart("s2", id, pack, map[string]any{"cand_name": "Ok"}))
			c.expectAck("s2")
		})
	}
}

// upload posts data to /v1/uploads.
func (h *harness) upload(data []byte) (int, UploadResponse, map[string]any) {
	h.t.Helper()
	resp, err := http.Post(h.ts.URL+"/v1/uploads", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ur UploadResponse
	var m map[string]any
	json.Unmarshal(body, &ur)
	json.Unmarshal(body, &m)
	return resp.StatusCode, ur, m
}

// A file uploaded first is named by its sha256 at start; the session's
// log holds its content, not the hash; an expired upload is unknown.
func TestStartWithUpload(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.UploadTTL = time.Minute })
	pack := inputsPack(t)
	code := []byte("export function big() {\n" + strings.Repeat("  return 1;\n", 60000) + "}\n") // ~700 KB
	st, up, _ := h.upload(code)
	if st != http.StatusOK || up.Size != int64(len(code)) || len(up.SHA256) != 64 {
		t.Fatalf("upload answered %d %+v", st, up)
	}
	c := h.dial(nil)
	c.send(inputsStart("s", "up1", pack, map[string]any{"cand_name": "A", "code": map[string]any{"name": "big.js", "sha256": up.SHA256}}))
	ack := c.expectAck("s")
	if ack.Workspace == nil || len(ack.Workspace.Files) != 1 || ack.Workspace.Files[0].Content != string(code) {
		t.Fatalf("workspace in the ack does not hold the upload")
	}
	rec, err := h.srv.dir.Read("up1")
	if err != nil {
		t.Fatal(err)
	}
	var files []rules.File
	if err := json.Unmarshal(rec.Header.Options.Inputs["code"], &files); err != nil || len(files) != 1 || !bytes.Equal(files[0].Data, code) {
		t.Fatalf("the log header does not hold the uploaded file (err %v)", err)
	}
	if rec.Header.Options.SessionID != "up1" {
		t.Fatalf("header session id %q", rec.Header.Options.SessionID)
	}
	h.clk.Advance(time.Minute)
	c2 := h.dial(nil)
	c2.send(inputsStart("s", "up2", pack, map[string]any{"cand_name": "A", "code": map[string]any{"name": "big.js", "sha256": up.SHA256}}))
	c2.expectError("s", CodeInputUpload)
}

// An upload over the limit is refused with too_large.
func TestUploadLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxUploadBytes = 1000 })
	for _, tc := range []struct {
		size int
		want int
	}{{1000, http.StatusOK}, {1001, http.StatusRequestEntityTooLarge}} {
		st, _, body := h.upload(bytes.Repeat([]byte("x"), tc.size))
		if st != tc.want {
			t.Errorf("%d bytes: status %d %v, want %d", tc.size, st, body, tc.want)
		}
	}
}

// A start frame carries files inline up to MaxStartBytes; once a session
// is bound, a frame that large is too_large.
func TestStartFrameSize(t *testing.T) {
	h := newHarness(t)
	pack := inputsPack(t)
	big := strings.Repeat("// filler line of code\n", 30000) // ~690 KB, ~920 KB as base64
	c := h.dial(nil)
	c.send(inputsStart("s", "bigstart", pack, map[string]any{"cand_name": "A",
		"code": map[string]any{"name": "big.js", "data": base64.StdEncoding.EncodeToString([]byte(big))}}))
	ack := c.expectAck("s")
	if ack.Workspace == nil || ack.Workspace.Files[0].Content != big {
		t.Fatal("the inline file is not the workspace")
	}
	// id first, so the answer can name the frame it refuses.
	c.sendRaw([]byte(`{"id":"e","type":"event","event":{"event_type":"candidate_message","ts_ms":100,"data":{"source":"text","text":"` + strings.Repeat("word ", 20000) + `"}}}`))
	c.expectError("e", CodeTooLarge)
	// Before a session, only a start frame may pass the ordinary limit.
	c3 := h.dial(nil)
	c3.sendRaw([]byte(`{"id":"e","type":"event","event":{"event_type":"candidate_message","ts_ms":100,"data":{"source":"text","text":"` + strings.Repeat("word ", 20000) + `"}}}`))
	c3.expectError("e", CodeTooLarge)
	c2 := h.dial(nil)
	c2.send(inputsStart("s", "toobig", pack, map[string]any{"cand_name": "A",
		"code": map[string]any{"name": "big.js", "text": strings.Repeat("x", 1100<<10)}}))
	if f := c2.expectError("s", CodeTooLarge); !strings.Contains(f.Message, "/v1/uploads") {
		t.Fatalf("too_large message %q does not point to uploads", f.Message)
	}
}

// The start and resume acks carry the workspace's starting files: the
// pack's, or those the session supplied.
func TestStartAckWorkspace(t *testing.T) {
	h := newHarness(t)
	training, err := os.ReadFile("../../scenarios/training/files/index.js")
	if err != nil {
		t.Fatal(err)
	}
	pack := inputsPack(t)
	for _, tc := range []struct {
		name   string
		start  map[string]any
		root   string
		files  []WorkspaceFile
		inputs []string
	}{
		{"training", map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "ws_training"},
			"/workspace", []WorkspaceFile{{"index.js", string(training)}}, nil},
		{"default", inputsStart("s", "ws_default", pack, map[string]any{"cand_name": "A"}),
			"/workspace", []WorkspaceFile{{"main.js", "export const answer = 42;\n"}}, []string{"cand_name"}},
		{"supplied", inputsStart("s", "ws_supplied", pack, map[string]any{"cand_name": "A",
			"code": []any{textFile("app.js", "app()\n"), textFile("src/util.js", "util()\n")}}),
			"/workspace", []WorkspaceFile{{"app.js", "app()\n"}, {"src/util.js", "util()\n"}}, []string{"cand_name", "code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dial(nil)
			c.send(tc.start)
			ack := c.expectAck("s")
			check := func(what string, ack ServerFrame) {
				t.Helper()
				if ack.Workspace == nil {
					t.Fatalf("%s ack has no workspace", what)
				}
				if ack.Workspace.Root != tc.root || string(mustJSON(ack.Workspace.Files)) != string(mustJSON(tc.files)) {
					t.Fatalf("%s ack workspace %s, want root %s files %s", what, mustJSON(ack.Workspace), tc.root, mustJSON(tc.files))
				}
				if strings.Join(ack.State.Inputs, ",") != strings.Join(tc.inputs, ",") {
					t.Fatalf("%s ack inputs %v, want %v", what, ack.State.Inputs, tc.inputs)
				}
			}
			check("start", ack)
			r := h.dial(nil)
			r.send(map[string]any{"id": "r", "type": "resume", "session_id": tc.start["session_id"], "session_secret": ack.SessionSecret})
			check("resume", r.expectAck("r"))
		})
	}
}

// A session with inputs recovered after a restart runs on with the same
// inputs: its next request is what it would have been, and its ended
// archive records them.
func TestInputsSurviveRestart(t *testing.T) {
	reqs := &requestLog{reqs: map[string][]engine.LLMRequest{}}
	h := newHarness(t, func(c *Config) { c.Model = reqs.factory() })
	pack := inputsPack(t)
	notes := "Recovered notes: ask about retries."
	c := h.dial(nil)
	c.send(inputsStart("s", "rec", pack, map[string]any{"cand_name": "Barbara", "years": 12,
		"notes": textFile("notes.md", notes), "topics": []string{"replay"}}))
	secret := c.expectAck("s").SessionSecret
	h.quiesce("rec")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := h.cfg
	h2 := startHarness(t, cfg, h.clk, nil)
	c2 := h2.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "rec", "session_secret": secret})
	if ack := c2.expectAck("r"); strings.Join(ack.State.Inputs, ",") != "cand_name,notes,topics,years" {
		t.Fatalf("recovered session's inputs %v", ack.State.Inputs)
	}
	if got := h2.srv.lookup("rec").eng.Inputs().Text("notes"); got != notes {
		t.Fatalf("recovered notes %q", got)
	}
	req := firstRequest(t, h2, reqs, c2, "rec")
	for _, want := range []string{"The candidate is Barbara, a junior with 12 years.", notes} {
		if text := promptText(req); !strings.Contains(text, want) {
			t.Errorf("recovered session's request lacks %q:\n%s", want, text)
		}
	}
	h2.runUntil("rec", 13000)
	m, err := archive.Verify(filepath.Join(h2.dir, ArchiveDir, "rec"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]archive.Input{}
	for _, in := range m.Inputs {
		byName[in.Name] = in
	}
	if in := byName["cand_name"]; !in.Supplied || string(in.Value) != `"Barbara"` {
		t.Errorf("archive cand_name %+v", in)
	}
	if in := byName["years"]; !in.Supplied || string(in.Value) != "12" {
		t.Errorf("archive years %+v", in)
	}
	if in := byName["level"]; in.Supplied || string(in.Value) != `"junior"` {
		t.Errorf("archive level %+v", in)
	}
	if in := byName["notes"]; !in.Supplied || len(in.Files) != 1 || in.Files[0].Name != "notes.md" || in.Files[0].Bytes != len(notes) || len(in.Files[0].SHA256) != 64 || in.Value != nil {
		t.Errorf("archive notes %+v", in)
	}
	if in := byName["code"]; in.Supplied || len(in.Files) != 1 || in.Files[0].Name != "main.js" {
		t.Errorf("archive code %+v", in)
	}
}
