"""Shared machinery of the online allocators: the fit / partial_fit / predict protocol, growing
allocation buffers, and the conversion of user item batches to CSR."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._validation import check_array_1d, validate_params
from ._instance import OnlineMatchingInstance, _canonical_classes, as_instance

__all__ = ["OnlineAllocatorMixin", "as_item_batch"]


def as_item_batch(items, n_agents):
    """Convert a user batch of items to canonical item-major CSR ``(indptr, indices)``.

    Accepted forms: an :class:`OnlineMatchingInstance` (its items, in order); a 1-d array-like of
    agent ids (one item; an empty list is one item with no neighbours); a sequence of such arrays
    (several items). Neighbour lists are sorted and de-duplicated; ids must lie in
    ``[0, n_agents)``.
    """
    if isinstance(items, OnlineMatchingInstance):
        if items.n_agents != n_agents:
            raise ValueError(
                f"the instance has n_agents={items.n_agents} but the estimator was started with "
                f"n_agents={n_agents}."
            )
        return np.asarray(items.indptr), np.asarray(items.indices)
    if isinstance(items, (str, bytes)):
        raise TypeError(f"'item_neighbors' must be agent ids or a list of them; got {type(items).__name__}.")
    if isinstance(items, np.ndarray) and items.ndim == 1 and items.dtype != object:
        batch = [items]
    elif isinstance(items, (list, tuple)) and (
        len(items) == 0 or all(np.ndim(v) == 0 and not isinstance(v, (list, tuple)) for v in items)
    ):
        batch = [np.asarray(items)]
    else:
        try:
            batch = list(items)
        except TypeError as exc:
            raise TypeError(
                f"'item_neighbors' must be agent ids or a list of them; got {type(items).__name__}."
            ) from exc
    inst = OnlineMatchingInstance(n_agents, np.zeros(n_agents, dtype=np.int64), batch)
    return np.asarray(inst.indptr), np.asarray(inst.indices)


class _GrowingCSR:
    """Item-major CSR buffers with amortised O(1) appends (capacity doubling)."""

    def __init__(self, dtype=np.float64):
        self.indptr = np.zeros(1, dtype=np.int64)
        self.n_items = 0
        self._indices = np.zeros(16, dtype=np.int64)
        self._data = np.zeros(16, dtype=dtype)

    @property
    def nnz(self):
        return int(self.indptr[self.n_items])

    def reserve(self, indptr, indices):
        """Append the structure of a batch and return the (writable) data slice for it.

        The first batch of an immutable instance (read-only arrays, as ``fit`` passes them) is
        shared, not copied; the buffers are copied on the next append.
        """
        m, e = indptr.shape[0] - 1, indices.shape[0]
        if self.n_items == 0 and not indptr.flags.writeable and not indices.flags.writeable:
            self.indptr, self._indices = indptr, indices
            self._data = np.zeros(e, dtype=self._data.dtype)
            self.n_items = m
            return self._data
        if not self.indptr.flags.writeable:  # leave the shared instance arrays untouched
            self.indptr = self.indptr.copy()
            self._indices = self._indices.copy()
        start = self.nnz
        need = start + e
        if need > self._indices.shape[0]:
            cap = max(need, 2 * self._indices.shape[0])
            self._indices = np.concatenate([self._indices[:start], np.zeros(cap - start, np.int64)])
            self._data = np.concatenate([self._data[:start], np.zeros(cap - start, self._data.dtype)])
        self._indices[start:need] = indices
        self._data[start:need] = 0
        if self.n_items + m + 1 > self.indptr.shape[0]:
            cap = max(self.n_items + m + 1, 2 * self.indptr.shape[0])
            grown = np.zeros(cap, dtype=np.int64)
            grown[: self.n_items + 1] = self.indptr[: self.n_items + 1]
            self.indptr = grown
        self.indptr[self.n_items + 1 : self.n_items + m + 1] = start + indptr[1:]
        self.n_items += m
        return self._data[start:need]

    def rows(self, start, n_agents):
        """Dense (items x agents) block of the items ``start..n_items-1`` (cost: that block only)."""
        out = np.zeros((self.n_items - start, n_agents), dtype=self._data.dtype)
        for t in range(start, self.n_items):
            lo, hi = self.indptr[t], self.indptr[t + 1]
            out[t - start, self._indices[lo:hi]] = self._data[lo:hi]
        return out

    def matrix(self, n_agents):
        m, nnz = self.n_items, self.nnz
        return sp.csc_array(
            (self._data[:nnz].copy(), self._indices[:nnz].copy(), self.indptr[: m + 1].copy()),
            shape=(n_agents, m),
        )


class OnlineAllocatorMixin:
    """fit / partial_fit / predict for online allocators.

    Hyper-parameters are checked by ``validate_params`` against the subclass's
    ``_parameter_constraints`` (the one statement of each rule) before any work; a subclass overrides
    ``_check_unconstrained()`` only for a rule the constraints cannot say. Subclasses implement
    ``_start(n_agents, agent_class, n_classes)`` (create the algorithm state; the mixin has set
    ``n_agents_``, ``agent_class_``, ``n_classes_`` and ``self._rng``) and
    ``_step(indptr, indices, data)`` (process a batch of items in arrival order, writing the
    allocated mass of each edge into ``data``, which is aligned with ``indices``, and updating the
    fitted state such as ``agent_load_`` and ``class_utility_``).
    """

    def _check_unconstrained(self):
        """Rules of parameters declared ``"no_validation"`` (none by default)."""

    def _start(self, n_agents, agent_class, n_classes):  # pragma: no cover - overridden
        raise NotImplementedError

    def _step(self, indptr, indices, data):  # pragma: no cover - overridden
        raise NotImplementedError

    # ------------------------------------------------------------------ protocol
    def _initialise(self, n_agents, agent_class):
        from .._validation import check_random_state

        self._check_unconstrained()
        self.n_agents_ = int(n_agents)
        self.agent_class_, self.n_classes_ = _canonical_classes(agent_class, self.n_agents_)
        self._rng = check_random_state(getattr(self, "random_state", None))
        self._alloc = _GrowingCSR()
        self._start(self.n_agents_, self.agent_class_, self.n_classes_)

    def fit(self, instance, y=None):
        """Run the online algorithm over the whole stream of ``instance``.

        Parameters
        ----------
        instance : OnlineMatchingInstance
        y : ignored

        Returns
        -------
        self
        """
        validate_params(self)
        instance = as_instance(instance)
        self._initialise(instance.n_agents, instance.agent_class)
        self._run(np.asarray(instance.indptr), np.asarray(instance.indices))
        return self

    def partial_fit(self, item_neighbors, agent_class=None):
        """Process newly arrived items, truly online (decisions are never revisited).

        Parameters
        ----------
        item_neighbors : array-like of int, list of array-likes, or OnlineMatchingInstance
            One item (a 1-d list of agent ids), several items (a list of such lists) or an
            instance (its items; on the first call its classes are used).
        agent_class : array-like of int, shape (n_agents,), optional
            Required on the first call unless ``item_neighbors`` is an instance; ignored later.

        Returns
        -------
        self
        """
        validate_params(self)
        if not hasattr(self, "n_agents_"):
            if isinstance(item_neighbors, OnlineMatchingInstance):
                agent_class = item_neighbors.agent_class if agent_class is None else agent_class
            if agent_class is None:
                raise ValueError(
                    "'agent_class' must be given on the first call to partial_fit (it fixes the agents "
                    "and their classes); got None."
                )
            agent_class = check_array_1d(agent_class, "agent_class")
            self._initialise(agent_class.shape[0], agent_class)
        indptr, indices = as_item_batch(item_neighbors, self.n_agents_)
        self._run(indptr, indices)
        return self

    def predict(self, item_neighbors):
        """Allocate newly arrived items (this *is* an online step: it calls :meth:`partial_fit`).

        Parameters
        ----------
        item_neighbors : array-like of int, list of array-likes, or OnlineMatchingInstance
            One item (a 1-d list of agent ids), several items (a list of such lists) or an
            instance (its items), as in :meth:`partial_fit`.

        Returns
        -------
        ndarray of shape (n_agents,) for one item, or (n_new_items, n_agents) for a batch
            The mass each agent receives from each new item.
        """
        self._check_fitted()
        single = not isinstance(item_neighbors, OnlineMatchingInstance) and (
            (isinstance(item_neighbors, np.ndarray) and item_neighbors.ndim == 1 and item_neighbors.dtype != object)
            or (
                isinstance(item_neighbors, (list, tuple))
                and all(np.ndim(v) == 0 and not isinstance(v, (list, tuple)) for v in item_neighbors)
            )
        )
        start = self._alloc.n_items
        self.partial_fit(item_neighbors)
        X = self._alloc.rows(start, self.n_agents_)
        return X[0] if single else X

    def _run(self, indptr, indices):
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        data = self._alloc.reserve(indptr, indices)
        self._step(indptr, indices, data)
        self.n_items_seen_ = self._alloc.n_items

    def _check_fitted(self):
        if not hasattr(self, "n_agents_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' or 'partial_fit' first."
            )

    # ------------------------------------------------------------------ results
    @property
    def allocation_(self):
        """Allocation so far, ``scipy.sparse.csc_array`` of shape (n_agents, n_items_seen)."""
        self._check_fitted()
        return self._alloc.matrix(self.n_agents_)

    @property
    def usw_(self):
        """Total allocated mass (utilitarian social welfare) so far."""
        self._check_fitted()
        return float(np.sum(self.agent_load_))


class _FairMatchingEstimator(OnlineAllocatorMixin, BaseEstimator):
    """Base class of the package's online allocators (scikit-learn estimator contract)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = False
        return tags
