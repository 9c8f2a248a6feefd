package rules

import (
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"

	"go.yaml.in/yaml/v3"
)

// Limits that bound what loading a pack costs. A pack is read by the
// server when a client names it, so however it is written its load must
// end soon and in little memory; each limit is far above what a real pack
// uses (DayOne: 19 KB of files, nesting 8 deep, 40 expressions, 4 KB of
// scripts).
const (
	// MaxFileSize bounds any one file a pack reads (an attachment, the
	// dry-run candidate).
	MaxFileSize = 4 << 20
	// MaxYAML bounds pack.yaml and its included files together.
	MaxYAML = 4 << 20
	// MaxIncludes bounds how many files pack.yaml includes.
	MaxIncludes = 64
	// MaxDepth bounds how deep YAML mappings and lists nest, aliases
	// followed.
	MaxDepth = 64
	// MaxAliasGrowth bounds how much YAML aliases and merge keys add to a
	// file once expanded, in nodes plus characters of text, so a few
	// lines of nested aliases cannot expand into billions of values.
	MaxAliasGrowth = 256 << 10
	// MaxScript and MaxScripts bound one script file and all of them:
	// compiling JavaScript takes time that grows faster than its length
	// for some shapes (long operator chains, deep nesting).
	MaxScript  = 16 << 10
	MaxScripts = 64 << 10
	// MaxScriptFiles bounds how many scripts/*.js a pack has.
	MaxScriptFiles = 32
	// MaxExprs bounds a pack's expressions (${} parts of templates
	// included); each costs tens of microseconds to compile.
	MaxExprs = 4096
	// MaxExprLen bounds one expression's text and MaxExprText all of
	// them.
	MaxExprLen  = 4 << 10
	MaxExprText = 256 << 10
	// MaxExprNesting bounds how deep brackets nest in one expression: the
	// expression parser recurses on each and takes quadratic time.
	MaxExprNesting = 32
	// maxErrors bounds the problems one load reports, so a large broken
	// file cannot grow the list without end.
	maxErrors = 1000
)

// checkTree makes sure the decoder can walk a parsed YAML file in bounded
// time and memory: no alias inside the node it names (YAML allows it; the
// decoder would loop), no nesting beyond MaxDepth and no more alias
// expansion than MaxAliasGrowth. It reports the first problem and returns
// false; the file is then not decoded at all.
func checkTree(name string, root *yaml.Node, errs *ErrorList) bool {
	t := &treeCheck{file: name, errs: errs, memo: map[*yaml.Node]treeSize{}, open: map[*yaml.Node]bool{}}
	total, ok := t.size(root, 0)
	if !ok {
		return false
	}
	if total.weight-t.own > MaxAliasGrowth {
		a := t.biggest
		errs.add(Pos{File: name, Line: a.Line, Col: a.Column},
			"aliases expand this file by more than %d values and characters (*%s alone adds %d); write the shared part out where it differs, or alias less",
			MaxAliasGrowth, a.Value, t.memo[a.Alias].weight)
		return false
	}
	return true
}

type treeSize struct {
	weight int64 // nodes plus characters of text, aliases expanded
	height int   // nesting of mappings and lists below and including it
}

type treeCheck struct {
	file    string
	errs    *ErrorList
	memo    map[*yaml.Node]treeSize
	open    map[*yaml.Node]bool // on the path from the root: an alias to one is a cycle
	own     int64               // weight of the file as written
	biggest *yaml.Node          // the alias that adds most
}

// cap keeps expanded weights from overflowing: past it the file is
// refused anyway.
const weightCap = 1 << 40

// size measures n at nesting depth; each node is measured once, so the
// check costs the file's size whatever its aliases expand to.
func (t *treeCheck) size(n *yaml.Node, depth int) (treeSize, bool) {
	if n == nil {
		return treeSize{}, true
	}
	pos := Pos{File: t.file, Line: n.Line, Col: n.Column}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return treeSize{}, true
		}
		if t.open[n.Alias] {
			t.errs.add(pos, "alias *%s is inside the node it names, so it never ends; alias a node defined before and outside it", n.Value)
			return treeSize{}, false
		}
		s, seen := t.memo[n.Alias]
		if !seen {
			var ok bool
			if s, ok = t.size(n.Alias, depth); !ok {
				return s, false
			}
		} else if depth+s.height > MaxDepth {
			t.errs.add(pos, "nested more than %d levels deep (aliases followed); flatten it", MaxDepth)
			return s, false
		}
		if t.biggest == nil || s.weight > t.memo[t.biggest.Alias].weight {
			t.biggest = n
		}
		return s, true
	}
	s := treeSize{weight: 1 + int64(len(n.Value))}
	t.own += s.weight
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if depth >= MaxDepth {
			t.errs.add(pos, "nested more than %d levels deep (aliases followed); flatten it", MaxDepth)
			return s, false
		}
		depth++
	}
	t.open[n] = true
	for _, c := range n.Content {
		cs, ok := t.size(c, depth)
		if !ok {
			return s, false
		}
		s.weight = min(s.weight+cs.weight, weightCap)
		s.height = max(s.height, cs.height)
	}
	delete(t.open, n)
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		s.height++
	}
	t.memo[n] = s
	return s, true
}

// exprNesting is how deep brackets nest in src, read with the expression
// language's own lexer so strings and comments count as they parse. A
// source the lexer refuses reports 0: compiling it reports the error.
func exprNesting(src string) int {
	toks, err := lexer.Lex(file.NewSource(src))
	if err != nil {
		return 0
	}
	depth, deepest := 0, 0
	for _, tok := range toks {
		if tok.Kind != lexer.Bracket {
			continue
		}
		switch tok.Value {
		case "(", "[", "{":
			depth++
			deepest = max(deepest, depth)
		default:
			depth--
		}
	}
	return deepest
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}
