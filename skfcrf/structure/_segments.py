"""Label chains <-> nested segments.

A label sequence of ``n_chains`` chains (chain 0 finest) describes a tree: the whole
sequence (the root) holds the segments of the coarsest chain, each of which holds
the segments of the next finer chain that lie inside it, down to chain 0.

Label conventions (all configurable):

* a label starting with a *begin prefix* (``"Begin"``, ``"B-"``) starts a segment
  whose type is the rest of the label (``BeginDiagnosis`` -> ``Diagnosis``);
* a label starting with an *inside prefix* (``"I-"``) or a bare label (``Diagnosis``)
  continues a segment of that type;
* an *outside label* (``"O"``) marks tokens in no segment; a run of them is kept in
  the tree as a segment whose ``label`` is ``None``;
* a *single-token label* (``"Enummarker"``, which has no Begin variant in the
  thesis) is a segment of one token, every time it occurs.

Parsing is lenient, like conlleval: a continuation label whose type differs from
the previous token's also starts a segment (it is *inconsistent*; :func:`repair`
turns it into a Begin label).
"""
from dataclasses import dataclass, field

import numpy as np

from skfcrf._validation import check_label_sequences

__all__ = ["Segment", "LabelScheme", "chains_to_segments", "segments_to_chains", "find_violations"]

DEFAULT_BEGIN_PREFIXES = ("Begin", "B-")
DEFAULT_INSIDE_PREFIXES = ("I-",)
DEFAULT_OUTSIDE_LABELS = ("O",)
DEFAULT_SINGLE_TOKEN_LABELS = ("Enummarker",)


@dataclass(eq=True)
class Segment:
    """A segment of one label chain, with the finer segments it contains.

    Attributes
    ----------
    level : int
        Chain index (0 = finest).  The root returned by :func:`chains_to_segments`
        has ``level == n_chains`` and spans the whole sequence.
    label : str or None
        Segment type, without prefix (``"Diagnosis"``, ``"NP"``).  ``None`` for a run
        of outside tokens, and for the root.
    start, end : int
        Token span ``[start, end)``.
    children : list of Segment
        Segments of chain ``level - 1`` covering ``[start, end)`` in order (empty at
        level 0).
    begin_prefix : str
        Prefix of the label on the first token: ``"Begin"`` or ``"B-"``; ``""`` for
        single-token labels; the continuation prefix (``""``, ``"I-"``) when the
        segment starts without a Begin label (inconsistent input, kept as is).
    inside_prefix : str
        Prefix of the continuation labels (``""`` or ``"I-"``).
    tokens : list or None
        The tokens of the span when tokens were given (not part of ``repr``).
    continued : bool
        Set by :func:`chains_to_segments` on the second and later pieces of a
        segment that a coarser boundary cut (lenient parsing): the segment did not
        really start at ``start`` in the labels.  ``False`` otherwise (a class
        default, not a constructor argument).
    """

    level: int
    label: object
    start: int
    end: int
    children: list = field(default_factory=list)
    begin_prefix: str = "Begin"
    inside_prefix: str = ""
    tokens: object = field(default=None, repr=False, compare=False)

    def __len__(self):
        return self.end - self.start

    @property
    def is_outside(self):
        """Whether this is a run of outside tokens (and not the root)."""
        return self.label is None and not self._root

    _root = False
    _from_heading = False
    continued = False

    def iter(self, level=None):
        """Yield this segment and its descendants depth first, or only those at ``level``."""
        stack = [self]
        while stack:
            seg = stack.pop()
            if level is None or seg.level == level:
                yield seg
            if seg.level > (level if level is not None else -1):
                stack.extend(reversed(seg.children))

    def text(self, sep=" "):
        """The segment's tokens joined (``str`` tokens, or the ``"word"`` of dict tokens)."""
        if self.tokens is None:
            raise ValueError("this segment tree was built without tokens")
        return sep.join(t if isinstance(t, str) else str(t.get("word", "")) for t in self.tokens)


class LabelScheme:
    """How labels encode segments: begin/inside prefixes, outside and single-token labels.

    Parameters
    ----------
    begin_prefixes : str or tuple of str, default=("Begin", "B-")
    inside_prefixes : str or tuple of str, default=("I-",)
    outside_labels : tuple, default=("O",)
    single_token_labels : tuple, default=("Enummarker",)
    """

    def __init__(self, begin_prefixes=DEFAULT_BEGIN_PREFIXES, inside_prefixes=DEFAULT_INSIDE_PREFIXES,
                 outside_labels=DEFAULT_OUTSIDE_LABELS, single_token_labels=DEFAULT_SINGLE_TOKEN_LABELS):
        if isinstance(begin_prefixes, str):
            begin_prefixes = (begin_prefixes,)
        if isinstance(inside_prefixes, str):
            inside_prefixes = (inside_prefixes,)
        self.begin_prefixes = tuple(sorted(begin_prefixes, key=len, reverse=True))
        self.inside_prefixes = tuple(sorted(inside_prefixes, key=len, reverse=True))
        if not self.begin_prefixes or any(not isinstance(p, str) or not p for p in self.begin_prefixes):
            raise ValueError(f"begin_prefixes must be non-empty strings, got {begin_prefixes!r}")
        if any(not isinstance(p, str) or not p for p in self.inside_prefixes):
            raise ValueError(f"inside_prefixes must be non-empty strings, got {inside_prefixes!r}")
        self.default_begin = tuple(begin_prefixes)[0]
        self.outside = frozenset(outside_labels)
        self.single = frozenset(single_token_labels)
        self._cache = {}
        self._inside_cache = {}

    def counterpart(self, inside_prefix):
        """Begin prefix matching an inside prefix (``"I-"`` -> ``"B-"``)."""
        if inside_prefix:
            for bp in self.begin_prefixes:
                if len(bp) == len(inside_prefix) and bp[1:] == inside_prefix[1:]:
                    return bp
        return self.default_begin

    def inside_for(self, begin_prefix):
        """Inside prefix matching a begin prefix (``"B-"`` -> ``"I-"``, else ``""``)."""
        for ip in self.inside_prefixes:
            if len(ip) == len(begin_prefix) and ip[1:] == begin_prefix[1:]:
                return ip
        return ""

    def _inside_for_cached(self, begin_prefix):
        try:
            return self._inside_cache[begin_prefix]
        except KeyError:
            res = self._inside_cache[begin_prefix] = self.inside_for(begin_prefix)
            return res

    def parse(self, lab):
        """``label -> (type, kind, prefix)``; kind is "B", "I", "O" (outside) or "S" (single)."""
        try:
            return self._cache[lab]
        except KeyError:
            pass
        except TypeError:  # unhashable
            return (lab, "I", "")
        if lab in self.outside:
            res = (None, "O", "")
        elif lab in self.single:
            res = (lab, "S", "")
        elif not isinstance(lab, str):
            res = (lab, "I", "")
        else:
            res = None
            for p in self.begin_prefixes:
                if lab.startswith(p) and len(lab) > len(p):
                    res = (lab[len(p):], "B", p)
                    break
            if res is None:
                for p in self.inside_prefixes:
                    if lab.startswith(p) and len(lab) > len(p):
                        res = (lab[len(p):], "I", p)
                        break
            if res is None:
                res = (lab, "I", "")
        self._cache[lab] = res
        return res

    def begin_form(self, lab):
        """The Begin label for a continuation label (``Sentence`` -> ``BeginSentence``)."""
        typ, kind, prefix = self.parse(lab)
        if kind != "I" or not isinstance(lab, str):
            return lab
        return self.counterpart(prefix) + typ

    def boundaries(self, col):
        """Lenient segmentation of one chain.

        Returns
        -------
        starts : list of bool
            Whether each token starts a segment (outside runs count as segments).
        infos : list of tuple
            ``parse(label)`` per token.
        """
        parse = self.parse
        starts, infos = [], []
        prev = _NOTHING
        pinfo = (None, "X", "")
        for lab in col:
            if lab.__class__ is str and lab == prev:
                info = pinfo
                start = info[1] in "BS"
            else:
                info = parse(lab)
                kind = info[1]
                pkind = pinfo[1]
                if kind in "BS" or pkind in "SX":
                    start = True
                elif kind == "O":
                    start = pkind != "O"
                else:
                    start = pkind == "O" or info[0] != pinfo[0]
                prev = lab
            starts.append(start)
            infos.append(info)
            pinfo = info
        return starts, infos


_NOTHING = object()


def _scheme(scheme=None, **kwargs):
    if scheme is not None:
        return scheme
    return LabelScheme(**kwargs)


def _as_2d(labels, name="labels"):
    seqs, one_chain = check_label_sequences([labels], name=name)
    return seqs[0], one_chain


def _chain_spans(col, scheme):
    """Segments of one chain: list of [start, end, type, kind, begin_prefix, inside_prefix]."""
    spans = []
    starts, infos = scheme.boundaries(col)
    for t, start in enumerate(starts):
        typ, kind, prefix = infos[t]
        if start:
            if kind == "B":
                bp, ip = prefix, scheme._inside_for_cached(prefix)
            elif kind == "I":  # inconsistent start: keep the continuation label as it is
                bp, ip = prefix, prefix
            else:
                bp, ip = "", ""
            spans.append([t, t + 1, typ, kind, bp, ip])
        else:
            last = spans[-1]
            last[1] = t + 1
            if kind == "I":
                last[5] = prefix
    return spans


def find_violations(labels, *, scheme=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
                    inside_prefixes=DEFAULT_INSIDE_PREFIXES, outside_labels=DEFAULT_OUTSIDE_LABELS,
                    single_token_labels=DEFAULT_SINGLE_TOKEN_LABELS):
    """List the formal constraint violations of one label sequence.

    Two kinds are reported, as ``(chain, token, kind)`` tuples:

    * ``"begin"``: a segment starts with a continuation label (``Plan Plan
      Diagnosis``: the ``Diagnosis`` segment has no ``BeginDiagnosis``);
    * ``"hierarchy"``: a segment boundary on a coarser chain falls inside a segment
      of a finer chain (the finer chain has no boundary at that token).  Runs of
      outside tokens may be split freely and never violate.

    Parameters
    ----------
    labels : array-like, shape (n_tokens,) or (n_tokens, n_chains)
    scheme : LabelScheme, optional
        Overrides the four label-convention parameters below.
    begin_prefixes, inside_prefixes, outside_labels, single_token_labels
        See :class:`LabelScheme`.

    Returns
    -------
    violations : list of (int, int, str)
    """
    sc = _scheme(scheme, begin_prefixes=begin_prefixes, inside_prefixes=inside_prefixes,
                 outside_labels=outside_labels, single_token_labels=single_token_labels)
    arr, _ = _as_2d(labels)
    n, c = arr.shape
    out = []
    coarse = np.zeros(n, dtype=bool)
    for k in range(c - 1, -1, -1):
        starts, infos = sc.boundaries(arr[:, k].tolist())
        for t, start in enumerate(starts):
            kind = infos[t][1]
            if start and kind == "I":
                out.append((k, t, "begin"))
            elif coarse[t] and not start and kind != "O":
                out.append((k, t, "hierarchy"))
        coarse |= np.array(starts, dtype=bool)
    out.sort()
    return out


def chains_to_segments(tokens, labels, *, scheme=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
                       inside_prefixes=DEFAULT_INSIDE_PREFIXES, outside_labels=DEFAULT_OUTSIDE_LABELS,
                       single_token_labels=DEFAULT_SINGLE_TOKEN_LABELS, strict=False):
    """Turn the label chains of one sequence into a tree of nested segments.

    Parameters
    ----------
    tokens : sequence or None
        The tokens (stored on every segment as ``Segment.tokens``); ``None`` to omit.
    labels : array-like, shape (n_tokens,) or (n_tokens, n_chains)
        Chain 0 is the finest level.  A 1-D sequence is one chain.
    scheme : LabelScheme, optional
        Overrides the label-convention parameters below.
    begin_prefixes : str or tuple of str, default=("Begin", "B-")
    inside_prefixes : str or tuple of str, default=("I-",)
    outside_labels : tuple, default=("O",)
    single_token_labels : tuple, default=("Enummarker",)
    strict : bool, default=False
        Raise ``ValueError`` on any formal violation (see :func:`find_violations`)
        instead of parsing leniently.  Leniently, a segment that a coarser boundary
        cuts is split in two; the second part keeps its continuation label (its
        ``begin_prefix`` is the inside prefix), so :func:`segments_to_chains` still
        gives back the input.

    Returns
    -------
    root : Segment
        ``level == n_chains``, ``label is None``, spanning all tokens; its children are
        the segments of the coarsest chain.

    Examples
    --------
    >>> root = chains_to_segments("a b c".split(), [("BeginS", "BeginP"), ("S", "P"), ("BeginS", "P")])
    >>> [(s.label, s.start, s.end) for s in root.children[0].children]
    [('S', 0, 2), ('S', 2, 3)]
    """
    sc = _scheme(scheme, begin_prefixes=begin_prefixes, inside_prefixes=inside_prefixes,
                 outside_labels=outside_labels, single_token_labels=single_token_labels)
    arr, _ = _as_2d(labels)
    n, c = arr.shape
    if tokens is not None:
        tokens = list(tokens)
        if len(tokens) != n:
            raise ValueError(f"{len(tokens)} tokens but {n} labels")
    if strict:
        bad = find_violations(arr, scheme=sc)
        if bad:
            k, t, kind = bad[0]
            what = ("a segment starts without a Begin label" if kind == "begin"
                    else "a coarser chain has a boundary inside one of this chain's segments")
            raise ValueError(f"chain {k}, token {t}: {what} ({len(bad)} violation(s) in all)")
    root = Segment(level=c, label=None, start=0, end=n, children=[], begin_prefix="", inside_prefix="",
                   tokens=tokens)
    root._root = True
    parents = [root]
    for k in range(c - 1, -1, -1):
        spans = _chain_spans(arr[:, k].tolist(), sc)
        # cut spans at the boundaries of the parents (lenient: hierarchy violations)
        cuts = sorted({p.start for p in parents})
        segs = []
        ci = 0
        for s, e, typ, _kind, bp, ip in spans:
            while ci < len(cuts) and cuts[ci] <= s:
                ci += 1
            pos = s
            first = True
            while ci < len(cuts) and cuts[ci] < e:
                segs.append(_new(k, typ, pos, cuts[ci], bp if first else ip, ip, tokens))
                if not first:
                    segs[-1].continued = True
                first = False
                pos = cuts[ci]
                ci += 1
            segs.append(_new(k, typ, pos, e, bp if first else ip, ip, tokens))
            if not first:
                segs[-1].continued = True
        pi = 0
        for seg in segs:
            while parents[pi].end <= seg.start:
                pi += 1
            parents[pi].children.append(seg)
        parents = segs
    return root


def _new(level, typ, start, end, bp, ip, tokens):
    return Segment(level=level, label=typ, start=start, end=end, children=[], begin_prefix=bp,
                   inside_prefix=ip, tokens=None if tokens is None else tokens[start:end])


def segments_to_chains(root, *, outside_label="O", dtype=object):
    """Turn a segment tree back into label chains (the inverse of :func:`chains_to_segments`).

    Each segment writes ``begin_prefix + label`` on its first token and
    ``inside_prefix + label`` on the others; outside runs (``label is None``) write
    ``outside_label``.  Segments built by hand get ``begin_prefix="Begin"`` and
    ``inside_prefix=""`` by default; use ``"B-"``/``"I-"`` for BIO chains.

    Parameters
    ----------
    root : Segment
        A root as returned by :func:`chains_to_segments` (``level == n_chains``).
    outside_label : str, default="O"

    Returns
    -------
    labels : ndarray of dtype object, shape (n_tokens, n_chains)
        Use ``labels[:, 0]`` to get back a single chain as 1-D.

    Raises
    ------
    ValueError
        When children do not tile their parent exactly or skip a level.
    """
    n_chains = root.level
    n = root.end - root.start
    arr = np.empty((n, n_chains), dtype=dtype)
    off = root.start
    stack = [root]
    while stack:
        seg = stack.pop()
        if seg.level > 0:
            pos = seg.start
            for ch in seg.children:
                if ch.level != seg.level - 1:
                    raise ValueError(f"a level-{seg.level} segment has a level-{ch.level} child")
                if ch.start != pos or ch.end <= ch.start:
                    raise ValueError(
                        f"the children of the level-{seg.level} segment [{seg.start}, {seg.end}) "
                        f"do not tile it (gap or overlap at token {pos})"
                    )
                pos = ch.end
            if pos != seg.end:
                raise ValueError(
                    f"the children of the level-{seg.level} segment [{seg.start}, {seg.end}) "
                    f"end at token {pos}"
                )
            stack.extend(seg.children)
        elif seg.children:
            raise ValueError("a level-0 segment has children")
        if seg is root:
            continue
        k = seg.level
        if seg.label is None:
            arr[seg.start - off:seg.end - off, k] = outside_label
        else:
            inside = seg.inside_prefix + seg.label if isinstance(seg.label, str) else seg.label
            first = seg.begin_prefix + seg.label if isinstance(seg.label, str) else seg.label
            arr[seg.start - off, k] = first
            if seg.end - seg.start > 1:
                arr[seg.start + 1 - off:seg.end - off, k] = inside
    return arr
