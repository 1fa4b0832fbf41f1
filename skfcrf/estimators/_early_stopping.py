"""Early stopping on held-out sequences, with scikit-learn's parameter names.

``fit`` with ``early_stopping=True`` sets a random ``validation_fraction`` of the
training sequences aside, scores the current weights on them every
``validation_interval`` solver iterations (and once more at the end), keeps the
best weights, and stops when ``n_iter_no_change`` consecutive validation scores
bring no improvement.  (The thesis evaluated held-out accuracy every 5
iterations, section 6.7: it peaks long before the training loss converges.)
"""
import numpy as np
from sklearn.model_selection import train_test_split

from skfcrf.metrics import make_chain_scorer

__all__ = ["EarlyStopping", "validation_split", "validation_scorer"]


def validation_split(n_sequences, fraction, random_state):
    """Indices ``(train, validation)`` of a random split of the sequences."""
    n_val = int(np.ceil(fraction * n_sequences))
    if n_sequences < 2 or n_val < 1 or n_val >= n_sequences:
        raise ValueError(
            f"early_stopping: validation_fraction={fraction} of {n_sequences} sequences leaves "
            "no sequence for training or none for validation"
        )
    return train_test_split(np.arange(n_sequences), test_size=n_val,
                            random_state=random_state)


def validation_scorer(scoring):
    """A scorer ``f(estimator, X, y) -> float`` (greater is better) from ``validation_scoring``.

    None: joint accuracy (``estimator.score``); a name of
    :func:`skfcrf.metrics.make_chain_scorer`; or a scorer callable.
    """
    if scoring is None:
        return lambda estimator, X, y: estimator.score(X, y)
    if isinstance(scoring, str):
        return make_chain_scorer(scoring)
    return scoring


class EarlyStopping:
    """A solver callback scoring held-out data every ``interval`` iterations.

    Parameters
    ----------
    estimator : FactorialCRF
        Its ``coef_`` is set to the weights being scored.
    X, y : lists of sequences
        The held-out data.
    scorer : callable
        ``scorer(estimator, X, y) -> float``, greater is better.
    interval, patience : int
        Score every ``interval`` iterations; stop after ``patience`` scores in
        a row without improvement.
    """

    def __init__(self, estimator, X, y, scorer, interval, patience):
        self.estimator = estimator
        self.X = X
        self.y = y
        self.scorer = scorer
        self.interval = interval
        self.patience = patience
        self.scores = []
        self.best_score = -np.inf
        self.best_coef = None
        self.best_iteration = 0
        self.last_scored = None  # no weights scored yet (not even iteration 0's)
        self.triggered = False
        self._no_change = 0

    def score(self, iteration, coef):
        """Score ``coef`` on the held-out data and remember it if it is the best."""
        self.estimator.coef_ = np.array(coef)
        value = float(self.scorer(self.estimator, self.X, self.y))
        self.scores.append(value)
        self.last_scored = iteration
        if value > self.best_score:
            self.best_score, self.best_coef, self.best_iteration = value, np.array(coef), iteration
            self._no_change = 0
        else:
            self._no_change += 1
        return value

    def __call__(self, iteration, loss, coef):
        if iteration % self.interval:
            return False
        self.score(iteration, coef)
        self.triggered = self._no_change >= self.patience
        return self.triggered
