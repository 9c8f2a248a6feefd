package rules_test

import (
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
)

// A scope is in force until it is popped, scopes nest, and what a scope
// leaves unset reads as absent: a tool handled earlier is never seen by
// a later expression.
func TestScopes(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte(`name: scopes
duration: 1m
roles:
  qa: {persona: x}
tools:
  pass:
    description: hand over
    parameters: {type: object, properties: {to: {type: string}}}
rules:
  - {id: R1, trigger: "tool:pass", when: "tool.name == 'pass' && tool.args.to == 'qa'", do: [{emit: {text: x}}]}
  - {id: R2, trigger: "job:j", when: "args.n == 1 && result.v == 'ok'", do: [{emit: {text: x}}]}
jobs:
  j: {role: qa, prompt: p}
`))
	if err != nil {
		t.Fatal(err)
	}
	toolCond, jobCond := &p.Rules[0].When, &p.Rules[1].When
	e := p.NewEnv()
	holds := func(x *rules.Expr) bool {
		t.Helper()
		ok, err := e.EvalBool(x)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	if holds(toolCond) || e.Tool() != nil {
		t.Fatal("a tool is in scope before any was pushed")
	}
	tv := rules.ToolView{Name: "pass", Args: map[string]any{"to": "qa"}}
	popTool := e.Scope(rules.Scope{Tool: &tv})
	if !holds(toolCond) {
		t.Fatal("the tool pushed is not seen")
	}
	popJob := e.Scope(rules.Scope{Args: map[string]any{"n": 1}, Result: map[string]any{"v": "ok"}})
	if holds(toolCond) || e.Tool() != nil {
		t.Error("a job's scope inside a tool rule still sees the tool")
	}
	if !holds(jobCond) {
		t.Error("the job's args and result are not seen")
	}
	popJob()
	if !holds(toolCond) || holds(jobCond) {
		t.Error("popping the job's scope did not restore the tool's")
	}
	popTool()
	if holds(toolCond) || e.Tool() != nil || e.Args() != nil || e.Result() != nil {
		t.Error("the tool is still seen after its scope was popped")
	}
}
