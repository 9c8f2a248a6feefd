package rules

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AssemblyItem is one entry of an assembly list (llm.assembly, or a
// role's assembly): a built-in part of the prompt (persona, role, goal,
// context, constraints) or a context file by name.
type AssemblyItem struct {
	Pos
	Name string
}

func (a *AssemblyItem) decodeNode(d *decoder, n *yaml.Node) {
	a.Pos = d.pos(n)
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		d.errorf(n, "expected a prompt part (%s) or a context file's name", strings.Join(partWords(), ", "))
		return
	}
	a.Name = n.Value
}

// promptPartWords are the parts of a turn's system prompt the engine
// fills, as llm.assembly names them.
var promptPartWords = []string{"persona", "role", "goal", "context", "constraints"}

// builtinPart says whether name is a part the engine fills: one of the
// prompt's, or a sequence's context (empty outside a sequence's calls).
func builtinPart(name string) bool {
	return slices.Contains(promptPartWords, name) || slices.Contains(SequenceParts, name)
}

// partWords lists the built-in parts, for messages.
func partWords() []string { return slices.Concat(promptPartWords, SequenceParts) }

// Assembly is the order in which one role's model calls lay out their
// system prompt, as compiled for that role.
type Assembly struct {
	// Words is the order as a request carries it (nil: the default).
	Words []string
	// Slots is, per word, the context file copy it names (FileSlots), or
	// -1 for a built-in part.
	Slots []int
	// HasFiles says whether any word names a context file.
	HasFiles bool
}

// RoleAssembly is role i's compiled assembly.
func (p *Pack) RoleAssembly(i int) *Assembly {
	if i < 0 || i >= len(p.assemblies) {
		return &Assembly{}
	}
	return &p.assemblies[i]
}

// checkAssemblies compiles each role's assembly: its own list, or
// llm.assembly. A context file must exist, and a per-role file must have
// a copy for every role whose list names it.
func (c *compiler) checkAssemblies() {
	p := c.p
	p.assemblies = make([]Assembly, len(p.Roles))
	// Every name in llm.assembly must mean something, whichever roles use it.
	for _, item := range p.LLM.Assembly {
		if builtinPart(item.Name) {
			continue
		}
		if _, ok := p.fileByID[item.Name]; !ok {
			c.unknownPart(item, "llm.assembly")
		}
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		list, where := p.LLM.Assembly, "llm.assembly"
		if len(r.Assembly) > 0 {
			list, where = r.Assembly, "role "+r.ID+" assembly"
		}
		if len(list) == 0 {
			continue
		}
		a := &p.assemblies[i]
		for _, item := range list {
			if slices.Contains(a.Words, item.Name) {
				c.errorf(item.Pos, "%s: %s is listed twice", where, item.Name)
				continue
			}
			if builtinPart(item.Name) {
				a.Words, a.Slots = append(a.Words, item.Name), append(a.Slots, -1)
				continue
			}
			fi, declared := p.fileByID[item.Name]
			if !declared {
				if len(r.Assembly) > 0 { // llm.assembly's are reported once, above
					c.unknownPart(item, where)
				}
				continue
			}
			slot, ok := p.FileSlot(item.Name, r.ID)
			if !ok {
				c.errorf(item.Pos, "%s: role %s has no copy of %s (it is kept for %s); give %s its own assembly: list", where, r.ID, item.Name, strings.Join(p.Files[fi].Roles, ", "), r.ID)
				continue
			}
			a.Words, a.Slots, a.HasFiles = append(a.Words, item.Name), append(a.Slots, slot), true
		}
	}
}

func (c *compiler) unknownPart(item AssemblyItem, where string) {
	c.missingf(item.Pos, "files", "%s: %q is neither a prompt part (%s) nor a context file%s", where, item.Name,
		strings.Join(partWords(), ", "), c.suggest(item.Name, append(partWords(), c.p.fileNames()...)))
}
