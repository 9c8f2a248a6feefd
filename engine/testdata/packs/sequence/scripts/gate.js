// Flags as "[B C]" at the start of a reply: listed means called.
function gate(arg) {
  const m = /^\[([A-Z ]*)\]\s*/.exec(arg.text);
  if (!m) {
    return null;
  }
  const on = m[1].split(" ");
  return {text: arg.text.slice(m[0].length), flags: {B: on.indexOf("B") >= 0, C: on.indexOf("C") >= 0}};
}
