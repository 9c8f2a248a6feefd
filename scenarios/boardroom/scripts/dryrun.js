// The model for dry runs and pack tests: plays the board from what each
// request carries (its prompt, its goal and its context files), so what a
// member knows shows in what it says.


const FOCUS = {
  skeptic: {
    claims: ["76% gross margin with sensors included", "$95k CAC with a 9-month payback", "140% NRR from three paying customers"],
    angle: "Do the unit economics survive hardware costs and a 16-month sales cycle?",
    slide: 5,
    first_question: "Your margin includes the sensors: what does a pump cost you in its first year?",
  },
  analyst: {
    claims: ["94% prediction accuracy", "38 failures prevented", "$6.8M avoided costs"],
    angle: "What was measured, against which baseline, and on how many pumps?",
    slide: 3,
    first_question: "How do you count a failure that did not happen?",
  },
  contrarian: {
    claims: ["no dedicated competitor", "federal funding makes now the moment", "$2.9B serviceable market"],
    angle: "What if the incumbents and the budget cycle both work against you?",
    slide: 4,
    first_question: "Why would a utility buy from you rather than take the monitoring its pump maker now bundles?",
  },
};

// Questions by member and slide: a refresh on the same slide writes the
// same question.
const QUESTIONS = {
  skeptic: {
    1: "A failure costs $180,000 on average: whose numbers are those, and what is the median?",
    2: "Two hours per pump with no shutdown: who pays for the installer's time?",
    3: "Is your $1.4M of ARR all subscriptions, or are pilot fees in it?",
    4: "How much of the $11B is spent by utilities that can sign a contract this year?",
    5: "With sensors in the price, how do you reach a 76% gross margin in the first year?",
    6: "Twenty-four months of runway to $5M ARR: what is the monthly burn behind that?",
  },
  analyst: {
    1: "How many of those 140 stations have pumps old enough to matter?",
    2: "What are the precision and recall behind the 94%, and on how many failures?",
    3: "How do you count a failure prevented, when the pump never failed?",
    4: "Where does the 2,400-utility figure come from, and how was it filtered?",
    5: "What does a cohort of customers look like after two years, on pumps rather than contracts?",
    6: "What would you need to measure to prove the Series A milestones are on track?",
  },
  contrarian: {
    1: "If calendar maintenance were that costly, why do utilities still choose it?",
    2: "What happens to your model when the pump maker ships the same sensors for free?",
    3: "Three of seven pilots pay: what do the four that did not convert know that we do not?",
    4: "Harborline raised $40M for the same buyers: why is there no dedicated competitor?",
    5: "What if the sixteen-month procurement cycle doubles your acquisition cost?",
    6: "If the grant programmes slip a year, which part of this plan still works?",
  },
};

// Follow-ups by member and slide, to the presenter's first answer.
const FOLLOW_UPS = {
  skeptic: {
    5: "Then what is the margin in year one, as a number?",
    6: "And if the sales cycle is sixteen months, not nine, how long does the money last?",
  },
  analyst: {
    2: "And how many of those two hundred were real failures rather than near misses?",
    3: "Who confirms the damage, and are they independent of you?",
  },
  contrarian: {
    1: "Suppose they never change: who else pays for a failure?",
    4: "What stops Harborline from doing exactly that next year?",
  },
};

const ON_SLIDE = /on slide (\d+)/;

function model(req) {
  if (req.job === "dossier") {
    return {
      text:
        "- ARR of $1.4M rests on three paying cities out of seven pilots.\n" +
        "- Margin (76%) and payback (9 months) include sensors; check first-year cost.\n" +
        "- 94% accuracy and 38 failures prevented lack a stated baseline.\n" +
        "- Intel: Harborline raised $40M; procurement takes 16 months; a pump maker bundles monitoring free.",
    };
  }
  if (req.job === "focus") return { json: FOCUS[req.role] };
  if (req.job === "question") {
    const m = ON_SLIDE.exec(req.prompt);
    const slide = m ? Number(m[1]) : 1;
    return { text: QUESTIONS[req.role][slide] || FOCUS[req.role].first_question };
  }
  if (req.job === "observe") {
    const notes = {
      skeptic: "Answered with figures, but the first-year cost stayed vague.",
      analyst: "Cited the pilot data readily; the baseline was an estimate.",
      contrarian: "Stayed composed under challenge and conceded one risk.",
    };
    return { text: notes[req.role] };
  }
  if (req.goal === "closing_debrief") return { text: debrief(req) };
  if (req.role in FOLLOW_UPS) {
    return { text: FOLLOW_UPS[req.role][lastSlide(req)] || "Can you give us the number behind that?" };
  }
  return { text: "Thank you. Let us keep going." };
}

// lastSlide is the slide the presenter is on, from the transcript a
// member's call carries ("-- Slide N: Title --"); 0 if none.
function lastSlide(req) {
  const t = req.files["shared/presenter-transcript.md"] || "";
  const i = t.lastIndexOf("-- Slide ");
  return i < 0 ? 0 : parseInt(t.slice(i + 9), 10);
}

// The debrief is built from the moderator's own notes, so it tells what
// the session held.
function debrief(req) {
  const notes = req.files["moderator/debrief-notes.md"] || "";
  const heard = [];
  let n = 0;
  notes.split("\n").forEach(function (line) {
    const m = / (Marcus|Priya|James) \(/.exec(line);
    if (!m || line.indexOf("was answered") < 0) return;
    n++;
    if (heard.indexOf(m[1]) < 0) heard.push(m[1]);
  });
  return (
    "That brings us to time, and thank you for a clear presentation. " +
    "The board held " + n + (n === 1 ? " exchange" : " exchanges") + ", with questions from " + (heard.join(", ") || "none of the members") + ". " +
    "The strongest answers were on the pilot data; the weakest on first-year unit economics and the sales cycle. " +
    "Before a Series A, show a cohort of paying cities and the cost of a pump in its first year."
  );
}
