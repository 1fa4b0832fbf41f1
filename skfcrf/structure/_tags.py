"""Converting one label chain between tagging schemes: BIO <-> BIOES and BME.

* **BIO** (also the thesis's ``BeginX``/``X`` notation): ``B-X`` starts a segment,
  ``I-X`` continues it, ``O`` is outside.
* **BIOES**: ``B-X`` first, ``I-X`` inner, ``E-X`` last token of a segment of two or
  more tokens; ``S-X`` a one-token segment; ``O`` outside.
* **BME** (Chou 2006, the *state-beginning / state-middle / state-end* split of a
  state): ``B-X`` first, ``M-X`` inner, ``E-X`` last token; a one-token segment is
  ``B-X`` alone; ``O`` outside.

Reading BIO-like input is lenient, as everywhere in :mod:`skfcrf.structure`: a
continuation label whose type differs from the previous token's (or that follows
``O``) starts a segment.  All functions take one chain (a 1-D sequence of str) and
return a list of str.
"""
from skfcrf.structure._segments import (
    DEFAULT_BEGIN_PREFIXES,
    DEFAULT_INSIDE_PREFIXES,
    DEFAULT_OUTSIDE_LABELS,
    LabelScheme,
    _chain_spans,
)

__all__ = ["to_bioes", "to_bme", "to_bio"]


def _chain(labels):
    if isinstance(labels, str):
        raise ValueError("labels must be a sequence of labels, not a str")
    labels = list(labels)
    for t, lab in enumerate(labels):
        if not isinstance(lab, str):
            raise ValueError(f"labels[{t}] must be a str, got {lab!r}")
    return labels


def _spans(labels, begin_prefixes, inside_prefixes, outside_labels):
    sc = LabelScheme(begin_prefixes, inside_prefixes, outside_labels, ())
    return [(s, e, typ) for s, e, typ, kind, _, _ in _chain_spans(labels, sc)]


def _write(n, spans, first, inner, last, single, outside):
    out = [outside] * n
    for s, e, typ in spans:
        if typ is None:
            continue
        if e - s == 1:
            out[s] = single + typ
            continue
        out[s] = first + typ
        for t in range(s + 1, e - 1):
            out[t] = inner + typ
        out[e - 1] = last + typ
    return out


def _retag(labels, begin_prefixes, inside_prefixes, outside_labels, prefixes):
    """Read one BIO-like chain and write it with ``prefixes`` = (first, inner, last, single)."""
    labels = _chain(labels)
    spans = _spans(labels, begin_prefixes, inside_prefixes, outside_labels)
    return _write(len(labels), spans, *prefixes, "O")


def to_bioes(labels, *, begin_prefixes=DEFAULT_BEGIN_PREFIXES, inside_prefixes=DEFAULT_INSIDE_PREFIXES,
             outside_labels=DEFAULT_OUTSIDE_LABELS):
    """BIO (or ``BeginX``/``X``) labels of one chain as BIOES labels.

    Parameters
    ----------
    labels : sequence of str
    begin_prefixes, inside_prefixes, outside_labels
        How the input encodes segments (see :class:`LabelScheme`).

    Returns
    -------
    list of str
        ``B-``/``I-``/``E-``/``S-`` + type, and ``"O"`` for outside tokens.

    Examples
    --------
    >>> to_bioes(["B-NP", "I-NP", "I-NP", "O", "B-VP", "BeginPlan", "Plan"])
    ['B-NP', 'I-NP', 'E-NP', 'O', 'S-VP', 'B-Plan', 'E-Plan']
    """
    return _retag(labels, begin_prefixes, inside_prefixes, outside_labels, ("B-", "I-", "E-", "S-"))


def to_bme(labels, *, begin_prefixes=DEFAULT_BEGIN_PREFIXES, inside_prefixes=DEFAULT_INSIDE_PREFIXES,
           outside_labels=DEFAULT_OUTSIDE_LABELS):
    """BIO (or ``BeginX``/``X``) labels of one chain as Chou's BME states.

    The parameters are those of :func:`to_bioes`.

    Returns
    -------
    list of str
        ``B-``/``M-``/``E-`` + type (a one-token segment is ``B-`` alone), ``"O"``
        for outside tokens.

    Examples
    --------
    >>> to_bme(["B-title", "I-title", "I-title", "B-year", "O"])
    ['B-title', 'M-title', 'E-title', 'B-year', 'O']
    """
    return _retag(labels, begin_prefixes, inside_prefixes, outside_labels, ("B-", "M-", "E-", "B-"))


_STARTS = {"bioes": ("B-", "S-"), "bme": ("B-",)}
_ENDS = {"bioes": ("E-", "S-"), "bme": ("E-",)}
_ALL = {"bioes": ("B-", "I-", "E-", "S-"), "bme": ("B-", "M-", "E-")}


def to_bio(labels, scheme="bioes", *, begin="B-", inside="I-", outside="O"):
    """BIOES or BME labels of one chain back to BIO labels.

    A segment starts at a ``B-``/``S-`` label (BIOES) or ``B-`` label (BME), after an
    end label (``E-``, ``S-``), after ``O``, or where the type changes; so
    ``to_bio(to_bioes(x))`` and ``to_bio(to_bme(x), "bme")`` give back the BIO
    labels of ``x`` (with its inconsistent starts made explicit).

    Parameters
    ----------
    labels : sequence of str
    scheme : {"bioes", "bme"}, default="bioes"
    begin, inside : str, default="B-", "I-"
        Prefixes of the output; ``begin="Begin", inside=""`` writes the thesis's
        ``BeginX``/``X`` notation.
    outside : str, default="O"
        The outside label, in the input and the output.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        For a label that is neither ``outside`` nor prefixed as the scheme says.

    Examples
    --------
    >>> to_bio(["B-NP", "I-NP", "E-NP", "O", "S-VP"])
    ['B-NP', 'I-NP', 'I-NP', 'O', 'B-VP']
    >>> to_bio(["B-title", "M-title", "E-title", "B-year"], "bme", begin="Begin", inside="")
    ['Begintitle', 'title', 'title', 'Beginyear']
    """
    if scheme not in _ALL:
        raise ValueError(f"scheme must be 'bioes' or 'bme', got {scheme!r}")
    labels = _chain(labels)
    out = []
    prev_type, prev_end = None, True
    for t, lab in enumerate(labels):
        if lab == outside:
            out.append(outside)
            prev_type, prev_end = None, True
            continue
        pre = lab[:2]
        if pre not in _ALL[scheme] or len(lab) <= 2:
            raise ValueError(f"labels[{t}] = {lab!r} is not a {scheme.upper()} label")
        typ = lab[2:]
        start = pre in _STARTS[scheme] or prev_end or typ != prev_type
        out.append((begin if start else inside) + typ)
        prev_type, prev_end = typ, pre in _ENDS[scheme]
    return out
