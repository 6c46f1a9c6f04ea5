// Plays games against the static site's offline table (serve/web/offline.js) in node, with a stand-in
// for onnxruntime-web (its network: every legal move alike, the lowest one played), and prints one
// JSON object: for every answer the page got while each game ran, and at its end, what it showed.
// node offline_table.mjs ENGINE.js OFFLINE.js SITE_DIR SEAT:SEED [SEAT:SEED...] (the human's seat, the deal)
// SITE_DIR holds model/site.json; the stand-in runtime is written to SITE_DIR/vendor/.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [enginePath, offlinePath, siteDir, ...played] = process.argv.slice(2);

mkdirSync(path.join(siteDir, "vendor"), { recursive: true });
writeFileSync(path.join(siteDir, "vendor", "ort.wasm.min.mjs"), `
export const env = { wasm: {} };
export class Tensor { constructor(type, data, dims) { Object.assign(this, { type, data, dims }); } }
export const InferenceSession = { create: async () => ({ run: async (feeds) => {
  const legal = feeds.legal_mask.data, n = legal.reduce((s, m) => s + m, 0);
  return { logits: { data: Float32Array.from(legal, () => 0) },
    probabilities: { data: Float32Array.from(legal, (m) => (m ? 1 / n : 0)) } };
} }) };
`);

// The browser's globals offline.js uses.
if (!globalThis.crypto) globalThis.crypto = (await import("node:crypto")).webcrypto;  // node 18
const kept = new Map();
Object.assign(globalThis, {
  window: globalThis, self: globalThis,
  document: { baseURI: pathToFileURL(path.resolve(siteDir) + "/").href },
  localStorage: { getItem: (k) => (kept.has(k) ? kept.get(k) : null), setItem: (k, v) => kept.set(k, String(v)) },
  fetch: async (url) => {
    const body = readFileSync(fileURLToPath(String(url)), "utf8");
    return { ok: true, status: 200, statusText: "OK", json: async () => JSON.parse(body) };
  },
});
// both scripts as the page's <script> tags run them (an indirect eval: global scope, and offline.js's
// import() of the runtime through node's own loader)
for (const file of [enginePath, offlinePath]) (0, eval)(`${readFileSync(file, "utf8")}\n//# sourceURL=${file}`);
const { api, recordURL } = window.deepcfrOffline;

const refusal = async (call) => { try { await call(); return null; } catch (e) { return e.status ?? String(e); } };
const games = [];
for (const [seat, seed] of played.map((s) => s.split(":").map(Number))) {
  let view = await api("POST", "api/games", { seat, seed });
  const running = [];  // per decision of the human while the game runs
  while (!view.finished) {
    const again = await api("GET", `api/games/${view.id}`);
    running.push({ views: [JSON.stringify(view), JSON.stringify(again)], agent_moves: view.moves.filter((m) => m.seat !== seat).length,
      moves_refused: await refusal(() => api("GET", `api/games/${view.id}/moves`)), record: recordURL(view.id), seed: view.seed });
    const legal = view.legal.map((m) => m.action);
    const action = legal[(seed * 7919 + view.decisions * 104729) % legal.length];
    view = await api("POST", `api/games/${view.id}/move`, { action, decision: view.decisions });
  }
  games.push({ seat, seed, running, final: view, moves: (await api("GET", `api/games/${view.id}/moves`)).moves,
    record: recordURL(view.id) });
}
console.log(JSON.stringify({ games }));
