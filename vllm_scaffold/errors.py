"""The errors the CLI turns into a one-line message and a non-zero exit code (2 for bad input)."""


class ScaffoldError(Exception):
    """Bad input or an unusable project: `problem` says what is wrong, `fix` what to do about it."""

    exit_code = 2

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


class Interrupted(ScaffoldError):
    """Ctrl-C or Ctrl-D at a question, before anything was written."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted", "nothing was written")
