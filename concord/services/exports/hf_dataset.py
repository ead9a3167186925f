"""``export --format hf``: a study's labels as a Hugging Face dataset with its card.

The dataset is built by :mod:`concord.hf_export`; this module gathers the frames (the same
rows as the labels export: current labels, excluded raters left out unless asked), the
images (metadata-free and, in a study with ``display``, normalised: as raters see them),
how raters saw them, the rubric, the rater counts and the agreement
numbers of the statistics report for the card.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from concord import hf_export
from concord.display import Display
from concord.errors import ConcordError
from concord.services import adjudication, questionnaire, rubric_choice
from concord.services.exports import labels
from concord.services.media import served_image
from concord.services.report import request as report_request
from concord.services.report import study as report
from concord.store import frames
from concord.store import studies as study_store

_AGREEMENT = (("alpha_interval", "Krippendorff α (interval)"),
              ("alpha_ordinal", "α (ordinal)"), ("fleiss_kappa", "Fleiss κ"),
              ("n_raters", "raters"), ("n_items", "items"))


def export_hf(db: Database, study_name: str, directory: Path, *, with_images: bool = False,
              include_excluded: bool = False, n_boot: int = 200) -> list[str]:
    """Write the study as a dataset folder (atomically); returns its configurations.

    Raises:
        ConcordError: ``datasets`` is not installed, the folder holds other files, or the
            study has no labels.
        NotFoundError: no such study.
    """
    hf_export.datasets_module()  # fail before any work when it is missing
    study = study_store.get_study(db, study_name)
    kw = {"include_excluded": include_excluded}
    parts = {"ratings": labels.ratings(db, study_name, **kw).rename(columns={"created_at": "time"}),
             "rankings": labels.rankings(db, study_name, **kw).rename(
                 columns={"created_at": "time"}),
             "pairs": labels.pair_judgments(db, study_name, **kw).rename(
                 columns={"created_at": "time"}),
             "adjudications": adjudication.adjudications_frame(db, study_name),
             "questionnaire": questionnaire.answers_frame(db, study_name)}
    info = frames.images_frame(db, study.id)
    if with_images:
        parts["images"] = _images(info, study.root, Display.of(study.settings))
    models = list(dict.fromkeys(info.sort_values("model_pk")["model"]))
    criteria = sorted(set(parts["ratings"]["criterion"]))
    sets = hf_export.build(parts, {"models": models, "criteria": criteria})
    if not sets:
        raise ConcordError(f"study {study.name!r} has no labels to export yet")
    doc = report.study_report(db, report_request.for_study(
        db, study, report_request.ReportOptions(n_boot=n_boot, n_perm=n_boot)))
    card = hf_export.card_header(sets, pretty_name=f"{study.name} (Concord human labels)") \
        + _card_body(study, sets, parts, doc)
    return hf_export.write(Path(directory), sets, card)


def _images(info: pd.DataFrame, root: str | None, shown: Display | None) -> pd.DataFrame:
    """One row per image file: prompt_id, model, sample, image ({"bytes", "path": None}),
    as raters were shown it."""
    rows = []
    for r in info.itertuples():
        file = report.image_file(root, r.path)
        if file is None:
            continue
        clean = served_image(Path(file), size=shown.size if shown else None)
        rows.append({"prompt_id": r.prompt_id, "model": r.model, "sample": r.sample,
                     "image": {"bytes": clean.data, "path": None}})
    return pd.DataFrame(rows, columns=["prompt_id", "model", "sample", "image"])


def _card_body(study: study_store.Study, sets: dict, parts: dict, doc: dict) -> str:
    lines = [f"\n# {study.name}: human labels\n",
             f"Human labels of the Concord study `{study.name}` (protocol `{study.protocol}`), "
             f"exported {dt.datetime.now(dt.UTC):%Y-%m-%d}. Configurations: "
             + ", ".join(f"`{n}` ({len(d)} rows)" for n, d in sets.items()) + ".\n",
             "```python\nfrom datasets import load_dataset, load_from_disk\n"
             "ratings = load_dataset(\"parquet\", data_files=\"data/ratings.parquet\")[\"train\"]"
             "\nsame = load_from_disk(\"arrow/ratings\")\n```\n",
             "Adjudicated values (if any) are in `adjudications`; they are not applied to the "
             "labels or to the agreement numbers below. Answers to the study's questionnaire "
             "(if any) are in `questionnaire`, one row per participant and question; no "
             "number below uses them.\n", "## What raters saw\n",
             _display_text(Display.of(study.settings)), "## Rubric\n", *_rubric(study),
             "## Raters\n", *_raters(parts), "## Agreement\n",
             "From the study's statistics report (`concord stats`; raters excluded from the "
             "study are left out).\n", *_agreement(doc)]
    return "\n".join(lines) + "\n"


def _display_text(shown: Display | None) -> str:
    if shown is None:
        return ("Each image as its model wrote it, metadata removed (`display`: "
                "`original`).\n")
    return (f"Every image resized on the server (Lanczos) so that its longer side is "
            f"{shown.size} px, as a {shown.format.upper()} (`display`: `{shown.label()}`"
            + (", chosen at import because the models' images differ in size or file type"
               if shown.auto else "") + ").\n")


def _rubric(study: study_store.Study) -> list[str]:
    found = rubric_choice.study_rubrics(study)
    rubrics = ([found.default] if found.default else []) + list(found.by_dimension.values())
    if not rubrics:
        return ["No rubric recorded.\n"]
    out = []
    for rubric in rubrics:
        out.append(f"**{rubric.id}**: {rubric.title}\n")
        out += ["| criterion | definition | scale |", "|---|---|---|"]
        for c in rubric.criteria:
            scale = (f"continuous {c.scale_text()}" if c.continuous is not None else
                     "; ".join(f"{lv.value:g} = {lv.label}" for lv in c.levels))
            out.append(f"| {c.key} | {_cell(c.definition)} | {_cell(scale)} |")
        out.append("")
    return out


def _raters(parts: dict) -> list[str]:
    out = []
    for name in ("ratings", "rankings", "pairs"):
        frame = parts[name]
        if frame.empty:
            continue
        per = frame.groupby("rater").size()
        out.append(f"- {name}: {frame['rater'].nunique()} raters, {len(frame)} rows; per "
                   f"rater min {per.min()}, median {per.median():g}, max {per.max()}")
    return [*(out or ["No labels yet."]), ""]


def _agreement(doc: dict) -> list[str]:
    rows = doc.get("agreement", {}).get("study", [])
    out = []
    if rows:
        out += ["| criterion | " + " | ".join(t for _, t in _AGREEMENT) + " |",
                "|---" * (len(_AGREEMENT) + 1) + "|"]
        out += [f"| {r['criterion']} | " + " | ".join(_num(r.get(k)) for k, _ in _AGREEMENT)
                + " |" for r in rows]
        out.append("")
    for r in doc.get("rankings", {}).get("kendalls_w", []) or []:
        out.append(f"- rankings, {r.get('criterion')}: mean Kendall's W {_num(r.get('mean_w'))}"
                   f" over {r.get('n_prompts')} prompts")
    for r in (doc.get("pairs", {}) or {}).get("agreement", []) or []:
        shown = ", ".join(f"{k} {_num(v)}" for k, v in r.items()
                          if isinstance(v, int | float) and not isinstance(v, bool))
        out.append(f"- pairs, {r.get('criterion', '')}: {shown}")
    return out or ["No agreement numbers yet (fewer than two raters per item)."]


def _num(value: object) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3f}"
    return "n/a" if value is None else str(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")
