r"""``StreamingLDA``: streaming linear discriminant analysis with a growing class list.

The head of CIRCLE (and of Deep SLDA, Hayes & Kanan 2020): one running mean per class, one shared
covariance, a Gaussian (equal-prior) posterior with a tempered softmax.
"""

from __future__ import annotations

import copy
import warnings
from numbers import Real

import numpy as np
import scipy.linalg
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from accel.backend import RESOLVE_OPTIONS, resolve

from .._validation import OrderedStrOptions, validate_params
from ._checks import (
    FLOAT_DTYPE,
    LabelScoreMixin,
    LogProbaMixin,
    StreamFitMixin,
    as_float_dtype,
    check_labels,
    check_numeric,
)
from ._merge import check_merge_params
from ._slda_kernels import RULE_HAYES, delta_pass

__all__ = ["StreamingLDA"]

#: Above this many features a float64 state triggers a ResourceWarning (continual reconstruction notes, section 7: 2 GiB
#: at 16384).
LARGE_D = 8192


def _syrk_update(S, Z):
    """``tril(S) += tril(Z^T Z)`` in place by BLAS ``syrk`` (half the flops of the GEMM ``Z.T @ Z``).

    ``S`` is C-contiguous; its transpose is the same memory in Fortran order, whose upper triangle
    ``syrk`` updates in place -- the lower triangle of ``S``. Only that triangle is kept current; read
    the full matrix with :func:`_symmetric_from_lower`."""
    if Z.shape[0] == 0:
        return
    Z = np.ascontiguousarray(Z, dtype=S.dtype)
    syrk = scipy.linalg.get_blas_funcs("syrk", (S, Z))
    out = syrk(1.0, Z, beta=1.0, c=S.T, trans=1, lower=0, overwrite_c=1)
    if not np.shares_memory(out, S):  # pragma: no cover - BLAS worked on a copy
        S.T[...] = out


def _symmetric_from_lower(S):
    """The symmetric matrix whose lower triangle is that of ``S``."""
    return np.tril(S) + np.tril(S, -1).T


class _Cache:
    """Holder of the cached precision solve (mutated by prediction without changing ``__dict__``)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = None

    def __deepcopy__(self, memo):
        return _Cache()


def _log_softmax(scores, seen):
    """Row-wise log-softmax over the ``seen`` columns; ``-inf`` in the others."""
    out = np.full(scores.shape, -np.inf, dtype=scores.dtype)
    z = scores[:, seen]
    out[:, seen] = z - logsumexp(z, axis=1, keepdims=True)
    return out


class StreamingLDA(StreamFitMixin, LogProbaMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""Streaming LDA: running class means, one shared covariance, softmax over the seen classes.

    The state after any stream is the class means :math:`\mu_k`, the counts :math:`c_k`, the total
    count :math:`n` and a shared covariance :math:`\Sigma`. Prediction uses the shrunk precision
    :math:`\Lambda = [(1-\varepsilon)\Sigma + \varepsilon I]^{-1}` (a Cholesky solve, cached until
    the next update), the weights :math:`W = \Lambda M` and the scores

    .. math:: s_k(x) = x^\top \Lambda \mu_k - \tfrac12 \mu_k^\top \Lambda \mu_k,

    which differ from :math:`\log \mathcal N(x;\mu_k,\Sigma_\varepsilon)` by a term that does not
    depend on :math:`k`. ``predict_proba`` is :math:`\operatorname{softmax}(s/\tau)` over the classes
    seen so far: with :math:`\tau = 1` the Gaussian posterior under equal class priors.

    Parameters
    ----------
    shrinkage : float in [0, 1], default=1e-4
        :math:`\varepsilon`. Any :math:`\varepsilon > 0` makes every eigenvalue of the shrunk matrix
        at least :math:`\varepsilon` (:func:`theory.continual.shrinkage_eigenvalue_floor`), so the
        solve never fails, even with fewer samples than features. ``0`` is allowed and gives plain
        LDA (the exact correspondence with scikit-learn below); prediction then raises
        ``ValueError`` if :math:`\Sigma` is singular. Ignored when ``covariance="identity"``.
    covariance : {"exact", "hayes", "identity", "fixed"}, default="exact"
        How :math:`\Sigma` is learned.

        * ``"exact"`` [R]: the pooled within-class covariance
          :math:`\frac1n\sum_k\sum_{i\in k}(x_i-\mu_k)(x_i-\mu_k)^\top` of everything seen, updated
          exactly by Chan/Welford merging of each batch. It does not depend on the order of the
          samples, on the batch sizes, or on how the stream is cut into tasks.
        * ``"hayes"`` [C]: the Deep SLDA reference rule
          :math:`\Sigma \leftarrow (n\Sigma + \tfrac{n}{n+1}\delta\delta^\top)/(n+1)` with
          :math:`\delta = x - \mu_y` (old mean; 0 for a new class). Results depend on the order:
          the first sample of every class adds :math:`xx^\top`. Kept for parity with the reference.
        * ``"identity"``: :math:`\Sigma = I`, the nearest-class-mean classifier (NCM).
        * ``"fixed"``: :math:`\Sigma` is estimated once and then frozen: by :meth:`fit_base` (OAS),
          or else from the first non-empty batch (pooled within-class covariance of that batch).
    temperature : float > 0, default=1.0
        :math:`\tau` of the softmax.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of the state and of the computations.
    backend : {"auto", "numpy", "torch", "numba"}, default="numpy"
        Core of the batch updates and of the prediction solve (:func:`accel.backend.resolve`).
        ``"numpy"`` (``"numba"`` is the same): numpy, BLAS and a numba pass. ``"torch"``: the torch core
        :class:`accel.continual.TorchStreamingLDA` on ``device`` (the vectorised sample-equivalent update,
        one GEMM per batch, a torch Cholesky for prediction); the fitted state stays numpy arrays, so
        ``merge``, pickling and every attribute are those of the numpy backend, equal to round-off.
        ``"auto"``: torch when ``X`` is a torch tensor or ``device`` names an accelerator. Needs PyTorch
        (a clean ``ImportError`` otherwise).
    device : None, str or torch.device, default=None
        Torch device of the torch backend (``None``: CUDA when available, else CPU).

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
        Every class registered so far (seen in ``y`` or announced with ``classes``), sorted.
    means_ : ndarray of shape (K, n_features)
        Class means (0 for a class announced but not seen yet).
    counts_ : ndarray of int64, shape (K,)
        Samples seen per class; a class with count 0 is never predicted.
    covariance_ : ndarray of shape (n_features, n_features)
        The shared covariance :math:`\Sigma` (before shrinkage).
    n_samples_seen_ : int
        Total number of samples seen.
    n_features_in_ : int
    backend_ : {"numpy", "torch"}
        The core that ran the last update (``backend`` resolved).

    Notes
    -----
    **Batched, sample-equivalent updates.** ``"exact"``: per batch and class, the batch mean
    :math:`m_b` and the centred scatter are merged with the running state,
    :math:`S \mathrel{+}= S_b + \tfrac{c\,n_b}{c+n_b}(\mu-m_b)(\mu-m_b)^\top` (Chan et al. 1979),
    done as one GEMM over the centred batch stacked with the :math:`K_b` correction rows.
    ``"hayes"``: a sequential numba pass computes :math:`\delta_i` and the weights :math:`w_i`
    (:math:`O(Bd)`), then one GEMM adds :math:`D^\top\operatorname{diag}(w)D`. Both equal the
    per-sample loop. Cost per batch :math:`O(Bd^2)`; prediction recomputes the :math:`O(d^3/3)`
    Cholesky factor only after an update.

    **Correspondence with scikit-learn.** With ``shrinkage=0`` and ``covariance="exact"``,
    ``LinearDiscriminantAnalysis(solver="lsqr")`` with its default priors (the class frequencies
    :math:`\pi_k = c_k/n`) uses the covariance :math:`\sum_k \pi_k \hat\Sigma_k = \Sigma`, so
    ``coef_[k]`` equals :math:`\Lambda\mu_k` and ``intercept_[k]`` equals
    :math:`-\tfrac12\mu_k^\top\Lambda\mu_k + \log\pi_k` (three classes or more; scikit-learn
    collapses the binary case to one row). Our scores use equal priors: add :math:`\log\pi_k` to
    get scikit-learn's decision function.

    **Labels.** ``partial_fit`` accepts unseen labels at any time (the class list grows; no
    ``classes`` needed on the first call). ``predict``/``predict_proba`` range over the classes with
    a positive count; a registered but unseen class gets probability 0 and score ``-inf``. With a
    single seen class every prediction is that class with probability 1. An empty batch is a no-op.

    References
    ----------
    T. L. Hayes and C. Kanan, "Lifelong machine learning with deep streaming linear discriminant
    analysis", CVPR Workshops 2020 (reference code ``tyler-hayes/Deep_SLDA``).
    T. F. Chan, G. H. Golub and R. J. LeVeque, "Updating formulae and a pairwise algorithm for
    computing sample variances", 1979.

    Examples
    --------
    >>> import numpy as np
    >>> from algos.continual import StreamingLDA
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (50, 3)), rng.normal(3, 1, (50, 3))]
    >>> y = np.r_[np.zeros(50, int), np.ones(50, int)]
    >>> clf = StreamingLDA().partial_fit(X[:50], y[:50]).partial_fit(X[50:], y[50:])
    >>> clf.classes_.tolist(), clf.n_samples_seen_
    ([0, 1], 100)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "covariance": [OrderedStrOptions(("exact", "hayes", "identity", "fixed"))],
        "backend": [OrderedStrOptions(RESOLVE_OPTIONS)],
        # None, a str or a torch.device: the type torch.device cannot be named without importing torch
        "device": "no_validation",
        "dtype": FLOAT_DTYPE,
        "shrinkage": [Interval(Real, 0, 1, closed="both")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, shrinkage=1e-4, covariance="exact", temperature=1.0, dtype=np.float64, backend="numpy",
                 device=None):
        self.shrinkage = shrinkage
        self.covariance = covariance
        self.temperature = temperature
        self.dtype = dtype
        self.backend = backend
        self.device = device

    # ------------------------------------------------------------------ state
    def _reset(self, d, dtype):
        if d > LARGE_D and dtype is np.float64:
            warnings.warn(
                f"a {d} x {d} float64 covariance takes {d * d * 8 / 2**30:.1f} GiB (x2 with its Cholesky factor); "
                "consider dtype=numpy.float32, fewer features or more heads.",
                ResourceWarning,
                stacklevel=3,
            )
        self.classes_ = np.zeros(0)
        self.means_ = np.zeros((0, d), dtype=dtype)
        self.counts_ = np.zeros(0, dtype=np.int64)
        self.n_samples_seen_ = 0
        self._scatter = np.zeros((d, d), dtype=dtype)  # only its lower triangle is kept current
        self._fixed_cov = None
        self._from_base = False
        self._cache = _Cache()

    def _register(self, labels):
        """Add ``labels`` to the sorted class list, moving the state rows along."""
        labels = np.unique(np.asarray(labels))
        if labels.size == 0:
            return
        if self.classes_.size == 0:
            new = labels
        else:
            try:
                new = np.union1d(self.classes_, labels)
            except TypeError:
                raise ValueError(
                    f"labels must all be of one comparable type; got {labels.dtype} after {self.classes_.dtype}."
                ) from None
        if new.size == self.classes_.size:
            return
        pos = np.searchsorted(new, self.classes_)
        means = np.zeros((new.size, self.means_.shape[1]), dtype=self.means_.dtype)
        counts = np.zeros(new.size, dtype=np.int64)
        means[pos] = self.means_
        counts[pos] = self.counts_
        self.classes_, self.means_, self.counts_ = new, means, counts
        self._cache.value = None

    # ------------------------------------------------------------------ fitting
    _fit_resets = ("classes_", "n_features_in_")

    def _validate_xy(self, X, y, first, allow_empty):
        mode, dtype = self.covariance, as_float_dtype(self.dtype)  # checked by _parameter_constraints
        self.backend_ = resolve(self.backend, self.device, (X,))
        check_numeric(X, "X")
        check_labels(y, "y")
        X, y = validate_data(self, X, y, reset=first, dtype=[np.float64, np.float32],
                             ensure_min_samples=0 if allow_empty else 1)
        if len(y):
            check_classification_targets(y)
        if first:
            self._reset(X.shape[1], dtype)
        elif self.means_.dtype != dtype:
            raise ValueError(
                f"'dtype' changed from {self.means_.dtype} to {np.dtype(dtype)} between partial_fit calls; "
                "call fit to start again."
            )
        limit = float(np.sqrt(np.finfo(dtype).max)) * 1e-4  # squares summed over a batch stay finite
        big = max(float(X.max()), -float(X.min())) if X.size else 0.0  # reductions only: no |X| temporary
        if big > limit:
            raise ValueError(f"'X' has features up to {big:g} in absolute value; above {limit:.3g} "
                             f"their squares overflow the {np.dtype(dtype).name} covariance: scale the features.")
        return X.astype(dtype, copy=False), y, mode

    def _partial_fit(self, X, y, classes, allow_empty):
        X, y, mode = self._validate_xy(X, y, not hasattr(self, "classes_"), allow_empty)
        if classes is not None:
            self._register(np.asarray(classes))
        if len(y) == 0:
            return self
        self._register(y)
        yidx = np.searchsorted(self.classes_, y)
        dt = self.means_.dtype
        if self.backend_ == "torch":
            self._partial_fit_torch(X, yidx, mode)
        elif mode == "hayes":
            D = np.empty_like(X)
            w = np.empty(len(X), dtype=dt)
            self.n_samples_seen_ = int(delta_pass(np.ascontiguousarray(X), yidx.astype(np.int64), self.means_,
                                                  self.counts_, self.n_samples_seen_, RULE_HAYES, D, w))
            _syrk_update(self._scatter, np.sqrt(w)[:, None] * D)
        else:
            fixed_first = mode == "fixed" and self._fixed_cov is None
            self._merge_exact(X, yidx, update_scatter=(mode == "exact" or fixed_first))
            if fixed_first:
                self._fixed_cov = _symmetric_from_lower(self._scatter) / self.n_samples_seen_
        self._cache.value = None
        return self

    def _torch_core(self, mode):
        """A :class:`accel.continual.TorchStreamingLDA` of this estimator's settings (empty state)."""
        from accel.continual import TorchStreamingLDA

        return TorchStreamingLDA(self.means_.shape[1], shrinkage=float(self.shrinkage),
                                 covariance="hayes" if mode == "hayes" else "exact", device=self.device,
                                 dtype=self.means_.dtype)

    def _partial_fit_torch(self, X, yidx, mode):
        """One batch on the torch core: the state goes in, the sample-equivalent update runs there, the state
        comes back (``"exact"``: Welford weights, equal to the Chan merge of the numpy path to round-off)."""
        fixed_first = mode == "fixed" and self._fixed_cov is None
        core = self._torch_core(mode).load_state(self.means_, self.counts_, _symmetric_from_lower(self._scatter),
                                                 self.n_samples_seen_)
        core.partial_fit(X, yidx, update_scatter=mode in ("exact", "hayes") or fixed_first)
        dt = self.means_.dtype
        self.means_ = core.means.cpu().numpy().astype(dt, copy=False)
        self.counts_ = core.counts.cpu().numpy().astype(np.int64, copy=False)
        self._scatter = np.ascontiguousarray(core.scatter.cpu().numpy(), dtype=dt)
        self.n_samples_seen_ = core.n_seen
        if fixed_first:
            self._fixed_cov = _symmetric_from_lower(self._scatter) / self.n_samples_seen_

    def _merge_exact(self, X, yidx, update_scatter=True):
        """Chan/Welford merge of one batch into the means, counts and (optionally) scatter."""
        dt = self.means_.dtype
        ks, inv, nb = np.unique(yidx, return_inverse=True, return_counts=True)
        onehot = np.zeros((len(inv), ks.size), dtype=X.dtype)
        onehot[np.arange(len(inv)), inv] = 1.0
        mb = ((onehot.T @ X) / nb[:, None]).astype(dt)  # per-class batch means, one GEMM
        c = self.counts_[ks]
        if update_scatter:
            wk = np.sqrt(c * nb / (c + nb)).astype(dt)
            Z = np.concatenate([X - mb[inv], wk[:, None] * (self.means_[ks] - mb)])
            _syrk_update(self._scatter, Z)
        tot = c + nb
        self.means_[ks] = ((c / tot)[:, None] * self.means_[ks] + (nb / tot)[:, None] * mb).astype(dt)
        self.counts_[ks] = tot
        self.n_samples_seen_ += int(nb.sum())

    def fit_base(self, X, y):
        """Base initialisation (reference ``fit_base``): class means and the OAS covariance.

        Sets the means and counts from ``(X, y)``, ``n = len(X)`` and :math:`\\Sigma` to the
        Oracle-Approximating-Shrinkage estimate (``sklearn.covariance.OAS(assume_centered=True)``)
        of the within-class deviations :math:`x_i - \\mu_{y_i}`. Streaming updates then continue
        from this state (``"fixed"`` keeps this :math:`\\Sigma` for good). Forgets any earlier state.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            Labels.

        Returns
        -------
        self : StreamingLDA
        """
        from sklearn.covariance import OAS

        self._forget()
        X, y, mode = self._validate_xy(X, y, first=True, allow_empty=False)
        self._register(y)
        yidx = np.searchsorted(self.classes_, y)
        self._merge_exact(X, yidx, update_scatter=False)
        R = X.astype(np.float64) - self.means_[yidx]
        cov = OAS(assume_centered=True).fit(R).covariance_.astype(self.means_.dtype)
        self._scatter = cov * self.n_samples_seen_
        self._from_base = True
        if mode == "fixed":
            self._fixed_cov = cov
        self._cache.value = None
        return self

    # ------------------------------------------------------------------ merging
    def merge(self, other):
        r"""Add the state of another fitted ``StreamingLDA`` to this one, in place.

        After ``a.merge(b)``, ``a`` is (to round-off) the estimator that ``fit`` on the union of the
        samples seen by ``a`` and by ``b`` gives: the class list is the union, and per class
        :math:`c = c_a + c_b`, :math:`\mu = (c_a\mu_a + c_b\mu_b)/c` and the pooled scatter
        :math:`S = S_a + S_b + \sum_k \tfrac{c_{a,k}c_{b,k}}{c_k}(\mu_{a,k}-\mu_{b,k})
        (\mu_{a,k}-\mu_{b,k})^\top` (Chan et al. 1979). Merging is associative and commutative
        up to round-off, so states computed on different parts of a data set (on different workers)
        can be combined in any grouping and order; :func:`algos.continual.fit_dask` does so over
        the blocks of a Dask array.

        Like ``partial_fit``, ``merge`` updates ``self`` and returns it; ``other`` is not changed
        (merge into ``copy.deepcopy(a)`` to keep ``a``). An unfitted ``other`` (never fitted or
        with no samples) adds nothing; merging into an unfitted ``self`` copies ``other``'s state.

        Parameters
        ----------
        other : StreamingLDA
            A state with the same ``shrinkage``, ``covariance``, ``temperature``, ``dtype`` and
            number of features.

        Returns
        -------
        self : StreamingLDA
            The merged estimator.

        Raises
        ------
        ValueError
            If ``covariance`` is ``"hayes"`` or ``"fixed"``: their state depends on the order of
            the samples (Hayes's rule adds :math:`xx^\top` for the first sample of each class;
            ``"fixed"`` freezes the covariance of the first batch), so no merge equals a fit on
            the union; use ``covariance="exact"``. Also if a state comes from :meth:`fit_base`
            (its OAS covariance is not a sum over samples), or if a parameter or the number of
            features differs (the message names it).
        TypeError
            If ``other`` is not a ``StreamingLDA``.

        Examples
        --------
        >>> import numpy as np
        >>> from algos.continual import StreamingLDA
        >>> rng = np.random.default_rng(0)
        >>> X, y = rng.normal(size=(200, 4)), rng.integers(0, 3, 200)
        >>> a = StreamingLDA().fit(X[:120], y[:120])
        >>> b = StreamingLDA().fit(X[120:], y[120:])
        >>> whole = StreamingLDA().fit(X, y)
        >>> bool(np.allclose(a.merge(b).covariance_, whole.covariance_, rtol=0, atol=1e-12))
        True
        """
        if not isinstance(other, StreamingLDA):
            raise TypeError(f"'other' must be a StreamingLDA; got {type(other).__name__}.")
        validate_params(self)
        validate_params(other)
        mode = check_merge_params(self, other, ("covariance", "shrinkage", "temperature", "dtype"))
        for est, name in ((self, "self"), (other, "other")):
            if getattr(est, "_from_base", False):
                raise ValueError(f"'{name}' was initialised by fit_base, whose OAS covariance is not a sum over "
                                 "samples and cannot be merged; fit it with fit or partial_fit instead.")
        if not hasattr(other, "classes_"):
            return self
        if not hasattr(self, "classes_"):
            for attr in ("classes_", "means_", "counts_", "n_samples_seen_", "_scatter", "_fixed_cov",
                         "_from_base", "n_features_in_", "feature_names_in_", "backend_"):
                if hasattr(other, attr):
                    setattr(self, attr, copy.deepcopy(getattr(other, attr)))
            self._cache = _Cache()
            return self
        if other.n_features_in_ != self.n_features_in_:
            raise ValueError(f"'other' has n_features_in_ = {other.n_features_in_}; this estimator has "
                             f"{self.n_features_in_}: states over different features cannot be merged.")
        self._register(other.classes_)
        seen = other.counts_ > 0
        if not seen.any():
            return self
        ks = np.searchsorted(self.classes_, other.classes_[seen])
        ca, cb = self.counts_[ks], other.counts_[seen]
        mb = other.means_[seen]
        dt = self.means_.dtype
        tot = ca + cb
        if mode == "exact":
            wk = np.sqrt(ca * cb / tot).astype(dt)
            self._scatter += np.tril(other._scatter)
            _syrk_update(self._scatter, wk[:, None] * (self.means_[ks] - mb))
        self.means_[ks] = ((ca / tot)[:, None] * self.means_[ks] + (cb / tot)[:, None] * mb).astype(dt)
        self.counts_[ks] = tot
        self.n_samples_seen_ += other.n_samples_seen_
        self._cache.value = None
        return self

    # ------------------------------------------------------------------ prediction
    @property
    def covariance_(self):
        """The shared covariance :math:`\\Sigma` (before shrinkage)."""
        if not hasattr(self, "classes_"):
            raise AttributeError("'covariance_' is available after fitting.")
        d = self.means_.shape[1]
        mode = self.covariance
        if mode == "identity":
            return np.eye(d, dtype=self.means_.dtype)
        if mode == "fixed" and self._fixed_cov is not None:
            return self._fixed_cov.copy()
        if self.n_samples_seen_ == 0:
            return np.zeros((d, d), dtype=self.means_.dtype)
        return _symmetric_from_lower(self._scatter) / self.n_samples_seen_

    def _seen(self):
        check_is_fitted(self, "classes_")
        seen = self.counts_ > 0
        if not seen.any():
            raise NotFittedError(
                f"This {type(self).__name__} has seen no samples yet; call partial_fit with data first."
            )
        return seen

    def _weights(self):
        """Cached ``(W, b, seen)``: ``W = Lambda M^T`` (d, K), ``b_k = mu_k^T Lambda mu_k / 2``."""
        seen = self._seen()
        mode, eps = self.covariance, float(self.shrinkage)
        if self._cache.value is not None and self._cache.value[0] == (mode, eps):
            return self._cache.value[1]
        M = self.means_
        if mode == "identity":
            W = M.T.copy()
        elif getattr(self, "backend_", "numpy") == "torch":
            W = self._torch_weights(mode, eps)
        else:
            d = M.shape[1]
            A = (1.0 - eps) * self.covariance_
            A[np.diag_indices(d)] += eps
            try:
                factor = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                if eps == 0:
                    raise ValueError(
                        "the covariance is singular (not positive definite) and 'shrinkage' is 0; "
                        "use 'shrinkage' > 0."
                    ) from None
                raise ValueError(f"the shrunk covariance is not positive definite ('shrinkage' = {eps:g}); the "
                                 f"features may be too large or not finite.") from None
            W = scipy.linalg.cho_solve(factor, M.T, check_finite=False)
        b = 0.5 * np.einsum("kd,dk->k", M, W)
        self._cache.value = ((mode, eps), (W, b, seen))
        return self._cache.value[1]

    def _torch_weights(self, mode, eps):
        """``Lambda M^T`` (d, K) by the torch core's Cholesky solve; 0 in the columns of unseen classes."""
        n = max(self.n_samples_seen_, 1)
        core = self._torch_core(mode).load_state(self.means_, self.counts_, self.covariance_ * n, n)
        try:
            Ws, _, idx = core.linear_weights()
        except np.linalg.LinAlgError:
            if eps == 0:
                raise ValueError("the covariance is singular (not positive definite) and 'shrinkage' is 0; "
                                 "use 'shrinkage' > 0.") from None
            raise ValueError(f"the shrunk covariance is not positive definite ('shrinkage' = {eps:g}); the "
                             f"features may be too large or not finite.") from None
        W = np.zeros(self.means_.shape[::-1], dtype=self.means_.dtype)
        W[:, idx] = Ws  # idx: the classes with a positive count, i.e. np.flatnonzero(seen)
        return W

    def _scores(self, X):
        """Scores ``s_k(x)`` of shape (n, K); ``-inf`` for unseen classes."""
        check_is_fitted(self, "classes_")
        check_numeric(X, "X")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        W, b, seen = self._weights()
        S = X.astype(W.dtype, copy=False) @ W - b
        S[:, ~seen] = -np.inf
        return S

    def _log_proba(self, X):
        tau = float(self.temperature)
        S = self._scores(X)
        return _log_softmax(S / tau, self.counts_ > 0)
