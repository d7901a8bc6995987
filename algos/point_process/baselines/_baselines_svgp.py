"""Sparse variational GP Cox process on gpytorch (:class:`SVGPCoxProcess`, see :mod:`.baselines`)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, Options

from .._window import Window
from ._baselines_common import _check_points, _design, _Grid, _grid_shape, _LGCPMixin, _region_mask


class SVGPCoxProcess(_LGCPMixin, BaseEstimator):
    r"""Sparse variational GP Cox process (gpytorch; point_process reconstruction notes, section 3, item 4).

    ``f(s) = x(s)^T beta + g(s)``, ``g ~ GP(0, ScaleKernel(Matern(nu)))`` with a
    ``CholeskyVariationalDistribution`` on ``n_inducing`` inducing points on a fixed regular grid
    (``VariationalStrategy``, whitened). The ELBO::

        sum_i E_q f(x_i) - sum_j w_j exp(E_q f(u_j) + Var_q f(u_j) / 2) - KL(q(u) || p(u))

    with regular-grid quadrature ``(u_j, w_j)``, maximised by Adam over the variational
    parameters, ``beta`` and the kernel hyperparameters. Coordinates are rescaled to the unit box
    internally (reported back in the user's units). float64 throughout; CPU unless ``device=``.

    Parameters
    ----------
    window : tuple or (V, 2) array
    nu : {0.5, 1.5}, default=0.5
    n_inducing : int, default=256 (a sqrt(n) x sqrt(n) grid, rounded)
    quad_grid : int or (nx, ny), default=64
    max_iter : int, default=500
    lr : float, default=0.05
    tol : float, default=1e-7
        Stop when the ELBO, averaged over the last 20 iterations, changes by less than
        ``tol * (1 + |ELBO|)`` per iteration.
    random_state : None or int (torch seed for the parameter initialisation)
    device : str, default="cpu"

    Attributes
    ----------
    coef_, variance_, length_scale_, elbo_, elbo_history_, n_iter_, converged_
    """

    _parameter_constraints: dict = {
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_inducing": [Interval(Integral, 4, None, closed="left")],
        "nu": [Options(Real, {0.5, 1.5})],
        "quad_grid": [Interval(Integral, 2, None, closed="left"), tuple, list],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],  # a torch seed
        "tol": [Interval(Real, 0, None, closed="left")],
        "window": [tuple, list, np.ndarray, Window],  # required; its bounds or vertices: checked by Window.from_any
    }

    def __init__(self, *, window=None, nu=0.5, n_inducing=256, quad_grid=64, max_iter=500, lr=0.05, tol=1e-7,
                 random_state=None, device="cpu"):
        self.window = window
        self.nu = nu
        self.n_inducing = n_inducing
        self.quad_grid = quad_grid
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.random_state = random_state
        self.device = device

    def _fit(self, X, covariates):
        win = Window.from_any(self.window)
        X = _check_points(X, win)
        nu, n_ind = float(self.nu), int(self.n_inducing)
        nx, ny = _grid_shape(self.quad_grid, "quad_grid")
        max_iter, lr, tol = int(self.max_iter), float(self.lr), float(self.tol)
        try:
            import gpytorch  # noqa: F401  (the model and the optimisation import it again)
            import torch
        except ImportError as exc:  # pragma: no cover - the gpu extra is installed in CI
            raise ImportError("SVGPCoxProcess needs torch and gpytorch: pip install 'algos-theory[gpu]'.") from exc
        if self.random_state is not None:
            torch.manual_seed(int(self.random_state))  # an int >= 0 (a torch seed): _parameter_constraints
        device = torch.device(self.device)
        dt = torch.float64

        xmin, xmax, ymin, ymax = win.bounds
        shift = np.array([xmin, ymin])
        scale = max(xmax - xmin, ymax - ymin)
        grid = _Grid(win, nx, ny)
        keep = grid.frac > 0
        qc = grid.centres[keep]
        wq = grid.cell_area * grid.frac[keep] / scale ** 2
        Zq = _design(covariates, qc)
        Zp = _design(covariates, X)
        inducing = torch.as_tensor(_unit_box_grid(n_ind, (xmax - xmin) / scale, (ymax - ymin) / scale),
                                   dtype=dt, device=device)
        model = _svgp_model(inducing, nu).to(device=device, dtype=dt)
        model.covar_module.base_kernel.lengthscale = 0.1
        model.covar_module.outputscale = 1.0
        beta0 = np.zeros(Zq.shape[1])
        beta0[0] = math.log(X.shape[0] / wq.sum())
        beta = torch.nn.Parameter(torch.as_tensor(beta0, dtype=dt, device=device))
        data = [torch.as_tensor(v, dtype=dt, device=device)
                for v in ((X - shift) / scale, (qc - shift) / scale, Zp, Zq, wq)]
        history, it, converged = _maximise_elbo(model, beta, *data, max_iter=max_iter, lr=lr, tol=tol)
        self._model = model  # no module object on the estimator: it must stay picklable/copyable
        self._shift, self._scale = shift, scale
        self._covariates = covariates
        self._quad = (qc, wq * scale ** 2)
        self._dtype, self._device = dt, device
        self.window_ = win
        self.coef_ = beta.detach().cpu().numpy().copy()
        self.coef_[0] -= 2 * math.log(scale)  # the Jacobian: intensity per unit area of the user's units
        self.variance_ = float(model.covar_module.outputscale.detach())
        self.length_scale_ = float(model.covar_module.base_kernel.lengthscale.detach()) * scale
        self.elbo_ = history[-1]
        self.elbo_history_ = np.asarray(history)
        self.n_iter_ = it
        self.converged_ = converged
        return self

    def _log_intensity_at(self, Xq, return_std):
        """Variational mean (and sd), in the user's units."""
        import gpytorch
        import torch

        t = torch.as_tensor((Xq - self._shift) / self._scale, dtype=self._dtype, device=self._device)
        with torch.no_grad(), gpytorch.settings.cholesky_jitter(double_value=1e-8):
            out = self._model(t)
            m = out.mean.cpu().numpy()
            v = out.variance.cpu().numpy()
        mu = m + _design(self._covariates, Xq) @ self.coef_
        if return_std:
            return mu, np.sqrt(np.maximum(v, 0.0))
        return mu

    def _expected_count(self, region):
        qc, wq = self._quad
        mask = _region_mask(region, qc)
        if not mask.any():
            return 0.0
        return float(wq[mask] @ self.predict_intensity(qc[mask]))


def _unit_box_grid(n_ind, W, H):
    """About ``n_ind`` inducing points on a regular grid of the ``W x H`` box (at least 2 per side)."""
    k = max(2, int(round(math.sqrt(n_ind))))
    kx = max(2, int(round(k * W / max(W, H))))
    ky = max(2, int(round(k * H / max(W, H))))
    gx, gy = np.meshgrid((np.arange(kx) + 0.5) / kx * W, (np.arange(ky) + 0.5) / ky * H)
    return np.column_stack([gx.ravel(), gy.ravel()])


def _svgp_model(inducing, nu):
    """gpytorch's whitened SVGP with fixed ``inducing`` points and a scaled Matérn(``nu``) kernel."""
    import gpytorch

    class _GP(gpytorch.models.ApproximateGP):
        def __init__(self):
            vd = gpytorch.variational.CholeskyVariationalDistribution(inducing.shape[0])
            vs = gpytorch.variational.VariationalStrategy(self, inducing, vd, learn_inducing_locations=False)
            super().__init__(vs)
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=nu))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    return _GP()


def _maximise_elbo(model, beta, tp, tq, tZp, tZq, tw, *, max_iter, lr, tol):
    """Adam on the Cox-process ELBO (points ``tp``, quadrature ``(tq, tw)``, designs ``tZp``, ``tZq``) until
    the 20-iteration mean ELBO settles; returns the ELBO history, the iterations and whether it settled."""
    import gpytorch
    import torch
    from gpytorch.utils.errors import NanError, NotPSDError

    n_p = tp.shape[0]
    opt = torch.optim.Adam(list(model.parameters()) + [beta], lr=lr)
    history = []
    converged = False
    model.train()
    it = 0

    def diverged(it, what):
        return ValueError(f"the SVGP optimisation diverged at iteration {it} ({what}) with 'lr' = {lr!r}; use a "
                          f"smaller learning rate.")

    with gpytorch.settings.cholesky_jitter(double_value=1e-8):
        for it in range(1, max_iter + 1):
            opt.zero_grad()
            try:
                both = model(torch.cat([tp, tq], 0))
                m, v = both.mean, both.variance
                fp = m[:n_p] + tZp @ beta
                fq = m[n_p:] + tZq @ beta
                elbo = fp.sum() - (tw * torch.exp(torch.clamp(fq + 0.5 * v[n_p:], max=700.0))).sum() \
                    - model.variational_strategy.kl_divergence()
            except (NanError, NotPSDError) as exc:
                raise diverged(it, type(exc).__name__) from None
            if not math.isfinite(float(elbo.detach())):
                raise diverged(it, "a non-finite ELBO")
            (-elbo).backward()
            opt.step()
            history.append(float(elbo.detach()))
            if it > 40:
                recent = np.mean(history[-20:])
                before = np.mean(history[-40:-20])
                if abs(recent - before) / 20 < tol * (1 + abs(recent)):
                    converged = True
                    break
    model.eval()
    return history, it, converged
