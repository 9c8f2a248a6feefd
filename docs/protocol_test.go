// Package docs holds the reference documentation; its tests keep the
// documents in step with the code they describe.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Every effect type the engine defines has a row in protocol.md's effect
// table. The engine's const block is the one list; this reads it from the
// source rather than keeping a second copy.
func TestProtocolListsEveryEffectType(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../engine/io.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "EffectType" {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					types = append(types, s)
				}
			}
		}
		return true
	})
	if len(types) < 20 {
		t.Fatalf("found only %d effect types in engine/io.go; has the const block moved?", len(types))
	}
	doc, err := os.ReadFile("protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, name := range strings.Split(first, ",") {
			rows[strings.Trim(strings.TrimSpace(name), "`")] = true
		}
	}
	for _, typ := range types {
		if !rows[typ] {
			t.Errorf("docs/protocol.md has no row for effect type %q", typ)
		}
	}
}
