// The model for dry runs and pack tests: plays the Brain's jobs and the
// jurors' turns deterministically from what each request contains.

const ORDER = ["marcus", "priya", "james"];

const CONFIG = {
  marcus: {
    persona: "Calm, precise, unimpressed by hand-waving about security.",
    context_section: "Tokens are held by the current processor; a token export needs both providers and a PCI-scoped window.",
    question: "Your tokens sit with the old processor: how exactly do they reach the new one without card data touching your systems?",
    voice: "Fenrir",
  },
  priya: {
    persona: "Friendly but relentless about numbers.",
    context_section: "The saving ignores a parallel run and the revenue lost in a failed night.",
    question: "If the cut-over night fails, how much revenue do you lose per hour, and why is there no budget for a parallel run?",
    voice: "Aoede",
  },
  james: {
    persona: "Contrarian; looks for the contradiction in every plan.",
    context_section: "Six weeks of preparation ends in a single irreversible night.",
    question: "You have six weeks but cut over in one night with no way back: why not move traffic gradually?",
    voice: "Charon",
  },
};

function model(req) {
  if (req.job === "analyze") {
    return { text: "Facts: one-night cut-over, tokens held by the old processor, refunds in a nightly batch. Weak points: token migration, no parallel-run budget, no rollback." };
  }
  if (req.job === "configure") {
    const m = /Target: (\w+)/.exec(req.prompt);
    return { json: CONFIG[m ? m[1] : "marcus"] };
  }
  if (req.job === "supervise") {
    const from = /Situation: (\w+) handed/.exec(req.prompt);
    const grade = 55 + ((req.call * 13) % 40);
    return {
      json: {
        grade: grade,
        critique: grade >= 65 ? "Answered the question directly." : "Dodged the specifics.",
        memory_update: "The candidate said: " + shorten(lastCandidate(req), 60),
        next_question: "You said it is covered; show me the step that proves it.",
        topic_covered: grade >= 70,
      },
    };
  }
  if (req.job === "deliberate") {
    const m = /Grades: (\[[\s\S]*?\])\s*Memories:/.exec(req.prompt);
    const grades = m ? JSON.parse(m[1]) : [];
    let sum = 0;
    for (let i = 0; i < grades.length; i++) sum += grades[i].grade;
    const score = grades.length ? Math.round(sum / grades.length) : 0;
    return {
      json: {
        verdict: score >= 65 ? "pass" : "fail",
        score: score,
        reasons: grades.map((g) => g.juror + ": " + g.critique),
      },
    };
  }
  return juror(req);
}

function juror(req) {
  if (req.goal === "ask_loaded_question") {
    const m = /Your question[^:]*: (.*)/.exec(req.system);
    const q = m ? m[1] : "What is the weakest part of your plan?";
    const final = req.system.indexOf("FINAL juror") >= 0;
    return { text: (final ? "I have the last question. " : "") + q };
  }
  // A reply to the candidate: hand over, or end the panel.
  if (req.tools.indexOf("endPanel") >= 0) {
    return { text: "Thank you. That concludes the panel.", tool_calls: [{ name: "endPanel", args: {} }] };
  }
  if (req.tools.indexOf("transfer") < 0) {
    return { text: "Thank you. Go on." };
  }
  let colleague = next(req.role);
  const steps = req.tool_steps;
  if (steps.length > 0 && steps[steps.length - 1].is_error) {
    const choices = steps[steps.length - 1].result.choices;
    const avail = choices && choices.colleague ? choices.colleague : [];
    colleague = avail.length ? avail[0] : colleague;
    return { tool_calls: [transfer(colleague, req)] };
  }
  return { text: "Thank you, that answers it.", tool_calls: [transfer(colleague, req)] };
}

function transfer(colleague, req) {
  return {
    name: "transfer",
    args: { colleague: colleague, reason: "question answered", summary: shorten(req.candidate_last_message, 80) },
  };
}

function next(role) {
  const i = ORDER.indexOf(role);
  return ORDER[(i + 1) % ORDER.length];
}

function lastCandidate(req) {
  const t = req.transcript;
  for (let i = t.length - 1; i >= 0; i--) if (t[i].speaker === "candidate") return t[i].text;
  return "";
}

function shorten(s, n) {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}
