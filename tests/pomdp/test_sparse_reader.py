"""The sparse ``.POMDP`` reader: per-action CSR without a dense intermediate, equal to the dense reader.

* every shipped Cassandra file read with ``engine="sparse"`` gives exactly the arrays of ``engine="dense"``
  (or the same error), under every ``missing_rows`` mode;
* random files over the whole entry grammar (wildcards, rows, matrices, ``identity``, ``uniform``,
  ``reset``, overwrites) give the same model (or the same error) from both readers;
* a 200,000-state model reads within the default budget in bounded memory (peak RSS of a child process)
  and solves a few trials; the dense reader refuses it from the header;
* declared sizes over the budget are refused with the file, the line and the estimate before anything
  proportional to them is allocated; a truncated file names the file and the line;
* ``PointBasedSolver`` warns when ``time_limit`` is shorter than its one-off kernel warm-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
import warnings

import numpy as np
import pytest

from algos._io import _fmt_bytes
from algos.pomdp.io._parser import parse_pomdp, read_pomdp
from algos.pomdp.solvers import _pbs
from algos.pomdp.solvers._pbs import PointBasedSolver

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _outcome(read):
    """``("ok", model, warning messages)`` or ``("error", message, warning messages)``."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            model = read()
        except ValueError as exc:
            return "error", str(exc), [str(w.message) for w in rec]
    return "ok", model, [str(w.message) for w in rec]


def _assert_same(dense, sparse):
    assert dense[0] == sparse[0], (dense[1], sparse[1])
    assert dense[2] == sparse[2]  # the same warnings, word for word
    if dense[0] == "error":
        assert dense[1] == sparse[1]
        return
    d, s = dense[1], sparse[1]
    assert d.is_sparse == s.is_sparse  # the storage follows the sizes, not the reader
    if d.is_sparse:
        for a in range(d.n_actions):
            x, y = d.transition_csr(a), s.transition_csr(a)
            assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
            assert np.array_equal(x.data, y.data)
    else:
        assert np.array_equal(d.T, s.T)
    for name in ("Z", "r", "b0"):
        assert np.array_equal(getattr(d, name), getattr(s, name)), name
    assert (d.discount, d.states, d.actions, d.observations) == (s.discount, s.states, s.actions, s.observations)
    assert d == s


# ---------------------------------------------------------------- shipped models
def _shipped(shared_data_dir):
    folder = shared_data_dir / "pomdp"
    files = sorted(set(folder.glob("*.POMDP")) | set(folder.glob("*.pomdp")))
    assert len(files) >= 10, files
    return files


@pytest.mark.parametrize("missing_rows", ["error", "uniform", "self"])
def test_every_shipped_model_sparse_equals_dense(shared_data_dir, missing_rows):
    n_ok = 0
    for path in _shipped(shared_data_dir):
        dense = _outcome(lambda: read_pomdp(path, engine="dense", missing_rows=missing_rows))
        sparse = _outcome(lambda: read_pomdp(path, engine="sparse", missing_rows=missing_rows))
        _assert_same(dense, sparse)
        n_ok += dense[0] == "ok"
        auto = _outcome(lambda: read_pomdp(path, missing_rows=missing_rows))  # small: read densely
        _assert_same(dense, auto)
    assert n_ok >= 12  # all but pomdp-ex (a quoted "uniform") and, under "error", mini-hall2


# ---------------------------------------------------------------- random files over the grammar
def _random_file(seed):
    rng = np.random.default_rng(seed)
    S, A, O = int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    named = rng.random() < 0.5
    st = [f"st{i}" for i in range(S)] if named else [str(i) for i in range(S)]
    lines = [f"discount: {rng.choice([0.9, 0.95])}", f"values: {rng.choice(['reward', 'cost'])}",
             "states: " + (" ".join(st) if named else str(S)), f"actions: {A}", f"observations: {O}"]

    def pick(names_or_n, star=0.3):
        if rng.random() < star:
            return "*"
        n = names_or_n if isinstance(names_or_n, int) else len(names_or_n)
        i = int(rng.integers(n))
        return names_or_n[i] if not isinstance(names_or_n, int) else str(i)

    def dist(n, sparse=True):
        v = rng.random(n) * (rng.random(n) < (0.5 if sparse else 1.0))
        if v.sum() == 0:
            v[int(rng.integers(n))] = 1.0
        return v / v.sum()

    def fmt(v):
        return " ".join(repr(float(x)) for x in np.ravel(v))

    for _ in range(int(rng.integers(4, 16))):
        kind = rng.choice(["T1", "T2", "T3", "O1", "O2", "O3", "R2", "R3", "R4", "start"], p=[
            .12, .14, .14, .1, .12, .12, .06, .06, .08, .06])
        a = pick(A)
        if kind == "T1":
            body = rng.choice(["identity", "uniform", "dense"])
            M = np.stack([dist(S) for _ in range(S)]) if body == "dense" else None
            lines += [f"T: {a}", fmt(M) if body == "dense" else body]
        elif kind == "T2":
            body = rng.choice(["uniform", "reset", "row"])
            lines += [f"T: {a} : {pick(st if named else S)}", fmt(dist(S)) if body == "row" else body]
        elif kind == "T3":
            p = rng.choice([0.0, 1.0, round(float(rng.random()), 3)])
            lines.append(f"T: {a} : {pick(st if named else S)} : {pick(st if named else S)} {p}")
        elif kind == "O1":
            lines += [f"O: {a}", "uniform" if rng.random() < 0.4 else fmt(np.stack([dist(O) for _ in range(S)]))]
        elif kind == "O2":
            lines += [f"O: {a} : {pick(st if named else S)}", "uniform" if rng.random() < 0.3 else fmt(dist(O))]
        elif kind == "O3":
            p = rng.choice([0.0, 1.0, round(float(rng.random()), 3)])
            lines.append(f"O: {a} : {pick(st if named else S)} : {pick(O)} {p}")
        elif kind == "R2":
            lines += [f"R: {a} : {pick(st if named else S)}", fmt(rng.normal(size=(S, O)).round(2))]
        elif kind == "R3":
            lines += [f"R: {a} : {pick(st if named else S)} : {pick(st if named else S)}",
                      fmt(rng.normal(size=O).round(2))]
        elif kind == "R4":
            lines.append(f"R: {a} : {pick(st if named else S)} : {pick(st if named else S)} : {pick(O)} "
                         f"{float(rng.normal()):.3f}")
        else:
            include = f"start include: {pick(st if named else S, 0)}"
            lines += ["start:", fmt(dist(S))] if rng.random() < 0.5 else [include]
    return "\n".join(lines) + "\n"


def test_random_files_over_the_grammar_read_the_same_sparse_and_dense():
    """Every entry form, wildcards and overwrites in random order: the same model or the same error."""
    n_ok = 0
    for seed in range(150):
        text = _random_file(seed)
        for missing_rows in ("uniform", "self"):
            dense = _outcome(lambda: parse_pomdp(text, "r.POMDP", engine="dense", missing_rows=missing_rows))
            sparse = _outcome(lambda: parse_pomdp(text, "r.POMDP", engine="sparse", missing_rows=missing_rows))
            _assert_same(dense, sparse)
            n_ok += dense[0] == "ok"
    assert n_ok >= 60, n_ok  # the generator mostly writes valid models; errors are compared too


# ---------------------------------------------------------------- a 200,000-state model
_LARGE_S = 200_000

_CHILD = textwrap.dedent("""
    import json, sys, time, warnings
    sys.path.insert(0, {repo!r})
    from algos.pomdp.io._parser import read_pomdp
    def vm(key):
        return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(key)) / 1024
    open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) from here on: the reader's, not the imports'
    base = vm("VmRSS")
    t = time.process_time()
    m = read_pomdp({path!r}, max_bytes=128 * 2**20)
    cpu = time.process_time() - t
    peak = vm("VmHWM")
    T1 = m.transition_csr(1)
    out = dict(base_mb=base, peak_mb=peak, read_cpu_s=cpu, sparse=m.is_sparse, S=m.n_states,
               nnz=[m.transition_csr(a).nnz for a in range(m.n_actions)],
               row0=[T1.indices[T1.indptr[0]:T1.indptr[1]].tolist(), T1.data[T1.indptr[0]:T1.indptr[1]].tolist()],
               z_last=m.Z[:, -1].tolist(), z_mid=m.Z[:, 5].tolist(), r_ends=m.r[[0, -1]].tolist())
    from algos.pomdp.solvers._pbs import PointBasedSolver
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = PointBasedSolver(time_limit=10, max_trials=2, random_state=0).fit(m)
    out.update(lower=sol.lower_bound_, upper=sol.upper_bound_, trials=sol.n_trials_, converged=sol.converged_)
    print(json.dumps(out))
""")


def _large_text(S=_LARGE_S):
    return "\n".join([
        "discount: 0.95", "values: reward", f"states: {S}", "actions: 2", "observations: 2",
        "T: * identity", f"T: 1 : 0 : {S - 1} 1.0", "T: 1 : 0 : 0 0.0",
        "O: * : * : 0 1.0", f"O: * : {S - 1} : 0 0.2", f"O: * : {S - 1} : 1 0.8",
        "R: * : * : * : * -1", f"R: 1 : {S - 1} : * : * 10", "",
    ])


def test_large_identity_model_reads_in_bounded_memory_and_solves(tmp_path):
    path = tmp_path / "big.POMDP"
    path.write_text(_large_text())
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(repo=REPO, path=str(path))], capture_output=True,
                          text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # the reader's own share of the peak (above the interpreter with the package imported), where a dense
    # T alone would be 596 GiB
    assert out["peak_mb"] - out["base_mb"] < 150, out
    assert out["sparse"] and out["S"] == _LARGE_S and out["nnz"] == [_LARGE_S, _LARGE_S]
    assert out["row0"] == [[_LARGE_S - 1], [1.0]]  # the later element entries overwrite the identity row
    assert out["z_last"] == [[0.2, 0.8], [0.2, 0.8]] and out["z_mid"] == [[1.0, 0.0], [1.0, 0.0]]
    assert out["r_ends"] == [[-1.0, -1.0], [-1.0, 10.0]]
    # staying forever (action 0) is worth -1 / (1 - 0.95) = -20 from every state: the blind lower bound; the
    # fast informed bound iterations close the gap to the target before any trial
    assert -20.0 - 1e-6 <= out["lower"] <= out["upper"] + 1e-9 and out["converged"], out
    assert out["upper"] - out["lower"] <= 1e-3


def test_large_model_is_refused_by_the_dense_reader_from_the_header():
    with pytest.raises(ValueError, match=r"big\.POMDP, line 3: 'states: 200000' \(a dense model .* over the memory "
                                         r"budget .*engine='sparse'"):
        parse_pomdp(_large_text(), "big.POMDP", engine="dense", max_bytes=128 * 2**20)


# ---------------------------------------------------------------- the budget, before allocation
def test_header_over_budget_names_file_line_and_estimate_before_allocating(tmp_path):
    path = tmp_path / "huge.POMDP"
    path.write_text("discount: 0.9\nactions: 4\nobservations: 3\nstates: 1000000000\nT: * identity\n")
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            read_pomdp(path, max_bytes=2**30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    S, A, O = 10**9, 4, 3  # the sparse lower estimate: one transition per (a, s), Z dense (three copies), ...
    est = 48 * A * S + 24 * A * S * O + 32 * S * A + 8 * S + 64 * (S + A + O)
    assert f"{path}, line 4: 'states: 1000000000' (a sparse model with S=1000000000, A=4, O=3" in msg
    assert f"would need about {_fmt_bytes(est)}, over the memory budget of 1 GiB" in msg
    assert _fmt_bytes(est) == "633 GiB"
    assert peak < 2**20  # nothing proportional to S was allocated


def test_entries_that_write_whole_rows_are_added_to_the_estimate():
    """``uniform`` on 200,000 states writes S entries per row: refused at that line with the estimate."""
    text = _large_text().replace("T: * identity", "T: 0 identity\nT: 1 uniform")
    with pytest.raises(ValueError, match=r"big\.POMDP, line 7: the entries read \(a sparse model .* and "
                                         r"39999800000 more entries .* would need about 1\.7\d TiB"):
        parse_pomdp(text, "big.POMDP", max_bytes=128 * 2**20)


# ---------------------------------------------------------------- truncated files
@pytest.mark.parametrize("engine", ["dense", "sparse"])
@pytest.mark.parametrize("cut, what", [
    ("O:listen\n0.85 0.15\n0.15", r"line 15: 'O: listen' expects 4 numbers; got 3"),
    ("R:open-left : tiger-left :", r"line 22: expected a field of 'R:' \(at end of file\)"),
    ("start: \n0.5", r"line 7: 'start:' expects 2 numbers; got 1"),
])
def test_truncated_file_names_file_and_line(shared_data_dir, tmp_path, engine, cut, what):
    text = (shared_data_dir / "pomdp" / "tiger.95.POMDP").read_text()
    body = "\n".join(x for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#"))
    path = tmp_path / "tiger-cut.POMDP"
    path.write_text(body[:body.index(cut) + len(cut)])
    with pytest.raises(ValueError, match=rf"tiger-cut\.POMDP, {what}"):
        read_pomdp(path, engine=engine)


def test_engine_is_checked():
    with pytest.raises(ValueError, match=r"engine"):
        parse_pomdp("discount: 0.9\n", engine="csr")


# ---------------------------------------------------------------- the solver's warm-up
def test_time_limit_shorter_than_the_warm_up_warns(monkeypatch):
    from sklearn.exceptions import ConvergenceWarning

    from algos.pomdp._builtin import tiger

    monkeypatch.setattr(_pbs, "_WARMED", False)  # as in a fresh process
    with pytest.warns(ConvergenceWarning, match="stopped at time_limit"), \
            pytest.warns(UserWarning, match=r"time_limit=1e-06 s \(cpu clock\) is shorter than the one-off warm-up"):
        PointBasedSolver(time_limit=1e-6, random_state=0).fit(tiger())
    with warnings.catch_warnings(record=True) as rec:  # warmed: no warm-up and no such warning
        warnings.simplefilter("always")
        PointBasedSolver(time_limit=1e-6, random_state=0).fit(tiger())
    assert not [w for w in rec if "warm-up" in str(w.message)]
