"""The routing data (`catalog/routing/routes.toml`): every vLLM path it names exists in every shipped
release, with the kind it is used as; the loader refuses what it does not declare."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog.routes import ROUTES_FILE, load_routes
from vllm_scaffold.errors import ScaffoldError


@pytest.mark.parametrize("version", vllm_facts.checked_versions())
def test_every_path_exists_in_every_shipped_release(version: str) -> None:
    """A seam names its bases and files under each name they have had (vLLM 0.34 removed the V1 logits-processor
    interface, for example): in every release, at least one of each kind exists, and each name exists in some
    release (the test below)."""
    index = vllm_facts.shipped(version)
    routes = load_routes()
    wrong = []
    for seam in routes.seams:
        for kind, names, holds in (
            ("base", (*seam.bases, *seam.base_answers, *seam.extends), lambda n: index.resolve(n).kind == "class"),
            ("file", seam.files, lambda n: index.has_module(_module_of(n))),
        ):
            if names and not any(holds(name) for name in names):
                wrong.append(f"{seam.key} {kind}: none of {list(names)}")
        # A release may keep no table of its own where another kept one (0.34's built-in logits processors are a
        # list built inside the sampler): what each names still resolves where it exists.
        for point in seam.registers:
            if index.resolve(point).exists and index.resolve(point).kind not in {"class", "value", "function"}:
                wrong.append(f"{seam.key} registers {point}: {index.resolve(point).kind}")
        for call in seam.calls:
            if call.on and index.find_member(index.resolve(call.on), call.name)[0] is None:
                wrong.append(f"{seam.key} call {call.name} on {call.on}")
    for rule in routes.forks:
        # a rule names a module under each name it has had: at least one exists in every release
        if rule.symbols and not any(index.resolve(symbol).exists for symbol in rule.symbols):
            wrong.append(f"fork rule {rule.symbols}")
    assert not wrong, "\n".join(wrong)


def _module_of(prefix: str) -> str:
    return prefix.removesuffix("/").removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def test_every_seam_path_is_some_release_s() -> None:
    indexes = [vllm_facts.shipped(v) for v in vllm_facts.checked_versions()]
    wrong = []
    for seam in load_routes().seams:
        for name in (*seam.bases, *seam.base_answers, *seam.extends, *seam.registers):
            if not any(index.resolve(name).exists for index in indexes):
                wrong.append(f"{seam.key}: {name}")
        for prefix in seam.files:
            if not any(index.has_module(_module_of(prefix)) for index in indexes):
                wrong.append(f"{seam.key}: {prefix}")
    assert not wrong, "\n".join(wrong)


def test_every_name_of_a_fork_rule_is_some_release_s() -> None:
    indexes = [vllm_facts.shipped(v) for v in vllm_facts.checked_versions()]
    names = [symbol for rule in load_routes().forks for symbol in rule.symbols]
    assert [n for n in names if not any(index.resolve(n).exists for index in indexes)] == []


def test_registration_calls_are_vllm_functions_or_methods() -> None:
    """Each call name is defined by vLLM (a module function or a registry's method) in every release."""
    for version in vllm_facts.checked_versions():
        index = vllm_facts.shipped(version)
        defined = {name for entry in index.modules.values() for name in entry.get("f", {})}
        defined |= {
            m for entry in index.modules.values() for cls in entry.get("c", {}).values() for m in cls.get("m", {})
        }
        calls = {call.name for seam in load_routes().seams for call in seam.calls}
        assert calls <= defined, (version, calls - defined)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda text: text.replace('key = "scheduler"\n', 'key = "scheduler"\nweight = 2\n', 1),
            "unknown key 'weight'",
        ),
        (lambda text: text.replace('key = "scheduler"', 'key = "schedulers"', 1), "is no catalog seam"),
        (lambda text: text + "\n[extra]\n", "unknown table 'extra'"),
        (lambda text: text.replace("syntax = ", "syntaxes = ", 1), "[reasons]"),
        (lambda text: text.replace('http_routes = "endpoint"', 'http_routes = "endpoints"', 1), "[roles]"),
        (lambda text: text.replace('name = "method"', 'name = "class"', 1), "extends"),
    ],
)
def test_the_loader_refuses_what_it_does_not_declare(edit, message: str, tmp_path: Path) -> None:  # noqa: ANN001
    path = tmp_path / "routes.toml"
    path.write_text(edit(ROUTES_FILE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ScaffoldError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_routes(path)


def test_every_catalog_seam_has_its_routing() -> None:
    """A seam without a [[seam]] table is invisible to triage and find: its changes would route as patches.
    The patch seam is the route of what no other seam carries, so it has none."""
    from vllm_scaffold.catalog import load_catalog
    from vllm_scaffold.route.routing import PATCH

    assert sorted(seam.key for seam in load_routes().seams) == sorted(set(load_catalog()) - {PATCH})


@pytest.mark.parametrize("version", vllm_facts.checked_versions())
def test_every_feature_rule_names_what_each_release_has(version: str) -> None:
    """The feature rules' evidence, the classes they read fields of or extend, and the modules they span: each
    list names its paths under each name they have had, so at least one of each holds in every release."""
    from vllm_scaffold.route.features import load_rules

    index = vllm_facts.shipped(version)
    wrong = []
    for key, rule in load_rules().items():
        for kind, names, holds in (
            ("evidence", rule.evidence, lambda p: index.resolve(p).exists),
            ("runners", rule.runners, lambda p: index.resolve(p).exists),
            ("bases", rule.bases, lambda p: index.resolve(p).kind == "class"),
            ("declared_in", rule.declared_in, lambda p: index.resolve(p).kind == "class" or index.has_module(p)),
            ("path", rule.path, index.has_module),
            ("reaches", rule.reaches, index.has_module),
        ):
            if names and not any(holds(name) for name in names):
                wrong.append(f"{key}: none of its {kind} {list(names)}")
        if rule.seam and load_routes().seam(rule.seam) is None:
            wrong.append(f"{key}: seam {rule.seam}")
    assert not wrong, "\n".join(wrong)


def test_every_feature_rule_path_is_some_release_s() -> None:
    from vllm_scaffold.route.features import load_rules

    indexes = [vllm_facts.shipped(v) for v in vllm_facts.checked_versions()]
    wrong = [
        f"{key}: {path}"
        for key, rule in load_rules().items()
        for path in (*rule.evidence, *rule.runners)
        if not any(index.resolve(path).exists for index in indexes)
    ] + [
        f"{key}: module {module}"
        for key, rule in load_rules().items()
        for module in (*rule.path, *rule.reaches)
        if not any(index.has_module(module) for index in indexes)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_feature_rules_loader_refuses_an_unknown_key(tmp_path: Path) -> None:
    from vllm_scaffold.route.features import FEATURES_FILE, load_rules

    path = tmp_path / "features.toml"
    path.write_text(FEATURES_FILE.read_text(encoding="utf-8").replace("[routers]\n", "[routers]\nweight = 2\n"))
    with pytest.raises(ScaffoldError, match="unknown key 'weight'"):
        load_rules(path)
