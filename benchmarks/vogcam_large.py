"""VoGCAM's fit on one large simulated LGCP (variance 1, range 0.05, unit square).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/vogcam_large.py EXPECTED_COUNT [QUADRATURE]`` (e.g.
``1.33e5`` for about 10^5 points; QUADRATURE ``voronoi`` (the default here, every point a node),
``grid`` or ``auto``, the estimator's default, which is the grid from 50,000 points on); prints the
point and node counts, the fit's process CPU seconds, the peak RSS of the process, the fitted variance
and range, and any warning. Run it under ``/usr/bin/time -v`` for the RSS of the whole process.
"""
import math
import resource
import sys
import time
import warnings

from algos.point_process import VoGCAM, simulate_lgcp


def main():
    n_target = float(sys.argv[1])
    quadrature = sys.argv[2] if len(sys.argv) > 2 else "voronoi"
    s = simulate_lgcp((0, 1, 0, 1), mean=math.log(n_target) - 0.5, variance=1.0, length_scale=0.05, grid=256,
                      random_state=1)
    X = s.points
    print("points", len(X), flush=True)
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = VoGCAM(window=(0, 1, 0, 1), quadrature=quadrature, random_state=0).fit(X)
    cpu = time.process_time() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"n={len(X)} nodes={est.n_nodes_} cpu={cpu:.1f}s peakRSS={rss:.2f}GB variance={est.variance_:.3f} "
          f"range={est.length_scale_:.4f} "
          f"iters={est.n_iter_} converged={est.converged_} solver={est.solver_}", flush=True)
    print([str(x.message)[:120] for x in w])


if __name__ == "__main__":
    main()
