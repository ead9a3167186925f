// The rater screens' key listener (concord/ui/keys.js) under Node, without a browser.
// Run by tests/test_keys_js.py, which passes the data Python sends to the listener for the
// rate page (no form, skip form open) and the rank page in $CONCORD_KEYS_DATA.
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {beforeEach, test} from 'node:test';

import {loadKeys, newPage} from './keys_harness.mjs';

const DATA = JSON.parse(readFileSync(process.env.CONCORD_KEYS_DATA, 'utf8'));
const mount = await loadKeys();

let page;
let field;  // the skip reason field, once the skip form is open
beforeEach(() => { page = null; field = null; });

/** The rate page: SC levels on 1 2 3, PR levels on Q W E, and the buttons; S opens the
 * skip form when ``skipOpens`` (the field arrives with the rerun), else the run shows none. */
function ratePage({skipOpens = true} = {}) {
  page = newPage();
  const b = DATA.rate.bindings;
  page.radios(b['1'].css, ['SC 0', 'SC 0.5', 'SC 1']);
  page.radios(b.q.css, ['PR 0', 'PR 0.5', 'PR 1']);
  for (const [key, name] of [['Enter', 'submit'], ['u', 'undo'], ['z', 'zoom']]) {
    page.rerunning(page.add(b[key].css, page.element({name})));
  }
  page.rerunning(page.add(b.s.css, page.element({name: 'skip'})), () => {
    if (skipOpens) openSkipForm();
  });
  page.rerunning(page.add(b.f.css, page.element({name: 'flag'})));  // a flag taken back
  const cleanup = mount({data: DATA.rate});
  return cleanup;
}

/** The skip form: its reason field and, unless ``ok`` is false, its submit button. An Enter
 * on the field (Streamlit's own handler) and a click on the button both submit it: a rerun
 * that closes the form; the log says how and with what text. */
function openSkipForm({ok = true, cancel = true} = {}) {
  const open = field = page.add(DATA.rate_skip.focus,
                                page.element({name: 'reason', tag: 'INPUT', type: 'text'}));
  const parts = [open];
  const close = () => {
    for (const el of parts) page.remove(el);
    mount({data: DATA.rate});
  };
  const submits = (el, how) => {
    page.rerunning(el, close);
    const run = el.onclick;
    return () => {
      page.log.push(`submitted by ${how} ${JSON.stringify(open.value)}`);
      run();
    };
  };
  [open.onkeydown, open.onclick] = [submits(open, 'Enter'), null];
  if (ok) {
    const button = page.add(DATA.rate_skip.submit, page.element({name: 'ok'}));
    parts.push(button);
    button.onclick = submits(button, 'ok');
  }
  const addCancel = () => {
    const button = page.rerunning(page.add(DATA.rate_skip.escape, page.element({name: 'cancel'})),
                                  close);
    parts.push(button);
    return button;
  };
  if (cancel) addCancel();
  mount({data: DATA.rate_skip});
  return addCancel;
}

test('number and letter keys choose levels of their criterion, case-insensitively', () => {
  ratePage();
  const e = page.press('2');
  page.type('Wq');
  page.press('3');
  page.advance(200);
  assert.deepEqual(page.clicks(), ['SC 0.5', 'PR 0.5', 'PR 0', 'SC 1']);
  assert.ok(e.defaultPrevented && e.stopped);
  const checked = [...page.find(DATA.rate.bindings['1'].css), ...page.find(DATA.rate.bindings.q.css)]
    .filter((label) => label.querySelector('input').checked).map((label) => label.name);
  assert.deepEqual(checked, ['SC 1', 'PR 0']);
});

test('Enter submits, U undoes, Z zooms; an unbound key is left alone', () => {
  ratePage();
  page.press('Enter');
  page.advance(200);
  page.press('u');
  page.advance(200);
  page.press('Z');
  page.advance(200);
  const free = page.press('x');
  page.advance(200);
  assert.deepEqual(page.clicks(), ['submit', 'undo', 'zoom']);
  assert.equal(free.defaultPrevented, false);
});

test('keys with Ctrl, Alt or Meta and auto-repeated keys are not shortcuts', () => {
  ratePage();
  const events = [page.press('1', {ctrlKey: true}), page.press('1', {altKey: true}),
                  page.press('1', {metaKey: true}), page.press('Enter', {repeat: true})];
  page.advance(2000);
  assert.deepEqual(page.clicks(), []);
  assert.ok(events.every((e) => !e.defaultPrevented));
});

test('typing in a text field is not intercepted; radios and checkboxes are no text field', () => {
  ratePage();
  const text = page.element({name: 'note', tag: 'INPUT', type: 'text'});
  for (const target of [text, page.element({name: 'a', tag: 'TEXTAREA'}),
                        page.element({name: 's', tag: 'SELECT'}),
                        Object.assign(page.element({name: 'c'}), {isContentEditable: true})]) {
    assert.equal(page.press('1', {target}).defaultPrevented, false);
    assert.equal(page.press('Enter', {target}).defaultPrevented, false);
  }
  page.advance(2000);
  assert.deepEqual(page.clicks(), []);
  page.press('3', {target: page.element({name: 'r', tag: 'INPUT', type: 'radio'})});
  page.press('e', {target: page.element({name: 'b', tag: 'INPUT', type: 'checkbox'})});
  page.advance(200);
  assert.deepEqual(page.clicks(), ['SC 1', 'PR 1']);
});

test('a key pressed during a rerun waits for the run to end, and keys keep their order', () => {
  ratePage();
  page.press('Enter');
  page.press('1');  // the submit's rerun is still going: the level must come after it
  page.press('w');
  page.advance(10);
  assert.deepEqual(page.clicks(), ['submit']);
  page.advance(200);
  assert.deepEqual(page.clicks(), ['submit', 'SC 0', 'PR 0.5']);
});

test('a level key during a run the keys did not start waits for that run to end', () => {
  ratePage();
  page.app.attrs['data-test-script-state'] = 'running';  // e.g. after a mouse click
  page.press('1');
  page.advance(300);
  assert.deepEqual(page.clicks(), []);
  page.app.attrs['data-test-script-state'] = 'notRunning';
  page.advance(10);
  assert.deepEqual(page.clicks(), ['SC 0']);
});

test('a click that starts no run (a disabled button) holds the next key a second at most', () => {
  ratePage();
  page.find(DATA.rate.bindings.Enter.css)[0].onclick = null;
  page.press('Enter');
  page.press('1');
  page.advance(900);
  assert.deepEqual(page.clicks(), ['submit']);
  page.advance(300);
  assert.deepEqual(page.clicks(), ['submit', 'SC 0']);
});

test('keys typed right after S go into the reason field, not to shortcuts', () => {
  ratePage();
  page.press('s');
  const typed = page.type('quick');  // Q is a PR level and U is undo: neither may fire
  const enter = page.press('Enter');  // nor may Enter submit the rating
  assert.ok([...typed, enter].every((e) => e.defaultPrevented));
  page.advance(500);
  assert.deepEqual(page.clicks(), ['skip', 'ok']);
  assert.equal(field.value, 'quick');
  assert.ok(page.log.indexOf('focus reason') < page.log.indexOf('insertText quick'));
  assert.ok(page.log.indexOf('focus reason') >= 0);
  // The Enter typed before the field was there submits the reason, once it is in the field.
  const sent = page.log.filter((l) => l.startsWith('submitted'));
  assert.deepEqual(sent, ['submitted by ok "quick"']);
  assert.ok(page.log.indexOf('insertText quick') < page.log.indexOf(sent[0]));
  assert.equal(page.find(DATA.rate_skip.focus).length, 0);  // the form closed
});

test('keys after an Enter typed into a coming field are shortcuts on the next item', () => {
  ratePage();
  page.press('s');
  page.type('blur');
  page.press('Enter');
  page.type('2q');  // the next image's SC and PR levels
  page.advance(50);
  assert.deepEqual(page.clicks(), ['skip']);  // the skip's run is still going
  page.advance(1000);
  assert.deepEqual(page.clicks(), ['skip', 'ok', 'SC 0.5', 'PR 0']);
  const order = ['insertText blur', 'submitted by ok "blur"', 'click SC 0.5']
    .map((l) => page.log.indexOf(l));
  assert.deepEqual(order, [...order].sort((a, b) => a - b));
  assert.ok(order.every((i) => i >= 0));
});

test('held keys go into the field the moment it shows, before the keys typed into it', () => {
  ratePage({skipOpens: false});
  page.press('s');
  page.type('blurry bot');
  page.advance(20);  // the skip's run has started; the field shows before it ends
  assert.equal(page.app.attrs['data-test-script-state'], 'running');
  openSkipForm();
  for (const cb of page.observers) cb([]);
  assert.equal(page.activeElement, field);
  page.press('h');  // typed straight into the focused field
  page.press('Enter', {target: field});  // held: the form's run has not ended
  assert.equal(field.value, 'blurry both');
  page.advance(1000);
  // Nothing typed twice when the run ends, and the form is submitted once, with it all.
  assert.deepEqual(page.log.filter((l) => l.startsWith('submitted')),
                   ['submitted by ok "blurry both"']);
  assert.deepEqual(page.clicks(), ['skip', 'ok']);
});

test('Enter in the reason field clicks its submit button once no run is going', () => {
  ratePage();
  page.press('s');
  page.advance(500);
  page.type('dark', {target: field});
  page.app.attrs['data-test-script-state'] = 'running';  // e.g. the run drawing the form
  const enter = page.press('Enter', {target: field});
  assert.ok(enter.defaultPrevented && enter.stopped);
  page.advance(300);
  assert.equal(page.log.filter((l) => l.startsWith('submitted')).length, 0);
  page.app.attrs['data-test-script-state'] = 'notRunning';
  page.advance(10);
  assert.deepEqual(page.log.filter((l) => l.startsWith('submitted')), ['submitted by ok "dark"']);
  const other = page.press('Enter', {target: page.element({name: 'x', tag: 'INPUT', type: 'text'})});
  assert.equal(other.defaultPrevented, false);  // another field's Enter is left alone
});

test('without a submit button on the page, the field gets an Enter of its own', () => {
  ratePage({skipOpens: false});
  page.press('s');
  page.advance(500);  // the run ended and no field came: the typed keys are settled
  openSkipForm({ok: false});
  page.type('odd', {target: field});
  const enter = page.press('Enter', {target: field});
  assert.ok(enter.defaultPrevented);
  page.advance(10);
  assert.deepEqual(page.log.filter((l) => l.startsWith('submitted')), ['submitted by Enter "odd"']);
  assert.ok(page.log.includes('keydown Enter reason "odd"'));
  page.advance(200);
  assert.equal(page.log.filter((l) => l.startsWith('submitted')).length, 1);  // not again
});

test('without Enter the typed reason waits in the field; no Enter is sent for the rater', () => {
  ratePage();
  page.press('s');
  page.type('later');
  page.advance(1000);
  assert.equal(field.value, 'later');
  assert.equal(page.log.filter((l) => l.startsWith('submitted')).length, 0);
  assert.equal(page.find(DATA.rate_skip.focus).length, 1);
});

test('keys typed after F are replayed as shortcuts when no field opens', () => {
  ratePage();
  page.press('f');
  page.type('1w');
  page.press('Enter');  // meant for a reason field that never came: no rating submit
  page.advance(100);
  assert.deepEqual(page.clicks(), ['flag']);  // held while a field may still come
  page.advance(2000);
  assert.deepEqual(page.clicks(), ['flag', 'SC 0', 'PR 0.5']);
});

test('while the reason field is open, letters and Enter go to it, not to shortcuts', () => {
  ratePage();
  page.press('s');
  page.advance(500);
  page.body.focus();  // the focus left the field (a click elsewhere)
  const letter = page.press('q');
  assert.equal(page.activeElement, field);
  assert.equal(letter.defaultPrevented, false);  // the browser types it into the field
  assert.equal(field.value, 'q');
  page.body.focus();
  const enter = page.press('Enter');
  assert.ok(enter.defaultPrevented);
  page.advance(500);
  assert.deepEqual(page.clicks(), ['skip']);
});

test('Esc cancels the open reason field, even from inside it', () => {
  ratePage();
  page.press('s');
  page.advance(500);
  const esc = page.press('Escape', {target: field});
  assert.ok(esc.defaultPrevented);
  page.advance(500);
  assert.deepEqual(page.clicks(), ['skip', 'cancel']);
  page.press('1');  // the form is gone: keys are shortcuts again
  page.advance(200);
  assert.deepEqual(page.clicks(), ['skip', 'cancel', 'SC 0']);
});

test('Esc with no cancel button does nothing; without data it finds any keyed cancel', () => {
  ratePage();
  assert.equal(page.press('Escape').defaultPrevented, false);
  page.advance(200);
  assert.deepEqual(page.clicks(), []);
  const any = page.add("[class*='st-key-'][class*='_cancel'] button",
                       page.element({name: 'any cancel'}));
  page.rerunning(any, () => page.remove(any));
  assert.ok(page.press('Escape').defaultPrevented);
  page.advance(2000);
  assert.deepEqual(page.clicks(), ['any cancel']);
});

/** The SC and PR radio labels of the rate page, and which ones are checked. */
const labels = () => [...page.find(DATA.rate.bindings['1'].css),
                      ...page.find(DATA.rate.bindings.q.css)];
const checkedNow = () => labels().filter((l) => l.querySelector('input').checked)
  .map((l) => l.name);

test('a key choice reset by a late redraw is made again before the submit is sent', () => {
  ratePage();
  let sent = null;
  const submit = page.find(DATA.rate.bindings.Enter.css)[0];
  const run = submit.onclick;
  submit.onclick = () => { sent = checkedNow(); run(); };
  page.type('3w');
  page.advance(200);
  for (const label of labels()) label.querySelector('input').checked = false;  // the redraw
  page.press('Enter');
  page.advance(500);
  assert.deepEqual(page.clicks(), ['SC 1', 'PR 0.5', 'SC 1', 'PR 0.5', 'submit']);
  assert.deepEqual(sent, ['SC 1', 'PR 0.5']);
  // sent: the next image's reset choices are not the old image's
  for (const label of labels()) label.querySelector('input').checked = false;
  page.press('Enter');
  page.advance(500);
  assert.deepEqual(page.clicks().slice(5), ['submit']);
});

test('a level the rater changed with the mouse is not overridden by the key choice', () => {
  ratePage();
  page.press('3');
  page.advance(200);
  labels()[0].onclick();  // the mouse: SC 0 (not a key, so not a logged click)
  page.press('Enter');
  page.advance(500);
  assert.deepEqual(page.clicks(), ['SC 1', 'submit']);
  assert.deepEqual(checkedNow(), ['SC 0']);
});

test('Esc in a field drawn before its Cancel button waits for the button', () => {
  let addCancel;
  ratePage({skipOpens: false});
  page.rerunning(page.find(DATA.rate.bindings.s.css)[0], () => {
    addCancel = openSkipForm({cancel: false});
  });
  page.press('s');
  page.advance(500);
  page.type('zzz', {target: field});
  const esc = page.press('Escape', {target: field});
  assert.ok(esc.defaultPrevented);  // the old listener let it go: no button, nothing done
  page.advance(300);
  addCancel();
  page.advance(500);
  assert.deepEqual(page.clicks(), ['skip', 'cancel']);
  assert.equal(page.find(DATA.rate_skip.focus).length, 0);
});

test('Esc clicks Cancel again once when the first click was dropped, never a third time', () => {
  ratePage({skipOpens: false});
  page.rerunning(page.find(DATA.rate.bindings.s.css)[0], () => {
    openSkipForm({cancel: false});
    const deaf = page.add(DATA.rate_skip.escape, page.element({name: 'deaf cancel'}));
    deaf.onclick = null;  // Streamlit never sees these clicks
  });
  page.press('s');
  page.advance(500);
  page.press('Escape', {target: field});
  page.advance(3000);
  assert.deepEqual(page.clicks(), ['skip', 'deaf cancel', 'deaf cancel']);
});

test('Esc right after S, before the field is drawn: the form opens, then closes', () => {
  ratePage();
  page.press('s');
  page.type('ab');
  assert.ok(page.press('Escape').defaultPrevented);
  page.press('1');  // after Esc: a shortcut again, behind the cancel
  page.advance(2000);
  assert.deepEqual(page.clicks(), ['skip', 'cancel', 'SC 0']);
  assert.equal(page.find(DATA.rate_skip.focus).length, 0);
});

test('the rank page: digits pick the n-th image, 0 the tenth; a click on an image picks it', () => {
  page = newPage();
  const b = DATA.rank.bindings;
  for (let i = 1; i <= 10; i += 1) page.rerunning(page.add(b['1'].css, page.element({name: `pick ${i}`})));
  mount({data: DATA.rank});
  page.type('30');
  page.advance(500);
  assert.deepEqual(page.clicks(), ['pick 3', 'pick 10']);
  const [rule] = DATA.rank.clicks;
  const pick = page.rerunning(page.element({name: 'slot pick'}));
  const img = page.element({name: 'img', tag: 'IMG', box: {[rule.within]: page.element({
    name: 'slot', inner: {[rule.target]: pick}})}});
  assert.ok(page.clickOn(img).defaultPrevented);
  assert.equal(page.clickOn(page.element({name: 'text'})).defaultPrevented, false);
  page.advance(500);
  assert.deepEqual(page.clicks(), ['pick 3', 'pick 10', 'slot pick']);
});

test('a new item scrolls to the top; only the latest instance clears the bindings', () => {
  const first = ratePage();
  assert.equal(document.documentElement.dataset.concordKeys, 'ready');
  page.main.scrollTop = 300;
  const second = mount({data: {...DATA.rate, item: 'next-image'}});
  assert.equal(page.main.scrollTop, 0);
  first();  // the old instance's cleanup runs late: the new bindings stay
  page.press('1');
  page.advance(200);
  assert.deepEqual(page.clicks(), ['SC 0']);
  second();
  assert.equal(document.documentElement.dataset.concordKeys, undefined);
  page.press('2');
  page.advance(200);
  assert.deepEqual(page.clicks(), ['SC 0']);
  assert.equal(page.keyListeners.length, 1);  // one listener however many mounts
});

/** The rate page with the PR radios and the submit button drawn, the SC radios not yet. */
function ratePageWithoutSC() {
  page = newPage();
  const b = DATA.rate.bindings;
  page.radios(b.q.css, ['PR 0', 'PR 0.5', 'PR 1']);
  page.rerunning(page.add(b.Enter.css, page.element({name: 'submit'})));
  mount({data: DATA.rate});
  return () => page.radios(b['1'].css, ['SC 0', 'SC 0.5', 'SC 1']);
}

test('a key for a widget not drawn yet waits for it, and the keys after it wait too', () => {
  const drawSC = ratePageWithoutSC();
  page.type('3w');
  page.press('Enter');
  page.advance(400);
  assert.deepEqual(page.clicks(), []);
  drawSC();
  page.advance(300);
  assert.deepEqual(page.clicks(), ['SC 1', 'PR 0.5', 'submit']);
});

test('a key whose widget never comes is dropped after a second; the next keys go on', () => {
  ratePageWithoutSC();
  page.type('3w');
  page.advance(900);
  assert.deepEqual(page.clicks(), []);
  page.advance(300);
  assert.deepEqual(page.clicks(), ['PR 0.5']);
  page.press('2');  // still no SC radios: dropped again a second later, Enter then submits
  page.press('Enter');
  page.advance(1300);
  assert.deepEqual(page.clicks(), ['PR 0.5', 'submit']);
});

test('the rank page: Shift with a digit key zooms that image, whatever the layout types', () => {
  page = newPage();
  const b = DATA.rank.bindings;
  for (let i = 1; i <= 3; i += 1) {
    page.rerunning(page.add(b['1'].css, page.element({name: `pick ${i}`})));
    page.rerunning(page.add(b['shift+1'].css, page.element({name: `zoom ${i}`})));
  }
  for (const name of ['undo pick', 'undo ranking']) {
    page.rerunning(page.add(b[name === 'undo pick' ? 'u' : 'shift+u'].css, page.element({name})));
  }
  mount({data: DATA.rank});
  page.press('£', {shiftKey: true, code: 'Digit3'});  // Shift+3 on a British layout
  page.press('2');
  page.press('U', {shiftKey: true, code: 'KeyU'});
  page.press('u');
  page.advance(1000);
  assert.deepEqual(page.clicks(), ['zoom 3', 'pick 2', 'undo ranking', 'undo pick']);
});
