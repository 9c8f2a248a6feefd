// route names the first word the candidate said twice.
function route(ctx) {
  const m = /\b(\w+)\b.*\b\1\b/.exec(ctx.msg.text);
  return {role: "host", intent_tag: m ? "repeated_" + m[1] : "no_repeat", goal: "g"};
}
