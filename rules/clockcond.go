package rules

import "github.com/expr-lang/expr/ast"

// clockCond is a condition that only compares the session's clock with a
// number fixed when the pack loads (`now() >= SESSION_DURATION`, an end
// rule's usual form): the engine answers it without running expr's
// machine, since it is asked after every step of every session.
type clockCond struct {
	op string // >=, >, <= or <
	ms int64
}

func (c clockCond) holds(now int64) bool {
	switch c.op {
	case ">=":
		return now >= c.ms
	case ">":
		return now > c.ms
	case "<=":
		return now <= c.ms
	default:
		return now < c.ms
	}
}

// ClockCondition reports, for a condition that only compares now() with
// a constant, whether it holds at now; ok is false for any other.
func (x *Expr) ClockCondition(now int64) (holds, ok bool) {
	if x.clock == nil {
		return false, false
	}
	return x.clock.holds(now), true
}

// clockCondOf recognises `now() OP N` and `N OP now()`, where N is a
// whole number written out or a constant of the pack holding one.
func (c *compiler) clockCondOf(node ast.Node) *clockCond {
	b, ok := node.(*ast.BinaryNode)
	if !ok {
		return nil
	}
	flip := map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">"}
	if _, ok := flip[b.Operator]; !ok {
		return nil
	}
	if ms, ok := c.wholeConstant(b.Right); ok && isNowCall(b.Left) {
		return &clockCond{op: b.Operator, ms: ms}
	}
	if ms, ok := c.wholeConstant(b.Left); ok && isNowCall(b.Right) {
		return &clockCond{op: flip[b.Operator], ms: ms}
	}
	return nil
}

func isNowCall(n ast.Node) bool {
	call, ok := n.(*ast.CallNode)
	if !ok || len(call.Arguments) != 0 {
		return false
	}
	id, ok := call.Callee.(*ast.IdentifierNode)
	return ok && id.Value == "now"
}

func (c *compiler) wholeConstant(n ast.Node) (int64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return int64(n.Value), true
	case *ast.IdentifierNode:
		for i := range c.p.Constants {
			if k := &c.p.Constants[i]; k.ID == n.Value {
				v, ok := k.Norm.(int64)
				return v, ok
			}
		}
	}
	return 0, false
}
