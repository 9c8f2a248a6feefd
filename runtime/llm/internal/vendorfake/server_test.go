package vendorfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A toy vendor: POST /v1/say with a bearer key and a body {"text": ...}.
type toyRequest struct {
	Index int
	Text  string `json:"text"`
}

type toyReply struct {
	Text string
	Fault
}

type toyError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Request int    `json:"request"`
}

var toySchema = &Schema{Root: &Node{Kind: Object, Required: []string{"text"}, Fields: map[string]*Field{
	"text": {Key: "text", Node: &Node{Kind: String, MinLen: 1}},
}}}

func startToy(t *testing.T, behavior func(*toyRequest) toyReply) *Server[toyRequest, toyReply] {
	t.Helper()
	s := Start(Wire[toyRequest, toyReply]{
		Name: "toyfake", Key: "toy-key", OK: toyReply{Text: "ok"}, ContentType: "application/json",
		Errors: Errors{Types: map[int]string{429: "slow_down"}, Server: "server", Other: "client", Codes: map[int]string{429: "rate"}},
		Route: func(r *http.Request) (string, *RequestError) {
			if r.URL.Path != "/v1/say" || r.Method != http.MethodPost {
				return "", Refuse(http.StatusNotFound, "", "no such endpoint")
			}
			return "", nil
		},
		NoQuery: true,
		Caller: func(r *http.Request) *RequestError {
			if r.Header.Get("Authorization") != "Bearer toy-key" {
				return Refuse(http.StatusUnauthorized, "auth", "bad key")
			}
			return nil
		},
		Validate: func(_ string, body []byte) (*toyRequest, *RequestError) {
			raw, err := DecodeJSON(body)
			if err != nil {
				return nil, Refuse(http.StatusBadRequest, "", err.Error())
			}
			word := func(v Violation) string {
				return v.Path + ": " + map[Code]string{TooShort: "too short", Missing: "missing"}[v.Code]
			}
			if _, errs := Check(toySchema, raw, word); len(errs) > 0 {
				return nil, Refuse(http.StatusBadRequest, "", errs...)
			}
			req := new(toyRequest)
			if err := json.Unmarshal(body, req); err != nil {
				return nil, Refuse(http.StatusBadRequest, "", err.Error())
			}
			return req, nil
		},
		Index: func(r *toyRequest, i int) { r.Index = i },
		Fault: func(r toyReply) Fault { return r.Fault },
		Answer: func(req *toyRequest, _ []byte, r toyReply) (any, error) {
			return map[string]string{"said": r.Text}, nil
		},
		ErrorBody: func(e *RequestError, i int) any {
			return map[string]toyError{"error": {Type: e.Type, Message: e.Error(), Code: e.Code, Request: i}}
		},
		Stamp: func(h http.Header, i int) { h.Set("request-id", fmt.Sprint(i)) },
	}, "", behavior)
	t.Cleanup(s.Close)
	return s
}

// say posts body to path with key, as JSON unless the path says
// otherwise after a space ("/v1/say text/plain").
func say(t *testing.T, s *Server[toyRequest, toyReply], path, key, body string) (int, string, http.Header) {
	t.Helper()
	path, ct, _ := strings.Cut(path, " ")
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", cmp.Or(ct, "application/json; charset=utf-8"))
	status, raw, h := Send(t, req)
	return status, string(raw), h
}

func TestLoop(t *testing.T) {
	s := startToy(t, Script[toyRequest]("toyfake", []toyReply{
		{Text: "hi"},
		{Fault: Fault{Status: 429, Message: "slow down"}},
		{Fault: Fault{Status: 503}},
		{Fault: Fault{Status: 418, Type: "teapot", Message: "short and stout"}},
		{Fault: Fault{Status: 502, Body: []byte("upstream")}},
		{Fault: Fault{Body: []byte(`{"said":`)}},
	}, func(status int, msg string) toyReply { return toyReply{Fault: Fault{Status: status, Message: msg}} }))
	for i, tt := range []struct {
		path, key, body string
		status          int
		answer          string
	}{
		{"/v1/say", "toy-key", `{"text":"a"}`, 200, `{"said":"hi"}`},
		{"/v1/said", "toy-key", `{"text":"a"}`, 404, `{"error":{"type":"client","message":"no such endpoint","request":1}}`},
		{"/v1/say", "nope", `{"text":"a"}`, 401, `{"error":{"type":"auth","message":"bad key","request":2}}`},
		{"/v1/say", "toy-key", `{"text":""}`, 400, `{"error":{"type":"client","message":"text: too short","request":3}}`},
		{"/v1/say", "toy-key", `{}`, 400, `{"error":{"type":"client","message":"text: missing","request":4}}`},
		{"/v1/say?x=1", "toy-key", `{"text":"a"}`, 400, `{"error":{"type":"client","message":"toyfake: /v1/say takes no query parameters, got \"x=1\"","request":5}}`},
		{"/v1/say text/plain", "toy-key", `{"text":"a"}`, 400, `{"error":{"type":"client","message":"toyfake: the body must be sent as application/json, not \"text/plain\"","request":6}}`},
		{"/v1/say", "toy-key", `{"text":"b"}`, 429, `{"error":{"type":"slow_down","message":"slow down","code":"rate","request":7}}`},
		{"/v1/say", "toy-key", `{"text":"c"}`, 503, `{"error":{"type":"server","message":"Service Unavailable","request":8}}`},
		{"/v1/say", "toy-key", `{"text":"d"}`, 418, `{"error":{"type":"teapot","message":"short and stout","request":9}}`},
		{"/v1/say", "toy-key", `{"text":"e"}`, 502, `upstream`},
		{"/v1/say", "toy-key", `{"text":"f"}`, 200, `{"said":`},
		{"/v1/say", "toy-key", `{"text":"g"}`, 500, `{"error":{"type":"server","message":"toyfake: unscripted request: the script has 6 replies","request":12}}`},
	} {
		status, answer, h := say(t, s, tt.path, tt.key, tt.body)
		if status != tt.status || strings.TrimSpace(answer) != tt.answer {
			t.Errorf("request %d: %d %s, want %d %s", i, status, answer, tt.status, tt.answer)
		}
		if h.Get("request-id") != fmt.Sprint(i) || h.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: headers %v", i, h)
		}
	}
	// Refused requests are recorded with their refusal and did not use up
	// a reply; valid ones with their body, decoded and numbered.
	got := s.Requests()
	for i, r := range got {
		refused := i >= 1 && i <= 6
		if (r.Err != nil) != refused || (r.Request == nil) != refused || r.Index != i {
			t.Errorf("request %d recorded as %+v", i, r)
		}
		if !refused && r.Request.Index != i {
			t.Errorf("request %d decoded with index %d", i, r.Request.Index)
		}
	}
	if e, _ := got[2].Err.(*RequestError); e == nil || e.Status != 401 || e.Type != "auth" {
		t.Errorf("refusal = %#v", got[2].Err)
	}
}

func TestDefaults(t *testing.T) {
	s := startToy(t, nil)
	if s.APIKey != "toy-key" {
		t.Errorf("key = %q", s.APIKey)
	}
	if status, answer, _ := say(t, s, "/v1/say", "toy-key", `{"text":"a"}`); status != 200 || strings.TrimSpace(answer) != `{"said":"ok"}` {
		t.Errorf("default reply: %d %s", status, answer)
	}
}

func TestHangEndsWithTheClientOrTheServer(t *testing.T) {
	s := startToy(t, func(*toyRequest) toyReply { return toyReply{Fault: Fault{Hang: true}} })
	newReq := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/say", strings.NewReader(`{"text":"a"}`))
		req.Header.Set("Authorization", "Bearer toy-key")
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	client := &http.Client{Timeout: 20 * time.Millisecond}
	if _, err := client.Do(newReq()); err == nil {
		t.Error("a hanging request answered")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(newReq()); err == nil {
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("a request released by Close: status %d", resp.StatusCode)
			}
			resp.Body.Close()
		}
	}()
	for len(s.Requests()) < 2 {
		time.Sleep(time.Millisecond)
	}
	s.Close() // must not wait for the hanging request
	<-done
}

func TestConcurrentRequests(t *testing.T) {
	const n = 16
	s := startToy(t, func(r *toyRequest) toyReply { return toyReply{Text: r.Text} })
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if status, answer, _ := say(t, s, "/v1/say", "toy-key", fmt.Sprintf(`{"text":"agent %d"}`, i)); status != 200 {
				t.Errorf("status %d: %s", status, answer)
			}
		})
	}
	wg.Wait()
	got := s.Requests()
	if len(got) != n {
		t.Fatalf("recorded %d requests", len(got))
	}
	for i, r := range got {
		if r.Index != i || r.Err != nil || r.Request == nil || r.Request.Index != i {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}
