"""pyproject.toml, environment.yml and binder/environment.yml must name the same packages.

Three files list qrlab's dependencies for three ways of installing it (pip, conda, Binder).
A package added to one and forgotten in another works on the author's machine and breaks
someone else's, so the lists are compared here, by name: version pins, environment markers,
python and pip themselves are ignored, and so is CuPy (GPU only; Binder has no GPU).
"""
import re
import sys
from pathlib import Path

import pytest
import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
# Extras whose packages every environment must provide ("gpu" is optional, "dev" = lab + test).
COMPARED_EXTRAS = ("lab", "test")
IGNORED = {"python", "pip"}


def normalise(requirement: str) -> str | None:
    """The package name of a pip or conda requirement, PEP 503-normalised; None if ignored.

    "PyYAML>=6" -> "pyyaml"; "tomli>=2; python_version < '3.11'" -> "tomli";
    "conda-forge::numpy=1.26" -> "numpy".
    """
    spec = requirement.split(";")[0].split("::")[-1].strip()
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
    assert name, f"cannot read a package name from {requirement!r}"
    name = re.sub(r"[-_.]+", "-", name.group(0)).lower()
    if name in IGNORED or name.startswith("cupy"):
        return None
    return name


def names(requirements) -> set[str]:
    return {n for n in map(normalise, requirements) if n is not None}


def pyproject_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = list(project["dependencies"])
    for extra in COMPARED_EXTRAS:
        wanted += extras[extra]
    return names(wanted)


def conda_names(path: Path) -> set[str]:
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    # Plain strings are conda packages; a {"pip": [...]} entry holds pip's own lines
    # ("-e ." installs qrlab itself and names no dependency).
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    return names(conda)


def drift_message(label: str, got: set[str], want: set[str]) -> str:
    lines = [f"{label} and pyproject.toml list different packages:"]
    if want - got:
        lines.append(f"  missing from {label}: {', '.join(sorted(want - got))}")
    if got - want:
        lines.append(f"  only in {label}: {', '.join(sorted(got - want))}")
    return "\n".join(lines)


@pytest.mark.parametrize("label", ["environment.yml", "binder/environment.yml"])
def test_conda_environment_matches_pyproject(label):
    want, got = pyproject_names(), conda_names(ROOT / label)
    assert got == want, drift_message(label, got, want)


def test_dev_extra_is_lab_plus_test():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    assert len(dev) == 1 and re.fullmatch(r"qrlab\[(.*)\]", dev[0]), dev
    assert set(re.fullmatch(r"qrlab\[(.*)\]", dev[0]).group(1).split(",")) == set(COMPARED_EXTRAS)


def test_pyproject_names_the_essentials():
    # Guards the comparison itself: an empty or misread list would make the checks above vacuous.
    assert {"numpy", "scipy", "matplotlib", "ipywidgets", "jupyterlab", "jupytext",
            "pytest", "hypothesis", "nbval", "ipykernel"} <= pyproject_names()


def test_gpu_extra_is_cupy_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    gpu = project["optional-dependencies"]["gpu"]
    assert gpu and all(normalise(r) is None and r.lower().startswith("cupy") for r in gpu)


def test_binder_installs_qrlab_and_pairs_notebooks():
    post_build = (ROOT / "binder" / "postBuild").read_text(encoding="utf-8")
    assert "pip install" in post_build and "-e ." in post_build
    assert "jupytext --sync" in post_build


@pytest.mark.parametrize("requirement, name", [
    ("PyYAML>=6", "pyyaml"),
    ("tomli>=2; python_version < '3.11'", "tomli"),
    ("conda-forge::numpy=1.26", "numpy"),
    ("jupyter_lab", "jupyter-lab"),
    ("python>=3.10", None),
    ("cupy-cuda12x>=13", None),
])
def test_normalise(requirement, name):
    assert normalise(requirement) == name
