package rules

import (
	"reflect"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// viewScope is a set of the places where a scoped view exists.
type viewScope uint8

const (
	// scopeTool: a rule whose trigger is tool:NAME or tool_loop, where
	// `tool` is the call being handled.
	scopeTool viewScope = 1 << iota
	// scopeReply: guardrails.tripwires and guardrails.regenerate, where
	// `reply` is the line being checked.
	scopeReply
)

// views is the one list of the structured views expressions read: the
// name an author writes, the Go type behind it, and, for a view that
// exists only while something is handled, where that is. The checker's
// environment, the load-time scope check and the words errors use for a
// view are all built from it.
var views = [...]struct {
	name  string
	typ   reflect.Type
	scope viewScope // 0: everywhere
	where string    // where a scoped view exists, for its error
}{
	{"candidate", reflect.TypeFor[CandidateView](), 0, ""},
	{"msg", reflect.TypeFor[MessageView](), 0, ""},
	{"session", reflect.TypeFor[SessionView](), 0, ""},
	{"floor", reflect.TypeFor[FloorView](), 0, ""},
	{"sequence", reflect.TypeFor[SequenceView](), 0, ""},
	{"reply", reflect.TypeFor[ReplyView](), scopeReply, "in guardrails.tripwires and guardrails.regenerate, where a generated line is checked"},
	{"tool", reflect.TypeFor[ToolView](), scopeTool, "in a rule whose trigger is tool:NAME or tool_loop"},
}

func viewNames() []string {
	out := make([]string, len(views))
	for i, v := range views {
		out[i] = v.name
	}
	return out
}

// viewWords rewrites the Go type names in an expression error into the
// names authors write, and names the fields a mistyped one may have
// meant: "type rules.ToolView has no field nme" becomes "tool has no
// field nme (did you mean name?)".
func viewWords(msg string) string {
	for _, v := range views {
		for _, goName := range []string{"type *" + v.typ.String(), "type " + v.typ.String()} {
			i := strings.Index(msg, goName)
			if i < 0 {
				continue
			}
			msg = msg[:i] + v.name + msg[i+len(goName):]
			const noField = " has no field "
			if rest, ok := strings.CutPrefix(msg[i+len(v.name):], noField); ok {
				field, _, _ := strings.Cut(rest, " ")
				msg += DidYouMean(field, exprFields(v.typ))
			}
		}
	}
	return msg
}

// exprFields lists the names expressions use for t's fields.
func exprFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("expr"), ","); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// outOfScope returns the first view tree reads that does not exist where
// the expression is, with the offset of its use.
func outOfScope(tree *ast.Node, in viewScope) (name, where string, at int, found bool) {
	v := &scopeVisitor{in: in}
	ast.Walk(tree, v)
	if v.view < 0 {
		return "", "", 0, false
	}
	return views[v.view].name, views[v.view].where, v.at, true
}

type scopeVisitor struct {
	in   viewScope
	view int
	at   int
	seen bool
}

func (v *scopeVisitor) Visit(node *ast.Node) {
	if !v.seen {
		v.view, v.seen = -1, true
	}
	// expr refuses a let that takes a view's name, so an identifier
	// that names one is the view.
	n, ok := (*node).(*ast.IdentifierNode)
	if !ok || v.view >= 0 {
		return
	}
	for i, w := range views {
		if w.name == n.Value && w.scope != 0 && w.scope&v.in == 0 {
			v.view, v.at = i, n.Location().From
			return
		}
	}
}

// scopeOf is the scoped views a rule's expressions have: its trigger's.
func (r *Rule) scopeOf() viewScope {
	for _, t := range engineTriggers {
		if t.kind == r.On.Kind {
			return t.scope
		}
	}
	return 0
}

// scopeTag reads a field's `scope:"..."` tag: the views its expressions
// have besides those around it.
func scopeTag(f reflect.StructField) viewScope {
	var in viewScope
	for _, name := range strings.Split(f.Tag.Get("scope"), ",") {
		for _, v := range views {
			if v.name == name {
				in |= v.scope
			}
		}
	}
	return in
}
