"""Reading images and prompts for display (rating pages) and lookups by key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.errors import NotFoundError
from concord.store.db import loads


@dataclass(frozen=True, slots=True)
class ImageRow:
    """An image with its prompt; ``model`` must never reach a rater's browser."""

    id: int
    public_id: str
    study_id: int
    prompt_id: int
    prompt_key: str
    prompt: str
    model: str
    sample: int
    path: str | None
    width: int | None
    height: int | None
    dimension: str | None
    source_image: str | None
    instruction: str | None
    meta: dict[str, Any]


_IMAGE_SQL = (
    "SELECT i.id, i.public_id, i.study_id, p.id AS pid, p.key, p.text, m.name, i.sample, i.path,"
    " i.width, i.height, p.dimension, p.source_image, p.instruction, p.meta FROM images i"
    " JOIN prompts p ON p.id = i.prompt_id JOIN models m ON m.id = i.model_id"
)


def _image(row: tuple) -> ImageRow:
    (id_, public_id, study_id, prompt_id, key, text, model, sample, path, width, height,
     dimension, source_image, instruction, meta) = row
    return ImageRow(id_, public_id, study_id, prompt_id, key, text, model, sample, path, width,
                    height, dimension, source_image, instruction, loads(meta, {}))


def image(db: Database, image_id: int) -> ImageRow:
    """One image by store id."""
    row = db.execute(_IMAGE_SQL + " WHERE i.id = ?", [image_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no image with id {image_id}")
    return _image(row)


def prompt_images(db: Database, prompt_id: int, sample: int | None = None) -> list[ImageRow]:
    """Images of one prompt that have a file (one per model when ``sample`` is given)."""
    sql = _IMAGE_SQL + " WHERE i.prompt_id = ? AND i.path IS NOT NULL"
    params: list[Any] = [prompt_id]
    if sample is not None:
        sql += " AND i.sample = ?"
        params.append(sample)
    return [_image(r) for r in db.execute(sql + " ORDER BY m.id, i.sample", params).fetchall()]


def prompt_row(db: Database, prompt_id: int) -> dict[str, Any]:
    """One prompt row."""
    rows = list(db.query("SELECT * FROM prompts WHERE id = ?", [prompt_id]))
    if not rows:
        raise NotFoundError(f"no prompt with id {prompt_id}")
    return rows[0]


def model_names(db: Database, study_id: int) -> list[str]:
    """Model names of a study in import order."""
    return [r[0] for r in db.execute("SELECT name FROM models WHERE study_id = ? ORDER BY id",
                                     [study_id]).fetchall()]


def image_keys(db: Database, study_id: int) -> dict[tuple[str, str, int], int]:
    """Map (prompt key, model, sample) → image id for a whole study."""
    return {
        (r[0], r[1], r[2]): r[3]
        for r in db.execute(
            "SELECT p.key, m.name, i.sample, i.id FROM images i JOIN prompts p"
            " ON p.id = i.prompt_id JOIN models m ON m.id = i.model_id WHERE i.study_id = ?",
            [study_id]).fetchall()
    }
