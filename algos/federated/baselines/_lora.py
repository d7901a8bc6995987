"""Personalised-FL baselines on the low-rank adapter: FedRep, FedIT, FFA-LoRA, FedSA-LoRA (see
:mod:`algos.federated.baselines`)."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from .._model import _train_clients, local_train
from ._base import _LoRABaseline, _round_constraints


class FedRepClassifier(_LoRABaseline):
    """FedRep (Collins et al. 2021) on the adapter: body :math:`\\phi = A` shared and averaged, head
    ``B, b`` local; per round ``head_epochs`` epochs on the head (body fixed), then ``body_epochs`` on the
    body (head fixed). Deployed: final body with each client's head (refreshed once on the final body).
    Communicates ``A`` only.

    Parameters
    ----------
    head_epochs : int, default=5
        Epochs on the local head per round, at least 1.
    body_epochs : int, default=1
        Epochs on the shared body per round, at least 1.
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(
        "local_epochs", rank=True, body_epochs=[Interval(Integral, 0, None, closed="left")],
        head_epochs=[Interval(Integral, 0, None, closed="left")])

    def __init__(self, *, head_epochs=5, body_epochs=1, rank=8, base_estimator=None, n_rounds=50, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.head_epochs = head_epochs
        self.body_epochs = body_epochs
        self.rank = rank
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        he = int(self.head_epochs)
        be = int(self.body_epochs)
        heads = [{"B": theta0["B"], "b": theta0["b"]} for _ in Xs]

        def step(body, i, epochs_head):
            p = {"W": body["W"], "A": body["A"], **heads[i]}
            p = local_train(p, Xs[i], ys[i], n_classes=C, epochs=epochs_head, lr=h["lr"], l2=h["l2"],
                            trainable=("B", "b"))
            heads[i] = {"B": p["B"], "b": p["b"]}
            return p

        def update(t, theta, sel):
            out = []
            for i in sel:
                p = step(theta, i, he)
                p = local_train(p, Xs[i], ys[i], n_classes=C, epochs=be, lr=h["lr"], l2=h["l2"], trainable=("A",))
                out.append(p)
            return out

        def keep_body_only(t, theta_prev, new, sel):
            return [{"W": theta_prev["W"], "A": p["A"], "B": theta_prev["B"], "b": theta_prev["b"]} for p in new]

        federated = self._rounds(h, Xs, ys, theta0, rng, local_update=update, client_hook=keep_body_only,
                                 comm_keys=("A",), client_state=(heads,))
        self._deploy(lambda m: step(federated, m, he), len(Xs))


class FedITClassifier(_LoRABaseline):
    """FedIT: FedAvg of the adapter factors ``A`` and ``B`` (and ``b``) averaged separately; deploys
    the global adapter.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(rank=True)  # the FedAvg parameters, plus the adapter's rank

    def _keys(self):
        return ("b", "A", "B")

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        keys = self._keys()
        self._rounds(h, Xs, ys, theta0, rng, trainable=keys, comm_keys=keys)


class FFALoRAClassifier(FedITClassifier):
    """FFA-LoRA: ``A`` frozen at its (shared-seed) random initialisation; only ``B`` and ``b`` are trained
    and averaged (exact aggregation: the product is linear in ``B``); half the communication of FedIT.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = dict(FedITClassifier._parameter_constraints)  # the same parameters

    def _keys(self):
        return ("b", "B")


class FedSALoRAClassifier(_LoRABaseline):
    """FedSA-LoRA: all adapter factors trained locally each round; ``A`` is averaged by the server,
    ``B`` and ``b`` stay on the client. Deployed: global ``A`` with the client's ``B, b``.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = dict(FedITClassifier._parameter_constraints)  # the same parameters

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        local = [{"B": theta0["B"], "b": theta0["b"]} for _ in Xs]

        def update(t, theta, sel):
            starts = [{"W": theta["W"], "A": theta["A"], **local[i]} for i in sel]
            new = _train_clients(starts, [Xs[i] for i in sel], [ys[i] for i in sel], n_classes=C,
                                 epochs=h["local_epochs"], lr=h["lr"], l2=h["l2"], trainable=("b", "A", "B"))
            for j, i in enumerate(sel):
                local[i] = {"B": new[j]["B"], "b": new[j]["b"]}
            return [{"W": theta["W"], "A": p["A"], "B": theta["B"], "b": theta["b"]} for p in new]

        federated = self._rounds(h, Xs, ys, theta0, rng, local_update=update, comm_keys=("A",),
                                 client_state=(local,))
        self._deploy(lambda m: {"W": federated["W"], "A": federated["A"], **local[m]}, len(Xs))
