package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

var versionCommand = &command{
	name: "version", operands: "", min: 0, max: 0,
	summary: "print the versions of baton, its engine and Go",
	about:   "Prints the module version, the source revision it was built from, the engine version (which session logs record) and the Go version.",
	flags: func(*flag.FlagSet) runFunc {
		return func(_ context.Context, c *cli, _ []string) error {
			fmt.Fprintln(c.stdout, versionLine())
			return nil
		}
	},
}

// versionLine reads the build's own record: `go install module@v1.2.3`
// stamps the module version, a build in a checkout the revision.
func versionLine() string {
	mod, rev, goVer := "(devel)", "", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVer = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			mod = v
		}
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && dirty {
			rev += "+modified"
		}
	}
	s := "baton " + mod
	if rev != "" {
		s += " (" + rev + ")"
	}
	return fmt.Sprintf("%s, %s, %s", s, engine.Version, goVer)
}

var schemaCommand = &command{
	name: "schema", operands: "", min: 0, max: 0,
	summary: "print the JSON Schema of the pack format",
	about: `Prints the JSON Schema (draft 2020-12) of pack files, for editors: save it and
point your editor's YAML support at it (e.g. yaml-language-server's
# yaml-language-server: $schema=pack.schema.json). docs/pack.schema.json is
the same file.`,
	flags: func(*flag.FlagSet) runFunc {
		return func(_ context.Context, c *cli, _ []string) error {
			b, err := rules.JSONSchema()
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(append(b, '\n'))
			return err
		}
	},
}
