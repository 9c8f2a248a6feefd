package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
)

// A broken script is a load error naming the file and position. The cases
// swap scripts/route.js of the scripted pack; its pack.yaml stays as is.
func TestScriptLoadErrors(t *testing.T) {
	packYAML, err := os.ReadFile(filepath.Join("testdata", "packs", "scripted", rules.PackFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"function route( {":                        "scripts/route.js:1:",
		"let state = 0;\nfunction route(){}":       "scripts/route.js:1:1: top-level let",
		"function route(){}\nfunction rewrite(){}": "script function review is not declared",
		"function route(){}\nnull.x;":              "loading",
	}
	for js, want := range cases {
		_, err := rules.LoadFS(fstest.MapFS{
			rules.PackFile:     {Data: packYAML},
			"scripts/route.js": {Data: []byte(js)},
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", js, want, err)
		}
	}
}
