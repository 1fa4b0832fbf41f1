"""Tests for the token-feature transformers of issue 17: Affixes, Casing, Lexicon, WordShape at
offsets, multi-valued attributes in every windowed transformer, BagOfConcepts without stems."""
import doctest
import importlib
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from skfcrf.transformers import (
    Affixes,
    BagOfConcepts,
    Casing,
    Lexicon,
    NGramWindow,
    RelativePosition,
    SequenceFeatureUnion,
    WordShape,
    case_class,
    length_bucket,
)

SETTINGS = settings(max_examples=50, deadline=None)
words = st.sampled_from(["the", "The", "CT", "x-ray", "37.5", ".", "ÄRZTE", "naïve", "東京", "", "iPhone"])
corpora = st.lists(st.lists(words, max_size=8), max_size=4)

NEW = [
    Affixes(),
    Affixes(attribute="pos", offsets=(-1, 1), max_length=2, suffixes=False, lowercase=False),
    Casing(),
    Casing(offsets=(-2, 0, 3), flags=False, length_bins=None),
    Lexicon({"blood pressure": "VITAL", "fever": ["SYMPTOM", "FINDING"]}, offsets=(-1, 0, 1)),
    Lexicon({("Blood",): "X"}, lowercase=False, mark_position=True, name="gaz"),
    WordShape(offsets=(-1, 0, 1)),
    BagOfConcepts(window=1, concept_map={"fever": "T184"}, stem_fallback=False),
]
DICT_X = [[{"word": "His", "pos": "PRP$"}, {"word": "blood", "pos": ["NN", "JJ"]},
           {"word": "pressure", "pos": "NN"}, {"word": "rose", "pos": {"VBD", "NN"}}], []]


# ------------------------------------------------------------------------- exact small outputs

def test_affixes_exact_and_edges():
    out = Affixes(offsets=(-1, 0, 1), max_length=3, prefixes=False).transform([["a", "Cold"]])
    assert out == [[
        {"word.suffix1@0=a": 1.0, "word.suffix1@1=d": 1.0, "word.suffix2@1=ld": 1.0,
         "word.suffix3@1=old": 1.0},
        {"word.suffix1@-1=a": 1.0, "word.suffix1@0=d": 1.0, "word.suffix2@0=ld": 1.0,
         "word.suffix3@0=old": 1.0},
    ]]
    # empty string values and empty sequences give nothing
    assert Affixes().transform([[""], []]) == [[{}], []]
    # unicode: code points, lowercased
    assert Affixes(max_length=1, suffixes=False).transform([["Ärzte", "東京"]])[0] == [
        {"word.prefix1@0=ä": 1.0}, {"word.prefix1@0=東": 1.0}]


def test_casing_classes_flags_and_buckets():
    assert [case_class(w) for w in ["a", "A", "Ab", "aB", "ABc", "", "1-2", "ǅa", "ÄRZTE", "Ärzte"]] == [
        "lower", "upper", "title", "mixed", "mixed", "none", "none", "title", "upper", "title"]
    assert [length_bucket(n, (2, 5)) for n in range(7)] == ["0", "1", "2-4", "2-4", "2-4", "5+", "5+"]
    out = Casing(length_bins=(4,)).transform([["Non-Hodgkin", "42", "—", ""]])[0]
    assert out[0] == {"word.case@0=mixed": 1.0, "word.has@0=hyphen": 1.0, "word.has@0=punct": 1.0,
                      "word.len@0=4+": 1.0}
    assert out[1] == {"word.case@0=none": 1.0, "word.has@0=digit": 1.0, "word.is@0=digit": 1.0,
                      "word.len@0=1-3": 1.0}
    assert out[2] == {"word.case@0=none": 1.0, "word.has@0=hyphen": 1.0, "word.has@0=punct": 1.0,
                      "word.is@0=punct": 1.0, "word.len@0=1-3": 1.0}
    assert out[3] == {"word.case@0=none": 1.0, "word.len@0=0": 1.0}
    edge = Casing(offsets=(-1, 1), flags=False, length_bins=None).transform([["A", "b"]])[0]
    assert edge == [{"word.case@1=lower": 1.0}, {"word.case@-1=upper": 1.0}]


def test_lexicon_longest_match_and_offsets():
    lex = Lexicon({"blood": "FLUID", "blood pressure": "VITAL", "high blood pressure": "DX",
                   "pressure ulcer": "WOUND"}, offsets=(-1, 0))
    out = lex.transform([["High", "blood", "pressure", "ulcer", "blood"]])[0]
    # leftmost-longest, no overlap: "pressure ulcer" is not matched inside the DX match
    assert out == [{"lex@0=DX": 1.0}, {"lex@-1=DX": 1.0, "lex@0=DX": 1.0},
                   {"lex@-1=DX": 1.0, "lex@0=DX": 1.0}, {"lex@-1=DX": 1.0},
                   {"lex@0=FLUID": 1.0}]
    # a prefix of a longer phrase that does not complete falls back to the shorter match
    assert Lexicon({"blood": "FLUID", "blood pressure cuff": "DEV"}).transform(
        [["blood", "pressure"]])[0] == [{"lex@0=FLUID": 1.0}, {}]
    # case-sensitive mode, several classes, phrases with identical folded tokens combine
    assert Lexicon({"CT": "EXAM"}, lowercase=False).transform([["ct", "CT"]])[0] == [{}, {"lex@0=EXAM": 1.0}]
    both = Lexicon({"Cold": "A", "cold": ["B", "A"]}).transform([["COLD"]])[0]
    assert both == [{"lex@0=A": 1.0, "lex@0=B": 1.0}]
    assert lex.transform([[]]) == [[]]
    # unicode: casefold matches ß/SS
    assert Lexicon({"straße": "ROAD"}).transform([["STRASSE"]])[0] == [{"lex@0=ROAD": 1.0}]


def test_lexicon_multivalued_tokens_and_validation():
    X = [[{"word": "x", "lemma": ["be", "is"]}, {"word": "y", "lemma": ["ill"]}]]
    assert Lexicon({"be ill": "STATE"}, attribute="lemma", mark_position=True).transform(X)[0] == [
        {"lex@0=B-STATE": 1.0}, {"lex@0=I-STATE": 1.0}]
    for bad in [{"": "A"}, {"a": ""}, {"a": None}, {3: "A"}, ["a"]]:
        with pytest.raises(ValueError):
            Lexicon(bad).transform([["a"]])


def test_wordshape_offsets_and_default_unchanged():
    X = [["Dr.", "Smith", "2024"]]
    assert WordShape().transform(X) == [[{"ccpg=Aa.": 1.0}, {"ccpg=Aaaaa": 1.0}, {"ccpg=iiii": 1.0}]]
    out = WordShape(mode="repg", offsets=(-1, 1)).transform(X)[0]
    assert out == [{"repg@1=Aa+": 1.0}, {"repg@-1=Aa.": 1.0, "repg@1=i+": 1.0}, {"repg@-1=Aa+": 1.0}]
    with pytest.raises(ValueError):
        WordShape(offsets=(0, 0)).transform(X)


# ------------------------------------------------------------------------- multi-valued attributes

def test_multivalued_attribute_in_every_windowed_transformer():
    X = [[{"word": "cool", "pos": ["JJ", "VB", "JJ"]}, {"word": "it", "pos": ("PRP",)},
          {"word": "x", "pos": []}]]
    assert NGramWindow(attribute="pos", offsets=(0,)).transform(X)[0] == [
        {"pos@0=JJ": 1.0, "pos@0=VB": 1.0}, {"pos@0=PRP": 1.0}, {}]
    bi = NGramWindow(attribute="pos", offsets=(0, 1), ngram_range=(2, 2)).transform(X)[0]
    assert bi[0] == {"pos@0..1=JJ|PRP": 1.0, "pos@0..1=VB|PRP": 1.0}
    assert bi[1] == {} and bi[2] == {}  # product with an empty value set is empty
    assert WordShape(attribute="pos").transform(X)[0] == [{"ccpg=AA": 1.0}, {"ccpg=AAA": 1.0}, {}]
    assert Affixes(attribute="pos", max_length=1, prefixes=False, lowercase=False).transform(X)[0][0] == {
        "pos.suffix1@0=J": 1.0, "pos.suffix1@0=B": 1.0}
    casing = Casing(attribute="pos", flags=False, length_bins=None)
    assert casing.transform(X)[0][0] == {"pos.case@0=upper": 1.0}
    bag = BagOfConcepts(window=0, attribute="pos", concept_map={"JJ": "ADJ", "VB": ["V", "ADJ"]})
    assert bag.transform(X)[0][0] == {"concept=ADJ": 1.0, "concept=V": 1.0}
    # sets are sorted (deterministic), multi-valued output is identical through the union cache
    Xs = [[{"word": "a", "pos": {"VB", "JJ"}}]]
    assert list(NGramWindow(attribute="pos", offsets=(0,)).transform(Xs)[0][0]) == ["pos@0=JJ", "pos@0=VB"]
    union = SequenceFeatureUnion([("n", NGramWindow(attribute="pos", offsets=(0,))),
                                  ("s", WordShape(attribute="pos"))])
    assert union.transform(X)[0][0] == {"n__pos@0=JJ": 1.0, "n__pos@0=VB": 1.0, "s__ccpg=AA": 1.0}
    with pytest.raises(ValueError, match="None"):
        NGramWindow(attribute="pos").transform([[{"pos": ["NN", None]}]])


def test_bag_of_concepts_without_stem_fallback():
    X = [["fever", "and", "fevers"]]
    stems = BagOfConcepts(window=1, concept_map={"fever": "C1"}).transform(X)[0]
    types = BagOfConcepts(window=1, concept_map={"fever": "T184"}, stem_fallback=False).transform(X)[0]
    assert all(not any(k.startswith("stem=") for k in d) for d in types)
    assert types == [{"concept=T184": 1.0}, {"concept=T184": 1.0}, {}]
    assert stems[2] == {"stem=and": 1.0, "stem=fever": 1.0}
    assert BagOfConcepts(stem_fallback=False).transform([["a", "b"]]) == [[{}, {}]]


# ------------------------------------------------------------------------- generic contracts

@pytest.mark.parametrize("est", NEW, ids=lambda e: type(e).__name__)
def test_clone_pickle_and_dict_tokens(est):
    X = [["His", "blood", "pressure", "rose"], [], ["Fever"]]
    if getattr(est, "attribute", "word") == "pos":
        X = DICT_X
    out = est.transform(X)
    assert len(out) == len(X) and all(len(o) == len(s) for o, s in zip(out, X))
    assert clone(est).transform(X) == out
    again = pickle.loads(pickle.dumps(est))
    assert again.transform(X) == out
    est2 = clone(est).fit(X)
    assert list(est2.get_feature_names_out()) == sorted({k for s in out for d in s for k in d})
    assert est2.fit_transform(X) == out


@SETTINGS
@given(X=corpora)
def test_windowed_outputs_are_consistent_with_offset_zero(X):
    """At offset o a token sees exactly the offset-0 observations of token t+o, renamed."""
    for make in (lambda o: Affixes(offsets=o), lambda o: Casing(offsets=o),
                 lambda o: WordShape(offsets=o), lambda o: Lexicon({"the ct": "A", "x-ray": "B"}, offsets=o)):
        base = make((0,)).transform(X)
        win = make((-2, 1)).transform(X)
        for b, w in zip(base, win):
            for t in range(len(b)):
                expect = {}
                for o in (-2, 1):
                    if 0 <= t + o < len(b):
                        expect.update({k.replace("@0=", f"@{o}="): v for k, v in b[t + o].items()})
                assert w[t] == expect


def test_parameter_validation():
    for est in [Affixes(max_length=0), Affixes(prefixes=False, suffixes=False), Affixes(offsets=()),
                Casing(length_bins=(3, 3)), Casing(length_bins=(1,)), Casing(flags=1),
                Lexicon({}, offsets="0"), BagOfConcepts(stem_fallback="no")]:
        with pytest.raises(ValueError):
            est.transform([["a"]])


@pytest.mark.parametrize("module", ["_affix", "_casing", "_lexicon", "_shape", "_concepts", "_ngram"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(f"skfcrf.transformers.{module}"))
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")   # max_iter=15 on purpose
def test_pipeline_gridsearch_new_transformers():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from skfcrf import FactorialCRF

    rng = np.random.RandomState(0)
    vocab = ["Fever", "cough", "CT", "x-ray", "normal", "blood", "pressure", "37.5"]
    X, y = [], []
    for _ in range(12):
        toks = [{"word": w, "pos": ["NN", "JJ"] if w == "normal" else "NN"}
                for w in rng.choice(vocab, size=rng.randint(3, 7))]
        X.append(toks)
        y.append([("V" if t["word"] in ("blood", "pressure", "37.5") else "O",
                   "N" if t["word"][0].isupper() else "L") for t in toks])
    union = SequenceFeatureUnion([
        ("aff", Affixes(max_length=2)),
        ("case", Casing(offsets=(-1, 0))),
        ("lex", Lexicon({"blood pressure": "VITAL"}, offsets=(-1, 0, 1))),
        ("pos", NGramWindow(attribute="pos", offsets=(0,))),
        ("shape", WordShape(offsets=(-1, 0))),
        ("rel", RelativePosition(n_bins=2)),
    ])
    pipe = Pipeline([("feat", union), ("crf", FactorialCRF(max_iter=15))])
    search = GridSearchCV(pipe, {"feat__aff__max_length": [1, 2], "feat__case__flags": [True, False]}, cv=2)
    search.fit(X, y)
    assert set(search.best_params_) == {"feat__aff__max_length", "feat__case__flags"}
    pred = search.predict(X)
    assert [len(p) for p in pred] == [len(s) for s in X]
