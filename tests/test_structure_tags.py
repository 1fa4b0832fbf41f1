"""Tests for the BIO <-> BIOES / BME label conversions (skfcrf.structure._tags)."""
import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.structure import _tags, to_bio, to_bioes, to_bme

bio_labels = st.lists(st.sampled_from(["O", "B-A", "I-A", "B-B", "I-B", "BeginA", "A"]), max_size=15)


def test_exact_conversions():
    x = ["B-A", "I-A", "I-A", "B-A", "O", "I-B", "I-B", "I-A", "BeginA", "A"]
    assert to_bioes(x) == ["B-A", "I-A", "E-A", "S-A", "O", "B-B", "E-B", "S-A", "B-A", "E-A"]
    assert to_bme(x) == ["B-A", "M-A", "E-A", "B-A", "O", "B-B", "E-B", "B-A", "B-A", "E-A"]
    assert to_bio(to_bioes(x)) == ["B-A", "I-A", "I-A", "B-A", "O", "B-B", "I-B", "B-A", "B-A", "I-A"]
    assert to_bioes([]) == [] and to_bme([]) == [] and to_bio([]) == []
    assert to_bioes(["B-Ärzte", "I-Ärzte"]) == ["B-Ärzte", "E-Ärzte"]
    # thesis notation out
    assert to_bio(["S-Plan", "B-Dx", "E-Dx"], begin="Begin", inside="") == ["BeginPlan", "BeginDx", "Dx"]
    # BME: an E- ends the segment; a following M- of the same type starts a new one
    assert to_bio(["B-A", "E-A", "M-A", "E-A"], "bme") == ["B-A", "I-A", "B-A", "I-A"]


def test_errors():
    with pytest.raises(ValueError):
        to_bio(["S-A"], "bme")
    with pytest.raises(ValueError):
        to_bio(["X"], "bioes")
    with pytest.raises(ValueError):
        to_bio(["B-A"], "iob")
    with pytest.raises(ValueError):
        to_bioes("B-A")


def _canonical(x):
    """Reference BIO reading: a segment starts at B-/Begin, after O, or at a type change."""
    out, prev = [], None
    for lab in x:
        if lab == "O":
            out.append("O")
            prev = None
            continue
        if lab.startswith("B-") or lab.startswith("Begin"):
            typ = lab[2:] if lab.startswith("B-") else lab[5:]
            start = True
        else:
            typ = lab[2:] if lab.startswith("I-") else lab
            start = typ != prev
        out.append(("B-" if start else "I-") + typ)
        prev = typ
    return out


@settings(max_examples=200, deadline=None)
@given(x=bio_labels)
def test_round_trips(x):
    canon = _canonical(x)
    assert to_bio(to_bioes(x)) == canon
    assert to_bio(to_bme(x), "bme") == canon
    assert to_bioes(to_bio(to_bioes(x))) == to_bioes(x)
    # every BIOES segment is S- alone or B- I-* E-
    bioes = to_bioes(x)
    for t, lab in enumerate(bioes):
        if lab[:2] in ("B-", "I-"):
            assert t + 1 < len(bioes) and bioes[t + 1][:2] in ("I-", "E-") and bioes[t + 1][2:] == lab[2:]


def test_docstring_examples():
    result = doctest.testmod(_tags)
    assert result.failed == 0 and result.attempted > 0
