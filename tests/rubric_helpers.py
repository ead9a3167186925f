"""A rubric file with a checklist of many derivation rules, for the tests and the bench."""

from __future__ import annotations

from pathlib import Path

import yaml

CONDITION_KEYS = "abcdeghijklm"  # 12 letters, none reserved (s, f, u, z)


def checklist_rubric(folder: Path, rubric_id: str, *, never: int, conditions: int = 12,
                     first: bool = True) -> Path:
    """``folder/<rubric_id>.yaml``: one criterion on [0, 1] whose checklist has
    ``conditions`` conditions and ``never`` rules that can never apply (each asks for a
    condition both ticked and not), before (``first``) or after the catch-all rule."""
    ids = [f"c{j}" for j in range(conditions)]
    dead = [{"value": 0, "when": {"all_ticked": [ids[i % conditions]],
                                  "none_ticked": [ids[i % conditions]]}} for i in range(never)]
    rules = [*dead, {"value": 1}] if first else [{"value": 1}, *dead]
    rubric = {
        "id": rubric_id, "title": "Many rules", "task": "a test", "source": {"title": "test"},
        "scale": [0, 1],
        "criteria": [{"key": "OK", "name": "Fine", "definition": "Is it fine?",
                      "levels": [{"value": v, "label": str(v), "description": str(v)}
                                 for v in (0, 1)]}],
        "checklist": {"OK": {
            "conditions": [{"id": c, "text": f"condition {c}", "key": CONDITION_KEYS[j]}
                           for j, c in enumerate(ids)],
            "derive": rules}},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rubric_id}.yaml"
    path.write_text(yaml.safe_dump(rubric, sort_keys=False), encoding="utf-8")
    return path
