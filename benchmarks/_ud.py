"""Multi-level sequence-labelling tasks from two Universal Dependencies treebanks.

A document of an English UD treebank is posed like a speech recognizer's
transcript: one token sequence per document (lowercased, punctuation dropped by
default), from which three label chains per token are to be recovered -- the
part of speech, the sentence segmentation and the paragraph structure.

Data
----
``"gum"``
    UD_English-GUM (the UniversalDependencies/UD_English-GUM repository),
    release r2.16 plus the post-release commits up to afb41ee9bca5 (2025-05-10).
    Default directory ``../../data/UD_English-GUM`` relative to this file;
    override with the environment variable ``SKFCRF_UD_GUM``.
``"ewt"``
    UD_English-EWT (the UniversalDependencies/UD_English-EWT repository),
    release r2.16 plus the post-release commits up to 15d613d8447b (2025-05-10).
    Default directory ``../../data/UD_English-EWT``; override with
    ``SKFCRF_UD_EWT``.

Either directory holds a checkout (or ``git archive``) of the repository: the
split files ``en_{gum,ewt}-ud-{train,dev,test}.conllu`` and, under
``not-to-release/``, the per-document source files the splits are built from.
Where a split file is missing (a copy without its files of 4 MiB and more
lacks both train files) and ``not-to-release/sources`` is there, the train split
is read from the sources instead: every source document that is in neither the
dev nor the test file, less :data:`STALE_SOURCES`.  For EWT that is exactly the
released train file (the repository's own build is a plain concatenation); for
GUM, whose released files come from a richer build (other comment order, more
MISC annotations), the 177 documents have the released train set's counts of
sentences, words, multiword tokens and of every UPOS tag (``stats.xml``) -- and
what this module reads (forms, UPOS, paragraph and block comments) is the same
in the sources and in the released dev and test files.

Layout
------
CoNLL-U comments read: ``# newdoc id = ...`` (a document), ``# newpar`` or
``# newpar id = ...`` (a paragraph starts with this sentence; the first sentence
of a document always starts one) and, in GUM only, ``# newpar_block = ...``,
the TEI block elements opened at that paragraph with the number of sentences
each spans, outermost first, e.g. ``list type:::"ordered" (9 s) | item n:::"1"
(1 s)``.  Blocks are tracked over their sentence spans, so a paragraph inside a
list item opened earlier is still in that item.  A paragraph is

- ``"H"``, a heading, when a ``head`` block is open at its first sentence;
- ``"L"``, a list item, else when an ``item`` block is open;
- ``"P"`` otherwise (``p``, speaker turns ``sp``, figure captions, quotes,
  notes, table cells...; every EWT paragraph, since EWT marks no blocks).

Multiword-token ranges (``3-4``) and empty nodes (``8.1``) are skipped: tokens
are the syntactic words, so "don't" is "do" + "n't".

:func:`load_documents` returns documents as dicts ``{"id", "genre", "split",
"sentences"}``, a sentence being a list of token dicts ``{"form", "upos",
"par_start", "par_type", "heading"}``: ``par_start`` is True on the first
token of a sentence that opens a paragraph, ``par_type`` is the paragraph's
``"P"``/``"H"``/``"L"`` and ``heading`` is ``par_type == "H"``.  The genre is
the prefix of the document id: ``GUM_<genre>_<name>`` (15 genres; the
``reddit`` documents are not in the UD release) and ``<genre>-<source>`` in EWT
(answers, email, newsgroup, reviews, weblog).

:func:`transcript_task` returns ``(tokens, labels, groups)``: per document the
kept word forms (str), a ``(n_tokens, 3)`` object array of labels -- chain 0
the UPOS tag, chain 1 ``"B"`` at a sentence's first kept token and ``"I"``
elsewhere, chain 2 ``"B-"``/``"I-"`` + the paragraph type (``B-P``, ``I-P``,
``B-H``, ``I-H``, ``B-L``, ``I-L`` in GUM; ``B-P``/``I-P`` in EWT) -- and its
genre, for grouped cross-validation.  A sentence or paragraph whose tokens are
all dropped (e.g. punctuation only) leaves no trace; its start moves to the
next kept token only as far as the next start of the same level.

    python benchmarks/_ud.py [--max-tokens N]

prints the statistics of both tasks.
"""
import argparse
import glob
import os
import re
import warnings
from collections import Counter

import numpy as np

#: name -> (repository directory name, split-file prefix, environment variable)
TREEBANKS = {
    "gum": ("UD_English-GUM", "en_gum", "SKFCRF_UD_GUM"),
    "ewt": ("UD_English-EWT", "en_ewt", "SKFCRF_UD_EWT"),
}

#: Source files left out of a train split rebuilt from ``not-to-release/sources``:
#: GUM_conversation_court is an older copy of GUM_court_carpet (same text and
#: title) left behind when the document moved to the court genre.
STALE_SOURCES = {"gum": ("GUM_conversation_court",), "ewt": ()}

SPLITS = ("train", "dev", "test")
_BLOCK = re.compile(r"^\s*(\S+).*\((\d+) s\)\s*$")
_GENRE = re.compile(r"^(?:GUM_([A-Za-z]+)_|([a-z]+)-)")


def data_dir(name):
    """Directory of treebank ``name``: its environment variable, else ``../../data/<repo>``."""
    repo, _, env = _treebank(name)
    return os.environ.get(env) or os.path.join(os.path.dirname(__file__), "..", "..", "data", repo)


def _treebank(name):
    try:
        return TREEBANKS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown treebank {name!r} (choose from {', '.join(TREEBANKS)})") from None


def genre(doc_id):
    """Genre from the document id's prefix (``GUM_<genre>_...``, ``<genre>-...``), else None."""
    m = _GENRE.match(doc_id)
    return None if m is None else (m.group(1) or m.group(2))


def _blocks(value):
    """``[(tag, n_sentences)]`` of a ``newpar_block`` comment value, outermost first."""
    out = []
    for part in value.split("|"):
        m = _BLOCK.match(part)
        if m is None:
            raise ValueError(f"unreadable newpar_block part {part!r}")
        out.append((m.group(1), int(m.group(2))))
    return out


def read_conllu(path, split=None):
    """Documents of one CoNLL-U file (see :func:`load_documents` for their layout)."""
    docs = []
    doc = None
    comments = {}
    words = []
    open_blocks = []        # [tag, sentences left], outermost first
    par_type = "P"

    def flush():
        nonlocal doc, par_type, open_blocks
        if not words:
            return
        if "newdoc" in comments or doc is None:
            doc_id = comments.get("newdoc") or f"{os.path.basename(path)}#{len(docs)}"
            doc = {"id": doc_id, "genre": genre(doc_id), "split": split, "sentences": []}
            docs.append(doc)
            open_blocks = []
        new_par = "newpar" in comments or not doc["sentences"]
        if "newpar_block" in comments:
            open_blocks += [[tag, n] for tag, n in _blocks(comments["newpar_block"])]
        if new_par:
            tags = {tag for tag, _ in open_blocks}
            par_type = "H" if "head" in tags else "L" if "item" in tags else "P"
        sentence = [{"form": form, "upos": upos, "par_start": new_par and i == 0,
                     "par_type": par_type, "heading": par_type == "H"}
                    for i, (form, upos) in enumerate(words)]
        doc["sentences"].append(sentence)
        for block in open_blocks:
            block[1] -= 1
        open_blocks = [b for b in open_blocks if b[1] > 0]

    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                key, _, value = line[1:].partition("=")
                key = key.strip()
                if key in ("newdoc", "newdoc id"):
                    comments["newdoc"] = value.strip()
                elif key in ("newpar", "newpar id"):
                    comments["newpar"] = value.strip()
                elif key == "newpar_block":
                    comments["newpar_block"] = value.strip()
            elif line.strip():
                cols = line.split("\t")
                if "-" in cols[0] or "." in cols[0]:
                    continue
                words.append((cols[1], cols[3]))
            else:
                flush()
                comments, words = {}, []
    flush()
    return docs


def _source_train(directory, name):
    """Train documents rebuilt from ``not-to-release/sources`` (see the module notes)."""
    _, prefix, _ = _treebank(name)
    held_out = set()
    for split in ("dev", "test"):
        path = os.path.join(directory, f"{prefix}-ud-{split}.conllu")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is needed to rebuild the train split from the sources")
        held_out.update(d["id"] for d in read_conllu(path))
    stale = set(STALE_SOURCES[name.lower()])
    sources = os.path.join(directory, "not-to-release", "sources")
    docs = []
    for path in sorted(glob.glob(os.path.join(sources, "**", "*.conllu"), recursive=True)):
        docs += [d for d in read_conllu(path, "train") if d["id"] not in held_out | stale]
    return docs


def load_documents(name, splits=SPLITS):
    """Documents of treebank ``name`` (``"gum"`` or ``"ewt"``), split by split.

    Parameters
    ----------
    name : {"gum", "ewt"}
        The treebank (case-insensitive).
    splits : sequence of {"train", "dev", "test"}, default=("train", "dev", "test")
        Splits to read, in this order.

    Returns
    -------
    list of dict
        Per document ``{"id": str, "genre": str or None, "split": str,
        "sentences": list of list of dict}``; each token dict has ``"form"``,
        ``"upos"``, ``"par_start"`` (first token of a paragraph-opening sentence),
        ``"par_type"`` (``"P"``, ``"H"`` or ``"L"``) and ``"heading"``.
    """
    directory = data_dir(name)
    _, prefix, env = _treebank(name)
    docs = []
    for split in splits:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
        path = os.path.join(directory, f"{prefix}-ud-{split}.conllu")
        if os.path.exists(path):
            docs += read_conllu(path, split)
        elif split == "train" and os.path.isdir(os.path.join(directory, "not-to-release", "sources")):
            warnings.warn(f"{prefix}-ud-train.conllu not found: train read from not-to-release/sources",
                          stacklevel=2)
            docs += _source_train(directory, name)
        else:
            raise FileNotFoundError(f"{path} not found (set {env} to the {TREEBANKS[name.lower()][0]} "
                                    f"directory)")
    return docs


def _document_task(doc, lowercase, punctuation):
    """Kept forms and ``(n, 3)`` labels of one document; also the paragraph start indices."""
    forms, labels, par_starts = [], [], []
    pending_par = None
    for sentence in doc["sentences"]:
        sent_start = True
        for tok in sentence:
            if tok["par_start"]:
                pending_par = tok["par_type"]
            if not punctuation and tok["upos"] == "PUNCT":
                continue
            form = tok["form"].lower() if lowercase else tok["form"]
            if pending_par is not None:
                par_starts.append(len(forms))
                par = "B-" + pending_par
                pending_par = None
            else:
                par = "I-" + tok["par_type"]
            labels.append((tok["upos"], "B" if sent_start else "I", par))
            forms.append(form)
            sent_start = False
    array = np.empty((len(labels), 3), dtype=object)
    for i, row in enumerate(labels):
        array[i] = row
    return forms, array, par_starts


def _pieces(n_tokens, starts, max_tokens, min_tokens=0):
    """``[(begin, end)]``: consecutive pieces cut at ``starts``, each at most ``max_tokens``
    long unless one paragraph alone is longer; a piece shorter than ``min_tokens`` (a
    heading before a long paragraph, say) is joined to the next one, the last to the
    one before."""
    bounds = [*sorted(set(starts) | {0}), n_tokens]
    cuts = [0]
    for par_begin, par_end in zip(bounds[1:-1], bounds[2:]):
        if par_end - cuts[-1] > max_tokens:
            cuts.append(par_begin)
    pieces = []
    for begin, end in zip(cuts, [*cuts[1:], n_tokens]):
        if pieces and pieces[-1][1] - pieces[-1][0] < min_tokens:
            begin = pieces.pop()[0]
        pieces.append((begin, end))
    if len(pieces) > 1 and pieces[-1][1] - pieces[-1][0] < min_tokens:
        pieces[-2:] = [(pieces[-2][0], n_tokens)]
    return pieces


def transcript_task(name, *, lowercase=True, punctuation=False, min_tokens=20, max_tokens=None,
                    splits=SPLITS):
    """Documents as transcripts with three label chains: UPOS, sentences, paragraphs.

    Parameters
    ----------
    name : {"gum", "ewt"}
        The treebank.
    lowercase : bool, default=True
        Lowercase the word forms.
    punctuation : bool, default=False
        Keep the punctuation tokens (UPOS ``PUNCT``); by default they are dropped,
        as in a speech recognizer's output.
    min_tokens : int, default=20
        Documents with fewer kept tokens are left out (before any splitting).
    max_tokens : int or None, default=None
        Cut a longer document into consecutive pieces at paragraph starts, each
        piece as long as possible but at most ``max_tokens`` tokens (a single
        paragraph longer than that stays whole; a piece shorter than
        ``min_tokens`` is joined to the next one, the last to the one before).
        None: no cutting.
    splits : sequence of str, default=("train", "dev", "test")
        Treebank splits to read.

    Returns
    -------
    tokens : list of list of str
        Per document (or piece) its kept word forms.
    labels : list of ndarray of object, shape (n_tokens, 3)
        Chain 0 the UPOS tag; chain 1 ``"B"`` at a sentence's first kept token,
        ``"I"`` else; chain 2 ``"B-<type>"`` at a paragraph's first kept token,
        ``"I-<type>"`` else, the type being ``"P"`` (paragraph), ``"H"``
        (heading) or ``"L"`` (list item); only ``"P"`` in EWT.
    groups : list of str
        Per document (or piece) its genre (the treebank name where the id has none).
    """
    tokens, labels, groups = [], [], []
    for doc in load_documents(name, splits):
        forms, array, par_starts = _document_task(doc, lowercase, punctuation)
        if len(forms) < min_tokens:
            continue
        pieces = [(0, len(forms))] if max_tokens is None else _pieces(
            len(forms), par_starts, int(max_tokens), min_tokens)
        for begin, end in pieces:
            tokens.append(forms[begin:end])
            labels.append(array[begin:end])
            groups.append(doc["genre"] or name.lower())
    return tokens, labels, groups


def observations(tokens):
    """Per-token observation dicts of transcript tokens, by skfcrf's transformers.

    Lowercased word unigrams at offsets -2..2 and the bigrams inside that window,
    lower-case suffixes of 1..3 characters and the ``repg`` word shape of the
    current token, fitted on the given tokens.

    Parameters
    ----------
    tokens : list of list of str
        As returned by :func:`transcript_task`.

    Returns
    -------
    list of list of dict
        Per document, per token ``{observation name: 1.0}``.
    """
    from skfcrf.transformers import Affixes, NGramWindow, WordShape, make_sequence_union

    union = make_sequence_union(
        NGramWindow("word", offsets=(-2, -1, 0, 1, 2), ngram_range=(1, 2), lowercase=True),
        Affixes(offsets=(0,), max_length=3, prefixes=False),
        WordShape(mode="repg"),
    )
    return union.fit_transform(tokens)


def task_statistics(tokens, labels):
    """Printable statistics lines of one task."""
    lengths = np.array([len(t) for t in tokens])
    lines = [f"  documents {len(tokens)}, tokens {int(lengths.sum())}, tokens per document: "
             f"median {int(np.median(lengths))}, min {int(lengths.min())}, max {int(lengths.max())}"]
    combos = Counter()
    for y in labels:
        combos.update(map(tuple, y))
    for k, chain in enumerate(("UPOS", "sentence", "paragraph")):
        counts = Counter()
        transitions = set()
        for y in labels:
            column = list(y[:, k])
            counts.update(column)
            transitions.update(zip(column[:-1], column[1:]))
        values = ", ".join(f"{label} {n}" for label, n in counts.most_common())
        lines.append(f"  chain {k} ({chain}): {len(counts)} labels, {len(transitions)} transitions "
                     f"seen: {values}")
    lines.append(f"  label combinations seen: {len(combos)}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description="Statistics of the UD transcript tasks.")
    parser.add_argument("--max-tokens", type=int, default=None)
    args = parser.parse_args(argv)
    for name in TREEBANKS:
        repo = TREEBANKS[name][0]
        tokens, labels, groups = transcript_task(name, max_tokens=args.max_tokens)
        print(f"{name} ({repo}, {os.path.normpath(data_dir(name))})")
        print("\n".join(task_statistics(tokens, labels)))
        print("  genres: " + ", ".join(f"{g} {n}" for g, n in sorted(Counter(groups).items())))


if __name__ == "__main__":
    main()
