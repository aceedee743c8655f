// The page of python -m ttt.serve: draws the game the server keeps and sends the player's actions.
"use strict";

const $ = (id) => document.getElementById(id);
let game = null;        // the server's view of the current game
let cellLines = [];     // for every cell, the lines (arrays of cells) through it
let hintOn = false;
let autoPlay = false;
let busy = false;       // one request at a time: the board waits for the agent's reply

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(data.error || `${response.status}`);
  return data;
}

function showError(message) { $("error").textContent = message || ""; }

const agentToMove = () => game && !game.over && !game.seats[game.to_play].human;
const someoneHuman = () => game && (game.seats.X.human || game.seats.O.human);

async function act(method, path, body) {
  if (busy) return;
  busy = true;
  showError("");
  try {
    game = await api(method, path, body);
    render();
  } catch (e) {
    showError(e.message);  // and no automatic step after a failure: the person decides what next
    autoPlay = false;
    busy = false;
    updateButtons();
    return;
  }
  busy = false;
  await afterUpdate();
}

// A person against an agent: the agent replies at once. Agents against each other: only when asked.
async function afterUpdate() {
  updateButtons();
  const replying = agentToMove() && (someoneHuman() || autoPlay);
  if (hintOn && !replying) await showHint();  // an agent about to reply at once: the hint comes after it
  if (replying) {
    setTimeout(() => act("POST", `/api/games/${game.id}/step`), someoneHuman() ? 50 : 400);
  } else if (!agentToMove()) {
    autoPlay = false;
    updateButtons();
  }
}

function cellBox(c) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "cell";
  b.dataset.cell = c;
  b.innerHTML = '<span class="num"></span><span class="mark"></span><span class="val"></span>';
  b.querySelector(".num").textContent = c;
  // not disabled when taken: a disabled button gets no hover, and hovering shows the lines through a cell
  b.addEventListener("click", () => {
    if (b.classList.contains("playable")) act("POST", `/api/games/${game.id}/move`, { move: c });
  });
  b.addEventListener("mouseenter", () => highlight(c, true));
  b.addEventListener("mouseleave", () => highlight(c, false));
  b.addEventListener("focus", () => highlight(c, true));
  b.addEventListener("blur", () => highlight(c, false));
  return b;
}

function highlight(c, on) {
  for (const line of cellLines[c] || []) for (const d of line) cellEl(d).classList.toggle("hl", on);
}

const cellEl = (c) => document.querySelector(`.cell[data-cell="${c}"]`);

// 2D: one grid. 3D: the layers side by side, layer 0 first (the bottom with gravity).
function buildBoard() {
  const { n, d, gravity } = game.board;
  const area = $("board-area");
  area.innerHTML = "";
  const layers = document.createElement("div");
  layers.className = `layers n${n} d${d}`;
  const count = d === 3 ? n : 1;
  for (let z = 0; z < count; z++) {
    const layer = document.createElement("div");
    layer.className = "layer";
    if (d === 3) {
      const title = document.createElement("h3");
      title.textContent = `layer ${z}` + (gravity && z === 0 ? " (bottom)" : "");
      layer.appendChild(title);
    }
    layer.style.setProperty("--z", z - (count - 1) / 2);  // the 3D view's height, the middle layer at 0
    const grid = document.createElement("div");
    grid.className = "grid";
    grid.style.gridTemplateColumns = `repeat(${n}, auto)`;
    for (let i = 0; i < n * n; i++) grid.appendChild(cellBox(z * n * n + i));
    layer.appendChild(grid);
    layers.appendChild(layer);
  }
  area.appendChild(layers);
  setView();
  area.dataset.board = game.board.name;
  area.dataset.game = game.id;
  cellLines = Array.from({ length: game.board.cells }, () => []);
  for (const line of game.lines) for (const c of line) cellLines[c].push(line);
}

// The 3D view stacks the same layers in space (layer 0 lowest) and turns the stack by dragging.
let spin = -35, tilt = 62;

function setView() {
  const layers = document.querySelector(".layers");
  const on = $("view3d").checked && game && game.board.d === 3;
  if (!layers) return;
  layers.classList.toggle("stack", on);
  layers.style.setProperty("--spin", `${spin}deg`);
  layers.style.setProperty("--tilt", `${tilt}deg`);
}

function dragToTurn() {
  let from = null;
  const area = $("board-area");
  area.addEventListener("pointerdown", (e) => {
    if (document.querySelector(".layers.stack") && !e.target.closest(".cell")) from = [e.clientX, e.clientY];
  });
  window.addEventListener("pointerup", () => { from = null; });
  window.addEventListener("pointermove", (e) => {
    if (!from) return;
    spin += (e.clientX - from[0]) / 2;
    tilt = Math.max(0, Math.min(80, tilt - (e.clientY - from[1]) / 2));
    from = [e.clientX, e.clientY];
    setView();
  });
}

function label(c) {
  const n = game.board.n;
  const coords = game.board.d === 3 ? [Math.floor(c / (n * n)), Math.floor(c / n) % n, c % n] : [Math.floor(c / n), c % n];
  return coords.join(",");
}

function render() {
  const area = $("board-area");
  if (area.dataset.game !== game.id) buildBoard();
  const legal = new Set(game.legal);
  const openAt = {};
  for (const l of game.open_lines) (openAt[l.empty] ||= new Set()).add(l.mark);
  const win = new Set(game.win_line || []);
  const mine = game.to_play && game.seats[game.to_play].human;
  for (let c = 0; c < game.board.cells; c++) {
    const el = cellEl(c);
    const mark = game.cells[c];
    el.querySelector(".mark").textContent = mark;
    el.querySelector(".num").textContent = mark ? "" : c;
    el.querySelector(".val").textContent = "";
    el.querySelector(".val").className = "val";
    el.style.background = "";
    el.className = "cell" + (mark ? " " + mark.toLowerCase() : "") + (legal.has(c) && mine ? " playable" : "")
      + (c === game.last ? " last" : "") + (win.has(c) ? " win" : "")
      + (openAt[c] ? [...openAt[c]].map((m) => " open-" + m.toLowerCase()).join("") : "");
    el.setAttribute("aria-disabled", String(!(legal.has(c) && mine)));
    el.setAttribute("aria-label", `cell ${c} (${label(c)})${mark ? " " + mark : ""}`);
  }
  const status = $("status");
  status.className = game.over ? "over" : "";
  status.textContent = game.over
    ? game.result + (game.win_line ? ` along ${game.win_line.join(", ")}` : "")
    : `${game.to_play} to move (${game.seats[game.to_play].label})`;
  $("moves").innerHTML = "";
  for (const m of game.moves) {
    const li = document.createElement("li");
    li.textContent = `${m.mark} ${m.cell} (${m.label})`;
    $("moves").appendChild(li);
  }
  $("moves").scrollTop = $("moves").scrollHeight;
  $("open-lines").innerHTML = "";
  for (const l of game.open_lines) {
    const li = document.createElement("li");
    li.textContent = `${l.mark} completes ${l.cells.join("-")} at ${l.empty} (${label(l.empty)})`;
    $("open-lines").appendChild(li);
  }
  if (!game.open_lines.length) $("open-lines").innerHTML = "<li>none</li>";
  $("syntax").textContent = `A move: ${game.board.syntax}.`;
  $("download").href = `/api/games/${game.id}/record`;
  $("hint-info").textContent = "";
  updateButtons();
}

function updateButtons() {
  const agent = agentToMove();
  $("step").disabled = !agent || busy;
  $("auto").disabled = !agent || someoneHuman();
  $("auto").textContent = autoPlay ? "Pause" : "Play on";
  $("undo").disabled = !game || game.moves.length === 0;
  $("move-input").disabled = !game || game.over || agent;
}

// The heat map ranks the moves of this position: its best green, its worst red. The colours are
// relative because a value network's estimates can sit close together (the numbers give the values).
function heat(v, lo, hi) {
  const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return `hsl(${Math.round(130 * t)}, 70%, ${Math.round(78 - 8 * Math.abs(t - 0.5))}%)`;
}

async function showHint() {
  if (!game || game.over) return;
  const id = game.id;
  let hint;
  try {
    hint = await api("GET", `/api/games/${id}/hint`);
  } catch (e) {
    showError(e.message);
    return;
  }
  if (!game || game.id !== id) return;
  if (!hint.values) {
    $("hint-info").textContent = `Hint: ${hint.reason}.`;
    return;
  }
  const values = hint.values.map((h) => h.value);
  const lo = Math.min(...values), hi = Math.max(...values);
  for (const { cell, value, rules } of hint.values) {
    const el = cellEl(cell);
    el.style.background = heat(value, lo, hi);
    const val = el.querySelector(".val");
    val.textContent = (value >= 0 ? "+" : "") + value.toFixed(3);
    val.className = rules ? "val rule" : "val";
  }
  $("hint-info").innerHTML = "";
  $("hint-info").append(`Hint: ${hint.source}'s value of each move for ${hint.for}, from -1 (a loss) to +1 (a win);`
    + " green its best move here, red its worst.");
  if (hint.values.some((h) => h.rules)) {
    $("hint-info").append(" ", Object.assign(document.createElement("u"), { textContent: "Bold, underlined" }),
      ": the value its rules give (a win, a loss, a fork), not its network's estimate.");
  }
}

async function newGame(event) {
  if (event) event.preventDefault();
  autoPlay = false;
  await act("POST", "/api/games", { board: $("board").value, x: $("seat-x").value.trim(), o: $("seat-o").value.trim() });
}

async function setup() {
  let options;
  try {
    options = await api("GET", "/api/options");
  } catch (e) {
    showError(e.message);
    return;
  }
  for (const b of options.boards) $("board").add(new Option(b.name, b.name));
  const seats = ["human", ...options.specs, ...options.checkpoints.map((c) => `${options.checkpoint_prefix}${c.name}`)];
  for (const s of seats) {
    const o = document.createElement("option");
    o.value = s;
    const ck = options.checkpoints.find((c) => `${options.checkpoint_prefix}${c.name}` === s);
    if (ck) o.label = `${s} (${ck.board})`;
    $("seat-options").appendChild(o);
  }
  // a checkpoint plays only its own board: another board puts the benchmark player in its seat
  $("board").addEventListener("change", () => {
    for (const seat of ["seat-x", "seat-o"]) {
      const ck = options.checkpoints.find((c) => `${options.checkpoint_prefix}${c.name}` === $(seat).value.trim());
      if (ck && ck.board !== $("board").value) $(seat).value = "benchmark";
    }
  });
  $("board").value = options.default.board;
  $("seat-x").value = options.default.x;
  $("seat-o").value = options.default.o;
  $("setup").addEventListener("submit", newGame);
  $("entry").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("move-input").value.trim();
    if (!text || !game) return;
    $("move-input").value = "";
    act("POST", `/api/games/${game.id}/move`, { move: text }).then(() => $("move-input").focus());
  });
  $("undo").addEventListener("click", () => { autoPlay = false; act("POST", `/api/games/${game.id}/undo`, {}); });
  $("step").addEventListener("click", () => act("POST", `/api/games/${game.id}/step`, {}));
  $("auto").addEventListener("click", () => {
    autoPlay = !autoPlay;
    updateButtons();
    if (autoPlay) afterUpdate();
  });
  $("view3d").addEventListener("change", setView);
  dragToTurn();
  $("hint-toggle").addEventListener("change", () => {
    hintOn = $("hint-toggle").checked;
    if (game) { render(); if (hintOn) showHint(); }
  });
  document.addEventListener("keydown", (e) => {
    if (["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName) || e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = { u: "undo", s: "step", p: "auto", n: "new" };
    if (keys[e.key]) { $(keys[e.key]).click(); e.preventDefault(); }
    if (e.key === "h") { $("hint-toggle").click(); e.preventDefault(); }
    if (e.key === "v") { $("view3d").click(); e.preventDefault(); }
    if (/^[0-9]$/.test(e.key) && !$("move-input").disabled) { $("move-input").focus(); }
  });
  await newGame();
  $("move-input").focus();
}

setup();
