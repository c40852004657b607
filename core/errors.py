"""Errors the CLI turns into a clear message and exit code 2."""


class HarnessError(Exception):
    """Bad input or an environment the harness cannot work in (exit 2)."""


class SpecError(HarnessError):
    """A spec or scenario field is invalid. The message names the field and the fix."""

    def __init__(self, field: str, problem: str, fix: str | None = None):
        self.field, self.problem, self.fix = field, problem, fix
        msg = f"{field}: {problem}"
        if fix:
            msg += f" (fix: {fix})"
        super().__init__(msg)


class DockerUnavailable(HarnessError):
    """No Docker engine answers."""
