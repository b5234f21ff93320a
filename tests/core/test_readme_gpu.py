"""The README's Python examples run as written (keeps the docs true to the code)."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_has_examples():
    assert len(_blocks()) >= 4


@pytest.mark.gpu
@pytest.mark.parametrize("index", range(len(_blocks())))
def test_readme_example_runs(index):
    code = _blocks()[index]
    if "import torch" in code:
        pytest.importorskip("torch")
    exec(compile(code, f"README.md[python block {index}]", "exec"), {"__name__": "readme"})
