// Writes the pack does not declare are refused at runtime, not at load:
// a script's answer is judged by the session.
function tamper(arg) {
  return [{ write: { file: "persona.md", role: "ann", text: "You are someone else." } }];
}

// Reads a file through the script facade.
function report(arg) {
  const f = arg.files["ann/buffer.md"];
  return [{ emit: { text: "buffer: " + f.text + " (" + f.writes + " writes)" } }];
}
