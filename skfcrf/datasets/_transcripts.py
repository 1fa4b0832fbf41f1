"""A speech-recognizer noise model: formatted report -> dictation transcript with true labels.

:func:`dictate_report` turns a formatted report (tokens and three label chains, as
``make_dictations(style="cor")`` or a parsed real report give them) into what a speech
recognizer would return for a dictation of it, together with the transcript's true
labels and, per transcript token, the report token it stems from.
:func:`make_dictation_pairs` draws synthetic reports and returns each as formatted text,
report structure and transcript: test data for the pipeline "formatted report +
recognizer transcript -> aligned training labels".  :func:`make_dictations` is the
public generator of labelled dictations; it lives here, above the report generator
(:mod:`._dictations`), because with ``word_error_rate`` it draws its dictations
through this noise model.

*Data layouts.*  Report (input): ``tokens`` a list of str; ``labels`` an object array
``(n_tokens, 3)``, chain 0 ``BeginHeading``/``Heading``, ``BeginSubheading``/``Subheading``,
``BeginSentence``/``Sentence``, ``Enummarker`` (single-token label); chain 1
``BeginNone``/``None`` (the segment holding a section heading), paragraphs, enumeration
elements and typed subsections; chain 2 the section types (see
:data:`~skfcrf.datasets.DICTATION_LABELS`).  Punctuation marks are tokens of their own,
abbreviations keep their periods, a heading may end with a ``":"`` token, an enumeration
marker is one token such as ``"1."``.  Segments are read leniently with
:func:`skfcrf.structure.chains_to_segments`.

Transcript (output): ``transcript`` a list of lowercase str; ``labels`` an object array
``(n_transcript, 3)`` with the same label inventories, a valid structure (every segment
starts with a Begin label on its first transcript token; a boundary on a coarser chain is
one on every finer chain); ``source`` an int array, per transcript token the index of the
report token it stems from, or -1.

*Noise model.*  Two independent random streams are drawn from ``random_state``: the
*speaker* (habits, what is said) and the *recognizer* (errors).  The speaker does not depend on
``word_error_rate``, so the transcript drawn with ``word_error_rate=0`` and the same
``random_state`` is exactly the spoken word sequence that the recognition errors of any
other rate are applied to (and against which the word error rate is measured).

1. **Speaker habits** are those of the synthetic ``rcg`` dictations (the generator's
   speaker model, drawn per call): probabilities of dictating a section heading, a
   subheading, a heading's colon, a sentence-final period (``"period"`` or ``"full
   stop"``, one per speaker), other punctuation (``"comma"``, ``"colon"``,
   ``"semicolon"``; a period inside a sentence is dictated like a final one), a
   paragraph end (``"new paragraph"``, ``"next paragraph"`` or ``"paragraph"``; never
   after the last paragraph, nor after a typed subsection), an end-of-dictation
   instruction (``"end of dictation"``, ``"thank you"``...), the weights of the four ways
   of speaking an enumeration marker (``"number two"``, ``"two"``, ``"next number"``,
   nothing; the number is the marker's own, ``"3."`` -> ``"three"``) and the disfluency
   rates.  ``habits`` overrides any of them.
2. **Speaking** a report token: lowercase, split into words at hyphens, slashes and other
   non-alphanumeric characters (``"67-year-old"`` -> ``67 year old``), as the ``rcg``
   renderer speaks it (``"3.5"`` -> ``3 point 5``, ``"120/80"`` -> ``120 over 80``, a
   date ``"04/12/2007"`` -> ``april 12 2007``, ``"Mr."`` -> ``mister``, ``"%"`` ->
   ``percent``).  Abbreviations are spelled out letter by letter (``"b.i.d."`` -> ``b i
   d``).  Punctuation marks are dictated as words at the speaker's rates or not at all;
   parentheses, quotes and other marks are silent.  A section heading or subheading that
   is not dictated leaves no word: the section (subsection) then starts at its first
   spoken word.  Dictated paragraph ends and the end-of-dictation instruction are
   labelled as the end of the segment they close.
3. **Disfluencies** (``disfluencies=True``; part of the spoken sequence, not recognition
   errors): per sentence, at the speaker's rates, a hesitation (``"uh"``, ``"um"``...), a
   repetition of one or two words, or a false start retracted by an instruction (``"pain
   scratch that"``).  Their random draws are made whether or not they are used, so
   ``disfluencies=False`` gives the same transcript with the disfluent tokens left out.
4. **Recognition errors** at rate ``r = word_error_rate``: each spoken word is deleted
   with probability ``0.25 r`` or substituted with probability ``0.6 r``; a word is
   inserted between two kept words (or at either end) with probability ``0.15 r /
   (1 - 0.25 r)**2``, so that the expected number of edits is ``r`` times the number of
   spoken words and deletions and insertions are not adjacent (an adjacent pair would
   count as one substitution).  A substitute is phonetically plausible where possible: a
   known confusion of the ``rcg`` generator (``"no"`` -> ``"know"``, ``"prostate"`` ->
   ``"prostrate"``) or else one of the three words most similar to it among the report's
   own spoken vocabulary and the confusion list, numbers by numbers.  Similarity is the
   sum of ``difflib`` ratios of the spellings and of rough sound keys (``ph`` -> ``f``,
   soft ``c`` -> ``s``, vowels after the first letter dropped...), plus a bonus for the
   same first sound; no phonetic library is used, so the output does not depend on
   optional packages.  An inserted word is a short function word or a word of the
   report's vocabulary.  Every spoken word is exposed to errors: content, heading and
   marker words, dictated punctuation and commands, disfluencies.

Sources and labels: a token spoken from a report token (a word of it, a dictated
punctuation word such as ``"period"`` for ``"."``, a word of a spoken enumeration marker)
has that token as source, also when the recognizer substituted it; hesitations, inserted
words, false starts, the first (abandoned) copy of a repetition and dictated commands
(paragraph ends, end-of-dictation instructions) have source -1.  Every transcript token
takes the segments (on all three chains) of a report token: its source, or for a -1
token the token it falls after (the next one at the start, or after an enumeration
marker, whose words are a segment each); a repetition's first copy takes the repeated
word's.  Begin labels are then recomputed per chain on the first transcript token of each
segment; every word of a spoken enumeration marker is ``Enummarker``.
"""
import difflib
import random
import re
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from skfcrf import _dictation_vocab as V
from skfcrf.datasets._dictations import _FILLER_WORDS, _Speaker, generate_dictations
from skfcrf.structure._segments import chains_to_segments
from skfcrf.structure._spoken import spoken_words

__all__ = ["make_dictations", "dictate_report", "make_dictation_pairs", "DictationPair",
           "word_edit_distance"]

# kinds of spoken words (internal)
_WORD, _PUNCT_WORD, _MARKER, _COMMAND, _DISFLUENT = range(5)

_SPEAKER_HABITS = ("p_heading", "p_subheading", "p_heading_colon", "p_period", "p_comma", "p_newpar",
                   "p_end", "p_hes", "p_rep", "p_meta", "marker_w", "period_word", "newpar_word")

# share of the recognition errors: deletions, substitutions (insertions: the rest)
_P_DEL, _P_SUB, _P_INS = 0.25, 0.6, 0.15
_FUNCTION_WORDS = ("a", "the", "and", "in", "of", "to", "is", "on", "it")

_CONFUSIONS = {}
for _w, _s in V.SUBSTITUTIONS.items():  # single-word confusions, both directions
    if len(_s) == 1:
        _CONFUSIONS.setdefault(_w, []).append(_s[0])
        _CONFUSIONS.setdefault(_s[0], []).append(_w)
_CONFUSIONS = {w: tuple(sorted(set(s))) for w, s in _CONFUSIONS.items()}
_BASE_VOCAB = frozenset(_CONFUSIONS)

_DIGITS = re.compile(r"\d+")
_SINGLE_TOKEN = frozenset(("Enummarker",))
_BEGIN_FOR = {"": "Begin", "I-": "B-"}  # continuation prefix -> begin prefix


class DictationPair(NamedTuple):
    """One formatted report and the recognizer transcript of its dictation.

    Attributes
    ----------
    text : str
        The formatted report (:func:`skfcrf.structure.render_text` of
        ``report_tokens``/``report_labels``).
    transcript : list of str
        The recognizer's tokens.
    labels : ndarray of object, shape (len(transcript), 3)
        The transcript's true labels.
    source : ndarray of int, shape (len(transcript),)
        Per transcript token the index into ``report_tokens`` it stems from, -1 for none.
    report_tokens : list of str
        The formatted report's tokens (section headings end with a ``":"`` token).
    report_labels : ndarray of object, shape (len(report_tokens), 3)
        The formatted report's labels.
    """

    text: str
    transcript: list
    labels: np.ndarray
    source: np.ndarray
    report_tokens: list
    report_labels: np.ndarray


# --------------------------------------------------------------------------------------
# report structure
# --------------------------------------------------------------------------------------

def _structure(labels):
    """Per token and chain a segment id; per chain the segments' (begin, continuation) labels."""
    root = chains_to_segments(None, labels)
    n, c = labels.shape
    ids = np.zeros((n, c), dtype=np.intp)
    forms = []
    for k in range(c):
        fk = []
        for j, seg in enumerate(root.iter(level=k)):
            ids[seg.start:seg.end, k] = j
            typ = seg.label
            if typ is None:
                fk.append(("O", "O"))
            elif typ in _SINGLE_TOKEN:
                fk.append((typ, typ))
            else:
                ip = seg.inside_prefix
                bp = seg.begin_prefix
                if bp not in _BEGIN_FOR.values():  # a segment starting without Begin (lenient input)
                    bp = _BEGIN_FOR.get(ip, "Begin")
                fk.append((bp + typ, ip + typ))
        forms.append(fk)
    return ids, forms, list(root.iter(level=0)), root


def _marker_number(tok, k):
    m = _DIGITS.search(tok)
    return int(m.group()) if m else k


def _number_word(k):
    return V.ENUM_SPOKEN_NUMBERS[k - 1] if 1 <= k <= len(V.ENUM_SPOKEN_NUMBERS) else str(k)


# --------------------------------------------------------------------------------------
# speaking
# --------------------------------------------------------------------------------------

def _speak(tokens, segs0, root, sp, rng, disfluencies):
    """The spoken sequence: list of [word, source, host, kind]."""
    out = []
    n_chain1 = sum(1 for _ in root.iter(level=1))
    last_par_end = {}  # token index ending a chain-1 Paragraph segment -> is it the document's last
    for j, seg in enumerate(root.iter(level=1)):
        if seg.label == "Paragraph":
            last_par_end[seg.end - 1] = j == n_chain1 - 1
    k_enum = 0
    for seg in segs0:
        typ = seg.label
        s, e = seg.start, seg.end
        if typ in ("Heading", "Subheading"):
            k_enum = 0
            said = rng.random() < (sp.p_heading if typ == "Heading" else sp.p_subheading)
            colon = rng.random() < sp.p_heading_colon
            if said:
                for t in range(s, e):
                    tok = tokens[t]
                    if tok == ":":
                        if colon:
                            out.extend([w, t, t, _PUNCT_WORD] for w in V.PUNCT_WORDS[":"])
                    else:
                        out.extend([w, t, t, _WORD] for w in spoken_words(tok))
            continue
        if typ == "Enummarker":
            k_enum = _marker_number(tokens[s], k_enum + 1)
            r = rng.random()
            w = sp.marker_w
            if r < w[0]:
                mk = ("number", _number_word(k_enum))
            elif r < w[0] + w[1]:
                mk = (_number_word(k_enum),)
            elif r < w[0] + w[1] + w[2]:
                mk = ("next", "number") if k_enum > 1 else ("number", "one")
            else:
                mk = ()
            out.extend([word, s, s, _MARKER] for word in mk)
            continue
        out.extend(_speak_sentence(tokens, s, e, sp, rng, disfluencies))
        if e - 1 in last_par_end and not last_par_end[e - 1] and out and rng.random() < sp.p_newpar:
            host = out[-1][2]
            out.extend([w, -1, host, _COMMAND] for w in sp.newpar_word)
    if out and rng.random() < sp.p_end:
        host = out[-1][2]
        out.extend([w, -1, host, _COMMAND] for w in rng.choice(V.META_END))
    return out


def _speak_sentence(tokens, s, e, sp, rng, disfluencies):
    """One sentence (or other chain-0 segment) as spoken, with disfluencies."""
    out = []
    final = None
    for t in range(s, e):
        tok = tokens[t]
        if tok == "." or (t == e - 1 and tok in V.PUNCT_WORDS):
            if t == e - 1:
                final = t
            elif rng.random() < sp.p_period:
                out.extend([w, t, t, _PUNCT_WORD] for w in sp.period_word)
            continue
        if tok in V.PUNCT_WORDS:
            if rng.random() < sp.p_comma:
                out.extend([w, t, t, _PUNCT_WORD] for w in V.PUNCT_WORDS[tok])
            continue
        out.extend([w, t, t, _WORD] for w in spoken_words(tok))
    n = len(out)
    if n > 2:  # disfluencies, drawn as the rcg renderer draws them, at positions of the plain words
        inserts = []
        if rng.random() < sp.p_hes:
            i = rng.randrange(1, n)
            inserts.append((i, 0, [[rng.choice(V.HESITATIONS), -1, out[i - 1][2], _DISFLUENT]]))
        if rng.random() < sp.p_rep:  # the first copy is the abandoned one
            i = rng.randrange(0, n - 1)
            k = 1 if rng.random() < 0.7 else 2
            inserts.append((i, 1, [[w, -1, host, _DISFLUENT] for w, _, host, _ in out[i:i + k]]))
        if rng.random() < sp.p_meta:
            i = rng.randrange(1, n)
            words = [rng.choice(_FILLER_WORDS)] + list(rng.choice(V.META_MID))
            inserts.append((i, 2, [[w, -1, out[i - 1][2], _DISFLUENT] for w in words]))
        if disfluencies and inserts:
            for i, _, items in sorted(inserts, key=lambda x: (-x[0], -x[1])):
                out[i:i] = items
    if final is not None:
        tok = tokens[final]
        if tok == ".":
            if rng.random() < sp.p_period:
                out.extend([w, final, final, _PUNCT_WORD] for w in sp.period_word)
        elif rng.random() < sp.p_comma:
            out.extend([w, final, final, _PUNCT_WORD] for w in V.PUNCT_WORDS[tok])
    return out


# --------------------------------------------------------------------------------------
# recognition errors
# --------------------------------------------------------------------------------------

_SOUND_RULES = tuple((re.compile(a), b) for a, b in (
    (r"[^a-z0-9]", ""), (r"ph", "f"), (r"ck", "k"), (r"c(?=[eiy])", "s"), (r"[cq]", "k"), (r"x", "ks"),
    (r"z", "s"), (r"gh", ""), (r"^kn", "n"), (r"^wr", "r"), (r"(?<=.)[aeiouy]+", ""), (r"(.)\1+", r"\1"),
))


def _sound(word):
    """A rough sound key: spelling variants of one sound merged, vowels after the first letter dropped."""
    for pattern, repl in _SOUND_RULES:
        word = pattern.sub(repl, word)
    return word


class _Confuser:
    """Phonetically plausible substitutes from a confusion list and a vocabulary."""

    def __init__(self, vocab):
        self.vocab = sorted(set(vocab) | _BASE_VOCAB)
        self.alpha = [w for w in self.vocab if not w.isdigit()]
        self.numbers = [w for w in self.vocab if w.isdigit()]
        self.cache = {}

    def candidates(self, word):
        c = self.cache.get(word)
        if c is not None:
            return c
        c = _CONFUSIONS.get(word)
        if c is None:
            if word.isdigit():
                pool = [w for w in self.numbers if w != word] or [str(int(word) + 1)]
            else:
                pool = [w for w in self.alpha if w != word and abs(len(w) - len(word)) <= 2] or \
                    [w for w in self.alpha if w != word] or [w for w in _FUNCTION_WORDS if w != word]
            key = _sound(word)
            spell = difflib.SequenceMatcher(b=word, autojunk=False)
            sound = difflib.SequenceMatcher(b=key, autojunk=False)
            scored = []
            for w in pool:
                spell.set_seq1(w)
                wkey = _sound(w)
                sound.set_seq1(wkey)
                score = spell.ratio() + sound.ratio() + (0.2 if wkey[:1] == key[:1] else 0.0)
                scored.append((score, w))
            scored.sort(key=lambda x: (-x[0], x[1]))
            c = tuple(w for _, w in scored[:3])
        self.cache[word] = c
        return c


def _recognize(spoken, rate, rng):
    """Apply deletions, substitutions and insertions to the spoken sequence."""
    if rate == 0 or not spoken:
        return [list(x) for x in spoken]
    p_del, p_sub = _P_DEL * rate, _P_SUB * rate
    p_ins = min(1.0, _P_INS * rate / (1.0 - p_del) ** 2)
    vocab = sorted({x[0] for x in spoken if x[3] != _DISFLUENT})
    conf = _Confuser(vocab)
    kept = []
    for x in spoken:
        u = rng.random()
        if u < p_del:
            kept.append(None)
        elif u < p_del + p_sub:
            kept.append([rng.choice(conf.candidates(x[0])), x[1], x[2], x[3]])
        else:
            kept.append(list(x))
    out = []
    n = len(kept)
    for i in range(n + 1):  # gap i lies before spoken word i
        left_ok = i == 0 or kept[i - 1] is not None
        right_ok = i == n or kept[i] is not None
        if left_ok and right_ok and rng.random() < p_ins:
            word = rng.choice(_FUNCTION_WORDS) if rng.random() < 0.5 else rng.choice(vocab)
            out.append([word, -1, None, _WORD])
        if i < n and kept[i] is not None:
            out.append(kept[i])
    return out


def _assign_hosts(out):
    """Give inserted tokens (host None) the segments of a neighbour."""
    n = len(out)
    for i, x in enumerate(out):
        if x[2] is not None:
            continue
        prev = out[i - 1] if i > 0 else None
        if prev is not None and prev[3] != _MARKER:
            x[2] = prev[2]
            continue
        # the next word (an inserted word always borders a kept one, and never another inserted one)
        nxt = out[i + 1] if i + 1 < n else None
        x[2] = nxt[2] if nxt is not None else prev[2]


def _labels(out, ids, forms):
    n, c = len(out), ids.shape[1]
    lab = np.empty((n, c), dtype=object)
    prev = None
    for i, x in enumerate(out):
        row = ids[x[2]]
        for k in range(c):
            begin, inside = forms[k][row[k]]
            lab[i, k] = begin if prev is None or prev[k] != row[k] else inside
        prev = row
    return lab


# --------------------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------------------

def _check_rate(word_error_rate):
    if isinstance(word_error_rate, bool) or not isinstance(word_error_rate, (int, float, np.integer,
                                                                            np.floating)):
        raise ValueError(f"word_error_rate must be a number in [0, 1], got {word_error_rate!r}")
    r = float(word_error_rate)
    if not 0.0 <= r <= 1.0:  # also rejects nan
        raise ValueError(f"word_error_rate must be in [0, 1], got {word_error_rate!r}")
    return r


def _speaker(rng, habits):
    sp = _Speaker(rng)
    if habits is None:
        return sp
    if not isinstance(habits, Mapping):
        raise ValueError(f"habits must be a mapping of speaker habits, got {type(habits).__name__}")
    for key, value in habits.items():
        if key not in _SPEAKER_HABITS:
            raise ValueError(f"unknown speaker habit {key!r}; known: {', '.join(_SPEAKER_HABITS)}")
        if key == "marker_w":
            w = [float(v) for v in value]
            if len(w) != 4 or min(w) < 0 or sum(w) <= 0:
                raise ValueError("habit 'marker_w' must be 4 non-negative weights, not all zero")
            value = [v / sum(w) for v in w]
        elif key in ("period_word", "newpar_word"):
            value = tuple(value.split()) if isinstance(value, str) else tuple(value)
        elif not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"habit {key!r} must be a probability in [0, 1], got {value!r}")
        setattr(sp, key, value)
    return sp


def dictate_report(tokens, labels, *, word_error_rate=0.1, disfluencies=True, habits=None,
                   random_state=None):
    """Simulate a speech recognizer's transcript of a dictated formatted report.

    A simulated speaker dictates the report (lowercase words, punctuation and paragraph
    ends dictated at the speaker's rates, headings sometimes left out, enumeration
    markers spoken as "number two", "next number" or not at all, hesitations and
    repetitions), then a recognizer transcribes the spoken words with substitutions,
    deletions and insertions at ``word_error_rate``.  The module docstring describes the
    model in full.

    Parameters
    ----------
    tokens : list of str, length n_tokens
        The formatted report's tokens.
    labels : array-like of str, shape (n_tokens, 3)
        Its label chains (sentence, subsection and section level, as
        ``make_dictations(style="cor")`` returns them).
    word_error_rate : float in [0, 1], default=0.1
        Expected (S + D + I) / N of the transcript against the spoken word sequence
        (which includes dictated commands and disfluencies).  0 gives no recognition
        errors.
    disfluencies : bool, default=True
        Whether the speaker hesitates, repeats words and retracts false starts.  With
        ``False`` the transcript is the one of ``True`` (same seed, rate 0) without the
        disfluent tokens.
    habits : mapping, optional
        Overrides of the speaker's habits (otherwise drawn per call):
        ``p_heading``, ``p_subheading`` (probability of dictating a section heading,
        a subheading), ``p_heading_colon``, ``p_period``, ``p_comma``, ``p_newpar``
        (a paragraph end), ``p_end`` (an end-of-dictation instruction), ``p_hes``,
        ``p_rep``, ``p_meta`` (per sentence: hesitation, repetition, false start),
        ``marker_w`` (4 weights: "number two", "two", "next number", silent),
        ``period_word``, ``newpar_word`` (str such as ``"full stop"``).
    random_state : int, RandomState instance or None, default=None
        Seed; a fixed seed gives the same transcript.  The speaker's stream does not
        depend on ``word_error_rate``: the same seed at rate 0 gives the spoken words.

    Returns
    -------
    transcript : list of str
        The recognizer's tokens (lowercase, no punctuation characters).
    transcript_labels : ndarray of object, shape (len(transcript), 3)
        Their true labels: each token takes the segments of the report token it stems
        from (inserted and disfluent tokens: of the segment they fall in), with Begin
        labels recomputed on the first transcript token of each segment.
    source : ndarray of int, shape (len(transcript),)
        Index of the report token each transcript token stems from; -1 for hesitations,
        inserted words, false starts, the first copy of a repetition and dictated
        commands ("new paragraph", "end of dictation").  Non-negative entries are
        non-decreasing.

    Examples
    --------
    >>> from skfcrf.datasets import dictate_report
    >>> tokens = ["PLAN", ":", "Aspirin", "81", "mg", "b.i.d.", "."]
    >>> labels = [["BeginHeading", "BeginNone", "BeginPlan"], ["Heading", "None", "Plan"],
    ...           ["BeginSentence", "BeginParagraph", "Plan"], ["Sentence", "Paragraph", "Plan"],
    ...           ["Sentence", "Paragraph", "Plan"], ["Sentence", "Paragraph", "Plan"],
    ...           ["Sentence", "Paragraph", "Plan"]]
    >>> habits = {"p_heading": 1, "p_heading_colon": 0, "p_period": 1, "period_word": "period",
    ...           "p_end": 0}
    >>> words, y, source = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
    ...                                   habits=habits, random_state=0)
    >>> words
    ['plan', 'aspirin', '81', 'mg', 'b', 'i', 'd', 'period']
    >>> source.tolist()
    [0, 2, 3, 4, 5, 5, 5, 6]
    >>> y[:2].tolist()
    [['BeginHeading', 'BeginNone', 'BeginPlan'], ['BeginSentence', 'BeginParagraph', 'Plan']]
    """
    if isinstance(tokens, str):
        raise ValueError("tokens must be a sequence of str tokens, not one str")
    tokens = list(tokens)
    if not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must all be str")
    arr = np.asarray(labels, dtype=object)
    if len(tokens) == 0 and arr.size == 0:
        arr = np.empty((0, 3), dtype=object)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"labels must have shape (n_tokens, 3), got shape {arr.shape}")
    if arr.shape[0] != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {arr.shape[0]} label rows")
    if not all(isinstance(x, str) for x in arr.ravel()):
        raise ValueError("labels must be str")
    rate = _check_rate(word_error_rate)
    rs = check_random_state(random_state)
    speaker_rng = random.Random(int(rs.randint(0, 2**31 - 1)))
    recognizer_rng = random.Random(int(rs.randint(0, 2**31 - 1)))
    sp = _speaker(speaker_rng, habits)
    if not tokens:
        return [], np.empty((0, 3), dtype=object), np.empty(0, dtype=np.intp)
    ids, forms, segs0, root = _structure(arr)
    spoken = _speak(tokens, segs0, root, sp, speaker_rng, bool(disfluencies))
    out = _recognize(spoken, rate, recognizer_rng)
    _assign_hosts(out)
    words = [x[0] for x in out]
    source = np.array([x[1] for x in out], dtype=np.intp)
    return words, _labels(out, ids, forms), source


def _with_heading_colons(tokens, labels):
    """Append a ":" token (labelled as the heading) to every section heading lacking one."""
    toks, rows = [], []
    n = len(tokens)
    for t in range(n):
        toks.append(tokens[t])
        rows.append(labels[t])
        is_heading = labels[t][0] in ("BeginHeading", "Heading")
        ends = t == n - 1 or labels[t + 1][0] not in ("Heading",)
        if is_heading and ends and tokens[t] != ":":
            toks.append(":")
            rows.append(["Heading", labels[t][1].removeprefix("Begin"), labels[t][2].removeprefix("Begin")])
    out = np.empty((len(rows), labels.shape[1]), dtype=object)
    for i, r in enumerate(rows):
        out[i] = list(r)
    return toks, out


def make_dictation_pairs(n_reports, word_error_rate=0.1, random_state=None):
    """Synthetic formatted reports with the recognizer transcripts of their dictation.

    The report structures are ``make_dictations(n_reports, style="cor")``'s, with a
    ``":"`` token appended to every section heading (as in a formatted report and as
    :func:`skfcrf.structure.parse_report` returns them); the text is
    :func:`skfcrf.structure.render_text` of that structure, the transcript
    :func:`dictate_report` of it (one speaker per report, with disfluencies).

    Parameters
    ----------
    n_reports : int
        Number of reports.
    word_error_rate : float in [0, 1], default=0.1
        Recognition error rate, see :func:`dictate_report`.
    random_state : int, RandomState instance or None, default=None
        Seed.  The reports and speakers do not depend on ``word_error_rate``: with the
        same seed, ``word_error_rate=0`` gives the spoken word sequences.

    Returns
    -------
    pairs : list of DictationPair
        ``text``, ``transcript``, ``labels`` (true transcript labels), ``source``,
        ``report_tokens``, ``report_labels``.

    Examples
    --------
    >>> from skfcrf.datasets import make_dictation_pairs
    >>> pairs = make_dictation_pairs(2, word_error_rate=0.1, random_state=0)
    >>> pair = pairs[0]
    >>> len(pair.transcript) == len(pair.labels) == len(pair.source)
    True
    >>> pair.report_tokens[pair.source[pair.source >= 0][0]] in pair.text
    True
    """
    if isinstance(n_reports, bool) or not isinstance(n_reports, (int, np.integer)) or n_reports < 0:
        raise ValueError(f"n_reports must be a non-negative integer, got {n_reports!r}")
    rate = _check_rate(word_error_rate)
    from skfcrf.structure import render_text

    rs = check_random_state(random_state)
    X, y = generate_dictations(int(n_reports), "cor", int(rs.randint(0, 2**31 - 1)))
    pairs = []
    for toks, lab in zip(X, y):
        toks, lab = _with_heading_colons(toks, lab)
        words, tl, src = dictate_report(toks, lab, word_error_rate=rate,
                                        random_state=int(rs.randint(0, 2**31 - 1)))
        pairs.append(DictationPair(render_text(toks, lab), words, tl, src, toks, lab))
    return pairs


def word_edit_distance(reference, hypothesis):
    """Word-level Levenshtein distance: substitutions + deletions + insertions.

    The word error rate of ``hypothesis`` is ``word_edit_distance(reference,
    hypothesis) / len(reference)``.

    Examples
    --------
    >>> word_edit_distance("the patient has no pain".split(), "the patience has uh no".split())
    3
    """
    ref, hyp = list(reference), list(hypothesis)
    if not ref or not hyp:
        return len(ref) + len(hyp)
    vocab = {}
    r = np.array([vocab.setdefault(w, len(vocab)) for w in ref], dtype=np.intp)
    h = np.array([vocab.setdefault(w, len(vocab)) for w in hyp], dtype=np.intp)
    m = len(h)
    j = np.arange(m + 1)
    row = j.copy()
    for i in range(1, len(r) + 1):
        cand = np.empty(m + 1, dtype=np.intp)
        cand[0] = i
        cand[1:] = np.minimum(row[1:] + 1, row[:-1] + (h != r[i - 1]))
        row = np.minimum.accumulate(cand - j) + j  # horizontal moves (insertions)
    return int(row[-1])


def make_dictations(n_reports=200, style="rcg", random_state=None, word_error_rate=None):
    """Generate synthetic medical dictations annotated with three label chains.

    Each report is drawn for one of a pool of simulated speakers, each with its own
    habits: which sections are dictated and in which order, preferred heading
    variants, combined "diagnosis and plan" sections, neurologic findings as a section
    of their own or as a subsection of the physical examination, enumerations, and
    (for ``style="rcg"``) how often headings, punctuation and enumeration markers are
    dictated, hesitations, repetitions, instructions to the typist and recognition
    errors.  Sentences come from templates with slot fillers (symptoms, drugs with
    doses, vital signs, laboratory values, diagnoses, ...) whose vocabulary is shared
    across sections, so that the section type must be inferred from context.

    Parameters
    ----------
    n_reports : int, default=200
        Number of reports.  Reports have about 400-900 tokens.
    style : {"rcg", "cor"}, default="rcg"
        ``"cor"``: the formatted report (case, headings always present, punctuation
        marks as separate tokens, enumeration markers such as ``"1."``).
        ``"rcg"``: what a speech recognizer returns for the dictation: lowercase, no
        punctuation characters, punctuation dictated as words (``"period"``,
        ``"comma"``, ``"colon"``, ``"new paragraph"``) at the speaker's whim, headings
        and subheadings often not dictated, spoken enumeration markers (``"number
        two"``, ``"next number"``, or none), hesitations, repetitions, meta
        instructions (``"scratch that"``, ``"please insert the date"``, ``"end of
        dictation"``) and phonetically plausible substitutions.  Inserted words are
        labelled as part of the segment they sit in.
    random_state : int, RandomState instance or None, default=None
        Seed.  With the same seed, ``"cor"`` and ``"rcg"`` yield parallel corpora (the
        same reports, formatted vs. recognized).
    word_error_rate : float in [0, 1], optional
        Only with ``style="rcg"``.  ``None`` (default): the generator's own recognizer
        rendering described above.  A rate: the transcripts of
        ``make_dictation_pairs(n_reports, word_error_rate, random_state)`` instead --
        reports spoken by the noise model :func:`dictate_report`, with recognition
        errors at this word error rate
        (measured within about 0.01 of it) -- for experiments on accuracy as the
        recognition errors grow (the thesis's tables 6.11 and 6.12).

    Returns
    -------
    X_tokens : list of list of str
        One token list per report.
    y : list of ndarray of dtype object, shape (n_tokens, 3)
        Labels per token for the chains :data:`DICTATION_CHAINS` (sentence,
        subsection, section level), drawn from :data:`SENTENCE_LABELS`,
        :data:`SUBSECTION_LABELS` and :data:`SECTION_LABELS`.  Every segment starts
        with a ``Begin`` label (``Enummarker`` segments excepted: the label has no
        Begin variant and every marker token is a segment of its own), and a Begin
        on a coarser chain always coincides with a Begin (or an ``Enummarker``) on
        every finer chain.

    Examples
    --------
    >>> from skfcrf.datasets import make_dictations
    >>> X, y = make_dictations(n_reports=2, style="cor", random_state=0)
    >>> y[0].shape[1]
    3
    """
    if isinstance(n_reports, bool) or not isinstance(n_reports, (int, np.integer)) or n_reports < 0:
        raise ValueError(f"n_reports must be a non-negative integer, got {n_reports!r}")
    if style not in ("rcg", "cor"):
        raise ValueError(f"style must be 'rcg' or 'cor', got {style!r}")
    if word_error_rate is not None:
        if style != "rcg":
            raise ValueError("word_error_rate applies to style='rcg' only (the formatted reports "
                             "have no recognition errors)")
        pairs = make_dictation_pairs(n_reports, word_error_rate=word_error_rate, random_state=random_state)
        return [p.transcript for p in pairs], [p.labels for p in pairs]
    return generate_dictations(n_reports, style, random_state)
