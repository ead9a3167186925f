"""What each migration does to the schema, as the shipped migrations did it.

``tests/data/schema-steps.json`` holds, per migration in the order they are applied, the
schema objects (table, index, view, trigger) it created or changed, with their SQL, and
the ones it dropped. It was written by the migrations as they shipped, before any of them
was frozen (``python tests/schema_steps.py --write FILE`` run in that checkout), so a
migration edited since, or one that reads live module code that changed, shows up as a
difference (``tests/test_schema_frozen.py``). A new migration adds its entry with
``--append``, which keeps every entry already written.

SQL is compared as the database guard compares it (``concord.store.guard``): quotes and
runs of white space evened out, since SQLite's own rewriting (``ALTER TABLE ... RENAME``)
quotes names differently from version to version.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

from sqlite_utils import Database

SNAPSHOT = Path(__file__).resolve().parent / "data" / "schema-steps.json"
_MIGRATIONS_TABLE = "_sqlite_migrations"
_QUOTES = re.compile(r'["`\[\]]')


def objects(conn: sqlite3.Connection) -> dict[str, str]:
    """``"<type> <name>"`` -> normalised SQL of every schema object but SQLite's own and
    sqlite-utils' migrations table."""
    out = {}
    for kind, name, table, sql in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE "
            "'sqlite!_%' ESCAPE '!'"):
        if table == _MIGRATIONS_TABLE and kind in ("table", "index"):
            continue
        out[f"{kind} {name}"] = " ".join(_QUOTES.sub("", sql or "").split())
    return out


def steps(migrations, names: list[str] | None = None) -> list[dict]:
    """Apply ``migrations`` one at a time to an in-memory database; per migration, what it
    set (created or changed) and dropped. ``names``: only those (all before them are
    applied too)."""
    mem = Database(sqlite3.connect(":memory:"))
    order = [m.name for m in migrations.pending(mem)]
    out, before = [], objects(mem.conn)
    for i, name in enumerate(order):
        migrations.apply(mem, stop_before=order[i + 1] if i + 1 < len(order) else None)
        after = objects(mem.conn)
        if names is None or name in names:
            out.append({"name": name,
                        "set": {k: v for k, v in sorted(after.items()) if before.get(k) != v},
                        "dropped": sorted(before.keys() - after.keys())})
        before = after
    mem.close()
    return out


def load() -> list[dict]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))["migrations"]


def _write(path: Path, entries: list[dict]) -> None:
    doc = {"about": "what each shipped migration did to the schema: tests/schema_steps.py",
           "migrations": entries}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="FILE",
                       help="write every migration's entry (in a checkout of shipped code)")
    group.add_argument("--append", action="store_true",
                       help="add the entries of migrations the snapshot lacks")
    args = parser.parse_args()
    from concord.store.migrations import migrations

    if args.write:
        _write(args.write, steps(migrations))
        return
    known = load()
    have = {e["name"] for e in known}
    new = [m.name for m in migrations.pending(Database(sqlite3.connect(":memory:")))
           if m.name not in have]
    _write(SNAPSHOT, known + steps(migrations, new))
    print(f"added {', '.join(new) or 'nothing'}", file=sys.stderr)


if __name__ == "__main__":
    main()
