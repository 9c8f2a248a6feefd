function greeting(ctx) {
  return [{emit: {text: "hello " + ctx.inputs.CANDIDATE + " with " + ctx.inputs.notes.length + " note file(s)"}}];
}
