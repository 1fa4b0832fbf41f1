"""Training on another tagging scheme: the :class:`SegmentEncoded` meta-estimator.

The estimator learns the segment chains of ``y`` in BME (Chou's begin / middle /
end states, the restructuring of thesis ``002_981edd11709a4c73.txt``, section 6.3)
or BIOES, and every output is converted back to the labels the user gave.

Segment chains
    A chain is a segment chain when one of its training labels carries a begin
    prefix (``"B-"``, or the thesis's ``"Begin"`` notation: ``BeginX`` / ``X``);
    its labels -- but those that never begin a segment, such as ``"O"`` or the
    thesis's one-token ``Enummarker``, which pass through -- are re-tagged by
    :func:`~skfcrf.structure.to_bme` / :func:`~skfcrf.structure.to_bioes` and back by
    :func:`~skfcrf.structure.to_bio`, in the chain's own notation (``B-X`` /
    ``I-X`` / ``O``, or ``BeginX`` / ``X``).  Other chains (part-of-speech tags,
    say) are left as they are.
Marginals
    Per token the probability of a label in the user's scheme is the sum of
    those of the encoded labels it comes back as token by token: ``B-X`` (and
    ``S-X``) give the begin label of ``X``, ``M-X``, ``E-X`` and ``I-X`` its
    inside label.  (A labelling whose ``E-X`` is followed by ``M-X`` comes back
    with a begin label there; the per-token sum counts it as inside.  Decoded
    labellings never do that with the default transitions, which forbid a pair
    never seen in training.)
"""
import dataclasses
import functools

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.validation import check_is_fitted

from skfcrf.metrics._accuracy import joint_accuracy
from skfcrf.structure._tags import to_bio, to_bioes, to_bme

__all__ = ["SegmentEncoded", "SegmentCodec"]

_SCHEMES = {"bme": to_bme, "bioes": to_bioes}


def _notation(labels):
    """``(begin, inside)`` prefixes of a chain's labels, or None if none has a begin
    prefix (not a segment chain)."""
    labels = [lab for lab in labels if isinstance(lab, str)]
    if any(lab.startswith("B-") for lab in labels):
        return "B-", "I-"
    if any(lab.startswith("Begin") for lab in labels):
        return "Begin", ""
    return None


def _atomic(labels, notation):
    """The labels of a segment chain that are not re-tagged: in ``B-``/``I-``
    notation those with neither prefix (``"O"``), in the thesis's those that are
    neither ``BeginX`` nor an ``X`` whose ``BeginX`` occurs (``Enummarker``, a
    one-token label)."""
    begin, _ = notation
    if begin == "B-":
        return {lab for lab in labels if not lab.startswith(("B-", "I-"))}
    return {lab for lab in labels if not lab.startswith("Begin") and "Begin" + lab not in labels}


def _retagged(labels, atomic, convert):
    """``convert`` of one chain's labels with the ``atomic`` ones passed through."""
    labels = list(labels)
    keep = [lab in atomic for lab in labels]
    out = convert(["O" if k else lab for lab, k in zip(labels, keep)])
    return [lab if k else o for lab, k, o in zip(labels, keep, out)]


def _encoded_to_user(label, notation):
    """The user's label of an encoded one, token by token (module docstring)."""
    begin, inside = notation
    for prefix in ("B-", "S-"):
        if label.startswith(prefix):
            return begin + label[len(prefix):]
    for prefix in ("M-", "E-", "I-"):
        if label.startswith(prefix):
            return inside + label[len(prefix):]
    return label


class SegmentCodec:
    """The re-tagging of the segment chains of one training set, both ways.

    Parameters
    ----------
    scheme : {"bme", "bioes"}
    notations : list
        Per chain ``(begin, inside)`` prefixes of a segment chain, or None.
    atomic : list
        Per chain the labels that pass through (None for other chains).
    """

    def __init__(self, scheme, notations, atomic):
        if scheme not in _SCHEMES:
            raise ValueError(f"segment scheme must be one of {sorted(_SCHEMES)}, got {scheme!r}")
        self.scheme = scheme
        self.notations = [None if n is None else tuple(n) for n in notations]
        self.atomic = [None if a is None else set(a) for a in atomic]

    @classmethod
    def from_labels(cls, scheme, seqs):
        """The codec of label sequences ``seqs`` (``(n_tokens, n_chains)`` object arrays,
        every label given)."""
        if any(np.equal(s, None).any() for s in seqs):
            raise ValueError(f"segment_encoding={scheme!r} needs every label: y holds None (a "
                             "missing label), whose encoded label is undetermined")
        labels = [{lab for s in seqs for lab in s[:, c]} for c in range(seqs[0].shape[1])]
        notations = [_notation(labs) for labs in labels]
        return cls(scheme, notations, [None if n is None else _atomic(labs, n)
                                       for labs, n in zip(labels, notations)])

    def encode(self, labels):
        """One sequence's ``(n_tokens, n_chains)`` labels in the scheme."""
        out = np.array(labels, dtype=object).reshape(len(labels), len(self.notations))
        for c, notation in enumerate(self.notations):
            if notation is not None and len(out):
                out[:, c] = _retagged(out[:, c], self.atomic[c], _SCHEMES[self.scheme])
        return out

    def decode(self, labels):
        """One sequence's ``(n_tokens, n_chains)`` encoded labels in the user's scheme."""
        out = np.array(labels, dtype=object).reshape(len(labels), len(self.notations))
        for c, notation in enumerate(self.notations):
            if notation is not None and len(out):
                begin, inside = notation
                out[:, c] = _retagged(out[:, c], self.atomic[c], functools.partial(
                    to_bio, scheme=self.scheme, begin=begin, inside=inside))
        return out

    def user_label(self, chain, label):
        """The user's label of one encoded label, token by token (module docstring)."""
        notation = self.notations[chain]
        return label if notation is None else _encoded_to_user(label, notation)

    def to_dict(self):
        """JSON-able form (model files)."""
        return {"scheme": self.scheme,
                "notations": [None if n is None else list(n) for n in self.notations],
                "atomic": [None if a is None else sorted(a) for a in self.atomic]}

    @classmethod
    def from_dict(cls, d):
        return cls(d["scheme"], d["notations"], d["atomic"])


class SegmentEncoded(MetaEstimatorMixin, BaseEstimator):
    """An estimator trained on its segment chains re-tagged as BME (or BIOES).

    ``fit`` converts the labels of every segment chain (module docstring) to
    ``scheme`` and fits a clone of ``estimator`` (``estimator_``) on them;
    ``predict``, ``decode`` and ``predict_marginals`` convert back, so the
    wrapper takes and returns the labels the user gave.

    Parameters
    ----------
    estimator : estimator
        ``FactorialCRF`` or a pipeline ending in one.
    scheme : {"bme", "bioes"}, default="bme"

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone (its ``classes_`` are the encoded labels).
    notations_ : list
        Per chain ``(begin, inside)`` prefixes of a segment chain, or None.
    classes_ : list of ndarray
        Per chain the labels of the user's scheme the model can output.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> X = [[{"w=the": 1}, {"w=big": 1}, {"w=cat": 1}, {"w=sat": 1}]] * 2
    >>> y = [[("DT", "B-NP"), ("JJ", "I-NP"), ("NN", "I-NP"), ("VB", "O")]] * 2
    >>> model = SegmentEncoded(FactorialCRF(max_iter=30)).fit(X, y)
    >>> model.notations_
    [None, ('B-', 'I-')]
    >>> sorted(model.estimator_.classes_[1].tolist())
    ['B-NP', 'E-NP', 'M-NP', 'O']
    >>> model.predict(X)[0][:, 1].tolist()
    ['B-NP', 'I-NP', 'I-NP', 'O']
    """

    def __init__(self, estimator, scheme="bme"):
        self.estimator = estimator
        self.scheme = scheme

    def fit(self, X, y, **fit_params):
        """Fit a clone of ``estimator`` on ``y`` with its segment chains re-tagged.

        ``y`` must give every label (``None`` would not say which encoded label
        a token has); ``fit_params`` go to the estimator's ``fit``.
        """
        seqs = [np.asarray(s, dtype=object) for s in y]
        if not seqs:
            raise ValueError("y holds no sequence")
        self._one_chain = seqs[0].ndim == 1
        seqs = [s.reshape(len(s), -1) for s in seqs]
        self.codec_ = SegmentCodec.from_labels(self.scheme, seqs)
        self.notations_ = self.codec_.notations
        encoded = [self.codec_.encode(s) for s in seqs]
        if self._one_chain:
            encoded = [e[:, 0] for e in encoded]
        self.estimator_ = clone(self.estimator).fit(X, encoded, **fit_params)
        inner = self._inner().classes_
        self.classes_ = [np.array(sorted({self.codec_.user_label(c, lab) for lab in inner[c]}),
                                  dtype=object) for c in range(len(inner))]
        return self

    def _inner(self):
        est = self.estimator_
        return est.steps[-1][1] if hasattr(est, "steps") else est

    def _decode_labels(self, labels):
        out = self.codec_.decode(labels)
        return out[:, 0] if self._one_chain else out

    def predict(self, X):
        """The estimator's labellings in the user's scheme."""
        check_is_fitted(self, "estimator_")
        return [self._decode_labels(p) for p in self.estimator_.predict(X)]

    def decode(self, X, n_best=1):
        """The estimator's :meth:`~skfcrf.FactorialCRF.decode` records with their
        labels (and alternatives') in the user's scheme.  ``log_prob`` is that of
        the encoded labelling.  Fixed labels are not supported: an inside label
        does not say which encoded label (middle or end) a token has."""
        check_is_fitted(self, "estimator_")
        est, Xt = self._inner(), self._transformed(X)
        return [self._record(d) for d in est.decode(Xt, n_best=n_best)]

    def _record(self, d):
        changes = {"labels": self._decode_labels(d.labels)}
        if d.alternatives:
            changes["alternatives"] = tuple(self._record(a) for a in d.alternatives)
        return dataclasses.replace(d, **changes)

    def _transformed(self, X):
        Xt = list(X)
        if hasattr(self.estimator_, "steps"):
            for _, step in self.estimator_.steps[:-1]:
                if step is not None and step != "passthrough":
                    Xt = step.transform(Xt)
        return Xt

    def predict_marginals(self, X):
        """Per sequence and chain the token marginals over :attr:`classes_` (the
        encoded labels' summed as the module docstring says)."""
        check_is_fitted(self, "estimator_")
        inner = self._inner()
        maps = []
        for c in range(len(self.classes_)):
            index = {lab: i for i, lab in enumerate(self.classes_[c].tolist())}
            target = [index[self.codec_.user_label(c, lab)] for lab in inner.classes_[c]]
            M = np.zeros((len(target), len(index)))
            M[np.arange(len(target)), target] = 1.0
            maps.append(M)
        marginals = inner.predict_marginals(self._transformed(X))
        return [[m[c] @ maps[c] for c in range(len(maps))] for m in marginals]

    def score(self, X, y):
        """Joint accuracy of :meth:`predict` against ``y`` (in the user's scheme)."""
        return joint_accuracy(y, self.predict(X))
