"""What the two alpha-vector solvers (:class:`PBVI`, :class:`PointBasedSolver`) share once fitted: the
not-fitted check, the lower bound at a belief and the greedy action of the lower-bound vectors."""

from __future__ import annotations

import numpy as np

from .._beliefs import check_belief


class AlphaBoundsMixin:
    """``value`` and ``policy`` of a solver whose fit sets ``alphas_`` (n, S) and ``actions_`` (n,)."""

    def _check_fitted(self):
        if not hasattr(self, "alphas_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(pomdp) first.")

    def value(self, b):
        """Lower bound ``max_alpha b . alpha`` at belief ``b``.

        Parameters
        ----------
        b : array-like of shape (S,)
            A belief.

        Returns
        -------
        float
            The lower bound.
        """
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        return float((self.alphas_ @ b).max())

    def policy(self, b):
        """Action of the best lower-bound vector at ``b`` (lowest index on ties).

        Parameters
        ----------
        b : array-like of shape (S,)
            A belief.

        Returns
        -------
        int
            The action.
        """
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        return int(self.actions_[int(np.argmax(self.alphas_ @ b))])
