// The checks every client script shares. check() compares the JSON texts of
// the expected and the actual value, holds() a condition; each failure
// prints one FAIL line, and done() prints the counts and exits non-zero when
// anything failed. Copied next to the scripts by install_clients
// (tests/serve/serve_lib.sh).
let passes = 0, fails = 0;

export function pass() { passes++; }
export function fail(message) { fails++; console.log(`FAIL ${message}`); }
export function check(name, expected, actual) {
  const e = JSON.stringify(expected), a = JSON.stringify(actual);
  if (e === a) pass();
  else fail(`${name}: expected ${e} got ${a}`);
}
export function holds(name, cond, detail = "") {
  if (cond) pass();
  else fail(detail === "" ? `${name}: does not hold` : `${name}: does not hold: ${detail}`);
}
export function done(script) {
  console.log(`${script}: ${passes} passed, ${fails} failed`);
  process.exit(fails === 0 ? 0 : 1);
}
