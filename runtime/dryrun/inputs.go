package dryrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules"
)

// Inputs written in YAML (a --inputs file, a pack test's inputs:) map
// each input's name to its value: a scalar as the command line writes it
// (rules.Input.ArgJSON), a list or mapping as its JSON. A file input
// takes @path (read relative to the YAML file), a list of them, or the
// file object itself: {name, text} or {name, data} (base64), with an
// optional media_type.

// InputsYAML are inputs read from YAML: the values, and where each was
// written, to report what Bind makes of them there.
type InputsYAML struct {
	Supplied rules.Supplied
	// At is where each input's name is written; Pos, the mapping.
	At  map[string]rules.Pos
	Pos rules.Pos
}

// ReadInputsFile reads a YAML mapping of p's inputs from the file name
// holds data for; read reads an @path the file names (relative to it).
// Every problem is in a rules.ErrorList at name:line:col. The values are
// not bound: Check binds them, or a caller adding values of its own does.
func ReadInputsFile(p *rules.Pack, name string, data []byte, read func(path string) ([]byte, error)) (*InputsYAML, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, rules.ErrorList{{Pos: rules.Pos{File: name}, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return &InputsYAML{Pos: rules.Pos{File: name}}, nil // an empty file supplies nothing
	}
	y, errs := InputsOfNode(p, name, doc.Content[0], read)
	return y, errs.Err()
}

// InputsOfNode reads the mapping n of file name as p's inputs.
func InputsOfNode(p *rules.Pack, name string, n *yaml.Node, read func(path string) ([]byte, error)) (*InputsYAML, rules.ErrorList) {
	var errs rules.ErrorList
	at := func(n *yaml.Node) rules.Pos { return rules.Pos{File: name, Line: n.Line, Col: n.Column} }
	add := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, &rules.Error{Pos: at(n), Msg: fmt.Sprintf(format, args...)})
	}
	y := &InputsYAML{At: map[string]rules.Pos{}, Pos: at(n)}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return y, nil
	}
	if n.Kind != yaml.MappingNode {
		add(n, "inputs: want a mapping of input names to values, such as {DEPTH: 6}")
		return nil, errs
	}
	sup := rules.Supplied{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		decl, ok := p.Input(k.Value)
		if !ok {
			add(k, "input %s: %s", k.Value, unknownInput(p))
			continue
		}
		if _, dup := y.At[k.Value]; dup {
			add(k, "input %s is given twice", k.Value)
			continue
		}
		y.At[k.Value] = at(k)
		raw, err := valueJSON(decl, v, read)
		if err != nil {
			add(v, "input %s: %v", k.Value, err)
			continue
		}
		if raw != nil {
			sup[k.Value] = raw
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(sup) > 0 {
		y.Supplied = sup
	}
	return y, nil
}

// Check binds the inputs to p, and reports each one it refuses where it
// was written (a missing required input at the mapping).
func (y *InputsYAML) Check(p *rules.Pack) rules.ErrorList {
	_, err := p.Bind(y.Supplied, rules.BindOptions{})
	if err == nil {
		return nil
	}
	var refused rules.InputErrors
	if !errors.As(err, &refused) {
		return rules.ErrorList{{Pos: y.Pos, Msg: err.Error()}}
	}
	var errs rules.ErrorList
	for _, e := range refused {
		pos, ok := y.At[e.Input]
		if !ok {
			pos = y.Pos
		}
		errs = append(errs, &rules.Error{Pos: pos, Msg: e.Error()})
	}
	return errs
}

func unknownInput(p *rules.Pack) string {
	if len(p.Inputs) == 0 {
		return "the pack declares no inputs"
	}
	names := make([]string, len(p.Inputs))
	for i := range p.Inputs {
		names[i] = p.Inputs[i].ID
	}
	return "the pack declares no such input (it takes " + strings.Join(names, ", ") + ")"
}

// valueJSON is the value v of input decl as the JSON Bind takes; nil for
// a null, which supplies nothing.
func valueJSON(decl *rules.Input, v *yaml.Node, read func(string) ([]byte, error)) (json.RawMessage, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if decl.Type == rules.InputFile {
		return filesJSON(v, read)
	}
	if v.Kind == yaml.ScalarNode {
		return decl.ArgJSON(v.Value, nil)
	}
	var x any
	if err := v.Decode(&x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

const fileForms = "a file input takes @path, a list of them, or {name, text} or {name, data} (base64)"

// filesJSON reads a file input's value: @path (several comma-separated),
// a list of @paths and file objects, or one file object.
func filesJSON(v *yaml.Node, read func(string) ([]byte, error)) (json.RawMessage, error) {
	var files []any
	one := func(n *yaml.Node) error {
		switch n.Kind {
		case yaml.ScalarNode:
			for _, part := range strings.Split(n.Value, ",") {
				name, ok := strings.CutPrefix(strings.TrimSpace(part), "@")
				if !ok || name == "" || read == nil {
					return errors.New(fileForms)
				}
				data, err := read(name)
				if err != nil {
					return err
				}
				if data == nil {
					data = []byte{} // an empty file is data "", not none
				}
				files = append(files, rules.File{Name: baseName(name), Data: data})
			}
		case yaml.MappingNode:
			var m map[string]any
			if err := n.Decode(&m); err != nil {
				return err
			}
			files = append(files, m)
		default:
			return errors.New(fileForms)
		}
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		for _, item := range v.Content {
			if err := one(item); err != nil {
				return nil, err
			}
		}
	} else if err := one(v); err != nil {
		return nil, err
	}
	return json.Marshal(files)
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
