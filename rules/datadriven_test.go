package rules_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cockroachdb/datadriven"

	"github.com/batonhq/baton/rules"
)

// TestLoadTranscripts plays testdata/load/*.txt: each `file NAME` directive
// holds one file of a pack (pack.yaml, an include, a script), `load`
// loads the files given so far and prints every error as file:line:col,
// or a summary and the pack's warnings; `rules-on TRIGGER` and `role ID` print what the loaded
// pack holds. Rewrite with -rewrite.
func TestLoadTranscripts(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "load"), func(t *testing.T, path string) {
		fsys := fstest.MapFS{}
		var p *rules.Pack
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "file":
				var name string
				d.ScanArgs(t, "name", &name)
				fsys[name] = &fstest.MapFile{Data: []byte(d.Input)}
				return "ok"
			case "reset":
				fsys, p = fstest.MapFS{}, nil
				return "ok"
			case "load":
				var err error
				p, err = rules.LoadFS(fsys)
				if err != nil {
					var el rules.ErrorList
					if !errors.As(err, &el) {
						t.Fatalf("not an ErrorList: %v", err)
					}
					return err.Error()
				}
				out := fmt.Sprintf("ok: %d roles, %d anchors, %d windows, %d routes, %d rules",
					len(p.Roles), len(p.Timeline.Anchors), len(p.Timeline.Windows), len(p.Routing), len(p.Rules))
				for _, w := range p.Warnings {
					out += "\nwarning: " + w.Error()
				}
				return out
			case "rules-on":
				if p == nil {
					t.Fatal("rules-on before a pack loaded")
				}
				tr, err := rules.ParseTrigger(d.CmdArgs[0].Key)
				if err != nil {
					return "error: " + err.Error()
				}
				var ids []string
				for _, r := range p.RulesOn(tr) {
					ids = append(ids, r.ID)
				}
				if len(ids) == 0 {
					return "none"
				}
				return strings.Join(ids, " ")
			case "role":
				if p == nil {
					t.Fatal("role before a pack loaded")
				}
				r, ok := p.Role(d.CmdArgs[0].Key)
				if !ok {
					return "no such role"
				}
				var b strings.Builder
				fmt.Fprintf(&b, "persona: %s\nvoice: %s\nfocus: %s\n", r.Persona, r.Voice, strings.Join(r.Focus, ","))
				for _, e := range r.Fallback {
					fmt.Fprintf(&b, "fallback %s: %s\n", e.ID, strings.Join(e.Text, " | "))
				}
				return b.String()
			}
			t.Fatalf("unknown directive %q", d.Cmd)
			return ""
		})
	})
}
