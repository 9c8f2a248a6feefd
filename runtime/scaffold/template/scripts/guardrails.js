// The pack's guardrail rewrite (pack.yaml: guardrails.rewrite; see
// docs/scripting.md). It is called with a generated line that broke the
// guardrails and returns the line to say instead, or null to let the
// engine pick one of the role's rewrite lines. Whatever it returns is
// checked against the guardrails again.

const MAX_SENTENCES = 3;

function rewrite(ctx) {
  const sentences = baton.splitSentences(ctx.text);
  if (ctx.violations.indexOf("max_questions") >= 0) {
    // Keep the first question, with the statement just before it, so the
    // line still reads as the role meant it.
    for (let i = 0; i < sentences.length; i++) {
      if (sentences[i].endsWith("?")) {
        const lead = i > 0 && !sentences[i - 1].endsWith("?") ? sentences[i - 1] + " " : "";
        return lead + sentences[i];
      }
    }
    return null;
  }
  if (ctx.violations.indexOf("sentences") >= 0 && sentences.length > MAX_SENTENCES) {
    return sentences.slice(0, MAX_SENTENCES).join(" ");
  }
  // Off the role's subject (role_fidelity) or repeated: the role's own
  // rewrite lines say it better than any cut of this line.
  return null;
}
