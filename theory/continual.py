r"""Bounds behind CIRCLE's reservoir features and streaming-LDA heads (the continual reconstruction notes, section 2).

Reservoir recursion (leaky echo-state network, row vectors, leak :math:`a \in (0, 1]`):

.. math:: h_t = (1-a)\,h_{t-1} + a\, f(u_t W_{\mathrm{in}} + h_{t-1} W).

* **Contraction** [D, V]. If ``f`` is 1-Lipschitz (tanh, ReLU, leaky ReLU with slope <= 1) and
  :math:`\|W\|_2 = \sigma`, two runs on the same input satisfy
  :math:`\|h_t - h'_t\|_2 \le c\,\|h_{t-1} - h'_{t-1}\|_2` with
  :math:`c = (1-a) + a\sigma` (triangle inequality on the convex combination, then the Lipschitz
  bound), hence :math:`\|h_t - h'_t\| \le c^t \|h_0 - h'_0\|`. For :math:`\sigma < 1`, :math:`c < 1`:
  the reservoir forgets its initial state geometrically (echo-state property). Only the spectral
  *norm* gives this exact inequality; a spectral *radius* below one gives it asymptotically.
* **Boundedness** [D]. With tanh and :math:`h_0 = 0`, every :math:`h_t` is a convex combination of
  vectors in :math:`[-1, 1]^U`, so :math:`\|h_t\|_\infty \le 1`. With ReLU or leaky ReLU,
  :math:`|f(z)| \le |z|` entrywise, so :math:`\|h_t\| \le c\|h_{t-1}\| + a M`,
  :math:`M = \max_t \|u_t W_{\mathrm{in}}\|_2`, and by induction :math:`\|h_t\|_2 \le
  \max(\|h_0\|, aM/(1-c))`, with :math:`aM/(1-c) = aM/(1-(1-a)-a\sigma) = M/(1-\sigma)`.
* **Shrinkage floor** [D]. For a covariance :math:`\Sigma \succeq 0` and :math:`\varepsilon \in (0,
  1]`, :math:`\lambda_{\min}((1-\varepsilon)\Sigma + \varepsilon I) = (1-\varepsilon)
  \lambda_{\min}(\Sigma) + \varepsilon \ge \varepsilon`: the streaming-LDA precision always exists,
  even with fewer samples than features.

Status tags follow the reconstruction notes
(:doc:`/continual_reconstruction`; its sections and statements T1, T2, ... are cited below): **[C]** confirmed by a
primary source, **[R]** reconstructed, **[D]** derived with a proof sketch (above), **[V]** checked numerically in a
reference prototype. :data:`STATUS` gives each function's tag, :data:`BOUND_KIND` its kind.

Sources
-------
* H. Jaeger, "The echo state approach to analysing and training recurrent neural networks", GMD
  Report 148 (2001): the norm condition for the echo-state property.
* M. Lukoševičius, "A practical guide to applying echo state networks" (2012): the leaky-integrator
  form used here (tfa ``ESNCell`` convention).
* T. L. Hayes, C. Kanan, "Lifelong machine learning with deep streaming linear discriminant
  analysis", CVPR Workshops 2020: streaming LDA with shrinkage :math:`\varepsilon`.
* O. Ledoit, M. Wolf, "A well-conditioned estimator for large-dimensional covariance matrices",
  J. Multivariate Anal. 88 (2004): shrinkage towards the identity.

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import numpy as np

from theory._checks import InBody, Option, Real, domain

__all__ = [
    "BOUND_KIND",
    "STATUS",
    "esn_contraction_factor",
    "esn_contraction_bound",
    "reservoir_state_bound",
    "leaky_relu_state_bound",
    "shrinkage_eigenvalue_floor",
]

BOUND_KIND = {
    "esn_contraction_factor": "exact",
    "esn_contraction_bound": "exact",
    "reservoir_state_bound": "exact",
    "leaky_relu_state_bound": "exact",
    "shrinkage_eigenvalue_floor": "exact",
}

STATUS = {
    "esn_contraction_factor": "D",
    "esn_contraction_bound": "D, V",
    "reservoir_state_bound": "D",
    "leaky_relu_state_bound": "D",
    "shrinkage_eigenvalue_floor": "D",
}

_ACTIVATIONS = ("tanh", "relu", "leaky_relu")
_LEAK = Real(0.0, 1.0, closed="right")
_NN = Real(0.0)


@domain(leak=_LEAK, sigma=_NN)
def esn_contraction_factor(leak, sigma):
    r"""Per-step contraction factor :math:`c = (1-a) + a\sigma` of a leaky echo-state reservoir.

    Parameters
    ----------
    leak : float
        Leak :math:`a \in (0, 1]`.
    sigma : float
        Spectral norm :math:`\|W\|_2 \ge 0` of the recurrent matrix (a Lipschitz constant of
        :math:`h \mapsto hW`).

    Returns
    -------
    float
        ``c``; ``c < 1`` exactly when ``sigma < 1``.

    Examples
    --------
    >>> esn_contraction_factor(0.5, 0.9)
    0.95
    """
    return (1.0 - leak) + leak * sigma


@domain(leak=_LEAK, sigma=_NN, t=InBody("an int >= 0 or an array of such ints"), initial_distance=_NN)
def esn_contraction_bound(leak, sigma, t, initial_distance=1.0):
    r"""Bound :math:`c^t \|h_0 - h'_0\|` on the distance of two runs after ``t`` steps of the same input.

    Valid for any 1-Lipschitz activation (tanh, ReLU, leaky ReLU) and any ``t >= 0`` [D, V].

    Parameters
    ----------
    leak, sigma : float
        See :func:`esn_contraction_factor`.
    t : int or array-like of int
        Steps (>= 0).
    initial_distance : float, default=1.0
        :math:`\|h_0 - h'_0\|_2 \ge 0`.

    Returns
    -------
    float or ndarray
        Same shape as ``t``.

    Examples
    --------
    >>> float(esn_contraction_bound(0.5, 0.5, 2, initial_distance=2.0))
    1.125
    """
    c = esn_contraction_factor(leak, sigma)
    d0 = initial_distance
    t_arr = np.asarray(t)
    if t_arr.dtype.kind not in "iu" or (t_arr.size and t_arr.min() < 0):
        raise ValueError(f"'t' must be a non-negative int or array of such ints; got {t!r}.")
    with np.errstate(over="ignore", invalid="ignore"):
        out = d0 * np.power(c, t_arr.astype(float))
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"the bound c^t * initial_distance exceeds the float64 range for 'sigma' = {float(sigma)!r} "
            f"(c = {c:g}), 't' up to {int(t_arr.max())} and 'initial_distance' = {d0!r}; the runs need not "
            "contract when 'sigma' >= 1."
        )
    return float(out) if out.ndim == 0 else out


@domain(leak=_LEAK, sigma=Real(0.0, 1.0, closed="left"), max_input_norm=_NN, initial_norm=_NN)
def leaky_relu_state_bound(leak, sigma, max_input_norm, initial_norm=0.0):
    r"""Bound :math:`\max(\|h_0\|, aM/(1-(1-a)-a\sigma)) = \max(\|h_0\|, M/(1-\sigma))` on
    :math:`\sup_t\|h_t\|_2` for ReLU or leaky-ReLU reservoirs (slope <= 1) with :math:`\|W\|_2 = \sigma < 1`.

    Parameters
    ----------
    leak : float
        :math:`a \in (0, 1]`.
    sigma : float
        :math:`\|W\|_2 \in [0, 1)`.
    max_input_norm : float
        :math:`M = \max_t \|u_t W_{\mathrm{in}}\|_2 \ge 0`.
    initial_norm : float, default=0.0
        :math:`\|h_0\|_2 \ge 0`.

    Returns
    -------
    float

    Examples
    --------
    >>> leaky_relu_state_bound(0.5, 0.5, 1.0)
    2.0
    """
    c = (1.0 - leak) + leak * sigma
    return max(initial_norm, leak * max_input_norm / (1.0 - c))


@domain(activation=Option(*_ACTIVATIONS), leak=Real(0.0, 1.0, closed="right", none=True),
        sigma=Real(0.0, none=True), max_input_norm=Real(0.0, none=True), initial_norm=_NN)
def reservoir_state_bound(activation, leak=None, sigma=None, max_input_norm=None, initial_norm=0.0):
    r"""Bound on the reservoir states over all steps, by activation [D].

    * ``"tanh"``: :math:`\|h_t\|_\infty \le \max(1, \|h_0\|_\infty)` (``1`` from :math:`h_0 = 0`); the other
      arguments are not needed.
    * ``"relu"``, ``"leaky_relu"``: :math:`\|h_t\|_2 \le` :func:`leaky_relu_state_bound` (needs ``leak``,
      ``sigma < 1`` and ``max_input_norm``).

    Parameters
    ----------
    activation : {"tanh", "relu", "leaky_relu"}
    leak, sigma, max_input_norm, initial_norm : float
        See :func:`leaky_relu_state_bound` (``initial_norm`` is the infinity norm for tanh).

    Returns
    -------
    float

    Examples
    --------
    >>> reservoir_state_bound("tanh")
    1.0
    >>> reservoir_state_bound("leaky_relu", leak=0.5, sigma=0.5, max_input_norm=1.0)
    2.0
    """
    if activation == "tanh":
        return max(1.0, initial_norm)
    for name, val in (("leak", leak), ("sigma", sigma), ("max_input_norm", max_input_norm)):
        if val is None:
            raise ValueError(f"'{name}' is required for activation={activation!r}.")
    return leaky_relu_state_bound(leak, sigma, max_input_norm, initial_norm)


@domain(shrinkage=Real(0.0, 1.0, closed="right"), min_eigenvalue=_NN)
def shrinkage_eigenvalue_floor(shrinkage, min_eigenvalue=0.0):
    r"""Smallest eigenvalue :math:`(1-\varepsilon)\lambda_{\min}(\Sigma) + \varepsilon` of the shrunk
    covariance :math:`(1-\varepsilon)\Sigma + \varepsilon I` (at least :math:`\varepsilon`).

    Parameters
    ----------
    shrinkage : float
        :math:`\varepsilon \in (0, 1]`.
    min_eigenvalue : float, default=0.0
        :math:`\lambda_{\min}(\Sigma) \ge 0` (``0`` gives the floor valid for every covariance).

    Returns
    -------
    float

    Examples
    --------
    >>> shrinkage_eigenvalue_floor(1e-4)
    0.0001
    """
    return (1.0 - shrinkage) * min_eigenvalue + shrinkage
