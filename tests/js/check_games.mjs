// Replays games recorded by the Python engines (tests/web_helpers.py) through the site's JavaScript
// engine and network player, and prints one JSON object: what was checked and every disagreement.
// node check_games.mjs ENGINE.js RECORDS.json [MODEL.onnx ORT_DIR]
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [enginePath, recordsPath, modelPath, ortDir] = process.argv.slice(2);
const LC = createRequire(import.meta.url)(path.resolve(enginePath));
const records = JSON.parse(readFileSync(recordsPath, "utf8"));
let ort = null, session = null;
if (modelPath) {
  ort = await import(pathToFileURL(path.join(ortDir, "ort.wasm.min.mjs")).href);
  ort.env.wasm.numThreads = 1;
  session = await ort.InferenceSession.create(readFileSync(modelPath));
}
const problems = [];
const report = { games: 0, positions: 0, features_max_abs_diff: 0, greedy_checked: 0, greedy_agree: 0, logits_max_abs_diff: 0 };
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const problem = (g, i, what) => { if (problems.length < 30) problems.push(`game ${g} decision ${i}: ${what}`); };
for (const [g, rec] of records.entries()) {
  const rules = new LC.Rules(rec.rules);
  const game = new LC.Game(rules, rec.deal);
  report.games++;
  for (const [i, step] of rec.steps.entries()) {
    report.positions++;
    if (game.player !== step.seat) problem(g, i, `seat ${game.player} to move, Python says ${step.seat}`);
    const obs = game.observe(step.seat);
    if (!same(obs, step.obs)) problem(g, i, `observation ${JSON.stringify(obs)} != ${JSON.stringify(step.obs)}`);
    if (!same(game.legalActions(), step.legal)) problem(g, i, `legal ${game.legalActions()} != ${step.legal}`);
    if (!same(game.scores(), step.scores)) problem(g, i, `scores ${game.scores()} != ${step.scores}`);
    const features = LC.encode(rules, obs);
    if (features.length !== step.features.length) problem(g, i, `feature size ${features.length} != ${step.features.length}`);
    features.forEach((x, k) => {
      const d = Math.abs(x - step.features[k]);
      report.features_max_abs_diff = Math.max(report.features_max_abs_diff, d);
      if (d > 1e-6 * Math.max(1, Math.abs(step.features[k]))) problem(g, i, `feature ${k}: ${x} != ${step.features[k]}`);
    });
    if (session && step.greedy !== undefined) {
      const decision = await LC.networkDecide(ort, session, rules, obs, game.legalMask());
      report.greedy_checked++;
      if (decision.action === step.greedy) report.greedy_agree++;
      else problem(g, i, `network plays ${decision.action}, champion@greedy ${step.greedy}`);
      if (step.logits) decision.logits.forEach((x, k) => { report.logits_max_abs_diff = Math.max(report.logits_max_abs_diff, Math.abs(x - step.logits[k])); });
    }
    try { game.apply(step.action); } catch (e) { problem(g, i, `apply ${step.action}: ${e.message}`); break; }
  }
  const f = rec.final;
  if (game.isTerminal() !== f.finished) problem(g, "end", `finished ${game.isTerminal()} != ${f.finished}`);
  if (!same(game.scores(), f.scores)) problem(g, "end", `scores ${game.scores()} != ${f.scores}`);
  for (const p of [0, 1]) {
    if (!same(game.expeditionScores(p), f.expedition_scores[p])) problem(g, "end", `expedition scores of ${p}`);
    if (!same(game.observe(p), f.observations[p])) problem(g, "end", `final observation of ${p}`);
  }
  if (!same(game.returns(), f.returns)) problem(g, "end", `returns ${game.returns()} != ${f.returns}`);
  if (game.isTerminal() && game.legalActions().length) problem(g, "end", "a finished game lists legal moves");
}
report.problems = problems;
console.log(JSON.stringify(report));
