// Hot Seat's ticket split (seed 000, Phase 2): every juror gets at least
// one question; the surplus goes by weight, largest remainder first, ties
// to the earlier juror. 3 jurors and 5 questions give [2, 2, 1].
function split(ctx) {
  const roles = ctx.ticket_roles;
  const total = ctx.total;
  let weightSum = 0;
  for (let i = 0; i < roles.length; i++) weightSum += ctx.weights[roles[i]];
  const out = {};
  const rest = [];
  let given = 0;
  const surplus = total - roles.length;
  for (let i = 0; i < roles.length; i++) {
    const share = weightSum > 0 ? (surplus * ctx.weights[roles[i]]) / weightSum : 0;
    const whole = Math.floor(share);
    out[roles[i]] = 1 + whole;
    given += whole;
    rest.push({ i: i, frac: share - whole });
  }
  rest.sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (let k = 0; given < surplus; k++, given++) {
    out[roles[rest[k % rest.length].i]] += 1;
  }
  return out;
}
