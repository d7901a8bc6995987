r"""Bounds for least-squares learning on a DAG of agents, full-message and shared-sketch protocols.

Model (KRR, [C]): agent :math:`v` sees the features :math:`S_v` and its parents' predictions and
outputs the :math:`L^2` projection of :math:`y` on their span; :math:`f_v = \beta_v^\top x`. Excess
error :math:`e(f) = \mathrm{MSE}(f) - \mathrm{MSE}(f^*) = \|\beta - \beta^*\|_\Sigma^2`,
:math:`\beta^* = \Sigma^+ b`. Normalisation: :math:`A = \|\beta^*\|_1`,
:math:`B^2 = \max_l E[x_l^2]` (class :math:`C_d`: :math:`A = B = 1`). A path
:math:`A_1 \to \dots \to A_D` is *M-covered* if every block of :math:`M` consecutive agents jointly
sees all features.

Status tags follow the reconstruction notes
(:doc:`/networked_learning_reconstruction`; its sections and statements T1, T2, ... are cited below): **[C]** confirmed
by an abstract or a primary source, **[R]** reconstructed by the project (implemented as written), **[D]** derived,
**[V]** checked numerically in the reference prototype.

Sources
-------
* [KRR] M. Kearns, A. Roth, E. Ryu, "Networked information aggregation", arXiv 2507.09683,
  SODA 2026 (known from its abstract and from follow-ups that restate its model and theorems).
* [BHH+26] Bateni, Hadizadeh, Hajiaghayi, JafariRaviz, Taherijam, "Optimal Networks for Agentic
  Information Aggregation" (full text); [BHH+26b] "Optimal Rates for Agentic Networked Information
  Aggregation", arXiv 2609.05318 (abstract).
* [TGT] the target NeurIPS 2026 paper (shared-sketch protocol), known only from its abstract.
* [Ver12] R. Vershynin, "Introduction to the non-asymptotic analysis of random matrices", 2012,
  Cor. 5.35.

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import math

from theory._checks import Int, Real, domain

_NN = Real(0.0)
_POS = Real(0.0, closed="neither")
_SIZE = Int(1)
_OPEN_UNIT = Real(0.0, 1.0, closed="neither")

__all__ = [
    "BOUND_KIND",
    "krr_path_bound",
    "krr_path_bound_normalised",
    "greedy_bound",
    "greedy_step_bound",
    "greedy_lower_bound",
    "worst_case_rate",
    "gaussian_ose_eta",
    "gaussian_ose_min_k",
    "aggregation_term",
    "full_message_risk_bound",
    "sketched_risk_bound",
    "sketch_ls_expectation_factor",
    "ols_expected_excess",
]

BOUND_KIND = {
    "krr_path_bound": "exact",
    "krr_path_bound_normalised": "exact",
    "greedy_bound": "exact",
    "greedy_step_bound": "exact",
    "greedy_lower_bound": "exact",
    "worst_case_rate": "up to constants",
    "gaussian_ose_eta": "high-probability",
    "gaussian_ose_min_k": "high-probability",
    "aggregation_term": "exact",
    "full_message_risk_bound": "high-probability",
    "sketched_risk_bound": "high-probability",
    "sketch_ls_expectation_factor": "in expectation",
    "ols_expected_excess": "in expectation",
}


def _ab_squared(A, B):
    """:math:`(AB)^2`, or a ValueError naming ``A`` and ``B`` when it overflows a float."""
    try:
        value = (A * B) ** 2
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"'A' and 'B' are too large: (A B)^2 overflows a float; got A={A!r}, B={B!r}.")
    return value


def _path_sizes(M, D):
    """The rule ``D >= M`` ties two arguments: checked in the body."""
    if D < M:
        raise ValueError(f"'D' must be at least M = {M} (a path of depth D >= M); got {D}.")
    return M, D


# --- population bounds ---------------------------------------------------------------------------

def _agg(e1, A, B, M, D, names):
    M, D = _path_sizes(M, D)
    if M == 1:
        return 0.0
    return A * B * math.sqrt((M - 1) * e1 / (D // M))


@domain(e1=_NN, A=_NN, B=_NN, M=_SIZE, D=_SIZE)
def krr_path_bound(e1, A, B, M, D):
    r"""Excess error at the end of an M-covered path (T1, KRR linear upper bound).

    **Theorem (T1; [KRR] rate, [C]; explicit constant, [R]).** On an :math:`M`-covered path
    :math:`A_1 \to \dots \to A_D` with :math:`D \ge M`,

    .. math:: e(f_D) \le A\,B\,\sqrt{\frac{(M-1)\, e(f_1)}{\lfloor D/M \rfloor}}
              \le (AB)^2 \sqrt{\frac{M-1}{\lfloor D/M \rfloor}},

    :math:`A = \|\beta^*\|_1`, :math:`B^2 = \max_l E[x_l^2]`. Proof sketch (networked_learning reconstruction notes,
    section 2):
    :math:`e(f_t) = \sum_l \beta^*_l \langle y - f_t, x_l\rangle`; an agent :math:`j` of the block
    that sees :math:`x_l` has :math:`\langle y - f_j, x_l\rangle = 0`, so by Cauchy-Schwarz and
    Pythagoras :math:`|\langle y - f_t, x_l\rangle| \le B\sqrt{(M-1)\Delta}`; some of the
    :math:`\lfloor D/M\rfloor` disjoint blocks has :math:`\Delta \le e(f_1)/\lfloor D/M\rfloor`.
    ``M = 1`` (every agent sees every feature) gives exactly 0.

    Assumptions: finite second moments; an :math:`M`-covered path; holds verbatim for the empirical
    measure (full-message protocol). Source: [KRR] (rate :math:`O(M/\sqrt D)`); constant
    reconstructed by the project. Kind: ``exact`` (every instance).

    .. note:: reconstructed from [KRR] and the BCE follow-up (explicit constant).

    Parameters
    ----------
    e1 : float >= 0
        Excess error of the first agent, :math:`e(f_1)`.
    A, B : float >= 0
    M : int >= 1
        Coverage number of the path.
    D : int >= M
        Depth (number of agents on the path).

    Returns
    -------
    float

    Examples
    --------
    >>> krr_path_bound(0.5, 1.0, 1.0, 3, 12)   # sqrt(2 * 0.5 / 4)
    0.5
    >>> krr_path_bound(0.5, 1.0, 1.0, 1, 5)
    0.0
    """
    return _agg(e1, A, B, M, D, ("e1", "A", "B"))


@domain(A=_NN, B=_NN, M=_SIZE, D=_SIZE)
def krr_path_bound_normalised(A, B, M, D):
    r"""T1 with :math:`e(f_1) \le (AB)^2`: :math:`(AB)^2\sqrt{(M-1)/\lfloor D/M\rfloor}`.

    **Theorem (T1, [KRR], rate [C], constant [R]).** Since :math:`e(f_1) \le e(0) =
    \beta^{*\top}\Sigma\beta^* \le \|\beta^*\|_1^2 B^2`, :func:`krr_path_bound` gives

    .. math:: e(f_D) \le (AB)^2 \sqrt{\frac{M-1}{\lfloor D/M \rfloor}}.

    Assumptions and source as :func:`krr_path_bound`. Kind: ``exact``.

    .. note:: reconstructed from [KRR] (explicit constant).

    Parameters
    ----------
    A : float
        :math:`\|\beta^*\|_1`, at least 0.
    B : float
        :math:`\max_l \sqrt{E[x_l^2]}`, at least 0.
    M : int
        Coverage: every feature is seen within every ``M`` consecutive agents.
    D : int
        Depth of the path, at least ``M``.

    Returns
    -------
    float
        :math:`(AB)^2\sqrt{(M-1)/\lfloor D/M\rfloor}`.

    Examples
    --------
    >>> krr_path_bound_normalised(1.0, 2.0, 5, 5)   # 4 * sqrt(4 / 1)
    8.0
    """
    M, D = _path_sizes(M, D)
    return _ab_squared(A, B) * math.sqrt((M - 1) / (D // M))


@domain(A=_NN, B=_NN, D=Int(0))
def greedy_bound(A, B, D):
    r"""Excess after ``D`` greedy agents (T3): :math:`(AB)^2/(D+1)`.

    **Theorem (T3, [BHH+26], [C]).** If agent :math:`t+1` sees its parent and the feature
    :math:`\arg\max_i |\langle y - f_t, x_i\rangle|/\|x_i\|`, then
    :math:`e_{t+1} \le e_t - e_t^2/(AB)^2` (see :func:`greedy_step_bound`); with
    :math:`e_0 = e(0) \le (AB)^2` this gives

    .. math:: e_D \le \frac{(AB)^2}{D + 1}.

    Assumptions: one parent per agent (a path), greedy feature choice. Kind: ``exact``.

    Parameters
    ----------
    A, B : float
        :math:`\|\beta^*\|_1` and :math:`\max_l \sqrt{E[x_l^2]}`, both at least 0.
    D : int
        Number of greedy agents, at least 0 (``D = 0``: the zero predictor).

    Returns
    -------
    float
        :math:`(AB)^2/(D+1)`.

    Examples
    --------
    >>> greedy_bound(1.0, 2.0, 7)
    0.5
    """
    return _ab_squared(A, B) / (D + 1)


@domain(e=_NN, A=_POS, B=_POS)
def greedy_step_bound(e, A, B):
    r"""One greedy step (T3): :math:`e_{t+1} \le e_t - e_t^2/(AB)^2`.

    **Lemma (T3, [BHH+26], [C]).** With :math:`g = \max_i |\langle y - f_t, x_i\rangle|/\|x_i\|`,
    :math:`e_t = \sum_l \beta^*_l\langle y - f_t, x_l\rangle \le A B g`, and adding the best feature
    lowers the error by at least :math:`g^2 \ge e_t^2/(AB)^2`.

    Assumptions: :math:`AB > 0` and :math:`0 \le e_t \le (AB)^2` (always true, see
    :func:`greedy_bound`). Kind: ``exact``.

    Parameters
    ----------
    e : float
        Current excess :math:`e_t`, in :math:`[0, (AB)^2]`.
    A, B : float
        :math:`\|\beta^*\|_1` and :math:`\max_l \sqrt{E[x_l^2]}`, both positive.

    Returns
    -------
    float
        :math:`e_t - e_t^2/(AB)^2`.

    Examples
    --------
    >>> greedy_step_bound(0.5, 1.0, 1.0)
    0.25
    """
    cap = _ab_squared(A, B)
    if e > cap:
        raise ValueError(f"'e' must be at most (A B)^2 = {cap:g}; got {e!r}.")
    return max(0.0, e * (1.0 - e / cap))  # clip the rounding at e = cap


@domain(D=_SIZE)
def greedy_lower_bound(D):
    r"""Minimax lower bound for single-feature paths: :math:`R_1(d, D) \ge 1/(640 D)`.

    **Theorem ([BHH+26] eq. (5), [C]).** For :math:`d \ge 3`, over normalised instances
    (:math:`A = B = 1`) the best depth-``D`` path with one feature per agent has worst-case excess

    .. math:: R_1(d, D) \ge \frac{1}{640\, D},

    attained by the instance of :func:`algos.networked_learning._data.make_krr_hard3`. Together with
    :func:`greedy_bound`: :math:`1/(640D) \le R_1 \le 1/(D+1)`. Kind: ``exact`` (a minimax
    statement with an explicit constant).

    Parameters
    ----------
    D : int
        Depth of the path, at least 1.

    Returns
    -------
    float
        :math:`1/(640 D)`.

    Examples
    --------
    >>> greedy_lower_bound(10)
    0.00015625
    """
    return 1.0 / (640.0 * D)


@domain(M=_SIZE, D=_SIZE)
def worst_case_rate(M, D):
    r"""Worst-case excess rate on M-covered paths (T2): :math:`\Theta(1)` if :math:`D < M^2`, else :math:`M^2/D`.

    **Theorem (T2, [BHH+26b], [C]).** Over normalised distributions and :math:`M`-covered paths
    of depth :math:`D`, the worst-case excess is :math:`\Theta(1)` for :math:`D < M^2` and
    :math:`\Theta(M^2/D)` for :math:`D \ge M^2`. The function returns the rate without constants:
    ``1.0`` or ``M**2 / D``. Kind: ``up to constants`` (asymptotic).

    Parameters
    ----------
    M : int
        Coverage of the path, at least 1.
    D : int
        Depth of the path, at least 1.

    Returns
    -------
    float
        ``1.0`` if ``D < M**2``, else ``M**2 / D``.

    Examples
    --------
    >>> worst_case_rate(3, 8), worst_case_rate(3, 18)
    (1.0, 0.5)
    """
    return 1.0 if D < M * M else M * M / D


# --- sketching -----------------------------------------------------------------------------------

@domain(k=_SIZE, r=_SIZE, delta=_OPEN_UNIT)
def gaussian_ose_eta(k, r, delta):
    r"""Distortion of a Gaussian subspace embedding (T6): :math:`(\sqrt r + \sqrt{2\ln(2/\delta)})/\sqrt k`.

    **Theorem (T6, [Ver12] Cor. 5.35, [C]).** For :math:`U \in \mathbb R^{m\times r}` with
    orthonormal columns and :math:`S = G/\sqrt k`, :math:`G_{ij} \sim N(0,1)` i.i.d., with
    probability at least :math:`1 - \delta` all singular values of :math:`SU` lie in
    :math:`[1-\eta, 1+\eta]`,

    .. math:: \eta = \frac{\sqrt r + \sqrt{2\ln(2/\delta)}}{\sqrt k}.

    With :math:`r = \mathrm{rank}[X, y] \le d + 1` and :math:`\eta < 1`:
    :math:`(1-\eta)^2\hat L(\beta) \le \tilde L(\beta) \le (1+\eta)^2\hat L(\beta)` for all
    :math:`\beta` at once. Kind: ``high-probability`` (probability :math:`1-\delta`). A value
    :math:`\ge 1` is vacuous.

    Parameters
    ----------
    k : int
        Sketch size, at least 1.
    r : int
        Subspace dimension, at least 1.
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    float
        The distortion :math:`\eta` (vacuous when at least 1).

    Examples
    --------
    >>> round(gaussian_ose_eta(100, 9, 2 * math.exp(-8)), 12)   # (3 + 4) / 10
    0.7
    """
    return (math.sqrt(r) + math.sqrt(2.0 * math.log(2.0 / delta))) / math.sqrt(k)


@domain(r=_SIZE, eta=_OPEN_UNIT, delta=_OPEN_UNIT)
def gaussian_ose_min_k(r, eta, delta):
    r"""Smallest sketch size with :func:`gaussian_ose_eta` :math:`\le \eta` (T6).

    .. math:: k = \left\lceil \frac{(\sqrt r + \sqrt{2\ln(2/\delta)})^2}{\eta^2} \right\rceil,

    order :math:`O((r + \log 1/\delta)/\eta^2)`. Source [Ver12] Cor. 5.35, [C]. Kind:
    ``high-probability``.

    Parameters
    ----------
    r : int
        Subspace dimension, at least 1.
    eta : float
        Target distortion, in (0, 1).
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    int
        The smallest sketch size ``k``.

    Examples
    --------
    >>> gaussian_ose_min_k(9, 0.7, 2 * math.exp(-8))
    100
    """
    root = math.sqrt(r) + math.sqrt(2.0 * math.log(2.0 / delta))
    k = max(1, math.ceil((root / eta) ** 2))
    # guard against rounding of the ceiling in either direction
    while k > 1 and root / math.sqrt(k - 1) <= eta:
        k -= 1
    while root / math.sqrt(k) > eta:
        k += 1
    return k


# --- finite-sample bounds ------------------------------------------------------------------------

@domain(A_hat=_NN, B_hat=_NN, M=_SIZE, e1_hat=_NN, D=_SIZE)
def aggregation_term(A_hat, B_hat, M, e1_hat, D):
    r"""The empirical aggregation term of T5: :math:`\hat A\hat B\sqrt{(M-1)\hat e_1/\lfloor D/M\rfloor}`.

    **T1 on the empirical measure (T5, [R]).** :math:`\hat A = \|\hat\beta\|_1`,
    :math:`\hat B^2 = \max_l \|X_l\|^2/m`, :math:`\hat e_1 = \hat L(\hat\beta_1) - \hat L(\hat\beta)`;
    then :math:`\hat L(\hat\beta_D) - \hat L(\hat\beta) \le \widehat{\mathrm{Agg}}`. For the
    sketched protocol pass :math:`\tilde A, \tilde B, \tilde e_1` computed on :math:`(SX, Sy)` with
    the :math:`1/m` scaling. Kind: ``exact``.

    .. note:: reconstructed by the project from [KRR] (T1 applied to the empirical measure).

    Parameters
    ----------
    A_hat : float
        :math:`\hat A = \|\hat\beta\|_1`, at least 0.
    B_hat : float
        :math:`\hat B = \max_l \|X_l\|/\sqrt m`, at least 0.
    M : int
        Coverage of the path, at least 1.
    e1_hat : float
        :math:`\hat e_1 = \hat L(\hat\beta_1) - \hat L(\hat\beta)`, at least 0.
    D : int
        Depth of the path, at least ``M``.

    Returns
    -------
    float
        :math:`\hat A\hat B\sqrt{(M-1)\hat e_1/\lfloor D/M\rfloor}`.

    Examples
    --------
    >>> aggregation_term(2.0, 1.0, 2, 0.25, 4)   # 2 * sqrt(0.25 / 2)
    0.7071067811865476
    """
    return _agg(e1_hat, A_hat, B_hat, M, D, ("e1_hat", "A_hat", "B_hat"))


@domain(stat_term=_NN, agg_term=_NN)
def full_message_risk_bound(stat_term, agg_term):
    r"""Population excess of the full-message protocol (T5): :math:`2\,\mathrm{stat} + 4\,\widehat{\mathrm{Agg}}`.

    **Theorem (T5, [R]).** On :math:`E_{cov} = \{\hat\Sigma \succeq \tfrac12\Sigma\}` (probability
    :math:`\ge 1-\delta` once :math:`m \gtrsim d + \log(1/\delta)` for sub-Gaussian :math:`x`),

    .. math:: R(\hat\beta_D) - R(\beta^*) \le 2\|\hat\beta - \beta^*\|_\Sigma^2
              + 4\,\widehat{\mathrm{Agg}},

    with :math:`\widehat{\mathrm{Agg}}` from :func:`aggregation_term`. Steps: T1 on the empirical
    measure, :math:`\hat L(\hat\beta_D) - \hat L(\hat\beta) = \|\hat\beta_D - \hat\beta\|^2_{\hat\Sigma}`,
    transfer with :math:`\Sigma \preceq 2\hat\Sigma`. Source: the project's reconstruction of the
    [TGT] full-message guarantee. Kind: ``high-probability`` (deterministic on :math:`E_{cov}`).

    .. note:: reconstructed by the project (networked_learning reconstruction notes, T5).

    Parameters
    ----------
    stat_term : float
        :math:`\|\hat\beta - \beta^*\|_\Sigma^2`, at least 0 (in expectation
        :func:`ols_expected_excess`).
    agg_term : float
        :math:`\widehat{\mathrm{Agg}}` of :func:`aggregation_term`, at least 0.

    Returns
    -------
    float
        :math:`2\,\mathrm{stat} + 4\,\widehat{\mathrm{Agg}}`.

    Examples
    --------
    >>> full_message_risk_bound(0.1, 0.25)
    1.2
    """
    return 2.0 * stat_term + 4.0 * agg_term


@domain(stat_term=_NN, L_hat=_NN, eta=Real(0.0, 1.0, closed="left"), agg_tilde=_NN)
def sketched_risk_bound(stat_term, L_hat, eta, agg_tilde):
    r"""Population excess of the shared-sketch protocol (T7, main theorem as reconstructed).

    **Theorem (T7, [R]).** On :math:`E_{cov} \cap E_{OSE}` (probability
    :math:`\ge 1 - \delta_{cov} - \delta`, :math:`\eta` from :func:`gaussian_ose_eta`),

    .. math:: R(\tilde\beta_D) - R(\beta^*) \le 2\|\hat\beta - \beta^*\|_\Sigma^2
              + 4\cdot\frac{4\eta}{(1-\eta)^2}\,\hat L(\hat\beta)
              + \frac{4\,\widetilde{\mathrm{Agg}}}{(1-\eta)^2},

    statistics (governed by ``m``), compression (governed by ``k``; note
    :math:`((1+\eta)/(1-\eta))^2 - 1 = 4\eta/(1-\eta)^2`) and aggregation
    (:math:`O(M/\sqrt D)`). The bound is loose (reference prototype: excess/bound :math:`\le 0.003`).
    Source: the project's reconstruction of [TGT]. Kind: ``high-probability``.

    .. note:: reconstructed by the project (networked_learning reconstruction notes, T7).

    Parameters
    ----------
    stat_term : float
        :math:`\|\hat\beta - \beta^*\|_\Sigma^2`, at least 0.
    L_hat : float
        In-sample OLS risk :math:`\hat L(\hat\beta) = \|y - X\hat\beta\|^2/m`, at least 0.
    eta : float
        Distortion of the sketch, in [0, 1) (see :func:`gaussian_ose_eta`).
    agg_tilde : float
        :func:`aggregation_term` on the sketched data, at least 0.

    Returns
    -------
    float
        The bound of T7 on the population excess.

    Examples
    --------
    >>> sketched_risk_bound(0.1, 1.0, 0.5, 0.25)   # 0.2 + 4 * 8 * 1 + 4 * 0.25 / 0.25
    36.2
    """
    shrink = (1.0 - eta) ** 2
    return 2.0 * stat_term + 4.0 * (4.0 * eta / shrink) * L_hat + 4.0 * agg_tilde / shrink


@domain(p=_SIZE, k=_SIZE)
def sketch_ls_expectation_factor(p, k):
    r"""Expected in-sample loss inflation of sketch-and-solve least squares (T8): :math:`1 + p/(k-p-1)`.

    **Theorem (T8, classical, [C]).** For fixed full-rank :math:`X \in \mathbb R^{m\times p}`,
    :math:`k > p + 1` and a Gaussian sketch :math:`S \in \mathbb R^{k\times m}` (any scaling),
    :math:`\tilde\beta = \arg\min \|S(y - X\beta)\|`,

    .. math:: E_S \|y - X\tilde\beta\|^2 = \|y - X\hat\beta\|^2\left(1 + \frac{p}{k - p - 1}\right).

    Kind: ``in expectation`` (over the sketch).

    Parameters
    ----------
    p : int
        Number of columns of ``X``, at least 1.
    k : int
        Sketch size, greater than ``p + 1``.

    Returns
    -------
    float
        :math:`1 + p/(k-p-1)`.

    Examples
    --------
    >>> sketch_ls_expectation_factor(5, 30)   # 1 + 5/24
    1.2083333333333333
    """
    if k <= p + 1:
        raise ValueError(f"'k' must be greater than p + 1 = {p + 1}; got {k}.")
    return 1.0 + p / (k - p - 1)


@domain(sigma2=_NN, d=_SIZE, m=_SIZE)
def ols_expected_excess(sigma2, d, m):
    r"""Expected excess risk of OLS under Gaussian design: :math:`\sigma^2 d/(m-d-1)`.

    **Fact ([C], classical; the statistical term of T5/T7).** For rows
    :math:`x \sim N(0, \Sigma)` i.i.d., full-rank :math:`\Sigma`, well-specified noise of variance
    :math:`\sigma^2` and :math:`m > d + 1`,

    .. math:: E\|\hat\beta - \beta^*\|_\Sigma^2 = \frac{\sigma^2 d}{m - d - 1}.

    Kind: ``in expectation`` (over the sample).

    Parameters
    ----------
    sigma2 : float
        Noise variance :math:`\sigma^2`, at least 0.
    d : int
        Dimension, at least 1.
    m : int
        Sample size, greater than ``d + 1``.

    Returns
    -------
    float
        :math:`\sigma^2 d/(m-d-1)`.

    Examples
    --------
    >>> ols_expected_excess(2.0, 3, 10)
    1.0
    """
    if m <= d + 1:
        raise ValueError(f"'m' must be greater than d + 1 = {d + 1}; got {m}.")
    return sigma2 * d / (m - d - 1)
