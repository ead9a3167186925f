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
    """One or more problems in the files of an import; nothing was written.

    ``problems`` holds at most :data:`MAX_SHOWN` of them (the first found) and ``total``
    counts all, so a file with 1,600 bad rows says so instead of "50 problem(s)".
    """

    def __init__(self, problems: list[Problem], total: int | None = None) -> None:
        everything = list(problems)
        self.total = max(total or 0, len(everything))
        self.problems = everything[:MAX_SHOWN]
        if self.total == 1:  # one problem, one line
            super().__init__(f"{self.problems[0]} (nothing was imported)")
            return
        head = f"{self.total} problem(s) found, nothing was imported"
        if self.total > len(self.problems):
            head += f"; the first {len(self.problems)} of {self.total}"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


MAX_SHOWN = 50  # problems listed in one error; the rest are counted


class ProblemLog:
    """Collects problems while reading a large input: keeps the first :data:`MAX_SHOWN`,
    counts every one (memory stays bounded however bad the file is)."""

    def __init__(self) -> None:
        self.shown: list[Problem] = []
        self.count = 0

    def add(self, problem: Problem, times: int = 1) -> None:
        """Record ``problem`` (``times`` > 1: the same problem on that many rows)."""
        self.count += times
        if len(self.shown) < MAX_SHOWN:
            self.shown.append(problem)

    def __bool__(self) -> bool:
        return self.count > 0

    def raise_if_any(self) -> None:
        """Raise :class:`InputError` with everything recorded, if anything was."""
        if self.count:
            raise InputError(self.shown, total=self.count)


class NotFoundError(ConcordError, LookupError):
    """A study, rater or item that does not exist."""


class AuthError(ConcordError):
    """A wrong, unknown or revoked invite token."""


class RatingError(ConcordError, ValueError):
    """A rating or ranking that does not fit the study (bad value, incomplete ranking)."""
