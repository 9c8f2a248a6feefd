// Starter file for the pair-programming exercise.
const users = [
  { name: "Ada", role: "admin" },
  { name: "Linus", role: "viewer" },
];

function listNames(list) {
  return list.map((u) => u.name);
}

module.exports = { users, listNames };
