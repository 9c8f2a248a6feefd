package scenarios

import (
	"slices"
	"testing"
	"testing/fstest"
)

// Names reads the embedded tree rather than a list of its own.
func TestNamesComeFromTheFS(t *testing.T) {
	fsys := fstest.MapFS{
		"alpha/pack.yaml": {Data: []byte("name: alpha\n")},
		"beta/pack.yaml":  {Data: []byte("name: beta\n")},
		"gamma/pack.yaml": {Data: []byte("name: gamma\n")},
	}
	if got, want := names(fsys), []string{"alpha", "beta", "gamma"}; !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
}
