"""Shared machinery of the token-sequence transformers.

Input model
-----------
``X`` is a list of sequences; a sequence is a list (or tuple, or any non-string
iterable) of tokens; a token is either a ``str`` or a mapping of attributes such as
``{"word": "fever", "pos": "NN"}``.  A ``str`` token ``tok`` means ``{"word": tok}``.

Multi-valued attributes
-----------------------
An attribute value may be a ``list``, ``tuple``, ``set`` or ``frozenset`` of values
(e.g. all the parts of speech a dictionary gives a word, ``{"word": "cool",
"pos": ["JJ", "VB"]}``).  :func:`token_attribute_values` returns it as a ``tuple`` of
``str`` (duplicates dropped, list order kept, sets sorted) and every transformer
emits one observation per value (``pos@0=JJ`` and ``pos@0=VB``) instead of one
observation for the list's string.  An empty collection gives no observation.

Output model
------------
Every transformer's ``transform`` returns a list (one entry per sequence) of lists (one
entry per token) of dicts ``{observation_name: float}``; binary observations have the
value 1.0.  An empty sequence gives an empty list.  This is exactly what
:class:`skfcrf.FactorialCRF` consumes.

Internal protocol
-----------------
Subclasses of :class:`SequenceTransformerMixin` implement
``_transform_named(seqs, prefix, weight, cache)``, which receives already validated
sequences and returns the output with every observation name prefixed by ``prefix``
and every value multiplied by ``weight``.  :class:`~skfcrf.transformers.SequenceFeatureUnion`
calls it directly so that names are built once, already prefixed, instead of being
re-keyed per token afterwards; ``cache`` lets transformers of one union share the
per-sequence attribute value lists.
"""
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

__all__ = ["SequenceTransformerMixin", "check_sequences", "token_attribute_values", "window_rows"]


def check_sequences(X, name="X"):
    """Validate raw token sequences and return them as a list of lists.

    Only the containers are checked here (tokens are checked when their attributes
    are read, see :func:`token_attribute_values`).  The input is never modified;
    sequences that are already lists are returned as they are (not copied).

    Parameters
    ----------
    X : iterable of sequences
        Each sequence is a list/tuple (or other non-string iterable) of tokens.
    name : str
        Name used in error messages.

    Returns
    -------
    list of list

    Raises
    ------
    ValueError
        When ``X`` is a string, a mapping or not iterable, or when a sequence is a
        string, a mapping or not iterable.
    """
    if X is None or isinstance(X, (str, bytes, Mapping)):
        raise ValueError(
            f"{name} must be a list of token sequences, got {type(X).__name__}"
        )
    if isinstance(X, np.ndarray) and X.ndim == 0:
        raise ValueError(f"{name} must be a list of token sequences, got a 0-d array")
    try:
        X = list(X)
    except TypeError:
        raise ValueError(
            f"{name} must be a list of token sequences, got {type(X).__name__}"
        ) from None
    out = X
    for i, seq in enumerate(X):
        if seq.__class__ is list:
            continue
        if isinstance(seq, (str, bytes)):
            raise ValueError(
                f"{name}[{i}] is a string; each sequence must be a list of tokens "
                "(did you pass a single sequence? wrap it in a list: [tokens])"
            )
        if isinstance(seq, Mapping):
            raise ValueError(
                f"{name}[{i}] is a {type(seq).__name__}; each sequence must be a list "
                "of tokens (did you pass a single sequence? wrap it in a list: [tokens])"
            )
        try:
            seq = list(seq)
        except TypeError:
            raise ValueError(
                f"{name}[{i}] must be a sequence of tokens, got {type(seq).__name__}"
            ) from None
        if out is X:
            out = list(X)
        out[i] = seq
    return out


def _slow_values(seq, attribute, i, name):
    """Per-token extraction with precise error messages (used when the fast path fails)."""
    vals = []
    for t, tok in enumerate(seq):
        if isinstance(tok, str):
            if attribute != "word":
                raise ValueError(
                    f"{name}[{i}][{t}] is a str token, which only has the 'word' "
                    f"attribute; attribute {attribute!r} needs dict tokens such as "
                    f"{{'word': ..., {attribute!r}: ...}}"
                )
            v = tok
        elif isinstance(tok, Mapping):
            try:
                v = tok[attribute]
            except KeyError:
                raise ValueError(
                    f"{name}[{i}][{t}] has no attribute {attribute!r} "
                    f"(attributes present: {sorted(map(str, tok))})"
                ) from None
        else:
            raise ValueError(
                f"{name}[{i}][{t}] must be a str or a dict of attributes, "
                f"got {type(tok).__name__}"
            )
        if v is None:
            raise ValueError(f"{name}[{i}][{t}] attribute {attribute!r} is None")
        if isinstance(v, _MULTI):
            v = _multi_value(v, f"{name}[{i}][{t}] attribute {attribute!r}")
        elif not isinstance(v, str):
            if isinstance(v, (float, np.floating)) and v != v:
                raise ValueError(f"{name}[{i}][{t}] attribute {attribute!r} is NaN")
            v = str(v)
        vals.append(v)
    return vals


_MULTI = (list, tuple, set, frozenset)


def _multi_value(v, where):
    """A multi-valued attribute as a tuple of distinct str (sets sorted, lists in order)."""
    items = sorted(v, key=str) if isinstance(v, (set, frozenset)) else v
    out = []
    for x in items:
        if x is None or (isinstance(x, (float, np.floating)) and x != x):
            raise ValueError(f"{where} holds {x!r}")
        if isinstance(x, _MULTI):
            raise ValueError(f"{where} holds a nested collection {x!r}")
        x = x if isinstance(x, str) else str(x)
        if x not in out:
            out.append(x)
    return tuple(out)


def value_list(v):
    """The values of one attribute value: ``(v,)`` for a str, the tuple itself otherwise."""
    return v if v.__class__ is tuple else (v,)


def token_attribute_values(seqs, attribute, cache=None, name="X"):
    """Per-sequence lists of one token attribute, as strings.

    Parameters
    ----------
    seqs : list of list
        Output of :func:`check_sequences`.
    attribute : str
        Attribute to read; ``"word"`` is the token itself for ``str`` tokens.
    cache : dict or None
        When given, results are memoised under ``attribute`` (shared by the
        transformers of one :class:`SequenceFeatureUnion` call).
    name : str
        Name used in error messages.

    Returns
    -------
    list of list of (str or tuple of str)
        Non-string attribute values (e.g. ints) are converted with ``str``;
        multi-valued ones (list, tuple, set) become tuples of str (see the module
        docstring).

    Raises
    ------
    ValueError
        For a token that is neither a ``str`` nor a mapping, a ``str`` token when
        ``attribute != "word"``, a missing attribute, or a None/NaN value.
    """
    if cache is not None:
        hit = cache.get(attribute)
        if hit is not None:
            return hit
    out = []
    append = out.append
    if attribute == "word":
        for i, seq in enumerate(seqs):
            try:
                vals = [t if t.__class__ is str else t["word"] for t in seq]
            except Exception:  # precise message from the slow path
                vals = _slow_values(seq, attribute, i, name)
            else:
                if not all(v.__class__ is str for v in vals):
                    vals = _slow_values(seq, attribute, i, name)
            append(vals)
    else:
        for i, seq in enumerate(seqs):
            try:
                vals = [t[attribute] for t in seq]
            except Exception:
                vals = _slow_values(seq, attribute, i, name)
            else:
                if not all(v.__class__ is str for v in vals) or not all(
                    t.__class__ is dict or isinstance(t, Mapping) for t in seq
                ):
                    vals = _slow_values(seq, attribute, i, name)
            append(vals)
    if cache is not None:
        cache[attribute] = out
    return out


_PLAIN = frozenset((str, dict))


def check_tokens(seqs, cache=None, name="X"):
    """Check that every token is a ``str`` or a mapping (for transformers that read no attribute).

    Skipped when a shared ``cache`` already holds extracted attribute values (their
    extraction checked the tokens).
    """
    if cache:
        return
    for i, seq in enumerate(seqs):
        if not all(t.__class__ in _PLAIN or isinstance(t, (str, Mapping)) for t in seq):
            for t, tok in enumerate(seq):
                if not isinstance(tok, (str, Mapping)):
                    raise ValueError(
                        f"{name}[{i}][{t}] must be a str or a dict of attributes, "
                        f"got {type(tok).__name__}"
                    )


# --------------------------------------------------------------------------- checks


def check_int(value, name, minimum=None, maximum=None):
    """Return ``int(value)`` for an integral non-bool ``minimum <= value <= maximum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an int, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_int_list(value, name, minimum=None, what="a sequence of ints", maximum=None):
    """Return the iterable ``value`` (not a str, not an int) as a list of ints in
    ``[minimum, maximum]``.

    ``what`` names the expected type in the error message.
    """
    if isinstance(value, (str, bytes)) or isinstance(value, Integral):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        out = list(value)
    except TypeError:
        raise ValueError(f"{name} must be {what}, got {value!r}") from None
    return [check_int(v, f"each entry of {name}", minimum, maximum) for v in out]


def check_distinct(values, name, entry="entry"):
    """Check that the list ``values`` holds at least one ``entry`` and no repeats."""
    if not values:
        raise ValueError(f"{name} is empty; it must contain at least one {entry}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must be distinct, got {values!r}")
    return values


def check_offsets(offsets, name="offsets"):
    """Validate a non-empty sequence of distinct int offsets; return it as a list."""
    return check_distinct(check_int_list(offsets, name), name, "offset")


def window_rows(keys, offsets, local, prefix, weight):
    """Per-token observations of per-token local features, emitted at offsets.

    Parameters
    ----------
    keys : list of list of hashable
        One key per token (e.g. the attribute value); ``local`` is called once per
        distinct key.
    offsets : list of int
        The token at ``t`` gets the local features of the token at ``t + o`` for
        every ``o``; positions beyond the sequence edges contribute nothing.
    local : callable
        ``local(key) -> sequence of (name, value)`` pairs (``value`` a str); the
        observation is named ``{prefix}{name}@{o}={value}``.
    prefix : str
    weight : float

    Returns
    -------
    list of list of dict
        Observations in the order of ``offsets``, then of ``local``'s pairs.
    """
    feats = {}
    names = {}
    out = []
    append = out.append
    for seq in keys:
        m = len(seq)
        cols = []
        for o in offsets:
            col = []
            for t in range(m):
                j = t + o
                if j < 0 or j >= m:
                    col.append(())
                    continue
                k = seq[j]
                nm = names.get((o, k))
                if nm is None:
                    f = feats.get(k)
                    if f is None:
                        f = feats[k] = tuple(local(k))
                    nm = names[o, k] = tuple(f"{prefix}{a}@{o}={b}" for a, b in f)
                col.append(nm)
            cols.append(col)
        rows = []
        for t in range(m):
            d = {}
            for col in cols:
                for nm in col[t]:
                    d[nm] = weight
            rows.append(d)
        append(rows)
    return out


def check_attribute(value, name="attribute"):
    """Check that a token attribute name is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


def check_bool(value, name):
    """Check a boolean flag (numpy bools accepted)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_weight(value, name="weight"):
    """Check a finite real weight."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


#: The kinds of parameter a transformer's ``_param_kinds`` may name: ``kind -> check(value,
#: name)``; ``("int", minimum)`` is an int >= minimum.
_PARAM_CHECKS = {"attribute": check_attribute, "bool": check_bool, "offsets": check_offsets}


# --------------------------------------------------------------------------- base class


def sequence_transformer_tags(tags):
    """scikit-learn's tags of a transformer of token sequences, set on ``tags``
    (its base class's): input lists of sequences of strings or dicts (not a 2-D
    array), output feature rows of no preserved dtype."""
    from sklearn.utils import TransformerTags

    tags.transformer_tags = TransformerTags(preserves_dtype=[])
    tags.input_tags.two_d_array = False
    tags.input_tags.string = True
    tags.input_tags.dict = True
    return tags


class SequenceTransformerMixin(BaseEstimator):
    """Base class of the skfcrf token-sequence transformers.

    Subclasses implement ``_validate_params()`` (raising ``ValueError``) and
    ``_transform_named(seqs, prefix, weight, cache)``.  This class provides ``fit``,
    ``transform``, ``fit_transform`` and ``get_feature_names_out``.  The plain
    parameters are declared in the class table ``_param_kinds`` (``{parameter:
    kind}``, kinds ``"attribute"`` (a non-empty str), ``"bool"``, ``"offsets"`` (distinct
    ints) and ``("int", minimum)``) and checked in that order by ``_checked_params()``;
    ``_validate_params`` adds the checks the table cannot say.

    ``fit`` validates the parameters, transforms ``X`` once and records the sorted
    observation names it produced in ``feature_names_out_`` (nothing else is
    learned; ``transform`` does not depend on it).  ``fit_transform`` returns that
    same transformation, so fitting costs one pass.

    ``transform`` works before ``fit``, but for scikit-learn a transformer is fitted
    only once ``fit`` has run (``__sklearn_is_fitted__``, read by
    :func:`~sklearn.utils.validation.check_is_fitted` and so by ``Pipeline.transform``),
    as for every other step of a pipeline.
    """

    _param_kinds = {}

    def __sklearn_tags__(self):
        return sequence_transformer_tags(super().__sklearn_tags__())

    def __sklearn_is_fitted__(self):
        """Whether ``fit`` has run (it records ``feature_names_out_``)."""
        return hasattr(self, "feature_names_out_")

    # -- public API ------------------------------------------------------------------

    def fit(self, X, y=None):
        """Validate the parameters and collect the observation names seen in ``X``.

        Parameters
        ----------
        X : list of sequences of tokens
            Tokens are ``str`` or dicts of attributes.
        y : ignored

        Returns
        -------
        self
        """
        self._fit_transform_named(check_sequences(X), "", 1.0, None)
        return self

    def transform(self, X):
        """Compute per-token observations.

        Stateless: the parameters are validated and ``X`` is transformed; fitting is
        not required.

        Parameters
        ----------
        X : list of sequences of tokens
            Tokens are ``str`` or dicts of attributes.

        Returns
        -------
        list of list of dict
            One list per sequence, one dict ``{observation_name: value}`` per token.
        """
        self._validate_params()
        return self._transform_named(check_sequences(X), "", 1.0, None)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit (collect observation names) and return the transformation of ``X``.

        Parameters
        ----------
        X : list of sequences of tokens
        y : ignored

        Returns
        -------
        list of list of dict
        """
        return self._fit_transform_named(check_sequences(X), "", 1.0, None)

    def get_feature_names_out(self, input_features=None):
        """Observation names produced on the data seen in ``fit``, sorted.

        Stateless transformers cannot know all names in advance (they depend on the
        vocabulary), so the names are collected while fitting; ``transform`` on new
        data may produce names not listed here.

        Parameters
        ----------
        input_features : ignored
            Present for API consistency with scikit-learn.

        Returns
        -------
        ndarray of str objects

        Raises
        ------
        NotFittedError
            If the transformer has not been fitted.
        """
        if not hasattr(self, "feature_names_out_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit "
                "before get_feature_names_out (the names are collected from the data)."
            )
        return np.asarray(self.feature_names_out_, dtype=object)

    # -- internal protocol -----------------------------------------------------------

    def _fit_transform_named(self, seqs, prefix, weight, cache):
        """Validate, transform already checked ``seqs`` and record the names seen."""
        self._validate_params()
        out = self._transform_named(seqs, prefix, weight, cache)
        names = set()
        update = names.update
        for seq_out in out:
            if seq_out:
                update(*seq_out)
        n = len(prefix)
        self.feature_names_out_ = np.asarray(
            sorted(k[n:] for k in names) if n else sorted(names), dtype=object
        )
        return out

    def _checked_params(self):
        """The parameters of ``_param_kinds``, checked: ``{parameter: checked value}``."""
        out = {}
        for name, kind in self._param_kinds.items():
            value = getattr(self, name)
            if isinstance(kind, tuple):  # ("int", minimum)
                out[name] = check_int(value, name, kind[1])
            else:
                out[name] = _PARAM_CHECKS[kind](value, name)
        return out

    def _validate_params(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _transform_named(self, seqs, prefix, weight, cache):  # pragma: no cover
        raise NotImplementedError
