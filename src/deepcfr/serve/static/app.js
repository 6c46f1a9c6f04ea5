// deepcfr serve: the page is a view. Every state comes from the server's reference engine;
// the page only draws it and sends the moves the server listed as legal.
"use strict";

const COLORS = {
  red: { fill: "#d7263d", ink: "#ffffff", mark: "\u25B2" },
  green: { fill: "#1e9e48", ink: "#ffffff", mark: "\u25CF" },
  blue: { fill: "#1d5fd1", ink: "#ffffff", mark: "\u25A0" },
  white: { fill: "#f4f1e6", ink: "#222222", mark: "\u25C6" },
  yellow: { fill: "#f7c600", ink: "#222222", mark: "\u2605" },
  purple: { fill: "#7b3fb5", ink: "#ffffff", mark: "\u2665" },
  orange: { fill: "#f07c1a", ink: "#222222", mark: "\u2663" },
  black: { fill: "#2b2b2b", ink: "#ffffff", mark: "\u2660" },
  pink: { fill: "#f26bb2", ink: "#222222", mark: "\u2666" },
  cyan: { fill: "#27c3d6", ink: "#222222", mark: "\u271A" },
};
const CARD_W = 56, CARD_H = 80;

const $ = (sel) => document.querySelector(sel);
const $$ = (sel) => Array.from(document.querySelectorAll(sel));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

let info = null;        // /api/info
let view = null;        // the game or replay state on the board
let mode = "play";      // the open tab
let selected = null;    // id of the selected hand card
let busy = false;       // a move is on its way
let watchTimer = null, watchPaused = false;
let replay = { file: null, game: 0, step: 0, steps: 0 };
let runsTimer = null, openRun = null;

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(url, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = { error: r.statusText }; }
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

function showMessage(text, kind) {
  const m = $("#message");
  if (!text) { m.classList.add("hidden"); return; }
  m.textContent = text;
  m.className = "message" + (kind === "info" ? " info" : "");
}

// Cards ------------------------------------------------------------------------------------
function colorName(i) { return (view && view.rules.colors[i]) || (info && info.colors && info.colors[i]) || "red"; }

function cardSVG(card, opts = {}) {
  const w = opts.w || CARD_W, h = opts.h || CARD_H;
  if (!card) {  // the back of a card
    return `<svg width="${w}" height="${h}" viewBox="0 0 ${CARD_W} ${CARD_H}" aria-label="hidden card">
      <rect x="1.5" y="1.5" width="${CARD_W - 3}" height="${CARD_H - 3}" rx="7" fill="#2a3f7a" stroke="#dfe6ff" stroke-width="2"/>
      <rect x="7" y="7" width="${CARD_W - 14}" height="${CARD_H - 14}" rx="4" fill="none" stroke="#8fa3e0" stroke-width="1.5" stroke-dasharray="3 2"/>
      <text x="${CARD_W / 2}" y="${CARD_H / 2 + 6}" text-anchor="middle" font-size="16" font-weight="bold" fill="#dfe6ff">LC</text></svg>`;
  }
  const name = colorName(card.color), c = COLORS[name] || COLORS.red;
  const big = card.value === 0 ? "W" : String(card.value);
  const known = opts.known ? `<rect x="4" y="${CARD_H - 17}" width="${CARD_W - 8}" height="13" rx="3" fill="#111" opacity="0.85"/>
      <text x="${CARD_W / 2}" y="${CARD_H - 7}" text-anchor="middle" font-size="10" fill="#ffcf33">known</text>` : "";
  return `<svg width="${w}" height="${h}" viewBox="0 0 ${CARD_W} ${CARD_H}" aria-label="${name} ${card.value === 0 ? "wager" : card.value}">
    <rect class="face" x="1.5" y="1.5" width="${CARD_W - 3}" height="${CARD_H - 3}" rx="7" fill="${c.fill}" stroke="#111" stroke-width="1.5"/>
    <circle cx="${CARD_W / 2}" cy="${CARD_H / 2 + 2}" r="19" fill="#ffffff" opacity="${c.ink === "#ffffff" ? 0.95 : 0.75}" stroke="#111" stroke-width="1"/>
    <text x="${CARD_W / 2}" y="${CARD_H / 2 + 10}" text-anchor="middle" font-size="${big.length > 1 ? 20 : 24}" font-weight="bold" fill="#111">${big}</text>
    <text x="6" y="15" font-size="12" font-weight="bold" fill="${c.ink}">${big}</text>
    <text x="${CARD_W - 6}" y="15" text-anchor="end" font-size="12" fill="${c.ink}">${c.mark}</text>
    ${card.value === 0 ? `<text x="${CARD_W / 2}" y="${CARD_H - 6}" text-anchor="middle" font-size="9" fill="${c.ink}">wager</text>` : ""}
    ${known}</svg>`;
}

function colorWord(i) {
  const name = colorName(i), c = COLORS[name] || COLORS.red;
  return `<span class="color-word" style="background:${c.fill};color:${c.ink}">${esc(name)}</span>`;
}

function moveText(m) {
  if (!m) return "";
  if (m.type === "play" || m.type === "discard") return `${m.type} ${colorWord(m.color)} ${m.card_label === "W" ? "wager" : esc(m.card_label)}`;
  if (m.type === "draw_pile") return `draw from the ${colorWord(m.color)} pile`;
  return "draw from the deck";
}

// The board ----------------------------------------------------------------------------------
function seatName(seat) {
  const p = view.players[seat];
  return p.human ? "You" : p.name;
}

function legalSets() {
  const plays = new Map(), discards = new Map(), draws = new Map();
  for (const a of view.legal || []) {
    const key = `${a.color}:${a.value}`;
    if (a.type === "play") plays.set(key, a.action);
    else if (a.type === "discard") discards.set(key, a.action);
    else draws.set(a.type === "draw_deck" ? "deck" : `pile:${a.color}`, a.action);
  }
  return { plays, discards, draws };
}

function yourTurn() { return mode === "play" && view && !view.finished && view.to_move === view.human_seat; }

function handHTML(seat, interactive) {
  const hand = view.hands[seat];
  const knownIds = new Set(hand.known_ids);
  if (hand.cards === null) {  // hidden: backs, with the cards known to be there face up
    let html = "";
    for (const k of hand.known) html += `<span class="card hand-card inert known" data-id="${k.id}">${cardSVG(k, { known: true })}</span>`;
    for (let i = hand.known.length; i < hand.count; i++) html += `<span class="card back">${cardSVG(null)}</span>`;
    return `<div class="hand">${html}</div>`;
  }
  const groups = new Map();
  for (const c of hand.cards) { if (!groups.has(c.color)) groups.set(c.color, []); groups.get(c.color).push(c); }
  let html = "";
  for (const [color, cards] of groups) {
    html += `<div class="group">`;
    for (const c of cards) {
      const cls = ["card", "hand-card"];
      if (!interactive) cls.push("inert");
      if (selected === c.id) cls.push("selected");
      html += `<span class="${cls.join(" ")}" data-id="${c.id}" data-color="${c.color}" data-value="${c.value}"
        title="${esc(colorName(color))} ${c.value === 0 ? "wager" : c.value}">${cardSVG(c, { known: knownIds.has(c.id) })}</span>`;
    }
    html += `</div>`;
  }
  return `<div class="hand" data-seat="${seat}">${html || '<span class="hint">(empty)</span>'}</div>`;
}

function expeditionsHTML(seat, top) {
  const n = view.rules.n_colors;
  let html = `<div class="expeditions ${top ? "opp" : "mine"}" style="grid-template-columns: repeat(${n}, 1fr)" data-seat="${seat}">`;
  for (const e of view.expeditions[seat]) {
    const cards = e.cards.map((c) => `<span class="card">${cardSVG(c, { w: 48, h: 69 })}</span>`).join("");
    const cls = e.cards.length === 0 ? "none" : e.score < 0 ? "neg" : "pos";
    const label = e.cards.length === 0 ? "-" : (e.score > 0 ? "+" : "") + e.score;
    const extra = e.wagers ? ` x${e.wagers + 1}` : "";
    html += `<div class="exp-col" data-color="${e.color}"><div class="exp-cards">${cards}</div>
      <div class="exp-score ${cls}" title="${esc(colorName(e.color))}: ${e.cards.length} cards${extra}">${label}</div></div>`;
  }
  return html + "</div>";
}

function seatHTML(seat, top) {
  const active = !view.finished && view.to_move === seat;
  const interactive = yourTurn() && seat === view.human_seat && view.phase === "card";
  const knownNote = view.hands[seat].cards === null && view.hands[seat].known.length
    ? `<span class="known-note">${view.hands[seat].known.length} card(s) known in this hand</span>` : "";
  const head = `<div class="seat-head"><span class="seat-name">${esc(seatName(seat))}</span>
    <span class="hint">seat ${seat}</span>
    <span class="seat-score">score <b>${view.scores[seat]}</b></span>
    ${active ? `<span class="to-move">\u25B6 to ${view.phase === "draw" ? "draw" : "play"}</span>` : ""} ${knownNote}</div>`;
  const hand = handHTML(seat, interactive);
  const exps = expeditionsHTML(seat, top);
  const inner = top ? head + hand + exps : exps + hand + head;
  return `<div class="seat ${active ? "active" : ""} ${top ? "top" : "bottom"}" id="seat-${seat}">${inner}</div>`;
}

function middleHTML() {
  const n = view.rules.n_colors;
  const { draws } = legalSets();
  const drawing = yourTurn() && view.phase === "draw";
  let piles = `<div class="piles" style="grid-template-columns: repeat(${n}, 1fr)">`;
  for (const pile of view.piles) {
    const top = pile.cards.length ? pile.cards[pile.cards.length - 1] : null;
    const can = drawing && draws.has(`pile:${pile.color}`);
    const blocked = drawing && top && !can;
    piles += `<div class="pile ${can ? "drawable" : ""} ${blocked ? "blocked" : ""}" data-color="${pile.color}"
      title="${esc(colorName(pile.color))} discard pile${blocked ? " (discarded this turn: cannot be drawn)" : ""}">
      ${top ? `<span class="card">${cardSVG(top, { w: 48, h: 69 })}</span>` :
        `<svg width="48" height="69"><rect x="2" y="2" width="44" height="65" rx="6" fill="none" stroke="${(COLORS[colorName(pile.color)] || COLORS.red).fill}" stroke-width="2" stroke-dasharray="4 3"/></svg>`}
      <span class="pile-count">${pile.cards.length ? pile.cards.length + " card" + (pile.cards.length > 1 ? "s" : "") : colorName(pile.color)}</span></div>`;
  }
  piles += "</div>";
  const deckCan = drawing && draws.has("deck");
  const deck = `<div id="deck" class="${deckCan ? "drawable" : ""}" title="the deck">${cardSVG(null, { w: 48, h: 69 })}
    <span class="deck-count" id="deck-count">${view.deck} left</span></div>`;
  return `<div class="middle">${piles}${deck}</div>`;
}

function render() {
  if (!view) return;
  $("#board-area").classList.remove("hidden");
  const bottom = view.human_seat !== null && view.human_seat !== undefined ? view.human_seat : 0;
  const top = 1 - bottom;
  $("#board").innerHTML = seatHTML(top, true) + middleHTML() + seatHTML(bottom, false);
  renderStatus();
  renderActions();
  renderMoves();
  renderFinal();
  bindBoard();
}

function renderStatus() {
  const s = $("#status");
  s.classList.remove("yours");
  if (view.finished) {
    const f = view.final;
    s.textContent = f.winner === null ? `Game over: a draw at ${f.scores[0]}` :
      `Game over: ${seatName(f.winner)} win${seatName(f.winner) === "You" ? "" : "s"} by ${f.margin} (${f.scores[0]} : ${f.scores[1]})`;
  } else if (yourTurn()) {
    s.classList.add("yours");
    s.textContent = view.phase === "card" ? "Your turn: choose a card to play or discard" : "Your turn: draw from the deck or a discard pile";
  } else if (mode === "replays") {
    s.textContent = `Step ${view.step} of ${view.steps}: ${seatName(view.to_move)} to ${view.phase === "draw" ? "draw" : "play"}`;
  } else {
    s.textContent = `${seatName(view.to_move)} to ${view.phase === "draw" ? "draw" : "play"}`;
  }
}

function renderActions() {
  const box = $("#actions");
  const show = yourTurn() && view.phase === "card";
  box.classList.toggle("hidden", !show);
  const bp = $("#btn-play"), bd = $("#btn-discard"), hint = $("#action-hint");
  bp.disabled = true; bd.disabled = true;
  if (!show) return;
  const card = (view.hands[view.human_seat].cards || []).find((c) => c.id === selected);
  if (!card) { hint.textContent = "Click a card in your hand."; bp.textContent = "Play"; bd.textContent = "Discard"; return; }
  const { plays, discards } = legalSets();
  const key = `${card.color}:${card.value}`, label = `${colorName(card.color)} ${card.value === 0 ? "wager" : card.value}`;
  bp.textContent = `Play ${label}`; bd.textContent = `Discard ${label}`;
  bp.disabled = !plays.has(key); bd.disabled = !discards.has(key);
  const reason = (view.refusals || {})[key];
  hint.textContent = plays.has(key) ? "" : `Cannot play it: ${reason || "not a legal move now"}.`;
}

function probsHTML(m) {
  if ((!m.probs && !m.values) || !$("#show-probs").checked) return "";
  const rows = (m.probs || []).map((p) => `<tr class="${p.chosen ? "chosen" : ""}"><td>${(100 * p.p).toFixed(1)}%</td>
    <td style="width:70px"><div class="bar" style="width:${Math.max(2, 70 * p.p)}px"></div></td><td>${esc(p.label)}</td></tr>`).join("");
  let html = rows ? `<table class="probs">${rows}</table>` : "";
  if (m.values && m.values.length) {  // a search's candidates, best first
    const signed = (x) => (x === null ? "-" : (x > 0 ? "+" : "") + x.toFixed(1));
    const pm = (x) => (x === null ? "" : " \u00b1" + x.toFixed(1));
    html += `<table class="probs values"><tr><th>candidate</th><th>value \u00b1 95%</th><th>vs base</th><th>prior</th></tr>` +
      m.values.map((v) => `<tr class="${v.chosen ? "chosen" : ""}"><td>${esc(v.name)}${v.base ? " (base)" : ""}</td>
        <td>${signed(v.mean)}${pm(v.ci95)}</td><td>${v.base ? "" : signed(v.diff_vs_base) + pm(v.diff_ci95)}</td>
        <td>${(100 * v.prior).toFixed(0)}%</td></tr>`).join("") + "</table>";
  }
  return html;
}

function renderMoves() {
  const ol = $("#last-moves");
  let moves = view.last_moves || [];
  if (mode === "replays") moves = [view.previous_move && { ...view.previous_move, prefix: "last" },
    view.next_move && { ...view.next_move, prefix: "next" }].filter(Boolean);
  ol.innerHTML = moves.map((m) => `<li><span class="who">${m.prefix ? m.prefix + ": " : ""}${m.seat === null ? "" : esc(seatName(m.seat)) + ":"}</span>
    ${moveText(m)}${probsHTML(m)}</li>`).join("") || `<li class="hint">no moves yet</li>`;
  const hasProbs = (view.last_moves || []).some((m) => m.probs || m.values);
  $("#show-probs").parentElement.classList.toggle("hidden", mode === "replays");
  $("#show-probs").title = hasProbs ? "" : "bots give moves, not probabilities";
}

function renderFinal() {
  const box = $("#final");
  const dl = $("#download-record"), save = $("#save-record");
  const isGame = mode !== "replays" && view.id;
  dl.classList.toggle("hidden", !isGame);
  save.classList.toggle("hidden", !(isGame && view.finished));
  if (isGame) dl.href = `/api/games/${view.id}/record`;
  save.disabled = !!view.saved_to;
  save.textContent = view.saved_to ? `Saved (${view.saved_to})` : "Save to replays";
  if (!view.finished) { box.classList.add("hidden"); return; }
  const f = view.final;
  let rows = "";
  for (let c = 0; c < view.rules.n_colors; c++) {
    rows += `<tr><td>${colorWord(c)}</td><td>${f.expedition_scores[0][c]}</td><td>${f.expedition_scores[1][c]}</td></tr>`;
  }
  rows += `<tr class="total"><td>total</td><td>${f.scores[0]}</td><td>${f.scores[1]}</td></tr>`;
  const verdict = f.winner === null ? "A draw." : `${esc(seatName(f.winner))} win${seatName(f.winner) === "You" ? "" : "s"} by ${f.margin}.`;
  box.innerHTML = `<h3>Final scoring</h3><table class="grid" id="final-table"><thead><tr><th>expedition</th>
    <th>${esc(seatName(0))}</th><th>${esc(seatName(1))}</th></tr></thead><tbody>${rows}</tbody></table>
    <p id="final-score"><b>${verdict}</b>${f.cut_off ? " (cut off by the move limit)" : ""}</p>`;
  box.classList.remove("hidden");
}

function bindBoard() {
  if (!yourTurn()) return;
  if (view.phase === "card") {
    for (const el of $$(`.hand[data-seat="${view.human_seat}"] .hand-card`)) {
      el.addEventListener("click", () => { selected = Number(el.dataset.id); render(); });
    }
  } else {
    const { draws } = legalSets();
    const deck = $("#deck");
    if (draws.has("deck")) deck.addEventListener("click", () => sendMove(draws.get("deck")));
    for (const el of $$(".pile.drawable")) el.addEventListener("click", () => sendMove(draws.get(`pile:${el.dataset.color}`)));
  }
}

async function sendMove(action) {
  if (busy || action === undefined || !yourTurn()) return;
  if (!(view.legal || []).some((a) => a.action === action)) return;  // only the server's legal moves are sent
  busy = true;
  const status = $("#status");
  const slow = setTimeout(() => { status.classList.remove("yours"); status.textContent = `${seatName(1 - view.human_seat)} is thinking\u2026`; }, 300);
  try {
    view = await api("POST", `/api/games/${view.id}/move`, { action, decision: view.decisions });
    selected = null;
    showMessage("");
  } catch (e) {
    showMessage(e.message);
    try { view = await api("GET", `/api/games/${view.id}`); } catch (e2) { /* keep the old view */ }
  } finally {
    clearTimeout(slow);
    busy = false;
    render();
  }
}

function selectedAction(type) {
  const card = (view.hands[view.human_seat].cards || []).find((c) => c.id === selected);
  if (!card) return undefined;
  const { plays, discards } = legalSets();
  return (type === "play" ? plays : discards).get(`${card.color}:${card.value}`);
}

// Setup ----------------------------------------------------------------------------------------
function playerOptions(select, preferred) {
  const opts = info.bots.map((b) => `<option value="${esc(b)}">${esc(b)}</option>`);
  for (const c of info.checkpoints) {
    opts.push(`<option value="${esc(c.spec)}">${esc(c.label)} (average)</option>`);
    opts.push(`<option value="${esc(c.spec)}@current">${esc(c.label)} (current)</option>`);
    opts.push(`<option value="search:${esc(c.spec)}">${esc(c.label)} (search over average)</option>`);
  }
  select.innerHTML = opts.join("");
  if (preferred && [...select.options].some((o) => o.value === preferred)) select.value = preferred;
}

function seedOf(input) { return input.value === "" ? null : Number(input.value); }

async function newGame() {
  stopWatch();
  const spec = $("#play-opponent-spec").value.trim() || $("#play-opponent").value;
  const variant = $("#play-variant").value || null;
  showMessage(`Starting a game against ${spec}\u2026`, "info");
  try {
    view = await api("POST", "/api/games", { opponent: spec, seat: Number($("#play-seat").value), seed: seedOf($("#play-seed")), variant });
    selected = null;
    location.hash = `game=${view.id}`;
    showMessage(`New game against ${view.players[1 - view.human_seat].name}, deal seed ${view.seed}.`, "info");
    render();
  } catch (e) { showMessage(e.message); }
}

function stopWatch() { if (watchTimer) clearTimeout(watchTimer); watchTimer = null; }

async function watchStep() {
  if (!view || view.finished || mode !== "watch") return;
  try { view = await api("POST", `/api/games/${view.id}/step`); render(); }
  catch (e) { showMessage(e.message); watchPaused = true; }
  if (view.finished) { $("#watch-pause").disabled = true; $("#watch-step").disabled = true; return; }
  if (!watchPaused) watchTimer = setTimeout(watchStep, Number($("#watch-speed").value));
}

async function startWatch() {
  stopWatch();
  try {
    view = await api("POST", "/api/watch", { players: [$("#watch-a").value, $("#watch-b").value], seed: seedOf($("#watch-seed")),
      variant: $("#watch-variant").value || null });
    location.hash = `game=${view.id}`;
    watchPaused = false;
    $("#watch-pause").disabled = false; $("#watch-pause").textContent = "Pause"; $("#watch-step").disabled = false;
    showMessage("");
    render();
    watchTimer = setTimeout(watchStep, Number($("#watch-speed").value));
  } catch (e) { showMessage(e.message); }
}

// Replays ----------------------------------------------------------------------------------------
async function loadReplayFiles() {
  try {
    const data = await api("GET", "/api/replays");
    const sel = $("#replay-file");
    sel.innerHTML = data.files.map((f) => `<option value="${esc(f.file)}">${esc(f.file)}</option>`).join("");
    if (!data.files.length) { showMessage(`No recorded games (.jsonl) under ${info.replays}.`, "info"); return; }
    if (replay.file && data.files.some((f) => f.file === replay.file)) sel.value = replay.file;
    await loadReplayGames();
  } catch (e) { showMessage(e.message); }
}

async function loadReplayGames() {
  replay.file = $("#replay-file").value;
  try {
    const data = await api("GET", `/api/replays/games?file=${encodeURIComponent(replay.file)}`);
    $("#replay-game").innerHTML = data.games.map((g) => {
      const r = g.result, s = r.scores ? ` (${r.scores[0]} : ${r.scores[1]})` : "";
      return `<option value="${g.game}">#${g.game} ${esc(g.players[0])} v ${esc(g.players[1])}${s}</option>`;
    }).join("");
    showMessage("");
    await loadReplayState(0);
  } catch (e) { showMessage(e.message); }
}

async function loadReplayState(step) {
  replay.game = Number($("#replay-game").value || 0);
  try {
    view = await api("GET", `/api/replays/state?file=${encodeURIComponent(replay.file)}&game=${replay.game}&step=${step}`);
    replay.step = view.step; replay.steps = view.steps;
    $("#replay-slider").max = view.steps; $("#replay-slider").value = view.step;
    $("#replay-pos").textContent = `${view.step} / ${view.steps}`;
    render();
  } catch (e) { showMessage(e.message); }
}

function replayGo(step) { if (replay.file) loadReplayState(Math.max(0, Math.min(replay.steps, step))); }

// Runs --------------------------------------------------------------------------------------------
function fmt(v, digits = 3) { return v === null || v === undefined ? "-" : typeof v === "number" ? Number(v.toPrecision(digits)).toString() : esc(v); }

async function loadRuns() {
  try {
    const data = await api("GET", "/api/runs");
    $("#runs-root").textContent = `under ${info.runs}`;
    const tbody = $("#runs-table tbody");
    tbody.innerHTML = data.runs.map((r) => `<tr data-run="${esc(r.run)}" class="${r.run === openRun ? "selected" : ""}">
      <td>${esc(r.run)}</td><td>${esc(r.game || "?")}${r.variant ? " / " + esc(r.variant) : ""}</td>
      <td>${r.running ? '<span class="running">running</span>' : "stopped"}</td>
      <td>${r.modified ? new Date(r.modified * 1000).toLocaleString() : "-"}</td><td>${r.checkpoints.length}</td></tr>`).join("")
      || `<tr><td colspan="5">No run directories under ${esc(info.runs)}.</td></tr>`;
    for (const tr of $$("#runs-table tbody tr[data-run]")) tr.addEventListener("click", () => { openRun = tr.dataset.run; loadRuns(); loadReport(); });
  } catch (e) { showMessage(e.message); }
}

async function loadReport() {
  if (!openRun) return;
  const box = $("#run-report");
  try {
    const r = await api("GET", `/api/runs/report?run=${encodeURIComponent(openRun)}`);
    let evalHTML = "<p>No evaluation logged yet.</p>";
    if (r.evaluation) {
      const ev = r.evaluation;
      let rows = ev.matches.map((m) => `<tr><td>${esc(m.opponent)}</td><td>${esc(m.policy)}</td><td>${m.win_rate === null ? "-" : (100 * m.win_rate).toFixed(1) + "%"}</td>
        <td>${fmt(m.mean_score_diff)}</td><td>${m.score_diff_ci95 === null ? "-" : "\u00b1" + fmt(m.score_diff_ci95)}</td></tr>`).join("");
      rows += Object.entries(ev.exploitability).map(([k, v]) => `<tr><td>exploitability</td><td>${esc(k)}</td><td colspan="3">${fmt(v, 4)}</td></tr>`).join("");
      evalHTML = `<p>Latest evaluation: iteration ${ev.iteration}</p><table class="grid" id="eval-table"><thead><tr><th>opponent</th><th>policy</th>
        <th>win rate</th><th>mean score diff</th><th>95% CI</th></tr></thead><tbody>${rows}</tbody></table>`;
    }
    const cks = r.checkpoints.map((c) => `<li>${esc(c)} <button class="play-ck" data-spec="${esc(c)}">Play it</button></li>`).join("");
    const plots = r.plots.map((p) => `<img alt="${esc(p)}" src="/api/runs/plot?run=${encodeURIComponent(r.run)}&name=${encodeURIComponent(p)}&v=${r.drawn_from}">`).join("");
    box.innerHTML = `<h3>${esc(r.run)}: ${r.iterations} iteration(s) logged${r.still_writing ? " (still writing)" : ""}</h3>
      ${evalHTML}<h3>Checkpoints</h3><ul>${cks || "<li>none yet</li>"}</ul><h3>Plots</h3><div class="plots">${plots || "none yet"}</div>`;
    for (const b of $$(".play-ck")) b.addEventListener("click", () => { switchTab("play"); $("#play-opponent-spec").value = b.dataset.spec; });
  } catch (e) { box.innerHTML = `<p>${esc(e.message)}</p>`; }
}

// Tabs and start-up -------------------------------------------------------------------------------
function switchTab(tab) {
  mode = tab;
  for (const b of $$(".tab")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of $$(".setup")) s.classList.toggle("hidden", s.dataset.for !== tab);
  $("#runs-view").classList.toggle("hidden", tab !== "runs");
  showMessage("");
  if (tab !== "watch") stopWatch();
  if (runsTimer) clearInterval(runsTimer);
  view = null; selected = null;
  $("#board-area").classList.add("hidden");
  if (tab === "replays") loadReplayFiles();
  if (tab === "runs") { loadRuns(); loadReport(); runsTimer = setInterval(() => { loadRuns(); loadReport(); }, 20000); }
}

async function start() {
  info = await api("GET", "/api/info");
  for (const sel of $$(".player-select")) playerOptions(sel);
  playerOptions($("#play-opponent"), "heuristic_careful");
  playerOptions($("#watch-a"), "heuristic_careful");
  playerOptions($("#watch-b"), "heuristic_balanced");
  for (const sel of $$(".variant-select")) {
    sel.innerHTML = `<option value="">${info.checkpoints.length ? "the agent's own / classic" : "classic"}</option>` +
      info.variants.filter((v) => v !== "classic").map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join("");
  }
  for (const b of $$(".tab")) b.addEventListener("click", () => switchTab(b.dataset.tab));
  $("#new-game").addEventListener("click", newGame);
  $("#btn-play").addEventListener("click", () => sendMove(selectedAction("play")));
  $("#btn-discard").addEventListener("click", () => sendMove(selectedAction("discard")));
  $("#show-probs").addEventListener("change", () => view && renderMoves());
  $("#save-record").addEventListener("click", async () => {
    try { const r = await api("POST", `/api/games/${view.id}/save`); view.saved_to = r.saved_to; renderFinal();
      showMessage(`Saved in ${r.saved_to} under ${r.replays}: open it in Replays.`, "info"); } catch (e) { showMessage(e.message); }
  });
  $("#watch-start").addEventListener("click", startWatch);
  $("#watch-pause").addEventListener("click", () => {
    watchPaused = !watchPaused;
    $("#watch-pause").textContent = watchPaused ? "Resume" : "Pause";
    if (!watchPaused) watchStep(); else stopWatch();
  });
  $("#watch-step").addEventListener("click", () => { watchPaused = true; $("#watch-pause").textContent = "Resume"; stopWatch(); watchStep(); });
  $("#watch-speed").addEventListener("input", () => { $("#watch-speed-label").textContent = `${$("#watch-speed").value} ms`; });
  $("#replay-file").addEventListener("change", loadReplayGames);
  $("#replay-game").addEventListener("change", () => loadReplayState(0));
  $("#replay-slider").addEventListener("change", () => replayGo(Number($("#replay-slider").value)));
  $("#replay-first").addEventListener("click", () => replayGo(0));
  $("#replay-prev").addEventListener("click", () => replayGo(replay.step - 1));
  $("#replay-next").addEventListener("click", () => replayGo(replay.step + 1));
  $("#replay-last").addEventListener("click", () => replayGo(replay.steps));
  $("#runs-refresh").addEventListener("click", () => { loadRuns(); loadReport(); });
  document.addEventListener("keydown", (e) => {
    if (mode !== "replays" || e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === "ArrowLeft") replayGo(replay.step - 1);
    if (e.key === "ArrowRight") replayGo(replay.step + 1);
    if (e.key === "Home") replayGo(0);
    if (e.key === "End") replayGo(replay.steps);
  });
  const m = location.hash.match(/game=([\w-]+)/);  // a reload keeps its game
  if (m) {
    try {
      view = await api("GET", `/api/games/${m[1]}`);
      if (view.mode === "watch") { switchTab("watch"); view = await api("GET", `/api/games/${m[1]}`); watchPaused = true;
        $("#watch-pause").disabled = false; $("#watch-pause").textContent = "Resume"; $("#watch-step").disabled = false; }
      render();
    } catch (e) { showMessage(e.message); }
  }
}

start().catch((e) => showMessage(`The page could not start: ${e.message}`));
