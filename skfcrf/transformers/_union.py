"""Merging several transformers' observations: :class:`SequenceFeatureUnion`."""
from collections import Counter, deque

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils import Bunch
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import check_is_fitted

from skfcrf.transformers._base import check_sequences, check_weight, sequence_transformer_tags

__all__ = ["SequenceFeatureUnion", "make_sequence_union"]

_SEP = "__"


class SequenceFeatureUnion(_BaseComposition):
    """Merge the per-token observations of several sequence transformers.

    Each transformer's observation names are prefixed with its name and ``"__"``
    (``ngram__word@0=the``), so transformers never overwrite each other's
    observations; the prefixed dicts of one token are merged into one dict.  The
    output feeds :class:`skfcrf.FactorialCRF` directly.

    Parameters
    ----------
    transformer_list : list of (str, transformer)
        Names must be distinct, non-empty, free of ``"__"`` and different from the
        parameter names of this class.  A transformer may be ``"drop"`` (ignored).
        skfcrf transformers (and nested unions) build their prefixed names directly;
        any other transformer must return the same list-of-lists-of-dicts format, and
        its output is re-keyed.
    transformer_weights : dict or None, default=None
        Multiplicative weight per transformer name (missing names: 1.0); every value
        of that transformer's observations is multiplied by it.

    Attributes
    ----------
    named_transformers : Bunch
        Access to the transformers by name.

    Notes
    -----
    The union fits the given transformer objects in place (as scikit-learn's
    ``FeatureUnion`` does when ``n_jobs=1``).  Nested parameters are addressed as
    ``"{name}__{param}"`` (e.g. in ``GridSearchCV``: ``"feat__ngram__offsets"``).
    Token attribute values are read once per attribute and shared by the members.

    Examples
    --------
    >>> from skfcrf.transformers import NGramWindow, RelativePosition, SequenceFeatureUnion
    >>> union = SequenceFeatureUnion([("ngram", NGramWindow(offsets=(0,))),
    ...                               ("pos", RelativePosition(n_bins=2))],
    ...                              transformer_weights={"pos": 0.5})
    >>> union.fit_transform([["the", "patient"]])  # doctest: +NORMALIZE_WHITESPACE
    [[{'ngram__word@0=the': 1.0, 'pos__relpos2=0': 0.5},
      {'ngram__word@0=patient': 1.0, 'pos__relpos2=1': 0.5}]]
    """

    def __init__(self, transformer_list, transformer_weights=None):
        self.transformer_list = transformer_list
        self.transformer_weights = transformer_weights

    # -- parameters (nested, as in sklearn's FeatureUnion) ---------------------------

    def get_params(self, deep=True):
        """Get parameters, including ``{name}__{param}`` of the members when ``deep``.

        Parameters
        ----------
        deep : bool, default=True

        Returns
        -------
        dict
        """
        return self._get_params("transformer_list", deep=deep)

    def set_params(self, **params):
        """Set parameters; members and their parameters are addressed by name.

        Parameters
        ----------
        **params : dict

        Returns
        -------
        self
        """
        self._set_params("transformer_list", **params)
        return self

    @property
    def named_transformers(self):
        """Bunch of the member transformers by name."""
        return Bunch(**dict(self.transformer_list))

    def __sklearn_tags__(self):
        return sequence_transformer_tags(super().__sklearn_tags__())

    def __sklearn_is_fitted__(self):
        """Whether every member is fitted (as scikit-learn's ``FeatureUnion`` decides).

        The union itself learns nothing; without this, scikit-learn finds no fitted
        attribute on it and a fitted pipeline ending in a union failed
        ``check_is_fitted`` (so ``pipeline[:-1].transform``).
        """
        for _, trans, _ in self._members():
            try:
                check_is_fitted(trans)
            except NotFittedError:
                return False
        return True

    # -- validation ------------------------------------------------------------------

    def _members(self):
        """Validate the parameters; return [(name, transformer, weight)] without drops."""
        tl = self.transformer_list
        if isinstance(tl, (str, bytes, dict)) or not hasattr(tl, "__iter__"):
            raise ValueError(
                "transformer_list must be a list of (name, transformer) tuples, "
                f"got {type(tl).__name__}"
            )
        pairs = []
        for item in tl:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ValueError(
                    f"transformer_list entries must be (name, transformer) pairs, got {item!r}"
                )
            pairs.append(tuple(item))
        if not pairs:
            raise ValueError("transformer_list must contain at least one transformer")
        names = [n for n, _ in pairs]
        for n in names:
            if not isinstance(n, str) or not n:
                raise ValueError(f"transformer names must be non-empty str, got {n!r}")
            if _SEP in n:
                raise ValueError(f"transformer names must not contain '__', got {n!r}")
        dup = [n for n, c in Counter(names).items() if c > 1]
        if dup:
            raise ValueError(f"transformer names must be unique, duplicated: {sorted(dup)}")
        clash = sorted(set(names) & set(self.get_params(deep=False)))
        if clash:
            raise ValueError(f"transformer names conflict with constructor arguments: {clash}")
        tw = self.transformer_weights
        if tw is None:
            tw = {}
        elif not isinstance(tw, dict):
            raise ValueError(
                f"transformer_weights must be a dict or None, got {type(tw).__name__}"
            )
        unknown = sorted(set(tw) - set(names))
        if unknown:
            raise ValueError(
                f"transformer_weights has keys not in transformer_list: {unknown} "
                f"(names: {names})"
            )
        members = []
        for name, trans in pairs:
            if isinstance(trans, str) and trans == "drop":
                continue
            if trans is None or not (
                hasattr(trans, "transform") and (hasattr(trans, "fit") or hasattr(trans, "fit_transform"))
            ):
                raise ValueError(
                    f"transformer {name!r} must implement fit and transform (or be 'drop'), "
                    f"got {trans!r}"
                )
            members.append((name, trans, check_weight(tw.get(name, 1.0), f"transformer_weights[{name!r}]")))
        return members

    # -- core ------------------------------------------------------------------------

    @staticmethod
    def _foreign(result, prefix, weight, n_seqs, name):
        """Re-key (and re-weight) the output of a non-skfcrf transformer."""
        if not isinstance(result, list) or len(result) != n_seqs:
            raise ValueError(
                f"transformer {name!r} must return a list with one entry per sequence "
                f"({n_seqs}), got {type(result).__name__}"
                + (f" of length {len(result)}" if hasattr(result, "__len__") else "")
            )
        return [
            [{prefix + str(k): float(v) * weight for k, v in d.items()} for d in seq]
            for seq in result
        ]

    def _run(self, seqs, prefix, weight, cache, fit):
        members = self._members()
        results = []
        for name, trans, w in members:
            p = f"{prefix}{name}{_SEP}"
            ww = weight * w
            if hasattr(trans, "_transform_named"):
                res = (
                    trans._fit_transform_named(seqs, p, ww, cache)
                    if fit
                    else trans._transform_named(seqs, p, ww, cache)
                )
            else:
                if fit:
                    res = (
                        trans.fit_transform(seqs)
                        if hasattr(trans, "fit_transform")
                        else trans.fit(seqs).transform(seqs)
                    )
                else:
                    res = trans.transform(seqs)
                res = self._foreign(res, p, ww, len(seqs), name)
            results.append((name, res))
        if not results:
            return [[{} for _ in seq] for seq in seqs]
        merged = results[0][1]
        for name, res in results[1:]:
            for i, (a, b) in enumerate(zip(merged, res)):
                if len(a) != len(b):
                    raise ValueError(
                        f"transformer {name!r} returned {len(b)} tokens for sequence {i}, "
                        f"expected {len(a)}"
                    )
                deque(map(dict.update, a, b), maxlen=0)
        return merged

    def _fit_transform_named(self, seqs, prefix, weight, cache):
        return self._run(seqs, prefix, weight, cache, fit=True)

    def _transform_named(self, seqs, prefix, weight, cache):
        return self._run(seqs, prefix, weight, cache, fit=False)

    # -- public API ------------------------------------------------------------------

    def fit(self, X, y=None):
        """Fit every member transformer on ``X``.

        Parameters
        ----------
        X : list of sequences of tokens
        y : ignored

        Returns
        -------
        self
        """
        self._fit_transform_named(check_sequences(X), "", 1.0, {})
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """Fit every member and return the merged observations.

        Parameters
        ----------
        X : list of sequences of tokens
        y : ignored

        Returns
        -------
        list of list of dict
            One list per sequence, one merged ``{prefixed_name: value}`` per token.
        """
        return self._fit_transform_named(check_sequences(X), "", 1.0, {})

    def transform(self, X):
        """Merged, prefixed observations of all members.

        Parameters
        ----------
        X : list of sequences of tokens

        Returns
        -------
        list of list of dict
        """
        return self._transform_named(check_sequences(X), "", 1.0, {})

    def get_feature_names_out(self, input_features=None):
        """Prefixed observation names of all members (each member's names in its order).

        Parameters
        ----------
        input_features : ignored

        Returns
        -------
        ndarray of str objects

        Raises
        ------
        NotFittedError
            If a member has not been fitted.
        AttributeError
            If a member does not provide ``get_feature_names_out``.
        """
        names = []
        for name, trans, _ in self._members():
            if not hasattr(trans, "get_feature_names_out"):
                raise AttributeError(
                    f"transformer {name!r} ({type(trans).__name__}) does not provide "
                    "get_feature_names_out"
                )
            names.extend(f"{name}{_SEP}{f}" for f in trans.get_feature_names_out())
        return np.asarray(names, dtype=object)


def _name_transformers(transformers):
    """Names from lowercased class names, with ``-1``, ``-2``... for duplicates."""
    names = [t if isinstance(t, str) else type(t).__name__.lower() for t in transformers]
    counts = Counter(names)
    seen = Counter()
    out = []
    for n in names:
        if counts[n] > 1:
            seen[n] += 1
            out.append(f"{n}-{seen[n]}")
        else:
            out.append(n)
    return out


def make_sequence_union(*transformers, transformer_weights=None):
    """Build a :class:`SequenceFeatureUnion` naming the members after their classes.

    Names are the lowercased class names (``ngramwindow``, ``bagofconcepts``...);
    duplicates get ``-1``, ``-2``... suffixes (``ngramwindow-1``, ``ngramwindow-2``).

    Parameters
    ----------
    *transformers : transformers
    transformer_weights : dict or None, default=None
        Keyed by the generated names.

    Returns
    -------
    SequenceFeatureUnion

    Examples
    --------
    >>> from skfcrf.transformers import NGramWindow, make_sequence_union
    >>> u = make_sequence_union(NGramWindow(), NGramWindow(attribute="pos"))
    >>> [name for name, _ in u.transformer_list]
    ['ngramwindow-1', 'ngramwindow-2']
    """
    names = _name_transformers(transformers)
    return SequenceFeatureUnion(list(zip(names, transformers)), transformer_weights=transformer_weights)
