package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

// modelWatch stands between a dry run and a real model. On a terminal it
// shows which call is out and for how long, so a run against a slow or
// dead endpoint is never silent; and it gives up on a model whose first
// calls all fail to connect or are refused, instead of playing ten
// minutes of fallback lines that say nothing about the model.
type modelWatch struct {
	next llm.Answerer
	c    *cli
	// giveUp, if set, stops the run with a cause.
	giveUp context.CancelCauseFunc

	calls, failed int
	// unreachable counts calls from the first that failed in a way no
	// later call will fix; any other outcome ends the count.
	unreachable int
	firstErr    string

	mu      sync.Mutex // guards what the spinner draws
	drawn   bool
	stop    chan struct{}
	stopped chan struct{}
}

// failFastAfter is how many first calls must all fail to reach the model
// before the run stops: one can be a blip, three in a row at the start
// is a wrong key, URL or model name.
const failFastAfter = 3

func newModelWatch(next llm.Answerer, c *cli) *modelWatch {
	return &modelWatch{next: next, c: c}
}

func (m *modelWatch) Answer(ctx context.Context, id string, req *engine.LLMRequest) llm.Answer {
	m.calls++
	if m.c.tty {
		m.spin(req)
	}
	a := m.next.Answer(ctx, id, req)
	if m.c.tty {
		m.unspin()
	}
	if e := a.Result.Err; e != nil {
		m.failed++
		if m.unreachable == m.calls-1 && unreachable(e) {
			m.unreachable++
			if m.firstErr == "" {
				m.firstErr = e.Kind + ": " + e.Message
			}
		}
	}
	if m.giveUp != nil && m.unreachable == failFastAfter && m.calls == failFastAfter {
		m.giveUp(fmt.Errorf("the model's first %d calls all failed (%s); check the key, --base-url and --model, or pass --fail-fast=false to play on with fallback lines", failFastAfter, m.firstErr))
	}
	return a
}

// unreachable reports errors that say the model cannot be used at all: no
// connection, or a request refused as malformed or unauthorised (a wrong
// model name or key), as opposed to a slow or busy model.
func unreachable(e *engine.AdapterError) bool {
	switch e.Kind {
	case "network", "bad_request":
		return true
	}
	return strings.Contains(e.Message, "401") || strings.Contains(e.Message, "403")
}

// spin draws "model call 7 (qa) 1.2s" on stderr until the call returns.
func (m *modelWatch) spin(req *engine.LLMRequest) {
	m.stop, m.stopped = make(chan struct{}), make(chan struct{})
	who := req.Role
	go func() {
		defer close(m.stopped)
		start := time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		frames := `|/-\`
		for i := 0; ; i++ {
			m.mu.Lock()
			failed := ""
			if m.failed > 0 {
				failed = fmt.Sprintf(", %d failed", m.failed)
			}
			fmt.Fprintf(m.c.stderr, "\r\033[K%c model call %d (%s%s) %.1fs", frames[i%len(frames)], m.calls, who, failed, time.Since(start).Seconds())
			m.drawn = true
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

func (m *modelWatch) unspin() {
	close(m.stop)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		fmt.Fprint(m.c.stderr, "\r\033[K")
		m.drawn = false
	}
}

// done prints how the model did, once the run is over.
func (m *modelWatch) done() {
	if m.calls > 0 {
		fmt.Fprintf(m.c.stderr, "# model: %d calls, %d failed\n", m.calls, m.failed)
	}
}
