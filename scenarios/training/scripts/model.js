// The candidate as dry runs and pack tests play it: answers the
// interviewer in words and, when asked to edit, reads the file with
// open_file and changes it with write_file line edits, one round at a
// time, as a model in the tool loop would. The first greet() it writes is
// not exported, so the seed's test plan has a run error to fix.

function lastResult(req, name) {
  var steps = req.tool_steps || [];
  for (var i = steps.length - 1; i >= 0; i--) {
    if (steps[i].name === name) {
      return steps[i];
    }
  }
  return null;
}

// The 1-based line of open_file's numbered content that matches re.
function findLine(content, re) {
  var lines = String(content || "").split("\n");
  for (var i = 0; i < lines.length; i++) {
    var m = lines[i].match(/^L(\d+):(.*)$/);
    if (m && re.test(m[2])) {
      return { line: Number(m[1]), text: m[2] };
    }
  }
  return null;
}

function editTurn(req, plan) {
  var wrote = lastResult(req, "write_file");
  if (wrote && !wrote.is_error) {
    return { text: plan.done };
  }
  var opened = lastResult(req, "open_file");
  if (!opened || opened.is_error) {
    return { text: plan.start, tool_calls: [{ name: "open_file", args: { path: "index.js" } }] };
  }
  var edits = plan.edits(opened.result.content);
  if (!edits) {
    return { text: "I can't find the line I expected; could you point me to it?" };
  }
  return { tool_calls: [{ name: "write_file", args: { path: "index.js", lineEdits: edits } }] };
}

function model(req) {
  var said = String(req.candidate_last_message || "").toLowerCase();
  if (/\badd\b.*greet/.test(said)) {
    return editTurn(req, {
      start: "Sure. I'll open index.js first to see where it fits.",
      done: "Done: greet() returns 'hi', just above the exports. Small and pure, so it's trivial to test.",
      edits: function (content) {
        var exp = findLine(content, /^module\.exports/);
        return exp && [{ op: "insert", line: exp.line, position: "before", text: "function greet() {\n  return \"hi\";\n}\n\n" }];
      },
    });
  }
  if (/\bfix\b/.test(said)) {
    return editTurn(req, {
      start: "Let me look at the file again.",
      done: "Fixed: greet wasn't exported, so the test couldn't see it. It's in module.exports now.",
      edits: function (content) {
        var exp = findLine(content, /^module\.exports = \{ (.*) \};$/);
        if (!exp) {
          return null;
        }
        return [{ op: "replace", line: exp.line, text: exp.text.replace(" };", ", greet };") }];
      },
    });
  }
  if (/building|lately/.test(said)) {
    return { text: "Mostly a Next.js dashboard with server-side pagination and React Query, plus Playwright tests for the checkout flow." };
  }
  if (/accessib/.test(said)) {
    return { text: "I'd render a ul with one li per name and keep the natural focus order. For performance I'd key items by a stable id, and for accessibility give the list a visible heading it's labelled by." };
  }
  if (/that's all|thanks/.test(said)) {
    return { text: "Thank you, I enjoyed pairing on this." };
  }
  return { text: "Could you say a bit more about what you'd like me to do?" };
}
