// A tripwire as a script: a line that shouts (three or more words in
// capitals) is flagged; the chain then corrects it as any violation.
function shouting(ctx) {
  const words = ctx.reply.text.split(/\s+/).filter((w) => /^[A-Z]{2,}[?!.,]*$/.test(w));
  return words.length >= 3;
}
