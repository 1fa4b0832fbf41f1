"""CoNLL column files: what :func:`read_conll` returns, :func:`write_conll` writes back with
the same separator, and the written file reads back as it was (issue 75, case C)."""
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.datasets import read_conll, write_conll

#: the no-break spaces: part of a token, never a column break
NO_BREAK = "\u00a0\u2007\u202f"
#: the characters that end a line when a file is read (``newline=""``)
LINE_BREAKS = "\n\r"
#: every whitespace character that separates columns with ``sep=None``
SEPARATING = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c not in NO_BREAK)


def _text(exclude):
    """Non-empty values of letters, digits, punctuation, symbols, spaces of every kind and
    control characters, without the characters of ``exclude``."""
    chars = st.characters(blacklist_categories=("Cs",), blacklist_characters=exclude + "\ufeff")
    return st.text(chars, min_size=1, max_size=5)


#: per separator: values it can write, and how the written file is read back
WRITABLE = {
    None: (_text(SEPARATING), [None, " "]),
    " ": (_text(SEPARATING), [" ", None]),
    "\t": (_text("\t" + LINE_BREAKS), ["\t"]),
    "|": (_text("|" + LINE_BREAKS), ["|"]),
}


def _sequences(draw, values, n_attr, n_lab):
    attributes = tuple(f"a{i}" for i in range(n_attr))
    X, y = [], []
    for n in draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)):
        rows = [[draw(values) for _ in range(n_attr + n_lab)] for _ in range(n)]
        # a line of whitespace only is a sequence break, so no writer can write it
        if any(not " ".join(r).strip() for r in rows):
            rows = [[v if v.strip() else "x" for v in r] for r in rows]
        X.append([r[0] for r in rows] if n_attr == 1
                 else [dict(zip(attributes, r[:n_attr])) for r in rows])
        lab = np.empty((n, n_lab), dtype=object)
        for i, r in enumerate(rows):
            lab[i, :] = r[n_attr:]
        y.append(lab[:, 0].copy() if n_lab == 1 else lab)
    return attributes, X, y


def _same(X, y, X2, y2):
    assert X2 == X
    if y is None:
        assert y2 is None
    else:
        assert all(a.shape == b.shape and (a == b).all() for a, b in zip(y, y2))


@settings(max_examples=120, deadline=None)
@given(sep=st.sampled_from(list(WRITABLE)), n_attr=st.integers(1, 3), n_lab=st.integers(0, 2),
       data=st.data())
def test_read_of_write_is_identity(sep, n_attr, n_lab, data):
    values, read_seps = WRITABLE[sep]
    attributes, X, y = _sequences(data.draw, values, n_attr, n_lab)
    y = y if n_lab else None
    buf = io.StringIO()
    write_conll(buf, X, y, attributes=attributes, sep=sep)
    for read_sep in read_seps:
        X2, y2 = read_conll(io.StringIO(buf.getvalue()), n_label_columns=n_lab,
                            attributes=attributes, sep=read_sep)
        _same(X, y, X2, y2)


#: a column file's lines, drawn field by field (values of any character but the line breaks)
_FIELD = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=LINE_BREAKS),
                 max_size=4)


@settings(max_examples=150, deadline=None)
@given(sep=st.sampled_from([None, "\t", "|"]), n_cols=st.integers(1, 3), data=st.data())
def test_what_read_returns_write_writes_back(sep, n_cols, data):
    # any file read_conll accepts (here: lines of n_cols fields joined by the separator, or
    # by runs of spaces, tabs and no-break spaces for sep=None) is written back by write_conll
    # with the same separator, and the written file reads as the original did
    joiner = st.sampled_from(["\t", " ", "  ", " \t"]) if sep is None else st.just(sep)
    lines = []
    for _ in range(data.draw(st.integers(1, 6))):
        if data.draw(st.booleans()) and lines:
            lines.append(data.draw(st.sampled_from(["", " ", "\t", "\u00a0"])))
            continue
        fields = data.draw(st.lists(_FIELD, min_size=n_cols, max_size=n_cols))
        line = fields[0]
        for f in fields[1:]:
            line += data.draw(joiner) + f
        lines.append(line)
    text = "\n".join(lines) + "\n"
    attributes = ("word",) if n_cols == 1 else ("word", "pos")[:min(n_cols, 2)]
    n_lab = n_cols - len(attributes)
    try:
        X, y = read_conll(io.StringIO(text), n_label_columns=n_lab, attributes=attributes,
                          sep=sep)
    except ValueError:
        return  # the drawn lines do not have n_cols columns
    buf = io.StringIO()
    write_conll(buf, X, y, attributes=attributes, sep=sep)
    X2, y2 = read_conll(io.StringIO(buf.getvalue()), n_label_columns=n_lab,
                        attributes=attributes, sep=sep)
    _same(X, y, X2, y2)


def test_tab_separated_values_with_spaces_are_written_back():
    text = "New York\tNNP NNP\tB-LOC\nis\tVBZ\tO\n\n"
    X, y = read_conll(io.StringIO(text), attributes=("word", "pos"), sep="\t")
    assert X[0][0] == {"word": "New York", "pos": "NNP NNP"}
    buf = io.StringIO()
    write_conll(buf, X, y, attributes=("word", "pos"), sep="\t")
    assert buf.getvalue() == text
    # an empty value is a column of a tab-separated file like any other
    X, y = read_conll(io.StringIO("a\t\tX\n"), attributes=("word", "pos"), sep="\t")
    assert X == [[{"word": "a", "pos": ""}]]
    buf = io.StringIO()
    write_conll(buf, X, y, sep="\t")
    assert buf.getvalue() == "a\t\tX\n\n"
    # a tab inside a value is still refused, naming the separator
    with pytest.raises(ValueError, match="separator"):
        write_conll(io.StringIO(), [["a\tb"]], [["X"]], sep="\t")
    # and so is a space with the space separator (the file would not read back by whitespace)
    with pytest.raises(ValueError, match="separator"):
        write_conll(io.StringIO(), [["New York"]], [["X"]], sep=" ")


def test_no_break_space_stays_inside_the_token():
    text = "10\u00a0000 CD\nM.\u202fDupont NNP\n\n"
    X, y = read_conll(io.StringIO(text))
    assert X == [["10\u00a0000", "M.\u202fDupont"]]
    assert list(y[0]) == ["CD", "NNP"]
    buf = io.StringIO()
    write_conll(buf, X, y)          # sep=" ": the no-break space is no separator
    assert buf.getvalue() == text
    buf = io.StringIO()
    write_conll(buf, X, y, sep=None)
    assert buf.getvalue() == text


def test_column_count_error_names_the_unusual_whitespace():
    with pytest.raises(ValueError, match=r"U\+2003 \(EM SPACE\)"):
        read_conll(io.StringIO("New\u2003York NNP\n"))
    with pytest.raises(ValueError, match=r"no '\\t' in the line"):
        read_conll(io.StringIO("New York NNP\n"), sep="\t")
