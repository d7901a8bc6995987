r"""The variational state and the block updates of :class:`~algos.point_process.VoGCAM`.

The ELBO of the Gaussian variational family :math:`q = N(m, S)` (Opper & Archambeau 2009; Challis & Barber
2013) at Voronoi quadrature nodes (Berman & Turner 1992) under an NNGP prior (Datta et al. 2016), its
pieces, the factor types of the precision form :math:`S = P^{-1}`, and the coordinate-ascent blocks of the
estimator (Newton m-block, S fixed point, closed-form beta and sigma^2, the non-centred intercept and
variance steps, the Brent range step). Each block takes arrays and returns the updated ones; none lowers
the ELBO (point_process reconstruction notes, T7). The sweep loop that calls them is in
:mod:`._vogcam_solver`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from ..._validation import check_scalar_float
from ._nngp import NU_CODES, nngp_block_terms_on_pattern

#: Newton step clipped to this sup-norm (keeps exp(m + s/2) finite; pitfall of the point_process reconstruction notes,
#: "overflow").
MAX_NEWTON_STEP = 5.0
#: Step halvings tried before a block gives up (the state is then left unchanged).
MAX_HALVINGS = 40
#: Up to this many nodes the linear algebra is dense (LAPACK) by default (the supernodal sparse path is as fast
#: from about 100 nodes and 5-9x faster at 1000-2000 nodes).
DENSE_MAX_NODES = 200
#: Largest number of nodes of the dense torch path (an N x N float64 matrix and its inverse: 6.4 GB at 2e4).
TORCH_MAX_NODES = 20000
#: Relative ELBO drop tolerated inside the S fixed point before damping (point_process reconstruction notes: 1e-10
#: |ELBO|).
S_DAMP_RTOL = 1e-10
#: Floor of the variance when it is optimised (a collapse is reported by a warning).
VARIANCE_FLOOR = 1e-8
#: A fitted variance below this triggers the collapse warning.
VARIANCE_COLLAPSE = 1e-4
#: A range within this relative distance (in log scale) of a bound triggers the boundary warning.
BOUND_RTOL = 1e-2
HYPERS = ("mean", "variance", "length_scale")
#: Relative round-off level of the ELBO sums: smaller changes are not distinguishable from zero.
ROUNDOFF_RTOL = 1e-13
#: Half-width (in log range) of the Brent bracket around the current range, and Brent's x tolerance.
PHI_BRACKET = 0.3
PHI_XATOL = 1e-4
#: Fewest points for a minimum-contrast fit of (sigma^2, phi) (below it K's estimate is mostly noise);
#: ``hyperparameters="auto"`` falls back to the ELBO there.
MIN_CONTRAST_MIN_POINTS = 10
#: Float64 arrays of the factor's size alive at the peak of a sparse fit: the one being factorised or
#: inverted (an S state keeps the recipe of its factor, ``StateFactor``, not the factor; a trial's selected
#: inverse is written over its factor; a Newton step frees its factor before the next one is built).
SPARSE_FACTOR_COPIES = 1
#: Bytes per node per stored entry of the precision ``Q`` (its values, its structure, ``S`` on its pattern for
#: the current state and an S step's new one, the maps of the symbolic analysis and the temporaries of a
#: factorisation and of the range step), calibrated with FIXED_NODE_BYTES on the peak RSS of fits at 4.0e4
#: and 1.0e5 nodes (docs/point_process.md, "Memory").
PATTERN_ENTRY_BYTES = 60
#: Bytes per node independent of ``k``: coordinates, counts, weights, the variational parameters, the
#: quadrature and the minimum-contrast step.
FIXED_NODE_BYTES = 1500


#: Stored factor entries per entry of a row of ``Q`` grow like ``FILL_SLOPE (log2 N - FILL_LOG2_OFFSET)``
#: (fitted to the measured fill of the nested dissection, docs/point_process.md, "Memory").
FILL_SLOPE = 0.85
FILL_LOG2_OFFSET = 8.0


def factor_entries_per_node(n_nodes, n_neighbors):
    """Stored entries per node of the sparse Cholesky factor of an NNGP precision, before any symbolic
    analysis: ``q max(1, FILL_SLOPE (log2 N - FILL_LOG2_OFFSET))`` with ``q = min(3.5 k + 1, N)`` entries of
    ``Q`` per row (nested dissection of a planar-like graph fills ``O(N log N)``; the constants fit the
    measured fill of uniform patterns with the Voronoi quadrature's dummies, N = 1e4-3e5, k = 5-30, to about
    15 %)."""
    N = max(int(n_nodes), 1)
    q = min(3.5 * int(n_neighbors) + 1.0, float(N))
    return q, q * max(1.0, FILL_SLOPE * (math.log2(N) - FILL_LOG2_OFFSET))


def fit_memory_bytes(n_nodes, n_neighbors, factor_entries=None):
    """Estimated peak memory (bytes) of a sparse VoGCAM fit with ``n_nodes`` quadrature nodes and
    ``n_neighbors`` NNGP neighbours.

    ``n_nodes * (SPARSE_FACTOR_COPIES * 8 * s + PATTERN_ENTRY_BYTES * q + FIXED_NODE_BYTES)`` with ``s`` the
    factor's stored entries per node (``factor_entries``, known after the symbolic analysis; else
    :func:`factor_entries_per_node`) and ``q`` the entries of the precision per row.

    Parameters
    ----------
    n_nodes : int
        Quadrature nodes.
    n_neighbors : int
        NNGP neighbours ``k``.
    factor_entries : float or None, default=None
        Stored factor entries per node, if known.

    Returns
    -------
    int
        The estimate in bytes.
    """
    q, s = factor_entries_per_node(n_nodes, n_neighbors)
    if factor_entries is not None:
        s = float(factor_entries)
    per_node = SPARSE_FACTOR_COPIES * 8.0 * s + PATTERN_ENTRY_BYTES * q + FIXED_NODE_BYTES
    return int(math.ceil(int(n_nodes) * per_node))
#: S fixed-point steps per sweep while the hyperparameters still move (the ELBO rises with each).
FIXED_POINT_STEPS_WHILE_MOVING = 2
#: Below this relative ELBO change per sweep the S fixed point runs to its full tolerance ...
FULL_FIXED_POINT_RTOL = 1e-6
#: ... provided the hyperparameters (log sigma^2, log phi) moved by less than this in the last sweep.
THETA_MOVING_TOL = 1e-4
#: Sweeps between two Aitken extrapolations of the hyperparameters (every 2 sweeps was tried: over nine
#: fits of 1.9k-18k nodes the total CPU time was the same within noise, 0.6x-1.6x per fit).
AITKEN_EVERY = 3
#: Newton steps of the m-block per sweep while the hyperparameters move (full tolerance afterwards).
NEWTON_STEPS_WHILE_MOVING = 2
#: Brent's tolerance on log(phi) while the hyperparameters move (PHI_XATOL afterwards).
PHI_XATOL_MOVING = 1e-3
#: smallest half-width of the range step's first bracket in log phi: near convergence the bracket is a few
#: times the last change of log phi (Brent then needs fewer evaluations; an optimum at the edge widens it)
PHI_BRACKET_MIN = 0.1


def elbo_terms(y, w, m, s, Qdata_dot_S, r_Q_r, logdetK, logdetS, N):
    """The closed-form ELBO from its pieces (``Qdata_dot_S = tr(Q S)``, ``r_Q_r = r^T Q r``)."""
    lam = w * np.exp(m + 0.5 * s)
    return float(y @ m - lam.sum() - 0.5 * (Qdata_dot_S + r_Q_r - N + logdetK - logdetS))


class _DenseFactor:
    """Dense twin of :class:`SparseCholesky` (LAPACK), same interface."""

    def __init__(self, indptr, indices, N):
        self.indptr, self.indices, self.N = indptr, indices, N
        self.rows = np.repeat(np.arange(N), np.diff(indptr))
        self.c = None
        self.S = None

    def clone(self):
        return _DenseFactor(self.indptr, self.indices, self.N)

    def factor(self, data):
        P = np.zeros((self.N, self.N))
        P[self.rows, self.indices] = data
        try:
            self.c = sla.cho_factor(P, lower=True, check_finite=True)
        except (sla.LinAlgError, ValueError) as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
        self.S = None
        return self

    def logdet(self):
        return float(2.0 * np.sum(np.log(np.diag(self.c[0]))))

    def solve(self, b):
        return sla.cho_solve(self.c, b)

    def _inv(self):
        if self.S is None:
            S = sla.cho_solve(self.c, np.eye(self.N))
            self.S = 0.5 * (S + S.T)
        return self.S

    def diag_inverse(self):
        return np.diag(self._inv()).copy()

    def inverse_on_pattern(self):
        return self._inv()[self.rows, self.indices]

    def inverse_entries(self, rows, cols):
        return self._inv()[rows, cols]

    def sample(self, z):
        """x with cov P^{-1}: solve L^T x = z."""
        L = np.tril(self.c[0])
        return sla.solve_triangular(L, z, lower=True, trans="T")


class _ScaledFactor:
    """The factor of ``P / c2`` from a factor of ``P`` (so its inverse is ``c2 P^{-1}``)."""

    def __init__(self, fac, c2):
        self.inner = fac.inner if isinstance(fac, _ScaledFactor) else fac
        self.c2 = c2 * (fac.c2 if isinstance(fac, _ScaledFactor) else 1.0)

    def diag_inverse(self):
        return self.c2 * self.inner.diag_inverse()

    def inverse_on_pattern(self):
        return self.c2 * self.inner.inverse_on_pattern()

    def inverse_entries(self, rows, cols):
        return self.c2 * self.inner.inverse_entries(rows, cols)

    def solve(self, b):
        return self.c2 * self.inner.solve(b)

    def logdet(self):
        return self.inner.logdet() - self.inner.N * math.log(self.c2)

    def sample_into(self, z):
        return math.sqrt(self.c2) * _sample(self.inner, z)


class StateFactor:
    """The factor of an S state, kept as its recipe: ``P = Q + diag(mu)`` with ``Q`` the prior precision at
    ``hyper = (sigma^2, phi)`` (or the prior itself where it carries no ``hyper``).

    A state is used during the ascent only through ``s``, ``S`` on the precision's pattern, ``log|S|`` and
    ``mu``; its factor is needed afterwards (predictions, posterior draws), so it is rebuilt once at the end
    of the fit (:meth:`VoGCAMBlocks.realise`) from the same data through the same kernels, which gives the
    same values bit for bit, instead of keeping a factor-sized array alive per state during the ascent."""

    __slots__ = ("hyper", "prior", "mu")

    def __init__(self, prior, mu):
        self.hyper = getattr(prior, "hyper", None)
        self.prior = prior if self.hyper is None else None
        self.mu = mu


def _consume(fac):
    """The selected inverse of a sparse trial factor, written over the factor (its log-determinant kept)."""
    inner = fac.inner if isinstance(fac, _ScaledFactor) else fac
    if hasattr(inner, "Zx") and hasattr(inner, "_sn"):
        inner.selected_inverse(overwrite=True)


def _sample(fac, z):
    """x ~ N(0, P^{-1}) from standard normal z, for any factor type."""
    if isinstance(fac, _ScaledFactor):
        return fac.sample_into(z)
    if isinstance(fac, _DenseFactor):
        return fac.sample(z)
    return fac.sample(z)



def lognormal_band(mu, sd, alpha):
    """Lognormal mean ``exp(mu + sd^2/2)`` and, with ``alpha``, the pointwise ``(1 - alpha)`` band
    ``exp(mu -/+ z_{alpha/2} sd)``: returns ``mean`` or ``(mean, lower, upper)``."""
    mean = np.exp(mu + 0.5 * sd**2)
    if alpha is None:
        return mean
    alpha = check_scalar_float(alpha, "alpha", low=0.0, high=1.0, closed="neither")
    z = norm.ppf(1 - alpha / 2)
    return mean, np.exp(mu - z * sd), np.exp(mu + z * sd)


def design_matrix(cov, coords_user, n_rows, name="covariates"):
    """(n_rows, p) design: intercept column + user covariates."""
    ones = np.ones((n_rows, 1))
    if cov is None:
        return ones
    if callable(cov):
        Zc = np.asarray(cov(coords_user), dtype=np.float64)
    else:
        Zc = np.asarray(cov, dtype=np.float64)
    if Zc.ndim == 1:
        Zc = Zc[:, None]
    if Zc.ndim != 2 or Zc.shape[0] != n_rows:
        raise ValueError(f"'{name}' must give an array of shape ({n_rows}, p); got {Zc.shape}.")
    if not np.all(np.isfinite(Zc)):
        raise ValueError(f"'{name}' must contain only finite values.")
    return np.column_stack([ones, Zc])


#: Right-hand sides solved at once for the entries of S outside the factor's pattern (8 bytes per node
#: each: 160 MB at 10^5 nodes).
SOLVE_COLUMNS = 256


def s_on_neighbourhoods(st8, nb, n_nodes):
    """S on ``nb[i] x nb[i]`` for every query row ``(M, k, k)``, from the S state ``st8`` of ``n_nodes`` nodes."""
    M, k = nb.shape
    if st8["kind"] == "diag":
        out = np.zeros((M, k, k))
        idx = np.arange(k)
        out[:, idx, idx] = st8["s"][nb]
        return out
    fac = st8["fac"]
    R = np.repeat(nb[:, :, None], k, axis=2)
    C = np.repeat(nb[:, None, :], k, axis=1)
    vals = fac.inverse_entries(R.ravel(), C.ravel()).reshape(M, k, k)
    miss = np.isnan(vals)
    if miss.any():
        # pairs outside the factor's pattern: exact columns of S by solves with the cached factor
        # (in chunks of SOLVE_COLUMNS right-hand sides: 8 n_nodes bytes each, not one dense n x m block)
        rr, cc = R[miss], C[miss]
        lo = np.minimum(rr, cc)
        hi = np.maximum(rr, cc)
        cols, which = np.unique(lo, return_inverse=True)
        out = np.empty(len(lo))
        for c0 in range(0, len(cols), SOLVE_COLUMNS):
            part = cols[c0:c0 + SOLVE_COLUMNS]
            E = np.zeros((n_nodes, len(part)))
            E[part, np.arange(len(part))] = 1.0
            Scols = fac.solve(E)
            sel = (which >= c0) & (which < c0 + len(part))
            out[sel] = Scols[hi[sel], which[sel] - c0]
        vals[miss] = out
    return vals


#: Ways to compute the posterior part ``a^T S_NN a`` of the predictive variance (see :func:`neighbourhood_variance`).
STD_METHODS = ("reach", "neighbourhood")


def neighbourhood_variance(st8, nb, A, n_nodes, method="reach"):
    """``a_q^T S[N_q, N_q] a_q`` for every query row ``q`` (``nb``, ``A``: (M, k) neighbour nodes and kriging
    weights), from the S state ``st8`` of ``n_nodes`` nodes; exact with either ``method``.

    ``"reach"``: with a sparse factor ``P = L L^T`` of ``S = P^{-1}``, the form is ``||L^{-1} b_q||^2`` for the
    sparse vector ``b_q`` holding ``a_q`` on ``N_q`` (:meth:`SparseCholesky.inverse_quadratic_forms`): one
    forward solve per query restricted to the elimination-tree paths from ``N_q`` up to their common
    ancestor, then a dense form with the selected inverse on that ancestor's rows; no solve with the whole
    factor. ``"neighbourhood"``: the ``k x k`` blocks of ``S`` (:func:`s_on_neighbourhoods`: the selected
    inverse, and full solves for the pairs outside the factor's pattern), then the forms. States without a
    sparse factor (mean-field, dense, torch) always take the second route, where every entry is at hand."""
    fac = st8.get("fac")
    inner, c2 = (fac.inner, fac.c2) if isinstance(fac, _ScaledFactor) else (fac, 1.0)
    if (method == "reach" and st8["kind"] != "diag" and hasattr(inner, "inverse_quadratic_forms")
            and getattr(inner, "Lx", None) is not None):
        return c2 * inner.inverse_quadratic_forms(nb, A)
    Sb = s_on_neighbourhoods(st8, nb, n_nodes)
    return np.einsum("ij,ijk,ik->i", A, Sb, A)


def _diag_fixed_point(s, m, w, Qd):
    """Mean-field S: the per-node scalar fixed point ``s = 1 / (Q_jj + w e^{m + s/2})``, solved by
    safeguarded Newton on ``s`` from the start ``s``."""
    lo = np.zeros(len(s))
    hi = 1.0 / Qd
    s = np.clip(s, 1e-300, hi)
    for _ in range(100):
        e = w * np.exp(m + 0.5 * s)
        h = 1.0 / s - Qd - e
        dh = -1.0 / s**2 - 0.5 * e
        lo = np.where(h > 0, s, lo)
        hi = np.where(h < 0, s, hi)
        sn = s - h / dh
        bad = (sn <= lo) | (sn >= hi)
        sn = np.where(bad, 0.5 * (lo + hi), sn)
        if np.max(np.abs(sn - s) / np.maximum(s, 1e-300)) < 1e-14:
            return sn
        s = sn
    return s


class VoGCAMBlocks:
    """The problem in unit-box coordinates and the block updates of the coordinate ascent.

    Parameters
    ----------
    y, w : ndarray of shape (N,)
        Counts and quadrature weights at the nodes (unit-box units).
    Z : ndarray of shape (N, p)
        The design (intercept first).
    st : NNGPStructure
        The NNGP structure of the nodes.
    base : factor
        An unfactored factor of the precision pattern (:class:`_DenseFactor`, :class:`SparseCholesky` or
        the torch twin); each factorisation works on a clone.
    covariance : {"full", "diag"}
        Full ``S`` (precision form) or mean field.
    nu : {0.5, 1.5}
        Matern smoothness.
    newton_max_iter, fixed_point_max_iter : int
        Inner iteration limits of the m- and S-blocks.
    phi_bounds : tuple of float
        Bounds of the range (unit-box units).
    opt : set of str
        The hyperparameters the ascent updates (from ``"mean"``, ``"variance"``, ``"length_scale"``).
    """

    def __init__(self, y, w, Z, st, base, *, covariance, nu, newton_max_iter, fixed_point_max_iter, phi_bounds,
                 opt):
        self.y, self.w, self.Z, self.st, self.base = y, w, Z, st, base
        self.covariance, self.nu = covariance, nu
        self.newton_max_iter, self.fixed_point_max_iter = int(newton_max_iter), int(fixed_point_max_iter)
        self.phi_bounds, self.opt = phi_bounds, set(opt)
        self.last_grad, self.newton_iters, self.fp_steps = np.inf, 0, []

    def prior(self, sigma2, phi):
        """The NNGP prior factor (precision ``Q``, ``logdet``) at ``(sigma2, phi)`` (tagged ``hyper``, so a
        state's :class:`StateFactor` can rebuild it)."""
        # the correlation-scale cache pays only where the variance moves at a fixed range
        prior = self.st.factor(sigma2, phi, rows=False, cache="variance" in self.opt)
        prior.hyper = (float(sigma2), float(phi))
        return prior

    def realise(self, st8, prior=None):
        """``st8`` with its factor built from its :class:`StateFactor` recipe (a new dict; ``prior``: the
        current prior, reused when the recipe's hyperparameters are its own)."""
        fac = st8.get("fac")
        c2 = 1.0
        if isinstance(fac, _ScaledFactor):
            fac, c2 = fac.inner, fac.c2
        if not isinstance(fac, StateFactor):
            return st8
        if fac.prior is not None:
            p = fac.prior
        elif prior is not None and getattr(prior, "hyper", None) == fac.hyper:
            p = prior
        else:
            p = self.st.factor(*fac.hyper, rows=False, cache="variance" in self.opt)
        real = self.factor(p, fac.mu)
        out = dict(st8)
        out["fac"] = real if c2 == 1.0 else _ScaledFactor(real, c2)
        return out

    def elbo(self, m, st8, prior, beta):
        r = m - self.Z @ beta
        rQr = float(r @ (prior.Q @ r))
        trQS = float(prior.Q.data @ st8["Sq"])
        return elbo_terms(self.y, self.w, m, st8["s"], trQS, rQr, prior.logdet, st8["logdetS"], len(m))

    def diag_state(self, s, Qdiag_idx, nnzQ):
        Sq = np.zeros(nnzQ)
        Sq[Qdiag_idx] = s
        return {"kind": "diag", "s": s, "Sq": Sq, "logdetS": float(np.sum(np.log(s))), "fac": None}

    def factor(self, prior, diag_add):
        data = prior.Q.data.copy()
        data[self.st.diag_index] += diag_add
        return self.base.clone().factor(data)

    # ------------------------------------------------------------------ blocks
    def m_block(self, m, st8, prior, beta, elbo, max_iter=None):
        y, w, Z = self.y, self.w, self.Z
        s = st8["s"]
        ytol = 1e-8 * (1.0 + np.max(np.abs(y), initial=0.0))
        mu0 = Z @ beta

        def f_m(mm):
            r = mm - mu0
            return float(y @ mm - np.sum(w * np.exp(mm + 0.5 * s)) - 0.5 * r @ (prior.Q @ r))

        fcur = f_m(m)
        gnorm = np.inf
        n_newton = 0
        n_max = self.newton_max_iter if max_iter is None else min(int(max_iter), self.newton_max_iter)
        for _ in range(n_max):
            lam = w * np.exp(m + 0.5 * s)
            g = y - lam - prior.Q @ (m - mu0)
            gnorm = float(np.max(np.abs(g)))
            if gnorm < ytol:
                break
            n_newton += 1
            d = self.factor(prior, lam).solve(g)  # the factor is freed here (one alive, not two)
            dn = np.max(np.abs(d))
            if dn > MAX_NEWTON_STEP:
                d *= MAX_NEWTON_STEP / dn
            tau = 1.0
            for _h in range(MAX_HALVINGS):
                mn = m + tau * d
                fn = f_m(mn)
                # a drop below round-off of f is not a drop (near the optimum the gain is ~|g|^2)
                if np.isfinite(fn) and fn >= fcur - ROUNDOFF_RTOL * (1.0 + abs(fcur)):
                    break
                tau *= 0.5
            else:
                break
            m, fcur = mn, max(fn, fcur) if fn < fcur else fn
        self.last_grad = gnorm
        self.newton_iters = n_newton
        return m

    def s_block(self, m, st8, prior, beta, max_steps=None):
        w = self.w
        N = len(m)
        Qd = prior.Q.data[self.st.diag_index]
        if self.covariance == "diag":
            s = _diag_fixed_point(st8["s"].copy(), m, w, Qd)
            return self.diag_state(s, self.st.diag_index, len(prior.Q.data)), 0

        def evaluate(mu):
            # the trial's factor is consumed by its selected inverse (one factor-sized array alive); an
            # accepted state keeps the recipe of its factor, not the factor
            fac = self.factor(prior, mu)
            logdetS = -fac.logdet()
            _consume(fac)
            s_new = fac.diag_inverse()
            # in precision form tr(Q S) = N - mu^T diag(S)
            trQS = N - float(mu @ s_new)
            val = float(-np.sum(w * np.exp(m + 0.5 * s_new)) - 0.5 * trQS + 0.5 * logdetS)
            return fac, s_new, logdetS, val

        def cur_value(state):
            trQS = float(prior.Q.data @ state["Sq"])
            return float(-np.sum(w * np.exp(m + 0.5 * state["s"])) - 0.5 * trQS + 0.5 * state["logdetS"])

        best = cur_value(st8)
        scale = abs(self.elbo(m, st8, prior, beta)) + 1.0
        state = st8
        mu_old = state.get("mu")
        s = state["s"]
        if mu_old is None:
            # a diagonal starting state s has no precision-form mu; damp towards the mu whose diagonal
            # precision Q_jj + mu_j gives s (w e^m for the default start), so a rejected first full step
            # can still be shortened instead of leaving S at its start
            mu_old = np.maximum(1.0 / np.maximum(s, 1e-300) - Qd, 0.0)
        n_steps = 0
        self.fp_steps = []
        for _ in range(int(self.fixed_point_max_iter if max_steps is None else max_steps)):
            mu_new = w * np.exp(m + 0.5 * s)
            rho = 1.0
            accepted = None
            while rho > 1e-8:
                mu_try = mu_new if rho == 1.0 else (1 - rho) * mu_old + rho * mu_new
                fac = None  # a rejected trial's factor is freed before the next one is built
                try:
                    fac, s_try, ld, val = evaluate(mu_try)
                except np.linalg.LinAlgError:
                    val = -np.inf
                if val >= best - S_DAMP_RTOL * scale:
                    accepted = (fac, s_try, ld, val, mu_try)
                    break
                rho *= 0.5
            if accepted is None:
                break
            fac, s_try, ld, val, mu_try = accepted
            accepted = None
            ds = float(np.max(np.abs(s_try - s)))
            self.fp_steps.append(ds)
            n_steps += 1
            # S on the precision's pattern now, then the trial's inverse is freed: a state keeps the recipe
            # of its factor (rebuilt once where a prediction needs it, VoGCAMBlocks.realise)
            state = None
            state = {"kind": "factor", "s": s_try, "logdetS": ld, "fac": StateFactor(prior, mu_try), "mu": mu_try,
                     "Sq": fac.inverse_on_pattern()}
            fac = None
            best = max(best, val)
            s, mu_old = s_try, mu_try
            if ds < 1e-10:
                break
        return state, n_steps

    def beta_block(self, m, prior):
        Z = self.Z
        QZ = prior.Q @ Z
        A = Z.T @ QZ
        return np.linalg.solve(A, QZ.T @ m)

    def shift_block(self, m, st8, beta):
        """Non-centred intercept step: ``m + delta``, ``beta_0 + delta`` (so ``r`` is unchanged); the ELBO
        changes only through the expected log-likelihood, maximised at ``delta = log(n / sum lambda)``
        [project addition]. Afterwards the expected count equals ``n`` exactly."""
        n = float(self.y.sum())
        lam = float(np.sum(self.w * np.exp(m + 0.5 * st8["s"])))
        if n <= 0 or lam <= 0:
            return m, beta
        delta = math.log(n / lam)
        b = beta.copy()
        b[0] += delta
        return m + delta, b

    def sigma_block(self, m, st8, prior, beta, sigma2):
        r = m - self.Z @ beta
        # R^{-1} = sigma2 * Q
        val = sigma2 * (float(prior.Q.data @ st8["Sq"]) + float(r @ (prior.Q @ r))) / len(m)
        return max(val, VARIANCE_FLOOR)

    def scale_block(self, m, st8, beta, sigma2):
        r"""Non-centred variance step: move along ``m = Z beta + c r``, ``S = c^2 S``, ``sigma^2 = c^2 sigma^2``.

        Along this path ``tr(QS)``, ``r^T Q r`` and ``log|K| - log|S|`` are invariant, so only the expected
        log-likelihood changes: :math:`g(c) = y^\top(Z\beta + c r) - \sum_j w_j e^{(Z\beta)_j + c r_j + c^2 s_j/2}`,
        concave in ``c``; one-dimensional Newton with step halving. Alternating it with the centred
        closed-form step removes most of the slow coupling of ``sigma^2`` and ``m`` (the interweaving idea
        of Yu & Meng 2011) [project addition, not in the point_process reconstruction notes]. Returns ``(m, state,
        sigma2)``."""
        y, w = self.y, self.w
        mu0 = self.Z @ beta
        r = m - mu0
        s = st8["s"]

        def g(c):
            return float(y @ (mu0 + c * r) - np.sum(w * np.exp(mu0 + c * r + 0.5 * c * c * s)))

        c = 1.0
        gc = g(c)
        for _ in range(30):
            e = w * np.exp(mu0 + c * r + 0.5 * c * c * s)
            d1 = float(y @ r - np.sum(e * (r + c * s)))
            d2 = float(-np.sum(e * ((r + c * s) ** 2 + s)))
            if d2 >= 0 or abs(d1) < 1e-12 * (1 + abs(gc)):
                break
            step = -d1 / d2
            t = 1.0
            while t > 1e-10:
                cn = c + t * step
                if cn > 0 and sigma2 * cn * cn >= VARIANCE_FLOOR:
                    gn = g(cn)
                    if gn >= gc:
                        break
                t *= 0.5
            else:
                break
            if abs(cn - c) < 1e-12:
                c, gc = cn, gn
                break
            c, gc = cn, gn
        if c == 1.0:
            return m, st8, sigma2
        m_new, new = self.scaled_state(m, st8, beta, c)
        return m_new, new, sigma2 * c * c

    def scaled_state(self, m, st8, beta, c):
        """``(Z beta + c r, c^2 S)``: the state moved along the non-centred variance path by ``c``."""
        mu0 = self.Z @ beta
        c2 = c * c
        new = dict(st8)
        new["s"] = st8["s"] * c2
        new["Sq"] = st8["Sq"] * c2
        new["logdetS"] = st8["logdetS"] + len(m) * math.log(c2)
        if st8.get("fac") is not None:
            new["fac"] = _ScaledFactor(st8["fac"], c2)
            new["mu"] = st8["mu"] / c2
        return mu0 + c * (m - mu0), new

    def phi_block(self, m, st8, beta, sigma2, phi, profile_variance, xatol=None, half=None):
        r"""Range step: bounded Brent on :math:`\log\phi` of
        :math:`\operatorname{tr}(\tilde Q_\phi S) + r^\top\tilde Q_\phi r + \log|\tilde K_\phi|` (only the
        blocks of ``S`` on ``{i} U N(i)`` are needed). With ``profile_variance`` the variance is profiled
        out in closed form (``sigma^2(phi) = A(phi)/N``), so the step maximises jointly over
        ``(sigma^2, phi)`` — it moves along the ridge ``sigma^2/phi ~ const`` of the exponential
        covariance in one step [project addition to the reconstruction's separate updates]. Accepted only if the
        ELBO does not drop. Returns ``(sigma2, phi)``."""
        st = self.st
        N = len(m)
        r = m - self.Z @ beta
        Sq = st8["Sq"]
        nu_code = NU_CODES[self.nu]

        cache = {}

        def terms(logphi):  # memoised: the current point and Brent's optimum are asked for again
            key = float(logphi)
            if key not in cache:
                # the blocks of S and the distances are read in place (no per-node (k+1)^2 arrays)
                cache[key] = nngp_block_terms_on_pattern(st.coords, st.neighbors, st.counts, float(np.exp(key)),
                                                         nu_code, st.jitter, Sq, st.Q_indptr, st.Q_indices, r)
            return cache[key]

        def obj(logphi):
            a, b = terms(logphi)
            if profile_variance:
                s2 = max(a / N, VARIANCE_FLOOR)
                return a / s2 + b + N * math.log(s2)
            return a / sigma2 + b + N * math.log(sigma2)

        lo, hi = np.log(self.phi_bounds)
        x0 = float(np.log(phi))
        a0, b0 = terms(x0)
        f0 = a0 / sigma2 + b0 + N * math.log(sigma2)  # the current state (sigma2 not yet profiled)
        best_x, best_f = x0, obj(x0)
        half = PHI_BRACKET if half is None else float(half)
        xatol = PHI_XATOL if xatol is None else xatol
        for _ in range(8):
            a, b = max(lo, best_x - half), min(hi, best_x + half)
            res = minimize_scalar(obj, bounds=(a, b), method="bounded", options={"xatol": xatol})
            if res.fun < best_f:
                best_x, best_f = float(res.x), float(res.fun)
            at_edge = (best_x - a < 2 * xatol and a > lo) or (b - best_x < 2 * xatol and b < hi)
            if not at_edge:
                break
            half *= 2.0
        if best_f >= f0:
            return sigma2, phi
        new_phi = float(np.exp(best_x))
        if profile_variance:
            a, _ = terms(best_x)
            return max(a / N, VARIANCE_FLOOR), new_phi
        return sigma2, new_phi

