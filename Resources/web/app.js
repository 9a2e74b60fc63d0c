// Backline's web page: speaks the daemon's JSON protocol (docs/PROTOCOL.md) over a WebSocket
// at /ws, one protocol object per message. No framework: a few render functions that write the
// DOM (always with textContent: tags come from files and streams), fed by replies and events.

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// Small helpers

const PROPS = new Set(['className', 'textContent', 'type', 'tabIndex', 'title']);

/** Creates an element: `props` are set as properties (PROPS) or attributes; null/false skipped. */
function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (PROPS.has(key)) node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

/** An icon from the sprite in index.html, hidden from assistive technology. */
function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  const use = document.createElementNS(ns, 'use');
  use.setAttribute('href', `#i-${name}`);
  svg.append(use);
  return svg;
}

function setIcon(button, name) {
  button.querySelector('use').setAttribute('href', `#i-${name}`);
}

/** A button with an aria-label, an optional icon and optional visible text. */
function button({ label, className, iconName, text, onClick }) {
  const b = h('button', { type: 'button', className, 'aria-label': label, title: label });
  if (iconName) b.append(icon(iconName));
  if (text) b.append(h('span', { textContent: text }));
  if (onClick) b.addEventListener('click', onClick);
  return b;
}

const pad = (n) => String(n).padStart(2, '0');

/** Seconds as m:ss (h:mm:ss from an hour). */
function fmt(seconds) {
  const s = Number.isFinite(seconds) && seconds > 0 ? Math.floor(seconds) : 0;
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  return hours ? `${hours}:${pad(minutes)}:${pad(s % 60)}` : `${minutes}:${pad(s % 60)}`;
}

/** A queue's length in words: "48 min", "2 h 5 min". */
function fmtLong(seconds) {
  const minutes = Math.round(seconds / 60);
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
}

const isStream = (path) => /^https?:\/\//i.test(path || '');
const basename = (path) => (path || '').split('/').filter(Boolean).pop() || path || '';
const itemTitle = (item) => item.title || basename(item.path);

/** A stream's host name ("radio.example.org"), shown where a file's album would be. */
function streamHost(path) {
  try {
    return new URL(path).host;
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Toast: transient error messages

let toastTimer = 0;

function toast(message) {
  const node = $('toast');
  node.textContent = message;
  node.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    node.classList.remove('show');
    toastTimer = setTimeout(() => { node.textContent = ''; }, 300);
  }, 4000);
}

/** Toasts a failed command, except a lost connection (the banner says that already). */
function showError(err) {
  if (err.code !== 'disconnected' && err.code !== 'unauthorized') toast(err.message);
}

// ---------------------------------------------------------------------------------------------
// Connection: one WebSocket, request ids matched to promises, reconnection with backoff

class CommandError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

const conn = { ws: null, nextId: 1, pending: new Map(), delay: 250, timer: 0 };

function connect() {
  clearTimeout(conn.timer);
  let ws;
  try {
    ws = new WebSocket(`${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws`);
  } catch {
    lost();
    return;
  }
  conn.ws = ws;
  let opened = false;
  ws.addEventListener('open', () => {
    opened = true;
    conn.delay = 250;
    setConnected(true);
    resync();
  });
  ws.addEventListener('message', (e) => onMessage(e.data));
  // 'error' is always followed by 'close'.
  ws.addEventListener('close', () => {
    if (conn.ws !== ws) return;
    conn.ws = null;
    if (!opened) checkSession();
    lost();
  });
}

/** The socket was refused: if the session is gone (a restart of the daemon ends them all), the
 *  login page; otherwise the daemon is away and reconnecting goes on. */
async function checkSession() {
  try {
    const r = await fetch('/status', { cache: 'no-store' });
    if (r.status === 401) location.assign('/login.html');
  } catch {
    // (the daemon is not answering at all: keep trying)
  }
}

/** The socket closed or never opened: fail what waits, say so, try again later (250 ms → 5 s). */
function lost() {
  for (const { reject } of conn.pending.values()) reject(new CommandError('disconnected', 'Not connected'));
  conn.pending.clear();
  setConnected(false);
  conn.timer = setTimeout(connect, conn.delay);
  conn.delay = Math.min(conn.delay * 2, 5000);
}

/**
 * The daemon's commands and event kinds (`GET /schema`): the page sends no command name the
 * daemon does not list, and subscribes to the kinds it lists that EVENTS handles.
 */
const schema = { commands: new Set(), events: [] };

async function loadSchema() {
  if (schema.commands.size) return;
  const reply = await fetch('/schema', { cache: 'no-store' });
  if (!reply.ok) throw new CommandError('schema', `GET /schema: ${reply.status}`);
  const body = await reply.json();
  schema.commands = new Set(body.commands.map((c) => c.name));
  schema.events = body.events;
}

/** Sends one request; resolves with the reply when ok, rejects with a CommandError otherwise. */
function call(command, args = {}) {
  return new Promise((resolve, reject) => {
    if (!schema.commands.has(command)) {
      reject(new CommandError('unknown-command', `The daemon has no command "${command}"`));
      return;
    }
    const ws = conn.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      reject(new CommandError('disconnected', 'Not connected'));
      return;
    }
    const id = conn.nextId++;
    conn.pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ ...args, id, command }));
  });
}

/** `call`, with a failure shown as a toast; resolves with the reply or null. */
async function act(command, args) {
  try {
    return await call(command, args);
  } catch (err) {
    showError(err);
    return null;
  }
}

function onMessage(data) {
  let msg;
  try {
    msg = JSON.parse(data);
  } catch {
    return;
  }
  if (typeof msg.event === 'string') {
    EVENTS[msg.event]?.(msg);
    return;
  }
  const waiting = conn.pending.get(msg.id);
  if (!waiting) return;
  conn.pending.delete(msg.id);
  if (msg.ok) {
    waiting.resolve(msg);
    return;
  }
  const err = new CommandError(msg.error?.code || 'error', msg.error?.message);
  if (err.code === 'unauthorized') location.assign('/login.html');
  waiting.reject(err);
}

function setConnected(on) {
  window.backline.connected = on;
  document.body.dataset.connected = String(on);
  const node = $('connection');
  node.textContent = on ? 'Connected' : 'Connection lost — reconnecting…';
  node.classList.toggle('lost', !on);
}

/** After (re)connecting: events first, then everything shown is read afresh. */
async function resync() {
  try {
    await loadSchema();
  } catch (err) {
    showError(err);
    return;
  }
  await act('subscribe', { events: schema.events.filter((kind) => kind in EVENTS) });
  await Promise.all([refreshStatus(), reloadQueue(), reloadPlaylists()]);
  if (lib.loaded) refreshLibrary();
}

// ---------------------------------------------------------------------------------------------
// Player state and the now-playing view

const player = {
  status: null,        // the last `status` reply, patched by events (window.backline.status)
  current: null,       // the current queue item
  state: 'stopped',
  buffering: false,
  running: false,      // the position advances (playing, not buffering)
  anchor: { elapsed: 0, at: 0 }, // the daemon's position at performance.now() = at
  speed: 1,            // content seconds per second while playing (the daemon's `speed`)
  duration: 0,
  seeking: false,      // the user holds the progress bar
  volumeHeld: false,   // the user moves the volume slider
};

window.backline = { status: null, connected: false };

/** Keeps the exposed status object current with what events say. */
function patch(fields) {
  if (player.status) Object.assign(player.status, fields);
}

async function refreshStatus() {
  try {
    applyStatus(await call('status'));
  } catch (err) {
    showError(err);
  }
}

function applyStatus(s) {
  player.status = s;
  window.backline.status = s;
  renderCurrent(s.current ?? null);
  setDuration(s.duration ?? s.current?.duration);
  player.buffering = Boolean(s.buffering);
  $('buffering').hidden = !player.buffering;
  applyState(s.state);
  anchor(s.elapsed ?? 0);
  renderVolume(s.volume, s.muted);
  renderModes(s);
  renderSpeed(s.speed);
  renderChapter(s.chapter ?? null);
}

/**
 * The chapter menu: the current item's chapters, the one heard selected; hidden when it has
 * none. The list is asked for when the item (or its chapter count) changes; a `chapter` event
 * or a status selects the one heard.
 */
async function renderChapter(c) {
  const menu = $('chapter');
  const key = c ? `${player.current?.id}:${c.count}` : '';
  if (key !== menu.dataset.key) {
    menu.dataset.key = key;
    const r = c ? await call('chapter').catch(() => null) : null;
    const list = r?.chapters ?? [];
    menu.replaceChildren(...list.map((ch, i) => new Option(`${i + 1}. ${ch.title ?? `Chapter ${i + 1}`} · ${fmt(ch.start)}`, String(i))));
    menu.hidden = list.length === 0;
  }
  if (c && c.chapter != null) menu.value = String(c.chapter);
}

/** The current song's rating and plays (its stickers); hidden for what the library lacks. */
async function renderStickers(item) {
  const box = $('song-stickers');
  const r = item && !isStream(item.path) ? await call('sticker', { action: 'list', path: item.path }).catch(() => null) : null;
  if (player.current?.path !== item?.path) return; // another item since
  box.hidden = !r;
  if (!r) return;
  const values = Object.fromEntries(r.stickers.map((s) => [s.name, s.value]));
  const rating = Number(values.rating ?? 0);
  const menu = $('rating');
  const option = rating > 0 ? String(Math.min(10, Math.max(2, Math.round(rating / 2) * 2))) : '';
  menu.value = option;
  const plays = Number(values.playCount ?? 0);
  $('plays').textContent = plays ? `Played ${plays} time${plays === 1 ? '' : 's'}` : 'Not played to the end yet';
}

const chapterGo = (args) => act('chapter', args).then((r) => r && r.position != null && anchor(r.position));

/** The speed menu, and how fast the bar moves: a speed the menu lacks is added to it. */
function renderSpeed(speed) {
  if (typeof speed !== 'number') return;
  anchor(elapsedNow()); // from here on at the new speed
  player.speed = speed;
  const menu = $('speed');
  const value = String(speed);
  if (![...menu.options].some((o) => o.value === value)) menu.add(new Option(`${value}×`, value));
  menu.value = value;
}

function applyState(state) {
  player.state = state;
  patch({ state });
  document.body.dataset.state = state;
  const playing = state === 'playing';
  for (const b of [$('play-pause'), $('mini-toggle')]) {
    b.setAttribute('aria-label', playing ? 'Pause' : 'Play');
    setIcon(b, playing ? 'pause' : 'play');
  }
  setRunning(playing && !player.buffering);
  updateDocumentTitle();
}

function renderCurrent(item) {
  const previousId = player.current?.id;
  player.current = item;
  patch({ current: item });
  document.body.dataset.hasItem = String(Boolean(item));
  const stream = Boolean(item) && isStream(item.path);
  const title = item ? itemTitle(item) : 'Nothing playing';
  const artist = item?.artist || '';
  const album = item?.album || (stream ? streamHost(item.path) : '');
  $('title').textContent = title;
  $('artist').textContent = artist;
  $('album').textContent = album;
  $('mini-title').textContent = title;
  $('mini-artist').textContent = artist;
  if (item?.id !== previousId) setCover(item?.id);
  if (item?.id !== previousId) renderStickers(item);
  markCurrent(item);
  updateDocumentTitle();
}

function updateDocumentTitle() {
  const item = player.current;
  if (player.state === 'playing' && item) {
    document.title = `${itemTitle(item)}${item.artist ? ` — ${item.artist}` : ''} · Backline`;
  } else {
    document.title = 'Backline';
  }
}

// Cover art: /art/ID, or the placeholder when the server has none (404 → 'error').
function setCover(id) {
  const img = $('cover');
  if (id == null) {
    img.removeAttribute('src');
    showPlaceholder();
  } else {
    img.src = `/art/${encodeURIComponent(id)}`;
  }
}

function showPlaceholder() {
  $('cover-wrap').classList.add('no-art');
  document.body.style.removeProperty('--art');
}

/** Tints the page's background glow with the cover's average colour. */
function tintFromCover(img) {
  try {
    const canvas = h('canvas');
    canvas.width = canvas.height = 8;
    const g = canvas.getContext('2d', { willReadFrequently: true });
    g.drawImage(img, 0, 0, 8, 8);
    const px = g.getImageData(0, 0, 8, 8).data;
    const sum = [0, 0, 0];
    for (let i = 0; i < px.length; i += 4) for (let c = 0; c < 3; c++) sum[c] += px[i + c];
    document.body.style.setProperty('--art', sum.map((v) => Math.round(v / 64)).join(' '));
  } catch {
    document.body.style.removeProperty('--art'); // an unreadable image: the theme's accent
  }
}

// Progress: extrapolated from the last known position with requestAnimationFrame.

function anchor(elapsed) {
  player.anchor = { elapsed, at: performance.now() };
  patch({ elapsed });
  kick();
}

function elapsedNow() {
  const { elapsed, at } = player.anchor;
  const t = player.running ? elapsed + player.speed * (performance.now() - at) / 1000 : elapsed;
  return player.duration > 0 ? Math.min(t, player.duration) : t;
}

function setRunning(run) {
  if (run === player.running) return;
  anchor(elapsedNow()); // freeze (or restart) from where the bar is now
  player.running = run;
  kick();
}

function setDuration(duration) {
  player.duration = duration > 0 ? duration : 0;
  const progress = $('progress');
  progress.max = String(player.duration);
  progress.disabled = !player.duration;
  const live = player.current && isStream(player.current.path) && !player.duration;
  $('duration').textContent = live ? 'Live' : fmt(player.duration);
  kick();
}

let frame = 0;
function kick() {
  if (!frame) frame = requestAnimationFrame(tick);
}

function tick() {
  frame = 0;
  renderProgress();
  if (player.running) kick();
}

function renderProgress() {
  const t = elapsedNow();
  const fraction = player.duration ? t / player.duration : 0;
  $('mini-fill').style.transform = `scaleX(${fraction})`;
  if (player.seeking) return;
  const progress = $('progress');
  progress.value = String(t);
  showPosition(t, fraction);
}

/** The elapsed text and the bar's fill, for `t` seconds (also while dragging). */
function showPosition(t, fraction) {
  const progress = $('progress');
  progress.style.setProperty('--fill', `${(fraction * 100).toFixed(2)}%`);
  const text = fmt(t);
  if ($('elapsed').textContent !== text) {
    $('elapsed').textContent = text;
    progress.setAttribute('aria-valuetext', `${text} of ${$('duration').textContent}`);
  }
}

let seekRelease = 0;

function wireProgress() {
  const progress = $('progress');
  progress.addEventListener('pointerdown', () => {
    player.seeking = true;
  });
  // Should a press end without a 'change' (no movement), let the bar run again.
  progress.addEventListener('pointerup', () => {
    seekRelease = setTimeout(() => {
      player.seeking = false;
      kick();
    }, 500);
  });
  progress.addEventListener('input', () => {
    const value = Number(progress.value);
    showPosition(value, player.duration ? value / player.duration : 0);
  });
  progress.addEventListener('change', async () => {
    clearTimeout(seekRelease);
    player.seeking = true; // keyboard changes too: hold the bar until the daemon answers
    const reply = await act('seek', { position: Number(progress.value) });
    player.seeking = false;
    if (reply) anchor(reply.position);
    kick();
  });
}

// Volume and modes

function renderVolume(volume, muted) {
  patch({ volume, muted });
  const slider = $('volume');
  if (volume != null && !player.volumeHeld) {
    slider.value = String(volume);
    slider.style.setProperty('--fill', `${volume}%`);
  }
  $('volume-value').textContent = muted ? 'Muted' : `${slider.value}%`;
  const mute = $('mute');
  mute.setAttribute('aria-pressed', String(Boolean(muted)));
  setIcon(mute, muted ? 'muted' : 'volume');
}

let volumeTimer = 0;
let volumeSent = 0;

function sendVolume() {
  volumeSent = performance.now();
  act('volume', { volume: Number($('volume').value) }).then((r) => r && renderVolume(r.volume, r.muted));
}

function wireVolume() {
  const slider = $('volume');
  // While moving: at most ten requests a second; the final value on 'change'.
  slider.addEventListener('input', () => {
    player.volumeHeld = true;
    slider.style.setProperty('--fill', `${slider.value}%`);
    $('volume-value').textContent = `${slider.value}%`;
    clearTimeout(volumeTimer);
    const wait = 100 - (performance.now() - volumeSent);
    if (wait <= 0) sendVolume();
    else volumeTimer = setTimeout(sendVolume, wait);
  });
  slider.addEventListener('change', () => {
    clearTimeout(volumeTimer);
    player.volumeHeld = false;
    sendVolume();
  });
  $('mute').addEventListener('click', toggleMute);
}

const REPEAT_NEXT = { off: 'all', all: 'one', one: 'off' };

function renderModes(m) {
  patch(Object.fromEntries(['repeat', 'shuffle', 'stopAfterCurrent', 'consume']
    .filter((k) => k in m).map((k) => [k, m[k]])));
  if ('repeat' in m) {
    const b = $('repeat');
    b.dataset.mode = m.repeat;
    b.setAttribute('aria-pressed', String(m.repeat !== 'off'));
    b.setAttribute('aria-label', `Repeat ${m.repeat}`);
    b.title = `Repeat: ${m.repeat} (r)`;
    setIcon(b, m.repeat === 'one' ? 'repeat-one' : 'repeat');
  }
  if ('shuffle' in m) $('shuffle').setAttribute('aria-pressed', String(Boolean(m.shuffle)));
  if ('stopAfterCurrent' in m) $('single').setAttribute('aria-pressed', String(Boolean(m.stopAfterCurrent)));
  if ('consume' in m) $('consume').setAttribute('aria-pressed', String(m.consume !== 'off'));
}

// Commands behind the buttons and the keys

const toggle = () => act('toggle').then((r) => r && applyState(r.state));
const next = () => act('next').then((r) => r && refreshStatus());
const previous = () => act('previous').then((r) => r && refreshStatus());
const seekBy = (offset) => act('seek', { offset }).then((r) => r && anchor(r.position));
const volumeBy = (change) => act('volume', { change }).then((r) => r && renderVolume(r.volume, r.muted));
const toggleMute = () => act('mute').then((r) => r && renderVolume(r.volume, r.muted));
const speedBy = (step) => {
  const speed = Math.min(3, Math.max(0.5, Math.round((player.speed + step) * 10) / 10));
  return act('speed', { speed }).then((r) => r && renderSpeed(r.speed));
};
const cycleRepeat = () => act('repeat', { mode: REPEAT_NEXT[player.status?.repeat] || 'all' })
  .then((r) => r && renderModes({ repeat: r.repeat }));
const toggleShuffle = () => act('shuffle', { on: !player.status?.shuffle })
  .then((r) => r && renderModes({ shuffle: r.shuffle }));
const toggleSingle = () => act('single', { on: !player.status?.stopAfterCurrent })
  .then((r) => r && renderModes({ stopAfterCurrent: r.stopAfterCurrent }));
const toggleConsume = () => act('consume', { mode: (player.status?.consume ?? 'off') === 'off' ? 'on' : 'off' })
  .then((r) => r && renderModes({ consume: r.consume }));

function wireTransport() {
  $('play-pause').addEventListener('click', toggle);
  $('mini-toggle').addEventListener('click', toggle);
  $('next').addEventListener('click', next);
  $('prev').addEventListener('click', previous);
  $('repeat').addEventListener('click', cycleRepeat);
  $('shuffle').addEventListener('click', toggleShuffle);
  $('single').addEventListener('click', toggleSingle);
  $('consume').addEventListener('click', toggleConsume);
  $('skip-back').addEventListener('click', () => act('skip', { back: true }).then((r) => r && anchor(r.position)));
  $('skip-forward').addEventListener('click', () => act('skip').then((r) => r && anchor(r.position)));
  $('chapter').addEventListener('change', () => chapterGo({ index: Number($('chapter').value) }));
  $('rating').addEventListener('change', () => {
    const path = player.current?.path;
    const value = $('rating').value;
    if (!path) return;
    if (value) act('sticker', { action: 'set', path, name: 'rating', value });
    else call('sticker', { action: 'delete', path, name: 'rating' }).catch(() => {}); // (none to delete: nothing to do)
  });
  $('speed').addEventListener('change', () => act('speed', { speed: Number($('speed').value) }).then((r) => r && renderSpeed(r.speed)));
  $('mini-open').addEventListener('click', () => selectTab('now', true));
  const cover = $('cover');
  cover.addEventListener('load', () => {
    $('cover-wrap').classList.remove('no-art');
    tintFromCover(cover);
  });
  cover.addEventListener('error', showPlaceholder);
}

/**
 * A row's text: the title, then the other parts on a second line. Their text reads
 * "Title — Artist — Album" (the first dash is there for the text, but not shown).
 */
function rowText(title, parts) {
  const text = h('span', { className: 'row-text' }, h('span', { className: 'row-title', textContent: title }));
  const shown = parts.filter(Boolean);
  if (!shown.length) return text;
  const sub = h('span', { className: 'row-sub' });
  shown.forEach((part, i) => sub.append(...(i ? [h('span', { className: 'sep', textContent: ' — ' })] : []), part));
  text.append(h('span', { className: 'joiner', textContent: ' — ' }), sub);
  return text;
}

// ---------------------------------------------------------------------------------------------
// The queue: rows, play/remove, reordering by pointer drag and Alt+Arrow

function queueRow(item) {
  const title = itemTitle(item);
  const li = h('li', {
    className: item.error ? 'row queue-row failed' : 'row queue-row',
    tabIndex: 0,
    'data-id': item.id,
    title: item.error || null,
    'aria-keyshortcuts': 'Alt+ArrowUp Alt+ArrowDown',
  });
  li.append(
    h('span', { className: 'handle', 'aria-hidden': 'true', title: 'Drag to reorder' }, icon('drag')),
    rowText(title, [item.artist]),
    h('span', { className: 'row-time', textContent: item.duration ? fmt(item.duration) : '' }),
    button({ label: `Remove ${title}`, className: 'icon-btn remove', iconName: 'close' }),
  );
  return li;
}

function renderQueue(items, currentId) {
  const list = $('queue');
  // Keep the keyboard focus on the same song (or the same place) across the reload.
  const focused = document.activeElement?.closest?.('#queue li');
  const focusId = focused?.dataset.id;
  const focusIndex = focused ? [...list.children].indexOf(focused) : -1;

  const fragment = document.createDocumentFragment();
  for (const item of items) fragment.append(queueRow(item));
  list.replaceChildren(fragment);

  const total = items.reduce((sum, item) => sum + (item.duration || 0), 0);
  $('queue-summary').textContent = items.length
    ? `${items.length} ${items.length === 1 ? 'song' : 'songs'} · ${fmtLong(total)}` : '';
  $('queue-empty').hidden = items.length > 0;
  $('clear-queue').hidden = items.length === 0;
  markCurrent(player.current?.id === currentId ? player.current : { id: currentId });

  if (focused) {
    const row = list.querySelector(`li[data-id="${CSS.escape(focusId)}"]`)
      || list.children[Math.min(focusIndex, list.children.length - 1)];
    row?.focus();
  }
}

/** Marks the current item's row (and refreshes its title: a stream's changes as it plays). */
function markCurrent(item) {
  const list = $('queue');
  for (const row of list.querySelectorAll('li.current')) {
    row.classList.remove('current');
    row.removeAttribute('aria-current');
  }
  if (item?.id == null) return;
  const row = list.querySelector(`li[data-id="${CSS.escape(String(item.id))}"]`);
  if (!row) return;
  row.classList.add('current');
  row.setAttribute('aria-current', 'true');
  if (item.path) row.querySelector('.row-title').textContent = itemTitle(item);
}

// One `list` at a time; events arriving meanwhile ask for one more afterwards.
let queueLoad = null;
let queueDirty = false;
let heldQueue = null; // a reply that came during a drag, rendered after the drop

function reloadQueue() {
  if (queueLoad) {
    queueDirty = true;
    return queueLoad;
  }
  queueLoad = (async () => {
    do {
      queueDirty = false;
      try {
        const reply = await call('list');
        if (drag) heldQueue = reply;
        else renderQueue(reply.items, reply.current);
      } catch (err) {
        showError(err);
      }
    } while (queueDirty);
    queueLoad = null;
  })();
  return queueLoad;
}

async function moveItem(id, position) {
  await act('move', { item: id, position });
  await reloadQueue();
}

let drag = null; // the reordering in progress: { li, id, from, to, rows, rects, startY, ... }

function wireQueue() {
  const list = $('queue');
  const scroller = $('panel-queue');

  list.addEventListener('click', (e) => {
    const li = e.target.closest('li[data-id]');
    if (!li || e.target.closest('.handle')) return;
    const id = Number(li.dataset.id);
    if (e.target.closest('.remove')) act('remove', { item: id }).then((r) => r && reloadQueue());
    else act('play', { item: id }).then((r) => r && applyState(r.state));
  });

  list.addEventListener('keydown', (e) => {
    const li = e.target;
    if (!(li instanceof HTMLLIElement) || !li.dataset.id) return;
    if (e.key === 'Enter') {
      e.preventDefault();
      act('play', { item: Number(li.dataset.id) }).then((r) => r && applyState(r.state));
    } else if (e.altKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
      e.preventDefault();
      const from = [...list.children].indexOf(li);
      const to = from + (e.key === 'ArrowUp' ? -1 : 1);
      if (to < 0 || to >= list.children.length) return;
      list.insertBefore(li, e.key === 'ArrowUp' ? li.previousElementSibling : li.nextElementSibling.nextElementSibling);
      li.focus();
      moveItem(Number(li.dataset.id), to);
    }
  });

  // Pointer-event dragging (works with a mouse, a pen, a finger and WebDriver alike).
  list.addEventListener('pointerdown', (e) => {
    const handle = e.target.closest('.handle');
    if (!handle || e.button !== 0 || drag) return;
    e.preventDefault();
    const li = handle.closest('li');
    const rows = [...list.children];
    handle.setPointerCapture(e.pointerId);
    drag = {
      li, handle, rows,
      pointerId: e.pointerId,
      id: Number(li.dataset.id),
      from: rows.indexOf(li),
      to: rows.indexOf(li),
      rects: rows.map((row) => row.getBoundingClientRect()),
      startY: e.clientY,
      startScroll: scroller.scrollTop,
      gap: parseFloat(getComputedStyle(list).rowGap) || 0,
    };
    li.classList.add('dragging');
    list.classList.add('reordering');
  });

  list.addEventListener('pointermove', (e) => {
    if (!drag || e.pointerId !== drag.pointerId) return;
    // Scroll the list when the pointer nears its edges.
    const box = scroller.getBoundingClientRect();
    if (e.clientY < box.top + 48) scroller.scrollTop -= 16;
    else if (e.clientY > box.bottom - 48) scroller.scrollTop += 16;

    const { rects, from, rows } = drag;
    const dy = e.clientY - drag.startY + (scroller.scrollTop - drag.startScroll);
    drag.li.style.transform = `translateY(${dy}px)`;
    // The new index: the rows whose centres the dragged row's centre has passed.
    const mid = (i) => rects[i].top + rects[i].height / 2;
    const centre = mid(from) + dy;
    let to = from;
    while (to < rows.length - 1 && centre >= mid(to + 1)) to++;
    while (to > 0 && centre <= mid(to - 1)) to--;
    drag.to = to;
    const shift = rects[from].height + drag.gap;
    rows.forEach((row, i) => {
      if (row === drag.li) return;
      const offset = from < to && i > from && i <= to ? -shift : to < from && i >= to && i < from ? shift : 0;
      row.style.transform = offset ? `translateY(${offset}px)` : '';
    });
  });

  const finish = (commit) => (e) => {
    if (!drag || e.pointerId !== drag.pointerId) return;
    const { li, rows, from, to, id } = drag;
    list.classList.remove('reordering'); // no transition while the rows snap into place
    li.classList.remove('dragging');
    for (const row of rows) row.style.transform = '';
    drag = null;
    if (commit && to !== from) {
      list.insertBefore(li, to > from ? rows[to].nextElementSibling : rows[to]);
      moveItem(id, to);
    } else if (heldQueue) {
      renderQueue(heldQueue.items, heldQueue.current);
    }
    heldQueue = null;
  };
  list.addEventListener('pointerup', finish(true));
  list.addEventListener('pointercancel', finish(false));

  $('clear-queue').addEventListener('click', () => {
    if (confirm('Clear the queue?')) act('clear').then((r) => r && reloadQueue());
  });
}

// ---------------------------------------------------------------------------------------------
// Library: search, and browsing by artist → album → songs or by folder

const lib = {
  loaded: false,       // browsed once (on first showing the tab)
  mode: 'artists',     // or 'folders'
  trail: [],           // artists mode: [] | [artist] | [artist, album]
  dir: '',             // folders mode: a path relative to the music directory
  browseSeq: 0,        // replies to older requests are dropped
  searchSeq: 0,
  searchTimer: 0,
};

/** Briefly shows a check mark on a button that did its job. */
function confirmDone(b) {
  const use = b.querySelector('use');
  const was = use?.getAttribute('href');
  if (!use) return;
  use.setAttribute('href', '#i-check');
  b.classList.add('done');
  setTimeout(() => {
    use.setAttribute('href', was);
    b.classList.remove('done');
  }, 1200);
}

function reportSkipped(reply) {
  const skipped = reply.skipped || [];
  if (skipped.length) toast(`Skipped ${basename(skipped[0].path)}: ${skipped[0].reason}${skipped.length > 1 ? ` (and ${skipped.length - 1} more)` : ''}`);
}

async function playNow(paths) {
  const added = await act('add', { paths });
  if (!added) return;
  reportSkipped(added);
  if (added.items.length) await act('play', { item: added.items[0] });
}

async function enqueue(paths, b) {
  const added = await act('add', { paths });
  if (!added) return;
  reportSkipped(added);
  if (added.items.length && b) confirmDone(b);
}

/** A song (a library song, or a file or playlist in a folder): play now / add to the queue. */
function songRow(song) {
  const title = song.title || basename(song.path);
  const li = h('li', { className: 'row song-row', 'data-path': song.path });
  li.append(
    rowText(title, [song.artist, song.album]),
    h('span', { className: 'row-time', textContent: song.duration ? fmt(song.duration) : '' }),
    button({ label: `Play ${title} now`, className: 'icon-btn play-now', iconName: 'play', onClick: () => playNow([song.path]) }),
    button({ label: `Add ${title} to the queue`, className: 'icon-btn enqueue', iconName: 'enqueue',
      onClick: (e) => enqueue([song.path], e.currentTarget) }),
  );
  return li;
}

/** An artist, album or directory to open; directories also get "add all". */
function entryRow({ label, iconName, onOpen, addPath }) {
  const li = h('li', { className: 'row entry-row' });
  const open = button({ label: `Open ${label}`, className: 'open', iconName, onClick: onOpen });
  open.append(h('span', { className: 'entry-name', textContent: label }), icon('chevron'));
  li.append(open);
  if (addPath != null) {
    li.dataset.path = addPath;
    li.append(button({ label: `Add all of ${label}`, className: 'icon-btn add-all', iconName: 'enqueue',
      onClick: (e) => enqueue([addPath], e.currentTarget) }));
  }
  return li;
}

function renderCrumbs(crumbs) {
  const list = $('crumbs');
  list.replaceChildren(...crumbs.map((crumb, i) => {
    const last = i === crumbs.length - 1;
    return h('li', {}, last
      ? h('span', { 'aria-current': 'location', textContent: crumb.label })
      : button({ label: `Go to ${crumb.label}`, className: 'crumb', text: crumb.label, onClick: crumb.go }));
  }));
}

/** Header buttons for what is shown (an album or a folder): play it all, add it all. */
function renderBrowseActions(label, add) {
  const box = $('browse-actions');
  box.replaceChildren();
  if (!add) return;
  box.append(
    button({ label: `Play ${label}`, className: 'chip-btn header-play', iconName: 'play', text: 'Play all',
      onClick: async () => {
        const added = await add();
        if (added?.items.length) act('play', { item: added.items[0] });
      } }),
    button({ label: `Add ${label} to the queue`, className: 'chip-btn header-add', iconName: 'enqueue', text: 'Add all',
      onClick: async (e) => {
        const b = e.currentTarget;
        if ((await add())?.items.length) confirmDone(b);
      } }),
  );
}

function setBrowseMode(mode) {
  lib.mode = mode;
  for (const m of ['artists', 'folders', 'played', 'rated']) $(`browse-${m}`).setAttribute('aria-pressed', String(mode === m));
  showBrowse();
}

/** Shows the browse view for lib.mode/trail/dir; `fromTop` scrolls back up (a new place). */
async function showBrowse(fromTop = true) {
  const seq = ++lib.browseSeq;
  const note = $('browse-note');
  try {
    const view = lib.mode === 'artists' ? await browseArtists()
      : lib.mode === 'played' ? await browseBySticker('playCount', 'Most played', (n) => `${n}×`)
      : lib.mode === 'rated' ? await browseBySticker('rating', 'Top rated', (n) => `${n}/10`)
      : await browseFolder(lib.dir);
    if (seq !== lib.browseSeq) return;
    renderCrumbs(view.crumbs);
    renderBrowseActions(view.label, view.add);
    $('browse').replaceChildren(...view.rows);
    note.textContent = view.rows.length ? '' : view.empty;
    if (fromTop) $('panel-library').scrollTop = 0;
  } catch (err) {
    if (seq !== lib.browseSeq) return;
    $('browse').replaceChildren();
    renderBrowseActions();
    note.textContent = err.message;
  }
}

async function browseArtists() {
  const [artist, album] = lib.trail;
  const go = (trail) => () => { lib.trail = trail; showBrowse(); };
  const crumbs = [{ label: 'Artists', go: go([]) }];
  if (artist !== undefined) crumbs.push({ label: artist || 'Unknown artist', go: go([artist]) });
  if (album !== undefined) crumbs.push({ label: album || 'Unknown album', go: go(lib.trail) });

  if (artist === undefined) {
    const reply = await call('list', { tag: 'AlbumArtist' });
    const rows = reply.values.map((v) => v[v.length - 1]).map((name) =>
      entryRow({ label: name || 'Unknown artist', iconName: 'person', onOpen: go([name]) }));
    return { crumbs, rows, empty: 'No artists: the library is empty.' };
  }
  if (album === undefined) {
    const reply = await call('list', { tag: 'Album', terms: ['AlbumArtist', artist] });
    const rows = reply.values.map((v) => v[v.length - 1]).map((name) =>
      entryRow({ label: name || 'Unknown album', iconName: 'album', onOpen: go([artist, name]) }));
    return { crumbs, rows, empty: 'No albums.' };
  }
  const terms = ['AlbumArtist', artist, 'Album', album];
  const reply = await call('find', { terms });
  return {
    crumbs,
    rows: reply.songs.map(songRow),
    empty: 'No songs.',
    label: album || 'this album',
    add: () => act('find-add', { terms }),
  };
}

/** The songs holding the sticker `name`, the highest value first (its songs' tags from `find`). */
async function browseBySticker(name, label, show) {
  const found = (await call('sticker', { action: 'find', name, sort: '-value_int', window: '0:100' })).stickers;
  const songs = new Map();
  await Promise.all(found.map(async (s) => {
    const r = await call('find', { terms: ['file', s.path] }).catch(() => null);
    songs.set(s.path, r?.songs?.[0] ?? { path: s.path });
  }));
  const rows = found.map((s) => {
    const li = songRow(songs.get(s.path));
    li.querySelector('.row-time').textContent = show(s.value);
    return li;
  });
  return { crumbs: [{ label, go: () => showBrowse() }], rows, empty: name === 'rating' ? 'No song is rated yet.' : 'No song was played to its end yet.' };
}

async function browseFolder(dir) {
  const go = (path) => () => { lib.dir = path; showBrowse(); };
  const parts = dir.split('/').filter(Boolean);
  const crumbs = [{ label: 'Music', go: go('') }, ...parts.map((part, i) => ({ label: part, go: go(parts.slice(0, i + 1).join('/')) }))];

  let entries;
  try {
    entries = (await call('ls', dir ? { path: dir } : {})).entries;
  } catch (err) {
    if (err.code !== 'unsupported') throw err;
    // No library (library = off): the music directory itself, as `browse` lists it.
    entries = (await call('browse', dir ? { path: dir } : {})).entries
      .filter((e) => e.kind !== 'other')
      .map((e) => (e.kind === 'audio' ? { ...e, kind: 'song' } : e));
  }
  const rows = [];
  for (const entry of entries) {
    if (entry.kind === 'directory') {
      const name = basename(entry.path);
      rows.push(entryRow({ label: name, iconName: 'folder', onOpen: go(entry.path), addPath: entry.path }));
    } else {
      rows.push(songRow(entry)); // songs, and playlists (`add` takes those too)
    }
  }
  return {
    crumbs,
    rows,
    empty: 'Nothing in this folder.',
    label: parts.length ? parts[parts.length - 1] : '',
    add: parts.length ? () => act('add', { paths: [dir] }) : null,
  };
}

async function runSearch() {
  const text = $('search').value.trim();
  const seq = ++lib.searchSeq;
  $('search-view').hidden = !text;
  $('browse-view').hidden = Boolean(text);
  if (!text) return;
  const note = $('search-note');
  try {
    const reply = await call('search', { terms: ['any', text], window: '0:200' });
    if (seq !== lib.searchSeq) return;
    $('results').replaceChildren(...reply.songs.map(songRow));
    note.textContent = reply.songs.length === 0 ? 'No matches.'
      : reply.songs.length >= 200 ? 'The first 200 matches.' : '';
  } catch (err) {
    if (seq !== lib.searchSeq) return;
    $('results').replaceChildren();
    note.textContent = err.message; // e.g. `unsupported`: the library is off
  }
}

function refreshLibrary() {
  showBrowse(false);
  if ($('search').value.trim()) runSearch();
}

function wireLibrary() {
  $('search').addEventListener('input', () => {
    clearTimeout(lib.searchTimer);
    lib.searchTimer = setTimeout(runSearch, 150);
  });
  $('browse-artists').addEventListener('click', () => setBrowseMode('artists'));
  $('browse-folders').addEventListener('click', () => setBrowseMode('folders'));
  $('browse-played').addEventListener('click', () => setBrowseMode('played'));
  $('browse-rated').addEventListener('click', () => setBrowseMode('rated'));
}

// ---------------------------------------------------------------------------------------------
// Stored playlists

function playlistRow({ name, modified }) {
  const date = modified ? new Date(modified) : null;
  const when = date && !Number.isNaN(date.getTime())
    ? date.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }) : '';
  return h('li', { className: 'row playlist-row', 'data-name': name },
    rowText(name, [when && `Saved ${when}`]),
    button({ label: `Load ${name}`, className: 'chip-btn load', text: 'Load',
      onClick: async (e) => {
        const b = e.currentTarget;
        const loaded = await act('load', { name });
        if (loaded) reportSkipped(loaded);
        if (loaded?.items.length) b.classList.add('done');
        setTimeout(() => b.classList.remove('done'), 1200);
      } }),
    button({ label: `Play ${name}`, className: 'chip-btn accent play', text: 'Play',
      onClick: async () => {
        if (!(await act('clear'))) return;
        const loaded = await act('load', { name });
        if (!loaded) return;
        reportSkipped(loaded);
        await act('play', loaded.items.length ? { item: loaded.items[0] } : {});
      } }),
  );
}

async function reloadPlaylists() {
  try {
    const reply = await call('playlists');
    $('playlists').replaceChildren(...reply.playlists.map(playlistRow));
    $('playlists-empty').hidden = reply.playlists.length > 0;
  } catch (err) {
    showError(err);
  }
}

// ---------------------------------------------------------------------------------------------
// Events from the daemon (after `subscribe`)

const EVENTS = {
  state(e) {
    applyState(e.state);
    refreshStatus(); // the exact position where it paused, stopped or resumed
  },
  buffering(e) {
    player.buffering = e.buffering;
    patch({ buffering: e.buffering });
    $('buffering').hidden = !e.buffering;
    setRunning(player.state === 'playing' && !e.buffering);
  },
  current(e) {
    const changed = e.item?.id !== player.current?.id;
    renderCurrent(e.item ?? null); // the same item again: a stream's new title
    setDuration(e.item?.duration);
    if (changed) {
      anchor(0);
      refreshStatus();
    }
  },
  seeked(e) {
    if (e.item === player.current?.id) anchor(e.time);
  },
  chapter(e) {
    if (e.item === player.current?.id) renderChapter(e);
  },
  sticker(e) {
    const path = player.current?.path;
    if (path && (path === e.path || path.endsWith(`/${e.path}`))) renderStickers(player.current);
  },
  position(e) {
    if (e.item !== player.current?.id) return;
    setDuration(e.duration);
    anchor(e.elapsed);
  },
  volume(e) {
    renderVolume(e.volume, e.muted);
  },
  modes(e) {
    renderModes(e);
    refreshStatus(); // (the speed is an option too: status has it)
  },
  queue() {
    reloadQueue();
  },
  playlists() {
    reloadPlaylists();
  },
  failed(e) {
    toast(`Could not play ${basename(e.path)}: ${e.reason}`);
  },
  update(e) {
    if (e.done && lib.loaded) refreshLibrary(); // a library scan finished
  },
};

// ---------------------------------------------------------------------------------------------
// Tabs: one view at a time on a phone; now playing beside the others from 900 px

const TABS = ['now', 'queue', 'library', 'playlists'];
const wide = matchMedia('(min-width: 900px)');
let currentTab = 'now';

function selectTab(name, focus = false) {
  currentTab = name;
  document.body.dataset.tab = name;
  // Wide: now playing is always shown, and the side panel shows the queue for "Now playing".
  const side = wide.matches && name === 'now' ? 'queue' : name;
  for (const t of TABS) {
    const tab = $(`tab-${t}`);
    tab.setAttribute('aria-selected', String(t === name));
    tab.tabIndex = t === name ? 0 : -1;
    $(`panel-${t}`).hidden = !(t === name || (wide.matches && (t === 'now' || t === side)));
  }
  if (focus) $(`tab-${name}`).focus();
  if (side === 'library' && !lib.loaded) {
    lib.loaded = true;
    showBrowse();
  }
  if (side === 'queue') $('queue').querySelector('li.current')?.scrollIntoView({ block: 'nearest' });
}

function wireTabs() {
  for (const t of TABS) $(`tab-${t}`).addEventListener('click', () => selectTab(t));
  // Arrow keys, Home and End move between the tabs (the WAI-ARIA tabs pattern).
  $('tablist').addEventListener('keydown', (e) => {
    const i = TABS.indexOf(currentTab);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    selectTab(TABS[(to + TABS.length) % TABS.length], true);
  });
  wide.addEventListener('change', () => selectTab(currentTab));
  selectTab(wide.matches ? 'queue' : 'now');
}

// ---------------------------------------------------------------------------------------------
// Keyboard shortcuts (the terminal player's keys) and the help dialog

const KEYS = {
  ' ': toggle, p: toggle,
  n: next, '>': next,
  b: previous, '<': previous,
  ArrowLeft: () => seekBy(-5), ArrowRight: () => seekBy(5),
  ArrowDown: () => seekBy(-30), ArrowUp: () => seekBy(30),
  9: () => volumeBy(-5), '-': () => volumeBy(-5),
  0: () => volumeBy(5), '+': () => volumeBy(5), '=': () => volumeBy(5),
  m: toggleMute,
  j: () => act('skip', { back: true }).then((r) => r && anchor(r.position)),
  l: () => act('skip').then((r) => r && anchor(r.position)),
  '[': () => speedBy(-0.1), ']': () => speedBy(0.1),
  PageUp: () => chapterGo({ to: 'next' }), '@': () => chapterGo({ to: 'next' }),
  PageDown: () => chapterGo({ to: 'previous' }), '!': () => chapterGo({ to: 'previous' }),
  r: cycleRepeat,
  s: toggleShuffle,
  '?': () => $('help').showModal(),
};

function wireKeys() {
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const target = e.target instanceof Element ? e.target : document.body;
    if (target.closest('input, textarea, select, [contenteditable]') || $('help').open) return;
    // Space on a focused button presses that button.
    if (e.key === ' ' && target.closest('button, a, summary')) return;
    const action = KEYS[e.key.length === 1 ? e.key.toLowerCase() : e.key];
    if (!action) return;
    e.preventDefault();
    action();
  });
  const help = $('help');
  $('help-button').addEventListener('click', () => help.showModal());
  $('help-close').addEventListener('click', () => help.close());
  help.addEventListener('click', (e) => {
    if (e.target === help) help.close(); // a click on the backdrop
  });
}

// ---------------------------------------------------------------------------------------------
// Start

function initPlayer() {
  wireTabs();
  wireTransport();
  wireProgress();
  wireVolume();
  wireQueue();
  wireLibrary();
  wireKeys();
  connect();
}

/** login.html: say why the last attempt failed (the server redirects with ?failed or ?limited). */
function initLogin() {
  const query = new URLSearchParams(location.search);
  const message = $('login-message');
  if (query.has('limited')) message.textContent = 'Too many attempts; wait a minute';
  else if (query.has('failed')) message.textContent = 'Wrong password';
  message.hidden = !message.textContent;
}

if (document.body.dataset.page === 'login') initLogin();
else initPlayer();
