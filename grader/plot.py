"""Draw expected, got and |error| heatmaps for one visible example (matplotlib, optional)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from grader.errors import GraderError
from grader.files import PACKAGE
from grader.names import plot_title
from grader.records import CaseResult, Report

INSTALL_HINT = "--plot needs matplotlib: pip install -e '.[plot]' (or pip install matplotlib)"
# A kit is installed from its folder or its zip, not as the repository: matplotlib alone.
KIT_INSTALL_HINT = "--plot needs matplotlib: pip install matplotlib"


def require_matplotlib() -> Any:
    """Return pyplot on a file-only backend, or stop with how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        # A kit's vendored grader is its package EXERCISE_kit.
        kit = PACKAGE.name.endswith("_kit")
        raise GraderError(KIT_INSTALL_HINT if kit else INSTALL_HINT) from None
    return plt, MaxNLocator


def plot_path(given: Path, submission: Path) -> Path:
    """Return where --plot writes: the .png named, or SUBMISSION.png in the folder named."""
    if given.is_dir():
        return given / f"{submission.stem}.png"
    if given.suffix.lower() != ".png":
        raise GraderError(
            f"--plot {str(given)!r}: give a path ending in .png or an existing folder"
        )
    return given


def pick_case(report: Report) -> CaseResult:
    """Return the first failing example, or the first example when all pass."""
    failing = [c for c in report.cases if not c.passed]
    return (failing or list(report.cases))[0]


def write_plot(
    report: Report, path: Path, axes_named: tuple[str, str] = ("row", "column")
) -> CaseResult:
    """Write one PNG with three labelled panels; return the case it shows."""
    plt, MaxNLocator = require_matplotlib()
    case = pick_case(report)
    want = case.want
    if want is None:
        raise GraderError(f"no expected table to draw for {case.name}")
    got = case.got
    if want.ndim == 1:  # an answer of one axis is drawn as one row
        want = want.reshape(1, -1)
        got = None if got is None or got.ndim != 1 else got.reshape(1, -1)
    comparable = got is not None and got.shape == want.shape
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    fig.suptitle(plot_title(f"{report.submission}: {case.name} ({case.outcome.label})"))
    # One colour scale for expected and got, symmetric, at least [-1, 1] (an encoding's).
    scale = max(1.0, float(np.nanmax(np.abs(want)))) if want.size else 1.0
    _heatmap(fig, axes[0], want, "expected", "RdBu_r", (-scale, scale))
    if comparable:
        assert got is not None
        with np.errstate(invalid="ignore"):
            err = np.abs(got - want)
        _heatmap(fig, axes[1], got, "got", "RdBu_r", (-scale, scale))
        top = float(np.nanmax(err)) if np.isfinite(err).any() else 1.0
        _heatmap(fig, axes[2], err, f"|error| (max {top:.3g})", "magma", (0.0, max(top, 1e-12)))
    else:
        reason = "no table returned" if got is None else f"shape {got.shape}, expected {want.shape}"
        for ax, title in ((axes[1], "got"), (axes[2], "|error|")):
            ax.set_title(title)
            ax.text(0.5, 0.5, reason, ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
    labels = list(case.labels) or None  # the rows' (the exercise's ROWS input)
    for ax in axes[: 3 if comparable else 1]:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(axes_named[0])
        ax.set_xlabel(axes_named[1])
        if labels is not None and len(labels) <= 24:
            ax.set_yticks(range(len(labels)), [str(p) for p in labels])
    try:
        fig.savefig(path, dpi=80)
    except OSError as exc:
        raise GraderError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)
    return case


def _heatmap(
    fig: Any, ax: Any, values: Any, title: str, cmap: str, lim: tuple[float, float]
) -> None:
    image = ax.imshow(
        values, aspect="auto", cmap=cmap, vmin=lim[0], vmax=lim[1], interpolation="nearest"
    )
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
