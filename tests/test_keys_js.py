"""The rater screens' key listener (concord/ui/keys.js) run under Node, without a browser.

tests/js/keys.test.mjs loads keys.js into a fake page (tests/js/keys_harness.mjs) and
checks what each key does. The data it binds is what ``widgets.keyboard`` sends for the
rate page (with and without the skip form open) and the rank page, built here the way
pages/rate.py and pages/rank.py build it. The browser tests (-m browser) drive the same
file in Chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from concord.ui import rate_state as rs
from concord.ui import screen, widgets
from tests.foundation_helpers import ROOT

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the key listener's "
                                "Node tests need it (the browser tests cover keys.js too)")


def _sent(monkeypatch, keys: widgets.Keys) -> dict:
    """The data ``widgets.keyboard`` hands to the key listener for ``keys``."""
    sent: dict = {}
    monkeypatch.setattr(widgets, "_keys_component", lambda data, key: sent.update(data))
    widgets.keyboard(keys, key="concord_keys")
    return json.loads(json.dumps(sent))


def _rate_keys(skipping: bool) -> widgets.Keys:
    bindings: dict[str, tuple[str, int, bool]] = {}
    for criterion, row in (("SC", "123"), ("PR", "QWE")):  # level keys as a rubric gives them
        radio = widgets.widget_css(rs.choice_key(criterion), "[role='radiogroup'] label")
        bindings.update({key.lower(): (radio, i, False) for i, key in enumerate(row)})
    bindings.update(widgets.button_keys({"Enter": "rate_submit", "s": "rate_skip_btn",
                                         "f": "rate_flag", "u": "rate_undo",
                                         "z": "rate_zoom"}))
    return screen.screen_keys("rate", bindings, form="skip" if skipping else None,
                              item="img-1", opens=("s", "f"))


def _rank_keys() -> widgets.Keys:
    picks, zooms = widgets.widget_css("rank_pick_"), widgets.widget_css("rank_zoom_")
    bindings = {str(slot % 10): (picks, slot - 1, True) for slot in range(1, 11)}
    bindings.update({f"shift+{slot % 10}": (zooms, slot - 1, True) for slot in range(1, 11)})
    bindings.update(widgets.button_keys({"u": "rank_undo", "r": "rank_reset",
                                         "s": "rank_skip_btn", "Enter": "rank_submit",
                                         "shift+u": "rank_undo_sub"}))
    clicks = [{"within": "[class*='st-key-rank_slot_']",
               "target": "[class*='st-key-rank_pick_'] button"}]
    return screen.screen_keys("rank", bindings, form=None, item=7, clicks=clicks)


def test_keys_js_under_node(tmp_path, monkeypatch):
    data = {"rate": _sent(monkeypatch, _rate_keys(False)),
            "rate_skip": _sent(monkeypatch, _rate_keys(True)),
            "rank": _sent(monkeypatch, _rank_keys())}
    path = tmp_path / "keys-data.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = subprocess.run([NODE, "--test", "--test-reporter=tap", "tests/js/keys.test.mjs"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CONCORD_KEYS_DATA": str(path)})
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    # Every test in the file ran and passed (a test that never registers would not fail).
    cases = re.findall(r"^test\(", (ROOT / "tests/js/keys.test.mjs").read_text(), re.M)
    assert "# fail 0" in res.stdout, res.stdout[-3000:]
    assert f"# pass {len(cases)}\n" in res.stdout, res.stdout[-3000:]
