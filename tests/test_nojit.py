"""Run the kernel-vs-twin tests with ``NUMBA_DISABLE_JIT=1``: the kernels' Python source must give
the same results as the compiled kernels (catches code paths that only work compiled, and makes
coverage of the kernels meaningful)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SELECTED = [
    "tests/fair_matching/test_divisible.py::test_exact_pour_matches_bisection_twin",
    "tests/fair_matching/test_divisible.py::test_water_filling_matches_bisection_twin",
    "tests/fair_matching/test_divisible.py::test_hand_computed_rules_differ_on_counterexample",
    "tests/fair_matching/test_metrics.py::test_dinic_matches_reference_and_linprog_on_random_networks",
    "tests/fair_matching/test_indivisible.py::test_hybrid_kernel_matches_reference",
    "tests/fair_matching/test_indivisible.py::test_ranking_kernel_matches_reference",
    "tests/fair_matching/test_indivisible.py::test_greedy_kernel_matches_reference",
    "tests/hetero_regression/test_huber.py::test_huber_pass_matches_nx_core",
    "tests/hetero_regression/test_huber.py::test_quickselect_median_matches_numpy",
    "tests/hetero_regression/test_huber.py::test_masked_ratio_medians_matches_twin",
    "tests/networked_learning/test_sketch.py::test_countsketch_kernel_matches_dense_twin",
    "tests/networked_learning/test_sketch.py::test_fwht_kernel_matches_scipy_hadamard",
    "tests/networked_learning/test_sketch.py::test_gaussian_kernel_matches_backend_core",
    "tests/pomdp/test_beliefs_pbvi.py::test_kernels_match_reference_twins",
    "tests/pomdp/test_accel.py::test_sawtooth_kernel_core_and_loops_agree",
    "tests/continual/test_slda.py::test_delta_pass_kernel_matches_twin",
    "tests/continual/test_reservoir.py::test_reservoir_scan_matches_twin",
    "tests/continual/test_reservoir.py::test_grid_scan4_matches_twin",
    "tests/point_process/test_quadrature.py::test_clip_kernel_matches_reference",
    "tests/point_process/test_nngp_sparse.py::test_nngp_rows_kernel_matches_reference",
    # both factor kernels (column, supernodal); the natural-order column case (44 s uncompiled: dense fill-in
    # through the same loops) adds no code path
    "tests/point_process/test_nngp_sparse.py::test_sparse_cholesky_and_takahashi_vs_dense[rcm-column]",
    "tests/point_process/test_nngp_sparse.py::test_sparse_cholesky_and_takahashi_vs_dense[nd-column]",
    "tests/point_process/test_nngp_sparse.py::test_sparse_cholesky_and_takahashi_vs_dense[natural-supernodal]",
    "tests/point_process/test_nngp_sparse.py::test_sparse_sample_has_covariance_inverse_P",
    "tests/federated/test_model_kernels.py::test_local_gd_kernel_matches_backend_core",
    "tests/federated/test_model_kernels.py::test_fisher_kernel_matches_twin",
    "tests/federated/test_model_kernels.py::test_parallel_and_serial_kernels_bit_identical",
    "tests/federated/test_model_kernels.py::test_single_client_equals_client_inside_round",
]


@pytest.mark.slow
def test_kernels_pass_twin_tests_without_jit(tmp_path):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", ALGOS_HYPOTHESIS_PROFILE="dev")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", *SELECTED],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "passed" in out.stdout
