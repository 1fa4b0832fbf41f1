"""Ensembles of sequence labellers by averaged token marginals: :class:`MarginalAveraging`.

This is the confidence-weighted ensemble of Marcheggiani (2014, section 2.2.4):
every member gives, per token and chain, the marginal probability of each label,
``p_m(y_t = j | x)`` -- the thesis reads it as the member's confidence in that
label -- and the ensemble's marginal is their average (eq. 2.4), its label the
most probable one under that average (eq. 2.5).  Members may have different label
sets: the average runs over the union of their labels, a member giving
probability 0 to a label it does not know.
"""
import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from skfcrf.ensemble._members import has_marginals, member_classes, member_marginals, one_chain
from skfcrf.metrics import joint_accuracy

__all__ = ["MarginalAveraging", "average_marginals"]


def average_marginals(marginals, weights, weighting="mean"):
    """Combine the members' marginals of one token block (one chain of one sequence).

    Parameters
    ----------
    marginals : list of ndarray of shape (n_tokens, n_labels)
        Per member its marginals over the same labels (rows sum to 1).
    weights : array-like of float
        One non-negative weight per member, summing to 1.
    weighting : {"mean", "confidence"}, default="mean"
        ``"mean"``: ``p(j) = sum_m w_m p_m(j)`` -- eq. 2.4 of Marcheggiani (2014)
        with equal weights.  ``"confidence"``: each member's weight at a token is
        also scaled by its confidence there, its largest marginal ``c_m = max_j
        p_m(j)``: ``p(j) = sum_m w_m c_m p_m(j) / sum_m w_m c_m``.

    Returns
    -------
    ndarray of shape (n_tokens, n_labels)
        Rows sum to 1.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.array([[0.9, 0.1]]), np.array([[0.4, 0.6]])
    >>> average_marginals([a, b], [0.5, 0.5]).round(3).tolist()
    [[0.65, 0.35]]
    >>> average_marginals([a, b], [0.5, 0.5], "confidence").round(3).tolist()
    [[0.7, 0.3]]
    """
    if weighting == "mean":
        return sum(w * m for w, m in zip(weights, marginals))
    scaled = [w * m.max(axis=1, keepdims=True) for w, m in zip(weights, marginals)]
    total = sum(scaled)
    total = np.where(total > 0, total, 1.0)  # only all-zero weights at a token; kept 0
    return sum(s * m for s, m in zip(scaled, marginals)) / total


class MarginalAveraging(BaseEstimator):
    """Average the token marginals of several models and decode the average.

    Parameters
    ----------
    estimators : list of estimators
        The members, fitted (``fit`` fits a clone of each) on the same raw ``X``
        and ``y``: :class:`~skfcrf.FactorialCRF` with different objectives,
        features support or seeds, a :class:`TwoStage` model, or a
        :class:`~sklearn.pipeline.Pipeline` of its own feature transformers
        ending in one, so that each member may see different observations of the
        same tokens.  To combine models fitted elsewhere, wrap them in
        :class:`sklearn.frozen.FrozenEstimator` (``fit`` then leaves them as they
        are).
    weights : array-like of float, optional
        One non-negative weight per member (default: equal weights), normalised
        to sum to 1.
    weighting : {"mean", "confidence"}, default="mean"
        How the members' marginals are combined at each token and chain
        (:func:`average_marginals`).  ``"mean"``: their weighted average --
        with equal weights eq. 2.4 of Marcheggiani (2014), whose "confidence"
        is the marginal itself.  ``"confidence"``: each member's weight is also
        multiplied, token by token, by its largest marginal there, so a member
        counts more where it is sure (an option beyond the thesis).

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
    ...                          FactorialCRF(objective="likelihood", max_iter=30)],
    ...                         weighting="confidence").fit(X, y)
    >>> ens.predict(X)[0].tolist()
    ['DT', 'NN']
    """

    _parameter_constraints = {
        "estimators": [list, tuple],
        "weights": ["array-like", None],
        "weighting": [StrOptions({"mean", "confidence"})],
    }

    def __init__(self, estimators, weights=None, weighting="mean"):
        self.estimators = estimators
        self.weights = weights
        self.weighting = weighting

    def _check_params(self):
        self._validate_params()
        if not self.estimators:
            raise ValueError("estimators must be a non-empty list of estimators")
        for est in self.estimators:
            if not has_marginals(est):
                raise ValueError(f"{type(est).__name__} has no predict_marginals (nor is it a "
                                 "Pipeline whose last step has)")
        if self.weights is None:
            return np.full(len(self.estimators), 1.0 / len(self.estimators))
        try:
            w = np.asarray(self.weights, dtype=float)
        except (TypeError, ValueError):
            w = None
        if w is None or w.shape != (len(self.estimators),) or not np.all(np.isfinite(w)) \
                or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be one non-negative finite number per estimator, "
                             "not all zero")
        return w / w.sum()

    def fit(self, X, y):
        """Fit a clone of every member on ``X, y``.

        Parameters
        ----------
        X : list of sequences
            The input every member takes: observations, or raw tokens when the
            members are pipelines with their own transformers.
        y : list of label sequences

        Returns
        -------
        self
        """
        self._weights = self._check_params()
        X = list(X)
        self.estimators_ = [clone(est).fit(X, y) for est in self.estimators]
        classes = [member_classes(est) for est in self.estimators_]
        chains = {len(c) for c in classes}
        if len(chains) != 1:
            raise ValueError(f"members were fitted with different numbers of chains: {chains}")
        self.n_chains_ = chains.pop()
        self.classes_ = [np.array(sorted({lab for c in classes for lab in c[chain]}), dtype=object)
                         for chain in range(self.n_chains_)]
        self._member_classes = classes
        self._one_chain = one_chain(self.estimators_[0])
        return self

    def predict_marginals(self, X):
        """Combined marginals: per sequence, per chain ``(n_tokens, len(classes_[c]))``."""
        check_is_fitted(self, "estimators_")
        X = list(X)
        per_member = []
        for est, classes in zip(self.estimators_, self._member_classes):
            per_member.append([[self._align(m[c], classes[c], c) for c in range(self.n_chains_)]
                               for m in member_marginals(est, X)])
        return [[average_marginals([member[s][c] for member in per_member], self._weights,
                                   self.weighting)
                 for c in range(self.n_chains_)] for s in range(len(X))]

    def _align(self, marginals, member_classes, chain):
        cols = np.searchsorted(self.classes_[chain], member_classes)
        out = np.zeros((marginals.shape[0], len(self.classes_[chain])))
        out[:, cols] = marginals
        return out

    def predict(self, X):
        """Per token and chain the label of largest combined marginal (eq. 2.5; ties: first label)."""
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags

