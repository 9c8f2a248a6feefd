// route fails in a different way for each trigger text.
function route(ctx) {
  const t = ctx.msg.text;
  if (t === "loop") { while (true) {} }
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
