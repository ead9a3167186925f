// Concord's rater screens: one page-wide key listener and a few layout helpers.
//
// Each bound key becomes a click on a widget; clicks are sent one at a time, each after
// the app has finished the rerun the previous one caused, so fast typing neither loses
// keys nor reorders them (Streamlit merges clicks that arrive during a run).
// Data from Python (concord/ui/widgets.py keyboard()):
//   bindings: {key: {css, nth, rerun}}   keys of a single character are lower-case
//   escape:   css of the button Esc clicks (cancels an open skip/flag form), or null
//   focus:    css of a text field to focus as soon as it appears (the skip reason), or null
//   clicks:   [{within, target}]: a click on an <img> inside `within` clicks `target` in it
//   item:     id of the item on screen; when it changes the page scrolls back to the top
//   opens:    keys whose click opens a reason field (skip, flag): what is typed after such
//             a key and before the field is there goes into the field, not to shortcuts,
//             and an Enter typed meanwhile submits the field once the text is in it
//   submit:   css of the open reason form's submit button: Enter in the field clicks it
//             once the app is idle (Streamlit ignores an Enter that comes before the form's
//             button is registered, e.g. while the run drawing the form is still going)
//   enterIn:  css of text fields in which Enter does what Enter does on the page (the
//             override reasons of a checklist: Enter submits the rating), or null
//   ring:     css of the buttons that bindings {move: 1 | -1} move the focus along (My
//             ratings: J / K go from row to row, Enter opens the row focused), or null
//   sliders:  [css] of the sliders on screen: an arrow key, PgUp/PgDn, Home or End pressed
//             while no field has the focus moves the first of them (it gets the focus)
//   comment:  css of the comment field: Esc in it gives the focus back to the page (the
//             keys work again), Ctrl+Enter in it does what Enter does on the page
//   draft:    {id, fields: [css]}: the choices on screen (radio labels, checkboxes) are
//             kept in localStorage under the item's id as the rater makes them, and made
//             again when the same item is drawn after a reload; null on other screens
// A binding is {css, nth, rerun} (a click), {move} (the focus along `ring`), {cycle:
// [css]} (the focus to the next of these radio groups: its checked radio, else its first;
// or to the next slider) or {focusOn: css} (the cursor into that text field).
// A key name "shift+x" binds x with Shift held ("shift+3": the digit key 3, whatever the
// layout types with Shift).
const BUSY = new Set(['running', 'rerunRequested', 'stopRequested']);
const appState = () => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app ? app.getAttribute('data-test-script-state') : null;
};
const typing = (t) => t && (t.isContentEditable || t.tagName === 'TEXTAREA' ||
    t.tagName === 'SELECT' ||
    (t.tagName === 'INPUT' && !['radio', 'checkbox', 'range'].includes(t.type)));
// The keys a slider takes (the browser's own: one step, a tenth of the scale, the ends).
const SLIDER_KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'PageUp',
                             'PageDown', 'Home', 'End']);
const onWidget = (t) => t && (typing(t) || t.tagName === 'INPUT' || t.tagName === 'SELECT');
const scroller = () => document.querySelector('[data-testid="stMain"]');

// A synthetic click on a radio focuses it, and the browser scrolls the focused element
// into view, pushing the prompt and progress off screen: put the scroll position back.
function clickInPlace(el) {
  const main = scroller();
  const top = main ? main.scrollTop : 0;
  const win = window.scrollY;
  el.click();
  if (main) main.scrollTop = top;
  window.scrollTo(window.scrollX, win);
}

// Submit the reason field: a click on its form's submit button, or, without one, an Enter
// on the field as Streamlit's own key handler reads it (key and keyCode).
function pressEnter(kb, field) {
  const ok = kb.submit && document.querySelector(kb.submit);
  if (ok) {
    clickInPlace(ok);
    return;
  }
  kb.sending = true;  // our own Enter: onKey lets it through to Streamlit
  try {
    field.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', code: 'Enter',
                                                      keyCode: 13, which: 13, bubbles: true,
                                                      cancelable: true}));
  } finally {
    kb.sending = false;
  }
}

function pump(kb) {
  if (kb.busy || kb.queue.length === 0) return;
  if (BUSY.has(appState())) {
    // A run is still updating the page (e.g. resetting the choices for the next
    // image): a click now could be overwritten by it, so wait for it to end.
    setTimeout(() => pump(kb), 5);
    return;
  }
  const b = kb.queue.shift();
  // Esc's Cancel is looked up now: the data naming it may have come since the key.
  if (b.cancel) b.css = kb.escape || b.css;
  const found = b.el ? [b.el] : document.querySelectorAll(b.css);
  const el = found[b.nth || 0];
  if (!el || !el.isConnected) {
    if (!b.el && found.length === 0 && waitFor(kb, b)) return;
    if (b.opens) settleTyped(kb);
    pump(kb);
    return;
  }
  if (b.rerun && !b.restored && restoreChoices(kb, b)) return;
  kb.busy = true;
  if (b.enter) pressEnter(kb, el); else clickInPlace(el);
  if (b.rerun) kb.choices.clear();  // sent with this run; the next page has its own
  if (!b.rerun) {  // e.g. a choice inside a form: nothing runs on the server
    // A choice made while the page is still settling can be dropped; check that the
    // radio took it and click again once if it did not.
    const input = el.querySelector('input');
    if (input && input.type === 'radio' && b.css) kb.choices.set(b.css, b);
    setTimeout(() => {
      if (input && !input.checked && !b.retried) {
        kb.queue.unshift({...b, retried: true});
      }
      kb.busy = false;
      pump(kb);
    }, 20);
    return;
  }
  const t0 = performance.now();
  let ran = false;
  const wait = () => {
    const busy = BUSY.has(appState());
    ran = ran || busy;
    const waited = performance.now() - t0;
    // A click that causes no run (a disabled or vanished widget) must not block the queue.
    if ((ran && !busy) || (!ran && waited > 1000) || waited > 10000) {
      if (b.cancel && !b.retried) {
        setTimeout(() => recheckCancel(kb, b), 30);
        return;
      }
      kb.busy = false;
      if (b.opens) settleTyped(kb);
      pump(kb);
    } else {
      setTimeout(wait, 5);
    }
  };
  setTimeout(wait, 5);
}

// Esc's click on Cancel ended: a form still open means Streamlit dropped the click (it can,
// while the form's buttons are being registered), so it is sent once more. Cancel is
// harmless when nothing is open.
function recheckCancel(kb, b) {
  const still = document.querySelector(b.css);
  if (still && still.isConnected) kb.queue.unshift({...b, retried: true});
  kb.busy = false;
  pump(kb);
}

// A rerun click (a submit) sends the choices on the page: a choice typed by key whose radio
// group has been reset since (a redraw of the page that came after the click) is clicked
// again first. A group with any choice checked is left alone: the rater may have clicked
// another level with the mouse.
function restoreChoices(kb, b) {
  const lost = [...kb.choices.values()].filter((c) => {
    const inputs = [...document.querySelectorAll(c.css)].map((l) => l.querySelector('input'));
    return inputs.length > c.nth && inputs.every((i) => i && !i.checked);
  });
  if (lost.length === 0) return false;
  kb.queue.unshift(...lost.map((c) => ({...c, retried: true})), {...b, restored: true});
  pump(kb);
  return true;
}

// No widget of the key's kind is on the page yet: Streamlit can draw a widget a moment
// after the rest of the page (while its code loads; the keys are ready before), and a
// level key pressed then was lost. The key waits for it, 1 s at most, and the keys after it
// wait too, so an Enter never submits ahead of the choices typed before it.
function waitFor(kb, b) {
  const since = b.since ?? performance.now();
  if (performance.now() - since > 1000) return false;
  kb.queue.unshift({...b, since});
  setTimeout(() => pump(kb), 20);
  return true;
}

// What Esc clicks when the data naming the open form's cancel button has not arrived yet
// (or was cleared by the previous instance): any keyed cancel button on the page.
const ANY_CANCEL = "[class*='st-key-'][class*='_cancel'] button";

// The comment field: Esc leaves it, Ctrl+Enter (Cmd+Enter) submits as Enter would. Leaving
// it (blur) hands its text to the app before the submit's click.
function inComment(kb, e) {
  const t = e.target;
  if (!kb.comment || !t || !t.matches || !t.matches(kb.comment)) return false;
  const submit = e.key === 'Enter' && (e.ctrlKey || e.metaKey) && kb.bindings.Enter;
  if (e.key !== 'Escape' && !submit) return false;
  e.preventDefault();
  e.stopImmediatePropagation();
  t.blur();
  if (submit) {
    kb.queue.push(kb.bindings.Enter);
    pump(kb);
  }
  return true;
}

// An arrow key (PgUp/PgDn, Home, End) with no field focused: the first slider takes the
// focus and the key, so a rater can set a slider without reaching for the mouse.
function toSlider(kb, e) {
  if (!SLIDER_KEYS.has(e.key) || kb.bindings[e.key] || !kb.sliders || onWidget(e.target)) {
    return false;
  }
  const slider = kb.sliders.map((css) => document.querySelector(css)).find(Boolean);
  if (!slider) return false;
  e.preventDefault();
  e.stopImmediatePropagation();
  slider.focus({preventScroll: true});
  for (const type of ['keydown', 'keyup']) {
    slider.dispatchEvent(new KeyboardEvent(type, {key: e.key, code: e.code, bubbles: true,
                                                  cancelable: true}));
  }
  return true;
}

function onKey(kb, e) {
  if (e.repeat) return;  // a held key's native repeats (a slider's) go on unhindered
  if (inComment(kb, e)) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'Escape') {
    const css = kb.escape || ANY_CANCEL;
    const pending = kb.typed !== null && kb.typed !== undefined;
    // The field can be drawn before its form's Cancel button (or the field's own run may
    // still be going): Esc then waits for the button like any other key (see waitFor).
    if (document.querySelector(css) || pending || (kb.focus && document.querySelector(kb.focus))) {
      e.preventDefault();
      e.stopImmediatePropagation();
      // Keys typed for a field not there yet are dropped with it; later keys queue as
      // shortcuts behind this Esc.
      if (pending) kb.typed = null;
      kb.queue.push({css, nth: 0, rerun: true, cancel: true});
      pump(kb);
    }
    return;
  }
  if (kb.sending) return;
  const field = kb.focus && document.querySelector(kb.focus);
  if (e.key === 'Enter' && field && e.target === field) {
    // Enter in the reason field: Streamlit ignores it while the form's submit button is
    // not registered yet (the run drawing the form may still be going), so it goes
    // through the queue, after any run, as a click on that button.
    e.preventDefault();
    e.stopImmediatePropagation();
    kb.queue.push({el: field, enter: true, rerun: true});
    pump(kb);
    return;
  }
  if (e.key === 'Enter' && kb.enterIn && e.target && e.target.matches &&
      e.target.matches(kb.enterIn) && kb.bindings.Enter) {
    // Enter in an override reason: the field gives its text up (blur), then the submit.
    e.preventDefault();
    e.stopImmediatePropagation();
    e.target.blur();
    kb.queue.push(kb.bindings.Enter);
    pump(kb);
    return;
  }
  if (typing(e.target) || toSlider(kb, e)) return;
  if (kb.typed !== null && kb.typed !== undefined &&
      performance.now() - kb.typedSince > 10000) {
    settleTyped(kb, 50);  // never hold keys for long, whatever happened to the click
  }
  if (kb.typed !== null && kb.typed !== undefined &&
      (e.key.length === 1 || e.key === 'Enter')) {
    // A key that opens a reason field was pressed and the field is not there yet.
    e.preventDefault();
    e.stopImmediatePropagation();
    kb.typed += e.key === 'Enter' ? '\n' : e.key;
    return;
  }
  // A reason field is open (skip / flag) but the focus is elsewhere: it came before the
  // field, or a rerun replaced the field. The key belongs to the field, not to a shortcut:
  // focusing it now makes the browser type this very key into it.
  if (field && (e.key.length === 1 || e.key === 'Enter')) {
    field.focus({preventScroll: true});
    if (e.key === 'Enter') {  // never a rating submit while a reason field is open
      e.preventDefault();
      e.stopImmediatePropagation();
    }
    return;
  }
  // With Shift a digit key gives "!", "@"... by keyboard layout: its code names the digit.
  const digit = e.shiftKey && /^Digit[0-9]$/.test(e.code || '') ? e.code.slice(5) : null;
  const plain = digit ?? (e.key.length === 1 ? e.key.toLowerCase() : e.key);
  const k = e.shiftKey && kb.bindings[`shift+${plain}`] ? `shift+${plain}` : plain;
  const b = kb.bindings[k];
  if (!b) return;
  // Capture phase + stopImmediatePropagation: Streamlit's own R (rerun) and C
  // (clear cache) hotkeys must not fire when the page binds those letters.
  e.preventDefault();
  e.stopImmediatePropagation();
  if (b.move) {
    moveFocus(kb.ring, b.move);
    return;
  }
  if (b.cycle) {
    cycleFocus(b.cycle);
    return;
  }
  if (b.focusOn) {
    const field = document.querySelector(b.focusOn);
    if (field) {
      field.focus();
      if (field.scrollIntoView) field.scrollIntoView({block: 'nearest'});
    }
    return;
  }
  const opens = kb.opens.includes(k);
  if (opens) {
    kb.typed = '';
    kb.typedSince = performance.now();
  }
  kb.queue.push(opens ? {...b, opens: true} : b);
  pump(kb);
}

// The run of a field-opening click ended: what was typed meanwhile goes into the field, or,
// when no field opened (e.g. a flag taken back), is replayed as the shortcuts it was.
function settleTyped(kb, tries = 0) {
  if (kb.typed === null || kb.typed === undefined) return;
  const field = kb.focus && document.querySelector(kb.focus);
  if (!field && tries < 50) {
    // The data naming the field may come a little after the run: look again for 1 s.
    setTimeout(() => settleTyped(kb, tries + 1), 20);
    return;
  }
  const typed = kb.typed || '';
  kb.typed = null;
  const enter = typed.indexOf('\n');
  if (field) {
    field.dataset.concordFocused = '1';
    field.focus({preventScroll: true});
    const text = enter < 0 ? typed : typed.slice(0, enter);
    if (text) document.execCommand('insertText', false, text);
    if (enter < 0) return;
    // The rater typed the reason and Enter before the field was there: submit it as
    // their Enter would have, and what came after that Enter is shortcuts again.
    kb.queue.push({el: field, enter: true, rerun: true});
    replay(kb, typed.slice(enter + 1));
    return;
  }
  // No field opened: Enter is dropped rather than replayed (it would submit the rating
  // the rater meant to skip or flag).
  replay(kb, typed.replaceAll('\n', ''));
}

function replay(kb, typed) {
  for (const ch of typed) {
    const b = kb.bindings[ch.toLowerCase()];
    if (b) kb.queue.push(b);
  }
  pump(kb);
}

// J / K: the focus to the next (previous) button of the ring; Enter then clicks it (the
// browser's own Enter on a focused button).
function moveFocus(ring, step) {
  const all = ring ? [...document.querySelectorAll(ring)] : [];
  if (all.length === 0) return;
  const at = all.indexOf(document.activeElement);
  const to = at < 0 ? (step > 0 ? 0 : all.length - 1)
                    : Math.min(Math.max(at + step, 0), all.length - 1);
  all[to].focus();
  if (all[to].scrollIntoView) all[to].scrollIntoView({block: 'nearest'});
}

// O: the focus to the next radio group of the list (a checklist criterion's value, to
// override it): its checked radio, else its first. The arrow keys then change the value
// (the browser's own radio keys) and Tab reaches the reason field.
function cycleFocus(groups) {
  const radios = groups.map((css) => [...document.querySelectorAll(css)]);
  const at = radios.findIndex((g) => g.includes(document.activeElement));
  for (let i = 1; i <= radios.length; i += 1) {
    const group = radios[(at + i + radios.length) % radios.length];
    const to = group.find((r) => r.checked) || group[0];
    if (to) {
      to.focus();
      return;
    }
  }
}

// Drafts: the choices on screen, kept per item in localStorage, so a reload (or a crash of
// the browser) draws them again. Nothing of the rating is in them but which boxes are on.
const DRAFTS = 'concord-draft:';
const DRAFT_DAYS = 7;

function storage() {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch (e) {
    return null;  // storage blocked (a framed page, private mode)
  }
}

function inputsOf(css) {
  return [...document.querySelectorAll(css)].map(
      (el) => (el.tagName === 'INPUT' ? el : el.querySelector('input')));
}

// A click on a choice (the mouse's or a key's) or an arrow key on a radio: the choices
// are read once the widgets have taken it (the radios' own script handles the click, so no
// change event is to be had) and kept. Not before the kept draft of this item was drawn.
function noteDraft(kb, e) {
  const draft = kb.draft;
  if (!draft || !draft.id || kb.draftReady !== draft.id || !e.target) return;
  const ours = draft.fields.some((css) => [...document.querySelectorAll(css)].some(
      (el) => el === e.target || (el.contains && el.contains(e.target))));
  if (!ours) return;  // a field of another kind (a page number, a reason)
  for (const ms of [40, 250]) setTimeout(() => saveDraft(kb, draft), ms);
}

function saveDraft(kb, draft) {
  const store = storage();
  // The item may have gone since the click (submitted): its draft is not written again.
  if (!store || !kb.draft || kb.draft.id !== draft.id) return;
  const state = {};
  for (const css of draft.fields) state[css] = inputsOf(css).map((i) => !!(i && i.checked));
  try {
    store.setItem(DRAFTS + draft.id, JSON.stringify({at: Date.now(), state}));
  } catch (err) { /* full or blocked: the draft is a convenience */ }
}

function dropDrafts(store, except) {
  const old = Date.now() - DRAFT_DAYS * 86400000;
  for (let i = store.length - 1; i >= 0; i -= 1) {
    const key = store.key(i);
    if (!key || !key.startsWith(DRAFTS) || key === except) continue;
    let at = 0;
    try { at = JSON.parse(store.getItem(key)).at || 0; } catch (err) { at = 0; }
    if (at < old || except === null) store.removeItem(key);
  }
}

// The item on screen changed: the previous item's draft goes (it was submitted, skipped or
// left), and a draft of this item is made again: a radio group with no level chosen gets
// the kept one, a checkbox the kept state (a choice the server drew is left alone).
function restoreDraft(kb, tries = 0) {
  const store = storage();
  const draft = kb.draft;
  if (!store || !draft || !draft.id) return;
  let kept = null;
  try { kept = JSON.parse(store.getItem(DRAFTS + draft.id) || 'null'); } catch (e) { kept = null; }
  const drawn = draft.fields.every((css) => document.querySelector(css));
  if (kept && kept.state && !drawn && tries < 50) {
    setTimeout(() => restoreDraft(kb, tries + 1), 40);
    return;
  }
  kb.draftReady = draft.id;  // from now on the rater's choices are kept
  if (!kept || !kept.state || !drawn) return;
  for (const css of draft.fields) {
    const want = kept.state[css] || [];
    const els = [...document.querySelectorAll(css)];
    const inputs = inputsOf(css);
    const radio = inputs.some((i) => i && i.type === 'radio');
    if (radio && inputs.some((i) => i && i.checked)) continue;
    want.forEach((on, n) => {
      const input = inputs[n];
      if (!input || !!input.checked === on || (radio && !on)) return;
      kb.queue.push({el: els[n], rerun: !radio});
    });
  }
  pump(kb);
}

function onClick(kb, e) {
  const img = e.target.closest && e.target.closest('img');
  if (!img) return;
  for (const rule of kb.clicks) {
    const box = img.closest(rule.within);
    const target = box && box.querySelector(rule.target);
    if (target) {
      e.preventDefault();
      kb.queue.push({el: target, rerun: true});
      pump(kb);
      return;
    }
  }
}

// The skip/flag field and the data naming it arrive in either order: try on both.
function focusField(kb) {
  const field = kb.focus && document.querySelector(kb.focus);
  if (field && kb.typed !== null && kb.typed !== undefined) {
    // Keys were held for the field and it is here (its run may not have ended): they go
    // in now, before the next key lands in the focused field after them.
    settleTyped(kb);
    return;
  }
  if (field && !field.dataset.concordFocused) {
    field.dataset.concordFocused = '1';
    field.focus({preventScroll: true});
  }
}

function watchPage(kb) {
  new MutationObserver(() => {
    // Decode the preloaded next image ahead of time, so showing it is a paint only.
    document.querySelectorAll('.st-key-concord_preload img').forEach((img) => {
      if (!img.dataset.decoded) { img.dataset.decoded = '1'; img.decode().catch(() => {}); }
    });
    focusField(kb);
    // The head's wrapper is what sticks (see widgets.py); its height includes the space
    // under Streamlit's own header bar.
    const head = document.querySelector('[data-testid="stLayoutWrapper"]:has(> .st-key-concord_head)');
    if (head && !head.dataset.concordSized) {
      head.dataset.concordSized = '1';
      kb.head = head;
      new ResizeObserver(() => document.documentElement.style.setProperty(
          '--concord-head', `${Math.ceil(head.getBoundingClientRect().height)}px`)).observe(head);
    }
  }).observe(document.body, {childList: true, subtree: true, attributes: true,
                             attributeFilter: ['src']});
}

export default function(component) {
  const kb = window.__concordKeys || (window.__concordKeys = {queue: [], busy: false,
                                                             bindings: {}, clicks: [],
                                                             opens: [], typed: null,
                                                             choices: new Map()});
  const data = component.data || {};
  // A rerun may mount the new instance before the old one's cleanup runs: only the latest
  // instance may clear the bindings.
  const generation = (kb.generation || 0) + 1;
  kb.generation = generation;
  kb.bindings = data.bindings || {};
  kb.escape = data.escape || null;
  kb.focus = data.focus || null;
  kb.clicks = data.clicks || [];
  kb.opens = data.opens || [];
  kb.submit = data.submit || null;
  kb.enterIn = data.enterIn || null;
  kb.ring = data.ring || null;
  kb.sliders = data.sliders || [];
  kb.comment = data.comment || null;
  const draftBefore = kb.draft && kb.draft.id;
  kb.draft = data.draft || null;
  if (data.item !== undefined && data.item !== kb.item) {
    kb.choices.clear();  // choices made for another image
    if (kb.item !== undefined) {
      const main = scroller();
      if (main) main.scrollTop = 0;
    }
    kb.item = data.item;
  }
  if (kb.draft && kb.draft.id !== draftBefore) {
    const store = storage();
    if (store && draftBefore) store.removeItem(DRAFTS + draftBefore);
    if (store) dropDrafts(store, DRAFTS + kb.draft.id);
    restoreDraft(kb);
  }
  focusField(kb);
  // A marker tests (and curious users) can wait for: keys work from now on.
  document.documentElement.dataset.concordKeys = 'ready';
  if (!kb.observing) {
    kb.observing = true;
    watchPage(kb);
  }
  if (!kb.listening) {
    kb.listening = true;
    window.addEventListener('keydown', (e) => onKey(kb, e), true);
    document.addEventListener('click', (e) => onClick(kb, e), true);
    document.addEventListener('click', (e) => noteDraft(kb, e), true);
    window.addEventListener('keyup', (e) => noteDraft(kb, e), true);
  }
  return () => {
    if (kb.generation !== generation) return;
    kb.bindings = {};
    kb.escape = null;
    kb.focus = null;
    kb.clicks = [];
    kb.opens = [];
    kb.submit = null;
    kb.enterIn = null;
    kb.ring = null;
    kb.sliders = [];
    kb.comment = null;
    delete document.documentElement.dataset.concordKeys;
  };
}
