"""Ensembles of sequence labellers by averaged token marginals.

:class:`MarginalAveraging` is the confidence-weighted ensemble of Marcheggiani
(2014, section 2.2.4): every member gives, per token and chain, the marginal
probability of each label, ``p_m(y_t = j | x)``; the ensemble's marginal is
their (weighted) average and its label the most probable one under that
average.  Members may have different label sets: the average runs over the
union of their labels, a member giving probability 0 to a label it does not
know.

Members are any estimators with ``predict_marginals`` and ``classes_`` as
:class:`~skfcrf.FactorialCRF` has, fitted on the same observation input.  To
combine models fitted elsewhere, wrap them in
:class:`sklearn.frozen.FrozenEstimator` (``fit`` then leaves them as they are).
"""
import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from skfcrf.metrics import joint_accuracy

__all__ = ["MarginalAveraging"]


class MarginalAveraging(BaseEstimator):
    """Average the token marginals of several models and decode the average.

    Parameters
    ----------
    estimators : list of estimators
        The members (e.g. :class:`~skfcrf.FactorialCRF` with different
        objectives, features support or seeds). ``fit`` fits a clone of each.
    weights : array-like of float, optional
        One non-negative weight per member (default: equal weights).

    Attributes
    ----------
    estimators_ : list
        The fitted members.
    classes_ : list of ndarray
        Per chain the union of the members' labels (sorted).
    n_chains_ : int

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> from skfcrf.ensemble import MarginalAveraging
    >>> X = [[["w=the"], ["w=cat"]], [["w=a"], ["w=dog"]]]
    >>> y = [["DT", "NN"], ["DT", "NN"]]
    >>> ens = MarginalAveraging([FactorialCRF(max_iter=30),
    ...                          FactorialCRF(objective="likelihood", max_iter=30)]).fit(X, y)
    >>> ens.predict(X)[0].tolist()
    ['DT', 'NN']
    """

    def __init__(self, estimators, weights=None):
        self.estimators = estimators
        self.weights = weights

    def _check_params(self):
        if not isinstance(self.estimators, (list, tuple)) or not self.estimators:
            raise ValueError("estimators must be a non-empty list of estimators")
        for est in self.estimators:
            if not hasattr(est, "predict_marginals"):
                raise ValueError(f"{type(est).__name__} has no predict_marginals")
        if self.weights is None:
            return np.full(len(self.estimators), 1.0 / len(self.estimators))
        w = np.asarray(self.weights, dtype=float)
        if w.shape != (len(self.estimators),) or not np.all(np.isfinite(w)) or np.any(w < 0) \
                or w.sum() <= 0:
            raise ValueError("weights must be one non-negative finite number per estimator, "
                             "not all zero")
        return w / w.sum()

    def fit(self, X, y):
        """Fit a clone of every member on ``X, y``."""
        self._weights = self._check_params()
        X = list(X)
        self.estimators_ = [clone(est).fit(X, y) for est in self.estimators]
        chains = {len(est.classes_) for est in self.estimators_}
        if len(chains) != 1:
            raise ValueError(f"members were fitted with different numbers of chains: {chains}")
        self.n_chains_ = chains.pop()
        self.classes_ = [np.array(sorted({lab for est in self.estimators_
                                          for lab in est.classes_[c]}), dtype=object)
                         for c in range(self.n_chains_)]
        self._one_chain = bool(getattr(self.estimators_[0], "_one_chain", False))
        return self

    def predict_marginals(self, X):
        """Averaged marginals: per sequence, per chain ``(n_tokens, len(classes_[c]))``."""
        check_is_fitted(self, "estimators_")
        X = list(X)
        total = None
        for w, est in zip(self._weights, self.estimators_):
            marg = est.predict_marginals(X)
            aligned = [[self._align(m[c], est.classes_[c], c) for c in range(self.n_chains_)]
                       for m in marg]
            if total is None:
                total = [[w * a for a in seq] for seq in aligned]
            else:
                for seq_total, seq in zip(total, aligned):
                    for c in range(self.n_chains_):
                        seq_total[c] += w * seq[c]
        return total

    def _align(self, marginals, member_classes, chain):
        cols = np.searchsorted(self.classes_[chain], member_classes)
        out = np.zeros((marginals.shape[0], len(self.classes_[chain])))
        out[:, cols] = marginals
        return out

    def predict(self, X):
        """Per token and chain the label of largest averaged marginal (ties: first label)."""
        out = []
        for seq in self.predict_marginals(X):
            labels = np.empty((seq[0].shape[0] if seq else 0, self.n_chains_), dtype=object)
            for c, m in enumerate(seq):
                labels[:, c] = self.classes_[c][np.argmax(m, axis=1)]
            out.append(labels[:, 0].copy() if self._one_chain else labels)
        return out

    def score(self, X, y):
        """Joint accuracy: the fraction of tokens at which every chain is right."""
        return joint_accuracy(y, self.predict(X))
