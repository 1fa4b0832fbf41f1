"""Tests for skfcrf.transformers."""
import copy
import math
import pickle
import time
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skfcrf.transformers import (
    BOS,
    EOS,
    BagOfConcepts,
    NGramWindow,
    RelativePosition,
    SequenceFeatureUnion,
    WordShape,
    light_stem,
    make_sequence_union,
    word_shape,
)

from _helpers import short_fit

SETTINGS = settings(max_examples=60, deadline=None)

words = st.sampled_from(["the", "The", "patient", "is", "fever", "Fevers", "a", "x|y", "ÄRZTE", "37.5", ""])
sequences = st.lists(words, min_size=0, max_size=12)
corpora = st.lists(sequences, min_size=0, max_size=4)


def _concept_for(word):
    return "C1" if word.startswith("fe") else None


def module_concept_map(word):
    """Picklable callable concept map."""
    return {"fever": "C0015967", "pyrexia": "C0015967", "pain": ["C0030193", "C0000001"]}.get(word)


ALL = [
    NGramWindow(),
    NGramWindow(attribute="pos", offsets=(-1, 0, 1), ngram_range=(1, 2), lowercase=True),
    BagOfConcepts(window=2, concept_map={"fever": "C0015967"}, normalize="l2"),
    BagOfConcepts(concept_map=module_concept_map),
    RelativePosition(),
    RelativePosition(n_bins=(2, 3)),
    WordShape(),
    WordShape(mode="repg"),
    SequenceFeatureUnion([("n", NGramWindow()), ("r", RelativePosition())], transformer_weights={"r": 2.0}),
]

DICT_X = [
    [{"word": "The", "pos": "DT"}, {"word": "patient", "pos": "NN"}, {"word": "has", "pos": "VBZ"},
     {"word": "fever", "pos": "NN"}, {"word": ".", "pos": "."}],
    [],
    [{"word": "Pain", "pos": "NN"}],
]


def _ids(est):
    return type(est).__name__


# ----------------------------------------------------------------------------- reference implementations


def ref_ngram(seq, offsets, ngram_range, lowercase, attribute="word"):
    vals = [t if isinstance(t, str) else t[attribute] for t in seq]
    if lowercase:
        vals = [v.lower() for v in vals]
    n_tok = len(vals)
    out = []
    for t in range(n_tok):
        d = {}
        for n in range(ngram_range[0], ngram_range[1] + 1):
            for o in offsets:
                if not all(o + k in offsets for k in range(n)):
                    continue
                parts = []
                for k in range(n):
                    p = t + o + k
                    parts.append(BOS if p < 0 else EOS if p >= n_tok else vals[p])
                name = f"{attribute}@{o}=" if n == 1 else f"{attribute}@{o}..{o + n - 1}="
                d[name + "|".join(parts)] = 1.0
        out.append(d)
    return out


def ref_bag(seq, window, concept_of, normalize):
    out = []
    for t in range(len(seq)):
        counts = {}
        for j in range(max(0, t - window), min(len(seq), t + window + 1)):
            for k in concept_of(seq[j]):
                counts[k] = counts.get(k, 0) + 1
        if normalize == "l1":
            s = sum(counts.values())
            counts = {k: c / s for k, c in counts.items()}
        elif normalize == "l2":
            s = math.sqrt(sum(c * c for c in counts.values()))
            counts = {k: c / s for k, c in counts.items()}
        elif normalize == "log":
            counts = {k: 1 + math.log(c) for k, c in counts.items()}
        out.append({k: float(c) for k, c in counts.items()})
    return out


def assert_obs_equal(a, b):
    assert len(a) == len(b)
    for da, db in zip(a, b):
        assert da.keys() == db.keys()
        for k in da:
            assert da[k] == pytest.approx(db[k], rel=1e-12, abs=1e-12)


# ----------------------------------------------------------------------------- NGramWindow


def test_ngram_exact_default():
    out = NGramWindow().transform([["the", "patient", "is"]])
    assert out == [[
        {"word@-2=__BOS__": 1.0, "word@-1=__BOS__": 1.0, "word@0=the": 1.0, "word@1=patient": 1.0,
         "word@2=is": 1.0},
        {"word@-2=__BOS__": 1.0, "word@-1=the": 1.0, "word@0=patient": 1.0, "word@1=is": 1.0,
         "word@2=__EOS__": 1.0},
        {"word@-2=the": 1.0, "word@-1=patient": 1.0, "word@0=is": 1.0, "word@1=__EOS__": 1.0,
         "word@2=__EOS__": 1.0},
    ]]
    assert BOS == "__BOS__" and EOS == "__EOS__"


def test_ngram_bigrams_and_lowercase():
    out = NGramWindow(offsets=(-1, 0, 1), ngram_range=(1, 2), lowercase=True).transform([["The", "Patient"]])
    assert out[0][1] == {
        "word@-1=the": 1.0, "word@0=patient": 1.0, "word@1=__EOS__": 1.0,
        "word@-1..0=the|patient": 1.0, "word@0..1=patient|__EOS__": 1.0,
    }
    assert out[0][0]["word@-1..0=__BOS__|the"] == 1.0


def test_ngram_only_bigrams_inside_window():
    out = NGramWindow(offsets=(-2, 0, 1), ngram_range=(2, 2)).transform([["a", "b"]])
    assert out == [[{"word@0..1=a|b": 1.0}, {"word@0..1=b|__EOS__": 1.0}]]
    # no pair of consecutive offsets: nothing to emit, but one dict per token
    assert NGramWindow(offsets=(0, 2), ngram_range=(2, 3)).transform([["a", "b"], []]) == [[{}, {}], []]


def test_ngram_pos_attribute_dict_tokens():
    out = NGramWindow(attribute="pos", offsets=(0, 1)).transform(DICT_X)
    assert out[0][0] == {"pos@0=DT": 1.0, "pos@1=NN": 1.0}
    assert out[1] == []
    assert out[2] == [{"pos@0=NN": 1.0, "pos@1=__EOS__": 1.0}]


@SETTINGS
@given(
    X=corpora,
    offsets=st.lists(st.integers(-3, 3), min_size=1, max_size=5, unique=True),
    rng=st.tuples(st.integers(1, 3), st.integers(0, 2)).map(lambda t: (t[0], t[0] + t[1])),
    lowercase=st.booleans(),
)
def test_ngram_matches_reference(X, offsets, rng, lowercase):
    out = NGramWindow(offsets=tuple(offsets), ngram_range=rng, lowercase=lowercase).transform(X)
    assert len(out) == len(X)
    for seq, seq_out in zip(X, out):
        assert_obs_equal(seq_out, ref_ngram(seq, set(offsets), rng, lowercase))


@pytest.mark.parametrize(
    "params, msg",
    [
        ({"offsets": ()}, "at least one"),
        ({"offsets": (0, 0)}, "distinct"),
        ({"offsets": (0, "1")}, "int"),
        ({"offsets": (0.5,)}, "int"),
        ({"offsets": 1}, "sequence of ints"),
        ({"offsets": (True,)}, "int"),
        ({"ngram_range": (2, 1)}, "min_n <= max_n"),
        ({"ngram_range": (0, 1)}, ">= 1"),
        ({"ngram_range": (1, 2, 3)}, "tuple"),
        ({"ngram_range": 2}, "tuple"),
        ({"lowercase": "yes"}, "bool"),
        ({"attribute": ""}, "non-empty"),
        ({"attribute": 3}, "non-empty"),
    ],
)
def test_ngram_param_validation(params, msg):
    est = NGramWindow(**params)  # __init__ does not validate
    with pytest.raises(ValueError, match=msg):
        est.fit([["a"]])
    with pytest.raises(ValueError, match=msg):
        est.transform([["a"]])


# ----------------------------------------------------------------------------- BagOfConcepts


def test_bag_exact_small():
    bag = BagOfConcepts(window=1, concept_map={"fever": "C0015967"})
    out = bag.transform([["fever", "and", "fevers", "again"]])
    assert out == [[
        {"concept=C0015967": 1.0, "stem=and": 1.0},
        {"concept=C0015967": 1.0, "stem=and": 1.0, "stem=fever": 1.0},
        {"stem=and": 1.0, "stem=fever": 1.0, "stem=again": 1.0},
        {"stem=fever": 1.0, "stem=again": 1.0},
    ]]


def test_bag_counts_tf_and_window_zero():
    X = [["fever", "Fever", "fever", "pain"]]
    cm = {"fever": "C0015967"}
    out = BagOfConcepts(window=10, concept_map=cm).transform(X)
    # lowercased lookup maps "Fever" too; all four tokens are in every window
    assert out[0][0] == {"concept=C0015967": 3.0, "stem=pain": 1.0}
    assert all(d == out[0][0] for d in out[0])
    out0 = BagOfConcepts(window=0, concept_map=cm).transform(X)
    assert out0[0] == [{"concept=C0015967": 1.0}] * 3 + [{"stem=pain": 1.0}]


def test_bag_concept_map_callable_and_multiple_ids():
    out = BagOfConcepts(window=0, concept_map=module_concept_map).transform([["pain", "pyrexia", "cough"]])
    assert out == [[{"concept=C0030193": 1.0, "concept=C0000001": 1.0}, {"concept=C0015967": 1.0},
                    {"stem=cough": 1.0}]]
    with pytest.raises(ValueError, match="concept_map gave"):
        BagOfConcepts(concept_map=lambda w: 3.5).transform([["a"]])


def test_bag_lemma_attribute():
    X = [[{"word": "fevers", "lemma": "fever"}, {"word": "went", "lemma": "go"}]]
    out = BagOfConcepts(window=1, attribute="lemma", concept_map={"fever": "C1"}).transform(X)
    assert out[0][0] == {"concept=C1": 1.0, "stem=go": 1.0}


@SETTINGS
@given(X=corpora, window=st.integers(0, 5), normalize=st.sampled_from([None, "l1", "l2", "log"]),
       use_map=st.booleans())
def test_bag_matches_quadratic_reference(X, window, normalize, use_map):
    cm = _concept_for if use_map else None

    def concept_of(tok):
        c = _concept_for(tok) if use_map else None
        if c:
            return [f"concept={c}"]
        s = light_stem(tok)
        return [f"stem={s}"] if s else []

    out = BagOfConcepts(window=window, concept_map=cm, normalize=normalize).transform(X)
    for seq, seq_out in zip(X, out):
        assert_obs_equal(seq_out, ref_bag(seq, window, concept_of, normalize))


def test_bag_normalisations():
    X = [["a1x", "b1x", "a1x", "c1x"]]
    l1 = BagOfConcepts(window=5, normalize="l1").transform(X)[0][0]
    assert sum(l1.values()) == pytest.approx(1.0) and l1["stem=a1x"] == pytest.approx(0.5)
    l2 = BagOfConcepts(window=5, normalize="l2").transform(X)[0][0]
    assert math.sqrt(sum(v * v for v in l2.values())) == pytest.approx(1.0)
    lg = BagOfConcepts(window=5, normalize="log").transform(X)[0][0]
    assert lg == {"stem=a1x": 1 + math.log(2), "stem=b1x": 1.0, "stem=c1x": 1.0}


def test_bag_is_linear_in_window_and_length():
    # 20k tokens, window 2000, 4 distinct values: the sliding window touches each token
    # twice; a per-token scan of the window would do 80M steps.
    X = [["alpha", "beta", "gamma", "delta"] * 5000]
    t0 = time.perf_counter()
    out = BagOfConcepts(window=2000).transform(X)
    assert time.perf_counter() - t0 < 2.0
    assert out[0][10000] == {"stem=alpha": 1001.0, "stem=beta": 1000.0, "stem=gamma": 1000.0,
                             "stem=delta": 1000.0}
    assert out[0][0]["stem=alpha"] == 501.0


@pytest.mark.parametrize(
    "word, stem",
    [("patients", "patient"), ("Bleeding", "bleed"), ("running", "run"), ("swelling", "swell"),
     ("studies", "study"), ("diagnosis", "diagnosis"), ("status", "status"), ("illness", "ill"),
     ("losses", "loss"), ("abscess", "abscess"),
     ("diseases", "disease"), ("stopped", "stop"), ("needed", "need"), ("agreed", "agreed"),
     ("sing", "sing"), ("is", "is"), ("bed", "bed"), ("quickly", "quick"), ("treatment", "treat"),
     ("relational", "relate"), ("patient's", "patient"), ("", ""), ("ÄRZTE", "ärzte")],
)
def test_light_stem(word, stem):
    assert light_stem(word) == stem


@pytest.mark.parametrize(
    "params, msg",
    [
        ({"window": -1}, ">= 0"),
        ({"window": 2.0}, "int"),
        ({"window": True}, "int"),
        ({"concept_map": ["C1"]}, "concept_map"),
        ({"normalize": "max"}, "normalize"),
        ({"attribute": None}, "non-empty"),
    ],
)
def test_bag_param_validation(params, msg):
    with pytest.raises(ValueError, match=msg):
        BagOfConcepts(**params).fit([["a"]])


# ----------------------------------------------------------------------------- RelativePosition


def test_relpos_exact():
    out = RelativePosition(n_bins=4).transform([list("abcdefgh"), ["x"], []])
    assert [list(d)[0] for d in out[0]] == [f"relpos4={b}" for b in (0, 0, 1, 1, 2, 2, 3, 3)]
    assert out[1] == [{"relpos4=0": 1.0}]
    assert out[2] == []
    multi = RelativePosition(n_bins=(2, 3)).transform([list("abcdef")])[0]
    assert multi[3] == {"relpos2=1": 1.0, "relpos3=1": 1.0}
    assert multi[5] == {"relpos2=1": 1.0, "relpos3=2": 1.0}


def test_relpos_default_and_shorter_than_bins():
    out = RelativePosition().transform([list("abc")])[0]
    assert out == [{"relpos8=0": 1.0}, {"relpos8=2": 1.0}, {"relpos8=5": 1.0}]
    est = RelativePosition(n_bins=(2, 3)).fit([])
    assert list(est.get_feature_names_out()) == ["relpos2=0", "relpos2=1",
                                                 "relpos3=0", "relpos3=1", "relpos3=2"]


@SETTINGS
@given(n=st.integers(1, 200), k=st.integers(1, 12))
def test_relpos_equal_parts(n, k):
    out = RelativePosition(n_bins=k).transform([["w"] * n])[0]
    bins = [int(list(d)[0].split("=")[1]) for d in out]
    assert bins == sorted(bins) and bins[0] == 0
    if n >= k:
        assert bins[-1] == k - 1
    assert all(0 <= b < k for b in bins)
    sizes = [bins.count(b) for b in range(k)]
    if n >= k:
        assert max(sizes) - min(sizes) <= 1
    assert all(len(d) == 1 and list(d.values()) == [1.0] for d in out)


def test_relpos_rows_not_shared_between_sequences():
    out = RelativePosition(n_bins=2).transform([["a", "b"], ["c", "d"]])
    out[0][0]["extra"] = 1.0
    assert out[1][0] == {"relpos2=0": 1.0}


@pytest.mark.parametrize("n_bins, msg", [(0, ">= 1"), ((), "empty"), ((2, 2), "distinct"), ("8", "int"),
                                         (2.5, "int"), ((2, 0), ">= 1"), (True, "int")])
def test_relpos_param_validation(n_bins, msg):
    with pytest.raises(ValueError, match=msg):
        RelativePosition(n_bins=n_bins).transform([["a"]])


def test_relpos_checks_tokens():
    with pytest.raises(ValueError, match=r"X\[0\]\[1\] must be a str or a dict"):
        RelativePosition().transform([["a", 3]])


# ----------------------------------------------------------------------------- WordShape


@pytest.mark.parametrize(
    "word, ccpg, repg",
    [("T.", "A.", "A."), ("Moloney", "Aaaaaaa", "Aa+"), ("1993", "iiii", "i+"),
     ("McDonald's", "AaAaaaaa'a", "AaAa+'a"),
     ("37.5", "ii.i", "i+.i"), ("...", "...", "..."), ("", "", ""), ("ABC-12", "AAA-ii", "A+-i+"),
     ("Ärztin", "Aaaaaa", "Aa+"), ("ÉCOLE", "AAAAA", "A+"), ("東京", "aa", "a+"), ("٣٤", "ii", "i+"),
     (unicodedata.normalize("NFD", "café"), "aaaa", "a+"), ("ǅemal", "Aaaaa", "Aa+"), ("x²", "ai", "ai")],
)
def test_word_shape(word, ccpg, repg):
    assert word_shape(word, "ccpg") == ccpg
    assert word_shape(word, "repg") == repg


def test_wordshape_transformer():
    out = WordShape(mode="repg").transform([["Dr.", "Smith", "2024"], []])
    assert out == [[{"repg=Aa.": 1.0}, {"repg=Aa+": 1.0}, {"repg=i+": 1.0}], []]
    out = WordShape().transform(DICT_X)
    assert out[0][0] == {"ccpg=Aaa": 1.0}
    with pytest.raises(ValueError, match="mode"):
        WordShape(mode="ccgp").transform([["a"]])


@SETTINGS
@given(st.text(max_size=12))
def test_word_shape_properties(word):
    c = word_shape(word, "ccpg")
    r = word_shape(word, "repg")
    import re

    assert re.sub(r"([Aai])\1+", r"\1+", c) == r
    if word.isascii():
        assert len(c) == len(word)
        # ASCII fast path agrees with the per-character Unicode policy
        from skfcrf.transformers._shape import _char_class

        assert c == "".join(_char_class(ch) for ch in word)
    for mode in ("ccpg", "repg"):
        assert word_shape(unicodedata.normalize("NFD", word), mode) == word_shape(word, mode)
    assert set(c) <= {"A", "a", "i"} | set(unicodedata.normalize("NFC", word))


# ----------------------------------------------------------------------------- SequenceFeatureUnion


def test_union_prefixes_and_weights():
    union = SequenceFeatureUnion(
        [("ngram", NGramWindow(offsets=(0,))), ("shape", WordShape()), ("rel", RelativePosition(n_bins=2))],
        transformer_weights={"shape": 0.5, "rel": 3},
    )
    out = union.fit_transform([["the", "Patient"], []])
    assert out == [[{"ngram__word@0=the": 1.0, "shape__ccpg=aaa": 0.5, "rel__relpos2=0": 3.0},
                    {"ngram__word@0=Patient": 1.0, "shape__ccpg=Aaaaaaa": 0.5, "rel__relpos2=1": 3.0}], []]
    assert union.transform([["the", "Patient"], []]) == out
    assert list(union.get_feature_names_out()) == [
        "ngram__word@0=Patient", "ngram__word@0=the", "shape__ccpg=Aaaaaaa", "shape__ccpg=aaa",
        "rel__relpos2=0", "rel__relpos2=1"]
    # member names are unprefixed
    assert list(union.named_transformers["ngram"].get_feature_names_out()) == ["word@0=Patient", "word@0=the"]


def test_union_same_transformer_twice_does_not_collide():
    union = make_sequence_union(NGramWindow(offsets=(0,)), NGramWindow(offsets=(0,), lowercase=True))
    assert [n for n, _ in union.transformer_list] == ["ngramwindow-1", "ngramwindow-2"]
    out = union.fit_transform([["The"]])
    assert out == [[{"ngramwindow-1__word@0=The": 1.0, "ngramwindow-2__word@0=the": 1.0}]]
    u2 = make_sequence_union(WordShape(), RelativePosition())
    assert [n for n, _ in u2.transformer_list] == ["wordshape", "relativeposition"]


def test_union_bag_weights_and_nested_union():
    inner = SequenceFeatureUnion([("bag", BagOfConcepts(window=1))], transformer_weights={"bag": 2.0})
    outer = SequenceFeatureUnion([("in", inner), ("rel", RelativePosition(n_bins=1))],
                                 transformer_weights={"in": 0.25})
    out = outer.fit_transform([["a1x", "a1x"]])
    assert out == [[{"in__bag__stem=a1x": 1.0, "rel__relpos1=0": 1.0}] * 2]
    assert list(outer.get_feature_names_out()) == ["in__bag__stem=a1x", "rel__relpos1=0"]


def test_union_drop_and_foreign_transformer():
    class Upper:
        def fit(self, X, y=None):
            return self

        def transform(self, X):
            return [[{"up": 2} for _ in seq] for seq in X]

    union = SequenceFeatureUnion([("x", "drop"), ("u", Upper()), ("s", WordShape())],
                                 transformer_weights={"u": 0.5})
    assert union.fit_transform([["a"], []]) == [[{"u__up": 1.0, "s__ccpg=a": 1.0}], []]
    with pytest.raises(AttributeError, match="get_feature_names_out"):
        union.get_feature_names_out()
    assert SequenceFeatureUnion([("x", "drop")]).fit_transform([["a", "b"]]) == [[{}, {}]]


def test_union_get_set_params_and_clone():
    union = SequenceFeatureUnion([("ngram", NGramWindow()), ("rel", RelativePosition())])
    params = union.get_params()
    assert params["ngram__offsets"] == (-2, -1, 0, 1, 2) and "rel__n_bins" in params
    union.set_params(ngram__offsets=(0,), rel__n_bins=2)
    assert union.named_transformers["ngram"].offsets == (0,)
    c = clone(union)
    assert c.get_params()["ngram__offsets"] == (0,)
    assert c.named_transformers["ngram"] is not union.named_transformers["ngram"]
    union.set_params(rel="drop")
    assert union.fit_transform([["a"]]) == [[{"ngram__word@0=a": 1.0}]]


@pytest.mark.parametrize(
    "tl, tw, msg",
    [
        ([], None, "at least one"),
        ([("a", NGramWindow()), ("a", WordShape())], None, "unique"),
        ([("a__b", NGramWindow())], None, "'__'"),
        ([("", NGramWindow())], None, "non-empty"),
        ([("a", NGramWindow())], {"b": 1.0}, "not in transformer_list"),
        ([("a", NGramWindow())], {"a": "x"}, "finite real"),
        ([("a", NGramWindow())], {"a": float("nan")}, "finite real"),
        ([("a", object())], None, "fit and transform"),
        ([("a", NGramWindow(), 1)], None, "pairs"),
        ([("transformer_weights", NGramWindow())], None, "conflict"),
        ("abc", None, "list of"),
        ([("a", NGramWindow(offsets=()))], None, "at least one offset"),
    ],
)
def test_union_validation(tl, tw, msg):
    with pytest.raises(ValueError, match=msg):
        SequenceFeatureUnion(tl, transformer_weights=tw).fit_transform([["a"]])


# ----------------------------------------------------------------------------- common conventions


@pytest.mark.parametrize("est", ALL, ids=_ids)
def test_clone_pickle_and_equivalent_output(est):
    X = DICT_X
    c = clone(est)
    assert c.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    ref = c.fit_transform(X)
    assert ref == c.transform(X) == clone(est).transform(X)  # transform needs no fit
    p = pickle.loads(pickle.dumps(c))
    assert p.transform(X) == ref
    assert list(p.get_feature_names_out()) == list(c.get_feature_names_out())


@pytest.mark.parametrize("est", ALL, ids=_ids)
def test_no_input_mutation_and_empty_sequences(est):
    X = copy.deepcopy(DICT_X)
    X_before = copy.deepcopy(X)
    out = clone(est).fit_transform(X)
    assert X == X_before
    assert [len(s) for s in out] == [len(s) for s in X]
    assert out[1] == []
    assert clone(est).fit_transform([]) == []
    assert all(isinstance(v, float) for seq in out for d in seq for v in d.values())


@pytest.mark.parametrize("est", ALL, ids=_ids)
def test_fit_returns_self_and_names_need_fit(est):
    e = clone(est)
    with pytest.raises(NotFittedError):
        e.get_feature_names_out()
    assert e.fit(DICT_X) is e
    names = set(e.get_feature_names_out())
    seen = {k for seq in e.transform(DICT_X) for d in seq for k in d}
    assert seen <= names
    if not isinstance(e, RelativePosition) and not (
        isinstance(e, SequenceFeatureUnion)
    ):
        assert seen == names


@pytest.mark.parametrize("est", [e for e in ALL if getattr(e, "attribute", "word") == "word"
                                 and not isinstance(e, SequenceFeatureUnion)] + [ALL[-1]], ids=_ids)
def test_str_tokens_equal_dict_tokens(est):
    X_str = [["The", "patient", "has", "fever", "."], [], ["Pain"]]
    X_dict = [[{"word": w} for w in s] for s in X_str]
    assert clone(est).transform(X_str) == clone(est).transform(X_dict)
    # tuples / numpy arrays of tokens are accepted as sequences
    assert clone(est).transform([tuple(s) for s in X_str]) == clone(est).transform(X_str)
    assert clone(est).transform(np.array(s, dtype=object) for s in X_str) == clone(est).transform(X_str)


@pytest.mark.parametrize("est", ALL, ids=_ids)
@pytest.mark.parametrize(
    "X, msg",
    [
        ("the patient", "list of token sequences"),
        (None, "list of token sequences"),
        (["the", "patient"], r"X\[0\] is a string.*wrap it in a list"),
        ([{"word": "a"}], r"X\[0\] is a dict"),
        ([5], r"X\[0\] must be a sequence"),
        ([[{"word": "a", "pos": "A"}, 5]], r"X\[0\]\[1\] must be a str or a dict"),
    ],
)
def test_input_validation(est, X, msg):
    with pytest.raises(ValueError, match=msg):
        clone(est).fit_transform(X)


def test_attribute_errors():
    with pytest.raises(ValueError, match=r"X\[0\]\[0\] is a str token.*'pos'"):
        NGramWindow(attribute="pos").transform([["a"]])
    with pytest.raises(ValueError, match=r"X\[0\]\[1\] has no attribute 'pos'"):
        NGramWindow(attribute="pos").transform([[{"pos": "NN"}, {"word": "b"}]])
    with pytest.raises(ValueError, match="is None"):
        WordShape().transform([[{"word": None}]])
    # non-string attribute values are converted with str
    assert NGramWindow(attribute="n", offsets=(0,)).transform([[{"n": 3}]]) == [[{"n@0=3": 1.0}]]


def test_unicode_tokens():
    X = [["Ärztin", "東京", "naïve", "😀"]]
    out = NGramWindow(offsets=(0,), lowercase=True).transform(X)[0]
    assert [list(d)[0] for d in out] == ["word@0=ärztin", "word@0=東京", "word@0=naïve", "word@0=😀"]
    assert WordShape().transform(X)[0][3] == {"ccpg=😀": 1.0}
    assert BagOfConcepts(window=0).transform(X)[0][0] == {"stem=ärztin": 1.0}


# ----------------------------------------------------------------------------- pipeline with FactorialCRF


def _synthetic_task(n=16, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        length = rng.randint(4, 9)
        seq, labels = [], []
        for t in range(length):
            if t == 0 or rng.rand() < 0.25:
                w, lab = rng.choice(["History", "Findings"]), "B"
            else:
                w, lab = rng.choice(["fever", "pain", "noted", "the"]), "I"
            seq.append({"word": str(w), "pos": "NNP" if lab == "B" else "NN"})
            labels.append((lab, "S" if t < length // 2 else "T"))
        X.append(seq)
        y.append(labels)
    return X, y


@short_fit
def test_pipeline_gridsearch_with_factorial_crf():
    from skfcrf import FactorialCRF

    if not hasattr(FactorialCRF, "fit"):
        pytest.skip("FactorialCRF.fit is not implemented yet")
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    X, y = _synthetic_task()
    union = SequenceFeatureUnion([
        ("ngram", NGramWindow(offsets=(-1, 0, 1))),
        ("pos", NGramWindow(attribute="pos", offsets=(0,))),
        ("bag", BagOfConcepts(window=2)),
        ("rel", RelativePosition(n_bins=2)),
        ("shape", WordShape(mode="repg")),
    ])
    pipe = Pipeline([("feat", union), ("crf", FactorialCRF(max_iter=50))])
    search = GridSearchCV(pipe, param_grid={"crf__sigma": [1.0, 10.0], "crf__min_instance_freq": [1, 2]},
                          n_jobs=2, cv=2)
    search.fit(X, y)
    assert set(search.best_params_) == {"crf__sigma", "crf__min_instance_freq"}
    pred = search.predict(X)
    assert len(pred) == len(X) and all(len(p) == len(s) for p, s in zip(pred, X))
    assert 0.0 <= search.score(X, y) <= 1.0


# ------------------------------------------------------------------ union == prefixed merge


@SETTINGS
@given(X=corpora, w1=st.sampled_from([1.0, 0.5, 2.0]), w2=st.sampled_from([1.0, 3.0]))
def test_union_equals_prefixed_weighted_merge(X, w1, w2):
    members = [("a", NGramWindow(offsets=(-1, 0), ngram_range=(1, 2))), ("b", BagOfConcepts(window=2)),
               ("c", WordShape(mode="repg")), ("d", RelativePosition(n_bins=(2, 3)))]
    weights = {"a": w1, "b": w2}
    out = SequenceFeatureUnion(members, transformer_weights=weights).fit_transform(X)
    expected = [[{} for _ in seq] for seq in X]
    for name, est in members:
        for seq_e, seq_o in zip(expected, clone(est).transform(X)):
            for d_e, d_o in zip(seq_e, seq_o):
                d_e.update({f"{name}__{k}": v * weights.get(name, 1.0) for k, v in d_o.items()})
    assert len(out) == len(expected)
    for a, b in zip(out, expected):
        assert_obs_equal(a, b)



# ----------------------------------------------------------------------------- fittedness


def _every_transformer():
    """One instance of every transformer class of skfcrf.transformers, and the unions."""
    import inspect

    import skfcrf.transformers as module
    from skfcrf.transformers import Lexicon, make_dictation_features

    out = []
    for name in module.__all__:
        cls = getattr(module, name)
        if not inspect.isclass(cls) or cls in (module.SequenceTransformerMixin, SequenceFeatureUnion):
            continue
        out.append(cls(entries={"fever": "symptom"}) if cls is Lexicon else cls())
    out.append(make_sequence_union(NGramWindow(), WordShape()))
    out.append(make_dictation_features())
    return out


@pytest.mark.parametrize("est", _every_transformer(), ids=_ids)
def test_check_is_fitted_follows_fit(est):
    """scikit-learn's check_is_fitted fails before fit and passes after it, for every
    transformer and for a pipeline of them (a fitted union once failed it, and with it
    ``pipeline[:-1].transform``)."""
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import check_is_fitted

    X = [["The", "patient", "has", "fever", "."], ["Pain"]]
    e = clone(est)
    with pytest.raises(NotFittedError):
        check_is_fitted(e)
    check_is_fitted(e.fit(X))
    pipe = Pipeline([("features", clone(est))])
    with pytest.raises(NotFittedError):
        pipe.transform(X)
    assert pipe.fit(X).transform(X) == e.transform(X)
    check_is_fitted(pipe)


def test_fitted_pipeline_slice_transforms():
    """The README's ``model[:-1].transform(X)`` on a fitted feature union + CRF pipeline."""
    from sklearn.pipeline import Pipeline

    from skfcrf import FactorialCRF

    X = [["the", "patient", "is", "well"], ["no", "fever"]] * 3
    y = [np.array([["A"], ["B"], ["B"], ["B"]], dtype=object), np.array([["A"], ["B"]], dtype=object)] * 3
    model = Pipeline([("features", make_sequence_union(NGramWindow(), RelativePosition(n_bins=2))),
                      ("crf", FactorialCRF(random_state=0))]).fit(X, y)
    decoded = model[-1].decode(model[:-1].transform(X))
    assert [list(d.labels[:, 0]) for d in decoded] == [list(s[:, 0]) for s in y]
