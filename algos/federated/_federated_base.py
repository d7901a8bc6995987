r"""The base class of the federated classifiers (:class:`PotaraClassifier` and the baselines of
:mod:`.baselines`): the data split by client, the FedAvg round loop with client sampling,
communication accounting and interrupts, per-client prediction; plus the per-client generators and
the model merge both use. Re-exported by :mod:`._potara`.
"""

from __future__ import annotations

import numbers
import zlib

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _assert_all_finite,
    check_array,
    check_is_fitted,
    column_or_1d,
)

from accel._federated_checks import _check_real_2d

from .._anytime import Interruptible
from .._validation import check_random_state, check_scalar_int, validate_params
from ._low_rank_softmax import LowRankSoftmax
from ._model import (
    _check_diverged,
    _check_params,
    _effective_weights,
    _softmax,
    _train_clients,
    _weighted_mean,
    predict_logits,
)
from .merge import merge_lora, merge_params

__all__ = ["FederatedClassifierBase", "merge_models", "client_generator"]

BYTES_PER_FLOAT = 8


def _client_key(cid):
    """A stable integer for a client id (ints as themselves, anything else by CRC32 of its str)."""
    if isinstance(cid, (numbers.Integral, np.integer)) and not isinstance(cid, (bool, np.bool_)):
        return int(cid) & 0xFFFFFFFF
    return zlib.crc32(str(cid).encode("utf-8"))


def _check_client_id(client_id, name="client_id"):
    if isinstance(client_id, (bool, np.bool_)) or not isinstance(client_id, (numbers.Integral, str, bytes)):
        raise TypeError(f"'{name}' must be an int or a str; got {client_id!r} of type {type(client_id).__name__}.")
    return client_id


def client_generator(random_state, client_id, stream=0):
    """Generator of one client, seeded from ``(random_state, client_id, stream)`` (fresh entropy when
    ``random_state`` is None); the same on every process, so a Flower client and the in-process run draw
    the same numbers.

    Parameters
    ----------
    random_state : None, int >= 0 or Generator
    client_id : int or str
    stream : int >= 0, default=0
        Index of the client's independent stream (fine-tuning, hold-out split, ...).

    Returns
    -------
    numpy.random.Generator
        The client's generator.
    """
    _check_client_id(client_id)
    stream = check_scalar_int(stream, "stream", low=0)
    if random_state is None:
        return np.random.default_rng()
    key = (_client_key(client_id), stream)
    if isinstance(random_state, np.random.Generator):
        ss = getattr(random_state.bit_generator, "seed_seq", None)
        if isinstance(ss, np.random.SeedSequence):
            # keep the generator's own spawn key: children of one SeedSequence stay distinct
            return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + key))
        seed = 0
    else:
        seed = check_scalar_int(random_state, "random_state", low=0)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _n_floats(params, keys):
    return int(sum(params[k].size for k in keys))


def _copy_container(c):
    """A copy of a per-client container (list: shallow, array: values) for the round checkpoints."""
    return c.copy() if isinstance(c, np.ndarray) else list(c)


def merge_models(theta_f, theta_l, lam, merge_space="product", merge_rank=None):
    """Merge two parameter dicts of the model with per-block weights.

    Merge two parameter dicts of the model with per-block weights ``lam`` (keys of
    :func:`algos.federated.variance.model_blocks`, or one float for all): plain interpolation without
    adapter; with one, exact product-space LoRA merge (``"AB"``) or factor-space averaging.

    Parameters
    ----------
    theta_f : dict of str to ndarray
        The federated model's parameter blocks.
    theta_l : dict of str to ndarray
        The local model's parameter blocks (same keys and shapes).
    lam : float or dict
        Weight of the federated model: one float for all blocks, or one per key of
        :func:`algos.federated.variance.model_blocks`.
    merge_space : {"product", "factors"}, default="product"
        With an adapter: exact product-space LoRA merge of ``AB`` or factor-space averaging (see
        :func:`algos.federated.merge.merge_lora`).
    merge_rank : int or None, default=None
        Rank the product-space merge is truncated to (``None``: no truncation).

    Returns
    -------
    dict of str to ndarray
        The merged parameter blocks.
    """
    from .merge import _check_lam
    from .variance import model_blocks

    shapes_f = _check_params(theta_f, "theta_f")
    if _check_params(theta_l, "theta_l") != shapes_f or set(theta_f) != set(theta_l):
        raise ValueError(f"'theta_f' and 'theta_l' must have the same blocks and shapes; got keys {sorted(theta_f)} "
                         f"and {sorted(theta_l)}.")
    blocks = model_blocks(theta_f, merge_space)
    if not isinstance(lam, dict):
        one = _check_lam(lam)
        if one.ndim:
            raise ValueError(f"'lam' must be a float in [0, 1] or a dict of per-block weights; got an array of "
                             f"shape {one.shape}.")
        lam = {k: float(one) for k in blocks}
    elif set(lam) != set(blocks):
        raise ValueError(f"'lam' must have one entry per merged block {sorted(blocks)}; got {sorted(lam)}.")
    if "A" not in theta_f:
        return merge_params(theta_f, theta_l, lam)
    if merge_space == "factors":
        return merge_params(theta_f, theta_l, {"W": 1.0, **lam})  # W is frozen: identical in both
    la = lam["AB"]
    out = {"b": merge_params(theta_f["b"], theta_l["b"], lam["b"])}
    if np.ndim(la) == 0:
        out["W"] = merge_params(theta_f["W"], theta_l["W"], la)
        out["A"], out["B"] = merge_lora(theta_f["A"], theta_f["B"], theta_l["A"], theta_l["B"], float(la),
                                        space="product", rank=merge_rank)
    else:  # per-coordinate weights on delta W cannot be factored: dense merged head, no adapter
        out["W"] = merge_params(_effective_weights(theta_f), _effective_weights(theta_l), la)
    return out


class FederatedClassifierBase(ClassifierMixin, BaseEstimator):
    """Shared machinery of the federated classifiers (``fit(X, y, client_ids=None)``,
    ``predict(X, client_ids=None)``). Not an estimator by itself.

    ``client_ids`` gives the client of each row. In :meth:`fit`, ``None`` means one client (every row is
    client ``0``); in the prediction and scoring methods ``None`` is allowed when the model was fitted on
    one client (every row is then that client) and raises a ``ValueError`` otherwise. ``client_ids`` is
    metadata in scikit-learn's routing sense: with ``sklearn.set_config(enable_metadata_routing=True)``,
    ``est.set_fit_request(client_ids=True).set_score_request(client_ids=True)`` lets a meta-estimator such
    as ``GridSearchCV`` pass it (split with the rows) to :meth:`fit` and :meth:`score`.
    """

    # ------------------------------------------------------------------ settings
    def _base(self):
        base = getattr(self, "base_estimator", None)
        if base is None:
            base = LowRankSoftmax()
        elif isinstance(base, LowRankSoftmax):  # its own constraints, the error naming where it came from
            try:
                validate_params(base)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"base_estimator: {exc}") from None
        rank = base._rank()
        l2 = float(base.l2)
        lr = float(base.lr)
        bs = None if base.batch_size is None else int(base.batch_size)
        return {"rank": rank, "l2": l2, "lr": lr, "batch_size": bs, "base_features": base.base_features}

    def _features(self, X):
        f = self._base()["base_features"]
        if f is None:
            return X
        Z = np.asarray(f(X), dtype=np.float64)
        if Z.ndim != 2 or Z.shape[0] != X.shape[0]:
            raise ValueError(f"'base_features' must map (n, d) to (n, k); got shape {Z.shape}.")
        return Z

    # ------------------------------------------------------------------ data
    def _check_X(self, X, name="X"):
        """``X`` as a C-contiguous float64 2-d array of finite real numbers, with at least one column.

        scikit-learn's ``check_array`` (its messages for sparse, complex, non-finite, 1-d and empty input),
        with the message naming the argument; strings are a ``TypeError``."""
        if sparse.issparse(X):
            raise TypeError(f"'{name}' must be a dense array: sparse input is not supported (got a sparse "
                            f"{type(X).__name__}); convert it with .toarray().")
        dtype = np.asarray(X).dtype if isinstance(X, (list, tuple)) else getattr(X, "dtype", None)
        if isinstance(dtype, np.dtype) and dtype.kind in "USb":
            return _check_real_2d(X, name)  # TypeError naming the argument and the dtype
        try:
            return check_array(X, dtype=np.float64, order="C", input_name=name)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"'{name}' must be a 2-d array of finite real numbers; {exc}") from exc

    def _check_fit_Xy(self, X, y):
        """Training ``X`` and ``y`` (a column vector ``y`` is flattened with a ``DataConversionWarning``)."""
        if y is None:
            raise ValueError(f"'y' is None: {type(self).__name__} requires y to be passed, but the target y is None.")
        X = self._check_X(X)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        y = self._check_labels(y, X.shape[0])
        if y.dtype.kind in "fiu":
            check_classification_targets(y)  # "Unknown label type: continuous" for a regression target
        return X, y

    def _check_n_features(self, X):
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input ('X' must have the features seen in fit).")

    def _check_client_ids(self, client_ids, n):
        """``client_ids`` checked against ``n`` rows; ``None`` means one client (every row is client 0)."""
        if client_ids is None:
            return np.zeros(n, dtype=np.int64)
        ids = np.asarray(client_ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise ValueError(f"'client_ids' must be 1-d with one entry per row of X ({n}); got shape {ids.shape}.")
        if ids.dtype.kind == "f":
            if not np.all(np.isfinite(ids)) or not np.all(ids == np.round(ids)):
                raise ValueError("'client_ids' must be integers or strings; got non-integral floats.")
            ids = ids.astype(np.int64)
        if ids.dtype.kind not in "iuUSO":
            raise TypeError(f"'client_ids' must contain integers or strings; got dtype {ids.dtype}.")
        if ids.dtype.kind == "O" and ids.size:
            def kind(v):
                if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
                    return "int"
                return "str" if isinstance(v, (str, bytes)) else None

            kinds = [kind(v) for v in ids]
            if None in kinds:
                bad = ids[kinds.index(None)]
                raise TypeError(f"'client_ids' must contain integers or strings; got {bad!r} of type "
                                f"{type(bad).__name__}.")
            if len(set(kinds)) > 1:
                raise TypeError("'client_ids' must be all integers or all strings; got a mix of both.")
        return ids

    def _check_labels(self, y, n):
        """``y`` as a 1-d array of ``n`` class labels: integers, strings or finite floats."""
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"'y' must be 1-d with one label per row of X ({n}); got shape {y.shape}.")
        if y.dtype.kind == "c":
            raise TypeError("'y' must hold class labels (integers, strings or finite floats); got complex values.")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            try:
                _assert_all_finite(y, input_name="y")
            except ValueError as exc:  # scikit-learn's "Input y contains NaN/infinity", naming the argument
                raise ValueError(f"'y' must contain only finite values; {exc}") from None
        return y

    def _split(self, X, y, client_ids):
        """Validate and split by client: sets ``classes_``, ``clients_``, ``n_features_in_``."""
        X, y = self._check_fit_Xy(X, y)
        ids = self._check_client_ids(client_ids, X.shape[0])
        self.classes_, yi = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            k = len(self.classes_)
            raise ValueError(f"'y' must contain at least 2 classes over all clients; got {k} class"
                             f"{'' if k == 1 else 'es'}.")
        self.n_features_in_ = X.shape[1]
        self.clients_, ci = np.unique(ids, return_inverse=True)
        counts = np.bincount(ci, minlength=len(self.clients_))
        if np.any(counts < 2):
            bad = self.clients_[np.argmax(counts < 2)]
            k = int(counts.min())
            raise ValueError(f"every client needs at least 2 training samples; client {bad!r} has {k} sample"
                             f"{'' if k == 1 else 's'} (n_samples={k}).")
        Z = self._features(X)
        Xs = [np.ascontiguousarray(Z[ci == m]) for m in range(len(self.clients_))]
        ys = [yi[ci == m].astype(np.int64) for m in range(len(self.clients_))]
        self.n_samples_per_client_ = counts
        return Xs, ys

    def _client_index(self, client_ids, n, name="client_ids"):
        """Position in ``clients_`` of each row's client; ``None`` is every row the one fitted client."""
        if client_ids is None:
            if len(self.clients_) != 1:
                raise ValueError(f"the model was fitted on {len(self.clients_)} clients: pass '{name}' (the client "
                                 "of each row); it may be None only for a model fitted on one client.")
            return np.zeros(n, dtype=np.intp)
        ids = self._check_client_ids(client_ids, n)
        pos = np.searchsorted(self.clients_, ids)
        pos = np.clip(pos, 0, len(self.clients_) - 1)
        ok = self.clients_[pos] == ids
        if not np.all(ok):
            unknown = sorted({str(v) for v in ids[~ok]})[:5]
            raise ValueError(f"'client_ids' contains clients not seen in fit: {unknown}; known clients are "
                             f"the ones passed to fit (personalised models exist only for them).")
        return pos

    # ------------------------------------------------------------------ training loop
    def _seed(self):
        rs = getattr(self, "random_state", None)
        if rs is None or isinstance(rs, (numbers.Integral, np.integer)):
            return None if rs is None else int(rs)
        return int(check_random_state(rs).integers(2**31))

    def _fedavg(self, theta0, Xs, ys, *, n_rounds, local_epochs, trainable, comm_keys=None, client_fraction=1.0,
                lr, l2, batch_size, rng, client_hook=None, local_update=None, eval_fn=None, server_mix=1.0,
                client_state=()):
        """FedAvg rounds; returns (theta_R, history). ``local_update(round, theta, sel)`` replaces the
        clients' local GD (returns one dict per selected client); ``client_hook(round, theta_prev,
        new_list, sel)`` post-processes them; the server sets ``theta <- (1 - server_mix) theta +
        server_mix * weighted mean``. ``client_state``: the per-client containers (lists or arrays indexed
        by client) that ``local_update`` / ``client_hook`` update by item assignment.

        Anytime: the state after every completed round (``theta``, the history, the rounds' generator and
        copies of ``client_state``) is checkpointed; a ``KeyboardInterrupt`` during a round rolls back to
        the last completed round (:class:`algos._anytime.Interruptible`), sets ``interrupted_`` and warns.
        ``n_rounds_`` is the number of completed rounds. With ``warm_start=True`` a second fit resumes
        from the previous fit's last completed round and runs up to ``n_rounds`` in all."""
        M = len(Xs)
        C = theta0["W"].shape[1]
        comm_keys = trainable if comm_keys is None else comm_keys
        n_comm = _n_floats(theta0, comm_keys)
        weights = np.array([len(y) for y in ys], dtype=np.float64)
        k = M if client_fraction >= 1.0 else max(1, int(round(client_fraction * M)))
        theta, history, total, start = theta0, [], 0, 0
        resume = self._warm_rounds(theta0, n_rounds)
        if resume is not None:
            theta, history, total, start = resume["theta"], list(resume["history"]), resume["total"], resume["round"]
            rng.bit_generator.state = resume["rng"]
            for c, saved in zip(client_state, resume["clients"]):
                c[:] = saved
        run = Interruptible(type(self).__name__)

        def checkpoint(done):
            run.checkpoint(round=done, theta=theta, n_history=len(history), total=total,
                           rng=rng.bit_generator.state, clients=[_copy_container(c) for c in client_state])

        checkpoint(start)
        with run:
            for t in range(start + 1, n_rounds + 1):
                sel = np.arange(M) if k == M else np.sort(rng.choice(M, size=k, replace=False))
                if local_update is not None:
                    new = local_update(t, theta, sel)
                else:
                    rngs = None
                    if batch_size is not None:
                        rngs = [np.random.default_rng(rng.integers(2**63)) for _ in sel]
                    new = _train_clients([theta] * len(sel), [Xs[i] for i in sel], [ys[i] for i in sel],
                                         n_classes=C, epochs=local_epochs, lr=lr, l2=l2, trainable=trainable,
                                         batch_size=batch_size, rngs=rngs)
                if client_hook is not None:
                    new = client_hook(t, theta, new, sel)
                avg = _weighted_mean(new, weights[sel])
                if server_mix == 1.0:
                    theta_new = avg
                else:
                    theta_new = {k: (1.0 - server_mix) * theta[k] + server_mix * avg[k] for k in theta}
                sent = 2 * len(sel) * n_comm * BYTES_PER_FLOAT
                entry = {"round": t, "clients": int(len(sel)), "bytes_sent": int(sent),
                         "cumulative_bytes": int(total + sent)}
                if eval_fn is not None:
                    entry["train_accuracy"] = float(eval_fn(theta_new))
                theta, total = theta_new, total + sent
                history.append(entry)
                checkpoint(t)
        state = run.state  # the last completed round (the end of the loop unless interrupted)
        theta, total = state["theta"], state["total"]
        del history[state["n_history"]:]
        rng.bit_generator.state = state["rng"]
        for c, saved in zip(client_state, state["clients"]):
            c[:] = saved
        self.n_rounds_ = int(state["round"])
        self._rounds_state_ = {"round": self.n_rounds_, "theta": theta, "history": list(history), "total": total,
                               "rng": state["rng"], "clients": state["clients"],
                               "shapes": {k: np.shape(v) for k, v in theta0.items()}, "n_clients": M,
                               "clients_": np.array(self.clients_, copy=True),
                               "classes_": np.array(self.classes_, copy=True)}
        run.finish(self, f"after {self.n_rounds_} of {n_rounds} rounds")
        if not all(np.all(np.isfinite(v)) for v in theta.values()):  # e.g. a custom local update diverged
            _check_diverged(list(theta.values()), lr, np.concatenate(Xs))
        return theta, history

    def _warm_rounds(self, theta0, n_rounds):
        """The previous fit's round state when ``warm_start`` is set and a previous fit exists, else None."""
        warm = getattr(self, "warm_start", False)
        prev = getattr(self, "_rounds_state_", None)
        if not warm or prev is None:
            return None
        same = (prev["shapes"] == {k: np.shape(v) for k, v in theta0.items()}
                and np.array_equal(prev["clients_"], self.clients_) and np.array_equal(prev["classes_"], self.classes_))
        if not same:
            raise ValueError("warm_start=True resumes the previous fit's rounds: the clients, classes, features "
                             "and adapter rank must be those of the previous fit; set warm_start=False to start "
                             "afresh.")
        if n_rounds < prev["round"]:
            raise ValueError(f"'n_rounds' must be at least the {prev['round']} rounds already run when "
                             f"warm_start=True (it counts all rounds); got {n_rounds}.")
        return prev

    def _global_accuracy_fn(self, Xs, ys):
        X = np.concatenate(Xs)
        y = np.concatenate(ys)

        def acc(theta):
            return float(np.mean(np.argmax(X @ _effective_weights(theta) + theta["b"], axis=1) == y))

        return acc

    def _final_broadcast(self, history, theta, keys, M):
        sent = M * _n_floats(theta, keys) * BYTES_PER_FLOAT
        total = (history[-1]["cumulative_bytes"] if history else 0) + sent
        history.append({"round": "final broadcast", "clients": int(M), "bytes_sent": int(sent),
                        "cumulative_bytes": int(total)})

    # ------------------------------------------------------------------ prediction
    def _cid(self, m):
        c = self.clients_[m]
        return c.item() if hasattr(c, "item") else c

    def _model_of(self, m):
        """Deployed parameters of client index ``m``: its personalised model if any, else the global one."""
        pm = getattr(self, "personalized_models_", None)
        if pm:
            return pm[self._cid(m)]
        return self.federated_model_

    def decision_function(self, X, client_ids=None):
        """Logits of each row under its client's deployed model; for two classes the margin of the second.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row; each must have been seen by :meth:`fit`. ``None``: every row is the one
            client of a model fitted on one client (a ``ValueError`` when it was fitted on several).

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            The logits; for two classes the margin ``logit_1 - logit_0`` of ``classes_[1]`` (the
            scikit-learn convention: positive means ``classes_[1]``).
        """
        Z = self._logits(X, client_ids)
        return Z[:, 1] - Z[:, 0] if len(self.classes_) == 2 else Z

    def _logits(self, X, client_ids):
        """Logits ``(n, n_classes)`` of each row under its client's deployed model."""
        check_is_fitted(self, "clients_")
        X = self._check_X(X)
        self._check_n_features(X)
        pos = self._client_index(client_ids, X.shape[0])
        Z = self._features(X)
        out = np.empty((X.shape[0], len(self.classes_)))
        for m in np.unique(pos):
            rows = pos == m
            out[rows] = predict_logits(self._model_of(int(m)), Z[rows])
        return out

    def predict_proba(self, X, client_ids=None):
        r"""Class probabilities of each row under its client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row; each must have been seen by :meth:`fit`. ``None``: every row is the one
            client of a model fitted on one client (a ``ValueError`` when it was fitted on several).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, in the order of ``classes_``.
        """
        return _softmax(self._logits(X, client_ids))[0]

    def predict(self, X, client_ids=None):
        r"""Predicted class of each row under its client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row; each must have been seen by :meth:`fit`. ``None``: every row is the one
            client of a model fitted on one client (a ``ValueError`` when it was fitted on several).

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels.
        """
        Z = self._logits(X, client_ids)
        return self.classes_[np.argmax(Z, axis=1)]

    def _check_true_labels(self, y, n):
        """Labels to score against: 1-d, one per row, of the kind of ``classes_`` (numbers or strings)."""
        check_is_fitted(self, "clients_")
        y = self._check_labels(y, n)
        numeric = self.classes_.dtype.kind in "iufb"
        if y.size and y.dtype.kind in "iufbUS" and (y.dtype.kind in "iufb") != numeric:
            seen, got = ("numbers", "strings") if numeric else ("strings", "numbers")
            raise TypeError(f"'y' must hold labels of the kind seen in fit ({seen}); got {got} (dtype {y.dtype}).")
        return y

    def score(self, X, y, client_ids=None):
        """Mean accuracy of the per-client predictions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.
        y : array-like of shape (n_samples,)
            True labels.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row; each must have been seen by :meth:`fit`. ``None``: every row is the one
            client of a model fitted on one client (a ``ValueError`` when it was fitted on several).

        Returns
        -------
        float
            Accuracy over all rows.
        """
        pred = self.predict(X, client_ids)
        return float(np.mean(pred == self._check_true_labels(y, pred.shape[0])))

    def client_scores(self, X, y, client_ids=None):
        """Dict client -> accuracy on that client's rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.
        y : array-like of shape (n_samples,)
            True labels.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row; each must have been seen by :meth:`fit`. ``None``: every row is the one
            client of a model fitted on one client (a ``ValueError`` when it was fitted on several).

        Returns
        -------
        dict
            Client id to accuracy on that client's rows.
        """
        n = self._check_X(X).shape[0]
        if client_ids is None:
            check_is_fitted(self, "clients_")
            ids = self.clients_[self._client_index(None, n)]
        else:
            ids = self._check_client_ids(client_ids, n)
        pred = self.predict(X, ids)
        y = self._check_true_labels(y, pred.shape[0])
        return {c.item() if hasattr(c, "item") else c: float(np.mean(pred[ids == c] == y[ids == c]))
                for c in np.unique(ids)}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = getattr(self, "random_state", 0) is None
        return tags
