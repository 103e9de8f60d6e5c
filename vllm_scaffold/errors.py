"""The errors the CLI turns into a one-line message and a non-zero exit code (2 for bad input)."""


class ScaffoldError(Exception):
    """Bad input or an unusable project: `problem` says what is wrong, `fix` what to do about it, and
    `suggestion` the corrected value the fix proposes, when there is one (a question asked again offers it)."""

    exit_code = 2

    def __init__(self, problem: str, fix: str, suggestion: str | None = None) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix
        self.suggestion = suggestion


class Interrupted(ScaffoldError):
    """Ctrl-C or Ctrl-D at a question, before anything was written."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted", "nothing was written")
