// The static site's stand-in for `deepcfr serve`: the same JSON answers the page's app.js asks the
// server for (/api/info, /api/games, /move, /moves, the record), computed here by the JavaScript
// engine (lost_cities.js) and the exported network run by onnxruntime-web. Nothing leaves the
// browser: the model, the runtime and the page come from the site's own folder.
"use strict";

(function () {
  const LC = window.LostCities;
  const here = new URL(".", document.baseURI);
  const TOP_PROBS = 8;  // players/seated.py's: actions shown with the agent's probabilities
  const STORE = "deepcfr-offline-games";

  const failure = (status, message) => { const e = new Error(message); e.status = status; return e; };
  const readJSON = async (path) => {
    const r = await fetch(new URL(path, here));
    if (!r.ok) throw new Error(`${path}: ${r.status} ${r.statusText}`);
    return r.json();
  };

  // The model's description (written by build-web) first, then the runtime and the network.
  const site = readJSON("model/site.json");
  const network = site.then(async (meta) => {
    if (meta.encoding_version !== LC.ENCODING_VERSION) {
      throw new Error(`the network reads encoding version ${meta.encoding_version}, this page computes version ${LC.ENCODING_VERSION}: rebuild the site`);
    }
    const ort = await import(new URL("vendor/ort.wasm.min.mjs", here).href);
    ort.env.wasm.numThreads = 1;  // a static host sends no cross-origin isolation headers, so one thread
    ort.env.wasm.wasmPaths = new URL("vendor/", here).href;
    const session = await ort.InferenceSession.create(new URL(`model/${meta.model}`, here).href, { executionProviders: ["wasm"] });
    return { ort, session };
  });
  network.catch(() => {});  // reported by the first request that needs it

  // present.py's JSON views of a game ---------------------------------------------------------------
  function card(r, id) {
    const kind = r.cardKind(id), value = r.kindValue(kind);
    return { id, color: r.cardColor(id), value, label: kind === 0 ? "W" : String(value) };
  }
  const sortedCards = (r, cards) => cards.slice().sort((a, b) => r.cardColor(a) - r.cardColor(b) || r.cardKind(a) - r.cardKind(b) || a - b)
    .map((c) => card(r, c));
  function rulesJSON(r) {
    return { n_colors: r.n_colors, colors: LC.COLOR_NAMES.slice(0, r.n_colors), n_ranks: r.n_ranks, min_rank: r.min_rank,
      n_wagers: r.n_wagers, hand_size: r.hand_size, deck_size: r.deck_size, expedition_cost: r.expedition_cost,
      bonus_threshold: r.bonus_threshold, bonus: r.bonus };
  }
  function describeAction(r, a) {
    const m = r.action(a), out = { action: a, label: r.actionName(a), type: m.kind };
    if (m.colour !== null) out.color = m.colour;
    if (m.rank !== null) Object.assign(out, { value: m.rank, card_label: m.rank === 0 ? "W" : String(m.rank) });
    return out;
  }
  function finalJSON(g) {
    const [s0, s1] = g.scores(), margin = s0 - s1;
    return { scores: [s0, s1], expedition_scores: [g.expeditionScores(0), g.expeditionScores(1)],
      winner: margin === 0 ? null : margin > 0 ? 0 : 1, margin: Math.abs(margin), cut_off: g.cutOff };
  }
  function tableJSON(g, viewer) {
    const r = g.rules, finished = g.isTerminal();
    const hands = [0, 1].map((seat) => {
      const known = [...g.known[seat]].sort((a, b) => a - b);
      const visible = viewer === null || viewer === seat || finished;
      return { seat, count: g.hands[seat].length, known: known.map((c) => card(r, c)),
        cards: visible ? sortedCards(r, g.hands[seat]) : null, known_ids: known };
    });
    const expeditions = [0, 1].map((seat) => {
      const scores = g.expeditionScores(seat);
      return g.expeditions[seat].map((cards, color) => ({ color, cards: cards.map((c) => card(r, c)), score: scores[color],
        wagers: cards.filter((c) => r.cardKind(c) === 0).length, bonus: cards.length >= r.bonus_threshold }));
    });
    return { rules: rulesJSON(r), viewer, to_move: finished ? null : g.player,
      phase: finished ? null : g.phase === LC.PHASE_CARD ? "card" : "draw", finished, decisions: g.decisions,
      deck: g.deck.length, discarded_color: g.discarded, hands, expeditions, scores: g.scores(),
      piles: g.piles.map((pile, color) => ({ color, cards: pile.map((c) => card(r, c)) })), final: finished ? finalJSON(g) : null };
  }
  function topProbabilities(r, probs, chosen) {
    const order = probs.map((p, a) => a).filter((a) => probs[a] > 0).sort((a, b) => probs[b] - probs[a] || a - b).slice(0, TOP_PROBS);
    if (!order.includes(chosen)) order.push(chosen);
    return order.map((a) => ({ action: a, label: r.actionName(a), p: Math.round(probs[a] * 1e4) / 1e4, chosen: a === chosen }));
  }

  // Tables ---------------------------------------------------------------------------------------
  class Table {
    constructor(meta, { id, deal, humanSeat, seed, moves }) {
      this.meta = meta;
      this.id = id;
      this.rules = new LC.Rules(meta.rules);
      this.deal = deal;
      this.humanSeat = humanSeat;
      this.seed = seed;
      this.names = [0, 1].map((s) => (s === humanSeat ? "You" : meta.player_label));
      this.game = new LC.Game(this.rules, deal);
      this.moves = [];  // {seat, action, probs}
      for (const m of moves || []) this.apply(m.action, m.probs);
    }
    apply(action, probs) {
      const seat = this.game.player;
      this.game.apply(action);  // throws, changing nothing, when illegal
      this.moves.push({ seat, action, probs: probs || null });
    }
    async runComputer() {
      while (!this.game.isTerminal() && this.game.player !== this.humanSeat) {
        const { ort, session } = await network;
        const obs = this.game.observe(this.game.player);
        const decision = await LC.networkDecide(ort, session, this.rules, obs, this.game.legalMask());
        this.apply(decision.action, decision.probs);
      }
      save(this);
    }
    get private() { return !this.game.isTerminal(); }
    moveJSON(i, extra) {
      const m = this.moves[i], out = { n: i + 1, seat: m.seat, ...describeAction(this.rules, m.action) };
      if (extra && m.probs) out.probs = topProbabilities(this.rules, m.probs, m.action);
      return out;
    }
    refusals() {
      const g = this.game, r = this.rules;
      if (g.phase !== LC.PHASE_CARD) return {};
      const legal = new Set(g.legalActions()), out = {};
      const kinds = [...new Set(g.hands[this.humanSeat].map((c) => r.cardKindIndex(c)))].sort((a, b) => a - b);
      for (const kind of kinds) {
        if (legal.has(kind)) continue;
        const color = Math.floor(kind / (r.n_ranks + 1)), k = kind % (r.n_ranks + 1);
        out[`${color}:${r.kindValue(k)}`] = g.whyNotPlayable(this.humanSeat, kind) || "not one of the listed moves";
      }
      return out;
    }
    view() {
      const g = this.game, yourTurn = !g.isTerminal() && g.player === this.humanSeat;
      const recent = [];
      for (let i = this.moves.length - 1; i >= 0 && this.moves[i].seat !== this.humanSeat; i--) recent.unshift(i);
      return { id: this.id, mode: "play", seed: this.private ? null : this.seed, human_seat: this.humanSeat,
        players: [0, 1].map((s) => ({ seat: s, name: this.names[s], human: s === this.humanSeat })), ...tableJSON(g, this.humanSeat),
        legal: yourTurn ? g.legalActions().map((a) => describeAction(this.rules, a)) : [], refusals: yourTurn ? this.refusals() : {},
        last_moves: recent.map((i) => this.moveJSON(i, !this.private)), moves: this.moves.map((_, i) => this.moveJSON(i, false)),
        move_count: this.moves.length, saved_to: null };
    }
    record() {  // evaluate/replay.py's record of the game (deepcfr replay reads it)
      const g = this.game, returns = g.returns(), margin = returns[0];
      const result = { finished: g.isTerminal(), decisions: g.decisions, scores: g.scores(),
        expedition_scores: [g.expeditionScores(0), g.expeditionScores(1)], cut_off: g.cutOff, returns,
        winner: margin === 0 || !g.isTerminal() ? null : margin > 0 ? 0 : 1 };
      return { format: this.meta.record_format, game: this.meta.game, game_version: this.meta.game_version,
        game_config: this.meta.rules, seed: this.seed, deal: this.deal, actions: this.moves.map((m) => m.action),
        players: this.names.map((n, s) => (s === this.humanSeat ? "human" : this.meta.player)), result };
    }
  }

  const tables = new Map();
  // Games are kept in the browser's storage, so a reload or the Back button finds them again.
  function stored() { try { return JSON.parse(localStorage.getItem(STORE) || "{}"); } catch (e) { return {}; } }
  function save(t) {
    try {
      const all = stored();
      all[t.id] = { deal: t.deal, humanSeat: t.humanSeat, seed: t.seed, moves: t.moves, at: Date.now() };
      const ids = Object.keys(all).sort((a, b) => all[b].at - all[a].at);
      for (const old of ids.slice(20)) delete all[old];  // the last 20 games
      localStorage.setItem(STORE, JSON.stringify(all));
    } catch (e) { /* storage full or off: the game still plays, it just is not kept */ }
  }
  async function table(id) {
    if (tables.has(id)) return tables.get(id);
    const kept = stored()[id];
    if (!kept) throw failure(404, `no game ${String(id).slice(0, 40)} in this browser: start a new game`);
    const t = new Table(await site, { id, ...kept });
    tables.set(id, t);
    return t;
  }

  async function newGame(body) {
    const meta = await site;
    const seat = body.seat === 1 ? 1 : 0;
    if (body.variant && body.variant !== meta.variant) throw failure(400, `this site plays the ${meta.variant} rules only`);
    const seed = Number.isInteger(body.seed) && body.seed >= 0 ? body.seed : crypto.getRandomValues(new Uint32Array(1))[0] >>> 1;
    const id = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
    // the deal of the seed, as the served page and `deepcfr play --seed` deal it
    const t = new Table(meta, { id, deal: LC.pythonDeal(new LC.Rules(meta.rules), seed), humanSeat: seat, seed });
    tables.set(id, t);
    await t.runComputer();
    return t.view();
  }

  async function move(id, body) {
    const t = await table(id), g = t.game;
    if (g.isTerminal()) throw failure(409, "the game is over: no more moves");
    if (body.decision !== undefined && body.decision !== null && body.decision !== g.decisions) {
      throw failure(409, `out of turn: the move was meant for decision ${body.decision + 1}, but the game is at decision ${g.decisions + 1} (reload the game)`);
    }
    if (g.player !== t.humanSeat) throw failure(409, `out of turn: seat ${g.player} is to move, you play seat ${t.humanSeat}`);
    try { t.apply(body.action); } catch (e) { throw failure(400, `illegal move: ${e.message}`); }
    await t.runComputer();
    return t.view();
  }

  // The page's api(method, url, body), answered here.
  async function api(method, url, body) {
    const path = new URL(url, here).pathname.replace(/^.*\/api\//, "/api/");
    if (method === "GET" && path === "/api/info") {
      const meta = await site;
      return { bots: [], champions: [{ spec: meta.player, label: meta.player_label }], checkpoints: [], variants: [meta.variant],
        spec_forms: "", runs: "", replays: "", games_in_memory: tables.size, offline: true };
    }
    if (method === "POST" && path === "/api/games") return newGame(body || {});
    let m = path.match(/^\/api\/games\/([\w-]+)$/);
    if (m && method === "GET") return (await table(m[1])).view();
    m = path.match(/^\/api\/games\/([\w-]+)\/move$/);
    if (m && method === "POST") return move(m[1], body || {});
    m = path.match(/^\/api\/games\/([\w-]+)\/moves$/);
    if (m && method === "GET") {
      const t = await table(m[1]);
      if (t.private) throw failure(409, "the game is still running: the network's probabilities are shown when it is over");
      return { moves: t.moves.map((_, i) => t.moveJSON(i, true)) };
    }
    throw failure(404, `this static page has no ${method} ${path} (it plays the network only; the Watch, Replays and Runs tabs need \`deepcfr serve\`)`);
  }

  // The record of a finished game as a download link (the served page links to /api/games/ID/record).
  function recordURL(id) {
    const t = tables.get(id);
    if (!t || t.private) return "#";
    if (!t.recordLink) t.recordLink = URL.createObjectURL(new Blob([JSON.stringify(t.record()) + "\n"], { type: "application/x-ndjson" }));
    return t.recordLink;
  }

  window.deepcfrOffline = { api, recordURL, ready: network };
})();
