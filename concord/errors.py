"""Domain errors. Each carries what the user needs to fix the input."""

from __future__ import annotations

from dataclasses import dataclass


class ConcordError(Exception):
    """Base class of errors a user can act on; the CLI prints them as one line."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: where it is and what is wrong."""

    file: str
    message: str
    row: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class InputError(ConcordError):
    """One or more problems in the files of an import; nothing was written."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:  # one problem, one line
            super().__init__(f"{self.problems[0]} (nothing was imported)")
            return
        head = f"{len(self.problems)} problem(s) found, nothing was imported"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


class NotFoundError(ConcordError, LookupError):
    """A study, rater or item that does not exist."""


class AuthError(ConcordError):
    """A wrong, unknown or revoked invite token."""


class RatingError(ConcordError, ValueError):
    """A rating or ranking that does not fit the study (bad value, incomplete ranking)."""
