"""The API reference (docs/reference/, mkdocs + mkdocstrings) builds with warnings as
errors: a docstring griffe cannot parse, a reference to a name that moved or a page left
out of mkdocs.yml fails here. The tooling is in the [dev] extra (the build takes seconds),
so CI builds it; elsewhere the test skips and says how to install it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDS = ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing() -> list[str]:
    missing = []
    for name in NEEDS:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent package is not there either
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    missing = _missing()
    if missing:
        pytest.skip(f"the docs tooling is not installed ({', '.join(missing)}): "
                    "pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return out


# Slow tier: builds the site with mkdocs.
@pytest.mark.slow
@pytest.mark.parametrize("page, names", [
    ("jit", ["execmode.jit_driver.jit.jit", "execmode.jit_driver.explain.explain"]),
    ("tensor", ["execmode._tensor.Tensor", "execmode.functional.matmul"]),
    ("nn", ["execmode.nn.Linear", "execmode.optim.SGD"]),
    ("profiling", ["execmode.profilers.api.profile", "execmode.profilers.compare.compare"]),
    ("errors", ["execmode.errors.GraphBreakError"]),
    ("torch", ["execmode.torch._random.manual_seed", "execmode.torch._functions.transpose",
               "execmode.torch.amp.GradScaler", "execmode.torch._serialization.load"]),
    ("data", ["execmode.torch.utils.data.dataloader.DataLoader",
              "execmode.torch.utils.data.dataset.random_split",
              "execmode.torch.utils.data.sampler.RandomSampler"]),
])
def test_the_reference_documents_the_public_api(site, page, names):
    html = (site / "reference" / f"{page}.html").read_text()
    for name in names:
        assert f'id="{name}"' in html, name


# Slow tier: builds the site with mkdocs.
@pytest.mark.slow
def test_every_page_of_docs_is_in_the_site(site):
    # mkdocs only says INFO for a page left out of the nav: check it here.
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        assert str(page.relative_to(ROOT / "docs")) in nav, f"{page.name} is not in mkdocs.yml"


def test_the_readme_links_the_reference_and_getting_started():
    readme = (ROOT / "README.md").read_text()
    assert "docs/reference/index.md" in readme and "docs/getting-started.md" in readme
