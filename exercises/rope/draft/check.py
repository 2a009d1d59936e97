"""Check the rotary embedding exercise draft: cases, reference, variants and the matcher.

Run from anywhere with a Python that has numpy and pyyaml:

    python check.py             # the full check; exits 1 if anything is off
    python check.py --examples  # print the examples' expected values from the reference
    python check.py --fuzz      # random inputs: diagnose never names a mistake not made

It expands every hidden case (seeded x, ranged positions), runs the reference and every
variant, compares them with the grading rule |got - want| <= atol + rtol * |want|, and runs
diagnose on each failing (wrong variant, case) pair with the known tables of that case.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

import numpy as np
import yaml

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
RTOL = ATOL = 1e-6

# Which code each wrong file must be diagnosed as.
EXPECTED = {
    "rotate_half": "rotate_half",
    "sign_flipped": "sign_flipped",
    "base_1000": "wrong_base",
    "row_index": "row_index_not_position",
    "exponent_i_over_d": "exponent_i_over_d",
    "float32_angles": "low_precision_float32",
    "float16": "low_precision_float16",
    "swapped_sin_cos": "swapped_sin_cos",
    "concatenated_angles": "pairs_with_concatenated_angles",
    "halves_interleaved_angles": "halves_with_interleaved_angles",
}
PRECISION = {"low_precision_float32", "low_precision_float16"}


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_m_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expand_x(spec):
    if isinstance(spec, dict):
        low = float(spec.get("low", -1.0))
        high = float(spec.get("high", 1.0))
        return np.random.RandomState(spec["seed"]).uniform(low, high, tuple(spec["shape"]))
    return np.asarray(spec, dtype=np.float64)


def expand_positions(spec):
    if isinstance(spec, dict):
        return list(range(*spec["range"]))
    return [int(p) for p in spec]


def validate(name, x, positions):
    """The domain of the statement: fail loudly if a case leaves it."""
    n, d = x.shape
    assert 1 <= n <= 4096, (name, "n")
    assert 2 <= d <= 4096 and d % 2 == 0, (name, "d")
    assert n * d <= 1_000_000, (name, "n*d")
    assert len(positions) == n, (name, "len(positions)")
    assert all(0 <= p <= 1_000_000 for p in positions), (name, "positions")
    assert np.all(np.isfinite(x)) and np.abs(x).max() <= 1e6, (name, "x")


def cases():
    out = []
    for path in sorted((HERE / "hidden_tests").glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        x = expand_x(case["input"]["x"])
        positions = expand_positions(case["input"]["positions"])
        validate(path.stem, x, positions)
        assert len(case["why"]) <= 200, (path.stem, "why too long")
        out.append((path.stem, x, positions))
    return out


def passes(got, want):
    return bool(np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want)))


def run(module, x, positions):
    """Return (status, got): status is 'pass'-able array, 'shape', 'error' or 'nonfinite'."""
    try:
        with np.errstate(all="ignore"):
            result = module.apply_rope(x.tolist(), list(positions))
            got = np.asarray(result, dtype=np.float64)
    except Exception:  # noqa: BLE001 - a learner's code may raise anything
        return "error", traceback.format_exc(limit=1)
    return "ok", got


def main() -> int:
    sys.path.insert(0, str(HERE / "problem"))
    import diagnose as diag  # the public matcher
    import mistakes  # the staff-only generators

    reference = load(HERE / "solutions" / "reference.py")
    problems: list[str] = []

    # The examples: stored values against the reference.
    examples = yaml.safe_load((HERE / "examples.yaml").read_text())
    tol = examples["tolerance"]
    assert tol == {"rtol": RTOL, "atol": ATOL}, tol
    assert len(examples["examples"]) == 2
    print("examples")
    example_inputs = []
    for ex in examples["examples"]:
        x = np.asarray(ex["input"]["x"], dtype=np.float64)
        positions = list(ex["input"]["positions"])
        want = reference.apply_rope(x.tolist(), positions)
        stored = np.asarray(ex["expected"], dtype=np.float64)
        ok = stored.shape == want.shape and passes(stored, want)
        print(f"  {ex['name']:28s} stored values {'agree' if ok else 'DISAGREE'} with the reference")
        if not ok:
            problems.append(f"example {ex['name']}: stored values disagree with the reference")
        example_inputs.append((ex["name"], x, positions))

    all_cases = cases()
    wants = {}
    tables = {}
    for name, x, positions in all_cases:
        want = np.asarray(reference.apply_rope(x.tolist(), positions), dtype=np.float64)
        assert want.shape == x.shape and want.dtype == np.float64
        # The reference agrees with the staff generators' own right answer.
        assert np.allclose(want, mistakes.right(x, np.asarray(positions, float)), rtol=0, atol=1e-9)
        wants[name] = want
        tables[name] = mistakes.known_tables(x, np.asarray(positions, dtype=np.float64))
    names = [n for n, _, _ in all_cases]
    short = [n.split("_", 1)[0] for n in names]
    print("\nhidden cases")
    for name, x, positions in all_cases:
        print(f"  {name:24s} n={x.shape[0]:5d} d={x.shape[1]:5d} max p={max(positions):8d} max|x|={np.abs(x).max():.3g}")

    # Correct variants: must pass every case and both examples.
    print("\ncorrect variants (P = pass)")
    print("  " + " " * 26 + " ".join(f"{s:>3s}" for s in short) + "  examples")
    for path in sorted((HERE / "solutions" / "correct").glob("*.py")):
        module = load(path)
        row = []
        for name, x, positions in all_cases:
            status, got = run(module, x, positions)
            ok = status == "ok" and got.shape == wants[name].shape and passes(got, wants[name])
            row.append("P" if ok else "F")
            if not ok:
                problems.append(f"correct/{path.stem} fails {name}")
        ex_ok = all(
            (lambda s, g: s == "ok" and passes(g, reference.apply_rope(x.tolist(), p)))(*run(module, x, p))
            for _, x, p in example_inputs
        )
        if not ex_ok:
            problems.append(f"correct/{path.stem} fails an example")
        print(f"  {path.stem:26s}" + " ".join(f"{c:>3s}" for c in row) + f"  {'pass' if ex_ok else 'FAIL'}")

    # Wrong variants: each must fail some case; diagnose names its own mistake, never another.
    print("\nwrong variants: on each case '.' = passes, else the code diagnose names on the")
    print("failing case ('-' = no hint, S = wrong shape, E = exception); 'own' = its own code")
    case_failed_by: dict[str, set[str]] = {n: set() for n in names}

    def wrong_rows(folder: Path, label: str, unrelated: bool = False):
        legend: dict[str, str] = {}
        print(f"\n  {label}")
        print("  " + " " * 26 + " ".join(f"{s:>4s}" for s in short) + "  examples")
        for path in sorted(folder.glob("*.py")):
            module = load(path)
            own = None if unrelated else EXPECTED[path.stem]
            cells = []
            failed = 0
            named_own = 0
            for name, x, positions in all_cases:
                want = wants[name]
                status, got = run(module, x, positions)
                if status != "ok":
                    cells.append("E")
                    failed += 1
                    case_failed_by[name].add(f"{folder.name}/{path.stem}")
                    continue
                if got.shape != want.shape:
                    cells.append("S")
                    failed += 1
                    case_failed_by[name].add(f"{folder.name}/{path.stem}")
                    continue
                with np.errstate(all="ignore"):
                    ok = passes(got, want)
                if ok:
                    cells.append(".")
                    continue
                failed += 1
                case_failed_by[name].add(f"{folder.name}/{path.stem}")
                code = diag.diagnose(x, positions, got, want, tables[name])
                # Without the tables (the learner kit on an input it has none for), only the
                # precision mistakes can be named, and only the same one.
                bare = diag.diagnose(x, positions, got, want, None)
                if bare is not None and (bare != code or bare not in PRECISION):
                    problems.append(f"{label}/{path.stem} on {name}: without tables named {bare}")
                if code is not None and code not in diag.HINTS:
                    problems.append(f"{label}/{path.stem} on {name}: unknown code {code}")
                if code is None:
                    cell = "-"
                    if not unrelated and _distinguishable(own, tables[name], want, got, x, diag):
                        problems.append(f"{label}/{path.stem} on {name}: no hint, but {own} is distinguishable")
                elif code == own:
                    cell = "own"
                    named_own += 1
                else:
                    cell = legend.setdefault(code, f"X{len(legend) + 1}")
                    problems.append(f"{label}/{path.stem} on {name}: named {code}, not {own}")
                cells.append(cell)
            ex_cells = []
            for _, x, p in example_inputs:
                status, got = run(module, x, p)
                want = reference.apply_rope(x.tolist(), p)
                ex_cells.append(
                    "pass" if status == "ok" and got.shape == want.shape and passes(got, want) else "fail"
                )
            print(f"  {path.stem:26s}" + " ".join(f"{c:>4s}" for c in cells) + "  " + "/".join(ex_cells))
            if failed == 0:
                problems.append(f"{label}/{path.stem} passes every hidden case")
            if not unrelated and named_own == 0:
                problems.append(f"{label}/{path.stem} is never diagnosed as {own}")
        for code, mark in legend.items():
            print(f"    {mark} = {code}")

    wrong_rows(HERE / "solutions" / "wrong", "wrong")
    wrong_rows(HERE / "second_implementations", "second_implementations")
    wrong_rows(HERE / "unrelated_wrong", "unrelated_wrong", unrelated=True)

    # Same file names in wrong/ and second_implementations/.
    first = {p.stem for p in (HERE / "solutions" / "wrong").glob("*.py")}
    second = {p.stem for p in (HERE / "second_implementations").glob("*.py")}
    if first != second:
        problems.append(f"second_implementations differ from wrong/: {sorted(first ^ second)}")

    print("\ncases: failed by how many wrong variants (wrong/ + second_implementations/)")
    for name in names:
        k = len([v for v in case_failed_by[name] if not v.startswith("unrelated")])
        print(f"  {name:24s} {k}")
        if k == 0:
            problems.append(f"case {name} is failed by no wrong variant")

    # The public matcher must not evaluate the formula, and the starter holds no formula.
    for rel in ("problem/diagnose.py", "problem/starter.py"):
        for token in _code_tokens(HERE / rel):
            if token in ("sin", "cos", "exp", "power", "arctan2", "polar") or token.startswith("10000"):
                problems.append(f"{rel} computes with {token!r}")

    print()
    if problems:
        print(f"{len(problems)} problem(s):")
        for p in problems:
            print("  - " + p)
        return 1
    print("all checks pass")
    return 0


def _distinguishable(own, tables, want, got, x, diag):
    """Return True if ``own`` should have been named on this case (for the report's strictness).

    An exact mistake is distinguishable when its table differs from the right answer by
    more than twice the matching slack on some row and the answer is its table within the
    matching slack. A precision mistake is distinguishable when the answer is finite and
    within that precision's allowance of the right answer.
    """
    if not np.all(np.isfinite(got)):
        return False
    length = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1)
    if own in PRECISION:
        return False  # judged by the row of the table: reported as '-' for review
    slack = diag.MATCH_TOL * np.minimum(1.0, length) + diag.TINY
    for key, table in tables.items():
        if diag.code_of(key) != own:
            continue
        apart = np.abs(table - want).max(axis=1)
        if np.any(apart > 2 * slack) and np.all(np.abs(got - table).max(axis=1) <= slack):
            return True
    return False


def _code_tokens(path: Path):
    """Yield the names and numbers of a file's code, leaving out strings and comments."""
    import tokenize

    with path.open("rb") as f:
        for tok in tokenize.tokenize(f.readline):
            if tok.type in (tokenize.NAME, tokenize.NUMBER):
                yield tok.string


def print_examples() -> None:
    reference = load(HERE / "solutions" / "reference.py")
    examples = yaml.safe_load((HERE / "examples.yaml").read_text())
    for ex in examples["examples"]:
        want = reference.apply_rope(ex["input"]["x"], ex["input"]["positions"])
        print(ex["name"])
        for row in want:
            print("  - [" + ", ".join(f"{v:.6g}" for v in row) + "]")


def fuzz(trials: int = 300, seed: int = 1) -> int:
    """Random inputs of the domain: diagnose must never name a mistake that is not the one made.

    Runs every wrong and unrelated variant, and feeds diagnose the known tables themselves
    (as computed, rounded to float32, and mixed row by row with the right answer or with
    another mistake).
    """
    sys.path.insert(0, str(HERE / "problem"))
    import diagnose as diag
    import mistakes

    reference = load(HERE / "solutions" / "reference.py")
    variants = []
    for folder, unrelated in (
        (HERE / "solutions" / "wrong", False),
        (HERE / "second_implementations", False),
        (HERE / "unrelated_wrong", True),
    ):
        for path in sorted(folder.glob("*.py")):
            variants.append((f"{folder.name}/{path.stem}", load(path), None if unrelated else EXPECTED[path.stem]))
    rng = np.random.default_rng(seed)
    bad: list[str] = []
    named = {name: 0 for name, _, _ in variants}
    failed = {name: 0 for name, _, _ in variants}
    tables_named = 0
    for t in range(trials):
        d = int(rng.choice([2, 4, 6, 8, 10, 12, 16, 32, 64, 128, 256]))
        n = int(rng.integers(1, 40))
        kind = rng.integers(0, 4)
        if kind == 0:
            positions = rng.integers(0, 20, n)
        elif kind == 1:
            positions = rng.integers(0, 5000, n)
        elif kind == 2:
            positions = rng.integers(0, 1_000_001, n)
        else:
            positions = np.arange(n) + int(rng.integers(0, 3))
        positions = [int(v) for v in positions]
        scale = float(rng.choice([1e-3, 1.0, 1.0, 1.0, 100.0, 1e4]))
        x = rng.uniform(-scale, scale, (n, d))
        if rng.random() < 0.3:
            x[rng.random((n, d)) < 0.3] = 0.0
        want = reference.apply_rope(x.tolist(), positions)
        p = np.asarray(positions, dtype=np.float64)
        tables = mistakes.known_tables(x, p)
        for name, module, own in variants:
            status, got = run(module, x, positions)
            if status != "ok" or got.shape != want.shape:
                continue
            with np.errstate(all="ignore"):
                if passes(got, want):
                    continue
            failed[name] += 1
            code = diag.diagnose(x, positions, got, want, tables)
            if code == own:
                named[name] += code is not None
            elif code is not None:
                bad.append(f"trial {t}: {name} named {code} (d={d}, n={n}, max p={max(positions)}, scale={scale:g})")
        keys = list(tables)
        for key in keys:
            own = diag.code_of(key)
            table = tables[key]
            for got in (table, table.astype(np.float32).astype(np.float64)):
                if passes(got, want):
                    continue
                code = diag.diagnose(x, positions, got, want, tables)
                if code not in (None, own):
                    bad.append(f"trial {t}: table {key} named {code}")
                tables_named += code == own
            # Half the rows from this mistake, half right, or from another mistake.
            other = tables[keys[int(rng.integers(0, len(keys)))]]
            for second in (want, other):
                mixed = table.copy()
                mixed[n // 2 :] = second[n // 2 :]
                if passes(mixed, want):
                    continue
                code = diag.diagnose(x, positions, mixed, want, tables)
                if code is not None:
                    fit = [k for k in keys if diag.code_of(k) == code]
                    length = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1)
                    slack = diag.MATCH_TOL + diag._allowance(p, length, diag.FLOAT32_EPS) * length
                    if not any(np.all(np.abs(mixed - tables[k]).max(axis=1) <= slack) for k in fit):
                        bad.append(f"trial {t}: rows of {key} mixed with others named {code}")
    print(f"fuzz: {trials} random inputs")
    for name, _, own in variants:
        print(f"  {name:48s} failed {failed[name]:4d}  named its own mistake {named[name]:4d}")
    print(f"  known tables named as themselves: {tables_named}")
    for line in bad[:30]:
        print("  - " + line)
    print("fuzz: " + ("all checks pass" if not bad else f"{len(bad)} problem(s)"))
    return 1 if bad else 0


if __name__ == "__main__":
    if "--examples" in sys.argv:
        print_examples()
        sys.exit(0)
    if "--fuzz" in sys.argv:
        sys.exit(fuzz())
    sys.exit(main())
