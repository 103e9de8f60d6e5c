"""Reading a plugin's source tree: metadata from pyproject.toml, setup.py and setup.cfg, and the import
packages where its build configuration puts them (setuptools, scikit-build-core, hatch, maturin, flit, poetry,
pdm, or the `src/` and flat layouts when nothing says otherwise)."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.project.model import (
    SKIP_DIRS,
    EntryPoint,
    PluginProject,
    Requirement,
    normalise,
    parse_requirement_lines,
)
from vllm_scaffold.project.setuptools_files import (
    Find,
    SetuptoolsDeclaration,
    entry_points_from,
    read_setup_cfg,
    read_setup_py,
)

METADATA_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def read_project(root: Path) -> PluginProject:
    """The plugin project in directory `root`; ScaffoldError when it declares nothing a build could read."""
    root = root.absolute()
    if not root.is_dir():
        raise ScaffoldError(f"{root} is not a directory", "pass the directory of a plugin package")
    present = [name for name in METADATA_FILES if (root / name).is_file()]
    if not present:
        raise ScaffoldError(
            f"no pyproject.toml, setup.py or setup.cfg in {root}",
            "pass the directory of a plugin package, a wheel or sdist file, or an installed distribution's name",
        )
    pyproject = _read_pyproject(root / "pyproject.toml") if "pyproject.toml" in present else {}
    setup_py = read_setup_py(root / "setup.py") if "setup.py" in present else SetuptoolsDeclaration()
    setup_cfg = read_setup_cfg(root / "setup.cfg") if "setup.cfg" in present else SetuptoolsDeclaration()
    table = pyproject.get("project", {}) if isinstance(pyproject.get("project"), dict) else {}

    name = str(table.get("name") or setup_cfg.name or setup_py.name or _pkg_info_name(root) or root.name)
    project = PluginProject(root=root, name=name, pyproject=pyproject, version=table.get("version"))
    project.unread = [*setup_py.unread, *setup_cfg.unread]
    project.requires_python = str(table["requires-python"]) if table.get("requires-python") else None

    declared: dict[tuple[str, str], EntryPoint] = {}
    sources = [
        ("pyproject.toml", _pyproject_entry_points(pyproject)),
        ("setup.cfg", setup_cfg.entry_points),
        ("setup.py", setup_py.entry_points),
    ]
    if not any(found for _source, found in sources):
        sources.append(_egg_info_entry_points(root))  # an sdist records what the build computed
    project.read_from = list(present)
    for source, found in sources:
        if found and source not in project.read_from:
            project.read_from.append(source)
        for ep in found:
            declared.setdefault((ep.group, ep.name), ep)
    project.entry_points = list(declared.values())
    project.requirements = [
        *_pyproject_requirements(table),
        *setup_cfg.requirements,
        *setup_py.requirements,
        *_requirements_files(root),
    ]
    project.read_from += sorted({r.declared_in.partition(":")[0] for r in project.requirements if ":" in r.declared_in})
    project.packages = _packages(root, pyproject, [setup_cfg, setup_py], name, project.entry_points)
    project.pth_files = shipped_pth_files(root, [root / f for f in present])
    return project


def shipped_pth_files(root: Path, build_files: list[Path]) -> list[str]:
    """The `*.pth` files of the tree (tests, tooling and hidden folders aside) that the build configuration
    names (hatch `force-include`, setuptools `data_files`, a `build_py` that copies them): what the build
    ships into site-packages, relative to `root`."""
    named = " ".join(path.read_text(encoding="utf-8", errors="replace") for path in build_files if path.is_file())
    if ".pth" not in named:
        return []
    found = []
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f not in SKIP_DIRS and not f.startswith(".") and f != "site-packages"]
        found += [(Path(folder) / f).relative_to(root).as_posix() for f in files if f.endswith(".pth") and f in named]
    return sorted(found)


def _read_pyproject(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ScaffoldError(f"{path} does not parse ({error})", "fix the TOML syntax") from None


def _pkg_info_name(root: Path) -> str | None:
    path = root / "PKG-INFO"
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Name:"):
                return line.partition(":")[2].strip()
    return None


def _pyproject_entry_points(pyproject: dict) -> list[EntryPoint]:
    groups = dict(pyproject.get("project", {}).get("entry-points", {}) or {})
    groups.update(pyproject.get("tool", {}).get("poetry", {}).get("plugins", {}) or {})
    return [
        EntryPoint(str(group), str(name), str(value), "pyproject.toml")
        for group, entries in groups.items()
        if isinstance(entries, dict)
        for name, value in entries.items()
    ]


def _egg_info_entry_points(root: Path) -> tuple[str, list[EntryPoint]]:
    for path in sorted([*root.glob("*.egg-info/entry_points.txt"), *root.glob("src/*.egg-info/entry_points.txt")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        source = path.relative_to(root).as_posix()
        return source, entry_points_from(text, source)
    return "", []


def _pyproject_requirements(table: dict) -> list[Requirement]:
    found = [Requirement(str(d), "pyproject.toml [project.dependencies]") for d in table.get("dependencies", [])]
    for extra, deps in (table.get("optional-dependencies", {}) or {}).items():
        found += [Requirement(str(d), f"pyproject.toml [project.optional-dependencies] {extra}") for d in deps]
    return found


def _requirements_files(root: Path) -> list[Requirement]:
    found = []
    for path in sorted([*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        found += parse_requirement_lines(text, path.relative_to(root).as_posix())
    return found


def _packages(
    root: Path, pyproject: dict, setuptools: list[SetuptoolsDeclaration], name: str, entry_points: list[EntryPoint]
) -> dict[str, Path]:
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    packages = _declared_packages(root, tool, setuptools, name)
    bases = [root / "src", root] if (root / "src").is_dir() else [root]
    if packages is None:
        packages = _discovered(root, bases, name)
    # A package an entry point names is part of the distribution even where the configuration is computed.
    for ep in entry_points:
        top = ep.module.split(".")[0]
        if top and top not in packages and ep.group.startswith("vllm."):
            for base in {location.parent for location in packages.values()} | set(bases):
                if (base / top).is_dir() or (base / f"{top}.py").is_file():
                    packages[top] = base / top if (base / top).is_dir() else base / f"{top}.py"
                    break
    return packages


def _declared_packages(
    root: Path, tool: dict, setuptools: list[SetuptoolsDeclaration], name: str
) -> dict[str, Path] | None:
    """The packages the build configuration names; None when it leaves them to automatic discovery."""
    maturin = tool.get("maturin")
    if isinstance(maturin, dict) and ("python-source" in maturin or "module-name" in maturin):
        base = root / str(maturin.get("python-source", "."))
        top = str(maturin.get("module-name", name.replace("-", "_"))).split(".")[0]
        return _existing({top: base / top}) or _discovered(root, [base], name)
    skbuild = _scikit_build_packages(root, tool, name)
    if skbuild is not None:
        return skbuild
    hatch = tool.get("hatch", {}).get("build", {}) if isinstance(tool.get("hatch"), dict) else {}
    wheel = hatch.get("targets", {}).get("wheel", {}) if isinstance(hatch, dict) else {}
    for table in (wheel, hatch):
        listed = table.get("packages") if isinstance(table, dict) else None
        if isinstance(listed, list) and listed:
            return _existing({Path(str(p)).name: root / str(p) for p in listed})
    flit = tool.get("flit", {}).get("module", {}) if isinstance(tool.get("flit"), dict) else {}
    if isinstance(flit, dict) and flit.get("name"):
        top = str(flit["name"])
        return _existing({top: root / top, f"{top}.py": root / f"{top}.py"}) or _discovered(root, [root / "src"], top)
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    if isinstance(poetry.get("packages"), list):
        listed = [p for p in poetry["packages"] if isinstance(p, dict) and "include" in p]
        return _existing({str(p["include"]): root / str(p.get("from", ".")) / str(p["include"]) for p in listed})
    pdm = tool.get("pdm", {}).get("build", {}) if isinstance(tool.get("pdm"), dict) else {}
    if isinstance(pdm, dict) and pdm.get("package-dir"):
        return _discovered(root, [root / str(pdm["package-dir"])], name)
    return _setuptools_packages(root, tool.get("setuptools", {}), setuptools, name)


def _scikit_build_packages(root: Path, tool: dict, name: str) -> dict[str, Path] | None:
    """scikit-build-core's `wheel.packages`: a list of package directories, or a table of install path ->
    source directory; unset, the first of `src/<name>`, `python/<name>` and `<name>` that exists (<name> the
    distribution name with `_` for `-`). None when the project has no [tool.scikit-build] table."""
    table = tool.get("scikit-build")
    if not isinstance(table, dict):
        return None
    wheel = table.get("wheel", {}) if isinstance(table.get("wheel"), dict) else {}
    listed = wheel.get("packages")
    if isinstance(listed, list) and listed:
        return _existing({Path(str(p)).name: root / str(p) for p in listed})
    if isinstance(listed, dict) and listed:
        tops = {str(target).strip("/"): str(source) for target, source in listed.items()}
        return _existing({target: root / source for target, source in tops.items() if "/" not in target})
    wanted = normalise(name).replace("-", "_")
    for base in (root / "src", root / "python", root):
        if (base / wanted).is_dir():
            return {wanted: base / wanted}
    return _discovered(root, [root / "src", root / "python", root], name)


def _setuptools_packages(
    root: Path, table: dict, declarations: list[SetuptoolsDeclaration], name: str
) -> dict[str, Path] | None:
    package_dir: dict[str, str] = {}
    for declared in reversed(declarations):
        package_dir.update(declared.package_dir)
    package_dir.update(table.get("package-dir", {}) if isinstance(table, dict) else {})
    spec: list[str] | Find | None = None
    py_modules: list[str] = []
    for declared in declarations:
        spec = spec or declared.packages
        py_modules = py_modules or declared.py_modules
    listed = table.get("packages") if isinstance(table, dict) else None
    if isinstance(listed, list):
        spec = [str(p) for p in listed]
    elif isinstance(listed, dict) and isinstance(listed.get("find"), dict):
        find = listed["find"]
        where = find.get("where", ["."])
        spec = Find(
            str(where[0] if isinstance(where, list) and where else where),
            tuple(find.get("include", ["*"])),
            tuple(find.get("exclude", [])),
            bool(find.get("namespaces", True)),
        )
    if isinstance(table, dict) and table.get("py-modules"):
        py_modules = [str(m) for m in table["py-modules"]]
    base = root / package_dir.get("", ".")
    if spec is None and not py_modules:
        return _discovered(root, [base], name) if "" in package_dir else None
    found: dict[str, Path] = {}
    if isinstance(spec, Find):
        found.update(_find(root / spec.where, spec))  # `where` is relative to the project
    elif spec:
        for dotted in spec:
            top = dotted.split(".")[0]
            found.setdefault(top, root / package_dir[top] if top in package_dir else base / top)
    for module in py_modules:
        found.setdefault(module, base / f"{module}.py")
    return _existing(found)


def _existing(candidates: dict[str, Path]) -> dict[str, Path]:
    return {name.removesuffix(".py"): path for name, path in candidates.items() if path.exists()}


def _holds_python(directory: Path) -> bool:
    return any(path.suffix == ".py" for path in directory.rglob("*.py"))


def _find(base: Path, spec: Find) -> dict[str, Path]:
    """setuptools' find_packages / find_namespace_packages, at the top level."""
    found = {}
    for directory in sorted(base.iterdir()) if base.is_dir() else ():
        top = directory.name
        if not directory.is_dir() or not top.isidentifier() or top in SKIP_DIRS:
            continue
        if not ((directory / "__init__.py").is_file() or (spec.namespaces and _holds_python(directory))):
            continue
        included = any(fnmatch.fnmatch(top, p) or p.split(".")[0] == top for p in spec.include)
        if included and not any(fnmatch.fnmatch(top, p) for p in spec.exclude):
            found[top] = directory
    return found


def _discovered(root: Path, bases: list[Path], name: str) -> dict[str, Path]:
    """setuptools' automatic discovery: every package of a `src/` directory; in a flat layout, the packages
    with an `__init__.py` plus a namespace package or module named like the distribution."""
    wanted = normalise(name).replace("-", "_")
    for base in bases:
        if not base.is_dir():
            continue
        src_layout = base != root
        found = _find(base, Find(namespaces=src_layout))
        if not src_layout:
            found = {top: path for top, path in found.items() if not top.startswith("_")}
            if (base / wanted).is_dir() and _holds_python(base / wanted):
                found.setdefault(wanted, base / wanted)
            if not found and (base / f"{wanted}.py").is_file():
                found[wanted] = base / f"{wanted}.py"
        if found:
            return found
    return {}
