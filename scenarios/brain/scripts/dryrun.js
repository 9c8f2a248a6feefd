// The three models as a dry run plays them: answers that depend on the
// prompt and the round, so `baton dryrun brain` shows gating (both
// ways), the call-everyone fallback, a slow agent timing out, and the
// unanimous stop. Real models get the same requests (-llm live).

const NFI = "[NO_FURTHER_INPUT]";

function flags(claude, gemini, tag) {
  return "\n---\nCALL_CLAUDE=" + claude + "\nCALL_GEMINI=" + gemini + "\nREASON_TAG=" + tag + "\n---";
}

function model(req) {
  var seq = req.sequence;
  if (!seq) {
    return null;
  }
  var p = req.prompt;
  var round = seq.round;
  var quick = p.indexOf("2+2") >= 0;
  var hangs = p.indexOf("hangs") >= 0;
  if (round > 1) {
    // Everyone has said their piece by the second round; GPT keeps its
    // routing as it was.
    return {text: req.role === "gpt" ? NFI + flags(!quick, !quick, quick ? "trivial" : "done") : NFI};
  }
  if (req.role === "gpt") {
    if (quick) {
      return {text: "I am GPT. It is 4; nobody else needs to weigh in." + flags(false, false, "trivial")};
    }
    if (hangs) {
      // Forgets its flag block: everyone is called.
      return {text: "I am GPT. Give each agent its own deadline and let the sequence go on without it."};
    }
    return {text: "I am GPT. Keep it out of state: it is routing metadata, and logging it server-side gives you the debugging without the coupling." + flags(true, true, "design_review")};
  }
  if (req.role === "claude") {
    return {delay_ms: 3000, text: "I am Claude. Agreed, and log it with the run id so a trace ties routing to the exchange it decided."};
  }
  if (hangs) {
    return {delay_ms: 35000, text: "I am Gemini. (too late to matter)"};
  }
  return {text: "I am Gemini. Put the log line in the edge function, not the client: one place, one retention policy."};
}
