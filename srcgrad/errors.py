"""Error types of srcgrad, and the formatting of source locations in their messages.

Every message says where (the user's file and the real line in that file), which construct,
and what to do about it.
"""
from __future__ import annotations

__all__ = [
    "SrcgradError",
    "UnsupportedSyntaxError",
    "MissingRuleError",
    "NonDifferentiableError",
    "SourceUnavailableError",
    "InternalError",
    "UnsupportedFeatureError",
    "Location",
    "unnested_api",
]

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in the user's source: file, line in that file, function name."""

    filename: str
    lineno: int
    function: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


class SrcgradError(Exception):
    """Base class of every error srcgrad raises on purpose."""

    def __init__(self, message: str):
        if not message:
            raise TypeError("srcgrad errors need a message")
        super().__init__(message)

    def reached_from(self, location: Location, user_code: bool) -> None:
        """Add the call site through which differentiation reached the failing function;
        ``user_code``: the site is in the user's code (the chain stops at the first one, so
        a refusal deep inside a library names the user's line that called into it)."""
        if getattr(self, "_user_site", False) or not self.args:
            return
        self._user_site = user_code
        where = f" in {location.function}()" if location.function else ""
        self.args = (f"{self.args[0]}\n  reached from {location}{where}",) + self.args[1:]


def _located(location: Location | None, message: str, hint: str = "") -> str:
    text = f"{location}: {message}" if location else message
    if location and location.function and f"{location.function}()" not in text:
        text = text.rstrip(".") + f" (in {location.function}())."
    if hint:
        text += f" {hint}"
    return text


class UnsupportedSyntaxError(SrcgradError):
    """One or more constructs of the user's function cannot be differentiated.

    ``problems`` lists ``(location, construct, hint)`` for each, so a user sees them all at once.
    """

    @classmethod
    def from_message(cls, message: str) -> "UnsupportedSyntaxError":
        """One problem found at run time, its message already located."""
        error = cls.__new__(cls)
        error.problems = []
        SrcgradError.__init__(error, message)
        return error

    def __init__(self, problems: list[tuple[Location, str, str]]):
        self.problems = list(problems)
        lines = [_located(loc, f"{construct} is not supported.", hint)
                 for loc, construct, hint in self.problems]
        if len(lines) == 1:
            super().__init__(lines[0])
        else:
            super().__init__(f"{len(lines)} unsupported constructs:\n  " + "\n  ".join(lines))


class MissingRuleError(SrcgradError):
    """A differentiable value flows into a function that has no derivative rule and no source."""

    def __init__(self, name: str, location: Location | None = None):
        self.name = name
        hint = (
            f"Register a rule for it:\n"
            f"    @srcgrad.rule({name})\n"
            f"    def {name.rsplit('.', 1)[-1]}_vjp(g, ans, x):\n"
            f"        return (g * <d {name}(x) / dx>,)\n"
            f"or mark it with srcgrad.nondifferentiable({name}) if its result carries no gradient."
        )
        super().__init__(_located(location, f"no derivative rule for '{name}'.", hint))


class NonDifferentiableError(SrcgradError):
    """Differentiation was asked with respect to something that cannot carry a gradient."""


class SourceUnavailableError(SrcgradError):
    """The source of a function cannot be read (built-in, C extension, deleted file)."""


class UnsupportedFeatureError(SrcgradError):
    """An option or case of an operation that srcgrad does not differentiate (yet); the
    message names it. (Syntax the transformer refuses is UnsupportedSyntaxError.)"""


class InternalError(SrcgradError):
    """A broken invariant inside srcgrad: always a bug in srcgrad, never in the user's code."""

    def __init__(self, pass_name: str, message: str, location: Location | None = None):
        self.pass_name, self.detail, self.location = pass_name, message, location
        super().__init__(_located(
            location, f"internal error in pass '{pass_name}': {message}.",
            "This is a srcgrad bug; please report it with the function being differentiated."))

    def at(self, location: Location) -> "InternalError":
        """This error, located at ``location`` when it has no place yet."""
        if self.location is not None:
            return self
        return InternalError(self.pass_name, self.detail, location)


def unnested_api(api: str) -> tuple[str, str]:
    """What is refused, and the hint, when srcgrad's entry point ``api`` (vjp, jvp, hvp, a
    function vmap made: ``__srcgrad_not_nested__``) is called on differentiable values inside
    a function srcgrad differentiates: its own machinery is not differentiable source."""
    return (f"srcgrad.{api}() called on differentiable values inside a function srcgrad "
            f"differentiates",
            "grad, value_and_grad, elementwise_grad, jacfwd, jacrev and hessian may be "
            "nested; write the product with those (a jvp is jacfwd(f)(x) @ v) or compute it "
            "outside.")
