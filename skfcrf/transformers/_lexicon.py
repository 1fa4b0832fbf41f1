"""Dictionary (gazetteer) classes of tokens and phrases at offsets: :class:`Lexicon`.

The dictionary is compiled into a token trie: a dict per node mapping the next
(case-folded) token to the child node, the classes of a phrase ending there stored
under the key ``None``.  Matching is greedy leftmost-longest: at each position the
longest phrase starting there is taken, all its tokens get its classes, and matching
resumes after it (phrases do not overlap).
"""
from collections.abc import Iterable, Mapping

from skfcrf.transformers._base import (
    SequenceTransformerMixin,
    token_attribute_values,
    value_list,
    window_rows,
)

__all__ = ["Lexicon"]


def _phrase_tokens(phrase):
    if isinstance(phrase, str):
        toks = phrase.split()
    elif isinstance(phrase, tuple) and all(isinstance(t, str) for t in phrase):
        toks = list(phrase)
    else:
        raise ValueError(f"lexicon phrases must be str or tuples of str, got {phrase!r}")
    if not toks or any(not t for t in toks):
        raise ValueError(f"lexicon phrase {phrase!r} has no tokens (or an empty one)")
    return toks


def _classes(value, phrase):
    if isinstance(value, str):
        value = (value,)
    elif not isinstance(value, Iterable) or isinstance(value, (bytes, Mapping)):
        raise ValueError(
            f"lexicon class of {phrase!r} must be a str or an iterable of str, got {value!r}")
    out = []
    for c in value:
        if not isinstance(c, str) or not c:
            raise ValueError(f"lexicon class of {phrase!r} must be a non-empty str, got {c!r}")
        if c not in out:
            out.append(c)
    return out


class Lexicon(SequenceTransformerMixin):
    """Classes from a user dictionary (gazetteer) for tokens and multi-token phrases.

    ``entries`` maps phrases (one or more tokens) to one or more classes, e.g.
    ``{"aspirin": "DRUG", "blood pressure": "VITAL", "cold": ["SYMPTOM", "TEMP"]}``.
    Each sequence is matched greedily leftmost-longest (see the module docstring):
    every token of a matched phrase gets its classes.  For the token at position
    ``t`` and each offset ``o``, the classes of the token at ``t + o`` are emitted as
    binary observations ``{name}@{o}={CLASS}``, e.g. ``lex@0=VITAL`` (Marcheggiani
    section 3.3.3: polarity lexicon features).  With ``mark_position=True`` the class
    is prefixed with ``B-`` on the first token of a match and ``I-`` on the others
    (``lex@0=B-VITAL``).  Positions beyond the edges and unmatched tokens emit nothing.

    Parameters
    ----------
    entries : dict
        ``phrase -> class(es)``; a phrase is a str (split on whitespace into tokens)
        or a tuple of token strings; a class is a non-empty str, or an iterable of them.
        When two phrases fold to the same tokens their classes are combined.
    attribute : str, default="word"
        Token attribute matched against the phrase tokens.  For a multi-valued
        attribute (list, tuple or set) a token matches when any of its values does.
    offsets : sequence of int, default=(0,)
        Distinct offsets relative to the current token.
    lowercase : bool, default=True
        Match case-insensitively (``str.casefold`` on both sides).
    name : str, default="lex"
        Stem of the observation names (use distinct names for several lexicons).
    mark_position : bool, default=False
        Prefix classes with ``B-``/``I-`` (first/other token of the match).

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        The ``{name}@{o}={CLASS}`` names of the classes matched in ``fit``, sorted.

    Notes
    -----
    The trie is rebuilt at every ``transform`` call (cost linear in the size of
    ``entries``); matching costs at most the longest phrase's length per token.

    Examples
    --------
    >>> from skfcrf.transformers import Lexicon
    >>> lex = Lexicon({"blood pressure": "VITAL", "blood": "FLUID", "high": ["LEVEL", "POS"]})
    >>> lex.transform([["High", "blood", "pressure", "blood"]])[0]
    [{'lex@0=LEVEL': 1.0, 'lex@0=POS': 1.0}, {'lex@0=VITAL': 1.0}, {'lex@0=VITAL': 1.0}, {'lex@0=FLUID': 1.0}]
    >>> Lexicon({"blood pressure": "VITAL"}, offsets=(1,), mark_position=True).transform(
    ...     [["his", "blood", "pressure"]])[0]
    [{'lex@1=B-VITAL': 1.0}, {'lex@1=I-VITAL': 1.0}, {}]
    """

    def __init__(self, entries, attribute="word", offsets=(0,), lowercase=True, name="lex",
                 mark_position=False):
        self.entries = entries
        self.attribute = attribute
        self.offsets = offsets
        self.lowercase = lowercase
        self.name = name
        self.mark_position = mark_position

    _param_kinds = {"attribute": "attribute", "name": "attribute", "offsets": "offsets",
                    "lowercase": "bool", "mark_position": "bool"}

    def _validate_params(self):
        p = self._checked_params()
        offsets, fold = p["offsets"], p["lowercase"]
        if not isinstance(self.entries, Mapping):
            raise ValueError(f"entries must be a dict phrase -> class(es), got {type(self.entries).__name__}")
        trie = {}
        for phrase, value in self.entries.items():
            node = trie
            for tok in _phrase_tokens(phrase):
                node = node.setdefault(tok.casefold() if fold else tok, {})
            classes = node.setdefault(None, [])
            classes.extend(c for c in _classes(value, phrase) if c not in classes)
        return offsets, trie, fold

    def _transform_named(self, seqs, prefix, weight, cache):
        offsets, trie, fold = self._validate_params()
        values = token_attribute_values(seqs, self.attribute, cache)
        mark = bool(self.mark_position)
        keys = []
        for vals in values:
            alts = [tuple(x.casefold() for x in value_list(v)) if fold else value_list(v)
                    for v in vals]
            keys.append(_match(alts, trie, mark))
        name = self.name
        return window_rows(keys, offsets, lambda cls: [(name, c) for c in cls], prefix, weight)


def _match(alts, trie, mark):
    """Per-token tuples of classes for one sequence (``alts[t]``: the token's values)."""
    n = len(alts)
    out = [()] * n
    t = 0
    while t < n:
        nodes = [trie]
        best_end, best = t, None
        j = t
        while nodes and j < n:
            nodes = [nd[v] for nd in nodes for v in alts[j] if v in nd]
            j += 1
            found = [c for nd in nodes for c in nd.get(None, ())]
            if found:
                best_end, best = j, tuple(dict.fromkeys(found))
        if best is None:
            t += 1
            continue
        if mark:
            out[t] = tuple("B-" + c for c in best)
            inner = tuple("I-" + c for c in best)
            for k in range(t + 1, best_end):
                out[k] = inner
        else:
            for k in range(t, best_end):
                out[k] = best
        t = best_end
    return out
