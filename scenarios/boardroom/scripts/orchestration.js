// The moderator's orchestration (templates/moderator/orchestration.md):
// who gets the floor, from the buffer or behind a stalling phrase, and
// how an exchange is closed and recorded. Everything it reads comes from
// the session (vars, context files, the clock); everything it does is a
// pack action the engine checks, so it cannot write a file its class
// forbids. The rules that call it write the moderator's session-state.md
// after it, from the variables it sets.
//
// Stages: presenting -> asking (a question is being written; the
// moderator covers) -> questioning (the question is queued) -> answering
// (it has been said) -> presenting. A slide change, or an exchange that
// runs past EXCHANGE_LIMIT, ends whatever is open.

const MEMBERS = ["skeptic", "analyst", "contrarian"];
const MEMBER_NAMES = { skeptic: "Marcus", analyst: "Priya", contrarian: "James" };
// The slides each member's lens is drawn to, besides its focus brief's.
const LENS = { skeptic: [5, 6], analyst: [2, 3], contrarian: [1, 4] };
const SLIDE = /slide (\d+)/i;
const FOCUS_SLIDE = /Slide I care most about: (\d+)/;
const BUFFER = /^<!-- slide (\d+) -->\n([\s\S]*)$/;

function opening(arg) {
  return [
    { say: { role: "moderator", kind: "opening", line: phrase(arg, "opening", 0) } },
  ];
}

// A new slide is the one questions are about from now on. An exchange
// whose question is still to be said stays open (the question is about
// its own slide); one being answered, or a question still being written,
// ends: the presenter moved on. The same slide again changes nothing.
function slideChanged(arg) {
  const v = arg.vars;
  const m = SLIDE.exec(arg.msg.text);
  if (!m) return [{ emit: { text: "slide_changed without a slide number: " + arg.msg.text, level: "warning" } }];
  const slide = Number(m[1]);
  if (slide === v.slide || v.stage === "closing") return [{ set: { var: "slide", value: slide } }];
  const out = [{ set: { var: "slide", value: slide } }];
  if (v.stage === "questioning") return out;
  if (v.stage === "asking" || v.stage === "answering") {
    const who = v.asker || v.waiting_for;
    out.push(note(arg, MEMBER_NAMES[who] + "'s exchange was left open when the presenter moved on."));
    out.push.apply(out, reset());
  }
  return out;
}

// The presenter has finished a slide: the member whose slide it is gets
// the floor, at once from a warm buffer, or after a stalling phrase while
// its question is written.
function giveFloor(arg) {
  const v = arg.vars;
  const m = nextMember(arg);
  if (!m) return [{ set: { var: "asked_slide", value: v.slide } }];
  const q = buffered(arg, m);
  if (q) return ask(arg, m, q, "transition");
  return [
    { set: { var: "asked_slide", value: v.slide } },
    { set: { var: "stage", value: "asking" } },
    { set: { var: "waiting_for", value: m } },
    { set: { var: "stalls", value: 1 } },
    { set: { var: "retries", value: 0 } },
    { set: { var: "asking_at", value: arg.now_ms } },
    { set: { var: "stalled_at", value: arg.now_ms } },
  ].concat(moderatorSays(arg, "stall", phrase(arg, "stalling", v.exchanges, m)), [
    { job: { id: "question", args: { member: m, slide: v.slide }, overlap: "rerun" } },
  ]);
}

// moderatorSays queues a phrase and keeps it in the moderator's
// generated-phrases.md, the record of what the chair said to cover.
function moderatorSays(arg, kind, line) {
  return [
    { say: { role: "moderator", kind: kind, line: line } },
    { append: { file: "generated-phrases.md", role: "moderator", text: "- [" + clock(arg.now_ms) + "] " + kind + ": " + line } },
  ];
}

// The question the moderator was covering for has been written (the
// rule on job:question checked it is for this slide): the moderator
// names the member, who asks it.
function questionReady(arg) {
  const m = arg.args.member;
  const q = buffered(arg, m);
  if (!q) return [];
  return ask(arg, m, q, "transition");
}

// A question could not be written: ask again, at most MAX_RETRIES times.
// The moderator's stalling phrases are paced by the pacing rule, not by
// how fast calls fail.
function questionFailed(arg) {
  const v = arg.vars;
  const m = arg.args.member;
  if (v.stage !== "asking" || v.waiting_for !== m || v.retries >= arg.constants.MAX_RETRIES) return [];
  return [
    { set: { var: "retries", value: v.retries + 1 } },
    { job: { id: "question", args: { member: m, slide: v.slide }, overlap: "rerun" } },
  ];
}

// pace is the pacing rule's: covering for a question, or closing an
// exchange that ran too long.
function pace(arg) {
  return arg.vars.stage === "asking" ? stillWaiting(arg) : exchangeTooLong(arg);
}

// Still no question: another phrase, or after MAX_STALLS of them or
// ASK_LIMIT, move on rather than leave the presenter waiting.
function stillWaiting(arg) {
  const v = arg.vars;
  const m = v.waiting_for;
  if (v.stalls < arg.constants.MAX_STALLS && arg.now_ms - v.asking_at < arg.constants.ASK_LIMIT) {
    return [
      { set: { var: "stalls", value: v.stalls + 1 } },
      { set: { var: "stalled_at", value: arg.now_ms } },
    ].concat(moderatorSays(arg, "stall", phrase(arg, "stalling", v.exchanges + v.stalls, m)));
  }
  return moveOn(arg, MEMBER_NAMES[m] + " had no question ready; we moved on.");
}

// An exchange that has run too long is closed by the moderator.
function exchangeTooLong(arg) {
  return moveOn(arg, MEMBER_NAMES[arg.vars.asker] + "'s exchange ran past its time; the moderator closed it.");
}

function moveOn(arg, text) {
  return reset().concat(moderatorSays(arg, "transition", phrase(arg, "move_on", arg.vars.exchanges)), [
    note(arg, text),
  ]);
}

// note adds a line about the current exchange to the debrief notes.
function note(arg, text) {
  return { append: { file: "debrief-notes.md", role: "moderator", text: "- [" + clock(arg.now_ms) + "] slide " + arg.vars.asked_slide + ": " + text } };
}

// The asker spoke: its first line is its question (answers count from
// then), its next, once the presenter has answered, its follow-up.
function askerSpoke(arg) {
  const v = arg.vars;
  if (v.stage === "questioning") {
    return [
      { set: { var: "stage", value: "answering" } },
      { set: { var: "answers", value: 0 } },
      { set: { var: "first_answer", value: "" } },
      { set: { var: "followed_up", value: false } },
      { set: { var: "exchange_at", value: arg.now_ms } },
    ];
  }
  if (v.answers > 0 && !v.followed_up) return [{ set: { var: "followed_up", value: true } }];
  return [];
}

// The presenter answered. What comes before the member's follow-up is the
// first answer (however many segments speech-to-text cut it into; the
// first gets the follow-up, by routing); what comes after it closes the
// exchange.
function answered(arg) {
  const v = arg.vars;
  if (!v.followed_up) {
    const first = v.first_answer === "" ? arg.msg.text : v.first_answer + " " + arg.msg.text;
    return [
      { set: { var: "answers", value: v.answers + 1 } },
      { set: { var: "first_answer", value: clip(first, 600) } },
    ];
  }
  const m = v.asker;
  const who = MEMBER_NAMES[m];
  const first = clip(v.first_answer, 240);
  const last = clip(arg.msg.text, 240);
  const at = clock(arg.now_ms);
  return reset().concat([
    { append: { file: "exchange-history.md", text: "- [" + at + "] slide " + v.asked_slide + ", " + who + " (" + m + "): " + v.question + " / presenter: " + first + " / after the follow-up: " + last } },
    { append: { file: "exchange-notes.md", role: m, text: "- slide " + v.asked_slide + ": heard: " + first + " / then: " + last } },
    note(arg, who + " (" + m + ") was answered in " + (words(v.first_answer) + words(arg.msg.text)) + " words"),
    { job: { id: "observe", args: { member: m, slide: v.asked_slide } } },
  ], moderatorSays(arg, "transition", phrase(arg, "thanks", v.exchanges, m)), [
  ]);
}

// ask gives m the floor and queues its buffered question: no model call
// on the live turn. The buffer is emptied (asked is asked) and refilled.
function ask(arg, m, q, kind) {
  const v = arg.vars;
  const out = [];
  if (kind === "transition") {
    out.push.apply(out, moderatorSays(arg, "transition", phrase(arg, "transition", v.exchanges, m)));
  }
  out.push(
    { floor: m },
    { say: { role: m, kind: "question", line: q } },
    { append: { file: "exchange-notes.md", role: m, text: "- slide " + v.slide + ": asked \"" + q + "\"" } },
    { write: { file: "candidate-question.md", role: m, text: "" } },
    { job: { id: "question", args: { member: m, slide: v.slide }, overlap: "rerun" } },
    { set: { var: "stage", value: "questioning" } },
    { set: { var: "asker", value: m } },
    { set: { var: "waiting_for", value: "" } },
    { set: { var: "answers", value: 0 } },
    { set: { var: "question", value: q } },
    { set: { var: "asked_slide", value: v.slide } },
    { set: { var: "exchanges", value: v.exchanges + 1 } },
    { set: { var: "asked_" + m, value: v["asked_" + m] + 1 } },
  );
  return out;
}

// reset leaves no exchange open.
function reset() {
  return [
    { set: { var: "stage", value: "presenting" } },
    { set: { var: "asker", value: "" } },
    { set: { var: "waiting_for", value: "" } },
    { set: { var: "answers", value: 0 } },
    { set: { var: "followed_up", value: false } },
  ];
}

// nextMember: a member drawn to this slide (its lens or its focus brief)
// under the turn limit, fewest exchanges first, then board order; none
// if no member's focus matches (the presenter continues).
function nextMember(arg) {
  const v = arg.vars;
  const limit = arg.constants.MAX_EXCHANGES;
  let best = null;
  let bestScore = null;
  MEMBERS.forEach(function (m, i) {
    const asked = v["asked_" + m];
    const drawn = LENS[m].indexOf(v.slide) >= 0 || focusSlide(arg, m) === v.slide;
    if (asked >= limit || !drawn) return;
    const score = [asked, i];
    if (bestScore === null || less(score, bestScore)) {
      best = m;
      bestScore = score;
    }
  });
  return best;
}

function less(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

function focusSlide(arg, m) {
  const f = arg.files[m + "/focus-brief.md"];
  const s = f && FOCUS_SLIDE.exec(f.text);
  return s ? Number(s[1]) : 0;
}

// buffered is m's ready question: written for the current slide and
// younger than BUFFER_MAX_AGE, else null.
function buffered(arg, m) {
  const f = arg.files[m + "/candidate-question.md"];
  if (!f || f.text === "" || f.updated_ms < 0) return null;
  if (arg.now_ms - f.updated_ms > arg.constants.BUFFER_MAX_AGE) return null;
  const s = BUFFER.exec(f.text);
  if (!s || Number(s[1]) !== arg.vars.slide) return null;
  const q = s[2].trim();
  // A question the member has asked already (the slide came round
  // again) is not asked twice.
  const notes = arg.files[m + "/exchange-notes.md"];
  if (q === "" || notes && notes.text.indexOf("asked \"" + q + "\"") >= 0) return null;
  return q;
}

// phrase is the n-th phrase of a section of the phrase library, in
// rotation, with {member} filled in.
function phrase(arg, section, n, member) {
  const list = phrases(arg.files["moderator/phrase-library.md"].text, section);
  if (list.length === 0) return "Let us continue.";
  return list[n % list.length].split("{member}").join(member ? MEMBER_NAMES[member] : "");
}

// phrases lists one section's phrases. Only that section is split: the
// library is read on every handover.
function phrases(text, section) {
  const head = "## " + section + "\n";
  let from = text.indexOf(head);
  if (from < 0) return [];
  from += head.length;
  let to = text.indexOf("\n## ", from);
  if (to < 0) to = text.length;
  const out = [];
  const lines = text.slice(from, to).split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].indexOf("- ") === 0) out.push(lines[i].slice(2).trim());
  }
  return out;
}

// closing is the last state: no more questions. An exchange still open
// is noted as such.
function closing(arg) {
  const v = arg.vars;
  const out = [];
  if (v.stage === "asking" || v.stage === "questioning" || v.stage === "answering") {
    out.push(note(arg, MEMBER_NAMES[v.asker || v.waiting_for] + "'s exchange was still open at the close."));
  }
  return out.concat(reset(), [{ set: { var: "stage", value: "closing" } }]);
}

function clock(ms) {
  const s = Math.floor(ms / 1000);
  const mm = Math.floor(s / 60);
  const ss = s % 60;
  return (mm < 10 ? "0" : "") + mm + ":" + (ss < 10 ? "0" : "") + ss;
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 3) + "..." : s;
}

function words(s) {
  return s.split(/\s+/).filter(function (w) { return w !== ""; }).length;
}
