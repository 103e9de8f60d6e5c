"""doctor's static checks, one module per subject. A check is a function over one `Target` (target.py),
declared with `@check(codes...)`; `registered()` finds every one, so a new check is a module here (or a
function in the module of its subject) plus its codes in report/codes.toml.

`environment.py` is the exception: its checks judge the installed plugins together (`doctor --installed`),
not one package, and the runner calls them itself.
"""

from __future__ import annotations

import importlib
import pkgutil

from vllm_scaffold.doctor.checks.target import Check


def registered() -> tuple[Check, ...]:
    """Every check of this package: module by module in name order, each module's in the order it defines
    them. (A finding's place in the report does not depend on it: the report sorts, and each code has one
    check.)"""
    found: list[Check] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda module: module.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [value for value in vars(module).values() if isinstance(value, Check) and value.module == module]
    return tuple(found)
