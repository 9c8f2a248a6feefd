// Package script runs a pack's JavaScript (goja) in a sandbox built for
// determinism and safety:
//
//   - Scripts are compiled once, when the pack loads. Top-level code may
//     declare functions and constants only; `var` and `let` are refused,
//     because session state belongs in pack variables, where it is
//     recorded and replayed.
//   - After loading, the global object, every builtin and every constant
//     are deep-frozen, so no call can leave anything behind for the next
//     (a constant Map, Set or Date refuses to change, as freezing does not
//     reach their contents).
//     That makes a runtime reusable by any call of any session, and
//     runtimes are pooled: building one costs a few milliseconds, most of
//     it the freeze (BenchmarkBuildVM), a call on a warm one microseconds.
//     The runtime that ran the top-level code when the pack loaded serves
//     the first call, so a process that loads a pack and runs a session
//     builds one.
//   - There is no require, eval, Function constructor, timers, I/O or
//     wall clock. Date reads the session clock (Date.now() is engine ms);
//     Math.random reads the session's seeded generator.
//   - Each call has a time budget enforced with Interrupt, a bounded call
//     stack, capped input strings and a capped result. Builtins that run in
//     Go and cannot be interrupted (repeat, padStart, padEnd, join, fill,
//     Array(n)) refuse results over a limit. A call whose wall time reaches
//     its budget is stopped, whatever it returned (Pool.Run).
//   - No result depends on how fast the machine is. The host chooses the
//     budget: a live session's (the pack's scripting.budget, its outcome
//     recorded) or, for anything offline or replayed, ReplayBudget, which
//     only a runaway reaches. A backtracking regular expression is bounded
//     by RegexpBound alone, which is longer than any budget, so a match
//     that gives up has always outlived its call's budget and the call is
//     stopped: a script never sees a "no match" that a faster machine
//     would have found.
package script

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"github.com/batonhq/baton/rules/text"
)

// Limits of the sandbox.
const (
	// DefaultBudget is a call's time budget when the pack sets none.
	DefaultBudget = 20 * time.Millisecond
	// MaxBudget is the longest budget a pack may set.
	MaxBudget = time.Second
	// MaxStack bounds JavaScript call depth.
	MaxStack = 256
	// MaxInputString truncates strings handed to a script.
	MaxInputString = 16 << 10
	// MaxResultBytes bounds the size of what a script returns.
	MaxResultBytes = 64 << 10
	// MaxBuiltinResult bounds strings and arrays built by uninterruptible
	// builtins.
	MaxBuiltinResult = 1 << 20
	// ReplayBudget bounds a call of an offline or replayed session
	// (Call.Replay): long enough that only a runaway script reaches it on
	// any machine, so the same inputs give the same result everywhere.
	// It is far above MaxBudget: a call that finished live finishes again.
	ReplayBudget = 30 * time.Second
	// RegexpBound bounds one backtracking regular-expression match: a
	// runaway bound, not a budget (see init).
	RegexpBound = ReplayBudget + 5*time.Second
)

// A call that reached ReplayBudget or RegexpBound reached every budget.
const _ = uint64(ReplayBudget-MaxBudget) + uint64(RegexpBound-ReplayBudget)

func init() {
	// goja falls back to regexp2 for patterns RE2 cannot run (lookaround,
	// backreferences). Those backtrack inside Go code that Interrupt cannot
	// reach, so only regexp2's own timeout stops one, and goja turns that
	// timeout into "no match", which the script cannot tell from a real
	// one. So the timeout must never decide a result: it is longer than
	// every call's budget, and a call that ran that long has run past its
	// budget and is stopped (Run), whatever the match returned.
	//
	// It exceeds ReplayBudget by a margin because regexp2 measures it on a
	// clock a background goroutine updates every 100ms, which can lag on
	// a loaded machine: a match may give up somewhat before RegexpBound
	// has passed, but not before ReplayBudget has.
	//
	// It is process-wide because that is all regexp2 offers: goja compiles
	// a pattern (a literal when the script compiles) with the default and
	// shares it between runtimes and goroutines, with no way to set a
	// pattern's or a call's timeout. regexp2 reads it when a pattern is
	// compiled, so it is set before any script is.
	regexp2.DefaultMatchTimeout = RegexpBound
}

// File is one compiled script file.
type File struct {
	Name   string
	prog   *goja.Program
	consts []string
	funcs  []string
}

// Error is a problem in a script file at a position (Line 0 when goja
// gave none).
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Compile parses and checks one file. All problems are returned.
func Compile(name, src string) (*File, []Error) {
	// goja.Parse would flatten the parser's errors into one string
	// placed nowhere; the parser itself keeps their positions.
	prg, err := parser.ParseFile(nil, name, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, []Error{syntaxError(name, err)}
	}
	f := &File{Name: name}
	var errs []Error
	pos := func(n ast.Node) (int, int) {
		p := prg.File.Position(int(n.Idx0()) - 1)
		return p.Line, p.Column
	}
	for _, st := range prg.Body {
		switch s := st.(type) {
		case *ast.FunctionDeclaration:
			f.funcs = append(f.funcs, s.Function.Name.Name.String())
		case *ast.LexicalDeclaration:
			if s.Token.String() != "const" {
				l, c := pos(s)
				errs = append(errs, Error{name, l, c, "top-level let is not allowed: keep session state in pack vars"})
				continue
			}
			for _, b := range s.List {
				if id, ok := b.Target.(*ast.Identifier); ok {
					f.consts = append(f.consts, id.Name.String())
				}
			}
		case *ast.VariableStatement:
			l, c := pos(s)
			errs = append(errs, Error{name, l, c, "top-level var is not allowed: keep session state in pack vars"})
		case *ast.EmptyStatement, *ast.ExpressionStatement, *ast.ClassDeclaration:
		default:
			l, c := pos(st)
			errs = append(errs, Error{name, l, c, "only functions, classes and constants may be declared at the top level"})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p, err := goja.CompileAST(prg, true)
	if err != nil {
		return nil, []Error{syntaxError(name, err)}
	}
	f.prog = p
	return f, nil
}

// syntaxError places a parse or compile error at its position. The
// parser does not recover from an error: what it reports after the first
// follows from the first (most often "unexpected end of input" at the end
// of the file), so only the first is kept.
func syntaxError(name string, err error) Error {
	var el parser.ErrorList
	var ce *goja.CompilerSyntaxError
	switch {
	case errors.As(err, &el) && len(el) > 0:
		return Error{File: name, Line: el[0].Position.Line, Col: el[0].Position.Column, Msg: "syntax error: " + sentence(el[0].Message)}
	case errors.As(err, &ce) && ce.File != nil:
		p := ce.File.Position(ce.Offset)
		return Error{File: name, Line: p.Line, Col: p.Column, Msg: "syntax error: " + sentence(ce.Message)}
	}
	return Error{File: name, Msg: "syntax error: " + err.Error()}
}

// sentence turns goja's "Unexpected token =" into "unexpected token =",
// to read on after "syntax error:" as the project's other messages do.
// A leading acronym ("ES6") keeps its case.
func sentence(msg string) string {
	if msg == "Unexpected token ILLEGAL" {
		// The scanner's name for a character that starts no token.
		return "invalid or unexpected token"
	}
	if msg == "" || msg[0] < 'A' || msg[0] > 'Z' {
		return msg
	}
	if len(msg) > 1 && ('A' <= msg[1] && msg[1] <= 'Z' || '0' <= msg[1] && msg[1] <= '9') {
		return msg
	}
	return string(msg[0]+'a'-'A') + msg[1:]
}

// Funcs lists the functions a file declares at the top level.
func (f *File) Funcs() []string { return f.funcs }

// Pool holds warm sandboxed runtimes with a pack's scripts loaded. It is
// safe for concurrent use; each runtime serves one call at a time, and
// grows to the peak number of concurrent calls. Unlike a sync.Pool it is
// not emptied by garbage collection: a frozen runtime costs milliseconds
// to build, so it is kept.
type Pool struct {
	files []*File
	funcs map[string]bool
	mu    sync.Mutex
	idle  []*vm
	// checked is the runtime that ran the top-level code when the pack
	// loaded, not yet frozen: the first call freezes and uses it rather
	// than build a second, so a process that loads a pack and runs one
	// session builds one runtime, and one that never calls a script
	// freezes none.
	checked *vm
	// now reads the wall clock a call's time is measured on (a test
	// moves it).
	now func() time.Time
}

// MaxIdle bounds how many warm runtimes a pool keeps.
const MaxIdle = 64

// NewPool checks that the files' top-level code runs, within LoadBudget.
// A file whose top-level code fails is reported as an Error, at the
// position goja gives (Line 0 when it gives none).
func NewPool(files []*File) (*Pool, error) {
	p := &Pool{files: files, funcs: map[string]bool{}, now: time.Now}
	for _, f := range files {
		for _, fn := range f.funcs {
			p.funcs[fn] = true
		}
	}
	v, err := p.check()
	if err != nil {
		return nil, err
	}
	p.checked = v
	return p, nil
}

// Warm builds runtimes until n are idle, so the first calls (or the call
// after a runaway script was stopped) do not pay for building one.
func (p *Pool) Warm(n int) error {
	for {
		p.mu.Lock()
		have := len(p.idle)
		p.mu.Unlock()
		if have >= min(n, MaxIdle) {
			return nil
		}
		v, err := p.fresh()
		if err != nil {
			return err
		}
		p.put(v)
	}
}

func (p *Pool) get() (*vm, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		v := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return v, nil
	}
	p.mu.Unlock()
	return p.fresh()
}

// fresh is a frozen runtime no call has used: the load check's, the first
// time, then a new one.
func (p *Pool) fresh() (*vm, error) {
	p.mu.Lock()
	v := p.checked
	p.checked = nil
	p.mu.Unlock()
	if v == nil {
		var err error
		if v, err = newVM(); err != nil {
			return nil, err
		}
		if err := p.load(v); err != nil {
			return nil, err
		}
	}
	if err := v.freeze(); err != nil {
		return nil, err
	}
	return v, nil
}

func (p *Pool) put(v *vm) {
	p.mu.Lock()
	if len(p.idle) < MaxIdle {
		p.idle = append(p.idle, v)
	}
	p.mu.Unlock()
}

// Has reports whether a function of that name is declared.
func (p *Pool) Has(fn string) bool { return p.funcs[fn] }

type vm struct {
	rt    *goja.Runtime
	fns   map[string]goja.Callable
	now   int64
	rand  Source
	args  [1]goja.Value
	spent bool
	// budget interrupts the call running over its budget; a runtime it
	// has fired for is spent.
	budget *time.Timer
	// user is what freezing walks deeply: the pack's constants and
	// functions.
	user []goja.Value
	// tools is what the sandbox took for freezeJS before any pack code
	// ran, in Go's hands only.
	tools []goja.Value
}

// freezeTools is how many values sandboxJS returns for freezeJS.
const freezeTools = 10

// sandboxJS runs before the pack's scripts: it removes what a pack must
// not reach, caps the builtins that run uninterruptibly in Go, and
// returns what freezeJS will need once the pack is loaded.
//
// A pack's top-level code runs after this and before the freeze, while
// every builtin can still be changed: so what the caps and the freezer
// rely on (String, Reflect.apply, Object.freeze, Set.prototype.has, the
// intrinsic prototypes...) is taken here, before a pack could replace it.
const sandboxJS = `(function (g, MAX) {
  "use strict";
  const { freeze, isFrozen, getOwnPropertyDescriptor: describe, getPrototypeOf: protoOf, hasOwn, defineProperty } = Object;
  const { apply, ownKeys } = Reflect;
  const toTag = Object.prototype.toString, Str = String, Num = Number, SafeSet = Set, A = Array;
  // Methods bound to their receiver, so a call looks nothing up.
  const bindTo = Function.prototype.call.bind(Function.prototype.bind);
  const setHas = Set.prototype.has, setAdd = Set.prototype.add;
  const intrinsics = [
    protoOf(protoOf([][Symbol.iterator]())), protoOf([][Symbol.iterator]()), protoOf(new Map()[Symbol.iterator]()),
    protoOf(new Set()[Symbol.iterator]()), protoOf(""[Symbol.iterator]()), protoOf(function* () {}), protoOf(function* () {}).prototype,
    protoOf(async function () {}), protoOf(/x/[Symbol.matchAll](""))];

  for (const k of ["eval", "WeakRef", "FinalizationRegistry"]) { delete g[k]; }
  const cap = (n, what) => { if (!(n <= MAX)) throw new RangeError(what + ": result over " + MAX + " (sandbox limit)"); };
  const wrap = (proto, name, check) => {
    const orig = proto[name];
    defineProperty(proto, name, { value: function (...a) { check(this, a); return apply(orig, this, a); }, writable: false, configurable: false });
  };
  wrap(String.prototype, "repeat", (s, a) => cap(Str(s).length * Num(a[0]), "repeat"));
  wrap(String.prototype, "padStart", (s, a) => cap(Num(a[0]), "padStart"));
  wrap(String.prototype, "padEnd", (s, a) => cap(Num(a[0]), "padEnd"));
  wrap(Array.prototype, "join", (s) => cap(s.length, "join"));
  wrap(Array.prototype, "fill", (s) => cap(s.length, "fill"));
  // Freezing a Map, Set or Date leaves its contents changeable; a
  // constant one would carry data from one call (and session) to the
  // next. Their mutators refuse a frozen receiver: constants are frozen
  // after loading, what a call builds is not.
  const constant = (s) => { if (isFrozen(s)) throw new TypeError("a constant " + apply(toTag, s, []).slice(8, -1) + " cannot change (build it inside the function)"); };
  for (const [C, names] of [[Map, ["set", "delete", "clear"]], [Set, ["add", "delete", "clear"]],
      [WeakMap, ["set", "delete"]], [WeakSet, ["add", "delete"]],
      [Date, Object.getOwnPropertyNames(Date.prototype).filter((n) => n.startsWith("set"))]]) {
    for (const n of names) wrap(C.prototype, n, constant);
  }
  const SafeArray = function Array(...a) { if (a.length === 1 && typeof a[0] === "number") cap(a[0], "Array"); return new A(...a); };
  SafeArray.prototype = A.prototype;
  Object.setPrototypeOf(SafeArray, A);
  defineProperty(g, "Array", { value: SafeArray, writable: false, configurable: false });
  // The Function constructor compiles text at run time, like eval.
  defineProperty(Function.prototype, "constructor", { value: undefined, writable: false, configurable: false });

  // What the freezer uses, as it is before any pack code runs.
  return [g, freeze, describe, hasOwn, ownKeys, SafeSet, setHas, setAdd, bindTo, intrinsics];
})(globalThis, %d);`

// freezeJS freezes what a call could change for the next one: the global
// object, every builtin constructor, prototype and namespace object and
// the functions hanging off them, the intrinsic iterator prototypes, and
// (deeply) the pack's own functions and constants, leaving nothing
// writable that a script can name. It is handed what sandboxJS took
// before the pack's code ran and names nothing else, so no pack can
// change what it does. Loops count rather than iterate, as an iterator
// allocates a result per step.
const freezeJS = `(function (g, freeze, describe, hasOwn, ownKeys, SafeSet, setHas, setAdd, bindTo, intrinsics, extra) {
  "use strict";
  const seen = new SafeSet();
  const has = bindTo(setHas, seen), add = bindTo(setAdd, seen);
  const isObject = (o) => o !== null && (typeof o === "object" || typeof o === "function");
  const shallow = (o) => {
    if (!isObject(o) || has(o)) return false;
    add(o);
    freeze(o);
    return true;
  };
  const withMethods = (o) => {
    if (!shallow(o)) return;
    const keys = ownKeys(o);
    for (let i = 0; i < keys.length; i++) {
      const d = describe(o, keys[i]);
      if (!d) continue;
      if (hasOwn(d, "value")) {
        if (typeof d.value === "function") shallow(d.value);
      } else {
        shallow(d.get);
        shallow(d.set);
      }
    }
  };
  const deep = (o) => {
    if (!isObject(o) || has(o)) return;
    add(o);
    const keys = ownKeys(o);
    for (let i = 0; i < keys.length; i++) {
      const d = describe(o, keys[i]);
      if (d && hasOwn(d, "value")) deep(d.value);
    }
    freeze(o);
  };
  // User code first, deeply (a function's prototype object included).
  for (let i = 0; i < extra.length; i++) deep(extra[i]);
  for (let i = 0; i < intrinsics.length; i++) withMethods(intrinsics[i]);
  const globals = ownKeys(g);
  for (let i = 0; i < globals.length; i++) {
    const d = describe(g, globals[i]);
    if (!d || !hasOwn(d, "value") || !isObject(d.value)) continue;
    const v = d.value;
    withMethods(v);
    if (typeof v === "function" && hasOwn(v, "prototype")) withMethods(v.prototype);
  }
  freeze(g);
})`

// The sandbox and the freezer are compiled once per process, on first
// use: a process that never runs a script does not parse them, one that
// never calls one does not parse the freezer, and each runtime after the
// first runs them without parsing again. A Program is not tied to a
// runtime.
var (
	sandboxProg = sync.OnceValues(func() (*goja.Program, error) {
		return goja.Compile("", fmt.Sprintf(sandboxJS, MaxBuiltinResult), false)
	})
	freezeProg = sync.OnceValues(func() (*goja.Program, error) {
		return goja.Compile("", freezeJS, false)
	})
)

// newVM is a sandboxed runtime with none of the pack's files loaded.
func newVM() (*vm, error) {
	prog, err := sandboxProg()
	if err != nil {
		return nil, fmt.Errorf("script sandbox: %w", err)
	}
	v := &vm{rt: goja.New(), fns: map[string]goja.Callable{}}
	rt := v.rt
	rt.SetMaxCallStackSize(MaxStack)
	rt.SetRandSource(func() float64 {
		if v.rand == nil {
			return 0
		}
		return v.rand.Float64()
	})
	rt.SetTimeSource(func() time.Time { return time.UnixMilli(v.now) })
	tools, err := rt.RunProgram(prog)
	if err != nil {
		return nil, fmt.Errorf("script sandbox: %w", err)
	}
	list := tools.ToObject(rt)
	if n := list.Get("length").ToInteger(); n != freezeTools {
		return nil, fmt.Errorf("script sandbox: %d values for the freezer, want %d", n, freezeTools)
	}
	v.tools = make([]goja.Value, 0, freezeTools+1)
	for i := range freezeTools {
		v.tools = append(v.tools, list.Get(strconv.Itoa(i)))
	}
	if err := rt.Set("baton", helpers(rt)); err != nil {
		return nil, err
	}
	return v, nil
}

// LoadBudget bounds the top-level code of a pack's scripts when the pack
// loads. Like ReplayBudget, only a runaway reaches it: top-level code
// that takes milliseconds never decides, on a slow or saturated machine,
// whether a pack loads.
const LoadBudget = ReplayBudget

// loadBudget is LoadBudget; tests of the runaway case shorten it.
var loadBudget = LoadBudget

// check runs the files' top-level code once, within LoadBudget, so a file
// that loops at load is refused instead of hanging its pack's load. Only
// here: the same code does the same work whenever a runtime is built for
// a call, and a wall-clock limit there would make a step's outcome depend
// on the machine's load. The runtime it returns has run exactly what a
// new one would, at the same clock and random source, so the first call
// may use it.
func (p *Pool) check() (*vm, error) {
	v, err := newVM()
	if err != nil {
		return nil, err
	}
	timer := time.AfterFunc(loadBudget, func() { v.rt.Interrupt("load budget") })
	err = p.load(v)
	if !timer.Stop() && err == nil {
		// It fired as the load ended: over budget all the same, and the
		// interrupt is still pending in the runtime, which is dropped.
		// No one file is to blame.
		err = fmt.Errorf("top-level code ran longer than %s; move the work into a function", loadBudget)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// load runs the files' top-level code in v and collects their functions.
func (p *Pool) load(v *vm) error {
	rt := v.rt
	var funcs []goja.Value
	for _, f := range p.files {
		if _, err := rt.RunProgram(f.prog); err != nil {
			return loadError(f.Name, err)
		}
		for _, c := range f.consts {
			// A top-level const is a binding of the global scope, not a
			// property of the global object; Get reads both.
			if val := rt.Get(c); val != nil {
				v.user = append(v.user, val)
			}
		}
		for _, fn := range f.funcs {
			val := rt.Get(fn)
			c, ok := goja.AssertFunction(val)
			if !ok {
				return Error{File: f.Name, Msg: "loading: " + fn + " is not a function"}
			}
			v.fns[fn] = c
			funcs = append(funcs, val)
		}
	}
	v.user = append(v.user, funcs...)
	return nil
}

// freeze runs freezeJS over the builtins and, deeply, the pack's
// constants and functions, after which a call can leave nothing behind
// for the next.
func (v *vm) freeze() error {
	prog, err := freezeProg()
	if err != nil {
		return fmt.Errorf("script sandbox: %w", err)
	}
	fzv, err := v.rt.RunProgram(prog)
	if err != nil {
		return fmt.Errorf("script sandbox: %w", err)
	}
	fz, _ := goja.AssertFunction(fzv)
	user := make([]any, len(v.user))
	for i, u := range v.user {
		user[i] = u
	}
	if _, err := fz(goja.Undefined(), append(v.tools, v.rt.NewArray(user...))...); err != nil {
		return fmt.Errorf("script sandbox: freezing: %w", err)
	}
	v.user, v.tools = nil, nil
	return nil
}

// loadError places what stopped a file's top-level code where goja says
// it happened: in that file, or in a function of another file it called.
func loadError(name string, err error) error {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	var st []goja.StackFrame
	var what string
	switch {
	case errors.As(err, &ie):
		st, what = ie.Stack(), fmt.Sprintf("ran longer than %s; move the work into a function", loadBudget)
	case errors.As(err, &so):
		st, what = so.Stack(), fmt.Sprintf("exceeded the call stack (%d frames)", MaxStack)
	case errors.As(err, &ex):
		st, what = ex.Stack(), "threw "+thrown(ex)
	default:
		return Error{File: name, Msg: "loading: " + err.Error()}
	}
	e := Error{File: name, Msg: "loading: top-level code " + what}
	if file, line, col := stackAt(st); file != "" {
		if file != name {
			e.Msg = "loading " + name + ": top-level code " + what
		}
		e.File, e.Line, e.Col = file, line, col
	}
	return e
}

// helpers is the `baton` object: the text counters the guardrails use, so
// a script and the engine agree on what a sentence is.
func helpers(rt *goja.Runtime) *goja.Object {
	o := rt.NewObject()
	str := func(call goja.FunctionCall, i int) string {
		s := call.Argument(i).String()
		if len(s) > MaxInputString {
			s = s[:MaxInputString]
		}
		return s
	}
	_ = o.Set("questions", func(c goja.FunctionCall) goja.Value { return rt.ToValue(text.CountQuestions(str(c, 0))) })
	_ = o.Set("sentences", func(c goja.FunctionCall) goja.Value { return rt.ToValue(text.CountSentences(str(c, 0))) })
	_ = o.Set("splitSentences", func(c goja.FunctionCall) goja.Value {
		// A native array: a wrapped Go slice pays reflection on every index.
		parts := text.SplitSentences(str(c, 0))
		vals := make([]any, len(parts))
		for i, p := range parts {
			vals[i] = p
		}
		return rt.NewArray(vals...)
	})
	_ = o.Set("words", func(c goja.FunctionCall) goja.Value { return rt.ToValue(text.CountWords(str(c, 0))) })
	_ = o.Set("hasWord", func(c goja.FunctionCall) goja.Value { return rt.ToValue(text.ContainsWord(str(c, 0), str(c, 1))) })
	// keywordHits(text, list) counts the distinct keywords of list in text,
	// with the role-fidelity guardrail's matching rules.
	_ = o.Set("keywordHits", func(c goja.FunctionCall) goja.Value {
		return rt.ToValue(text.CountKeywordHits(str(c, 0), keywordList(rt, "keywordHits", c.Argument(1))))
	})
	// keywords(list) compiles list once, for a script that searches for
	// the same words on every call: const HINTS = baton.keywords([...]);
	// then HINTS.hits(text), as keywordHits(text, list) but without
	// reading and compiling the list each time.
	_ = o.Set("keywords", func(c goja.FunctionCall) goja.Value {
		kw := text.CompileKeywords(keywordList(rt, "keywords", c.Argument(0)))
		m := rt.NewObject()
		_ = m.Set("hits", func(c goja.FunctionCall) goja.Value { return rt.ToValue(kw.Hits(str(c, 0))) })
		return m
	})
	return o
}

// keywordList reads a list of keywords a script passed: strings only, at
// most text.MaxKeywords, or a TypeError naming the helper (a list cut
// short would silently miss words).
func keywordList(rt *goja.Runtime, helper string, v goja.Value) []string {
	// Export hands back the Go slice behind a list the engine passed in,
	// without copying; ExportTo would iterate it through JS.
	items, ok := v.Export().([]any)
	if !ok {
		panic(rt.NewTypeError(helper + ": want a list of strings"))
	}
	if len(items) > text.MaxKeywords {
		panic(rt.NewTypeError(fmt.Sprintf("%s: %d keywords; the limit is %d", helper, len(items), text.MaxKeywords)))
	}
	list := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			panic(rt.NewTypeError(fmt.Sprintf("%s: keyword %d is not a string", helper, i+1)))
		}
		list[i] = s
	}
	return list
}

// Source gives a script's Math.random its numbers. An interface, where
// a func value made every call allocate the closure that counted draws.
type Source interface{ Float64() float64 }

// Call is one invocation.
type Call struct {
	Func string
	// Arg is the one argument the function receives, as plain data
	// (maps, slices, strings, numbers, booleans) or an Object whose
	// fields are read when the script reads them.
	Arg   any
	NowMS int64
	// Rand is Math.random's source (a *rand.Rand will do); nil returns 0.
	Rand Source
	// Budget is the call's time limit on the wall clock, for a live
	// session; 0 is DefaultBudget.
	Budget time.Duration
	// Replay runs the call under ReplayBudget instead of Budget: a call
	// of an offline session (a dry run, a pack test, a sweep), or of a
	// replay that knows the call finished when it first ran. A slower
	// machine then never stops it; the bound only keeps a runaway, or a
	// replay of a changed script, from running forever.
	Replay bool
}

// RunError is a script that threw, ran out of time or stack, or returned
// something unusable.
type RunError struct {
	Kind string // throw | timeout | stack | panic | result
	Pos  string // file:line:col where known
	Msg  string
	// Took is how long a call that ran out of time ran (Kind timeout).
	Took time.Duration
}

func (e *RunError) Error() string {
	if e.Pos != "" {
		return e.Pos + ": " + e.Kind + ": " + e.Msg
	}
	return e.Kind + ": " + e.Msg
}

// Run calls a function on a pooled runtime and returns its result as Go
// data (string, int64, float64, bool, nil, []any, map[string]any).
//
// A call whose wall time reached its budget is stopped at its budget: a
// timeout, whether Interrupt landed or the call returned, threw or
// panicked first. One rule, so a call is never accepted for having
// returned just before the interrupt landed, and a regular expression
// that gave up (RegexpBound) is a stopped call, never a quiet "no match".
func (p *Pool) Run(c Call) (out any, err error) {
	if !p.funcs[c.Func] {
		return nil, &RunError{Kind: "result", Msg: "no function " + c.Func}
	}
	v, err := p.get()
	if err != nil {
		return nil, &RunError{Kind: "panic", Msg: err.Error()}
	}
	v.now, v.rand = c.NowMS, c.Rand
	defer func() {
		v.now, v.rand = 0, nil
		if !v.spent {
			p.put(v)
		}
	}()
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	if c.Replay {
		budget = ReplayBudget
	}
	arg := c.Arg
	if arg == nil {
		arg = map[string]any{}
	}
	start := p.now()
	// One timer per runtime, armed for each call: a new one each time
	// was a third of what a short call allocated.
	if v.budget == nil {
		v.budget = time.AfterFunc(budget, func() { v.rt.Interrupt("time budget") })
	} else {
		v.budget.Reset(budget)
	}
	out, err = v.call(c.Func, arg)
	took := p.now().Sub(start)
	fired := !v.budget.Stop()
	if fired {
		// The interrupt is sticky: had the call returned before it
		// landed, it would hit the next caller. Drop the runtime.
		v.spent = true
	}
	interrupted, at := false, ""
	if err != nil {
		// Only here: ie escapes, and a call that returned cleanly
		// should not pay for it.
		var ie *goja.InterruptedError
		if interrupted = errors.As(err, &ie); interrupted {
			at = stackPos(ie.Stack())
		}
	}
	if interrupted || fired || took >= budget {
		return nil, &RunError{Kind: "timeout", Pos: at, Msg: fmt.Sprintf("%s: stopped after its %s budget", c.Func, budget), Took: took}
	}
	if err != nil {
		return nil, err
	}
	if n := size(out, 0); n > MaxResultBytes {
		return nil, &RunError{Kind: "result", Msg: fmt.Sprintf("%s returned about %d bytes; the limit is %d", c.Func, n, MaxResultBytes)}
	}
	return out, nil
}

// call runs fn with its argument and returns its result as plain data. A
// panic is returned as a RunError, and the runtime, which a panicking
// host function may leave inconsistent, is dropped.
func (v *vm) call(fn string, arg any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v.spent = true
			out, err = nil, &RunError{Kind: "panic", Msg: fmt.Sprint(r)}
		}
	}()
	// The one argument goes in the runtime's own slot: a variadic
	// argument made for each call escapes to the heap.
	v.args[0] = toJS(v.rt, arg)
	res, err := v.fns[fn](goja.Undefined(), v.args[:]...)
	v.args[0] = nil
	if err != nil {
		var ie *goja.InterruptedError
		if errors.As(err, &ie) {
			// Interrupted mid-call: drop the runtime rather than trust it.
			v.spent = true
			return nil, err
		}
		return nil, describe(err)
	}
	return plain(res.Export()), nil
}

func describe(err error) *RunError {
	var ex *goja.Exception
	var so *goja.StackOverflowError
	switch {
	case errors.As(err, &so):
		return &RunError{Kind: "stack", Pos: stackPos(so.Stack()), Msg: "call stack exceeded " + fmt.Sprint(MaxStack) + " frames"}
	case errors.As(err, &ex):
		return &RunError{Kind: "throw", Pos: stackPos(ex.Stack()), Msg: thrown(ex)}
	}
	return &RunError{Kind: "throw", Msg: err.Error()}
}

// thrown is what a script threw: "TypeError: bad type" for an error
// object, the value itself otherwise.
func thrown(ex *goja.Exception) string {
	msg := ex.Value().String()
	if o, ok := ex.Value().(*goja.Object); ok {
		if m := o.Get("message"); m != nil && !goja.IsUndefined(m) {
			msg = o.Get("name").String() + ": " + m.String()
		}
	}
	return msg
}

func stackPos(st []goja.StackFrame) string {
	if file, line, col := stackAt(st); file != "" {
		return fmt.Sprintf("%s:%d:%d", file, line, col)
	}
	return ""
}

// stackAt is the innermost frame in a pack file: the sandbox's own
// frames have no file name.
func stackAt(st []goja.StackFrame) (file string, line, col int) {
	for _, f := range st {
		p := f.Position()
		if p.Filename != "" && p.Line > 0 {
			return p.Filename, p.Line, p.Column
		}
	}
	return "", 0, 0
}

// capInput returns arg with long strings truncated, so builtins that run
// in Go stay cheap however long the candidate's message was. It copies only
// when something is over the cap.
// toJS hands the script its argument. A Go map given to goja as it is
// shows its keys in Go's random map order, which a script iterating them
// would turn into a different run each time; so objects are dynamic
// objects listing their keys sorted, converting each value on first use
// (most scripts read a few fields of a large argument). Strings are
// truncated to MaxInputString, so builtins that grow their input stay
// bounded.
func toJS(rt *goja.Runtime, v any) goja.Value {
	switch x := v.(type) {
	case string:
		if len(x) > MaxInputString {
			x = x[:MaxInputString]
		}
		return rt.ToValue(x)
	case map[string]any:
		return rt.NewDynamicObject(&jsObject{rt: rt, m: x})
	case Object:
		return rt.NewDynamicObject(&jsObject{rt: rt, src: x})
	case []any:
		if flat(x) {
			// goja's own view of a slice of plain values keeps no order
			// of its own to leak and hands the slice back to helpers
			// without copying.
			return rt.ToValue(x)
		}
		return array(rt, len(x), func(i int) any { return x[i] })
	case []map[string]any:
		return array(rt, len(x), func(i int) any { return x[i] })
	case []string:
		for _, e := range x {
			if len(e) > MaxInputString {
				return array(rt, len(x), func(i int) any { return x[i] })
			}
		}
		return rt.ToValue(x)
	}
	return rt.ToValue(v)
}

// flat reports whether a slice holds only short scalars.
func flat(x []any) bool {
	for _, e := range x {
		switch s := e.(type) {
		case string:
			if len(s) > MaxInputString {
				return false
			}
		case map[string]any, []any, []string, []map[string]any:
			return false
		}
	}
	return true
}

func array(rt *goja.Runtime, n int, at func(int) any) goja.Value {
	vals := make([]any, n)
	for i := range n {
		vals[i] = toJS(rt, at(i))
	}
	return rt.NewArray(vals...)
}

// Object is an argument whose fields are worked out only when a script
// reads them: a host's view of its state is large, built for every call,
// and most scripts read two or three fields of it.
type Object interface {
	// Keys lists the fields, sorted.
	Keys() []string
	// Field returns field k as plain data (or another Object).
	Field(k string) (any, bool)
}

// jsObject is a Go map or an Object seen from a script, keys in sorted
// order.
type jsObject struct {
	rt   *goja.Runtime
	m    map[string]any
	src  Object // until a script changes the object; then m holds its fields
	keys []string
	vals valCache
}

// own turns an Object into the map a script may change.
func (o *jsObject) own() {
	if o.src == nil {
		return
	}
	keys := o.src.Keys()
	o.m = make(map[string]any, len(keys))
	for _, k := range keys {
		if v, read := o.vals.get(k); read {
			// What the script read is what it may have changed.
			o.m[k] = v.Export()
			continue
		}
		o.m[k], _ = o.src.Field(k)
	}
	o.src = nil
}

func (o *jsObject) Get(k string) goja.Value {
	if v, ok := o.vals.get(k); ok {
		return v
	}
	var x any
	var ok bool
	if o.src != nil {
		x, ok = o.src.Field(k)
	} else {
		x, ok = o.m[k]
	}
	if !ok {
		return nil
	}
	v := toJS(o.rt, x)
	o.vals.put(k, v)
	return v
}

func (o *jsObject) Set(k string, v goja.Value) bool {
	o.own()
	if _, ok := o.m[k]; !ok {
		o.keys = nil
	}
	o.m[k] = v.Export()
	o.vals.put(k, v)
	return true
}

func (o *jsObject) Has(k string) bool {
	if o.src != nil {
		_, ok := o.src.Field(k)
		return ok
	}
	_, ok := o.m[k]
	return ok
}

func (o *jsObject) Delete(k string) bool {
	o.own()
	delete(o.m, k)
	o.vals.del(k)
	o.keys = nil
	return true
}

func (o *jsObject) Keys() []string {
	if o.src != nil {
		return o.src.Keys()
	}
	if o.keys == nil {
		o.keys = make([]string, 0, len(o.m))
		for k := range o.m {
			o.keys = append(o.keys, k)
		}
		slices.Sort(o.keys)
	}
	return o.keys
}

// plain turns what a script returned back into plain Go data: an object
// of the argument it hands back is its map again.
func plain(v any) any {
	switch x := v.(type) {
	case Object:
		keys := x.Keys()
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			v, _ := x.Field(k)
			out[k] = plain(v)
		}
		return out
	case *jsObject:
		x.own()
		out := make(map[string]any, len(x.m))
		for k, e := range x.m {
			out[k] = plain(e)
		}
		return out
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	}
	return v
}

// size estimates the encoded size of an exported value, stopping early
// once it is clearly over the limit.
func size(v any, acc int) int {
	if acc > MaxResultBytes {
		return acc
	}
	switch x := v.(type) {
	case string:
		return acc + len(x) + 2
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			acc = size(x[k], acc+len(k)+3)
		}
		return acc + 2
	case []any:
		for _, e := range x {
			acc = size(e, acc+1)
		}
		return acc + 2
	}
	return acc + 8
}
