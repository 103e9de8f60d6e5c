"""The one error type the CLI turns into a one-line message and exit code 2."""


class ScaffoldError(Exception):
    """Bad input or an unusable project: `problem` says what is wrong, `fix` what to do about it."""

    exit_code = 2

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix
