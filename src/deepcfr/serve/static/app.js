// deepcfr serve: the page is a view. Every state comes from the server's reference engine;
// the page only draws it and sends the moves the server listed as legal.
//
// A turn is two gestures: a card of your hand onto its colour's row (your side: play it; the
// pile in the middle: discard it), by drag or by two clicks, then the deck or a pile. Keys do the
// same (1-8 / arrows, P, X, Esc; Space, 1-5). Each tab keeps its own game or replay, and the URL's
// hash names it (#play/game=ID, #watch/game=ID, #replays/file=F&game=G&step=S, #runs/run=R), so
// switching tabs, Back and Forward and reloads all come back to the same board.
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
const CUSTOM = "__custom__";
// A touch screen with no mouse (a phone, a tablet) has no keyboard to hint at: its hints say "tap"
// and name no keys (style.css hides the key hints for the same media query).
const TOUCH_ONLY = typeof matchMedia === "function" && matchMedia("(hover: none) and (pointer: coarse)").matches;
const keysHint = (text) => (TOUCH_ONLY ? "" : text);
const CLICK = TOUCH_ONLY ? "Tap" : "Click";

const $ = (sel) => document.querySelector(sel);
const $$ = (sel) => Array.from(document.querySelectorAll(sel));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

let info = null;        // /api/info
let mode = "play";      // the open tab
const kept = { play: null, watch: null, replays: null };  // each tab's board, kept across tab switches
let view = null;        // the open tab's board (kept[mode])
let selected = null;    // id of the selected hand card
let busy = false;       // a move is on its way
let watchTimer = null, watchPaused = false;
let replay = { file: null, game: 0, step: 0, steps: 0, target: 0, loading: false };
let runsTimer = null, openRun = null;
let drag = null;        // a hand card being dragged
let tapped = 0;         // when a touch last acted on a target (its click, if one follows, is not a second move)
let fullMoves = null;   // {id, moves}: a finished game's moves with the agents' probabilities

function setView(v) { view = v; if (mode in kept) kept[mode] = v; }

async function api(method, url, body) {
  // the static site (deepcfr build-web) answers in the page itself: no server behind it
  if (window.deepcfrOffline) return window.deepcfrOffline.api(method, url, body);
  const opts = { method, headers: {} };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  let r;
  try { r = await fetch(url, opts); } catch (e) { const err = new Error("the server does not answer (stopped?)"); err.status = 0; throw err; }
  let data = null;
  try { data = await r.json(); } catch (e) { data = { error: r.statusText }; }
  if (!r.ok) { const err = new Error((data && data.error) || `${r.status} ${r.statusText}`); err.status = r.status; throw err; }
  return data;
}

function showMessage(text, kind) {
  const m = $("#message");
  if (!text) { m.classList.add("hidden"); return; }
  m.textContent = text;
  // a list of the spec forms keeps its columns
  m.className = "message" + (kind === "info" ? " info" : "") + (/valid player specs:/.test(text) ? " forms" : "");
}

// Cards ------------------------------------------------------------------------------------
function colorName(i) { return (view && view.rules.colors[i]) || "red"; }
function colorOf(i) { return COLORS[colorName(i)] || COLORS.red; }
function cardName(c) { return `${colorName(c.color)} ${c.value === 0 ? "wager" : c.value}`; }

function cardSVG(card, opts = {}) {
  if (!card) {  // the back of a card
    return `<svg viewBox="0 0 ${CARD_W} ${CARD_H}" aria-label="hidden card">
      <rect x="1.5" y="1.5" width="${CARD_W - 3}" height="${CARD_H - 3}" rx="7" fill="#2a3f7a" stroke="#dfe6ff" stroke-width="2"/>
      <text x="${CARD_W / 2}" y="${CARD_H / 2 + 6}" text-anchor="middle" font-size="16" font-weight="bold" fill="#dfe6ff">LC</text></svg>`;
  }
  const name = colorName(card.color), c = COLORS[name] || COLORS.red;
  const big = card.value === 0 ? "W" : String(card.value);
  // the small words are 16 units: 11 px on a phone's card (39.8 px wide at 390 px), none smaller
  const known = opts.known ? `<rect x="2" y="${CARD_H - 21}" width="${CARD_W - 4}" height="17" rx="3" fill="#111" opacity="0.85"/>
      <text x="${CARD_W / 2}" y="${CARD_H - 8}" text-anchor="middle" font-size="16" fill="#ffcf33">known</text>` : "";
  return `<svg viewBox="0 0 ${CARD_W} ${CARD_H}" aria-label="${esc(cardName(card))}">
    <rect class="face" x="1.5" y="1.5" width="${CARD_W - 3}" height="${CARD_H - 3}" rx="7" fill="${c.fill}" stroke="#111" stroke-width="1.5"/>
    <circle cx="${CARD_W / 2}" cy="${CARD_H / 2 + 2}" r="19" fill="#ffffff" opacity="${c.ink === "#ffffff" ? 0.95 : 0.75}" stroke="#111" stroke-width="1"/>
    <text x="${CARD_W / 2}" y="${CARD_H / 2 + 10}" text-anchor="middle" font-size="${big.length > 1 ? 20 : 24}" font-weight="bold" fill="#111">${big}</text>
    <text x="5" y="17" font-size="16" font-weight="bold" fill="${c.ink}" ${big.length > 1 ? 'letter-spacing="-1"' : ""}>${big}</text>
    <text x="${CARD_W - 5}" y="17" text-anchor="end" font-size="16" fill="${c.ink}">${c.mark}</text>
    ${card.value === 0 ? `<text x="${CARD_W / 2}" y="${CARD_H - 5}" text-anchor="middle" font-size="16" fill="${c.ink}">wager</text>` : ""}
    ${known}</svg>`;
}

function chipHTML(card, cls = "") {
  const c = colorOf(card.color);
  if (card.value >= 10) cls += " ten";
  if (card.value === 0) cls += " wager";
  return `<span class="chip ${cls}" style="background:${c.fill};color:${c.ink}" data-id="${card.id}" title="${esc(cardName(card))}">${card.value === 0 ? "W" : card.value}</span>`;
}

function colorWord(i) {
  const c = colorOf(i);
  return `<span class="color-word" style="background:${c.fill};color:${c.ink}">${esc(colorName(i))}</span>`;
}

function moveText(m) {
  if (!m) return "";
  if (m.type === "play" || m.type === "discard") return `${m.type === "play" ? "played" : "discarded"} ${colorWord(m.color)} ${m.card_label === "W" ? "wager" : esc(m.card_label)}`;
  if (m.type === "draw_pile") return `drew from the ${colorWord(m.color)} pile`;
  return "drew from the deck";
}

// What the board knows ----------------------------------------------------------------------
function seatName(seat) {
  const p = view.players[seat];
  return p.human ? "You" : playerName(p.name);
}

// One name per player on the page: a player the server offers under a label (the champion's,
// "champion with search (strongest measured)") is called by that label without its note, wherever
// it shows (the list, the board, the moves, the result); its spec ("search:champion") only in a tooltip.
function playerName(spec) {
  const offered = ((info && info.champions) || []).find((c) => c.spec === spec);
  return offered ? offered.label.replace(/\s*\([^()]*\)$/, "") : spec;
}
function specTitle(seat) {
  const p = view.players[seat];
  return !p.human && playerName(p.name) !== p.name ? p.name : "";
}

function wins(seat) { return seatName(seat) === "You" ? "win" : "wins"; }

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

function yourTurn() { return mode === "play" && view && !view.dead && !view.finished && view.to_move === view.human_seat; }
function bottomSeat() { return view.human_seat !== null && view.human_seat !== undefined ? view.human_seat : 0; }
function handCards(seat) { return view.hands[seat].cards || []; }
function selectedCard() { return selected === null ? null : handCards(view.human_seat).find((c) => c.id === selected) || null; }

// The last turn of `seat` (its card move and its draw), from the game's move list.
function lastTurn(seat) {
  const moves = view.moves || [];
  let i = moves.length - 1;
  while (i >= 0 && moves[i].seat !== seat) i--;
  const out = [];
  while (i >= 0 && moves[i].seat === seat && out.length < 2) { out.unshift(moves[i]); i--; }
  return out;
}

function highlightedTurn() {
  if (!view.moves || !view.moves.length) return { seat: null, moves: [] };
  const seat = mode === "play" && view.human_seat !== null ? 1 - view.human_seat : view.moves[view.moves.length - 1].seat;
  return { seat, moves: lastTurn(seat) };
}

// The board -----------------------------------------------------------------------------------
function expInfo(e, seat) {
  const rules = view.rules;
  if (!e.cards.length) return `<span class="exp-info" title="not opened: scores 0"><span class="exp-score none">0</span></span>`;
  const sum = e.cards.reduce((s, c) => s + c.value, 0);
  const mult = e.wagers + 1;
  const cls = e.score < 0 ? "neg" : "pos";
  const n = e.cards.length, th = rules.bonus_threshold;
  const explain = `(${sum} ${rules.expedition_cost < 0 ? "-" : "+"} ${Math.abs(rules.expedition_cost)}) x ${mult}${n >= th ? ` + ${rules.bonus}` : ""} = ${e.score}; ` +
    `${n} of ${th} cards for the +${rules.bonus} bonus`;
  return `<span class="exp-info" title="${esc(explain)}" data-seat="${seat}" data-color="${e.color}">
    <span class="exp-score ${cls}">${e.score > 0 ? "+" : ""}${e.score}</span>
    <span>${mult > 1 ? `<span class="exp-mult">x${mult}</span> ` : ""}<span class="exp-bonus">${n >= th ? `+${rules.bonus}` : `${n}/${th}`}</span></span></span>`;
}

function lanesHTML(top, bottom) {
  const { plays, discards, draws } = legalSets();
  const card = yourTurn() && view.phase === "card" ? selectedCard() : null;
  const drawing = yourTurn() && view.phase === "draw";
  const hl = highlightedTurn();
  const cardMove = hl.moves.find((m) => m.type === "play" || m.type === "discard");
  const drawMove = hl.moves.find((m) => m.type === "draw_pile" || m.type === "draw_deck");
  const whose = (seat) => (seatName(seat) === "You" ? "Your" : `${esc(seatName(seat))}'s`);
  // which side of a row is whose, said once above the rows
  let html = `<div class="lanes"><div class="lane heads" aria-hidden="true"><span class="head-opp">${whose(top)} expeditions</span>
    <span class="head-pile">piles</span><span class="head-mine">${whose(bottom)} expeditions</span></div>`;
  for (let c = 0; c < view.rules.n_colors; c++) {
    const et = view.expeditions[top][c], eb = view.expeditions[bottom][c], pile = view.piles[c];
    const key = card ? `${card.color}:${card.value}` : null;
    const playHere = card && card.color === c && plays.has(key);
    const discardHere = card && card.color === c && discards.has(key);
    const drawHere = drawing && draws.has(`pile:${c}`);
    const chips = (e, seat) => e.cards.map((x, i) => chipHTML(x, cardMove && cardMove.type === "play" && cardMove.seat === seat &&
      cardMove.color === c && i === e.cards.length - 1 ? "last-move" : "")).join("");
    const pileTop = pile.cards.length ? pile.cards[pile.cards.length - 1] : null;
    const pileCls = ["pile"];
    if (discardHere) pileCls.push("target", "discard-target");
    if (drawHere) pileCls.push("target");
    if (drawing && pileTop && !drawHere) pileCls.push("blocked");
    if (cardMove && cardMove.type === "discard" && cardMove.color === c) pileCls.push("last-move");
    if (drawMove && drawMove.type === "draw_pile" && drawMove.color === c) pileCls.push("last-draw");
    const pileAction = discardHere ? discards.get(key) : drawHere ? draws.get(`pile:${c}`) : "";
    const pileTitle = `${colorName(c)} discard pile, ${pile.cards.length} card(s)` + (discardHere ? ": discard here" : drawHere ? ": draw its top card" : "");
    html += `<div class="lane" style="--lane:${colorOf(c).fill}" data-color="${c}">
      <div class="exp opp" data-seat="${top}" data-color="${c}">${`<span class="chips">${chips(et, top)}</span>`}${expInfo(et, top)}</div>
      <div class="${pileCls.join(" ")}" data-color="${c}" data-key="pile:${c}" ${pileAction !== "" ? `data-action="${pileAction}" tabindex="0" role="button"` : ""}
        title="${esc(pileTitle)}" aria-label="${esc(pileTitle)}">${pileTop ? chipHTML(pileTop) : ""}<span class="pile-count">${pile.cards.length || ""}</span></div>
      <div class="exp mine${playHere ? " target" : ""}" data-seat="${bottom}" data-color="${c}" data-key="exp:${c}"
        ${playHere ? `data-action="${plays.get(key)}" tabindex="0" role="button" aria-label="play ${esc(cardName(card))} here"` : ""}>
        <span class="chips">${chips(eb, bottom)}</span>${expInfo(eb, bottom)}</div></div>`;
  }
  return html + "</div>";
}

function middleHTML() {
  const { draws } = legalSets();
  const deckCan = yourTurn() && view.phase === "draw" && draws.has("deck");
  const hl = highlightedTurn();
  const drewDeck = hl.moves.some((m) => m.type === "draw_deck");
  const last = hl.moves.length ? `<span class="last-text" id="last-turn">${esc(seatName(hl.seat))} ${hl.moves.map(moveText).join(", ")}</span>` : "";
  const r = view.rules;
  // what "x2 6/8" beside an expedition means, in words a phone shows too (it has no hover)
  const legend = `<span class="legend hint" id="exp-legend">x2: wagers multiply the score; ${Math.min(6, r.bonus_threshold - 1)}/${r.bonus_threshold}: cards, ${r.bonus_threshold} earn +${r.bonus}</span>`;
  return `<div class="middle-row">${last}<div id="deck" class="${deckCan ? "target" : ""}${drewDeck ? " last-draw" : ""}" data-key="deck"
    ${deckCan ? `data-action="${draws.get("deck")}" tabindex="0" role="button"` : ""} title="the deck" aria-label="the deck, ${view.deck} cards left">
    <span class="deck-card"></span><span class="deck-count" id="deck-count">${view.deck} left</span></div>${legend}</div>`;
}

function oppBarHTML(top) {
  const active = !view.finished && !view.dead && view.to_move === top;
  const hand = view.hands[top];
  let cards = "";
  if (hand.cards === null) {
    cards = hand.known.map((k) => chipHTML(k, "known")).join("") + `<span class="back-chip"></span>`.repeat(Math.max(0, hand.count - hand.known.length));
  } else {
    cards = hand.cards.map((k) => chipHTML(k)).join("");
  }
  const note = hand.cards === null && hand.known.length ? `<span class="hint">${hand.known.length} known</span>` : "";
  return `<div class="opp-bar ${active ? "active" : ""} seat top" id="seat-${top}"><span class="seat-name" title="${esc(specTitle(top))}">${esc(seatName(top))}</span>
    <span class="seat-score">score <b>${view.scores[top]}</b></span>
    ${active ? `<span class="to-move">\u25B6 to ${view.phase === "draw" ? "draw" : "play"}</span>` : ""}
    <span class="opp-hand" data-seat="${top}">${cards}</span>${note}</div>`;
}

function handAreaHTML(bottom) {
  const hand = view.hands[bottom];
  const active = !view.finished && !view.dead && view.to_move === bottom;
  const interactive = yourTurn() && bottom === view.human_seat && view.phase === "card";
  const knownIds = new Set(hand.known_ids);
  const { plays } = legalSets();
  const head = `<div class="hand-head"><span class="seat-name" title="${esc(specTitle(bottom))}">${esc(seatName(bottom))}</span>
    <span class="seat-score">score <b>${view.scores[bottom]}</b></span>
    ${active ? `<span class="to-move">\u25B6 to ${view.phase === "draw" ? "draw" : "play"}</span>` : ""}</div>`;
  if (hand.cards === null) return head + `<div class="hand" data-seat="${bottom}">${"<span class='back-chip'></span>".repeat(hand.count)}</div>`;
  const groups = new Map();
  for (const c of hand.cards) { if (!groups.has(c.color)) groups.set(c.color, []); groups.get(c.color).push(c); }
  let html = "", index = 0;
  for (const [, cards] of groups) {
    html += `<div class="group">`;
    for (const c of cards) {
      index++;
      const cls = ["card", "hand-card"];
      const key = `${c.color}:${c.value}`;
      if (!interactive) cls.push("inert");
      if (selected === c.id) cls.push("selected");
      const reason = (view.refusals || {})[key];
      if (interactive && !plays.has(key)) cls.push("unplayable");
      const title = `${cardName(c)}${interactive ? ` (${index})` : ""}${reason ? `: cannot be played (${reason})` : ""}`;
      html += `<span class="${cls.join(" ")}" data-id="${c.id}" data-color="${c.color}" data-value="${c.value}" data-key="card:${c.id}"
        ${interactive ? `tabindex="0" role="button" aria-pressed="${selected === c.id}"` : ""} title="${esc(title)}">${cardSVG(c, { known: knownIds.has(c.id) })}</span>`;
    }
    html += `</div>`;
  }
  return head + `<div class="hand" data-seat="${bottom}">${html || '<span class="hint">(empty)</span>'}</div>`;
}

function render() {
  const area = $("#board-area");
  $("#game-bar").classList.toggle("hidden", mode !== "play");
  if (!view || mode === "runs") { area.classList.add("hidden"); return; }
  area.classList.remove("hidden");
  const focusKey = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  const bottom = bottomSeat(), top = 1 - bottom;
  if (selected !== null && !(yourTurn() && view.phase === "card" && selectedCard())) selected = null;
  $("#board").innerHTML = oppBarHTML(top) + lanesHTML(top, bottom) + middleHTML();
  $("#board").classList.toggle("dead", !!view.dead);
  const handArea = $("#hand-area");
  handArea.innerHTML = handAreaHTML(bottom);
  handArea.classList.toggle("active", !view.finished && !view.dead && view.to_move === bottom);
  handArea.classList.toggle("dead", !!view.dead);
  handArea.classList.toggle("seat", true);
  handArea.classList.toggle("bottom", true);
  renderStatus();
  renderActions();
  renderMoves();
  renderFinal();
  renderRules();
  if (focusKey) { const el = document.querySelector(`[data-key="${focusKey}"][tabindex]`); if (el) el.focus(); }
}

function renderStatus() {
  const s = $("#status");
  s.className = "status";
  if (view.dead) {
    s.classList.add("dead");
    s.textContent = "This game is gone: the server was restarted (or dropped it). Start a new game.";
  } else if (view.finished) {
    const f = view.final;
    s.textContent = f.winner === null ? `Game over: a draw at ${f.scores[0]}` :
      `Game over: ${seatName(f.winner)} ${wins(f.winner)} by ${f.margin} (${f.scores[0]} : ${f.scores[1]})`;
  } else if (yourTurn()) {
    s.classList.add("yours");
    const card = selectedCard();
    s.textContent = view.phase === "card" ? (card ? `Your turn: where does the ${cardName(card)} go?` : "Your turn: pick a card to play or discard")
      : "Your turn: draw from the deck or a discard pile";
  } else if (mode === "replays") {
    s.textContent = `Step ${view.step} of ${view.steps}: ${seatName(view.to_move)} to ${view.phase === "draw" ? "draw" : "play"}`;
  } else {
    s.textContent = `${seatName(view.to_move)} to ${view.phase === "draw" ? "draw" : "play"}`;
  }
}

function renderActions() {
  const bp = $("#btn-play"), bd = $("#btn-discard"), deck = $("#btn-deck"), hint = $("#action-hint");
  bp.disabled = true; bd.disabled = true;
  const cardPhase = yourTurn() && view.phase === "card", drawPhase = yourTurn() && view.phase === "draw";
  bp.classList.toggle("hidden", !cardPhase); bd.classList.toggle("hidden", !cardPhase);
  const { plays, discards, draws } = legalSets();
  deck.classList.toggle("hidden", !drawPhase);
  $("#btn-scoring").classList.toggle("hidden", !view.finished);
  deck.disabled = !(drawPhase && draws.has("deck"));
  bp.textContent = "Play"; bd.textContent = "Discard";
  if (drawPhase) { hint.textContent = `${CLICK} the deck or a highlighted pile${keysHint(" (Space: the deck; 1-5: a pile)")}.`; return; }
  if (!cardPhase) { hint.textContent = view.dead || view.finished || mode !== "play" ? "" : "The opponent is thinking\u2026"; return; }
  const card = selectedCard();
  if (!card) { hint.textContent = `${CLICK} or drag a card of your hand${keysHint(" (keys 1-8)")}.`; return; }
  const key = `${card.color}:${card.value}`, label = cardName(card);
  bp.textContent = `Play ${label}`; bd.textContent = `Discard ${label}`;
  bp.disabled = !plays.has(key); bd.disabled = !discards.has(key);
  const reason = (view.refusals || {})[key];
  hint.textContent = plays.has(key) ? `Now ${CLICK.toLowerCase()} its row: your side plays it, the pile in the middle discards it (${TOUCH_ONLY ? "tap the card again" : "Esc"}: put it back).`
    : `Cannot play it: ${reason || "not a legal move now"}. Its pile discards it.`;
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
  const ol = $("#move-list");
  const moves = view.moves || [];
  const extra = new Map();  // n -> the move with its probabilities
  for (const m of view.last_moves || []) extra.set(m.n, m);
  if (fullMoves && fullMoves.id === view.id) for (const m of fullMoves.moves) extra.set(m.n, m);
  const turns = [];
  for (const m of moves) {
    const last = turns[turns.length - 1];
    if (last && last.seat === m.seat && last.moves.length < 2 && m.type.startsWith("draw")) last.moves.push(m);
    else turns.push({ seat: m.seat, moves: [m] });
  }
  const mine = mode === "play" ? view.human_seat : null;
  ol.innerHTML = turns.map((t) => `<li class="${t.seat === mine ? "mine" : "theirs"}"><span class="who">${esc(seatName(t.seat))}:</span>
    ${t.moves.map(moveText).join(", ")}${t.moves.map((m) => probsHTML(extra.get(m.n) || m)).join("")}</li>`).join("")
    || `<li class="hint">no moves yet</li>`;
  ol.scrollTop = ol.scrollHeight;
  if (mode === "replays" && view.next_move) ol.insertAdjacentHTML("beforeend", `<li class="hint">next: ${esc(seatName(view.next_move.seat))} ${moveText(view.next_move)}</li>`);
  const canHave = mode !== "replays";
  $("#show-probs-label").classList.toggle("hidden", !canHave);
  $("#show-probs-label").title = mode === "play" && !view.finished ? "the opponent's probabilities and search values are shown when the game is over (they name its cards)" : "";
  if (canHave && view.finished && mode === "play" && $("#show-probs").checked && !(fullMoves && fullMoves.id === view.id)) {
    const id = view.id;
    api("GET", `/api/games/${id}/moves`).then((r) => { fullMoves = { id, moves: r.moves }; if (view && view.id === id) renderMoves(); }).catch(() => {});
  }
}

function breakdownHTML(seat) {
  const rules = view.rules, cost = rules.expedition_cost;
  let rows = "";
  for (const e of view.expeditions[seat]) {
    const n = e.cards.length;
    if (!n) { rows += `<tr><td>${colorWord(e.color)}</td><td>0</td><td>-</td><td>-</td><td>-</td><td>0</td></tr>`; continue; }
    const sum = e.cards.reduce((s, c) => s + c.value, 0);
    const bonus = n >= rules.bonus_threshold ? `+${rules.bonus}` : "-";
    rows += `<tr><td>${colorWord(e.color)}</td><td>${n}</td><td>${sum} ${cost < 0 ? "\u2212" : "+"} ${Math.abs(cost)}</td>
      <td>x${e.wagers + 1}</td><td>${bonus}</td><td><b>${e.score}</b></td></tr>`;
  }
  rows += `<tr class="total"><td>total</td><td></td><td></td><td></td><td></td><td>${view.final.scores[seat]}</td></tr>`;
  return `<h4>${esc(seatName(seat))}</h4><div class="table-wrap"><table class="grid final-table" data-seat="${seat}"><thead><tr><th>colour</th><th title="cards">n</th>
    <th>sum ${cost < 0 ? "\u2212" : "+"} ${Math.abs(cost)}</th><th title="x (1 + wagers)">x</th><th>bonus</th><th>score</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function renderFinal() {
  const box = $("#final");
  const dl = $("#download-record"), save = $("#save-record");
  const isGame = mode !== "replays" && view.id && !view.dead;
  const open = isGame && (view.finished || view.human_seat === null);  // a played game's record holds the deal: at the end
  dl.classList.toggle("hidden", !open);
  save.classList.toggle("hidden", !(isGame && view.finished));
  if (isGame) dl.href = window.deepcfrOffline ? window.deepcfrOffline.recordURL(view.id) : `/api/games/${view.id}/record`;
  if (window.deepcfrOffline) { dl.download = `lost_cities-${view.id}.jsonl`; save.classList.add("hidden"); }
  save.disabled = !!view.saved_to;
  save.textContent = view.saved_to ? `Saved (${view.saved_to})` : "Save to replays";
  if (!view.finished) { box.classList.add("hidden"); return; }
  const f = view.final;
  const verdict = f.winner === null ? "A draw." : `${esc(seatName(f.winner))} ${wins(f.winner)} by ${f.margin}.`;
  const seed = view.seed !== null && view.seed !== undefined ? ` Deal seed ${view.seed}.` : "";
  box.innerHTML = `<h3>Final scoring</h3><p id="final-score"><b>${verdict}</b>${f.cut_off ? " (cut off by the move limit)" : ""}${seed}</p>
    ${breakdownHTML(bottomSeat())}${breakdownHTML(1 - bottomSeat())}
    <p class="hint">Per expedition: (sum of the cards ${view.rules.expedition_cost}) x (1 + wagers), + ${view.rules.bonus} with ${view.rules.bonus_threshold} or more cards.</p>`;
  box.classList.remove("hidden");
}

function renderRules() {
  const r = view ? view.rules : { expedition_cost: -20, bonus: 20, bonus_threshold: 8 };
  for (const el of $$(".rule-cost")) el.textContent = `${r.expedition_cost < 0 ? "-" : "+"} ${Math.abs(r.expedition_cost)}`;
  for (const el of $$(".rule-cost2")) el.textContent = String(Math.abs(r.expedition_cost));
  for (const el of $$(".rule-bonus")) el.textContent = String(r.bonus);
  for (const el of $$(".rule-threshold")) el.textContent = String(r.bonus_threshold);
}

// Moves: clicks, drags and keys ----------------------------------------------------------------
function toggleSelect(id) {
  if (!(yourTurn() && view.phase === "card")) return;
  selected = selected === id ? null : id;
  render();
}

function activate(el) {
  if (!el || el.dataset.action === undefined || el.dataset.action === "") return false;
  sendMove(Number(el.dataset.action));
  return true;
}

function markDead() {
  if (!view) return;
  view.dead = true;
  showMessage("");
  if (mode === "play") showSetup(true);  // the way on: a new game
  render();
}

async function sendMove(action) {
  if (busy || action === undefined || !yourTurn()) return;
  if (!(view.legal || []).some((a) => a.action === action)) return;  // only the server's legal moves are sent
  busy = true;
  const status = $("#status");
  const id = view.id;
  const slow = setTimeout(() => { status.classList.remove("yours"); status.textContent = `${seatName(1 - view.human_seat)} is thinking\u2026`; }, 300);
  try {
    const next = await api("POST", `/api/games/${id}/move`, { action, decision: view.decisions });
    if (view && view.id === id) setView(next);
    selected = null;
    showMessage("");
  } catch (e) {
    if (e.status === 404) { clearTimeout(slow); busy = false; markDead(); return; }
    showMessage(e.message);
    try { const again = await api("GET", `/api/games/${id}`); if (view && view.id === id) setView(again); } catch (e2) { if (e2.status === 404) markDead(); }
  } finally {
    clearTimeout(slow);
    busy = false;
    render();
  }
}

function bindBoard() {
  const board = $("#board-col");
  board.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    if (tapped && performance.now() - tapped < 800) { tapped = 0; return; }  // a touch already acted on pointerup
    const target = e.target.closest("[data-action]");
    if (target && board.contains(target)) { activate(target); return; }
  });
  board.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    const card = e.target.closest(".hand-card:not(.inert)");
    if (card) { e.preventDefault(); e.stopPropagation(); toggleSelect(Number(card.dataset.id)); return; }
    const target = e.target.closest("[data-action]");
    if (target) { e.preventDefault(); e.stopPropagation(); activate(target); }
  });
  // A hand card: a click selects it (a second click puts it back); a drag drops it on a target.
  board.addEventListener("pointerdown", (e) => {
    const card = e.target.closest(".hand-card:not(.inert)");
    if (!card || e.button !== 0) return;
    drag = { id: Number(card.dataset.id), x: e.clientX, y: e.clientY, moved: false, ghost: null };
  });
  document.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (!drag.moved && Math.hypot(e.clientX - drag.x, e.clientY - drag.y) > 8) {
      drag.moved = true;
      if (selected !== drag.id) { selected = drag.id; render(); }
      const card = document.querySelector(`.hand-card[data-id="${drag.id}"]`);
      if (card) { drag.ghost = card.cloneNode(true); drag.ghost.classList.add("drag-ghost"); document.body.appendChild(drag.ghost); }
    }
    if (drag.moved && drag.ghost) {
      drag.ghost.style.left = `${e.clientX - 20}px`; drag.ghost.style.top = `${e.clientY - 30}px`;
      for (const el of $$(".drop-over")) el.classList.remove("drop-over");
      const over = document.elementFromPoint(e.clientX, e.clientY);
      const target = over && over.closest(".target");
      if (target) target.classList.add("drop-over");
    }
  });
  document.addEventListener("pointerup", (e) => {
    if (!drag) return;
    const d = drag;
    if (d.ghost) d.ghost.remove();
    for (const el of $$(".drop-over")) el.classList.remove("drop-over");
    if (d.moved) {
      const over = document.elementFromPoint(e.clientX, e.clientY);
      const target = over && over.closest(".target");
      setTimeout(() => { drag = null; }, 0);  // the click that follows a drag is not a click
      if (!activate(target)) render();
    } else {
      drag = null;
      toggleSelect(d.id);
    }
  });
  // A tap on a target acts on pointerup: after a touch drag, Chromium does not always follow the
  // next tap with a click (seen on the deck right after a card was dragged onto its pile).
  document.addEventListener("pointerup", (e) => {
    if (drag || e.pointerType === "mouse") return;
    const target = e.target.closest && e.target.closest("[data-action]");
    if (target && board.contains(target) && activate(target)) tapped = performance.now();
  });
}

function handOrder() {
  return $$(`#hand-area .hand-card:not(.inert)`).map((el) => Number(el.dataset.id));
}

function onKey(e) {
  const tag = e.target.tagName;
  if (e.key === "?" && tag !== "INPUT") { openRules(); return; }
  if (tag === "INPUT" && e.target.type !== "range" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
  if ($("#rules").open) return;
  if (mode === "replays") {
    const steps = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in steps) { e.preventDefault(); replayGo((replay.target ?? replay.step) + steps[e.key]); }
    if (e.key === "Home") { e.preventDefault(); replayGo(0); }
    if (e.key === "End") { e.preventDefault(); replayGo(replay.steps); }
    return;
  }
  if (tag === "SELECT" || !yourTurn() || busy) return;
  const { plays, discards, draws } = legalSets();
  if (view.phase === "card") {
    const order = handOrder();
    const card = selectedCard();
    const key = card ? `${card.color}:${card.value}` : null;
    if (e.key === "Escape") { selected = null; render(); return; }
    if (/^[1-9]$/.test(e.key) && Number(e.key) <= order.length) { e.preventDefault(); selected = order[Number(e.key) - 1]; render(); focusSelected(); return; }
    if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
      e.preventDefault();
      const i = order.indexOf(selected), n = order.length;
      selected = order[i < 0 ? (e.key === "ArrowLeft" ? n - 1 : 0) : (i + (e.key === "ArrowLeft" ? n - 1 : 1)) % n];
      render(); focusSelected(); return;
    }
    if (card && (e.key === "p" || e.key === "P" || e.key === "ArrowUp")) { e.preventDefault(); if (plays.has(key)) sendMove(plays.get(key)); return; }
    if (card && (e.key === "x" || e.key === "X" || e.key === "ArrowDown" || e.key === "Delete")) { e.preventDefault(); sendMove(discards.get(key)); return; }
  } else {
    if ((e.key === " " || e.key === "0" || e.key === "d" || e.key === "D") && draws.has("deck")) { e.preventDefault(); sendMove(draws.get("deck")); return; }
    if (/^[1-9]$/.test(e.key) && draws.has(`pile:${Number(e.key) - 1}`)) { e.preventDefault(); sendMove(draws.get(`pile:${Number(e.key) - 1}`)); }
  }
}

function focusSelected() { const el = document.querySelector(`.hand-card[data-id="${selected}"]`); if (el) el.focus(); }

function openRules() { renderRules(); const d = $("#rules"); if (!d.open) d.showModal(); }

// Play: setup, new games ---------------------------------------------------------------------
function playerOptions(select, preferred, custom) {
  const opts = (info.champions || []).map((c) => `<option value="${esc(c.spec)}" title="${esc(c.spec)}">${esc(c.label)}</option>`)
    .concat(info.bots.map((b) => `<option value="${esc(b)}">${esc(b)}</option>`));
  for (const c of info.checkpoints) {
    opts.push(`<option value="${esc(c.spec)}">${esc(c.label)} (average)</option>`);
    opts.push(`<option value="${esc(c.spec)}@current">${esc(c.label)} (current)</option>`);
    opts.push(`<option value="search:${esc(c.spec)}">${esc(c.label)} (search over average)</option>`);
  }
  if (custom && !info.offline) opts.push(`<option value="${CUSTOM}">custom spec (typed in the field)</option>`);
  select.innerHTML = opts.join("");
  if (preferred && [...select.options].some((o) => o.value === preferred)) select.value = preferred;
}

// The spec field and the dropdown say the same: a choice fills the field, typing picks the
// matching entry (or "custom spec").
// A player named by a label (the champion's) leaves the field empty: its spec would be a second name
// (the option's tooltip shows it); an empty field plays the list's choice.
function syncSpecFromSelect() {
  const sel = $("#play-opponent");
  if (sel.value !== CUSTOM) $("#play-opponent-spec").value = playerName(sel.value) === sel.value ? sel.value : "";
}
function syncSelectFromSpec() {
  const text = $("#play-opponent-spec").value.trim(), sel = $("#play-opponent");
  if (!text && sel.value !== CUSTOM) return;
  sel.value = [...sel.options].some((o) => o.value === text && o.value !== CUSTOM) ? text : CUSTOM;
}

function seedOf(input) { return input.value === "" ? null : Number(input.value); }
function gameRunning() { const v = kept.play; return v && !v.finished && !v.dead; }

function askConfirm(text, onYes) {
  $("#confirm-text").textContent = text;
  $("#confirm").classList.remove("hidden");
  $("#confirm-yes").onclick = () => { $("#confirm").classList.add("hidden"); onYes(); };
  $("#confirm-no").onclick = () => { $("#confirm").classList.add("hidden"); };
  $("#confirm-yes").focus();
}

function showSetup(show) {
  $("#setup-play").classList.toggle("hidden", !show || mode !== "play");
  $("#setup-cancel").classList.toggle("hidden", !kept.play || !!kept.play.dead);
}

function askNewGame() {
  if (gameRunning()) askConfirm("This game is not over. Abandon it and set up a new one?", () => { showSetup(true); $("#play-opponent").focus(); });
  else { showSetup(true); $("#play-opponent").focus(); }
}

async function newGame() {
  stopWatch();
  const spec = $("#play-opponent-spec").value.trim() || $("#play-opponent").value;
  const variant = $("#play-variant").value || null;
  showMessage(`Starting a game against ${playerName(spec)}\u2026`, "info");
  try {
    const v = await api("POST", "/api/games", { opponent: spec, seat: Number($("#play-seat").value), seed: seedOf($("#play-seed")), variant });
    if (mode !== "play") showTab("play");
    setView(v);
    selected = null;
    showMessage("");
    showSetup(false);
    $("#confirm").classList.add("hidden");
    setHash(`#play/game=${v.id}`);
    render();
  } catch (e) { showMessage(e.message); }
}

// Watch --------------------------------------------------------------------------------------
function stopWatch() { if (watchTimer) clearTimeout(watchTimer); watchTimer = null; }

function watchButtons() {
  const v = kept.watch, live = v && !v.finished && !v.dead;
  $("#watch-pause").disabled = !live; $("#watch-step").disabled = !live;
  $("#watch-pause").textContent = watchPaused ? "Resume" : "Pause";
}

async function watchStep() {
  const v = kept.watch;
  if (!v || v.finished || mode !== "watch") return;
  try { const next = await api("POST", `/api/games/${v.id}/step`); if (kept.watch && kept.watch.id === v.id) { setView(next); render(); } }
  catch (e) { if (e.status === 404) markDead(); else showMessage(e.message); watchPaused = true; }
  watchButtons();
  if (kept.watch && !kept.watch.finished && !watchPaused && mode === "watch") watchTimer = setTimeout(watchStep, Number($("#watch-speed").value));
}

async function startWatch() {
  stopWatch();
  try {
    const v = await api("POST", "/api/watch", { players: [$("#watch-a").value, $("#watch-b").value], seed: seedOf($("#watch-seed")),
      variant: $("#watch-variant").value || null });
    setView(v);
    watchPaused = false;
    showMessage("");
    setHash(`#watch/game=${v.id}`);
    render();
    watchButtons();
    watchTimer = setTimeout(watchStep, Number($("#watch-speed").value));
  } catch (e) { showMessage(e.message); }
}

// Replays ----------------------------------------------------------------------------------------
async function loadReplayFiles(wanted) {
  try {
    const data = await api("GET", "/api/replays");
    const sel = $("#replay-file");
    sel.innerHTML = data.files.map((f) => `<option value="${esc(f.file)}">${esc(f.file)}</option>`).join("");
    if (!data.files.length) { setView(null); render(); showMessage(`No recorded games (.jsonl) under ${info.replays}.`, "info"); return; }
    const file = wanted && wanted.file ? wanted.file : replay.file;
    if (file && data.files.some((f) => f.file === file)) sel.value = file;
    await loadReplayGames(wanted && wanted.file === sel.value ? wanted : null);
  } catch (e) { showMessage(e.message); }
}

function clearReplay(message) {
  setView(null); render();
  $("#replay-game").innerHTML = ""; $("#replay-pos").textContent = "";
  showMessage(message);
}

async function loadReplayGames(wanted) {
  replay.file = $("#replay-file").value;
  try {
    const data = await api("GET", `/api/replays/games?file=${encodeURIComponent(replay.file)}`);
    $("#replay-game").innerHTML = data.games.map((g) => {
      const r = g.result, s = r.scores ? ` (${r.scores[0]} : ${r.scores[1]})` : "";
      return `<option value="${g.game}">#${g.game} ${esc(g.players[0])} v ${esc(g.players[1])}${s}</option>`;
    }).join("");
    if (!data.games.length) { clearReplay(`${replay.file} holds no games.`); return; }
    if (wanted && wanted.game !== undefined && data.games.some((g) => g.game === wanted.game)) $("#replay-game").value = String(wanted.game);
    showMessage("");
    replay.game = Number($("#replay-game").value || 0);
    replay.step = -1; replay.target = wanted && wanted.step ? wanted.step : 0;
    await pumpReplay();
  } catch (e) { clearReplay(`${replay.file}: ${e.message}`); }
}

// Steps asked for while one is loading are not dropped: the newest target is loaded next.
async function pumpReplay() {
  if (replay.loading) return;
  replay.loading = true;
  try {
    while (replay.file && replay.target !== replay.step) {
      const step = replay.target;
      const v = await api("GET", `/api/replays/state?file=${encodeURIComponent(replay.file)}&game=${replay.game}&step=${step}`);
      if (mode !== "replays") { kept.replays = v; } else setView(v);
      replay.step = v.step; replay.steps = v.steps;
      if (replay.target > v.steps) replay.target = v.steps;
      $("#replay-slider").max = v.steps; $("#replay-slider").value = v.step;
      $("#replay-pos").textContent = `${v.step} / ${v.steps}`;
      if (mode === "replays") render();
    }
    if (mode === "replays") replaceHash(`#replays/file=${encodeURIComponent(replay.file)}&game=${replay.game}&step=${replay.step}`);
  } catch (e) { clearReplay(e.message); replay.target = replay.step; }
  finally { replay.loading = false; }
}

function replayGo(step) {
  if (!replay.file) return;
  replay.target = Math.max(0, Math.min(replay.steps, step));
  pumpReplay();
}

// Runs --------------------------------------------------------------------------------------------
// a name that may break into lines only after its separators ("lost_cities-2" as "lost_" "cities-" "2"), never inside a word
function breakable(text) { return esc(text).replace(/([_\-\/.@:=,])/g, "$1<wbr>"); }
function runStatus(r) {
  const done = r.last_iteration === null || r.last_iteration === undefined ? "" : `${r.last_iteration}${r.target_iterations ? " of " + r.target_iterations : ""} iteration(s) logged`;
  const status = r.status || (r.running ? "running" : "stopped");
  return `<span class="run-${status}${status === "running" ? " running" : ""}" title="${esc(done)}">${status}</span>`;
}
function fmt(v, digits = 3) { return v === null || v === undefined ? "-" : typeof v === "number" ? Number(v.toPrecision(digits)).toString() : esc(v); }

async function loadRuns() {
  try {
    const data = await api("GET", "/api/runs");
    $("#runs-root").textContent = `under ${info.runs}`;
    const tbody = $("#runs-table tbody");
    tbody.innerHTML = data.runs.map((r) => `<tr data-run="${esc(r.run)}" class="${r.run === openRun ? "selected" : ""}">
      <td>${breakable(r.run)}</td><td>${esc(r.game || "?")}${r.variant ? " / " + esc(r.variant) : ""}</td>
      <td>${runStatus(r)}</td>
      <td>${r.modified ? esc(new Date(r.modified * 1000).toLocaleString([], { dateStyle: "short", timeStyle: "short" })) : "-"}</td><td>${r.checkpoints.length}</td></tr>`).join("")
      || `<tr><td colspan="5">No run directories under ${esc(info.runs)}.</td></tr>`;
    for (const tr of $$("#runs-table tbody tr[data-run]")) tr.addEventListener("click", () => { openRun = tr.dataset.run; setHash(`#runs/run=${encodeURIComponent(openRun)}`); });
  } catch (e) { showMessage(e.message); }
}

async function loadReport() {
  const box = $("#run-report");
  if (!openRun) { box.innerHTML = ""; return; }
  try {
    const r = await api("GET", `/api/runs/report?run=${encodeURIComponent(openRun)}`);
    let evalHTML = "<p>No evaluation logged yet.</p>";
    if (r.evaluation) {
      const ev = r.evaluation;
      let rows = ev.matches.map((m) => `<tr><td>${breakable(m.opponent)}</td><td>${esc(m.policy)}</td><td>${m.win_rate === null ? "-" : (100 * m.win_rate).toFixed(1) + "%"}</td>
        <td>${fmt(m.mean_score_diff)}</td><td>${m.score_diff_ci95 === null ? "-" : "\u00b1" + fmt(m.score_diff_ci95)}</td></tr>`).join("");
      rows += Object.entries(ev.exploitability).map(([k, v]) => `<tr><td>exploitability</td><td>${esc(k)}</td><td colspan="3">${fmt(v, 4)}</td></tr>`).join("");
      evalHTML = `<p>Latest evaluation: iteration ${ev.iteration}</p><div class="table-wrap"><table class="grid" id="eval-table"><thead><tr><th>opponent</th><th>policy</th>
        <th>win rate</th><th>mean score diff</th><th>95% CI</th></tr></thead><tbody>${rows}</tbody></table></div>`;
    }
    const cks = r.checkpoints.map((c) => `<li>${esc(c)} <button class="play-ck" data-spec="${esc(c)}">Play it</button></li>`).join("");
    const plots = r.plots.map((p) => `<img alt="${esc(p)}" src="/api/runs/plot?run=${encodeURIComponent(r.run)}&name=${encodeURIComponent(p)}&v=${r.drawn_from}">`).join("");
    box.innerHTML = `<h3>${esc(r.run)}: ${r.iterations} iteration(s) logged${r.still_writing ? " (still writing)" : ""}</h3>
      ${evalHTML}<h3>Checkpoints</h3><ul>${cks || "<li>none yet</li>"}</ul><h3>Plots</h3><div class="plots">${plots || "none yet"}</div>`;
    for (const b of $$(".play-ck")) b.addEventListener("click", () => playIt(b.dataset.spec));
  } catch (e) { box.innerHTML = `<p>${esc(e.message)}</p>`; }
}

function playIt(spec) {
  const start = () => {
    const sel = $("#play-opponent");
    if (![...sel.options].some((o) => o.value === spec)) sel.insertAdjacentHTML("afterbegin", `<option value="${esc(spec)}">${esc(spec)}</option>`);
    sel.value = spec; syncSpecFromSelect();
    $("#play-variant").value = "";
    newGame();
  };
  if (gameRunning()) { setHash(kept.play ? `#play/game=${kept.play.id}` : "#play"); askConfirm(`Your game is not over. Abandon it and play ${spec}?`, start); }
  else start();
}

// Tabs, the URL and start-up ----------------------------------------------------------------------
function hashFor(tab) {
  if ((tab === "play" || tab === "watch") && kept[tab]) return `#${tab}/game=${kept[tab].id}`;
  if (tab === "replays" && replay.file) return `#replays/file=${encodeURIComponent(replay.file)}&game=${replay.game}&step=${replay.step < 0 ? 0 : replay.step}`;
  if (tab === "runs" && openRun) return `#runs/run=${encodeURIComponent(openRun)}`;
  return `#${tab}`;
}

function setHash(h) { if (location.hash !== h) location.hash = h; }
function replaceHash(h) { if (location.hash !== h) history.replaceState(null, "", h); }

function parseHash() {
  const raw = location.hash.replace(/^#/, "");
  const legacy = raw.match(/^game=([\w-]+)/);  // links from before the tabs were in the URL
  if (legacy) return { tab: null, params: new URLSearchParams(raw) };
  const [tab, rest] = raw.split("/", 2);
  return { tab: ["play", "watch", "replays", "runs"].includes(tab) ? tab : "play", params: new URLSearchParams(rest || "") };
}

function showTab(tab) {
  if (mode === "watch" && tab !== "watch" && watchTimer) { stopWatch(); watchPaused = true; }
  mode = tab;
  for (const b of $$(".tab")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of $$(".setup")) s.classList.toggle("hidden", s.dataset.for !== tab);
  if (tab === "play") showSetup(!kept.play);
  $("#runs-view").classList.toggle("hidden", tab !== "runs");
  $("#confirm").classList.add("hidden");
  showMessage("");
  if (runsTimer) { clearInterval(runsTimer); runsTimer = null; }
  view = tab in kept ? kept[tab] : null;
  selected = null;
  if (tab === "watch") watchButtons();
  render();
}

async function loadGame(id, tab) {
  try {
    const v = await api("GET", `/api/games/${id}`);
    const want = v.mode === "watch" ? "watch" : "play";
    if (want !== mode) showTab(want);
    setView(v);
    if (want === "watch") { watchPaused = true; watchButtons(); }
    if (want === "play") showSetup(false);
    replaceHash(`#${want}/game=${id}`);
  } catch (e) {
    if (e.status === 404 && kept[tab] && kept[tab].id === id) { markDead(); return; }
    showMessage(e.status === 404 ? "That game is gone: the server was restarted (or dropped it). Start a new game." : e.message);
    if (tab === "play") showSetup(true);
  }
  render();
}

async function applyRoute() {
  const { tab, params } = parseHash();
  if (tab === null) { await loadGame(params.get("game"), "play"); return; }
  if (tab !== mode) showTab(tab);
  if (tab === "play" || tab === "watch") {
    const id = params.get("game");
    if (id && (!kept[tab] || kept[tab].id !== id)) await loadGame(id, tab);
    else if (id && kept[tab] && !kept[tab].dead) refresh();
  } else if (tab === "replays") {
    const file = params.get("file"), game = params.get("game"), step = params.get("step");
    if (file && file === replay.file && Number(game || 0) === replay.game && kept.replays) { replayGo(Number(step || 0)); return; }
    await loadReplayFiles(file ? { file, game: Number(game || 0), step: Number(step || 0) } : null);
  } else if (tab === "runs") {
    openRun = params.get("run");
    loadRuns(); loadReport();
    runsTimer = setInterval(() => { loadRuns(); loadReport(); }, 20000);
  }
}

async function refresh() {  // the game on the board, as the server has it now (a restart shows as a dead board)
  const v = view;
  if (!v || !v.id || v.dead || busy || !(mode === "play" || mode === "watch")) return;
  try {
    const next = await api("GET", `/api/games/${v.id}`);
    // A move answered meanwhile is newer than this look: an older state never replaces a newer one.
    if (view && view.id === v.id && !busy && next.decisions >= view.decisions) { setView(next); render(); }
  }
  catch (e) { if (e.status === 404 && view && view.id === v.id) markDead(); }
}

async function start() {
  info = await api("GET", "/api/info");
  for (const sel of $$(".player-select")) playerOptions(sel);
  // the strongest champion player measured is the default opponent (where one ships: listed first)
  playerOptions($("#play-opponent"), (info.champions || []).length ? info.champions[0].spec : undefined, true);
  playerOptions($("#watch-a"), "champion@greedy");
  playerOptions($("#watch-b"), "heuristic_balanced");
  syncSpecFromSelect();
  for (const sel of $$(".variant-select")) {
    sel.innerHTML = `<option value="">${info.checkpoints.length ? "the agent's own / classic" : "classic"}</option>` +
      info.variants.filter((v) => v !== "classic").map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join("");
  }
  for (const b of $$(".tab")) b.addEventListener("click", () => setHash(hashFor(b.dataset.tab)));
  $("#play-opponent").addEventListener("change", syncSpecFromSelect);
  $("#play-opponent-spec").addEventListener("input", syncSelectFromSpec);
  $("#new-game").addEventListener("click", newGame);
  $("#again").addEventListener("click", askNewGame);
  $("#setup-cancel").addEventListener("click", () => showSetup(false));
  $("#rules-open").addEventListener("click", openRules);
  $("#btn-play").addEventListener("click", () => { const c = selectedCard(); if (c) sendMove(legalSets().plays.get(`${c.color}:${c.value}`)); });
  $("#btn-discard").addEventListener("click", () => { const c = selectedCard(); if (c) sendMove(legalSets().discards.get(`${c.color}:${c.value}`)); });
  $("#btn-deck").addEventListener("click", () => sendMove(legalSets().draws.get("deck")));
  $("#btn-scoring").addEventListener("click", () => $("#final").scrollIntoView({ behavior: "smooth", block: "start" }));
  $("#show-probs").addEventListener("change", () => view && renderMoves());
  $("#save-record").addEventListener("click", async () => {
    try { const r = await api("POST", `/api/games/${view.id}/save`); view.saved_to = r.saved_to; renderFinal();
      showMessage(`Saved in ${r.saved_to} under ${r.replays}: open it in Replays.`, "info"); } catch (e) { showMessage(e.message); }
  });
  $("#watch-start").addEventListener("click", startWatch);
  $("#watch-pause").addEventListener("click", () => {
    watchPaused = !watchPaused;
    watchButtons();
    if (!watchPaused) watchStep(); else stopWatch();
  });
  $("#watch-step").addEventListener("click", () => { watchPaused = true; watchButtons(); stopWatch(); watchStep(); });
  $("#watch-speed").addEventListener("input", () => { $("#watch-speed-label").textContent = `${$("#watch-speed").value} ms`; });
  $("#replay-file").addEventListener("change", (e) => { e.target.blur(); loadReplayGames(null); });
  $("#replay-game").addEventListener("change", (e) => { e.target.blur(); replay.game = Number(e.target.value); replay.step = -1; replay.target = 0; pumpReplay(); });
  $("#replay-slider").addEventListener("change", (e) => { e.target.blur(); replayGo(Number(e.target.value)); });
  $("#replay-first").addEventListener("click", () => replayGo(0));
  $("#replay-prev").addEventListener("click", () => replayGo(replay.target - 1));
  $("#replay-next").addEventListener("click", () => replayGo(replay.target + 1));
  $("#replay-last").addEventListener("click", () => replayGo(replay.steps));
  $("#runs-refresh").addEventListener("click", () => { loadRuns(); loadReport(); });
  document.addEventListener("keydown", onKey);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") refresh(); });
  window.addEventListener("hashchange", () => applyRoute());
  bindBoard();
  if (!location.hash) replaceHash("#play");
  await applyRoute();
}

start().catch((e) => showMessage(`The page could not start: ${e.message}`));
