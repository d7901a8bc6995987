"""Where VoGCAM's peak memory sits: the peak RSS of a Voronoi fit, block by block (Linux only).

Usage: ``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/vogcam_memory_profile.py N_POINTS N_DUMMY
[--max-iter 3]`` (``5000 35000``: about 4e4 nodes; ``12500 87500``: about 1e5; ``--quick``: 2000 points,
14,000 dummies). Uniform points on the unit square; a small warm-up fit first (kernels compiled and
loaded), then the peak RSS (``VmHWM``, reset through ``/proc/self/clear_refs``) is read around every block
of the ascent and the set-up steps, minus the RSS before the fit. Prints a markdown table: peak above the
pre-fit RSS during each step, in MB and per node, with the factor's stored entries per node and the
estimate ``fit_memory_bytes``.
"""
import argparse
import collections
import gc
import warnings

import numpy as np

import algos.point_process.vogcam._vogcam as vogcam_module
from algos.point_process import VoGCAM
from algos.point_process.vogcam._vogcam_blocks import VoGCAMBlocks, fit_memory_bytes

BLOCKS = ("m_block", "s_block", "sigma_block", "scale_block", "phi_block", "beta_block", "shift_block", "realise")
SET_UP = (("build_quadrature", "quadrature"), ("NNGPStructure", "NNGP structure"),
          ("make_base_factor", "symbolic analysis"))


def _status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


class Profile:
    """Peak RSS above ``base`` per named step (a step's peak: from its start to its end)."""

    def __init__(self):
        self.peaks = collections.defaultdict(int)
        self.base = 0

    def segment(self, name):
        self.peaks[name] = max(self.peaks[name], _status("VmHWM") - self.base)
        _reset_peak()

    def wrap(self, owner, attr, name):
        f = getattr(owner, attr)

        def wrapped(*args, **kwargs):
            self.segment("between blocks")
            try:
                return f(*args, **kwargs)
            finally:
                self.segment(name)

        setattr(owner, attr, wrapped)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_points", nargs="?", type=int, default=5000)
    ap.add_argument("n_dummy", nargs="?", type=int, default=35000)
    ap.add_argument("--max-iter", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2000 points, 14,000 dummies")
    args = ap.parse_args()
    if args.quick:
        args.n_points, args.n_dummy = 2000, 14000
    prof = Profile()
    for attr in BLOCKS:
        prof.wrap(VoGCAMBlocks, attr, attr)
    for attr, name in SET_UP:
        prof.wrap(vogcam_module, attr, name)
    X = np.random.default_rng(0).uniform(size=(args.n_points, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        VoGCAM(window=(0, 1, 0, 1), n_dummy=64, max_iter=2, random_state=0).fit(X[:200])
        gc.collect()
        _reset_peak()
        prof.base = _status("VmRSS")
        prof.peaks.clear()
        est = VoGCAM(window=(0, 1, 0, 1), n_dummy=args.n_dummy, max_iter=args.max_iter, random_state=0).fit(X)
    prof.segment("end of fit")
    N = est.n_nodes_
    stored = est._ascent.base.n_stored / N
    print(f"{N} nodes, {stored:.0f} stored factor entries per node ({8 * stored / 1024:.2f} KB), estimate "
          f"{fit_memory_bytes(N, 15) / N / 1024:.2f} KB per node "
          f"({fit_memory_bytes(N, 15, stored) / N / 1024:.2f} KB with the factor's size)\n")
    print("| step | peak above the pre-fit RSS | per node |\n|---|---|---|")
    for name, v in sorted(prof.peaks.items(), key=lambda t: -t[1]):
        print(f"| {name} | {v / 2**20:.1f} MB | {v / N / 1024:.2f} KB |")


if __name__ == "__main__":
    main()
