"""Order-free concept counts in a token window: :class:`BagOfConcepts`, :func:`light_stem`."""
import math
from collections.abc import Iterable, Mapping
from numbers import Integral

from skfcrf.transformers._base import SequenceTransformerMixin, token_attribute_values

__all__ = ["BagOfConcepts", "light_stem"]

# (suffix, replacement, minimum stem length left after removing the suffix), tried in
# order; the first matching rule is applied (one rule only, no recursion).
_SUFFIX_RULES = (
    ("'s", "", 1),
    ("ational", "ate", 2),
    ("ization", "ize", 2),
    ("fulness", "ful", 2),
    ("ousness", "ous", 2),
    ("iveness", "ive", 2),
    ("ements", "", 3),
    ("ement", "", 3),
    ("ments", "", 3),
    ("ment", "", 3),
    ("nesses", "", 3),
    ("ness", "", 3),
    ("ingly", "", 3),
    ("edly", "", 3),
    ("ings", "", 3),
    ("ing", "", 3),
    ("ied", "y", 2),
    ("ies", "y", 2),
    ("eed", "eed", 1),  # agreed, freed: keep
    ("ed", "", 3),
    ("ly", "", 3),
    ("sses", "ss", 1),
    ("ss", "ss", 1),  # keep: illness, loss
    ("us", "us", 1),  # keep: status, virus
    ("is", "is", 1),  # keep: diagnosis, analysis
    ("ys", "y", 2),
    ("es", "e", 3),  # diseases -> disease, notes -> note
    ("s", "", 3),
)
_NO_UNDOUBLE = frozenset("lsz")
_VOWELS = frozenset("aeiouy")


def light_stem(word):
    """A small, dependency-free suffix stripper (much lighter than Porter's stemmer).

    The word is lowercased; one suffix rule (the first match of a fixed list of
    plural, verbal, adverbial and derivational suffixes) is applied when enough of
    the word remains; after removing ``-ing``/``-ed`` a doubled final consonant is
    undoubled (``running`` -> ``run``, but ``swelling`` -> ``swell``).  Words of at
    most three characters and words without a vowel left after stripping are kept.

    Parameters
    ----------
    word : str

    Returns
    -------
    str

    Examples
    --------
    >>> [light_stem(w) for w in ["Patients", "bleeding", "studies", "diagnosis", "stopped"]]
    ['patient', 'bleed', 'study', 'diagnosis', 'stop']
    """
    w = word.lower()
    if len(w) <= 3:
        return w
    for suffix, repl, min_stem in _SUFFIX_RULES:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if len(stem) < min_stem or not any(c in _VOWELS for c in stem):
                return w
            if suffix in ("ing", "ed", "ings", "ingly", "edly"):
                if (
                    len(stem) >= 3
                    and stem[-1] == stem[-2]
                    and stem[-1] not in _VOWELS
                    and stem[-1] not in _NO_UNDOUBLE
                    and stem[-1].isalpha()
                ):
                    stem = stem[:-1]
            return stem + repl
    return w


_NORMALIZE = (None, "l1", "l2", "log")


class BagOfConcepts(SequenceTransformerMixin):
    """Order-free counts of concepts in a window of ``+-window`` tokens.

    Every token is mapped to zero or more *concepts*: through ``concept_map`` when
    it knows the token (e.g. UMLS concept ids such as ``C0011849``, or the ids of any
    ontology), otherwise to the token's :func:`light_stem`.  For the token at
    position ``t`` the observations are the counts (TF values) of the concepts of the
    tokens ``t-window .. t+window`` (inclusive, clipped at the sequence edges; the
    token itself counts), named

    - ``concept={id}`` for concepts from ``concept_map``, e.g. ``concept=C0011849``
      with value 2.0 when two tokens in the window map to it;
    - ``stem={stem}`` for tokens without a concept, e.g. ``stem=fever``.

    Counts are maintained with a sliding window, so the cost is linear in the
    sequence length (plus the size of the output).

    Parameters
    ----------
    window : int, default=10
        Half width of the window (>= 0); 0 counts only the token itself.
    concept_map : dict, callable or None, default=None
        Maps an attribute value to its concept(s).  A mapping is looked up with the
        value, then with the lowercased value; a callable is called with the value.
        A result may be a concept id (``str``), an iterable of ids (each is counted;
        duplicates counted once) or ``None``/empty (no concept: fall back to the
        stem).  The map is consulted once per distinct value per ``transform`` call,
        so a callable must be deterministic.  To pickle the transformer, use a dict
        or a module-level function (not a lambda).  ``None`` uses stems only.
    attribute : str, default="word"
        Token attribute read (e.g. ``"lemma"`` to map lemmas; needs dict tokens).
    normalize : {None, "l1", "l2", "log"}, default=None
        ``None``: raw counts; ``"l1"``: counts divided by the window's total count
        (values sum to 1); ``"l2"``: counts divided by their Euclidean norm;
        ``"log"``: sublinear TF ``1 + ln(count)`` (a single occurrence gives 1.0).
    stem_fallback : bool, default=True
        Whether a value the map does not know counts as its stem (``stem=...``).
        ``False`` counts only mapped concepts: use it for a second bag over a
        semantic-type map (thesis section 3.4: concepts and their semantic types),
        so that the stems are not counted twice; unknown values then contribute
        nothing.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        The ``concept=``/``stem=`` names seen in ``fit``, sorted.

    Notes
    -----
    Tokens whose value (or stem) is the empty string contribute nothing.  A
    multi-valued attribute (list, tuple or set) counts the concepts of each of its
    values (a concept given by two values of one token is counted once).
    Stateless: ``transform`` works without ``fit``; ``fit`` validates the parameters
    and collects names for :meth:`get_feature_names_out`.

    Examples
    --------
    >>> from skfcrf.transformers import BagOfConcepts
    >>> bag = BagOfConcepts(window=1, concept_map={"fever": "C0015967"})
    >>> bag.transform([["fever", "and", "fevers"]])[0][1]
    {'concept=C0015967': 1.0, 'stem=and': 1.0, 'stem=fever': 1.0}

    A second bag over semantic types, without the stems:

    >>> types = BagOfConcepts(window=1, concept_map={"fever": "T184"}, stem_fallback=False)
    >>> types.transform([["fever", "and", "fevers"]])[0]
    [{'concept=T184': 1.0}, {'concept=T184': 1.0}, {}]
    """

    def __init__(self, window=10, concept_map=None, attribute="word", normalize=None,
                 stem_fallback=True):
        self.window = window
        self.concept_map = concept_map
        self.attribute = attribute
        self.normalize = normalize
        self.stem_fallback = stem_fallback

    _param_kinds = {"window": ("int", 0), "attribute": "attribute", "stem_fallback": "bool"}

    def _validate_params(self):
        self._checked_params()
        cm = self.concept_map
        if cm is not None and not isinstance(cm, Mapping) and not callable(cm):
            raise ValueError(
                f"concept_map must be None, a dict or a callable, got {type(cm).__name__}"
            )
        if self.normalize not in _NORMALIZE:
            raise ValueError(
                f"normalize must be one of None, 'l1', 'l2', 'log'; got {self.normalize!r}"
            )

    def _names_for(self, value, prefix):
        """Observation names (a tuple) of the concepts of one attribute value."""
        if value.__class__ is tuple:  # multi-valued attribute: the union, in order
            names = []
            for v in value:
                names.extend(n for n in self._names_for(v, prefix) if n not in names)
            return tuple(names)
        cm = self.concept_map
        found = None
        if cm is not None:
            if isinstance(cm, Mapping):
                found = cm.get(value)
                if found is None:
                    low = value.lower()
                    if low != value:
                        found = cm.get(low)
            else:
                found = cm(value)
        if found is not None and not (isinstance(found, str) and not found):
            if isinstance(found, str):
                return (f"{prefix}concept={found}",)
            if isinstance(found, Iterable) and not isinstance(found, (bytes, Mapping)):
                ids = []
                for c in found:
                    if c is None:
                        continue
                    c = c if isinstance(c, str) else str(c)
                    if c and c not in ids:
                        ids.append(c)
                if ids:
                    return tuple(f"{prefix}concept={c}" for c in ids)
            elif isinstance(found, Integral) and not isinstance(found, bool):
                return (f"{prefix}concept={found}",)
            else:
                raise ValueError(
                    f"concept_map gave {found!r} for {value!r}; expected a concept id "
                    "(str), an iterable of ids, or None"
                )
        if not self.stem_fallback:
            return ()
        stem = light_stem(value)
        return (f"{prefix}stem={stem}",) if stem else ()

    def _transform_named(self, seqs, prefix, weight, cache):
        self._validate_params()
        w = int(self.window)
        norm = self.normalize
        values = token_attribute_values(seqs, self.attribute, cache)
        memo = {}
        names_for = self._names_for
        out = []
        append = out.append
        plain = norm is None and weight == 1.0
        log = math.log
        sqrt = math.sqrt
        for vals in values:
            n = len(vals)
            if n == 0:
                append([])
                continue
            new = set(vals).difference(memo)
            for v in new:
                memo[v] = names_for(v, prefix)
            toks = list(map(memo.__getitem__, vals))
            counts = {}
            get = counts.get
            total = 0  # number of concept occurrences in the window (for l1)
            sumsq = 0  # sum of squared counts (for l2)
            for j in range(min(w + 1, n)):
                for k in toks[j]:
                    c = get(k, 0.0)
                    counts[k] = c + 1.0
                    total += 1
                    sumsq += 2 * c + 1
            rows = []
            rappend = rows.append
            for i in range(n):
                if plain:
                    rappend(counts.copy())
                elif norm is None:
                    rappend({k: c * weight for k, c in counts.items()})
                elif norm == "l1":
                    f = weight / total if total else 0.0
                    rappend({k: c * f for k, c in counts.items()})
                elif norm == "l2":
                    f = weight / sqrt(sumsq) if sumsq else 0.0
                    rappend({k: c * f for k, c in counts.items()})
                else:  # log
                    rappend({k: (1.0 + log(c)) * weight for k, c in counts.items()})
                j = i + w + 1
                if j < n:
                    for k in toks[j]:
                        c = get(k, 0.0)
                        counts[k] = c + 1.0
                        total += 1
                        sumsq += 2 * c + 1
                j = i - w
                if j >= 0:
                    for k in toks[j]:
                        c = counts[k] - 1.0
                        total -= 1
                        sumsq -= 2 * c + 1
                        if c:
                            counts[k] = c
                        else:
                            del counts[k]
            append(rows)
        return out
