// Package vendorfake is what the strict fakes of the LLM vendors' APIs
// (geminifake, openaifake, anthropicfake) have in common: the request loop
// that checks, records and answers requests (Server), the scripted faults a
// test injects (Fault, Script), and the schema walk that refuses any body
// the vendor's reference does not allow (Schema). What each vendor
// documents stays in its own fake as tables: its routes and headers, the
// fields, types, enums and bounds of its request body, the wording of its
// refusals, and the types and status codes of its error bodies.
//
// The fakes are linked only into tests, and so is this package.
package vendorfake

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Wire is what a vendor's fake tells the loop about its API. R is the
// decoded request, P the scripted reply.
type Wire[R, P any] struct {
	// Name prefixes the fake's own messages ("geminifake").
	Name string
	// Key is the API key a server expects when given none; OK the reply
	// of a server given no Behavior.
	Key string
	OK  P
	// ContentType is the type of every body the fake writes.
	ContentType string
	// Errors are the error types of the vendor's error bodies.
	Errors Errors
	// Route checks the method and path. It returns what the path names
	// (Gemini's model), or why the request has no endpoint.
	Route func(r *http.Request) (string, *RequestError)
	// Caller checks the credentials, the other headers and the query;
	// the loop then checks that the body is sent as JSON, and, when
	// NoQuery is set, that the URL has no query.
	Caller  func(r *http.Request) *RequestError
	NoQuery bool
	// Validate checks and decodes the body of a request to route.
	Validate func(route string, body []byte) (*R, *RequestError)
	// Index numbers a valid request, as Received.Index does.
	Index func(req *R, i int)
	// Fault is the part of a reply that is not a model's answer.
	Fault func(P) Fault
	// Answer is the body of a successful reply.
	Answer func(req *R, body []byte, reply P) (any, error)
	// ErrorBody is the vendor's error body for e, the i-th request's.
	ErrorBody func(e *RequestError, i int) any
	// Stamp, when set, adds headers every answer to the i-th request has.
	Stamp func(h http.Header, i int)
}

// Errors names the error types a vendor's error bodies give HTTP statuses.
type Errors struct {
	// Types names statuses one by one.
	Types map[int]string
	// Server names any other 5xx status, Other any other status.
	Server, Other string
	// Codes are the codes the bodies of scripted failures carry (OpenAI's).
	Codes map[int]string
}

// Type names the error type of status.
func (e Errors) Type(status int) string {
	if t, ok := e.Types[status]; ok {
		return t
	}
	if status >= 500 {
		return e.Server
	}
	return e.Other
}

// Fault is a scripted answer that is not a model's: a failure, a body no
// real server should give, or a request held open.
type Fault struct {
	// Status, when neither 0 nor 200, fails the call with this status and
	// the vendor's error body: Type (by default the status's) and Message
	// (by default the status text).
	Status  int
	Type    string
	Message string
	// Header is sent with the failure: a throttled call's Retry-After,
	// say.
	Header http.Header
	// Details go in the error body where the vendor has a place for them
	// (Google's error.details: a google.rpc.RetryInfo, say).
	Details []any
	// Body, when set, is written as is with Status (200 when 0).
	Body []byte
	// Hang holds the request until the client gives up or the server
	// closes.
	Hang bool
}

// RequestError is a request a fake refused: the HTTP status and error body
// fields it answered, and every violation found.
type RequestError struct {
	Status int
	// Type is the error type the body names (Google's status name,
	// OpenAI's and Anthropic's error type).
	Type string
	// Param and Code are OpenAI's fields for the first violation, empty
	// when its body has them null.
	Param, Code string
	Violations  []string
	// Details are the scripted failure's Fault.Details.
	Details []any
}

func (e *RequestError) Error() string { return strings.Join(e.Violations, "\n") }

// Refuse is a refusal with status, error type and violations.
func Refuse(status int, typ string, violations ...string) *RequestError {
	return &RequestError{Status: status, Type: typ, Violations: violations}
}

// Received is one request as a fake saw it.
type Received[R any] struct {
	Index  int
	Method string
	// Path is the URL path; Model the model it names, for an API whose
	// path names one (Gemini's), in a well-formed path.
	Path   string
	Model  string
	Header http.Header
	Body   []byte
	// Err is why the server refused the request (a *RequestError), nil
	// when it passed validation and went to the Behavior.
	Err error
	// Request is the decoded body of a valid request, nil otherwise.
	Request *R
}

// Server is a running fake.
type Server[R, P any] struct {
	// URL is the base URL to give the client.
	URL string
	// APIKey is the key the server expects.
	APIKey string

	wire     Wire[R, P]
	behavior func(*R) P
	srv      *httptest.Server
	done     chan struct{}
	once     sync.Once

	mu       sync.Mutex
	received []Received[R]
}

// Start starts a fake of wire on a loopback port, expecting key and
// answering valid requests with behavior (wire's defaults when empty).
// Close it when done.
func Start[R, P any](wire Wire[R, P], key string, behavior func(*R) P) *Server[R, P] {
	if key == "" {
		key = wire.Key
	}
	if behavior == nil {
		behavior = func(*R) P { return wire.OK }
	}
	s := &Server[R, P]{APIKey: key, wire: wire, behavior: behavior, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Err is the error of a validation: nil, not a nil *RequestError.
func Err[R any](_ *R, e *RequestError) error {
	if e == nil {
		return nil
	}
	return e
}

// Close releases hanging requests and stops the server.
func (s *Server[R, P]) Close() {
	s.once.Do(func() { close(s.done) })
	s.srv.Close()
}

// Requests returns every request received so far, in arrival order.
func (s *Server[R, P]) Requests() []Received[R] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received[R](nil), s.received...)
}

func (s *Server[R, P]) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(r.Body)
	route, refused := s.wire.Route(r)
	rec := Received[R]{Method: r.Method, Path: r.URL.Path, Model: route, Header: r.Header.Clone(), Body: body}
	var req *R
	switch {
	case readErr != nil:
		refused = Refuse(http.StatusBadRequest, "", s.wire.Name+": read body: "+readErr.Error())
	case refused == nil:
		if refused = s.caller(r); refused == nil {
			req, refused = s.wire.Validate(route, body)
		}
	}
	s.mu.Lock()
	rec.Index = len(s.received)
	if refused != nil {
		if refused.Type == "" {
			refused.Type = s.wire.Errors.Type(refused.Status)
		}
		rec.Err = refused
	} else {
		rec.Request = req
		s.wire.Index(req, rec.Index)
	}
	s.received = append(s.received, rec)
	s.mu.Unlock()

	if s.wire.Stamp != nil {
		s.wire.Stamp(w.Header(), rec.Index)
	}
	if refused != nil {
		s.write(w, rec.Index, refused.Status, s.wire.ErrorBody(refused, rec.Index))
		return
	}
	reply := s.behavior(req)
	f := s.wire.Fault(reply)
	switch {
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
			s.fail(w, rec.Index, Fault{Status: http.StatusServiceUnavailable, Message: s.wire.Name + ": server closed"})
		}
	case f.Body != nil:
		w.Header().Set("Content-Type", s.wire.ContentType)
		if f.Status == 0 {
			f.Status = http.StatusOK
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write(f.Body)
	case f.Status != 0 && f.Status != http.StatusOK:
		s.fail(w, rec.Index, f)
	default:
		resp, err := s.wire.Answer(req, body, reply)
		if err != nil {
			s.fail(w, rec.Index, Fault{Status: http.StatusInternalServerError, Message: err.Error()})
			return
		}
		s.write(w, rec.Index, http.StatusOK, resp)
	}
}

func (s *Server[R, P]) caller(r *http.Request) *RequestError {
	if e := s.wire.Caller(r); e != nil {
		return e
	}
	if s.wire.NoQuery && r.URL.RawQuery != "" {
		return Refuse(http.StatusBadRequest, "", fmt.Sprintf("%s: %s takes no query parameters, got %q", s.wire.Name, r.URL.Path, r.URL.RawQuery))
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return Refuse(http.StatusBadRequest, "", fmt.Sprintf("%s: the body must be sent as application/json, not %q", s.wire.Name, r.Header.Get("Content-Type")))
	}
	return nil
}

// fail answers the i-th request with f's status in the vendor's error body.
func (s *Server[R, P]) fail(w http.ResponseWriter, i int, f Fault) {
	e := &RequestError{Status: f.Status, Type: f.Type, Code: s.wire.Errors.Codes[f.Status], Violations: []string{f.Message}, Details: f.Details}
	for k, vs := range f.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if e.Type == "" {
		e.Type = s.wire.Errors.Type(f.Status)
	}
	if f.Message == "" {
		e.Violations = []string{http.StatusText(f.Status)}
	}
	s.write(w, i, f.Status, s.wire.ErrorBody(e, i))
}

// write answers the i-th request with v as JSON.
func (s *Server[R, P]) write(w http.ResponseWriter, i, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// A scripted reply can hold JSON that is not (a RawMessage).
		e := Refuse(http.StatusInternalServerError, s.wire.Errors.Type(http.StatusInternalServerError), s.wire.Name+": marshal")
		status, b = e.Status, must(json.Marshal(s.wire.ErrorBody(e, i)))
	}
	w.Header().Set("Content-Type", s.wire.ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Script answers the n-th request it is called for with replies[n], and
// fails any request past the end with fail's reply to a message saying so.
// Only valid requests reach a Behavior, so refused ones do not use up a
// reply. It is safe for concurrent use.
func Script[R, P any](name string, replies []P, fail func(status int, message string) P) func(*R) P {
	var mu sync.Mutex
	next := 0
	return func(*R) P {
		mu.Lock()
		n := next
		next++
		mu.Unlock()
		if n < len(replies) {
			return replies[n]
		}
		return fail(http.StatusInternalServerError, fmt.Sprintf("%s: unscripted request: the script has %d replies", name, len(replies)))
	}
}

// MustJSON is v marshalled, for a reply's text; only a test's own value
// can fail, and then it panics.
func MustJSON(name string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(name + ".JSON: " + err.Error())
	}
	return string(b)
}
