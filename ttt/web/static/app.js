// The page of python -m ttt.serve: draws the game the server keeps and sends the player's actions.
"use strict";

const $ = (id) => document.getElementById(id);
let game = null;        // the server's view of the current game
let settings = null;    // the setup form's values that started the current game
let cellLines = [];     // for every cell, the lines (arrays of cells) through it
let hovered = null;     // the cell under the pointer (or focused), whose lines are drawn
let hintOn = false;
let autoPlay = false;
let busy = false;       // one request at a time: the board waits for the agent's reply
let thinking = false;   // the agent to move is choosing its move (a step request is out)
let queued = null;      // a cell clicked while the agent moved: played when it is a person's turn again
const MAX_RETRIES = 30; // answers 503 (the server busy) waited out and asked again, each after its Retry-After

// one colour per line through a cell (a corner of Qubic has 7 lines, the centre of 3x3x3 13)
const LINE_COLOURS = ["#e6194b", "#4363d8", "#f58231", "#911eb4", "#0aa5b5", "#f032e6", "#9a6324",
  "#6b8e23", "#000075", "#808080", "#e6a800", "#800000", "#469990"];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One request to the server; a 503 (busy: too many agents searching) is asked again after the seconds its
// Retry-After names, up to MAX_RETRIES times, the wait shown under the header.
async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  for (let retry = 1; ; retry++) {
    const response = await fetch(path, init);
    const data = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
    if (response.status === 503 && retry <= MAX_RETRIES) {
      const seconds = Math.min(10, Math.max(0.2, Number(response.headers.get("Retry-After")) || 1));
      showError(`${data.error || "the server is busy"}: asking again in ${seconds} s (${retry} of ${MAX_RETRIES})`);
      await sleep(1000 * seconds);
      continue;
    }
    if (retry > 1) showError("");
    if (!response.ok) throw new Error(data.error || `${response.status}`);
    return data;
  }
}

function showError(message) { $("error").textContent = message || ""; }

const agentToMove = () => game && !game.over && !game.seats[game.to_play].human;
const someoneHuman = () => game && (game.seats.X.human || game.seats.O.human);

async function act(method, path, body) {
  if (busy) return;
  busy = true;
  setThinking(path.endsWith("/step"));
  showError("");
  try {
    game = await api(method, path, body);
    render();
  } catch (e) {
    showError(e.message);  // and no automatic step after a failure: the person decides what next
    autoPlay = false;
    busy = false;
    queued = null;
    setThinking(false);
    updateButtons();
    return;
  }
  busy = false;
  setThinking(false);
  await afterUpdate();
}

// While the agent to move chooses, the status says so and the board is marked busy (a click is queued).
function setThinking(on) {
  thinking = on;
  $("board-area").classList.toggle("thinking", on);
  $("board-area").setAttribute("aria-busy", String(on));
  if (game) showStatus();
}

// A person against an agent: the agent replies at once. Agents against each other: only when asked.
// A cell clicked while the agent moved is played once it is a person's turn again.
async function afterUpdate() {
  updateButtons();
  const replying = agentToMove() && (someoneHuman() || autoPlay);
  if (queued !== null && !replying) {
    const c = queued;
    queued = null;
    if (!game.over && !agentToMove()) { clickCell(c); return; }
    showStatus();
  }
  if (hintOn && !replying) await showHint();  // an agent about to reply at once: the hint comes after it
  if (replying) {
    setTimeout(() => act("POST", `/api/games/${game.id}/step`), someoneHuman() ? 50 : 400);
  } else if (!agentToMove()) {
    autoPlay = false;
    updateButtons();
  }
}

// layer, row, column of a cell (2D: row, column)
function coords(c) {
  const n = game.board.n;
  return game.board.d === 3 ? [Math.floor(c / (n * n)), Math.floor(c / n) % n, c % n] : [Math.floor(c / n), c % n];
}

const label = (c) => coords(c).join(",");

// A click sends the cell to the server, which answers the move or says why not (a taken cell, not your
// turn, the game over). With gravity a click anywhere in a column drops the piece in it.
function clickCell(c) {
  if (!game) return;
  if ((busy || agentToMove()) && someoneHuman() && !game.over) {  // the agent is moving: after its reply
    queued = c;
    showStatus();
    return;
  }
  const move = game.board.gravity ? coords(c).slice(1).join(",") : c;
  act("POST", `/api/games/${game.id}/move`, { move });
}

// what a cell can do, shared by the flat view's button and the 3D view's cell
function wireCell(el, c) {
  el.dataset.cell = c;
  el.addEventListener("click", () => { if (!justTurned) clickCell(c); });
  el.addEventListener("mouseenter", () => hover(c));
  el.addEventListener("mouseleave", () => hover(null, c));
  el.addEventListener("focus", () => hover(c));
  el.addEventListener("blur", () => hover(null, c));
}

function cellBox(c) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "cell";
  b.innerHTML = '<span class="num"></span><span class="mark"></span><span class="val"></span>';
  // not disabled when taken: a disabled button gets no hover, and hovering shows the lines through a cell
  wireCell(b, c);
  return b;
}

// The lines through the hovered cell, each in its own colour: rings on the flat view's cells (two lines
// share at most one cell, so every other cell belongs to one line), the lines themselves in the 3D view.
function hover(c, leaving) {
  if (c === null && leaving !== hovered) return;
  hovered = c;
  drawHover();
}

function hoveredLines() {
  return hovered === null ? [] : (cellLines[hovered] || []);
}

function drawHover() {
  for (const el of document.querySelectorAll(".hl, .drop, .hovered")) {
    el.classList.remove("hl", "drop", "hovered");
    el.style.removeProperty("--hl");
  }
  const lines = hoveredLines();
  lines.forEach((line, i) => {
    for (const d of line) {
      if (d === hovered) continue;  // the cell itself is shaded, unlike the last move's heavy border
      for (const el of cellEls(d)) {
        el.classList.add("hl");
        el.style.setProperty("--hl", LINE_COLOURS[i % LINE_COLOURS.length]);
      }
    }
  });
  if (hovered !== null) for (const el of cellEls(hovered)) el.classList.add("hovered");
  if (hovered !== null && game.board.gravity) {  // where a click in this column lands
    const column = coords(hovered).slice(1);
    const drop = game.legal.find((c) => coords(c).slice(1).join() === column.join());
    if (drop !== undefined) for (const el of cellEls(drop)) el.classList.add("drop");
  }
  const info = $("lines-info");
  info.innerHTML = "";
  if (hovered !== null && lines.length) {
    info.append(`${lines.length} line${lines.length > 1 ? "s" : ""} through ${hovered} (${label(hovered)}):`);
    const list = document.createElement("ul");
    lines.forEach((line, i) => {
      const li = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "legend";
      swatch.style.background = LINE_COLOURS[i % LINE_COLOURS.length];
      const marks = line.map((d) => game.cells[d] || "·").join("");
      li.append(swatch, ` ${line.join("-")} ${marks}`);
      li.dataset.line = line.join("-");
      list.appendChild(li);
    });
    info.appendChild(list);
  }
  drawSceneLines();
}

const cellEls = (c) => document.querySelectorAll(`[data-cell="${c}"]`);
const cellEl = (c) => document.querySelector(`.cell[data-cell="${c}"]`);

// 2D: one grid. 3D: the layers side by side, layer 0 first (the bottom with gravity), and the 3D view.
function buildBoard() {
  const { n, d, gravity } = game.board;
  const area = $("board-area");
  area.innerHTML = "";
  scene = null;
  area.classList.toggle("gravity", gravity);
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
    const grid = document.createElement("div");
    grid.className = "grid";
    grid.style.gridTemplateColumns = `repeat(${n}, auto)`;
    for (let i = 0; i < n * n; i++) grid.appendChild(cellBox(z * n * n + i));
    layer.appendChild(grid);
    layers.appendChild(layer);
  }
  area.appendChild(layers);
  if (d === 3) area.appendChild(buildScene());
  area.dataset.board = game.board.name;
  area.dataset.game = game.id;
  cellLines = Array.from({ length: game.board.cells }, () => []);
  for (const line of game.lines) for (const c of line) cellLines[c].push(line);
  hovered = null;
  setView();
}

// The 3D view: the layers as horizontal squares stacked in space (layer 0 lowest), seen from above at
// `tilt` degrees and turned by `spin` about the vertical. Each layer is a plane, so its cells never cover
// each other; the layers are drawn apart by more than a layer's height on screen at the present tilt,
// so no layer covers another at any angle. The lines are drawn through the stack.
const view = { spin: -30, tilt: 30 };
const TILT = [20, 40];  // degrees above the horizon: flatter cells get thin, steeper ones need a tall stack
let scene = null;       // {svg, cells: [{g, poly, heat, mark, text, val}], plates, labels, lines, size}

function svgEl(name, attrs = {}, parent = null) {
  const el = document.createElementNS(scene.ns, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (parent) parent.appendChild(el);
  return el;
}

function buildScene() {
  const wrap = document.createElement("div");
  wrap.className = "scene-wrap";
  wrap.innerHTML = '<svg class="scene" role="group" aria-label="the board in 3D: drag to turn it"></svg>';
  const svg = wrap.firstChild;
  scene = { svg, ns: svg.namespaceURI, cells: [], plates: [], labels: [], size: game.board.n === 3 ? 54 : 46 };
  const { n, gravity } = game.board;
  const layersG = svgEl("g", {}, svg);
  for (let z = 0; z < n; z++) {
    scene.plates.push(svgEl("polygon", { class: "plate" }, layersG));
    const text = svgEl("text", { class: "layer-label", "text-anchor": "end", "dominant-baseline": "middle" }, layersG);
    text.textContent = `layer ${z}` + (gravity && z === 0 ? " (bottom)" : "");
    scene.labels.push(text);
  }
  for (let c = 0; c < game.board.cells; c++) {
    const g = svgEl("g", { class: "cell3d", tabindex: "0", role: "button" }, layersG);
    const poly = svgEl("polygon", {}, g);
    const heat = svgEl("polygon", { class: "heat" }, g);  // the hint's colour, inside a white edge
    const mark = svgEl("text", { class: "mark", "text-anchor": "middle", "dominant-baseline": "central" }, g);
    const text = svgEl("text", { class: "num", "text-anchor": "middle", "dominant-baseline": "central" }, g);
    const val = svgEl("text", { class: "val", "text-anchor": "middle", "dominant-baseline": "central" }, g);
    wireCell(g, c);
    g.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { clickCell(c); e.preventDefault(); }
    });
    scene.cells.push({ g, poly, heat, mark, text, val });
  }
  scene.lines = svgEl("g", { class: "lines3d" }, svg);
  turning(svg);
  return wrap;
}

// screen position of a point of the stack: x along a row, y along a column (cell units from the layer's
// centre), z the layer (from the stack's middle)
function projector() {
  const { n } = game.board;
  const s = scene.size, a = view.spin * Math.PI / 180, e = view.tilt * Math.PI / 180;
  const span = Math.SQRT2 * n * s * Math.sin(e);  // a layer's height on screen, whatever the spin
  const gap = span + 16;                          // from one layer to the next: clear of each other
  const left = 118, width = Math.SQRT2 * n * s + left + 16;  // room on the left for "layer 0 (bottom)"
  const height = (n - 1) * gap + span + 24;
  const cx = left + Math.SQRT2 * n * s / 2, cy = height / 2;
  const project = (x, y, z) => {
    const u = x * Math.cos(a) - y * Math.sin(a), v = x * Math.sin(a) + y * Math.cos(a);
    return [cx + u * s, cy - z * gap + v * s * Math.sin(e)];
  };
  return { project, width, height, room: (s - 6) * Math.sin(e) };  // room: a cell's height through its centre
}

function drawScene() {
  if (!scene || !scene.svg.isConnected) return;
  const { n } = game.board;
  const { project, width, height, room } = projector();
  const mid = (n - 1) / 2;
  const pts = (corners) => corners.map((p) => p.map((v) => v.toFixed(1)).join(",")).join(" ");
  const square = (x, y, z, h) => [[x - h, y - h], [x + h, y - h], [x + h, y + h], [x - h, y + h]]
    .map(([px, py]) => project(px, py, z));
  // the whole stack in the window: a short window draws it smaller (down to 60%), a narrow one as narrow as it is
  const top = $("board-area").getBoundingClientRect().top + window.scrollY;
  const main = $("board-area").parentElement, style = getComputedStyle(main);
  const across = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const fit = Math.min(across / width, Math.max(0.6, Math.min(1, (window.innerHeight - top - 12) / height)));
  scene.svg.setAttribute("width", Math.ceil(width * fit));
  scene.svg.setAttribute("height", Math.ceil(height * fit));
  scene.svg.setAttribute("viewBox", `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
  scene.svg.dataset.spin = Math.round(view.spin);  // degrees, for a reader of the page
  scene.svg.dataset.tilt = Math.round(view.tilt);
  for (let z = 0; z < n; z++) {
    const corners = square(0, 0, z - mid, n / 2 + 0.1);
    scene.plates[z].setAttribute("points", pts(corners));
    const leftmost = Math.min(...corners.map((p) => p[0]));
    const [, y] = project(0, 0, z - mid);
    scene.labels[z].setAttribute("x", (leftmost - 8).toFixed(1));
    scene.labels[z].setAttribute("y", y.toFixed(1));
  }
  const h = 0.5 - 3 / scene.size;  // a cell's half side, less a gap
  // The texts stand upright in a cell as flat as the tilt makes it: sized to its height through the centre
  // (`room`) and to its side. With a hint, the number and the value: two lines where they fit larger than
  // on one, else side by side (a value takes about 3.7 em, a number 1.3 em).
  const side = 2 * h * scene.size;
  const markSize = Math.min(17, 0.75 * room);
  const oneLine = Math.min(9, 0.75 * room, (0.95 * side - 2) / 5);
  const twoLines = Math.min(10, room / 2.4, 0.95 * side / 3.7);
  const font = Math.max(oneLine, twoLines), stacked = twoLines >= oneLine;
  const place = (t, x, y, anchor, size) => {
    t.setAttribute("x", x.toFixed(1));
    t.setAttribute("y", y.toFixed(1));
    t.setAttribute("text-anchor", anchor);
    t.style.fontSize = `${size.toFixed(1)}px`;
  };
  scene.cells.forEach(({ poly, heat, mark, text, val }, c) => {
    const [z, row, col] = coords(c);
    poly.setAttribute("points", pts(square(col - mid, row - mid, z - mid, h)));
    // the hint's colour leaves a white edge inside the outline, so a ring of any colour stands out on it
    heat.setAttribute("points", pts(square(col - mid, row - mid, z - mid, h - 7 / scene.size)));
    const [x, y] = project(col - mid, row - mid, z - mid);
    place(mark, x, y, "middle", markSize);
    if (!val.textContent) place(text, x, y, "middle", Math.min(10, 0.75 * room));
    else if (stacked) {
      place(text, x, y - 0.6 * font, "middle", font);  // a text's box is about 1.16 em high
      place(val, x, y + 0.62 * font, "middle", font);
    } else {
      const left = x - (5 * font + 2) / 2;
      place(text, left + 1.3 * font, y, "end", font);
      place(val, left + 1.3 * font + 2, y, "start", font);
    }
  });
  drawSceneLines();
}

// the hovered cell's lines, one colour each, and the winning line, as strokes through the cells' centres
function drawSceneLines() {
  if (!scene || !scene.svg.isConnected) return;
  const { n } = game.board;
  const mid = (n - 1) / 2;
  const { project } = projector();
  const centre = (c) => { const [z, row, col] = coords(c); return project(col - mid, row - mid, z - mid); };
  scene.lines.innerHTML = "";
  const stroke = (line, cls, colour) => {
    const ends = [centre(line[0]), centre(line[line.length - 1])];  // a line is straight on screen too
    const el = svgEl("line", { class: cls, x1: ends[0][0], y1: ends[0][1], x2: ends[1][0], y2: ends[1][1] },
      scene.lines);
    if (colour) el.setAttribute("stroke", colour);
    el.dataset.line = line.join("-");
  };
  if (game.win_line) stroke(game.win_line, "win-line");
  hoveredLines().forEach((line, i) => stroke(line, "hl-line", LINE_COLOURS[i % LINE_COLOURS.length]));
}

// Drag anywhere on the 3D view to turn it: sideways spins the stack, up and down tilts it. A drag that
// ends on a cell is no click.
let justTurned = false;

function turning(svg) {
  let from = null, moved = 0;
  svg.addEventListener("pointerdown", (e) => {
    from = [e.clientX, e.clientY];
    moved = 0;
    justTurned = false;
  });
  window.addEventListener("pointermove", (e) => {
    if (!from) return;
    const dx = e.clientX - from[0], dy = e.clientY - from[1];
    moved += Math.abs(dx) + Math.abs(dy);
    from = [e.clientX, e.clientY];
    if (moved > 4) turn(dx / 2, dy / 4);
  });
  window.addEventListener("pointerup", () => {
    if (from && moved > 4) {  // the click that follows this pointerup, in the same event, is the drag's end
      justTurned = true;
      setTimeout(() => { justTurned = false; });  // and no later click, on either view, nor Enter or Space
    }
    from = null;
  });
}

function turn(spin, tilt) {
  view.spin = ((view.spin + spin) % 360 + 540) % 360 - 180;
  view.tilt = Math.max(TILT[0], Math.min(TILT[1], view.tilt + tilt));
  drawScene();
}

function setView() {
  const on = $("view3d").checked && game && game.board.d === 3;
  $("board-area").classList.toggle("three-d", Boolean(on));
  if (on) drawScene();
}

// the classes of a cell, on both views
function cellClasses(c, legal, openAt, win) {
  const mark = game.cells[c];
  const mine = game.to_play && game.seats[game.to_play].human;
  return (mark ? " " + mark.toLowerCase() : "") + (legal.has(c) && mine ? " playable" : "")
    + (legal.has(c) && game.board.gravity ? " reach" : "")
    + (c === game.last ? " last" : "") + (win.has(c) ? " win" : "")
    + (openAt[c] ? [...openAt[c]].map((m) => " open-" + m.toLowerCase()).join("") : "");
}

function render() {
  const area = $("board-area");
  if (area.dataset.game !== game.id) buildBoard();
  const legal = new Set(game.legal);
  const openAt = {};
  for (const l of game.open_lines) (openAt[l.empty] ||= new Set()).add(l.mark);
  const win = new Set(game.win_line || []);
  for (let c = 0; c < game.board.cells; c++) {
    const el = cellEl(c);
    const mark = game.cells[c];
    const classes = cellClasses(c, legal, openAt, win);
    const name = `cell ${c} (${label(c)})${mark ? " " + mark : ""}`;
    el.querySelector(".mark").textContent = mark;
    el.querySelector(".num").textContent = mark ? "" : c;
    el.querySelector(".val").textContent = "";
    el.querySelector(".val").className = "val";
    el.style.background = "";
    el.className = "cell" + classes;
    el.setAttribute("aria-label", name);
    if (scene && scene.svg.isConnected) {
      const { g, heat, mark: m, text, val } = scene.cells[c];
      g.setAttribute("class", "cell3d" + classes);
      g.setAttribute("aria-label", name);
      m.textContent = mark;
      text.textContent = mark ? "" : c;
      val.textContent = "";
      heat.style.fill = "";
    }
  }
  showStatus();
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
  $("syntax").textContent = `A move: ${game.board.syntax}.` + (game.board.gravity
    ? " A click anywhere in a column drops the piece; the cells it can land on are shaded." : "");
  $("download").href = `/api/games/${game.id}/record`;
  $("hint-info").textContent = "";
  drawHover();
  drawScene();
  updateButtons();
}

// whose move, the result, or that the agent is thinking (with the cell clicked meanwhile, to be played next)
function showStatus() {
  const status = $("status");
  status.className = game.over ? "over" : thinking ? "thinking" : "";
  status.textContent = game.over
    ? game.result + (game.win_line ? ` along ${game.win_line.join(", ")}` : "")
    : `${game.to_play} to move (${game.seats[game.to_play].label})` + (thinking ? ": thinking…" : "");
  if (queued !== null && !game.over) {
    status.append(Object.assign(document.createElement("span"), {
      className: "queued", textContent: ` Your move ${queued} (${label(queued)}) follows.` }));
  }
}

function updateButtons() {
  const agent = agentToMove();
  $("step").disabled = !agent || busy;
  $("auto").disabled = !agent || someoneHuman();
  $("auto").textContent = autoPlay ? "Pause" : "Play on";
  $("undo").disabled = !game || game.moves.length === 0;
  $("move-input").disabled = !game || game.over || agent;
}

// The heat map's colours are fixed: -1 (a loss) red, 0 yellow, +1 (a win) green, whatever the position,
// so values that lie close together look alike; the panel gives their spread.
function heat(v) {
  const t = (Math.max(-1, Math.min(1, v)) + 1) / 2;
  return `hsl(${Math.round(130 * t)}, 70%, 74%)`;
}

const signed = (v) => (v >= 0 ? "+" : "") + v.toFixed(3);

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
    el.style.background = heat(value);
    el.classList.add("hinted");
    const val = el.querySelector(".val");
    val.textContent = signed(value);
    val.className = rules ? "val rule" : "val";
    if (scene && scene.svg.isConnected) {
      const { g, heat: shade, val: text } = scene.cells[cell];
      g.classList.add("hinted");
      shade.style.fill = heat(value);
      text.textContent = signed(value);
      text.setAttribute("class", rules ? "val rule" : "val");
    }
  }
  drawScene();  // the numbers and the values share the cells
  const info = $("hint-info");
  info.innerHTML = "";
  info.append(`Hint: ${hint.source}'s value of each move for ${hint.for}, coloured from -1 (a loss, red) through 0`
    + ` (yellow) to +1 (a win, green). Here from ${signed(lo)} to ${signed(hi)}: a spread of `);
  info.append(Object.assign(document.createElement("b"), { id: "hint-spread", textContent: (hi - lo).toFixed(3) }));
  info.append(hint.best === null ? "; every move loses." : `; its best move ${hint.best} (${label(hint.best)}).`);
  const scale = document.createElement("div");
  scale.className = "scale";
  scale.title = "the values' range on the fixed scale from -1 to +1";
  const range = document.createElement("span");
  range.style.left = `${(50 * (lo + 1)).toFixed(2)}%`;
  range.style.width = `${(50 * (hi - lo)).toFixed(2)}%`;
  scale.appendChild(range);
  info.appendChild(scale);
  if (hint.values.some((h) => h.rules)) {
    info.append(Object.assign(document.createElement("u"), { textContent: "Bold, underlined" }),
      ": the value its rules give (a win, a loss, a fork), not its network's estimate.");
  }
}

// A new game that the server refuses leaves the game on the board, and the form goes back to its settings.
async function newGame(event) {
  if (event) event.preventDefault();
  if (busy) return;
  autoPlay = false;
  const asked = { board: $("board").value, x: $("seat-x").value.trim(), o: $("seat-o").value.trim() };
  busy = true;
  showError("");
  try {
    game = await api("POST", "/api/games", asked);
  } catch (e) {
    busy = false;
    if (settings) {
      $("board").value = settings.board;
      $("seat-x").value = settings.x;
      $("seat-o").value = settings.o;
      showError(`New game refused: ${e.message}. Still playing ${settings.board}, X ${settings.x} against O ${settings.o}.`);
    } else {
      showError(e.message);
    }
    updateButtons();
    return;
  }
  busy = false;
  settings = asked;
  render();
  await afterUpdate();
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
  window.addEventListener("resize", drawScene);
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
    const arrows = { ArrowLeft: [-15, 0], ArrowRight: [15, 0], ArrowUp: [0, 5], ArrowDown: [0, -5] };
    if (arrows[e.key] && $("board-area").classList.contains("three-d")) { turn(...arrows[e.key]); e.preventDefault(); }
    if (/^[0-9]$/.test(e.key) && !$("move-input").disabled) { $("move-input").focus(); }
  });
  await newGame();  // the focus stays on the page, so the first key is a shortcut, not a character in a box
}

setup();
