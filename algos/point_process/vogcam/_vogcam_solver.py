r"""The coordinate ascent of :class:`~algos.point_process.VoGCAM` on its closed-form ELBO.

:class:`VoGCAMSolver` runs the sweeps of the block updates of :class:`._vogcam_blocks.VoGCAMBlocks` from a
constant start, with the stopping rule, the Aitken extrapolation of the hyperparameters and the boundary
trial of a collapsing variance [project additions], one ``Interruptible`` checkpoint per sweep, and a final
pass at the last hyperparameters; it also holds the Laplace evidence maximisation of
``hyperparameters="laplace"`` [project addition] and the choice of the factor type. Everything here takes
arrays and checked parameters, in unit-box coordinates.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..._anytime import Interruptible
from ..._io import memory_budget_bytes
from .._sparse import SparseCholesky
from ._vogcam_blocks import (
    AITKEN_EVERY,
    FIXED_POINT_STEPS_WHILE_MOVING,
    FULL_FIXED_POINT_RTOL,
    MAX_HALVINGS,
    MAX_NEWTON_STEP,
    NEWTON_STEPS_WHILE_MOVING,
    PHI_BRACKET,
    PHI_BRACKET_MIN,
    PHI_XATOL,
    PHI_XATOL_MOVING,
    ROUNDOFF_RTOL,
    SPARSE_FACTOR_COPIES,
    THETA_MOVING_TOL,
    VARIANCE_FLOOR,
    VoGCAMBlocks,
    _consume,
    _DenseFactor,
    fit_memory_bytes,
)

#: a variance below this that fell on two sweeps in a row is tried at the boundary ``VARIANCE_FLOOR`` (a
#: collapsing variance converges to 0 only linearly in log sigma^2: a constant factor per sweep)
VARIANCE_COLLAPSE_TRY = 0.1


def _memory_budget():
    """The memory budget in bytes (:func:`algos._io.memory_budget_bytes`: ``ALGOS_MEMORY_BUDGET_MB`` or half
    the machine's memory), the one :meth:`VoGCAM.fit`'s checks apply."""
    return memory_budget_bytes()


def make_base_factor(st, U, solver, backend, device, is_data):
    """The unfactored factor of the precision pattern of ``st``: the torch twin, dense LAPACK or the
    supernodal sparse Cholesky (after a check that its numeric work fits in memory)."""
    N = len(U)
    if backend == "torch":
        from accel.point_process import DenseTorchFactor

        return DenseTorchFactor(st.Q_indptr, st.Q_indices, N, device=device)
    if solver == "dense":
        return _DenseFactor(st.Q_indptr, st.Q_indices, N)
    Qpat = sp.csr_matrix((np.ones(len(st.Q_indices)), st.Q_indices, st.Q_indptr), shape=(N, N))
    base = SparseCholesky(Qpat, coords=U, ordering="nd")
    # the symbolic analysis sized the factor: check the whole fit fits before the first factorisation
    need = fit_memory_bytes(N, st.neighbors.shape[1], base.n_stored / N)
    budget = _memory_budget()
    if need > budget:
        nd = int(is_data.sum())
        raise ValueError(
            f"'n_dummy': {N} quadrature nodes ({nd} distinct points and {N - nd} dummies) need about "
            f"{need / 2**30:.1f} GiB ({need / N / 1024:.1f} KB per node: the sparse factor has "
            f"{base.n_stored / N:.0f} stored entries per node, at most {SPARSE_FACTOR_COPIES} array(s) of that "
            f"size alive at once), more than the {budget / 2**30:.1f} GiB memory budget; lower 'n_dummy' (or thin the "
            "pattern).")
    return base


class _Ascent:
    """The ascent's state: ``m``, the S state ``st8``, the prior factor, ``beta``, ``sigma2``, ``phi``,
    the ELBO, the histories and the controls of the stopping rule."""

    #: the fields an interrupt restores (with the lengths of the histories)
    WHOLE = ("m", "st8", "prior", "beta", "sigma2", "phi", "elbo", "it")

    def __init__(self, m, st8, prior, beta, sigma2, phi, elbo):
        self.m, self.st8, self.prior, self.beta = m, st8, prior, beta
        self.sigma2, self.phi, self.elbo = sigma2, phi, elbo
        self.hist, self.blocks, self.theta_hist = [elbo], [elbo], []
        self.it, self.converged = 0, False
        self.rel, self.rel_prev = np.inf, np.inf
        self.moving = True  # the hyperparameters still move by more than THETA_MOVING_TOL (log scale) per sweep
        self.collapse_tried = np.inf  # the variance at the last rejected boundary trial

    def snapshot(self):
        """The whole state (references; the blocks replace, never mutate, what they return), but for the S
        state's ``S`` on the precision's pattern: it follows from the state's ``s`` (mean field) or the
        recipe of its factor, and is recomputed on a restore (:meth:`VoGCAMSolver.with_pattern`), so the
        sweep after a checkpoint holds one such array, not two."""
        state = {k: getattr(self, k) for k in self.WHOLE}
        state["st8"] = {k: v for k, v in state["st8"].items() if k != "Sq"}
        state.update(n_hist=len(self.hist), n_blocks=len(self.blocks), n_theta=len(self.theta_hist))
        return state

    def restore(self, state):
        """Back to ``state`` (a :meth:`snapshot`): the histories cut to its lengths, not converged."""
        for k in self.WHOLE:
            setattr(self, k, state[k])
        del self.hist[state["n_hist"]:], self.blocks[state["n_blocks"]:], self.theta_hist[state["n_theta"]:]
        self.converged = False

    def accept(self, m, st8, prior, sigma2, phi, elbo):
        """Take a trial state whose ELBO ``elbo`` beat the sweep's."""
        self.m, self.st8, self.prior, self.sigma2, self.phi = m, st8, prior, sigma2, phi
        self.blocks.append(elbo)
        self.theta_hist.append(np.log([sigma2, phi]))


class VoGCAMSolver(VoGCAMBlocks):
    """Coordinate ascent on the ELBO by the blocks of :class:`VoGCAMBlocks` (same parameters).

    Attributes
    ----------
    fp_history : list of list of float
        The S fixed point's step sizes ``max |s_new - s|`` of every S-block of the sweeps.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fp_history = []

    @staticmethod
    def initial_mean(m0, n_nodes):
        """The ascent's starting posterior mean: the constant log intensity ``m0`` at every node."""
        return np.full(n_nodes, m0)

    # ------------------------------------------------------------------ the ascent
    def start(self, sigma2, phi):
        """The starting state: constant mean at the log intensity ``log(n / |W|)``, mean-field S at the
        diagonal of the precision ``Q + diag(w e^m)``."""
        y, w, Z = self.y, self.w, self.Z
        m0 = math.log(max(float(y.sum()), 0.5) / float(w.sum()))
        beta = np.zeros(Z.shape[1])
        beta[0] = m0
        prior = self.prior(sigma2, phi)
        m = self.initial_mean(m0, len(y))
        Qd = prior.Q.data[self.st.diag_index]
        s0 = 1.0 / (Qd + w * np.exp(m))
        st8 = self.diag_state(s0, self.st.diag_index, len(prior.Q.data))
        return _Ascent(m, st8, prior, beta, sigma2, phi, self.elbo(m, st8, prior, beta))

    def run(self, sigma2, phi, *, max_iter, tol, verbose=0, scale=1.0):
        """The sweeps from :meth:`start` until the stopping rule, ``max_iter`` or an interrupt, then the
        final pass (skipped after an interrupt: the fit keeps the state of its last complete sweep).

        Returns
        -------
        ascent : _Ascent
            The final state and histories.
        run : Interruptible
            The interrupt guard (``run.interrupted``; its ``finish`` sets ``interrupted_``).
        """
        a = self.start(sigma2, phi)
        hyper = [h for h in ("variance", "length_scale") if h in self.opt]
        # while the hyperparameters move, the S fixed point runs a few steps per sweep only (each accepted
        # step raises the ELBO, so the ascent stays monotone); the full tolerance applies near convergence
        few = FIXED_POINT_STEPS_WHILE_MOVING if (hyper or "mean" in self.opt) else None
        run = Interruptible("VoGCAM")
        run.checkpoint(**a.snapshot())
        with run:
            for it in range(1, int(max_iter) + 1):
                run.checkpoint(**a.snapshot())
                a.it = it
                if self.step(a, few, bool(hyper), tol, verbose, scale):
                    break
        if run.interrupted:  # back to the start of the interrupted sweep (a whole state)
            a.restore(run.state)
            a.st8 = self.with_pattern(a.st8, a.prior)
        else:
            # the last sweep's start is not needed any more: checkpoint the current state, so the state
            # of that start (its S on the pattern, its prior) is freed before the final pass
            run.checkpoint(**a.snapshot())
            self.final_pass(a)
        return a, run

    def with_pattern(self, st8, prior):
        """``st8`` with its ``S`` on the precision's pattern (``Sq``) recomputed where a snapshot left it
        out: from ``s`` for a mean-field state, else by the selected inverse of its factor rebuilt from
        its recipe (the same kernels; a state scaled along the variance path by ``c^2`` gets ``c^2`` times
        its inner factor's, equal to the ascent's to round-off)."""
        if "Sq" in st8:
            return st8
        if st8["kind"] == "diag":
            Sq = np.zeros(len(prior.Q.data))
            Sq[self.st.diag_index] = st8["s"]
        else:
            fac = self.realise(st8, prior)["fac"]
            _consume(fac)
            Sq = fac.inverse_on_pattern()
        out = dict(st8)
        out["Sq"] = Sq
        return out

    def step(self, a, few, hyper, tol, verbose, scale):
        """Sweep ``a.it``: the blocks, the extrapolation and boundary trials, the stopping rule; returns
        whether the ascent converged."""
        fp = few if (a.rel > FULL_FIXED_POINT_RTOL or (hyper and a.moving)) else None
        # Brent's tolerance: coarse while the ELBO still moves, fine once it is flat (a coarse range
        # step jitters by its tolerance, which alone would keep the hyperparameters "moving"); the
        # first bracket a few times the last change of log phi
        xatol = PHI_XATOL if (fp is None or a.rel < FULL_FIXED_POINT_RTOL) else PHI_XATOL_MOVING
        th = a.theta_hist
        half = (float(np.clip(4.0 * abs(th[-1][1] - th[-2][1]), PHI_BRACKET_MIN, PHI_BRACKET))
                if len(th) >= 2 else PHI_BRACKET)
        self.sweep(a, fp, xatol, half)
        new = a.blocks[-1]
        th.append(np.log([a.sigma2, a.phi]))
        if len(th) >= 2:
            a.moving = bool(np.max(np.abs(th[-1] - th[-2])) > THETA_MOVING_TOL)
        if (hyper and len(th) >= 3 and a.it % AITKEN_EVERY == 0
                and (a.moving or a.rel > FULL_FIXED_POINT_RTOL)):
            new = self.aitken(a, new, few)
        new = self.collapse_trial(a, new, few)
        return self.stopping_rule(a, new, fp, tol, verbose, scale)

    def sweep(self, a, fp, xatol, half):
        """One pass of the blocks over ``a`` (each recorded in ``a.blocks``); ``fp`` caps the inner
        iterations while the hyperparameters move (each inner step raises the ELBO)."""
        opt, record = self.opt, a.blocks.append
        m, st8, prior, beta, sigma2, phi = a.m, a.st8, a.prior, a.beta, a.sigma2, a.phi
        m = self.m_block(m, st8, prior, beta, None, max_iter=None if fp is None else NEWTON_STEPS_WHILE_MOVING)
        record(self.elbo(m, st8, prior, beta))
        st8, _ = self.s_block(m, st8, prior, beta, max_steps=fp)
        a.st8 = st8  # the previous state's S on the pattern is freed (the checkpoint keeps none)
        self.fp_history.append(list(self.fp_steps))
        record(self.elbo(m, st8, prior, beta))
        if "mean" in opt:
            beta = self.beta_block(m, prior)
            record(self.elbo(m, st8, prior, beta))
            m, beta = self.shift_block(m, st8, beta)
            record(self.elbo(m, st8, prior, beta))
        if "variance" in opt:
            sigma2 = self.sigma_block(m, st8, prior, beta, sigma2)
            prior = self.prior(sigma2, phi)
            record(self.elbo(m, st8, prior, beta))
            m, st8, sigma2 = self.scale_block(m, st8, beta, sigma2)
            a.st8 = st8
            prior = self.prior(sigma2, phi)
            record(self.elbo(m, st8, prior, beta))
        if "length_scale" in opt:
            sigma2, phi = self.phi_block(m, st8, beta, sigma2, phi, "variance" in opt, xatol=xatol, half=half)
            prior = self.prior(sigma2, phi)
            record(self.elbo(m, st8, prior, beta))
        a.m, a.st8, a.prior, a.beta, a.sigma2, a.phi = m, st8, prior, beta, sigma2, phi

    def _inner_trial(self, m, st8, sigma2, phi, beta, few):
        """An inner (m, S) update at trial hyperparameters: ``(m, st8, prior, elbo)``."""
        pj = self.prior(sigma2, phi)
        mj = self.m_block(m, st8, pj, beta, None, max_iter=NEWTON_STEPS_WHILE_MOVING)
        sj, _ = self.s_block(mj, st8, pj, beta, max_steps=few)
        return mj, sj, pj, self.elbo(mj, sj, pj, beta)

    def aitken(self, a, new, few):
        """Aitken-type extrapolation of (log sigma^2, log phi) [project addition]: the coordinate ascent on
        the hyperparameters converges linearly (ratios near 0.9 on large patterns); the jump is tried on a
        copy and kept only if the ELBO after an inner (m, S) update beats ``new``. Returns the ELBO."""
        th = a.theta_hist
        d1 = th[-1] - th[-2]
        d0 = th[-2] - th[-3]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(np.abs(d0) > 0, d1 / d0, 0.0)
        ratio = np.clip(ratio, 0.0, 0.95)
        jump = d1 * ratio / (1.0 - ratio)
        if not np.any(np.abs(jump) > 1e-6):
            return new
        jump = np.clip(jump, -1.0, 1.0)
        ls2, lphi = th[-1] + jump
        s2j = max(float(np.exp(ls2)), VARIANCE_FLOOR) if "variance" in self.opt else a.sigma2
        phj = float(np.clip(np.exp(lphi), *self.phi_bounds)) if "length_scale" in self.opt else a.phi
        mj, sj, pj, ej = self._inner_trial(a.m, a.st8, s2j, phj, a.beta, few)
        if ej > new:
            a.accept(mj, sj, pj, s2j, phj, ej)
            return ej
        return new

    def collapse_trial(self, a, new, few):
        """A collapsing variance (log sigma^2 falling two sweeps in a row below ``VARIANCE_COLLAPSE_TRY``)
        tried at the boundary [project addition]: the state scaled non-centred to sigma^2 =
        ``VARIANCE_FLOOR``, then an inner (m, S) update; kept only if the ELBO beats ``new`` (else retried
        once the variance has halved). Returns the ELBO."""
        th, sigma2 = a.theta_hist, a.sigma2
        if not ("variance" in self.opt and len(th) >= 3 and VARIANCE_FLOOR < sigma2 < VARIANCE_COLLAPSE_TRY
                and sigma2 < 0.5 * a.collapse_tried and th[-1][0] < th[-2][0] < th[-3][0]):
            return new
        mc, sc = self.scaled_state(a.m, a.st8, a.beta, math.sqrt(VARIANCE_FLOOR / sigma2))
        mj, sj, pj, ej = self._inner_trial(mc, sc, VARIANCE_FLOOR, a.phi, a.beta, few)
        if ej > new:
            a.accept(mj, sj, pj, VARIANCE_FLOOR, a.phi, ej)
            return ej
        a.collapse_tried = sigma2
        return new

    def stopping_rule(self, a, new, fp, tol, verbose, scale):
        """Record the sweep's ELBO ``new``; converged: the ELBO is flat to ``tol``, after a sweep whose S
        fixed point ran to full tolerance or for two sweeps in a row (the hyperparameters may still creep
        along a flat ridge; the final pass brings (m, S, beta) to full tolerance either way)."""
        a.hist.append(new)
        a.rel_prev, a.rel = a.rel, abs(new - a.elbo) / (1.0 + abs(new))
        rel, rel_prev = a.rel, a.rel_prev
        if verbose:
            print(f"[VoGCAM] sweep {a.it}: ELBO {new:.10g}, sigma2 {a.sigma2:.6g}, phi {a.phi * scale:.6g}, "
                  f"relative change {rel:.2g}, hyperparameters moving: {a.moving}")
        a.elbo = new
        a.converged = bool(rel < tol and a.it > 1 and (fp is None or rel_prev < tol))
        return a.converged

    def final_pass(self, a):
        """At the last hyperparameters: m, S (to full tolerance) and beta, so the returned state is
        stationary in (m, S, beta) (e.g. the expected count equals n); each block raises the ELBO."""
        m, st8, prior, beta, record = a.m, a.st8, a.prior, a.beta, a.blocks.append
        m = self.m_block(m, st8, prior, beta, None)
        record(self.elbo(m, st8, prior, beta))
        st8, _ = self.s_block(m, st8, prior, beta)
        a.st8 = st8
        record(self.elbo(m, st8, prior, beta))
        if "mean" in self.opt:
            beta = self.beta_block(m, prior)
            record(self.elbo(m, st8, prior, beta))
            m = self.m_block(m, st8, prior, beta, None)
            record(self.elbo(m, st8, prior, beta))
            m, beta = self.shift_block(m, st8, beta)
            record(self.elbo(m, st8, prior, beta))
        a.m, a.st8, a.beta = m, st8, beta
        a.elbo = a.blocks[-1]
        a.hist.append(a.elbo)

    # ------------------------------------------------------------------ Laplace evidence
    def laplace_mode(self, prior, f, beta, max_iter=50):
        """Mode of ``y'f - sum w e^f - (f - Z beta)'Q(f - Z beta)/2`` over (f, beta) by Newton in f with
        the GLS beta, on the solver's factor; returns (f, beta, log Laplace evidence)."""
        y, w, Z = self.y, self.w, self.Z

        def psi(ff, bb):
            r = ff - Z @ bb
            return float(y @ ff - np.sum(w * np.exp(ff)) - 0.5 * r @ (prior.Q @ r))

        cur = psi(f, beta)
        for _ in range(max_iter):
            lam = w * np.exp(f)
            g = y - lam - prior.Q @ (f - Z @ beta)
            d = self.factor(prior, lam).solve(g)  # the factor is freed here (one alive, not two)
            dn = float(np.max(np.abs(d)))
            if dn > MAX_NEWTON_STEP:
                d *= MAX_NEWTON_STEP / dn
            tau = 1.0
            for _h in range(MAX_HALVINGS):
                fn = f + tau * d
                bn = self.beta_block(fn, prior) if "mean" in self.opt else beta
                new = psi(fn, bn)
                if np.isfinite(new) and new >= cur - ROUNDOFF_RTOL * (1.0 + abs(cur)):
                    break
                tau *= 0.5
            else:
                break
            f, beta, gain, cur = fn, bn, new - cur, new
            if abs(gain) < 1e-10 * (1.0 + abs(cur)) and dn * tau < 1e-8:
                break
        fac = self.factor(prior, w * np.exp(f))
        # log N(f; Z beta, Q^-1) + (N/2) log 2 pi - (1/2) log|Q + W| with log|Q| = -log|K|
        return f, beta, cur - 0.5 * prior.logdet - 0.5 * fac.logdet()

    def laplace_hyperparameters(self, sigma2, phi):
        """(sigma^2, phi) maximising the Laplace approximation of the evidence (beta profiled out), by
        Nelder-Mead in (log sigma^2, log phi) from the given start [project addition]; returns
        ``(sigma2, phi, log evidence)``."""
        from scipy.optimize import minimize

        y, w, Z = self.y, self.w, self.Z
        n = float(y.sum())
        beta = np.zeros(Z.shape[1])
        beta[0] = math.log(max(n, 0.5) / float(w.sum()))
        state = {"f": np.full(len(y), beta[0]), "beta": beta}
        lo_b, hi_b = self.phi_bounds
        opt_v, opt_p = "variance" in self.opt, "length_scale" in self.opt
        lo = np.log([VARIANCE_FLOOR, lo_b])
        hi = np.log([50.0, hi_b])

        def neg(t):
            t = np.clip(t, lo, hi)
            s2 = float(np.exp(t[0])) if opt_v else sigma2
            ph = float(np.exp(t[1])) if opt_p else phi
            f, b, lev = self.laplace_mode(self.prior(s2, ph), state["f"], state["beta"])
            if np.isfinite(lev):
                state["f"], state["beta"] = f, b
            return -lev if np.isfinite(lev) else np.inf

        t0 = np.log([max(sigma2, 1e-3), float(np.clip(phi, lo_b, hi_b))])
        res = minimize(neg, t0, method="Nelder-Mead", options=dict(xatol=1e-3, fatol=1e-6, maxfev=200))
        t = np.clip(res.x, lo, hi)
        return (float(np.exp(t[0])) if opt_v else sigma2), (float(np.exp(t[1])) if opt_p else phi), float(-res.fun)
