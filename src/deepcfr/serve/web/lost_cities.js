// Lost Cities in JavaScript for the static site (`deepcfr build-web`): the rules, the compact
// observation and the network features, written to equal the Python engines exactly
// (games/lost_cities/reference.py, layout.py, encoding.py); tests/test_web_site.py replays
// recorded games through it in node and checks every legal-move set, observation, feature vector,
// score and result, and that the network player here picks the move `champion@greedy` picks.
// One file for the browser (a global `LostCities`) and for node (`require`).
"use strict";

(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.LostCities = factory();
})(typeof self !== "undefined" ? self : this, function () {
  const ENCODING_VERSION = 1;  // encoding.py's ENCODING_VERSION: the features below are that version's
  const COLOR_NAMES = ["red", "green", "blue", "white", "yellow", "purple", "orange", "black", "pink", "cyan"];
  const LOC_HAND = 1, LOC_MY_EXP = 2, LOC_OPP_EXP = 3, LOC_OPP_KNOWN = 4, LOC_PILE0 = 5;
  const PHASE_CARD = 0, PHASE_DRAW = 1;
  const DECK_FLAGS = [1, 2, 4, 8];

  class IllegalAction extends Error {}

  // Rule parameters (rules.py's LostCitiesRules) and the numbering of cards, kinds and actions.
  class Rules {
    constructor(params) {
      const p = Object.assign({ n_colors: 5, n_ranks: 9, min_rank: 2, n_wagers: 3, hand_size: 8, expedition_cost: -20,
        bonus_threshold: 8, bonus: 20, ply_cap: 1000, utility: "score_diff" }, params || {});
      Object.assign(this, p);
      this.params = p;
      this.cards_per_color = p.n_wagers + p.n_ranks;
      this.deck_size = p.n_colors * this.cards_per_color;
      this.num_kinds = p.n_colors * (p.n_ranks + 1);
      this.num_actions = 2 * this.num_kinds + 1 + p.n_colors;
      this.draw_deck_action = 2 * this.num_kinds;
    }
    kindValue(kind) { return kind === 0 ? 0 : this.min_rank + kind - 1; }
    cardColor(card) { return Math.floor(card / this.cards_per_color); }
    cardKind(card) { const j = card % this.cards_per_color; return j < this.n_wagers ? 0 : j - this.n_wagers + 1; }
    cardKindIndex(card) { return this.cardColor(card) * (this.n_ranks + 1) + this.cardKind(card); }
    kindName(k) {
      const c = Math.floor(k / (this.n_ranks + 1)), kind = k % (this.n_ranks + 1);
      return `${COLOR_NAMES[c]} ${kind === 0 ? "wager" : this.kindValue(kind)}`;
    }
    // {kind: play | discard | draw_deck | draw_pile, colour, rank} of action a (rules.py's action)
    action(a) {
      const K = this.num_kinds;
      if (a < 2 * K) {
        const k = a % K;
        return { kind: a < K ? "play" : "discard", colour: Math.floor(k / (this.n_ranks + 1)), rank: this.kindValue(k % (this.n_ranks + 1)) };
      }
      if (a === 2 * K) return { kind: "draw_deck", colour: null, rank: null };
      return { kind: "draw_pile", colour: a - 2 * K - 1, rank: null };
    }
    actionName(a) {
      const m = this.action(a);
      if (m.kind === "draw_deck") return "draw deck";
      if (m.kind === "draw_pile") return `draw pile ${COLOR_NAMES[m.colour]}`;
      return `${m.kind} ${COLOR_NAMES[m.colour]} ${m.rank === 0 ? "wager" : m.rank}`;
    }
    get colorTotal() {
      let total = 0;
      for (let j = 0; j < this.cards_per_color; j++) total += this.kindValue(this.cardKind(j));
      return total;
    }
  }

  // One game (reference.py's LostCitiesReference, the same conventions).
  class Game {
    constructor(rules, deal) {
      this.rules = rules;
      const sorted = deal.slice().sort((a, b) => a - b);
      if (deal.length !== rules.deck_size || sorted.some((c, i) => c !== i)) throw new Error(`a deal is a permutation of the card ids 0..${rules.deck_size - 1}`);
      const h = rules.hand_size;
      this.hands = [deal.slice(0, h), deal.slice(h, 2 * h)];
      this.deck = deal.slice(2 * h);  // draw order, first = top
      this.expeditions = [0, 1].map(() => Array.from({ length: rules.n_colors }, () => []));
      this.piles = Array.from({ length: rules.n_colors }, () => []);
      this.known = [new Set(), new Set()];  // known[p]: cards in p's hand that p's opponent knows
      this.player = 0;
      this.phase = PHASE_CARD;
      this.discarded = null;
      this.decisions = 0;
      this.cutOff = false;
      this.history = [];
    }
    isTerminal() { return this.deck.length === 0 || this.cutOff; }
    numbered(player, color) { return this.expeditions[player][color].map((c) => this.rules.cardKind(c)).filter((k) => k > 0); }
    whyNotPlayable(player, kindIndex) {
      const r = this.rules, color = Math.floor(kindIndex / (r.n_ranks + 1)), kind = kindIndex % (r.n_ranks + 1);
      const numbered = this.numbered(player, color);
      if (!numbered.length) return null;
      if (kind === 0) return "a wager cannot be played once the expedition holds a numbered card";
      const top = Math.max(...numbered);
      if (kind <= top) return `${r.kindValue(kind)} is not higher than ${r.kindValue(top)}`;
      return null;
    }
    legalActions() {
      if (this.isTerminal()) return [];
      const r = this.rules;
      if (this.phase === PHASE_CARD) {
        const kinds = [...new Set(this.hands[this.player].map((c) => r.cardKindIndex(c)))].sort((a, b) => a - b);
        const plays = kinds.filter((k) => this.whyNotPlayable(this.player, k) === null);
        return plays.concat(kinds.map((k) => r.num_kinds + k));
      }
      const out = [r.draw_deck_action];
      this.piles.forEach((pile, color) => { if (pile.length && color !== this.discarded) out.push(r.draw_deck_action + 1 + color); });
      return out;
    }
    legalMask() {
      const mask = new Array(this.rules.num_actions).fill(false);
      for (const a of this.legalActions()) mask[a] = true;
      return mask;
    }
    illegal(action, why) { return new IllegalAction(`illegal action ${action} (${this.rules.actionName(action)}) for player ${this.player}: ${why}`); }
    apply(action) {
      const r = this.rules, K = r.num_kinds, player = this.player;
      if (!Number.isInteger(action)) throw new IllegalAction(`action must be an integer, got ${action}`);
      if (action < 0 || action >= r.num_actions) throw new IllegalAction(`action ${action} out of range 0..${r.num_actions - 1}`);
      if (this.isTerminal()) throw this.illegal(action, "the game is over");
      if (this.phase === PHASE_CARD) {
        if (action >= 2 * K) throw this.illegal(action, "a card must be played or discarded before drawing");
        const kindIndex = action % K, color = Math.floor(kindIndex / (r.n_ranks + 1));
        const inHand = this.hands[player].filter((c) => r.cardKindIndex(c) === kindIndex);
        if (!inHand.length) throw this.illegal(action, `no ${r.kindName(kindIndex)} in hand`);
        if (action < K) { const why = this.whyNotPlayable(player, kindIndex); if (why !== null) throw this.illegal(action, why); }
        const known = inHand.filter((c) => this.known[player].has(c));
        const card = (known.length ? known : inHand)[0];
        this.hands[player].splice(this.hands[player].indexOf(card), 1);
        this.known[player].delete(card);
        if (action < K) this.expeditions[player][color].push(card);
        else { this.piles[color].push(card); this.discarded = color; }
        this.phase = PHASE_DRAW;
      } else {
        if (action < 2 * K) throw this.illegal(action, "the card decision is made; now draw a card");
        let card;
        if (action === r.draw_deck_action) card = this.deck.shift();
        else {
          const color = action - r.draw_deck_action - 1;
          if (!this.piles[color].length) throw this.illegal(action, "that discard pile is empty");
          if (color === this.discarded) throw this.illegal(action, "cannot draw the card discarded in this turn");
          card = this.piles[color].pop();
          this.known[player].add(card);
        }
        this.hands[player].push(card);
        this.phase = PHASE_CARD;
        this.discarded = null;
        this.player = 1 - player;
      }
      this.decisions += 1;
      this.history.push(action);
      if (this.deck.length && this.decisions >= r.ply_cap) this.cutOff = true;
    }
    expeditionScores(player) {
      const r = this.rules;
      return this.expeditions[player].map((cards) => {
        if (!cards.length) return 0;
        const kinds = cards.map((c) => r.cardKind(c));
        const wagers = kinds.filter((k) => k === 0).length;
        const total = kinds.reduce((s, k) => s + r.kindValue(k), 0);
        return (total + r.expedition_cost) * (1 + wagers) + (cards.length >= r.bonus_threshold ? r.bonus : 0);
      });
    }
    scores() { return [0, 1].map((p) => this.expeditionScores(p).reduce((a, b) => a + b, 0)); }
    returns() {
      const [s0, s1] = this.scores();
      const u0 = this.rules.utility === "win_loss" ? Math.sign(s0 - s1) : s0 - s1;
      return [u0, -u0];
    }
    // layout.py's compact observation row of `player`
    observe(player) {
      const r = this.rules, opp = 1 - player, D = r.deck_size;
      const row = new Array(D + 5).fill(0);
      for (const c of this.hands[player]) row[c] = LOC_HAND;
      for (const c of this.known[opp]) row[c] = LOC_OPP_KNOWN;
      for (let color = 0; color < r.n_colors; color++) {
        for (const c of this.expeditions[player][color]) row[c] = LOC_MY_EXP;
        for (const c of this.expeditions[opp][color]) row[c] = LOC_OPP_EXP;
        this.piles[color].forEach((c, height) => { row[c] = LOC_PILE0 + height; });
        const first = color * r.cards_per_color;
        const wagers = row.slice(first, first + r.n_wagers).sort((a, b) => a - b);
        for (let i = 0; i < r.n_wagers; i++) row[first + i] = wagers[i];
      }
      row[D] = this.deck.length;
      row[D + 1] = this.phase;
      row[D + 2] = this.discarded === null ? r.n_colors : this.discarded;
      row[D + 3] = player;
      row[D + 4] = this.player;
      return row;
    }
  }

  // The deal of a seed, as `LostCitiesReference.new(rules, seed)` deals it: Python's random.Random(seed)
  // (the Mersenne Twister, seeded by init_by_array) shuffling 0..D-1. So a deal seed names the same
  // deal on this site, on the served page and in `deepcfr play --seed`.
  function pythonDeal(r, seed) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xFFFFFFFF) throw new Error(`a deal seed is an integer 0..${0xFFFFFFFF}`);
    const N = 624, mt = new Uint32Array(N);
    mt[0] = 19650218;
    for (let i = 1; i < N; i++) mt[i] = (Math.imul(1812433253, mt[i - 1] ^ (mt[i - 1] >>> 30)) + i) >>> 0;
    const key = [seed >>> 0];
    let i = 1, j = 0;
    for (let k = Math.max(N, key.length); k; k--) {
      mt[i] = ((mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1664525)) + key[j] + j) >>> 0;
      i++; j++;
      if (i >= N) { mt[0] = mt[N - 1]; i = 1; }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k; k--) {
      mt[i] = ((mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) { mt[0] = mt[N - 1]; i = 1; }
    }
    mt[0] = 0x80000000;
    let index = N;
    const next32 = () => {
      if (index >= N) {
        for (let kk = 0; kk < N; kk++) {
          const y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % N] & 0x7fffffff);
          mt[kk] = mt[(kk + 397) % N] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
        }
        index = 0;
      }
      let y = mt[index++];
      y ^= y >>> 11; y ^= (y << 7) & 0x9d2c5680; y ^= (y << 15) & 0xefc60000; y ^= y >>> 18;
      return y >>> 0;
    };
    const below = (n) => {  // random._randbelow_with_getrandbits
      const bits = 32 - Math.clz32(n);
      let v = next32() >>> (32 - bits);
      while (v >= n) v = next32() >>> (32 - bits);
      return v;
    };
    const deal = Array.from({ length: r.deck_size }, (_, k) => k);
    for (let k = deal.length - 1; k > 0; k--) { const m = below(k + 1); [deal[k], deal[m]] = [deal[m], deal[k]]; }
    return deal;
  }

  function featureSize(r) {
    const D = r.deck_size, C = r.n_colors, R1 = r.n_ranks + 1;
    return 9 * D + 12 * C + C * (R1 + 2) + 3 + 1 + DECK_FLAGS.length + C + 5 + 7 * C;
  }

  // encoding.py's features of an observation row, as a Float32Array (the same blocks, in order).
  function encode(r, obs) {
    const D = r.deck_size, C = r.n_colors, P = r.cards_per_color, W = r.n_wagers, R1 = r.n_ranks + 1;
    const out = new Float32Array(featureSize(r));
    const scoreScale = Math.max(1, Math.abs(r.expedition_cost)) * (1 + W);
    const colorTotal = r.colorTotal;
    const kinds = Array.from({ length: P }, (_, j) => r.cardKind(j));
    const height = new Array(C).fill(0);
    for (let card = 0; card < D; card++) if (obs[card] >= LOC_PILE0) height[Math.floor(card / P)]++;
    // per side (0 mine, 1 the opponent's) and colour: cards, wagers, sum of values, top numbered kind
    const side = [LOC_MY_EXP, LOC_OPP_EXP].map((code) => Array.from({ length: C }, (_, c) => {
      let n = 0, wagers = 0, total = 0, top = 0;
      for (let j = 0; j < P; j++) {
        if (obs[c * P + j] !== code) continue;
        n++; if (kinds[j] === 0) wagers++;
        total += r.kindValue(kinds[j]); if (kinds[j] > top) top = kinds[j];
      }
      const opened = Math.min(n, 1);
      const score = ((total + r.expedition_cost) * (1 + wagers) + r.bonus * (n >= r.bonus_threshold ? 1 : 0)) * opened;
      return { n, wagers, total, top, opened, score };
    }));
    const playable = (top, j) => (kinds[j] > top || (kinds[j] === 0 && top === 0)) ? 1 : 0;
    // per card: nine groups of D
    for (let card = 0; card < D; card++) {
      const code = obs[card], c = Math.floor(card / P), j = card % P;
      const inPile = code >= LOC_PILE0;
      out[card] = code === LOC_HAND ? 1 : 0;
      out[D + card] = code === LOC_MY_EXP ? 1 : 0;
      out[2 * D + card] = code === LOC_OPP_EXP ? 1 : 0;
      out[3 * D + card] = code === LOC_OPP_KNOWN ? 1 : 0;
      out[4 * D + card] = inPile ? 1 : 0;
      out[5 * D + card] = inPile && code === LOC_PILE0 - 1 + height[c] ? 1 : 0;
      out[6 * D + card] = inPile ? (code - LOC_PILE0) * (1 / P) : 0;
      out[7 * D + card] = playable(side[0][c].top, j);
      out[8 * D + card] = playable(side[1][c].top, j);
    }
    let at = 9 * D;
    // per expedition: six groups of [my C colours, the opponent's C]
    const values = [(e) => e.opened, (e) => e.n * (1 / P), (e) => e.wagers * (1 / Math.max(W, 1)), (e) => e.total * (1 / colorTotal),
      (e) => e.top * (1 / r.n_ranks), (e) => e.score * (1 / scoreScale)];
    values.forEach((value, f) => { for (let s = 0; s < 2; s++) for (let c = 0; c < C; c++) out[at + f * 2 * C + s * C + c] = value(side[s][c]); });
    at += 12 * C;
    // per colour: pile heights, the one-hot kind of each pile's top card, the cards I cannot see
    for (let c = 0; c < C; c++) {
      out[at + c] = height[c] * (1 / P);
      let unseen = 0;
      for (let j = 0; j < P; j++) {
        const code = obs[c * P + j];
        if (code === 0) unseen++;
        if (code >= LOC_PILE0 && code === LOC_PILE0 - 1 + height[c]) out[at + C + c * R1 + kinds[j]] = 1;
      }
      out[at + C * (R1 + 1) + c] = unseen * (1 / P);
    }
    at += C * (R1 + 2);
    // totals, deck, turn
    const mine = side[0].reduce((s, e) => s + e.score, 0) * (1 / (C * scoreScale));
    const theirs = side[1].reduce((s, e) => s + e.score, 0) * (1 / (C * scoreScale));
    out[at] = mine; out[at + 1] = theirs; out[at + 2] = Math.fround(mine) - Math.fround(theirs);
    at += 3;
    const deck = obs[D];
    out[at] = deck * (1 / Math.max(1, D - 2 * r.hand_size));
    DECK_FLAGS.forEach((flag, i) => { out[at + 1 + i] = deck <= flag ? 1 : 0; });
    at += 1 + DECK_FLAGS.length;
    const [phase, discarded, observer, toMove] = [obs[D + 1], obs[D + 2], obs[D + 3], obs[D + 4]];
    out[at] = phase === 0 ? 1 : 0;
    out[at + 1] = phase === 1 ? 1 : 0;
    out[at + 2 + Math.min(Math.max(discarded, 0), C)] = 1;
    out[at + 3 + C] = observer;
    out[at + 4 + C] = toMove === observer ? 1 : 0;
    at += C + 5;
    // hand outlook: seven groups of C
    for (let c = 0; c < C; c++) {
      let hn = 0, hw = 0, ht = 0, pn = 0, pw = 0, pt = 0, ut = 0;
      for (let j = 0; j < P; j++) {
        const code = obs[c * P + j], v = r.kindValue(kinds[j]), play = playable(side[0][c].top, j);
        if (code === LOC_HAND) { hn++; hw += kinds[j] === 0 ? 1 : 0; ht += v; if (play) { pn++; pw += kinds[j] === 0 ? 1 : 0; pt += v; } }
        if (code === 0 && play) ut += v;
      }
      const e = side[0][c], after = e.n + pn;
      const projected = ((e.total + pt + r.expedition_cost) * (1 + e.wagers + pw) + r.bonus * (after >= r.bonus_threshold ? 1 : 0)) * Math.min(after, 1);
      [hn * (1 / P), hw * (1 / Math.max(W, 1)), ht * (1 / colorTotal), pn * (1 / P), pt * (1 / colorTotal), ut * (1 / colorTotal),
        projected * (1 / scoreScale)].forEach((value, f) => { out[at + f * C + c] = value; });
    }
    return out;
  }

  // The network player of an exported file (players/export.py's graph): the features of the mover's
  // observation in, its logits and probabilities out; the greedy move is the highest legal logit
  // (ties: the lowest action), as `champion@greedy` plays.
  async function networkDecide(ort, session, rules, obs, mask) {
    const features = encode(rules, obs);
    const legal = Uint8Array.from(mask, (m) => (m ? 1 : 0));
    const out = await session.run({ features: new ort.Tensor("float32", features, [1, features.length]),
      legal_mask: new ort.Tensor("bool", legal, [1, legal.length]) });
    const logits = out.logits.data, probs = out.probabilities.data;
    let best = -1;
    for (let a = 0; a < mask.length; a++) if (mask[a] && (best < 0 || logits[a] > logits[best])) best = a;
    return { action: best, logits: Array.from(logits), probs: Array.from(probs) };
  }

  return { ENCODING_VERSION, COLOR_NAMES, Rules, Game, IllegalAction, encode, featureSize, networkDecide, pythonDeal, PHASE_CARD, PHASE_DRAW };
});
