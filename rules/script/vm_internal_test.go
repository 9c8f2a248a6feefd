package script

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/scenarios"
)

// The runtime that ran the top-level code when the pack loaded is the one
// the first call (or Warm) uses, frozen first: loading a pack and calling
// a script builds one runtime, not two.
func TestCheckedRuntimeServesFirstCall(t *testing.T) {
	f, errs := Compile("t.js", "const T = {n: 1};\nfunction leak() { globalThis.leaked = 1; return 1; }\nfunction bump() { T.n++; return T.n; }")
	if errs != nil {
		t.Fatal(errs)
	}
	cases := []struct {
		name  string
		first func(p *Pool) error
	}{
		{"Run", func(p *Pool) error {
			for _, fn := range []string{"leak", "bump"} {
				if _, err := p.Run(Call{Func: fn}); err == nil || !strings.Contains(err.Error(), "TypeError") {
					return fmt.Errorf("%s on the first runtime: %v, want a TypeError (frozen)", fn, err)
				}
			}
			return nil
		}},
		{"Warm", func(p *Pool) error { return p.Warm(1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewPool([]*File{f})
			if err != nil {
				t.Fatal(err)
			}
			checked := p.checked
			if checked == nil {
				t.Fatal("NewPool kept no runtime")
			}
			if err := c.first(p); err != nil {
				t.Fatal(err)
			}
			if p.checked != nil || len(p.idle) != 1 || p.idle[0] != checked {
				t.Fatalf("the load check's runtime was not the one used: %d idle", len(p.idle))
			}
		})
	}
}

// A call whose wall time reached its budget is stopped, though it returned
// or threw before the interrupt landed: how it ended then depends on when
// the interrupt landed, and a match regexp2 gave up may have changed what
// it returned. Here the clock moves a budget on during each call and the
// timer never fires.
func TestCallPastItsBudgetIsStopped(t *testing.T) {
	f, errs := Compile("t.js", "function quick() { return 1; }\nfunction fail() { throw new Error('no'); }")
	if errs != nil {
		t.Fatal(errs)
	}
	p, err := NewPool([]*File{f})
	if err != nil {
		t.Fatal(err)
	}
	const budget = time.Hour
	reads := 0
	p.now = func() time.Time { reads++; return time.Unix(0, 0).Add(time.Duration(reads) * budget) }
	for _, fn := range []string{"quick", "fail"} {
		got, err := p.Run(Call{Func: fn, Budget: budget})
		var re *RunError
		if !errors.As(err, &re) || re.Kind != "timeout" || re.Took != budget {
			t.Fatalf("%s: %v %v, want a timeout after %s", fn, got, err, budget)
		}
	}
	// No interrupt is pending, so the runtime is kept, and a call inside
	// its budget is answered.
	p.now = time.Now
	if got, err := p.Run(Call{Func: "quick", Budget: budget}); err != nil || got != int64(1) || len(p.idle) != 1 {
		t.Fatalf("quick: %v %v, %d idle", got, err, len(p.idle))
	}
}

// BenchmarkNewVM is a sandboxed runtime with no pack loaded.
func BenchmarkNewVM(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newVM(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildVM is each runtime a pool builds after the first: the
// sandbox, the pack's top-level code and the freeze.
func BenchmarkBuildVM(b *testing.B) {
	for _, pack := range []string{"dayone", "hotseat"} {
		b.Run(pack, func(b *testing.B) {
			p := &Pool{files: compiled(b, pack)}
			b.ReportAllocs()
			for b.Loop() {
				v, err := newVM()
				if err != nil {
					b.Fatal(err)
				}
				if err := p.load(v); err != nil {
					b.Fatal(err)
				}
				if err := v.freeze(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func compiled(t testing.TB, pack string) []*File {
	t.Helper()
	names, _ := fs.Glob(scenarios.FS, pack+"/scripts/*.js")
	var out []*File
	for _, n := range names {
		data, err := fs.ReadFile(scenarios.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		f, errs := Compile(n, string(data))
		if errs != nil {
			t.Fatalf("%s: %v", n, errs)
		}
		out = append(out, f)
	}
	return out
}

// Top-level code that never ends is stopped at the load bound and placed, so
// a pack whose script loops at load cannot hang its load.
func TestTopLevelLoopStopped(t *testing.T) {
	// The real bound is a runaway's, ReplayBudget; the test's loops
	// never end, so a short one shows the same.
	defer func(b time.Duration) { loadBudget = b }(loadBudget)
	loadBudget = 100 * time.Millisecond
	for _, c := range []struct{ src, want string }{
		{"function f() { return 1 }\nconst x = (() => { for (;;) {} })();", "loop.js:2:12: loading: top-level code ran longer than 100ms; move the work into a function"},
		{"class C { static { for (;;) {} } }\nfunction f() { return 1 }", "loop.js:1:11: loading: top-level code ran longer than 100ms; move the work into a function"},
	} {
		f, errs := Compile("loop.js", c.src)
		if len(errs) > 0 {
			t.Fatalf("compile: %v", errs)
		}
		_, err := NewPool([]*File{f})
		if err == nil || err.Error() != c.want {
			t.Fatalf("pool over a looping script:\ngot  %v\nwant %s", err, c.want)
		}
	}
}
