"""Carry the structure labels of a formatted report over to its recognizer transcript.

The thesis's section 3.3.3 (algorithm 1, figure 3.3): a formatted report (``cor``) whose
structure was parsed into label chains is aligned, word by word, with the speech
recognizer's transcript of the same dictation (``rcg``) by a minimum-cost edit distance
with a phonetic cost function, and every transcript token takes the segments of the
report token it is aligned with.

Data layout
-----------
Both sides are turned into *units*, the symbols of the alignment:

* report: a word token gives one unit per word it is said as
  (:func:`skfcrf.structure._spoken.spoken_words`, the generator's and the noise model's
  rule too: ``"67-year-old"`` -> ``67 year old``, ``"b.i.d."`` -> ``b i d``, ``"1.5"`` ->
  ``1 point 5``, ``"%"`` -> ``percent``, dates spelled out), all mapping back to the one token; a
  punctuation token (``. , : ;``) is one punctuation unit; a token with a single-token label
  on chain 0 (``Enummarker``, e.g. ``"2."``) is one enumeration-marker unit; and after the
  last token of every segment of the layout chain (chain 1: paragraphs, enumeration
  elements, subsections) comes a paragraph-break unit, mapping back to that last token;
* transcript: dictated commands are one unit each, whatever their number of tokens
  (``"period"``, ``"full stop"`` -> ``.``; ``"comma"``, ``"colon"``, ``"semicolon"``;
  ``"new paragraph"``, ``"next paragraph"``, ``"new line"``, ``"paragraph"`` -> a paragraph
  break; ``"number <k>"`` -> the marker ``k.``, ``"next number"`` -> any marker); every other
  token gives its normalised pieces, like a report word.

Each unit has a *word id* (equal ids substitute at no cost; a dictated ``"comma"`` and a
report ``","`` share one) and a *key*: the Metaphone key of the word (``jellyfish.metaphone``),
the word itself for words with a digit, a private symbol for punctuation, breaks and markers.
Keys and normalisations are computed once per distinct string (module-level caches).  The
compiled kernel (:mod:`skfcrf._kernels._align`) fills an ``n x m`` dynamic programme over the
integer ids with two rows of costs and an int8 back-pointer matrix (``(n + 1)(m + 1)``
bytes); substitution costs come from a dense table over the distinct keys of the two sides
(at most as large as the alignment itself).

Cost model
----------
With ``d`` the Levenshtein distance between two Metaphone keys divided by the longer key's
length plus ``key_smoothing`` (0: homophones; near 1: long keys with nothing in common):

==============================================  ==========================================
equal words (after normalisation)               0
different words                                 ``phonetic_cost + dissimilar_cost * d``
delete a report word / insert a transcript word ``word_deletion`` / ``word_insertion``
delete report punctuation / a paragraph break   ``punctuation_deletion`` / ``break_deletion``
delete an enumeration marker                    ``marker_deletion``
insert a hesitation (``uh``, ``um``, ...)       ``hesitation_insertion``
insert a dictated command without counterpart   ``command_insertion``
one punctuation mark for another                ``punctuation_mismatch``
marker for a marker of another number           ``marker_mismatch`` (``next number``: 0)
marker for a bare number word (``"two"``)       ``bare_marker_cost``
==============================================  ==========================================

With the defaults (1, 1, 0.2, 2.5, smoothing 1) a substitution is cheaper than a deletion
plus an insertion while ``d < 0.72``: homophones (``weakness``/``weekness``, 0.2), keys
that share most sounds (``hypertension``/``hypotension``, ``d = 0.125``), and short words
whose one- or two-letter keys differ (``he``/``she``, keys ``H``/``X``, ``d = 0.5``; a
recognizer confuses them, and Metaphone keeps too little of them to tell) are
substituted; longer words with unrelated keys (``d >= 0.75``, up to 2.7) are not aligned
(the thesis: dissimilar tokens must not share labels).  Without the smoothing every
one-letter key pair would be unrelated: on the parallel ``make_dictations`` corpora
(``cor`` aligned to ``rcg``, 8 x 20 reports) chain-0 agreement with the ``rcg`` truth
drops from 99.94% to 99.2%, mostly at sentence starts (``He`` said as ``she``), and it
drops the same way when ``phonetic_cost + dissimilar_cost * 0.5`` reaches the 2 of a
deletion plus an insertion.  Punctuation, breaks and markers are cheap to delete because
dictation often omits them, hesitations and commands cheap to insert.  Ties go to the
alignment that keeps the later of two equal report words (a heading word that was not
dictated, then the same word in the text) and the earlier of two breaks or punctuation
marks (a paragraph break dictated after its paragraph).

Label transfer works on segments, not labels: per chain, every report token belongs to a
segment (a coarser boundary also cuts the finer chains); a transcript token aligned to a
report unit takes the segments of that unit's token, an inserted one those of the last
aligned token before it (the thesis: the last segment for which alignment was
established), or of the first aligned token when it comes before all of them or follows a
single-token segment (an enumeration marker).  Each run of one segment id then starts with
the segment's Begin label, so a segment whose first words were not dictated starts at its
first dictated word, and a segment of which nothing was dictated vanishes.
"""
import functools
import re
from dataclasses import dataclass, field

import jellyfish
import numpy as np

from skfcrf._kernels import _align as _kernel
from skfcrf.structure._segments import (
    DEFAULT_BEGIN_PREFIXES,
    DEFAULT_INSIDE_PREFIXES,
    DEFAULT_OUTSIDE_LABELS,
    DEFAULT_SINGLE_TOKEN_LABELS,
    _scheme,
)
from skfcrf.structure._spoken import spoken_words

__all__ = ["AlignmentStats", "align_transcript"]

#: Report punctuation tokens (one unit each).
PUNCTUATION = (".", ",", ":", ";")
#: Hesitations: cheap to insert.
HESITATIONS = ("uh", "um", "uhm", "ah", "er", "erm", "eh", "hm", "hmm", "mm")
#: Dictated commands (token tuples, lowercase) and what they stand for.
COMMANDS = {
    ("period",): ".", ("full", "stop"): ".", ("comma",): ",", ("colon",): ":",
    ("semicolon",): ";", ("new", "paragraph"): "\n", ("next", "paragraph"): "\n",
    ("new", "line"): "\n", ("next", "line"): "\n", ("paragraph",): "\n",
    ("next", "number"): "#",
}
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                 "eighteen", "nineteen", "twenty")
_NUMBERS = {w: i + 1 for i, w in enumerate(_NUMBER_WORDS)}
_NUMBERS.update({str(i): i for i in range(1, 100)})
_MARKER = re.compile(r"\(?([0-9]+|[a-zA-Z])[.)]?")
_WRITTEN_MARKER = re.compile(r"\(?[0-9]+[.)]")


@dataclass(frozen=True)
class AlignmentStats:
    """What an alignment of a report with its transcript found.

    Attributes
    ----------
    n_report_words : int
        Report tokens that are words (not punctuation nor enumeration markers).
    n_matched : int
        Report words all of whose pieces were aligned to equal transcript words.
    n_substituted : int
        Report words aligned, at least in part, but not all to equal words.
    n_deleted : int
        Report words no transcript token was aligned to
        (``n_matched + n_substituted + n_deleted == n_report_words``).
    n_inserted : int
        Transcript tokens aligned to no report token.
    match_rate : float
        ``n_matched / n_report_words`` (0.0 without report words).
    cost : float
        Total cost of the optimal alignment.
    report_index : ndarray of int, shape (n_transcript_tokens,)
        Per transcript token, the report token it was aligned to (-1: inserted).
    """

    n_report_words: int
    n_matched: int
    n_substituted: int
    n_deleted: int
    n_inserted: int
    match_rate: float
    cost: float
    report_index: np.ndarray = field(repr=False)


# ---------------------------------------------------------------------------------------
# per distinct string, cached
# ---------------------------------------------------------------------------------------

_WORD_IDS = {}
_KEY_IDS = {}
_KEY_CODES = []  # key id -> int32 codes
_KEY_STR = []  # key id -> key
_WORD_KEY = []  # word id -> key id


def _key_id(key):
    k = _KEY_IDS.get(key)
    if k is None:
        k = _KEY_IDS[key] = len(_KEY_CODES)
        _KEY_STR.append(key)
        if key.startswith("\0"):  # a private symbol: one code no Metaphone key contains
            _KEY_CODES.append(np.array([-1 - k], dtype=np.int32))
        else:
            _KEY_CODES.append(np.array([ord(c) for c in key], dtype=np.int32))
    return k


def _word_id(word):
    """Id of a normalised word (or of a private symbol starting with NUL); registers its key."""
    w = _WORD_IDS.get(word)
    if w is None:
        if word.startswith("\0"):
            key = word
        elif any(c.isdigit() for c in word):
            key = "#" + word
        else:
            key = jellyfish.metaphone(word) or "#" + word
        w = _WORD_IDS[word] = len(_WORD_KEY)
        _WORD_KEY.append(_key_id(key))
    return w


# kinds of units
_WORD, _PUNCT, _BREAK, _MARKER_UNIT, _HESITATION, _COMMAND = range(6)
_BREAK_WORD = "\0break"
_ANY_MARKER = "\0marker:next"


def _marker_word(value):
    return f"\0marker:{value}"


def _report_units(tokens, single, layout_ends):
    """Units of the report: (word ids, kinds, token of each unit)."""
    words, kinds, toks = [], [], []
    for r, tok in enumerate(tokens):
        if single[r]:
            m = _MARKER.fullmatch(tok.strip())
            value = m.group(1).lower() if m else tok.lower()
            if value.isdigit():
                value = str(int(value))
            words.append(_word_id(_marker_word(value)))
            kinds.append(_MARKER_UNIT)
            toks.append(r)
        elif tok in PUNCTUATION:
            words.append(_word_id("\0" + tok))
            kinds.append(_PUNCT)
            toks.append(r)
        else:
            pieces = spoken_words(tok)
            if not pieces:  # a symbol such as "-" or "/": deleted like punctuation
                pieces = ("\0" + tok,)
                kind = _PUNCT
            else:
                kind = _WORD
            for p in pieces:
                words.append(_word_id(p))
                kinds.append(kind)
                toks.append(r)
        if layout_ends[r]:
            words.append(_word_id(_BREAK_WORD))
            kinds.append(_BREAK)
            toks.append(r)
    return words, kinds, toks


_COMMAND_FIRST = {}
for _phrase in COMMANDS:
    _COMMAND_FIRST.setdefault(_phrase[0], []).append(_phrase)
for _v in _COMMAND_FIRST.values():
    _v.sort(key=len, reverse=True)


_LONG_COMMANDS = tuple(c for c in COMMANDS if len(c) > 1)


@functools.lru_cache(maxsize=65536)
def _sounds_like(word, command_word, tolerance):
    """Whether ``word`` may be a misrecognised ``command_word``: their Metaphone keys differ by
    at most ``tolerance`` (Levenshtein distance over the longer key's length plus one)."""
    a, b = jellyfish.metaphone(word), jellyfish.metaphone(command_word)
    return jellyfish.levenshtein_distance(a, b) <= tolerance * (max(len(a), len(b)) + 1)


def _exact_command_at(low, i):
    """Whether a dictated command or a spoken marker starts exactly at ``low[i]``."""
    if low[i] == "number" and i + 1 < len(low) and low[i + 1] in _NUMBERS:
        return True
    return any(tuple(low[i:i + len(c)]) == c for c in _COMMAND_FIRST.get(low[i], ()))


def _fuzzy_command(low, t, tolerance):
    """A command of several words at ``t`` with one word misrecognised (``full state``), or None
    (also when an exact command starts inside it: ``anxiety number two`` is a marker)."""
    for cand in _LONG_COMMANDS:
        k = len(cand)
        if t + k > len(low):
            continue
        off = [i for i in range(k) if low[t + i] != cand[i]]
        if len(off) == 1 and not any(c.isdigit() for c in low[t + off[0]]) \
                and _sounds_like(low[t + off[0]], cand[off[0]], tolerance) \
                and not any(_exact_command_at(low, i) for i in range(t + 1, t + k)):
            return cand
    return None


def _transcript_units(tokens, hesitations, command_tolerance=None):
    """Units of the transcript: (word ids, kinds, first token, number of tokens) per unit."""
    words, kinds, first, ntok = [], [], [], []
    low = [t.lower() for t in tokens]
    n = len(tokens)
    t = 0
    while t < n:
        w = low[t]
        phrase = None
        if w == "number" and t + 1 < n and low[t + 1] in _NUMBERS:
            phrase, word = 2, _marker_word(str(_NUMBERS[low[t + 1]]))
        else:
            for cand in _COMMAND_FIRST.get(w, ()):
                if tuple(low[t:t + len(cand)]) == cand:
                    sym = COMMANDS[cand]
                    word = _BREAK_WORD if sym == "\n" else _ANY_MARKER if sym == "#" else "\0" + sym
                    phrase = len(cand)
                    break
            if phrase is None and command_tolerance is not None:
                cand = _fuzzy_command(low, t, command_tolerance)
                if cand is not None:
                    sym = COMMANDS[cand]
                    word = _BREAK_WORD if sym == "\n" else _ANY_MARKER if sym == "#" else "\0" + sym
                    phrase = len(cand)
        if phrase is not None:
            words.append(_word_id(word))
            kinds.append(_COMMAND)
            first.append(t)
            ntok.append(phrase)
            t += phrase
            continue
        if w in PUNCTUATION:
            pieces, kind = ("\0" + w,), _COMMAND
        elif _WRITTEN_MARKER.fullmatch(w):  # a written marker ("2.")
            pieces, kind = (_marker_word(str(int(w.strip("(.)")))),), _COMMAND
        else:
            pieces = spoken_words(tokens[t]) or ("\0" + w,)
            kind = _HESITATION if w in hesitations else _WORD if pieces[0][0] != "\0" else _COMMAND
        for p in pieces:
            words.append(_word_id(p))
            kinds.append(kind)
            first.append(t)
            ntok.append(1)
        t += 1
    return words, kinds, first, ntok


def _check_tokens(tokens, name):
    tokens = list(tokens)
    for t in tokens:
        if not isinstance(t, str):
            raise ValueError(f"{name} must be strings, got {type(t).__name__} {t!r}")
    return tokens


def align_transcript(report_tokens, report_labels, transcript_tokens, *, phonetic_cost=0.2,
                     dissimilar_cost=2.5, key_smoothing=1.0, word_deletion=1.0, word_insertion=1.0,
                     punctuation_deletion=0.1, break_deletion=0.05, marker_deletion=0.2,
                     hesitation_insertion=0.1, command_insertion=0.2, punctuation_mismatch=0.5,
                     marker_mismatch=0.5, bare_marker_cost=0.2, heading_substitution=0.3,
                     heading_types=("Heading", "Subheading"), command_tolerance=0.25,
                     hesitations=HESITATIONS,
                     layout_chain=1, scheme=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
                     inside_prefixes=DEFAULT_INSIDE_PREFIXES, outside_labels=DEFAULT_OUTSIDE_LABELS,
                     single_token_labels=DEFAULT_SINGLE_TOKEN_LABELS):
    """Transfer the label chains of a formatted report to the transcript of its dictation.

    Aligns the report's words with the transcript's by a minimum-cost edit distance
    (phonetic substitution costs, dictated punctuation and layout commands matched with
    the report's punctuation and layout) and gives every transcript token the segments of
    the report token it is aligned with; see the module docstring for the cost model.

    Parameters
    ----------
    report_tokens : sequence of str
        Tokens of the formatted report (punctuation marks as tokens of their own).
    report_labels : array-like, shape (n_report_tokens, n_chains)
        Its label chains, chain 0 finest (e.g. sentence, subsection, section).
    transcript_tokens : sequence of str
        Tokens of the recognizer transcript.
    phonetic_cost : float, default=0.2
        Substituting two different words with the same Metaphone key.
    dissimilar_cost : float, default=2.5
        Times the normalised edit distance ``d`` of the two keys, added to
        ``phonetic_cost``.
    key_smoothing : float, default=1.0
        Added to the longer key's length when normalising the edit distance, so that
        the keys of short words (``H``/``X``) are never wholly unrelated.
    word_deletion, word_insertion : float, default=1.0
        Deleting a report word (piece), inserting a transcript word.
    punctuation_deletion : float, default=0.1
        Deleting a report punctuation mark (or symbol).
    break_deletion : float, default=0.05
        Deleting a paragraph break (the end of a ``layout_chain`` segment).
    marker_deletion : float, default=0.2
        Deleting an enumeration marker (a single-token label on chain 0).
    hesitation_insertion : float, default=0.1
        Inserting one of ``hesitations``.
    command_insertion : float, default=0.2
        Inserting a dictated command (punctuation, paragraph, marker) with no counterpart.
    punctuation_mismatch : float, default=0.5
        Substituting one punctuation mark (dictated or written) for another.
    marker_mismatch : float, default=0.5
        Substituting a dictated ``number <k>`` for a report marker of another number.
    bare_marker_cost : float, default=0.2
        Substituting a bare number word (``"two"``) for the report marker ``2.``.
    heading_substitution : float, default=0.3
        Added to the cost of substituting a different word for a word of a heading
        (a chain-0 segment of one of ``heading_types``).  Speakers often leave headings
        out, and a transcript word wrongly aligned with a heading word moves a section
        boundary; with the surcharge fewer dissimilar words align there.  On
        ``make_dictation_pairs`` at 10% word error rate (seeds 0, 1, 7; 60-100 reports)
        it raised the section-boundary F1 from .965 / .965 / .957 to .974 / .983 / .970
        and changed the other figures by at most .004 (0.6 and 1.0 did worse).
    heading_types : collection of str, default=("Heading", "Subheading")
        Chain-0 segment types (without prefix) that ``heading_substitution`` applies to.
    command_tolerance : float or None, default=0.25
        A command of several words with one word misrecognised (``full state``,
        ``family stop``, ``next paragraf``) still counts as the command when that word's
        Metaphone key differs from the command word's by at most this share (edit
        distance over the longer key's length plus one) and no exact command or spoken
        marker starts inside it; None: exact commands only.  On ``make_dictation_pairs``
        at 10% word error rate it raised the section-boundary F1 by .001-.005 (seeds 0,
        1, 7) and changed nothing at 0%.
    hesitations : collection of str, default=HESITATIONS
        Lowercase transcript words that are hesitations.
    layout_chain : int or None, default=1
        Chain whose segment ends are paragraph breaks (clipped to the coarsest chain;
        None: no breaks).
    scheme : LabelScheme, optional
        Overrides the four label-convention parameters below.
    begin_prefixes, inside_prefixes, outside_labels, single_token_labels
        See :class:`LabelScheme`.

    Returns
    -------
    labels : ndarray of object, shape (n_transcript_tokens, n_chains)
        Labels of the transcript: every segment starts with its Begin label (single-token
        labels are copied on every token aligned to the marker).
    stats : AlignmentStats

    Raises
    ------
    ValueError
        When the report's tokens and labels differ in length, labels are not 2-D, a token
        is not a string, or the report is empty while the transcript is not.

    Examples
    --------
    >>> report = ["Pain", "in", "the", "left", "knee", ".", "No", "fever", "."]
    >>> labels = [["BeginSentence", "BeginParagraph"]] + [["Sentence", "Paragraph"]] * 5 \\
    ...     + [["BeginSentence", "Paragraph"]] + [["Sentence", "Paragraph"]] * 2
    >>> spoken = "uh pain in the left knee period know fever".split()
    >>> y, stats = align_transcript(report, labels, spoken)
    >>> [f"{w}/{lab}" for w, lab in zip(spoken, y[:, 0])]  # doctest: +NORMALIZE_WHITESPACE
    ['uh/BeginSentence', 'pain/Sentence', 'in/Sentence', 'the/Sentence', 'left/Sentence',
     'knee/Sentence', 'period/Sentence', 'know/BeginSentence', 'fever/Sentence']
    >>> stats.n_matched, stats.n_substituted, stats.n_inserted
    (6, 1, 1)
    """
    sc = _scheme(scheme, begin_prefixes=begin_prefixes, inside_prefixes=inside_prefixes,
                 outside_labels=outside_labels, single_token_labels=single_token_labels)
    rtoks = _check_tokens(report_tokens, "report tokens")
    ttoks = _check_tokens(transcript_tokens, "transcript tokens")
    lab = np.asarray(report_labels, dtype=object)
    if lab.ndim != 2:
        raise ValueError(f"report_labels must be 2-D (n_tokens, n_chains), got shape {lab.shape}")
    n, n_chains = lab.shape
    if n != len(rtoks):
        raise ValueError(f"{len(rtoks)} report tokens but {n} rows of report labels")
    if n_chains < 1:
        raise ValueError("report_labels has no chain")
    costs = dict(phonetic_cost=phonetic_cost, dissimilar_cost=dissimilar_cost, key_smoothing=key_smoothing,
                 word_deletion=word_deletion, word_insertion=word_insertion,
                 punctuation_deletion=punctuation_deletion, break_deletion=break_deletion,
                 marker_deletion=marker_deletion, hesitation_insertion=hesitation_insertion,
                 command_insertion=command_insertion, punctuation_mismatch=punctuation_mismatch,
                 marker_mismatch=marker_mismatch, bare_marker_cost=bare_marker_cost,
                 heading_substitution=heading_substitution)
    for name, v in costs.items():
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite non-negative number, got {v!r}")
    m = len(ttoks)
    if m == 0:
        return (np.empty((0, n_chains), dtype=object),
                AlignmentStats(0, 0, 0, 0, 0, 0.0, 0.0, np.empty(0, dtype=np.intp)))
    if n == 0:
        raise ValueError("the report is empty: there is nothing to transfer to the transcript")

    # segments per chain (a coarser boundary also cuts the finer chains)
    starts = np.zeros((n_chains, n), dtype=bool)
    kinds_lab = []
    coarse = np.zeros(n, dtype=bool)
    for k in range(n_chains - 1, -1, -1):
        st, infos = sc.boundaries(lab[:, k].tolist())
        coarse = coarse | np.asarray(st, dtype=bool)
        starts[k] = coarse
        kinds_lab.append(infos)
    kinds_lab.reverse()
    single = np.array([info[1] == "S" for info in kinds_lab[0]], dtype=bool)
    if layout_chain is not None and n_chains > 1:
        lc = min(int(layout_chain), n_chains - 1)
        layout_ends = np.append(starts[lc][1:], True)
    else:
        layout_ends = np.zeros(n, dtype=bool)

    rw, rkind, rtok = _report_units(rtoks, single, layout_ends)
    hes = frozenset(hesitations)
    tw, tkind, tfirst, tntok = _transcript_units(ttoks, hes, command_tolerance)
    rw = np.asarray(rw, dtype=np.int32)
    tw = np.asarray(tw, dtype=np.int32)
    rkind = np.asarray(rkind, dtype=np.int8)
    tkind = np.asarray(tkind, dtype=np.int8)
    rtok = np.asarray(rtok, dtype=np.intp)

    # deletion / insertion costs per unit
    dcost = np.array([word_deletion, punctuation_deletion, break_deletion, marker_deletion, 0, 0],
                     dtype=np.float64)[rkind]
    icost = np.array([word_insertion, command_insertion, command_insertion, command_insertion,
                      hesitation_insertion, command_insertion], dtype=np.float64)[tkind]

    # substitution table over the distinct keys of the two sides
    word_key = np.asarray(_WORD_KEY, dtype=np.int32)
    rkeys, rk = np.unique(word_key[rw], return_inverse=True)
    tkeys, tk = np.unique(word_key[tw], return_inverse=True)
    used = np.union1d(rkeys, tkeys)
    lens = np.array([len(_KEY_CODES[q]) for q in used], dtype=np.int64)
    offsets = np.zeros(len(used) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    codes = np.concatenate([_KEY_CODES[q] for q in used]).astype(np.int32)
    pos = {int(q): i for i, q in enumerate(used)}
    rows = np.array([pos[int(q)] for q in rkeys], dtype=np.int32)
    cols = np.array([pos[int(q)] for q in tkeys], dtype=np.int32)
    sub = _kernel.key_distances(codes, offsets, rows, cols, key_smoothing)
    sub *= dissimilar_cost
    sub += phonetic_cost
    _special_costs(sub, rkeys, tkeys, punctuation_mismatch, marker_mismatch, bare_marker_cost)

    late = (rkind == _WORD).astype(np.int8)  # ties: the later of two equal words, the earlier break
    heads = frozenset(heading_types)
    in_heading = np.array([info[0] in heads for info in kinds_lab[0]], dtype=bool)
    rsub = np.where((rkind == _WORD) & in_heading[rtok], heading_substitution, 0.0)
    cost, r2t, t2r, _ops = _kernel.align(rw, np.ascontiguousarray(rk, dtype=np.int32), dcost, late, rsub, tw,
                                         np.ascontiguousarray(tk, dtype=np.int32), icost, sub)

    # transcript token -> report token (first aligned unit of the token)
    tfirst = np.asarray(tfirst, dtype=np.intp)
    tntok = np.asarray(tntok, dtype=np.intp)
    unit_rep = np.where(t2r >= 0, rtok[np.maximum(t2r, 0)], n)
    if (tntok == 1).all():
        utok, urep = tfirst, unit_rep
    else:
        utok = np.concatenate([np.arange(f, f + c) for f, c in zip(tfirst, tntok)])
        urep = np.repeat(unit_rep, tntok)
    report_index = np.full(m, n, dtype=np.intp)
    np.minimum.at(report_index, utok, urep)
    report_index[report_index == n] = -1

    labels = _transfer(lab, starts, kinds_lab, single, report_index, sc)
    return labels, _stats(rkind, rw, rtok, r2t, tw, report_index, rtoks, single, cost)


def _special_costs(sub, rkeys, tkeys, punctuation_mismatch, marker_mismatch, bare_marker_cost):
    """Costs between private symbols (punctuation, markers) and of markers vs number words."""
    rsym = [(i, _KEY_STR[q]) for i, q in enumerate(rkeys.tolist()) if _KEY_STR[q].startswith("\0")]
    if not rsym:
        return
    tstr = [_KEY_STR[q] for q in tkeys.tolist()]
    tcol = {key: j for j, key in enumerate(tstr)}
    tsym = [(j, key) for j, key in enumerate(tstr) if key.startswith("\0")]
    for i, a in rsym:
        if a.startswith("\0marker:"):
            for j, b in tsym:
                if b.startswith("\0marker:"):
                    sub[i, j] = 0.0 if b == _ANY_MARKER else marker_mismatch
            j = tcol.get(_MARKER_KEYS.get(a))
            if j is not None:
                sub[i, j] = bare_marker_cost
        elif a in _PUNCT_KEYS:
            for j, b in tsym:
                if b in _PUNCT_KEYS:
                    sub[i, j] = punctuation_mismatch


_PUNCT_KEYS = frozenset("\0" + p for p in PUNCTUATION)
# marker symbol -> key of its number said alone ("\0marker:2" -> Metaphone of "two")
_MARKER_KEYS = {f"\0marker:{v}": jellyfish.metaphone(w) for w, v in _NUMBERS.items() if not w.isdigit()}
_MARKER_KEYS.update({f"\0marker:{v}": "#" + w for w, v in _NUMBERS.items()
                     if w.isdigit() and f"\0marker:{v}" not in _MARKER_KEYS})


def _transfer(lab, starts, kinds_lab, single, report_index, sc):
    n, n_chains = lab.shape
    m = len(report_index)
    aligned = report_index >= 0
    if not aligned.any():
        anchor = np.zeros(m, dtype=np.intp)
    else:
        idx = np.arange(m)
        last = np.maximum.accumulate(np.where(aligned, idx, -1))
        nxt = np.minimum.accumulate(np.where(aligned, idx, m)[::-1])[::-1]
        first = int(np.argmax(aligned))
        prev_rep = report_index[np.maximum(last, 0)]
        next_rep = report_index[np.minimum(nxt, m - 1)]
        use_next = (last < 0) | (single[prev_rep] & (nxt < m) & ~aligned)
        anchor = np.where(aligned, report_index, np.where(use_next & (nxt < m), next_rep, prev_rep))
        anchor[last < 0] = report_index[first]
    out = np.empty((m, n_chains), dtype=object)
    for k in range(n_chains):
        seg = np.cumsum(starts[k]) - 1
        tseg = seg[anchor]
        begin = np.ones(m, dtype=bool)
        begin[1:] = tseg[1:] != tseg[:-1]
        col = lab[:, k]
        infos = kinds_lab[k]
        seg_first = np.flatnonzero(starts[k])
        blab, ilab = [], []
        for s in seg_first:
            label = col[s]
            typ, kind, prefix = infos[s]
            if kind in "OS" or not isinstance(label, str):
                blab.append(label)
                ilab.append(label)
            elif kind == "B":
                blab.append(label)
                ilab.append(sc._inside_for_cached(prefix) + typ)
            else:  # a continuation label (inconsistent start, or a cut by a coarser chain)
                blab.append(sc.counterpart(prefix) + typ)
                ilab.append(label)
        blab = np.array(blab + [None], dtype=object)[:-1]
        ilab = np.array(ilab + [None], dtype=object)[:-1]
        out[:, k] = np.where(begin, blab[tseg], ilab[tseg])
        if k == 0:  # single-token labels on every token aligned to them
            sing = single[anchor]
            out[sing, 0] = col[anchor[sing]]
    return out


def _stats(rkind, rw, rtok, r2t, tw, report_index, rtoks, single, cost):
    n = len(rtoks)
    word_units = rkind == _WORD
    toks = rtok[word_units]
    is_word = np.zeros(n, dtype=bool)
    is_word[toks] = True
    is_word &= ~single
    r2t_w = r2t[word_units]
    hit = r2t_w >= 0
    equal = hit & (rw[word_units] == tw[np.maximum(r2t_w, 0)])
    n_units = np.bincount(toks, minlength=n)
    n_hit = np.bincount(toks, weights=hit, minlength=n)
    n_equal = np.bincount(toks, weights=equal, minlength=n)
    n_words = int(is_word.sum())
    matched = is_word & (n_equal == n_units)
    deleted = is_word & (n_hit == 0)
    n_matched = int(matched.sum())
    n_deleted = int(deleted.sum())
    return AlignmentStats(
        n_report_words=n_words, n_matched=n_matched, n_substituted=n_words - n_matched - n_deleted,
        n_deleted=n_deleted, n_inserted=int((report_index < 0).sum()),
        match_rate=n_matched / n_words if n_words else 0.0, cost=float(cost),
        report_index=report_index,
    )
