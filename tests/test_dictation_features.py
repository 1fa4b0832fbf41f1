"""make_dictation_features: the standard dictation union as one public factory."""
import pytest

from skfcrf.datasets import make_dictations
from skfcrf.transformers import (
    BagOfConcepts,
    NGramWindow,
    RelativePosition,
    WordShape,
    make_dictation_features,
    make_sequence_union,
)


def test_defaults_are_the_demo_union_with_its_members_renamed():
    X, _ = make_dictations(n_reports=4, style="rcg", random_state=0)
    old = make_sequence_union(NGramWindow(lowercase=True), BagOfConcepts(window=10),
                              RelativePosition(n_bins=8)).fit_transform(X)
    new = make_dictation_features().fit_transform(X)
    rename = {"ngramwindow": "ngram_word", "bagofconcepts": "concepts",
              "relativeposition": "position"}
    for seq_old, seq_new in zip(old, new, strict=True):
        for tok_old, tok_new in zip(seq_old, seq_new, strict=True):
            renamed = {rename[k.split("__", 1)[0]] + "__" + k.split("__", 1)[1]: v
                       for k, v in tok_old.items()}
            assert list(renamed.items()) == list(tok_new.items())


def test_kinds_and_attributes_choose_the_members():
    union = make_dictation_features(["tok", "pos"], ["shape", "ngram", "concepts"],
                                    lowercase=False, ngram_window=1, concept_window=3)
    names = [name for name, _ in union.transformer_list]
    assert names == ["shape", "ngram_tok", "ngram_pos", "concepts"]
    members = dict(union.transformer_list)
    assert isinstance(members["shape"], WordShape) and members["shape"].attribute == "tok"
    assert members["ngram_pos"].offsets == (-1, 0, 1) and members["ngram_pos"].lowercase is False
    assert members["concepts"].window == 3 and members["concepts"].attribute == "tok"


def test_affix_casing_and_lexicon_kinds():
    union = make_dictation_features(["tok"], ["affix", "casing", "lexicon"], affix_length=2,
                                    lexicon={"blood pressure": ["VITAL"]})
    members = dict(union.transformer_list)
    assert members["affix"].max_length == 2 and members["affix"].attribute == "tok"
    assert members["casing"].attribute == members["lexicon"].attribute == "tok"
    out = union.fit_transform([[{"tok": "Blood"}, {"tok": "pressure"}]])[0]
    assert out[0]["lexicon__lex@0=VITAL"] == 1.0 and "affix__tok.suffix2@0=od" in out[0]


@pytest.mark.parametrize("attributes, kinds, fragment", [
    (["word"], ["ngram", "pitch"], "unknown feature kind 'pitch'"),
    ([], ["ngram"], "at least one token attribute"),
    (["word"], ["lexicon"], "needs lexicon="),
])
def test_bad_arguments(attributes, kinds, fragment):
    with pytest.raises(ValueError, match=fragment):
        make_dictation_features(attributes, kinds)
