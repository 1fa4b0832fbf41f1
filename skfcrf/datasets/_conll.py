"""CoNLL-style column files: one token per line, blank line between sequences."""
import gzip
import io
import os
import re

import numpy as np

from skfcrf._validation import check_label_sequences

__all__ = ["read_conll", "write_conll", "split_columns", "NO_BREAK_SPACES"]

#: the byte-order mark, as decoded by ``"utf-8"`` (``"utf-8-sig"`` drops it)
_BOM = "\ufeff"
#: the no-break spaces (U+00A0 NO-BREAK SPACE, U+2007 FIGURE SPACE, U+202F NARROW NO-BREAK
#: SPACE): whitespace to :meth:`str.split`, but by definition no break between words, so part
#: of a token ("10\u00a0000", "M.\u202fDupont") when columns are separated by whitespace
NO_BREAK_SPACES = "\u00a0\u2007\u202f"
#: a run of the whitespace that separates columns with ``sep=None``: every character
#: :meth:`str.isspace` calls whitespace but the no-break spaces
_SEPARATING_RUN = re.compile(r"[^\S" + NO_BREAK_SPACES + "]+")


def split_columns(line, sep=None):
    """The columns of one line of a column file, as :func:`read_conll` splits them.

    Parameters
    ----------
    line : str
        The line, without its line break.
    sep : str or None, default=None
        The separator; ``None`` splits on runs of whitespace, leading and trailing
        whitespace ignored, except the no-break spaces (:data:`NO_BREAK_SPACES`), which
        stay inside their column.

    Returns
    -------
    list of str
    """
    if sep is not None:
        return line.split(sep)
    if not any(c in line for c in NO_BREAK_SPACES):
        return line.split()
    return [c for c in _SEPARATING_RUN.split(line) if c]


def _unusual_whitespace(line):
    """``" (the line contains U+2003 (EM SPACE), ...)"``: the whitespace characters of
    ``line`` other than space and tab, which also separate columns with ``sep=None``."""
    import unicodedata

    found = sorted({c for c in line if c.isspace() and c not in " \t" + NO_BREAK_SPACES})
    if not found:
        return ""
    names = ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, 'control character')})"
                      for c in found)
    return (f" (the line contains {names}, whitespace that separates columns like a space; "
            "give a separator such as sep='\\t' if a value contains it)")


def _open(path_or_file, mode, encoding):
    """Return (text file object, display name, whether to close it).

    Paths ending in ``.gz`` are (de)compressed; binary file objects are wrapped.
    """
    if isinstance(path_or_file, (str, bytes, os.PathLike)):
        name = os.fsdecode(path_or_file)
        if name.endswith(".gz"):
            return gzip.open(path_or_file, mode + "t", encoding=encoding, newline=""), name, True
        return open(path_or_file, mode, encoding=encoding, newline=""), name, True
    if not hasattr(path_or_file, "read" if "r" in mode else "write"):
        raise TypeError(
            f"path_or_file must be a path or a file object, got {type(path_or_file).__name__}"
        )
    name = getattr(path_or_file, "name", None)
    if not isinstance(name, str):
        name = "<file>"
    if isinstance(path_or_file, (io.RawIOBase, io.BufferedIOBase)) or "b" in str(
            getattr(path_or_file, "mode", "")):
        wrapped = io.TextIOWrapper(path_or_file, encoding=encoding, newline="")
        return wrapped, name, "detach"
    return path_or_file, name, False


def _close(f, how):
    if how == "detach":
        f.flush()
        f.detach()
    elif how:
        f.close()


def _check_attributes(attributes):
    if isinstance(attributes, str):
        attributes = (attributes,)
    attributes = tuple(attributes)
    if not attributes:
        raise ValueError("attributes must name at least one column")
    if len(set(attributes)) != len(attributes):
        raise ValueError(f"attributes must be distinct, got {attributes!r}")
    return attributes


def read_conll(path_or_file, n_label_columns=1, attributes=("word",), sep=None, encoding="utf-8"):
    """Read a CoNLL-style column file.

    Each non-blank line holds one token: its attribute columns followed by
    ``n_label_columns`` label columns.  One or more blank lines (empty or whitespace
    only) separate sequences.

    Parameters
    ----------
    path_or_file : str, path-like or file object
        A path (``.gz`` files are decompressed) or an open text or binary file.
    n_label_columns : int, default=1
        Number of trailing label columns (one per label chain, chain 0 first).
        ``0`` reads an unlabelled file.
    attributes : sequence of str, default=("word",)
        Names of the leading attribute columns, in file order.
    sep : str or None, default=None
        Column separator; ``None`` splits on runs of whitespace (values then cannot
        contain spaces), ``"\\t"`` for tab-separated files whose values contain spaces.
        Any other string splits on each occurrence of it (two separators in a row
        make an empty value).  With ``None``, the no-break spaces (U+00A0, U+2007,
        U+202F) are no separators: they stay inside their token ("10\u00a0000"), as
        typography means them to; every other whitespace character
        (:meth:`str.isspace`) separates columns (:func:`split_columns`).
    encoding : str, default="utf-8"
        Used when a path or a binary file is given.  A byte-order mark (U+FEFF)
        at the start of the text is dropped, whatever the encoding (it is no
        part of the first token).

    Returns
    -------
    X_tokens : list of list
        One list of tokens per sequence.  The token representation follows one rule:
        with a single attribute column a token is the plain ``str`` value; with
        several it is a dict ``{attribute: value}``.  Both forms are accepted by the
        transformers in :mod:`skfcrf.transformers`.
    y : list of ndarray of dtype object, or None
        Per sequence, a 1-D array ``(n_tokens,)`` when ``n_label_columns == 1`` (one
        chain), a 2-D array ``(n_tokens, n_label_columns)`` otherwise; ``None`` when
        ``n_label_columns == 0``.

    Raises
    ------
    ValueError
        When a line has the wrong number of columns; the message names the file and
        line number.

    Examples
    --------
    >>> import io
    >>> from skfcrf.datasets import read_conll
    >>> X, y = read_conll(io.StringIO("He PRP B-NP\\nran VBD B-VP\\n\\n"),
    ...                   attributes=("word", "pos"))
    >>> X[0][0], list(y[0])
    ({'word': 'He', 'pos': 'PRP'}, ['B-NP', 'B-VP'])
    """
    attributes = _check_attributes(attributes)
    if isinstance(n_label_columns, bool) or not isinstance(n_label_columns, (int, np.integer)) \
            or n_label_columns < 0:
        raise ValueError(f"n_label_columns must be a non-negative integer, got {n_label_columns!r}")
    if sep == "":
        raise ValueError("sep must be None or a non-empty string")
    n_attr = len(attributes)
    n_cols = n_attr + int(n_label_columns)
    single = n_attr == 1
    f, name, close = _open(path_or_file, "r", encoding)
    X, Y = [], []
    toks, labs = [], []

    def flush():
        if toks:
            X.append(list(toks))
            Y.append(list(labs))
            toks.clear()
            labs.clear()

    try:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if lineno == 1 and line.startswith(_BOM):
                line = line[1:]
            if not line.strip():
                flush()
                continue
            cols = split_columns(line, sep)
            if len(cols) != n_cols:
                raise ValueError(
                    f"{name}, line {lineno}: expected {n_cols} columns "
                    f"({n_attr} attribute{'s' if n_attr != 1 else ''} {attributes!r} + "
                    f"{n_label_columns} label column{'s' if n_label_columns != 1 else ''}), "
                    f"got {len(cols)}: {line!r}" + _column_hint(line, sep)
                )
            if single:
                toks.append(cols[0])
            else:
                toks.append(dict(zip(attributes, cols[:n_attr])))
            if n_label_columns == 1:
                labs.append(cols[n_attr])
            elif n_label_columns:
                labs.append(cols[n_attr:])
        flush()
    finally:
        _close(f, close)
    if not n_label_columns:
        return X, None
    # lists of equal-length lists of str become 2-D object arrays, lists of str 1-D
    y = [np.array(seq, dtype=object) for seq in Y]
    return X, y


def _column_hint(line, sep):
    """Why a line may have split into an unexpected number of columns: the whitespace
    that separates columns unseen (``sep=None``), or no separator at all."""
    if sep is None:
        return _unusual_whitespace(line)
    if sep not in line:
        return f" (no {sep!r} in the line: is the file separated by another character?)"
    return ""


def _token_values(tok, attributes, where):
    if isinstance(tok, str):
        if len(attributes) != 1:
            raise ValueError(
                f"{where}: token {tok!r} is a str but {len(attributes)} attributes "
                f"{attributes!r} are to be written; give dict tokens"
            )
        return (tok,)
    if isinstance(tok, dict):
        try:
            return tuple(tok[a] for a in attributes)
        except KeyError as e:
            raise ValueError(f"{where}: token {tok!r} has no attribute {e.args[0]!r}") from None
    raise ValueError(f"{where}: a token must be a str or a dict, got {type(tok).__name__}")


def _unwritable(line, vals, sep, by_whitespace, first):
    """Why ``line`` (``vals`` joined) would not read back as ``vals`` with ``sep``, or None."""
    if "\n" in line or "\r" in line:
        return "a value contains a line break"
    if not line.strip():
        return "the values are empty or whitespace only (the line would read as a sequence break)"
    if first and line.startswith(_BOM):
        return ("the first value starts with a byte-order mark (U+FEFF), which reading "
                "drops")
    if by_whitespace:
        if split_columns(line, None) != vals or (sep is not None and line.split(sep) != vals):
            return ("a value is empty or contains whitespace, a separator of columns with "
                    f"sep={sep!r} (a tab-separated file, sep='\\t', takes values with spaces)")
    elif line.split(sep) != vals:
        return f"a value contains the separator {sep!r}"
    return None


def write_conll(path_or_file, X_tokens, y=None, attributes=None, sep=" ", encoding="utf-8"):
    """Write sequences as a CoNLL-style column file.

    The inverse of :func:`read_conll`: one token per line (attribute columns, then
    one label column per chain), each sequence followed by a blank line.  Reading the
    written file with the same ``attributes``, ``sep`` and number of label columns
    returns the same ``X_tokens`` and ``y``.

    Parameters
    ----------
    path_or_file : str, path-like or file object
        A path (``.gz`` compresses) or an open text or binary file.
    X_tokens : list of list of (str or dict)
        Tokens as returned by :func:`read_conll` (``str`` tokens need a single
        attribute; dict tokens must hold every attribute).
    y : list of label sequences or None
        Anything :func:`skfcrf._validation.check_label_sequences` accepts: per
        sequence a 1-D label sequence (one chain) or ``(n_tokens, n_chains)``.
        ``None`` writes attribute columns only.
    attributes : sequence of str, optional
        Columns to write, in order.  Defaults to ``("word",)`` for str tokens and to
        the keys of the first dict token otherwise.
    sep : str or None, default=" "
        Column separator, as :func:`read_conll` takes it: what ``read_conll(...,
        sep=sep)`` returns, ``write_conll(..., sep=sep)`` writes back.  ``None``
        (whitespace) writes one space between values and, like the default ``" "``
        (or any separator of spaces only), requires values without whitespace that
        separates columns (the no-break spaces U+00A0, U+2007 and U+202F are part of
        a value), so that the file reads back with ``sep=None`` (the reader's
        default) as well as with ``sep=" "``.  Any other separator, such as ``"\\t"``,
        requires values without it: a tab-separated file takes values with spaces,
        and empty values.  No value may contain a line break (``"\\n"``, ``"\\r"``),
        no line may be whitespace only (it would read as a sequence break), and the
        first value of the file may not start with a byte-order mark (reading drops
        it).
    encoding : str, default="utf-8"

    Raises
    ------
    ValueError
        On tokens/labels that cannot be written unambiguously, or when ``X_tokens``
        and ``y`` disagree in length.
    """
    X_tokens = list(X_tokens)
    if sep is not None and (not isinstance(sep, str) or not sep):
        raise ValueError(f"sep must be None or a non-empty string, got {sep!r}")
    if attributes is None:
        first = next((t for seq in X_tokens for t in seq), None)
        attributes = tuple(first) if isinstance(first, dict) else ("word",)
    attributes = _check_attributes(attributes)
    if y is not None:
        y = list(y)
        # no sequence (what reading a file of blank lines gives): an empty file
        ys = check_label_sequences(y, name="y", allow_empty_sequences=True)[0] if y else []
        if len(ys) != len(X_tokens):
            raise ValueError(f"X_tokens has {len(X_tokens)} sequences but y has {len(ys)}")
    # None and separators of spaces only: the file reads back by whitespace too
    by_whitespace = sep is None or not sep.strip(" ")
    joiner = " " if sep is None else sep
    n_attr = len(attributes)
    buf = []
    for i, seq in enumerate(X_tokens):
        seq = list(seq)
        if not seq:
            raise ValueError(f"X_tokens[{i}] is empty; an empty sequence cannot be written")
        labels = None
        if y is not None:
            labels = ys[i].tolist()
            if len(labels) != len(seq):
                raise ValueError(
                    f"sequence {i}: {len(seq)} tokens but {len(labels)} labels"
                )
        for t, tok in enumerate(seq):
            if tok.__class__ is str and n_attr == 1:
                vals = [tok]
            else:
                vals = list(_token_values(tok, attributes, f"sequence {i}, token {t}"))
            if labels is not None:
                vals.extend(labels[t])
            for k, v in enumerate(vals):
                if v.__class__ is not str:
                    vals[k] = str(v)
            line = joiner.join(vals)
            problem = _unwritable(line, vals, sep, by_whitespace, first=not buf)
            if problem:
                raise ValueError(f"sequence {i}, token {t}: values {vals!r} cannot be "
                                 f"written with sep={sep!r}: {problem}")
            buf.append(line)
        buf.append("")
    text = "\n".join(buf) + "\n" if buf else ""
    f, _, close = _open(path_or_file, "w", encoding)
    try:
        f.write(text)
    finally:
        _close(f, close)
