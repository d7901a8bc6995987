r"""Personalised-FL baselines with a personal model beside the federated one: APFL, Ditto, pFedMe
(see :mod:`algos.federated.baselines`)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ..._validation import OrderedStrOptions
from .._model import _train_clients, local_train, loss_grad
from ._base import _round_constraints, _RoundBaseline


class APFLClassifier(_RoundBaseline):
    r"""APFL (Deng, Kamani, Mahdavi 2020): per local step :math:`w \leftarrow w - \eta\nabla L_i(w)`,
    :math:`v_i \leftarrow v_i - \eta\alpha_i\nabla L_i(\bar v_i)`, :math:`\alpha_i \leftarrow
    \mathrm{clip}(\alpha_i - \eta_\alpha\langle v_i - w, \nabla L_i(\bar v_i)\rangle, 0, 1)` with
    :math:`\bar v_i = \alpha_i v_i + (1-\alpha_i)w`; the server averages :math:`w`; deployed:
    :math:`\alpha_i v_i + (1-\alpha_i)\theta^R`.

    Attributes: ``alphas_`` (dict client -> alpha).

    Parameters
    ----------
    alpha0 : float, default=0.5
        Initial mixing weight :math:`\alpha_i` of every client, in [0, 1].
    lr_alpha : float, default=0.1
        Step size :math:`\eta_\alpha` of the mixing weights, positive.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(alpha0=[Interval(Real, 0, 1, closed="both")],
                                                      lr_alpha=[Interval(Real, 0, None, closed="left")])

    def __init__(self, *, alpha0=0.5, lr_alpha=0.1, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.alpha0 = alpha0
        self.lr_alpha = lr_alpha
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         client_fraction=client_fraction, random_state=random_state, warm_start=warm_start)

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        a0 = float(self.alpha0)
        la = float(self.lr_alpha)
        keys = self._trainable(theta0)
        v = [dict(theta0) for _ in Xs]
        alpha = np.full(len(Xs), a0)
        lr, l2 = h["lr"], h["l2"]

        def update(t, theta, sel):
            out = []
            for i in sel:
                w = {k: a.copy() for k, a in theta.items()}
                for _ in range(h["local_epochs"]):
                    _, gw = loss_grad(w, Xs[i], ys[i], n_classes=C, l2=l2, trainable=keys)
                    vbar = {k: alpha[i] * v[i][k] + (1 - alpha[i]) * w[k] for k in w}
                    _, gv = loss_grad(vbar, Xs[i], ys[i], n_classes=C, l2=l2, trainable=keys)
                    inner = sum(float(np.sum((v[i][k] - w[k]) * gv[k])) for k in keys)
                    v[i] = {k: (v[i][k] - lr * alpha[i] * gv[k] if k in keys else v[i][k]) for k in w}
                    alpha[i] = float(np.clip(alpha[i] - la * inner, 0.0, 1.0))
                    w = {k: (w[k] - lr * gw[k] if k in keys else w[k]) for k in w}
                out.append(w)
            return out

        self._rounds(h, Xs, ys, theta0, rng, local_update=update, client_state=(v, alpha))
        self.alphas_ = {}
        for m in range(len(Xs)):
            cid = self._cid(m)
            self.alphas_[cid] = float(alpha[m])
            self.personalized_models_[cid] = {k: alpha[m] * v[m][k] + (1 - alpha[m]) * self.federated_model_[k]
                                              for k in theta0}


class DittoClassifier(_RoundBaseline):
    r"""Ditto (Li, Hu, Beirami, Smith 2021): FedAvg for :math:`\theta`; each sampled client also runs
    ``personal_epochs`` steps of :math:`v_i \leftarrow v_i - \eta(\nabla L_i(v_i) + \mu(v_i - \theta^t))`;
    deploys :math:`v_i`.

    Parameters
    ----------
    mu : float, default=0.1
        Proximal weight :math:`\mu`, at least 0.
    personal_epochs : int or None, default=None
        Epochs of the personal update per round (``None``: ``local_epochs``).
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(
        mu=[Interval(Real, 0, None, closed="left")],
        personal_epochs=[Interval(Integral, 1, None, closed="left"), None])

    def __init__(self, *, mu=0.1, personal_epochs=None, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.mu = mu
        self.personal_epochs = personal_epochs
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         client_fraction=client_fraction, random_state=random_state, warm_start=warm_start)

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        mu = float(self.mu)
        pe = (h["local_epochs"] if self.personal_epochs is None
              else int(self.personal_epochs))
        keys = self._trainable(theta0)
        v = [theta0] * len(Xs)

        def hook(t, theta_prev, new, sel):
            center = {k: theta_prev[k] for k in keys}
            starts = [v[i] for i in sel]
            upd = _train_clients(starts, [Xs[i] for i in sel], [ys[i] for i in sel], n_classes=C, epochs=pe,
                                 lr=h["lr"], l2=h["l2"], centers=[center] * len(sel), mu=mu, trainable=keys)
            for j, i in enumerate(sel):
                v[i] = upd[j]
            return new

        self._rounds(h, Xs, ys, theta0, rng, client_hook=hook, client_state=(v,))
        self._deploy(lambda m: v[m], len(Xs))


class PFedMeClassifier(_RoundBaseline):
    r"""pFedMe (T. Dinh, Tran, Nguyen 2020): each local step approximately solves
    :math:`\tilde\theta_i = \arg\min_v L_i(v) + \frac{\lambda}2\|v - w_i\|^2` by ``K`` GD steps
    (step ``personal_lr``, default :math:`\eta/(1 + \eta\lambda)` for stability), then
    :math:`w_i \leftarrow w_i - \eta'\lambda(w_i - \tilde\theta_i)`; the server sets
    :math:`w \leftarrow (1-\beta)w + \beta\,\bar w` with :math:`\bar w` the mean of the sampled
    clients' :math:`w_i`; deployed: :math:`\tilde\theta_i` computed from :math:`w^R`.

    Two points where an implementation has to choose, both as in the paper by default:

    * ``aggregation="uniform"``: :math:`\bar w = \frac1{|S|}\sum_{i\in S} w_i` (the paper's
      Algorithm 1); ``"samples"`` weights by the clients' sample counts :math:`n_i` like FedAvg.
    * The outer step is :math:`\eta' = \min(\eta, 1/\lambda)`, :math:`\eta` the base estimator's
      ``lr``. The paper uses :math:`\eta' = \eta`; the two coincide whenever :math:`\eta\lambda \le 1`
      (the defaults: ``lr = 0.5``, ``lam = 1``). The cap only acts when :math:`\eta\lambda > 1`, where
      the paper's step overshoots :math:`\tilde\theta_i` (the move :math:`w_i \to \tilde\theta_i` is
      at most the whole way).

    Parameters
    ----------
    lam : float > 0, default=1.0
        Moreau-envelope regularisation :math:`\lambda`.
    beta : float in (0, 1], default=1.0
        Server mixing :math:`\beta` (1: plain averaging).
    K : int >= 1, default=5
        Inner GD steps per local step.
    personal_lr : float > 0 or None, default=None
    aggregation : {"uniform", "samples"}, default="uniform"
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(
        K=[Interval(Integral, 1, None, closed="left")],
        aggregation=[OrderedStrOptions(("uniform", "samples"))],
        beta=[Interval(Real, 0, 1, closed="right")],
        lam=[Interval(Real, 0, None, closed="neither")],
        personal_lr=[Interval(Real, 0, None, closed="neither"), None])

    def __init__(self, *, lam=1.0, beta=1.0, K=5, personal_lr=None, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, aggregation="uniform", random_state=None, warm_start=False):
        self.lam = lam
        self.beta = beta
        self.K = K
        self.personal_lr = personal_lr
        self.aggregation = aggregation
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         client_fraction=client_fraction, random_state=random_state, warm_start=warm_start)

    def _steps(self, h):
        """The checked ``lam``, ``beta``, ``K``, ``aggregation``, the personal step and the outer step."""
        lam = float(self.lam)
        beta = float(self.beta)
        K = int(self.K)
        aggregation = self.aggregation
        lr = h["lr"]
        plr = lr / (1 + lr * lam) if self.personal_lr is None else float(self.personal_lr)
        eta = min(lr, 1.0 / lam)  # outer step: w moves at most all the way to theta_tilde (see the docstring)
        return lam, beta, K, aggregation, plr, eta

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        lam, beta, K, aggregation, plr, eta = self._steps(h)
        keys = self._trainable(theta0)
        n = np.array([len(v) for v in ys], dtype=np.float64)

        def inner(w, i):
            return local_train(w, Xs[i], ys[i], n_classes=C, epochs=K, lr=plr, l2=h["l2"],
                               prox_center={k: w[k] for k in keys}, mu=lam, trainable=keys)

        def update(t, theta, sel):
            out = []
            for i in sel:
                w = theta
                for _ in range(h["local_epochs"]):
                    tt = inner(w, i)
                    w = {k: (w[k] - eta * lam * (w[k] - tt[k]) if k in keys else w[k]) for k in w}
                out.append(w)
            return out

        def uniform(t, theta_prev, new, sel):
            # the server's mean is weighted by n_i; rescaling each client's move by N / (|S| n_i) makes
            # that weighted mean the uniform mean of the clients' models (exact, linear in the moves)
            scale = n[sel].sum() / (len(sel) * n[sel])
            return [{k: (theta_prev[k] + c * (p[k] - theta_prev[k]) if k in keys else p[k]) for k in p}
                    for c, p in zip(scale, new)]

        hook = uniform if aggregation == "uniform" else None
        federated = self._rounds(h, Xs, ys, theta0, rng, local_update=update, client_hook=hook, server_mix=beta)
        self._deploy(lambda m: inner(federated, m), len(Xs))
