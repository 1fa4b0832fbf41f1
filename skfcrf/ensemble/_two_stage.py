"""Two-stage (cascaded) labelling: :class:`TwoStage`.

Marcheggiani (2014, section 2.2.3) tags clauses first and gives the clauses the
first stage kept to a token-level CRF.  Here the first stage is any model of some
of the chains (the coarse or easy ones: the sentence chain of a dictation, the
POS tags of a sentence), and its predictions -- labels, or marginals -- become
observations of every token for a second model of all the chains, which may so
correct the first stage.  The second stage is trained on *cross-fitted* first-stage
outputs: each training sequence gets the outputs of a first-stage model that did
not see it, so the second stage learns how far the first stage can be trusted on
new text, not on the text it memorised.  At prediction the first stage is the one
fitted on all the training data.
"""
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import KFold, check_cv
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from skfcrf._validation import check_label_sequences
from skfcrf.ensemble._members import (
    has_marginals,
    member_classes,
    member_marginals,
    split_pipeline,
    transform_steps,
)
from skfcrf.estimators._observations import _is_matrix
from skfcrf.metrics import joint_accuracy
from skfcrf.transformers import NGramWindow

__all__ = ["TwoStage"]

#: A first-stage marginal below this is not passed on as an observation (with
#: ``first_output="marginals"`` and named observations): it would add a feature
#: per rare label and token for no evidence.
MIN_MARGINAL = 0.01


class TwoStage(BaseEstimator):
    """A second model of all the chains that observes a first model's predictions.

    ``fit`` (1) fits a clone of ``first`` on the ``first_chains`` of ``y`` for
    every ``cv`` split and has it label the held-out sequences, so that every
    training sequence gets first-stage outputs from a model that did not see it;
    (2) refits ``first`` on all the data (``first_``, used at prediction); (3) adds
    the cross-fitted outputs to the second stage's observations of every token and
    fits ``second`` on all the chains of ``y``.

    The first stage's outputs are observations named
    ``stage1[chain{c}]={label}``, ``c`` the chain's index in ``y``: value 1 for
    the predicted label (``first_output="labels"``) or the label's marginal
    probability (``"marginals"``; those below ``MIN_MARGINAL`` = 0.01 are left
    out); those of the token at offset ``o != 0`` from it are named
    ``stage1[chain{c}]@{o}={label}``.  When the second stage's observations are
    matrices, one column per offset, chain and label of ``first_.classes_`` is
    appended instead.

    Parameters
    ----------
    first : estimator
        The first stage: a :class:`~skfcrf.FactorialCRF`, or a
        :class:`~sklearn.pipeline.Pipeline` of feature transformers ending in
        one, over the raw ``X``.  It is fitted on chains ``first_chains`` of
        ``y`` (given as 2-D label arrays).
    second : estimator
        The second stage, a :class:`~skfcrf.FactorialCRF` or a pipeline ending
        in one over the same raw ``X``; it predicts all the chains of ``y``.  A
        pipeline's transformers are fitted on ``X`` and the first stage's
        observations are added to their output, before its last step.
    first_chains : int or list of int, optional
        The chains of ``y`` the first stage predicts (default: all of them).
    cv : int, cross-validation generator or iterable, default=5
        The cross-fitting splits (:func:`sklearn.model_selection.check_cv`):
        an int is that many :class:`~sklearn.model_selection.KFold` folds of
        the sequences, shuffled when ``random_state`` is given, in order
        otherwise.  The test folds must hold every sequence exactly once.
    first_output : {"labels", "marginals"}, default="labels"
        What the second stage observes: the first stage's decoded labels, or
        its token marginals (the first stage then needs ``predict_marginals``).
    offsets : tuple of int, default=(0,)
        The tokens, relative to each token, whose first-stage outputs it
        observes: ``(-1, 0, 1)`` adds its neighbours' (as a cascade's window of
        predicted tags).
    ngram_range : tuple (min_n, max_n), default=(1, 1)
        With ``first_output="labels"``, the lengths of the first stage's label
        n-grams each token observes, over runs of consecutive ``offsets`` (as
        :class:`~skfcrf.transformers.NGramWindow` builds them from tags): with
        ``offsets=(-2, -1, 0, 1, 2)`` and ``(1, 3)``, a chunker's window of
        predicted POS unigrams, bigrams and trigrams.  An n-gram of ``n >= 2``
        labels from offset ``o`` is named
        ``stage1[chain{c}]@{o}..{o+n-1}={label_1}|...|{label_n}``, positions past
        the sequence's ends read ``__BOS__`` / ``__EOS__``; unigrams keep the
        names above and are left out when ``min_n > 1``.  Only ``(1, 1)`` is
        accepted with marginals and with matrix observations.
    random_state : int, RandomState instance or None, default=None
        Shuffles the sequences into the ``cv`` folds when ``cv`` is an int.
        The stages' own randomness is their ``random_state``'s.

    Attributes
    ----------
    first_ : estimator
        The first stage fitted on all the training data.
    second_ : estimator
        The fitted second stage.  Its last step takes the augmented
        observations, so predict through this model, not through ``second_``.
    first_chains_ : list of int
    classes_ : list of ndarray
        Per chain the labels of the second stage.
    n_chains_ : int

    See Also
    --------
    MarginalAveraging : the thesis's ensemble of a single-stage and a two-stage model.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> from skfcrf.ensemble import TwoStage
    >>> X = [[["w=the"], ["w=cat"]], [["w=a"], ["w=dog"]]] * 3
    >>> y = [[("DT", "B-NP"), ("NN", "I-NP")]] * 6
    >>> model = TwoStage(FactorialCRF(max_iter=30), FactorialCRF(max_iter=30),
    ...                  first_chains=0, cv=3).fit(X, y)
    >>> model.predict(X)[0].tolist()
    [['DT', 'B-NP'], ['NN', 'I-NP']]
    """

    _parameter_constraints = {
        "first": [HasMethods(["fit", "predict"])],
        "second": [HasMethods(["fit", "predict"])],
        "first_chains": [None, Interval(numbers.Integral, 0, None, closed="left"), list, tuple],
        "cv": ["cv_object"],
        "first_output": [StrOptions({"labels", "marginals"})],
        "offsets": [list, tuple],
        "ngram_range": [tuple],
        "random_state": ["random_state"],
    }

    def __init__(self, first, second, *, first_chains=None, cv=5, first_output="labels",
                 offsets=(0,), ngram_range=(1, 1), random_state=None):
        self.first = first
        self.second = second
        self.first_chains = first_chains
        self.cv = cv
        self.first_output = first_output
        self.offsets = offsets
        self.ngram_range = ngram_range
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self, n_chains):
        self._validate_params()
        for name in ("first", "second"):
            if not has_marginals(getattr(self, name)) and (
                    name == "second" or self.first_output == "marginals"):
                raise ValueError(f"{name}={type(getattr(self, name)).__name__} has no "
                                 "predict_marginals (nor is it a Pipeline whose last step has)")
        if self.first_chains is None:
            chains = list(range(n_chains))
        elif isinstance(self.first_chains, numbers.Integral):
            chains = [int(self.first_chains)]
        else:
            chains = list(self.first_chains)
        if (not chains or len(set(chains)) != len(chains)
                or not all(isinstance(c, numbers.Integral) and 0 <= c < n_chains
                           for c in chains)):
            raise ValueError(f"first_chains={self.first_chains!r} must name distinct chains "
                             f"of y among 0..{n_chains - 1}")
        offsets = list(self.offsets)
        if (not offsets or len(set(offsets)) != len(offsets)
                or not all(isinstance(o, numbers.Integral) for o in offsets)):
            raise ValueError(f"offsets={self.offsets!r} must be distinct integers (at least one)")
        self._offsets = [int(o) for o in offsets]
        rng = self.ngram_range
        if (len(rng) != 2 or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool)
                                     for n in rng) or not 1 <= rng[0] <= rng[1]):
            raise ValueError(f"ngram_range={rng!r} must be a tuple (min_n, max_n) of integers "
                             "with 1 <= min_n <= max_n")
        if rng[1] > 1 and self.first_output != "labels":
            raise ValueError(f"ngram_range={rng!r}: label n-grams need first_output='labels'")
        self._ngram_range = (int(rng[0]), int(rng[1]))
        return [int(c) for c in chains]

    def _splitter(self):
        if isinstance(self.cv, numbers.Integral):
            shuffle = self.random_state is not None
            return KFold(self.cv, shuffle=shuffle, random_state=self.random_state if shuffle
                         else None)
        return check_cv(self.cv)

    @staticmethod
    def _check_partition(splits, n):
        held = np.zeros(n, dtype=int)
        for _, test in splits:
            np.add.at(held, np.asarray(test), 1)
        if not np.all(held == 1):
            raise ValueError("cv must hold every training sequence out exactly once (as KFold "
                             f"does); {int(np.sum(held != 1))} of {n} sequences are not")

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Fit both stages, the second on cross-fitted first-stage outputs.

        Parameters
        ----------
        X : list of sequences
            The raw input both stages take (observations, or tokens for pipelines).
        y : list of label sequences
            Per sequence ``(n_tokens, n_chains)`` labels (or 1-D for one chain),
            every label given: partial labels (``None``) are not supported
            here (``ValueError``).

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError("y is required: a list of label sequences")
        y_seqs, _ = check_label_sequences(y)
        try:
            X = list(X)
        except TypeError:
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}") from None
        if len(X) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: "
                             f"{len(X)} != {len(y_seqs)}")
        self.first_chains_ = self._check_params(y_seqs[0].shape[1])
        y_first = [seq[:, self.first_chains_] for seq in y_seqs]

        self.first_ = clone(self.first).fit(X, y_first)
        self._first_classes = member_classes(self.first_)
        splits = list(self._splitter().split(np.arange(len(X))))
        self._check_partition(splits, len(X))
        held_out = [None] * len(X)
        for train, test in splits:
            model = clone(self.first).fit([X[i] for i in train], [y_first[i] for i in train])
            for i, out in zip(test, self._first_outputs(model, [X[i] for i in test])):
                held_out[i] = out

        self.second_ = clone(self.second)
        steps, last = split_pipeline(self.second_)
        Xs = X
        for step in steps:
            Xs = step.fit_transform(Xs, y)
        last.fit(self._augmented(Xs, held_out), y)
        self._second_steps, self._second_last = steps, last
        self.classes_ = member_classes(last)
        self.n_chains_ = len(self.classes_)
        return self

    def _first_outputs(self, model, X):
        """Per sequence, per first chain the ``(n_tokens, n_labels)`` outputs of ``model``
        over ``first_.classes_``: one-hot decoded labels, or marginals."""
        classes = member_classes(model)
        index = [{lab: j for j, lab in enumerate(c.tolist())} for c in self._first_classes]
        if self.first_output == "marginals":
            outs = member_marginals(model, X)
        else:
            outs = [_one_hot(np.asarray(p, dtype=object).reshape(len(p), -1), classes)
                    for p in model.predict(X)]
        aligned = []
        for seq in outs:
            per_chain = []
            for k, m in enumerate(seq):
                full = np.zeros((m.shape[0], len(index[k])))
                full[:, [index[k][lab] for lab in classes[k].tolist()]] = m
                per_chain.append(full)
            aligned.append(per_chain)
        return aligned

    def _augmented(self, Xs, outputs):
        """The second stage's observations ``Xs`` with the first stage's ``outputs`` added."""
        if self._ngram_range != (1, 1) and any(map(_is_matrix, Xs)):
            raise ValueError(f"ngram_range={self.ngram_range!r}: label n-grams need the "
                             "second stage's observations as per-token dicts or lists "
                             "of names, not matrices")
        grams = self._label_ngrams(outputs)
        return [self._augment_sequence(seq, out, more)
                for seq, out, more in zip(Xs, outputs, grams)]

    def _label_ngrams(self, outputs):
        """Per sequence, per token the names of the first stage's label n-grams of
        ``n >= 2`` (``ngram_range``), all chains' in one dict; ``None`` per sequence
        when there are none."""
        min_n, max_n = self._ngram_range
        if max_n < 2:
            return [None] * len(outputs)
        merged = None
        for k, (c, labels) in enumerate(zip(self.first_chains_, self._first_classes)):
            attribute = f"stage1[chain{c}]"
            window = NGramWindow(attribute, offsets=self._offsets, ngram_range=(max(2, min_n), max_n))
            names = window.transform([[{attribute: lab} for lab in labels[out[k].argmax(axis=1)]]
                                      for out in outputs])
            merged = names if merged is None else [[{**a, **b} for a, b in zip(sa, sb)]
                                                   for sa, sb in zip(merged, names)]
        return merged

    def _augment_sequence(self, seq, out, grams=None):
        block = _shifted(np.hstack(out), self._offsets)
        if _is_matrix(seq):
            if sp.issparse(seq):
                return sp.hstack([seq, sp.csr_matrix(block)], format="csr")
            return np.hstack([seq, block])
        names = [f"stage1[chain{c}]{'' if o == 0 else f'@{o}'}={lab}" for o in self._offsets
                 for c, labels in zip(self.first_chains_, self._first_classes)
                 for lab in labels.tolist()]
        tokens = []
        for t, tok in enumerate(seq):
            if isinstance(tok, dict):
                merged = dict(tok)
            elif isinstance(tok, (list, tuple, set, frozenset)):
                merged = {}
                for name in tok:
                    merged[name] = merged.get(name, 0.0) + 1.0
            else:
                raise ValueError(f"the second stage's observations must be per-token dicts, "
                                 f"lists of names or matrices, got a {type(tok).__name__} token")
            if self._ngram_range[0] == 1:
                for j in np.flatnonzero(block[t] >= MIN_MARGINAL):
                    merged[names[j]] = float(block[t, j])
            if grams is not None:
                merged.update(grams[t])
            tokens.append(merged)
        return tokens

    # ------------------------------------------------------------------ prediction
    def _second_input(self, X):
        check_is_fitted(self, "second_")
        X = list(X)
        outputs = self._first_outputs(self.first_, X)
        return self._augmented(transform_steps(self._second_steps, X), outputs)

    def predict(self, X):
        """The second stage's labels of all the chains, given the first stage's outputs.

        Returns
        -------
        list of ndarray
            Per sequence ``(n_tokens, n_chains)`` (1-D for a model of one chain
            fitted on 1-D label sequences).
        """
        Xs = self._second_input(X)
        return self._second_last.predict(Xs)

    def predict_marginals(self, X):
        """The second stage's marginals: per sequence, per chain ``(n_tokens, n_labels_c)``."""
        Xs = self._second_input(X)
        return self._second_last.predict_marginals(Xs)

    def score(self, X, y):
        """Joint accuracy: the fraction of tokens at which every chain is right.

        Tokens with a missing label (``None``) and empty sequences are skipped, as
        in :meth:`skfcrf.FactorialCRF.score`.
        """
        y_seqs, _ = check_label_sequences(y, allow_empty_sequences=True, allow_missing=True)
        pred = self.predict(X)
        if len(pred) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: "
                             f"{len(pred)} != {len(y_seqs)}")
        scored = [i for i, t in enumerate(y_seqs) if len(t)]
        return joint_accuracy([y_seqs[i] for i in scored], [pred[i] for i in scored])

    @property
    def _one_chain(self):
        return bool(getattr(self._second_last, "_one_chain", False))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags


def _shifted(block, offsets):
    """``[block shifted by o for o in offsets]`` side by side: row ``t`` of the part of
    offset ``o`` is row ``t + o`` of ``block`` (zeros past either end)."""
    n = block.shape[0]
    parts = []
    for o in offsets:
        part = np.zeros_like(block)
        if abs(o) < n:
            part[max(0, -o):n - max(0, o)] = block[max(0, o):n - max(0, -o)]
        parts.append(part)
    return np.hstack(parts)


def _one_hot(labels, classes):
    """Per chain the ``(n_tokens, len(classes[k]))`` indicator matrix of ``labels[:, k]``."""
    out = []
    for k, cls in enumerate(classes):
        index = {lab: j for j, lab in enumerate(cls.tolist())}
        m = np.zeros((labels.shape[0], len(cls)))
        m[np.arange(labels.shape[0]), [index[lab] for lab in labels[:, k]]] = 1.0
        out.append(m)
    return out
