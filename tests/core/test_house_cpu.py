"""The house rules of the code base (ARCHITECTURE.md), checked statically: every family in its own
package with pure-Python specs, typed knobs, one select / run shape, no import circles and no
private names borrowed across modules."""

import ast
import dataclasses
import os
import subprocess
import sys

import pytest

import _import_graph as G
import baracuda_dsl as bd
from baracuda_dsl.ops import FAMILIES, all_templates


def test_every_family_is_a_package_with_specs_and_kernels():
    for fam in FAMILIES:
        base = os.path.join(G.ROOT, "baracuda_dsl", "ops", fam)
        for sub in ("__init__.py", os.path.join("specs", "__init__.py"),
                    os.path.join("kernels", "__init__.py")):
            assert os.path.isfile(os.path.join(base, sub)), (fam, sub)


def test_templates_live_in_their_family():
    for t in all_templates():
        assert t.family in FAMILIES, t.name
        assert t.spec.startswith(f"baracuda_dsl.ops.{t.family}.specs."), (t.name, t.spec)
        assert t.module.startswith(f"baracuda_dsl.ops.{t.family}.kernels."), (t.name, t.module)


def test_specs_import_no_dsl():
    """Importing every spec (and so the whole package) must not import the CuTe DSL: specs are
    what a deployed host without a compiler reads."""
    code = ("import sys, baracuda_dsl, array_api\n"
            "from baracuda_dsl.ops import load_specs\n"
            "load_specs()\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('cutlass', 'cuda_dsl'))\n"
            "print(repr(bad))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=G.ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def test_specs_and_plans_never_import_kernels():
    """Only compiler workers import ``kernels`` (and ``blocks``): no spec or plan module names
    them, directly or through each other."""
    g = G.graph()
    bad = []
    for mod, deps in g.items():
        if ".kernels" in mod or mod.startswith("baracuda_dsl.blocks"):
            continue
        for d in deps:
            if ".kernels." in d or d.endswith(".kernels") or d.startswith("baracuda_dsl.blocks"):
                bad.append(f"{mod} -> {d}")
    assert not bad, "\n".join(bad)


def test_kernels_share_code_only_through_blocks():
    """A kernel module imports its own family's specs and kernels, ``baracuda_dsl.blocks`` and
    the leaf modules, never another family's kernels; ``blocks`` import no op family."""
    bad = []
    for mod, deps in G.graph().items():
        if ".kernels." in mod and mod.startswith("baracuda_dsl.ops."):
            fam = mod.split(".")[2]
            bad += [f"{mod} -> {d}" for d in deps
                    if d.startswith("baracuda_dsl.ops.") and d.split(".")[2] != fam]
        elif mod.startswith("baracuda_dsl.blocks"):
            bad += [f"{mod} -> {d}" for d in deps if d.startswith("baracuda_dsl.ops")]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    cyc = G.cycles(G.graph())
    assert not cyc, "\n".join(" <-> ".join(c) for c in cyc)


def test_no_private_names_across_modules():
    """``from module import _name`` only inside one module's own tests, never between modules of
    the packages: what two modules share is public (named without an underscore)."""
    known = G.modules()
    bad = []
    for mod, path in known.items():
        pkg = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1]
                                + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base not in known:
                continue
            for a in node.names:
                if (a.name.startswith("_") and not a.name.startswith("__")
                        and f"{base}.{a.name}" not in known):
                    bad.append(f"{mod}: from {base} import {a.name}")
    assert not bad, "\n".join(bad)


def _plan_classes():
    seen, todo = [], [bd.plan.Plan] if hasattr(bd, "plan") else []
    import baracuda_dsl.plan as P

    todo = [P.Plan]
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in seen and s.__module__.startswith("baracuda_dsl."):
                seen.append(s)
                todo.append(s)
    return seen


def test_one_select_and_one_run():
    """Every plan is selected by ``Plan.select`` (descriptor type check, preference, arch, then
    the family's ``_plan``) and run by ``Plan.run`` (``_bind`` → workspace → ``_launch``)."""
    bad = []
    for c in _plan_classes():
        for name in ("select", "run", "__init__"):
            if name in vars(c):
                bad.append(f"{c.__module__}.{c.__name__} defines {name}")
    assert not bad, "\n".join(bad)


def test_public_plans_name_their_descriptor():
    missing = [f"{c.__module__}.{c.__name__}" for c in _plan_classes()
               if not c.__name__.startswith("_") and c.__name__.endswith("Plan")
               and c.descriptor is object]
    assert not missing, "\n".join(missing)


def test_knobs_are_frozen_dataclasses():
    bad = []
    for t in all_templates():
        kt = t.knobs
        if kt is None or not dataclasses.is_dataclass(kt) or not kt.__dataclass_params__.frozen:
            bad.append(f"{t.name}: knobs type {kt!r}")
            continue
        for k in t.space():
            if type(k) is not kt:
                bad.append(f"{t.name}: space yields {type(k).__name__}, not {kt.__name__}")
                break
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("fam", FAMILIES)
def test_family_exports_resolve(fam):
    import importlib

    mod = importlib.import_module(f"baracuda_dsl.ops.{fam}")
    for name in mod.__all__:
        assert getattr(bd, name) is getattr(mod, name), name


def test_test_file_basenames_are_unique():
    """Test directories have no ``__init__.py`` (pytest's rootdir-relative imports), so two test
    files with one basename collide at collection: every basename appears once."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    seen = {}
    for dirpath, _, files in os.walk(tests):
        for f in files:
            if f.startswith("test_") and f.endswith(".py"):
                seen.setdefault(f, []).append(os.path.relpath(os.path.join(dirpath, f), tests))
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dup, f"test files sharing a basename: {dup}"
