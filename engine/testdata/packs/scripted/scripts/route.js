// route fails in a different way for each trigger text.
function route(ctx) {
  const t = ctx.msg.text;
  if (t === "loop") { while (true) {} }
  if (t === "drawloop") { Math.random(); Math.random(); while (true) {} }
  if (t === "slow") { let x = 0; for (let i = 0; i < 3000000; i++) { x += i % 7; } return {role: "host", intent_tag: "slow" + (x > 0), goal: "g"}; }
  if (t === "deep") { return deeper(1); }
  if (t === "throw") { throw "no!"; }
  if (t === "number") { return 42; }
  if (t === "ghost") { return "ghost"; }
  if (t === "pollute") { globalThis.x = 1; return null; }
  if (t.startsWith("host:")) { return {role: "host", intent_tag: "scripted", goal: "g"}; }
  return null;
}
function deeper(n) { return deeper(n + 1) + 1; }
function rewrite(ctx) {
  if (ctx.text.indexOf("NUMBER") >= 0) return 7;
  if (ctx.text.indexOf("STILLBAD") >= 0) return "Still bad? Really?";
  return "Which test do you run first?";
}
function review(ctx) {
  const c = ctx.msg.code;
  if (c === "rand") return [{emit: "r=" + Math.random()}];
  if (c === "order") return [{emit: "first"}, {bogus: 1}, {emit: "third"}];
  if (c === "func") return [{emit: "kept"}, {emit: function () {}}];
  if (c === "run") return [{run: {script: "review"}}];
  if (c === "setbad") return [{set: {var: "score", value: "ten"}}, {set: {var: "score", value: NaN}}, {set: {var: "ghost", value: 1}}];
  if (c === "same") return [{say: {role: "same", line: "Again: which test first?"}}];
  if (c === "kinds") return [
    {tool_result: {ok: true, n: 3}},
    {memory: {role: "host", text: "asked about ${this} {{NAME}}"}},
    {record: {name: "marks", value: {a: 1, b: [2, 3]}}},
    {report: {kind: "score", value: {points: ctx.vars.score}}},
    {slot: {name: "TOPIC", value: "risk"}},
    {floor: "host"},
    {say: {role: "host", line: "From the script: what breaks first?"}},
  ];
  if (c === "deep") { let x = []; for (let i = 0; i < 40; i++) x = [x]; return [{report: {kind: "deep", value: x}}]; }
  return [
    {set: {var: "score", value: ctx.vars.score + 10}},
    {set: {var: "mood", value: "happy"}},
    {emit: "reviewed " + ctx.msg.code.length + " bytes at " + Date.now()},
    {say: {role: "host", kind: "review", line: "Which test covers that change?"}},
  ];
}
function lucky(ctx) {
  if (ctx.msg.text === "undef") return undefined;
  return Math.random() < 2;
}
function shape(ctx) {
  if (ctx.msg.text === "bad shape") return 42;
  return {system: ctx.system + " [" + ctx.turn.kind + "]", turn_goal: "g2", context: {b: 2, a: "one"}};
}
