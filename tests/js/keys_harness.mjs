// A minimal page for concord/ui/keys.js outside a browser: fake elements found by the exact
// CSS selectors the app sends, a fake Streamlit run state, and a virtual clock, so the key
// listener's queueing and timing run deterministically under Node (tests/test_keys_js.py).
import {readFileSync} from 'node:fs';

const KEYS_JS = new URL('../../concord/ui/keys.js', import.meta.url);
const START_MS = 15;  // a click reaches the server and the run starts this much later
const RUN_MS = 40;  // how long a fake rerun keeps the app busy

let moduleLoad = null;

/** The default export of keys.js, loaded once as an ES module. */
export function loadKeys() {
  const source = readFileSync(KEYS_JS, 'utf8');
  moduleLoad ??= import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`);
  return moduleLoad.then((m) => m.default);
}

class FakeElement {
  constructor(page, {name, tag = 'DIV', type, box = null, inner = {}, sticky = true}) {
    Object.assign(this, {page, name, tagName: tag, type, box, inner, sticky});
    this.dataset = {};
    this.attrs = {};
    this.isConnected = true;
    this.isContentEditable = false;
    this.checked = false;
    this.value = '';
    this.onclick = null;
    this.onkeydown = null;
  }

  getAttribute(attr) { return this.attrs[attr] ?? null; }
  querySelector(css) { return this.inner[css] ?? null; }
  closest(css) { return css === 'img' && this.tagName === 'IMG' ? this : this.box?.[css] ?? null; }
  focus() {
    this.page.activeElement = this;
    this.page.log.push(`focus ${this.name}`);
  }
  click() {
    this.page.log.push(`click ${this.name}`);
    if (this.onclick) this.onclick();
  }
  /** An event the page dispatches itself (keys.js sends a text field its Enter). */
  dispatchEvent(e) {
    this.page.log.push(`${e.type} ${e.key} ${this.name} ${JSON.stringify(this.value)}`);
    if (e.type === 'keydown' && this.onkeydown) this.onkeydown(e);
    return true;
  }
}

/** A fresh page: installs ``window``, ``document`` and the timers keys.js uses. */
export function newPage() {
  const page = {log: [], now: 0, timers: [], seq: 0, bySelector: new Map(), activeElement: null,
                keyListeners: [], clickListeners: [], observers: []};
  Object.assign(page, helpers(page));
  const body = new FakeElement(page, {name: 'body', tag: 'BODY'});
  const app = new FakeElement(page, {name: 'app'});
  app.attrs['data-test-script-state'] = 'notRunning';
  const main = new FakeElement(page, {name: 'main'});
  main.scrollTop = 0;
  page.body = body;
  page.app = app;
  page.main = main;
  page.add('[data-testid="stApp"]', app);
  page.add('[data-testid="stMain"]', main);
  globalThis.document = {
    body,
    documentElement: {dataset: {}, style: {setProperty() {}}},
    get activeElement() { return page.activeElement ?? body; },
    querySelector: (css) => page.find(css)[0] ?? null,
    querySelectorAll: (css) => page.find(css),
    addEventListener: (type, fn) => { if (type === 'click') page.clickListeners.push(fn); },
    execCommand: (cmd, ui, text) => {  // what the browser does: type into the focused field
      page.log.push(`${cmd} ${text}`);
      if (cmd === 'insertText' && page.activeElement) page.activeElement.value += text;
    },
  };
  globalThis.window = {
    scrollX: 0, scrollY: 0, scrollTo() {},
    addEventListener: (type, fn) => { if (type === 'keydown') page.keyListeners.push(fn); },
  };
  globalThis.setTimeout = (fn, ms = 0) => page.timers.push({at: page.now + ms, fn, seq: page.seq++});
  Object.defineProperty(globalThis, 'performance',
                        {value: {now: () => page.now}, configurable: true, writable: true});
  globalThis.KeyboardEvent = class { constructor(type, init) { Object.assign(this, init, {type}); } };
  globalThis.MutationObserver = class { constructor(cb) { page.observers.push(cb); } observe() {} };
  globalThis.ResizeObserver = class { observe() {} };
  return page;
}

function helpers(page) {
  return {
    add(css, el) {
      if (!this.bySelector.has(css)) this.bySelector.set(css, []);
      this.bySelector.get(css).push(el);
      return el;
    },
    /** Take an element off the page; the browser moves the focus off it to the body. */
    remove(el) {
      el.isConnected = false;
      if (this.activeElement === el) this.activeElement = null;
    },
    find(css) { return (this.bySelector.get(css) ?? []).filter((el) => el.isConnected); },
    element(opts) { return new FakeElement(page, opts); },

    /** Buttons (or radio labels) for a binding's selector, enough for its ``nth``. */
    widgets(binding, names) {
      return names.map((name) => this.add(binding.css, this.element({name})));
    },

    /** Radio labels: a click checks the label's own input and unchecks the others. */
    radios(css, names) {
      const inputs = [];
      return names.map((name) => {
        const input = this.element({name: `${name} input`, tag: 'INPUT', type: 'radio'});
        inputs.push(input);
        const label = this.add(css, this.element({name, inner: {input}}));
        label.onclick = () => { for (const i of inputs) i.checked = i === input; };
        return label;
      });
    },

    /** A button whose click reruns the app (from START_MS after the click, for RUN_MS),
     * then calls ``after`` (the new page). */
    rerunning(el, after = () => {}) {
      const state = (value) => { this.app.attrs['data-test-script-state'] = value; };
      el.onclick = () => setTimeout(() => {
        state('running');
        setTimeout(() => {
          after();
          state('notRunning');
          for (const cb of this.observers) cb([]);
        }, RUN_MS);
      }, START_MS);
      return el;
    },

    /** A key press on the focused element (or the body), with the browser's default action:
     * a printable key not prevented lands in the focused text field. */
    press(key, opts = {}) {
      const target = opts.target ?? this.activeElement ?? this.body;
      const e = {key, target, ctrlKey: false, metaKey: false, altKey: false, repeat: false,
                 ...opts, defaultPrevented: false, stopped: false,
                 preventDefault() { this.defaultPrevented = true; },
                 stopImmediatePropagation() { this.stopped = true; }};
      for (const fn of this.keyListeners) fn(e);
      const field = this.activeElement;
      if (!e.defaultPrevented && key.length === 1 && field && field.tagName === 'INPUT' &&
          field.type === 'text') {
        field.value += key;
      }
      return e;
    },
    type(text, opts) { return [...text].map((ch) => this.press(ch, opts)); },

    /** A click on an element, as the page-wide click listeners see it. */
    clickOn(target) {
      const e = {target, defaultPrevented: false, preventDefault() { this.defaultPrevented = true; }};
      for (const fn of this.clickListeners) fn(e);
      return e;
    },

    /** Run the virtual clock forward, firing due timers in order. */
    advance(ms) {
      const end = this.now + ms;
      for (;;) {
        const due = this.timers.filter((t) => t.at <= end);
        if (due.length === 0) break;
        const next = due.reduce((a, b) => (a.at < b.at || (a.at === b.at && a.seq < b.seq) ? a : b));
        this.timers.splice(this.timers.indexOf(next), 1);
        this.now = Math.max(this.now, next.at);
        next.fn();
      }
      this.now = end;
    },
    clicks() { return this.log.filter((l) => l.startsWith('click ')).map((l) => l.slice(6)); },
  };
}

