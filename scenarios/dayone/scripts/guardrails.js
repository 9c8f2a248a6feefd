// DayOne's guardrail rewrite (seed §10.4, example §11). Called with the
// violating line; returns the line to send instead.
//
// 1. A goal with authored pointed questions uses them: the tech lead's
//    "What is priority? What is rollback? What monitoring do you add?"
//    becomes "Pick one now: hotfix first or VIP feature first, and why?".
//    Returning null leaves the choice to the engine, which picks among
//    the role's lines without repeating one.
// 2. Several questions otherwise: keep the one most on-role (most focus
//    words; the first on a tie) and the statement just before it.
// 3. Too long: keep the first max sentences.
// 4. Off-role: the role's default pointed questions (null again).

const MAX_SENTENCES = 3;

function rewrite(ctx) {
  const info = ctx.role_info;
  if (info.rewrite[ctx.turn.goal]) {
    return null;
  }
  // Values handed in from the engine are read once: each property read on
  // them crosses from JavaScript to Go.
  const sentences = baton.splitSentences(ctx.text);
  const violations = ctx.violations;
  const focus = info.focus;
  if (violations.indexOf("max_questions") >= 0) {
    let best = -1;
    let bestHits = 0;
    for (let i = 0; i < sentences.length; i++) {
      if (!sentences[i].endsWith("?")) continue;
      const h = focusHits(sentences[i], focus);
      if (best < 0 || h > bestHits) {
        best = i;
        bestHits = h;
      }
    }
    if (best >= 0 && bestHits > 0) {
      const lead = best > 0 && !sentences[best - 1].endsWith("?") ? sentences[best - 1] + " " : "";
      return lead + sentences[best];
    }
    return null;
  }
  if (violations.indexOf("role_fidelity") >= 0) {
    return null;
  }
  return sentences.slice(0, MAX_SENTENCES).join(" ");
}

// focusHits counts the role's focus words in text, matching exactly as the
// role-fidelity guardrail does ("word*" is a prefix, "roll back" a phrase).
function focusHits(text, focus) {
  return baton.keywordHits(text, focus);
}
