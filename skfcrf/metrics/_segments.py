"""Segment-level metrics: typed-segment F1 (conlleval), WindowDiff and Pk."""
import re

import numpy as np

from skfcrf.metrics._common import DEFAULT_BEGIN_PREFIXES, begin_test, chain_pair

_CONLL_TAG = re.compile(r"^([^-]?)-(.*)$", re.DOTALL)


# ---------------------------------------------------------------------------
# Typed segments (conlleval)
# ---------------------------------------------------------------------------

def _tag_parser(begin_prefixes, outside_labels):
    """Return ``label -> (tag, type)`` as conlleval sees it.

    * labels in ``outside_labels`` -> ``("O", "")``;
    * labels starting with a begin prefix (``"B-X"``, ``"BeginX"``) -> ``("B", "X")``;
    * ``"T-X"`` with a tag ``T`` of at most one character (``I-X``, ``E-X``,
      ``S-X``...) -> ``("T", "X")``, exactly conlleval's split at the first hyphen;
    * any other label ``X`` (the inside label of the ``BeginX``/``X`` scheme,
      or a non-string label) -> ``("I", X)``.
    """
    outside = set(outside_labels)
    if isinstance(begin_prefixes, str):
        begin_prefixes = (begin_prefixes,)
    if callable(begin_prefixes):
        raise ValueError("segment_f1 needs begin_prefixes as strings, not a callable")
    prefixes = tuple(sorted(begin_prefixes, key=len, reverse=True))

    def parse(lab):
        if lab in outside:
            return "O", ""
        if not isinstance(lab, str):
            return "I", lab
        for pre in prefixes:
            if lab.startswith(pre):
                return "B", lab[len(pre):]
        m = _CONLL_TAG.match(lab)
        if m:
            return m.group(1), m.group(2)
        return "I", lab

    return parse


def _end_of_chunk(prev_tag, tag, prev_type, typ):
    end = (
        (prev_tag == "B" and tag in ("B", "O"))
        or (prev_tag == "I" and tag in ("B", "O"))
        or (prev_tag == "E" and tag in ("E", "I", "O"))
    )
    if prev_tag != "O" and prev_tag != "." and prev_type != typ:
        end = True
    if prev_tag in ("]", "["):
        end = True
    return end


def _start_of_chunk(prev_tag, tag, prev_type, typ):
    start = (
        (prev_tag in ("B", "I", "O") and tag == "B")
        or (prev_tag == "O" and tag in ("I", "E"))
        or (prev_tag == "E" and tag in ("E", "I"))
    )
    if tag != "O" and tag != "." and prev_type != typ:
        start = True
    if tag in ("[", "]"):
        start = True
    return start


def _conlleval_counts(true, pred, parse):
    """Replicate conlleval's streaming chunk counting.

    Each sequence is followed by a sentence break (both tags ``O``), as a blank
    line in a conlleval input file.

    Returns dicts ``found_correct``, ``found_guessed``, ``correct_chunk``
    keyed by segment type.
    """
    found_correct, found_guessed, correct_chunk = {}, {}, {}
    in_correct = False
    last_c, last_ct, last_g, last_gt = "O", "", "O", ""
    for t_seq, p_seq in zip(true, pred):
        stream = [(parse(t), parse(p)) for t, p in zip(t_seq.tolist(), p_seq.tolist())]
        stream.append((("O", ""), ("O", "")))
        for (c, ct), (g, gt) in stream:
            end_c = _end_of_chunk(last_c, c, last_ct, ct)
            end_g = _end_of_chunk(last_g, g, last_gt, gt)
            if in_correct:
                if end_c and end_g and last_gt == last_ct:
                    in_correct = False
                    correct_chunk[last_ct] = correct_chunk.get(last_ct, 0) + 1
                elif end_c != end_g or gt != ct:
                    in_correct = False
            start_c = _start_of_chunk(last_c, c, last_ct, ct)
            start_g = _start_of_chunk(last_g, g, last_gt, gt)
            if start_c and start_g and gt == ct:
                in_correct = True
            if start_c:
                found_correct[ct] = found_correct.get(ct, 0) + 1
            if start_g:
                found_guessed[gt] = found_guessed.get(gt, 0) + 1
            last_c, last_ct, last_g, last_gt = c, ct, g, gt
    if in_correct:  # pragma: no cover - the trailing sentence break closes chunks
        correct_chunk[last_ct] = correct_chunk.get(last_ct, 0) + 1
    return found_correct, found_guessed, correct_chunk


def _f1(correct, guessed, found):
    p = correct / guessed if guessed > 0 else 0.0
    r = correct / found if found > 0 else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def segment_counts(y_true, y_pred, chain=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
                   outside_labels=("O",)):
    """Per segment type: reference, predicted and exactly matched segment counts.

    Segments are found with conlleval's chunk start/end rules (see
    :func:`segment_f1`).

    Returns
    -------
    counts : dict
        ``{type: (n_true, n_pred, n_correct)}``, types sorted.

    Examples
    --------
    >>> segment_counts([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    {'PER': (1, 1, 0)}
    """
    true, pred, _ = chain_pair(y_true, y_pred, chain)
    fc, fg, cc = _conlleval_counts(true, pred, _tag_parser(begin_prefixes, outside_labels))
    types = sorted(set(fc) | set(fg), key=lambda x: (type(x).__name__, str(x)))
    return {t: (fc.get(t, 0), fg.get(t, 0), cc.get(t, 0)) for t in types}


def segment_f1(y_true, y_pred, chain=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
               outside_labels=("O",), average="micro"):
    """Exact typed-segment F1, compatible with the CoNLL ``conlleval`` script.

    A predicted segment counts as correct only if a reference segment has the
    same type, the same first and the same last token. Segments are found with
    conlleval's rules, so for ``B-X``/``I-X``/``O`` labels the result equals
    conlleval's overall ``FB1`` (divided by 100); in particular an ``I-X``
    after ``O`` (or after a segment of another type) starts a new segment.
    Labels are mapped to conlleval (tag, type) pairs as follows:

    * labels in ``outside_labels`` are outside any segment (tag ``O``);
    * a label starting with one of ``begin_prefixes`` (default ``"Begin"`` and
      ``"B-"``) begins a segment of the type given by the rest of the label, so
      ``BeginSentence`` is ``B-Sentence``;
    * ``I-X``, ``E-X`` and other labels with a one-character tag before the
      first hyphen are split as conlleval does;
    * any other label ``X`` (the ``BeginX``/``X`` scheme of the paper, or an
      integer label) is inside a segment of type ``X``, i.e. ``I-X``.

    Each sequence ends all open segments (a blank line in conlleval's input).

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    begin_prefixes : str or tuple of str, default=("Begin", "B-")
    outside_labels : tuple, default=("O",)
    average : {"micro", "macro"}, default="micro"
        ``"micro"`` is conlleval's overall F1 (from pooled counts);
        ``"macro"`` averages the per-type F1 (conlleval's per-type rows).

    Returns
    -------
    f1 : float in [0, 1]; 0 when there are no segments to match.

    Examples
    --------
    >>> segment_f1([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "I-LOC"]])
    1.0
    >>> segment_f1([["BeginSentence", "Sentence", "BeginSentence"]],
    ...            [["BeginSentence", "BeginSentence", "Sentence"]])
    0.0
    """
    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    counts = segment_counts(y_true, y_pred, chain, begin_prefixes, outside_labels)
    if average == "macro":
        if not counts:
            return 0.0
        return float(np.mean([_f1(c, g, n)[2] for n, g, c in counts.values()]))
    n = sum(v[0] for v in counts.values())
    g = sum(v[1] for v in counts.values())
    c = sum(v[2] for v in counts.values())
    return float(_f1(c, g, n)[2])


# ---------------------------------------------------------------------------
# Boundaries, WindowDiff, Pk
# ---------------------------------------------------------------------------

def _boundary_arrays(seqs, is_begin):
    """Boundary slots of each sequence: ``b[j] = 1`` iff token ``j + 1`` begins a segment."""
    return [
        np.fromiter((is_begin(lab) for lab in seq.tolist()[1:]), dtype=np.int8,
                    count=max(len(seq) - 1, 0))
        for seq in seqs
    ]


def segment_boundaries(y, chain=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES):
    """Between-token boundary indicators of one chain, per sequence.

    For a sequence of ``n`` tokens the result has ``n - 1`` entries; entry
    ``j`` is 1 iff token ``j + 1`` carries a Begin label, i.e. a segment
    boundary lies between tokens ``j`` and ``j + 1``. The trivial boundary
    before the first token is not represented.

    Parameters
    ----------
    y : list of array-like
        Label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    begin_prefixes : str, tuple of str or callable, default=("Begin", "B-")
        A label starting with one of the prefixes marks a boundary; a callable
        ``label -> bool`` may be given instead (e.g. for integer labels).

    Returns
    -------
    boundaries : list of ndarray of int8

    Examples
    --------
    >>> segment_boundaries([["BeginS", "S", "BeginS", "S"]])[0].tolist()
    [0, 1, 0]
    """
    seqs, _, _ = chain_pair(y, y, chain)
    return _boundary_arrays(seqs, begin_test(begin_prefixes))


def _window_counts(b, k):
    """Number of boundaries in each window ``b[i:i+k]``, ``i = 0..len(b)-k``."""
    c = np.concatenate(([0], np.cumsum(b, dtype=np.int64)))
    return c[k:] - c[:-k]


def _prepare(y_true, y_pred, chain, k, begin_prefixes):
    true, pred, _ = chain_pair(y_true, y_pred, chain)
    is_begin = begin_test(begin_prefixes)
    ref = _boundary_arrays(true, is_begin)
    hyp = _boundary_arrays(pred, is_begin)
    if k is None:
        k = default_k(ref, [len(s) for s in true])
    elif isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int or None, got {k!r}")
    k = int(k)
    pairs = [(r, h) for r, h in zip(ref, hyp) if len(r) >= k]
    if not pairs:
        raise ValueError(
            f"no sequence is long enough for a window of k={k} tokens "
            f"(longest has {max(len(s) for s in true)} tokens; need at least k + 1)"
        )
    return pairs, k


def default_k(ref_boundaries, lengths):
    """Half the mean reference segment length, ``max(1, round(n_tokens / (2 n_segments)))``.

    ``n_tokens`` and ``n_segments`` are pooled over all sequences; every
    sequence has ``1 + (number of boundaries)`` segments. Rounding uses
    Python's :func:`round` (half to even), like ``nltk``'s ``pk``.
    """
    n_tokens = int(sum(lengths))
    n_segments = len(lengths) + int(sum(int(np.sum(b)) for b in ref_boundaries))
    return max(1, int(round(n_tokens / (2.0 * n_segments))))


def windowdiff(y_true, y_pred, chain=None, k=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
               weighted=False, return_counts=False):
    """WindowDiff (Pevzner & Hearst 2002) of one chain, pooled over sequences.

    Boundaries come from Begin labels (see :func:`segment_boundaries`); the
    trivial boundary at the start of each sequence is not counted. For a
    sequence of ``n`` tokens the probe compares tokens ``i`` and ``i + k`` for
    ``i = 0..n-k-1`` (``n - k`` windows) and counts an error when the number
    of reference and predicted boundaries between them differ::

        WindowDiff = sum over sequences of erroneous windows
                     / sum over sequences of (n - k) windows

    i.e. a window-weighted mean of the per-sequence scores; windows never span
    two sequences. Sequences with ``n <= k`` tokens have no window and are
    skipped. Per sequence this equals
    ``nltk.metrics.segmentation.windowdiff(ref, hyp, k)`` on the ``n - 1``
    boundary slots returned by :func:`segment_boundaries`.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Reference and predicted label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    k : int, optional
        Window size. Default: half the mean reference segment length (see
        :func:`default_k`), computed over all sequences.
    begin_prefixes : str, tuple of str or callable, default=("Begin", "B-")
        Labels marking a boundary.
    weighted : bool, default=False
        Sum ``|b_ref - b_hyp|`` instead of counting windows that differ
        (nltk's ``weighted=True``; then the score may exceed 1).
    return_counts : bool, default=False
        Also return ``(n_errors, n_windows)``.

    Returns
    -------
    score : float in [0, 1] (0 = perfect)
    counts : tuple of int, only with ``return_counts=True``

    Examples
    --------
    >>> ref = [["BeginS", "S", "S", "BeginS", "S", "S"]]
    >>> hyp = [["BeginS", "S", "BeginS", "S", "S", "S"]]
    >>> windowdiff(ref, hyp, k=2)
    0.5
    >>> windowdiff(ref, ref)
    0.0
    """
    pairs, k = _prepare(y_true, y_pred, chain, k, begin_prefixes)
    errors = 0
    windows = 0
    for r, h in pairs:
        diff = np.abs(_window_counts(r, k) - _window_counts(h, k))
        errors += int(diff.sum()) if weighted else int(np.count_nonzero(diff))
        windows += len(diff)
    score = errors / windows
    return (score, (errors, windows)) if return_counts else score


def pk(y_true, y_pred, chain=None, k=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
       return_counts=False):
    """Pk (Beeferman et al. 1999) of one chain, pooled over sequences.

    Same windows, pooling and defaults as :func:`windowdiff`; a window is an
    error when exactly one of reference and prediction puts at least one
    boundary between tokens ``i`` and ``i + k`` (i.e. disagrees on whether the
    two tokens are in the same segment). Per sequence this equals
    ``nltk.metrics.segmentation.pk(ref, hyp, k)`` on the boundary slots::

        Pk = sum over sequences of erroneous windows / sum of (n - k) windows

    Parameters
    ----------
    y_true, y_pred : list of array-like
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    k : int, optional
        Window size (default: half the mean reference segment length).
    begin_prefixes : str, tuple of str or callable, default=("Begin", "B-")
    return_counts : bool, default=False
        Also return ``(n_errors, n_windows)``.

    Returns
    -------
    score : float in [0, 1] (0 = perfect)

    Examples
    --------
    >>> ref = [["BeginS", "S", "S", "BeginS", "S", "S"]]
    >>> hyp = [["BeginS", "S", "S", "S", "S", "S"]]
    >>> pk(ref, hyp, k=2)
    0.5
    """
    pairs, k = _prepare(y_true, y_pred, chain, k, begin_prefixes)
    errors = 0
    windows = 0
    for r, h in pairs:
        diff = (_window_counts(r, k) > 0) != (_window_counts(h, k) > 0)
        errors += int(np.count_nonzero(diff))
        windows += len(diff)
    score = errors / windows
    return (score, (errors, windows)) if return_counts else score
