"""The pattern executor against the numeric one: after every stage of every update, the
predicted nonzero pattern is the pattern of the numbers, and predicted zeros are exact.

The numeric state after each stage comes from running the numeric executor one stage at
a time (a one-stage :class:`~qrlab.stages.Plan` per stage) on random dense data, where a
predicted nonzero is small only with probability about zero.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrlab import stages, updates
from qrlab.executor import Executor
from qrlab.patterns import (FILL, KINDS, NONZERO, ZERO, ZEROED, PatternExecutor, limits,
                            trace)

TOL = 1e-12


class StageRecorder(Executor):
    """The numeric executor, run one stage at a time, keeping Q and R after each."""

    def run(self, plan, Q, R, operands=None):
        self.states = []
        for stage in plan.stages:
            super().run(stages.Plan(plan.kind, plan.shape, (stage,)), Q, R, operands)
            self.states.append((None if Q is None else Q.copy(), R.copy()))
        return Q, R


def numeric(kind, m, n, p, k, rng, method="blocked", nb=None, with_q=True):
    """Run the private update on random data: ``(states after each stage, (Q~, R~))``."""
    Q = np.linalg.qr(rng.standard_normal((m, m)))[0] if with_q else None
    R = np.triu(rng.standard_normal((m, n)))
    mode = "full" if with_q else "none"
    ex = StageRecorder(method)
    if kind == "insert_cols":
        out = updates._insert_cols(Q, R, rng.standard_normal((m, p)), k, mode, ex)
    elif kind == "delete_cols":
        out = updates._delete_cols(Q, R, k, p, mode, ex, nb=nb)
    elif kind == "insert_rows":
        out = updates._insert_rows(Q, R, rng.standard_normal((p, n)), k, mode, ex, nb=nb)
    elif kind == "delete_rows":
        out = updates._delete_rows(Q, R, k, p, mode, ex)
    else:
        out = updates._rank_update(Q, R, rng.standard_normal((m, p)),
                                   rng.standard_normal((n, p)), mode, ex, nb=nb)
    if kind == "insert_rows" and not with_q and m == n:
        out = (None, out[1][:n])        # qr_insert's R-only square case returns n rows
    return ex.states, out


def assert_pattern(pred, X, roundoff=None, where=""):
    """``pred`` is exactly the set ``|X| > tol``; entries predicted zero are exact zeros
    (or, where ``roundoff`` says so, zero up to rounding)."""
    assert pred.shape == X.shape, where
    tol = TOL * max(1.0, float(np.abs(X).max()) if X.size else 1.0)
    big = np.abs(X) > tol
    assert np.array_equal(pred, big), f"{where}\npredicted - numeric:\n" \
        f"{pred.astype(int) - big.astype(int)}"
    exact = X[~pred] == 0
    if roundoff is not None:
        exact |= roundoff[~pred] & (np.abs(X[~pred]) <= tol)
    assert exact.all(), f"{where}: a predicted zero is not exactly zero"


def check_against_numeric(kind, m, n, p, k, rng, method="blocked", nb=None, with_q=True):
    frames = trace(kind, m, n, p, k, Q="full" if with_q else None, nb=nb, method=method)
    states, (Qf, Rf) = numeric(kind, m, n, p, k, rng, method, nb, with_q)
    staged = [f for f in frames if f.step == "stage"]
    assert len(staged) == len(states)
    where = f"{kind} m={m} n={n} p={p} k={k} nb={nb} {method}"
    for f, (Qn, Rn) in zip(staged, states):
        assert_pattern(f.after("R"), Rn, where=f"{where}, R after {f.title!r}")
        if with_q:
            assert_pattern(f.after("Q"), Qn, f.Q_roundoff, f"{where}, Q after {f.title!r}")
    result = frames[-1]
    assert_pattern(result.after("R"), Rf, where=f"{where}, R~")
    if with_q:
        assert_pattern(result.after("Q"), Qf, where=f"{where}, Q~")


def random_case(rng, kind, size=12, p_cap=7):
    m, n = int(rng.integers(1, size + 1)), int(rng.integers(1, size + 1))
    p_max = min(limits(kind, m, n)["p"][1], p_cap)
    p = int(rng.integers(1, p_max + 1))
    k_lo, k_hi = limits(kind, m, n, p)["k"]
    return m, n, p, int(rng.integers(k_lo, k_hi + 1))


# Shapes that exercise the ends: k = 0, k at the end, p = 1, p large, square, wide.
EDGE = [(10, 5, 3, 2), (10, 8, 3, 2), (8, 6, 4, 0), (12, 5, 4, 4), (6, 6, 1, 0),
        (6, 6, 6, 0), (5, 9, 2, 0), (3, 7, 3, 4), (1, 1, 1, 0), (2, 1, 1, 0), (9, 2, 8, 1)]


def _fit(kind, m, n, p, k):
    lim = limits(kind, m, n, min(p, limits(kind, m, n)["p"][1]))
    p = min(p, lim["p"][1])
    k_hi = limits(kind, m, n, p)["k"][1]
    return m, n, p, min(k, k_hi)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", EDGE)
def test_edge_cases_match_numeric(kind, case):
    rng = np.random.default_rng(abs(hash((kind, case))) % 2**32)
    m, n, p, k = _fit(kind, *case)
    for k_ in sorted({0, k, limits(kind, m, n, p)["k"][1]}):
        check_against_numeric(kind, m, n, p, k_, rng)


@pytest.mark.parametrize("kind", KINDS)
def test_random_shapes_match_numeric(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for trial in range(150):
        m, n, p, k = random_case(rng, kind)
        method = ("blocked", "paper")[trial % 2]
        nb = (None, 1, 2, 3)[trial % 4]
        check_against_numeric(kind, m, n, p, k, rng, method, nb)


@settings(max_examples=150)
@given(data=st.data())
def test_hypothesis_shapes_match_numeric(data):
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    m = data.draw(st.integers(1, 14), label="m")
    n = data.draw(st.integers(1, 14), label="n")
    p = data.draw(st.integers(1, min(limits(kind, m, n)["p"][1], 9)), label="p")
    k = data.draw(st.integers(*limits(kind, m, n, p)["k"]), label="k")
    nb = data.draw(st.sampled_from([None, 1, 2, 5]), label="nb")
    method = data.draw(st.sampled_from(["blocked", "paper"]), label="method")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    check_against_numeric(kind, m, n, p, k, np.random.default_rng(seed), method, nb)


@pytest.mark.parametrize("kind", ["delete_cols", "insert_rows"])
def test_r_only_matches_numeric(kind):
    rng = np.random.default_rng(7)
    for _ in range(40):
        m, n, p, k = random_case(rng, kind)
        check_against_numeric(kind, m, n, p, k, rng, nb=(None, 2)[_ % 2], with_q=False)


@pytest.mark.parametrize("kind", KINDS)
def test_detail_frames_chain_and_end_where_stages_end(kind):
    rng = np.random.default_rng(11)
    for _ in range(15):
        m, n, p, k = random_case(rng, kind)
        coarse = trace(kind, m, n, p, k, nb=2)
        fine = trace(kind, m, n, p, k, nb=2, detail=True)
        steps = [f for f in fine if f.step == "wave"]
        for a, b in zip(steps, steps[1:]):
            assert np.array_equal(a.after("R"), b.before("R"))
            assert np.array_equal(a.after("Q"), b.before("Q"))
        if steps:
            assert np.array_equal(steps[-1].after("R"), coarse[-2].after("R"))
            assert np.array_equal(steps[-1].after("Q"), coarse[-2].after("Q"))
        assert np.array_equal(fine[-1].R, coarse[-1].R)


def test_setup_frame_spans_the_whole_update():
    """The setup frame marks what the whole update zeroes and fills (000 Figs. 1-3)."""
    frames = trace("insert_cols", 10, 5, 3, 2)
    setup, stages_, result = frames[0], frames[1:-1], frames[-1]
    assert np.array_equal(setup.before("R"), stages_[0].before("R"))
    assert np.array_equal(setup.after("R"), stages_[-1].after("R"))
    assert np.array_equal(result.R != ZERO, np.triu(np.ones((10, 8), bool)))
    assert set(np.unique(result.R)) <= {ZERO, NONZERO}


def test_codes_say_before_and_after():
    frames = trace("delete_cols", 8, 5, 2, 1)
    stage = frames[1]
    assert (stage.R[2:5, 1:3] != ZERO).any()
    assert stage.R[2, 1] == ZEROED and stage.R[1, 1] == NONZERO
    fill = trace("insert_cols", 10, 5, 3, 2)[2]
    assert fill.R[3, 5] == FILL


def test_blue_and_red_regions():
    ic = trace("insert_cols", 10, 5, 3, 2)
    assert all(f.blue_R[:, 2:5].all() and f.blue_R.sum() == 30 for f in ic)
    assert ic[0].red_R.sum() == 0                         # setup: nothing active yet
    assert ic[1].red_R[5:, 2:5].all() and not ic[1].red_R[:5].any()
    dr = trace("delete_rows", 12, 5, 4, 4, method="paper")
    assert dr[0].blue_Q[:4].all() and not dr[0].blue_Q[4:].any()
    assert dr[1].red_R.all() and dr[1].red_Q.all()
    # qrlab's plan: reflectors on Q's columns past n (R's rows there are zero), then
    # sweeps that reach only the first n + p columns of Q and rows of R
    dr = trace("delete_rows", 12, 5, 4, 4)
    assert dr[1].red_Q[:, 5:].all() and not dr[1].red_Q[:, :5].any()
    assert not dr[1].red_R.any()                         # R is zero on those rows
    assert dr[2].red_Q[:, :9].all() and not dr[2].red_Q[:, 9:].any()
    assert dr[2].red_R[:9].all() and not dr[2].red_R[9:].any()
    ir = trace("insert_rows", 8, 6, 4, 3)
    assert ir[0].blue_R[8:].all() and not ir[0].blue_R[:8].any()
    # Q's blue rows are the new ones (zero in Q's 8 old columns): at the bottom, as drawn
    new_rows = ~ir[0].before("Q")[:, :8].any(axis=1)
    assert np.array_equal(ir[0].blue_Q.any(axis=1), new_rows) and new_rows[8:].all()
    assert ir[-1].blue_Q[3:7].all() and ir[-1].blue_Q.sum() == 4 * 12   # back in place
    dc = trace("delete_cols", 8, 5, 2, 1)
    assert all(f.cut == 1 for f in dc) and not dc[0].blue_R.any()
    ru = trace("rank_update", 6, 4, 2)
    assert ru[0].blue_R[:, 4:].all() and ru[-1].R.shape == (6, 4)


def test_removing_rows_q_becomes_block_diagonal():
    """001 Fig. 5: after the sweeps Q = [D 0; 0 Q~] with D diagonal; the zeros of the
    first p columns come from orthogonality and are flagged as rounding-level."""
    m, p = 9, 3
    for method in ("paper", "blocked"):
        frames = trace("delete_rows", m, 4, p, 2, method=method)
        assert len(frames) == {"paper": 3, "blocked": 4}[method]
        after = frames[-2].after("Q")
        assert np.array_equal(after[:p, :p], np.eye(p, dtype=bool))
        assert not after[:p, p:].any() and not after[p:, :p].any() and after[p:, p:].all()
        roundoff = frames[-2].Q_roundoff
        assert roundoff[p:, :p].all() and not roundoff[:, p:].any()
        assert np.array_equal(roundoff[:p, :p], np.tril(np.ones((p, p), bool), -1))
        assert frames[-1].R.shape == (m - p, 4)


def test_executor_interface_matches_numeric():
    """PatternExecutor.run mutates its inputs in place like Executor.run."""
    Q = np.ones((6, 6), bool)
    R = np.triu(np.ones((6, 4), bool))
    ex = PatternExecutor()
    Q_out, R_out = ex.run(stages.plan_delete_rows(6, 4, 2), Q, R)
    assert Q_out is Q and R_out is R
    assert len(ex.records) == 1 and ex.start[1].sum() == 10


@pytest.mark.parametrize("args, match", [
    (("nope", 5, 4, 1, 0), "kind"),
    (("delete_cols", 5, 4, 5, 0), "p="),
    (("delete_cols", 5, 4, 2, 3), "k="),
    (("insert_rows", 5, 4, 1, 6), "k="),
    (("delete_rows", 5, 4, 2, 4), "k="),
    (("insert_cols", 0, 4, 1, 0), "at least"),
])
def test_trace_rejects_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        trace(*args)


def test_trace_q_argument():
    with pytest.raises(ValueError, match="needs Q"):
        trace("delete_rows", 5, 4, 1, 0, Q=None)
    with pytest.raises(ValueError, match="full"):
        trace("delete_cols", 5, 4, 1, 0, Q="thin")
    frames = trace("delete_cols", 5, 4, 1, 0, Q=None)
    assert all(f.Q is None for f in frames)


def test_limits():
    assert limits("insert_cols", 6, 4, 3) == {"p": (1, 6), "k": (0, 4)}
    assert limits("delete_rows", 6, 4, 2) == {"p": (1, 6), "k": (0, 4)}
    assert limits("rank_update", 6, 4, 2)["k"] == (0, 0)
