package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The package doc is the map a newcomer reads before changing the
// engine: it names every file of the package, and every input and effect
// type in its tables. A file or a type added without its line there
// fails here.
func TestDocNamesEverything(t *testing.T) {
	fset := token.NewFileSet()
	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	text := doc.Doc.Text()

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(f) + `\s`).MatchString(text) {
			t.Errorf("doc.go does not name %s in its list of files: add its line there", f)
		}
	}

	src, err := os.ReadFile("io.go")
	if err != nil {
		t.Fatal(err)
	}
	io, err := parser.ParseFile(fset, "io.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(io, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		typ, _ := vs.Type.(*ast.Ident)
		lit, _ := vs.Values[0].(*ast.BasicLit)
		if typ == nil || lit == nil || (typ.Name != "InputType" && typ.Name != "EffectType") {
			return true
		}
		name, _ := strconv.Unquote(lit.Value)
		n++
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s`).MatchString(text) {
			t.Errorf("doc.go does not name the %s %q in its table: add its line there", typ.Name, name)
		}
		return true
	})
	if n < len(inputKinds)+10 {
		t.Fatalf("found %d input and effect types in io.go; the parse above no longer finds them", n)
	}
}
