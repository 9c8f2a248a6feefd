package rules_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/pack.schema.json")

const schemaFile = "../docs/pack.schema.json"

// The committed schema is what the model types generate.
func TestJSONSchemaUpToDate(t *testing.T) {
	got, err := rules.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *updateSchema {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test ./rules -run JSONSchema -update-schema (or baton schema > %s)", schemaFile, schemaFile)
	}
}

// Every file of every bundled pack validates against the schema, and a
// file with a misspelt field does not: the schema is neither too loose nor
// too strict for real packs.
func TestJSONSchemaAcceptsBundledPacks(t *testing.T) {
	c := jsonschema.NewCompiler()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("pack.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("pack.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../scenarios/*/*.yaml")
	// The engine's test packs use every feature, some no bundled pack does.
	more, _ := filepath.Glob("../engine/testdata/packs/*/*.yaml")
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(yamlToJSON(t, data)); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		bad := strings.Replace(string(data), "\nroles:", "\nrolez:", 1)
		bad = strings.Replace(bad, "\nname:", "\nnmae:", 1)
		if bad != string(data) {
			if err := sch.Validate(yamlToJSON(t, []byte(bad))); err == nil {
				t.Errorf("%s with a misspelt section validated", file)
			}
		}
	}
}

func yamlToJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
