package rules

import (
	"testing"

	"github.com/expr-lang/expr"
)

// keys() and values() come in key order, every time: a session's effects
// may not follow Go's map order.
func TestKeysAndValuesAreOrdered(t *testing.T) {
	m := map[string]any{"m": map[string]any{"delta": 4, "alpha": 1, "charlie": 3, "bravo": 2, "echo": 5}}
	for _, tt := range []struct{ src, want string }{
		{`join(keys(m), ",")`, "alpha,bravo,charlie,delta,echo"},
		{`join(map(values(m), string(#)), ",")`, "1,2,3,4,5"},
	} {
		prog, err := expr.Compile(tt.src, append(exprFunctions(), expr.Env(m))...)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			out, err := expr.Run(prog, m)
			if err != nil || out != tt.want {
				t.Fatalf("%s = %v, %v; want %s", tt.src, out, err, tt.want)
			}
		}
	}
}
