"""Token n-grams at fixed offsets: :class:`NGramWindow`."""
from itertools import product

from skfcrf.transformers._base import SequenceTransformerMixin, check_int, token_attribute_values, value_list

__all__ = ["NGramWindow", "BOS", "EOS"]

#: Padding symbol for positions before the first token.
BOS = "__BOS__"
#: Padding symbol for positions after the last token.
EOS = "__EOS__"


class NGramWindow(SequenceTransformerMixin):
    """Token n-grams at relative offsets, over any token attribute.

    For a token at position ``t`` and each n-gram length ``n`` in ``ngram_range``,
    an n-gram starting at offset ``o`` covers positions ``t+o .. t+o+n-1``.  It is
    emitted when all the offsets ``o, o+1, ..., o+n-1`` are in ``offsets`` (so the
    n-grams stay inside the window), as one binary observation named

    - ``{attribute}@{o}={value}`` for unigrams, e.g. ``word@-1=the``,
      ``pos@0=NN``;
    - ``{attribute}@{o}..{o+n-1}={v_1}|...|{v_n}`` for longer n-grams, e.g.
      ``word@-1..0=the|patient``.

    Positions beyond the sequence edges are padded with :data:`BOS` (``"__BOS__"``)
    before the first token and :data:`EOS` (``"__EOS__"``) after the last one, e.g.
    ``word@-1=__BOS__`` for the first token.  Padding symbols are never lowercased.
    A real token spelt ``__BOS__``/``__EOS__`` cannot be told apart from padding, and
    values containing ``|`` make n-gram names ambiguous; neither happens in normal text.

    A multi-valued attribute (a list, tuple or set of values, e.g.
    ``{"word": "cool", "pos": ["JJ", "VB"]}``) gives one observation per value
    (``pos@0=JJ`` and ``pos@0=VB``); an n-gram over such tokens is emitted for
    every combination of their values; a token with an empty collection emits none.

    Parameters
    ----------
    attribute : str, default="word"
        Token attribute to read; ``"word"`` is the token itself for ``str`` tokens,
        other attributes (e.g. ``"pos"``) need dict tokens.
    offsets : sequence of int, default=(-2, -1, 0, 1, 2)
        Offsets relative to the current token; distinct integers, at least one.
        Observations are emitted in the order of ``offsets`` (and of ``n``).
    ngram_range : tuple (min_n, max_n), default=(1, 1)
        Lengths of the n-grams, ``1 <= min_n <= max_n``.
    lowercase : bool, default=False
        Lowercase the attribute values (with ``str.lower``) before naming them.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        Sorted observation names seen in ``fit`` (see :meth:`get_feature_names_out`).

    Notes
    -----
    Stateless: ``transform`` works without ``fit``; ``fit`` only validates the
    parameters and collects the names for :meth:`get_feature_names_out`.
    Cost is linear in the number of tokens times the number of emitted n-grams;
    observation-name strings are built once per distinct value and shared.

    Examples
    --------
    >>> from skfcrf.transformers import NGramWindow
    >>> NGramWindow(offsets=(-1, 0)).transform([["the", "patient"]])
    [[{'word@-1=__BOS__': 1.0, 'word@0=the': 1.0}, {'word@-1=the': 1.0, 'word@0=patient': 1.0}]]
    """

    def __init__(self, attribute="word", offsets=(-2, -1, 0, 1, 2), ngram_range=(1, 1), lowercase=False):
        self.attribute = attribute
        self.offsets = offsets
        self.ngram_range = ngram_range
        self.lowercase = lowercase

    _param_kinds = {"attribute": "attribute", "lowercase": "bool", "offsets": "offsets"}

    def _validate_params(self):
        offsets = self._checked_params()["offsets"]
        rng = self.ngram_range
        if isinstance(rng, (str, bytes)):
            raise ValueError(f"ngram_range must be a tuple (min_n, max_n), got {rng!r}")
        try:
            min_n, max_n = rng
        except (TypeError, ValueError):
            raise ValueError(f"ngram_range must be a tuple (min_n, max_n), got {rng!r}") from None
        min_n = check_int(min_n, "ngram_range[0]", 1)
        max_n = check_int(max_n, "ngram_range[1]", 1)
        if min_n > max_n:
            raise ValueError(f"ngram_range must satisfy min_n <= max_n, got {rng!r}")
        offset_set = set(offsets)
        specs = []
        # an n-gram longer than the window has no offsets to sit on (and a huge max_n
        # must not loop for ever)
        for n in range(min_n, min(max_n, len(offsets)) + 1):
            for o in offsets:
                if all(o + k in offset_set for k in range(n)):
                    specs.append((n, o))
        return specs

    def _transform_named(self, seqs, prefix, weight, cache):
        specs = self._validate_params()
        attr = self.attribute
        lower = bool(self.lowercase)
        values = token_attribute_values(seqs, attr, cache)
        if not specs:  # e.g. offsets=(0, 2) with ngram_range=(2, 2): nothing to emit
            return [[{} for _ in vals] for vals in values]
        n_left = max(0, -min(o for _, o in specs))
        n_right = max(0, max(o + n - 1 for n, o in specs))
        left = [BOS] * n_left
        right = [EOS] * n_right
        ns = sorted({n for n, _ in specs})
        # One memo (value or joined n-gram -> observation name) per (n, offset); the
        # names are built once per distinct value and shared by all tokens.
        bases = {}
        memos = {}
        known = {}
        for n, o in specs:
            base = f"{prefix}{attr}@{o}=" if n == 1 else f"{prefix}{attr}@{o}..{o + n - 1}="
            bases[n, o] = base
            if n == 1:
                memos[n, o] = {BOS: base + BOS, EOS: base + EOS}
            else:
                memos[n, o] = {}
            known[n] = set(memos[n, o]) if n == 1 else set()
        specs_by_n = {n: [(o, memos[n, o], bases[n, o]) for m, o in specs if m == n] for n in ns}
        fromkeys = dict.fromkeys
        out = []
        append = out.append
        for vals in values:
            m = len(vals)
            if m == 0:
                append([])
                continue
            if any(v.__class__ is tuple for v in vals):
                append(_multi_rows(vals, specs, bases, n_left, n_right, lower, weight))
                continue
            padded = left + vals + right
            cols = []
            for n in ns:
                if n == 1:
                    units = padded
                    kn = known[1]
                    new = set(padded).difference(kn)
                    if new:
                        kn.update(new)
                        for _o, memo, base in specs_by_n[1]:
                            if lower:
                                for v in new:
                                    memo[v] = base + v.lower()
                            else:
                                for v in new:
                                    memo[v] = base + v
                else:
                    if lower:
                        lp = [v if v == BOS or v == EOS else v.lower() for v in padded]
                    else:
                        lp = padded
                    units = ["|".join(lp[j:j + n]) for j in range(len(lp) - n + 1)]
                    kn = known[n]
                    new = set(units).difference(kn)
                    if new:
                        kn.update(new)
                        for _o, memo, base in specs_by_n[n]:
                            for g in new:
                                memo[g] = base + g
                for o, memo, _base in specs_by_n[n]:
                    start = n_left + o
                    cols.append(list(map(memo.__getitem__, units[start:start + m])))
            if len(cols) == 1:
                append([{k: weight} for k in cols[0]])
            else:
                append([fromkeys(t, weight) for t in zip(*cols)])
        return out


def _multi_rows(vals, specs, bases, n_left, n_right, lower, weight):
    """Rows of one sequence holding multi-valued tokens: one name per combination of values."""
    padded = [(BOS,)] * n_left + [value_list(v) for v in vals] + [(EOS,)] * n_right
    if lower:
        padded = [tuple(dict.fromkeys(x if x == BOS or x == EOS else x.lower() for x in vs))
                  for vs in padded]
    rows = []
    for t in range(len(vals)):
        d = {}
        for n, o in specs:
            start = n_left + t + o
            base = bases[n, o]
            for combo in product(*padded[start:start + n]):
                d[base + "|".join(combo)] = weight
        rows.append(d)
    return rows
