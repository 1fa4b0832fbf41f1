"""Public API fuzzing (issue 19, item 7).

Hypothesis drives ``FactorialCRF.fit/predict/decode/score/predict_marginals`` and
the transformers with random inputs, valid and invalid: a valid data set of a few
short sequences, then a few mutations (a token, sequence, label or container
replaced by an odd value: nested containers, numpy scalars, generators, tuples,
empty sequences, unicode and mixed-type labels, dicts with non-str keys, NaN).
Every call must either return a result of the documented shape or raise
``ValueError``/``TypeError`` with a message -- never another exception, never a
hang (each example is bounded by an alarm) -- and must not change its inputs.

CI runs a fixed (derandomized) set of examples; ``SKFCRF_FUZZ_EXAMPLES=2000``
runs that many fresh random examples per test instead, to search further.
"""
import copy
import math
import os
import re
import signal
from contextlib import contextmanager

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from skfcrf import FactorialCRF
from skfcrf.transformers import (
    Affixes,
    BagOfConcepts,
    Casing,
    Lexicon,
    NGramWindow,
    RelativePosition,
    SequenceFeatureUnion,
    WordShape,
    make_sequence_union,
)

_EXPLORE = os.environ.get("SKFCRF_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(_EXPLORE or 250), deadline=None, derandomize=not _EXPLORE,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SECONDS_PER_EXAMPLE = 20
#: Python's own messages leaking out of the validation: they name no argument and
#: tell the user nothing about what to change.
INTERNAL_MESSAGE = re.compile(
    r"object is not iterable|unhashable type|cannot reshape|has no len|not supported "
    r"between instances|object is not subscriptable|truth value of an array|could not "
    r"convert|invalid literal|object has no attribute|index \d+ is out of bounds|"
    r"list index out of range|unexpected keyword|positional argument")

# --------------------------------------------------------------------------- checking


@contextmanager
def no_hang(seconds=SECONDS_PER_EXAMPLE):
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``."""
    def alarm(signum, frame):
        raise AssertionError(f"call did not return within {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def same(a, b):
    """Deep equality that treats NaN as equal to NaN and compares arrays by value."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, np.ndarray):
        return (a.shape == b.shape and a.dtype == b.dtype
                and all(same(u, v) for u, v in zip(a.ravel().tolist(), b.ravel().tolist())))
    if sp.issparse(a):
        return a.shape == b.shape and same(a.toarray(), b.toarray())
    if isinstance(a, np.generic):
        return same(a.item(), b.item())
    if isinstance(a, dict):
        return (list(a) == list(b)) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(u, v) for u, v in zip(a, b))
    if isinstance(a, (set, frozenset)):
        return a == b
    return a == b


def call(fn, *args, allowed=()):
    """``(True, result)``, or ``(False, None)`` after a ValueError/TypeError with a message.

    ``allowed``: further exception types accepted (with a message).  Any other
    exception propagates and fails the test; so does a mutated argument.
    """
    before = [copy.deepcopy(a) for a in args]
    try:
        with no_hang():
            result = fn(*args)
    except (ValueError, TypeError, *allowed) as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        assert not INTERNAL_MESSAGE.search(str(exc)), f"unclear message: {exc!r}"
        event(f"refused: {str(exc)[:60]}")
        ok, result = False, None
    else:
        ok = True
    for a, b in zip(args, before):
        assert same(a, b), "an input was mutated"
    return ok, result


# --------------------------------------------------------------------------- strategies

ODD_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3), st.binary(max_size=2),
    st.sampled_from([np.float32(1.5), np.int64(2), np.bool_(True), np.str_("é"), np.nan,
                     np.float64("inf"), 1e300, -0.0, 1j]),
)
LABELS = st.one_of(
    st.sampled_from(["A", "B", "é", "日本", "B-NP", ""]),
    st.integers(0, 2), st.sampled_from([np.int64(1), np.str_("A"), 1.5, True]),
)
NAMES = st.sampled_from(["w=a", "w=b", "w=é", "日", "x"])
VALUES = st.one_of(st.just(1.0), st.floats(-2, 2), st.sampled_from([np.float32(0.5), 2, True]))


def as_object_array(xs):
    arr = np.empty(len(xs), dtype=object)
    arr[:] = xs
    return arr


def as_nested_generators(xs):
    return ((x for x in seq) if isinstance(seq, (list, tuple)) else seq for seq in xs)


#: How the outer container is passed: list, tuple, generator, object array, or a
#: generator of generators (applied at call time, so the drawn data stay comparable).
CONTAINERS = st.sampled_from([list, tuple, lambda xs: (x for x in xs), as_object_array,
                              as_nested_generators, list, list])


@st.composite
def crf_data(draw):
    """A valid ``(X, y)`` of a few short sequences, then up to three mutations."""
    n_chains = draw(st.integers(1, 2))
    flat = n_chains == 1 and draw(st.booleans())
    labels = draw(st.lists(LABELS, min_size=1, max_size=3, unique_by=lambda v: (type(v), v)))
    n_seq = draw(st.integers(1, 3))
    X, y = [], []
    for _ in range(n_seq):
        T = draw(st.integers(1, 4))
        use_names = draw(st.booleans())
        seq_x, seq_y = [], []
        for _ in range(T):
            names = draw(st.lists(NAMES, min_size=0, max_size=3, unique=True))
            seq_x.append(list(names) if use_names else {n: draw(VALUES) for n in names})
            lab = tuple(draw(st.sampled_from(labels)) for _ in range(n_chains))
            seq_y.append(lab[0] if flat else lab)
        X.append(seq_x)
        y.append(seq_y)
    for _ in range(draw(st.integers(0, 3))):
        mutate(draw, X, y)
    wrap_x = draw(CONTAINERS)
    wrap_y = draw(CONTAINERS)
    if draw(st.integers(0, 9)) == 0:  # X or y as a whole replaced by an odd value
        odd = draw(st.one_of(ODD_SCALARS, st.just({"w=a": 1.0}), st.just(np.ones((2, 2)))))
        if draw(st.booleans()):
            X, wrap_x = odd, lambda v: v
        else:
            y, wrap_y = odd, lambda v: v
    return X, y, wrap_x, wrap_y


def put(seq, t, value):
    """``seq`` with item ``t`` replaced, of the same container type (list or tuple)."""
    out = list(seq)
    out[t] = value
    return type(seq)(out) if isinstance(seq, tuple) else out


def size(seq):
    """Number of tokens of a sequence of any form (0 for a scalar)."""
    if hasattr(seq, "shape") and len(seq.shape):
        return seq.shape[0]
    return len(seq) if isinstance(seq, (list, tuple, str, bytes, dict)) else 0


def mutate(draw, X, y):
    """Replace one part of the data set by an odd value (in place; the data are fresh)."""
    kind = draw(st.sampled_from([
        "token", "token_key", "token_value", "sequence", "label", "label_seq", "drop_seq",
        "empty_seq", "matrix", "tuple_seq", "nested_token", "extra_label", "array_token",
        "numpy_labels"]))
    s = draw(st.integers(0, len(X) - 1))
    editable = isinstance(X[s], (list, tuple)) and len(X[s]) > 0
    t = draw(st.integers(0, max(size(X[s]) - 1, 0)))
    if kind == "token" and editable:
        X[s] = put(X[s], t, draw(st.one_of(ODD_SCALARS, st.lists(ODD_SCALARS, max_size=2))))
    elif kind == "token_key" and editable:
        X[s] = put(X[s], t, {draw(st.one_of(st.integers(), st.none(),
                                            st.tuples(st.text(max_size=2)),
                                            st.just(np.str_("np")), st.just(b"by"))): 1.0})
    elif kind == "token_value" and editable:
        X[s] = put(X[s], t, {"w=a": draw(ODD_SCALARS)})
    elif kind == "nested_token" and editable:
        X[s] = put(X[s], t, [["w=a", ["w=b"]]])
    elif kind == "sequence":
        X[s] = draw(ODD_SCALARS)
    elif kind == "matrix":
        n = size(y[s])
        X[s] = draw(st.sampled_from([
            np.ones((n, 2)), sp.csr_matrix(np.ones((n, 3))), np.array([[np.nan, 1.0]] * n),
            np.ones((n, 2, 1)), np.array(["a"] * n)]))
    elif kind == "tuple_seq":
        X[s] = tuple(X[s]) if isinstance(X[s], list) else X[s]
        y[s] = tuple(y[s]) if isinstance(y[s], list) else y[s]
    elif kind == "label" and isinstance(y[s], (list, tuple)) and len(y[s]):
        lab = draw(st.one_of(ODD_SCALARS, LABELS, st.tuples(LABELS, LABELS),
                             st.just([["A"]]), st.just(frozenset("A"))))
        y[s] = put(y[s], draw(st.integers(0, len(y[s]) - 1)), lab)
    elif kind == "label_seq":
        n = size(X[s])
        y[s] = draw(st.one_of(ODD_SCALARS, st.just(np.array(["A"] * n)),
                              st.just(np.array([["A", "B"]] * n)), st.just(np.ones((n, 1, 1)))))
    elif kind == "array_token" and editable:
        X[s] = put(X[s], t, draw(st.sampled_from([
            np.array(["w=a", "w=b"]), np.array([1.0, 2.0]), {"w=a": np.array([1.0])},
            {"w=a": np.float64(np.nan)}, {"w=a": np.int8(3)}, {"w=a": "nan"}, {"w=a": None},
            {np.str_("w=a"): np.float32(1.0)}, {"w=a": 1, 2: 1}, frozenset({"w=a"})])))
    elif kind == "numpy_labels":
        n = size(X[s])
        y[s] = draw(st.sampled_from([
            np.array(["A"] * n), np.array([["A", "é"]] * n), np.array([[1, 2]] * n),
            np.empty((n, 0)), np.array([np.nan] * n), np.array([b"A"] * n),
            np.array([["A", 1]] * n, dtype=object), [np.int64(1)] * n, [np.str_("A")] * n]))
    elif kind == "drop_seq" and len(X) > 1:
        del X[s]
    elif kind == "empty_seq":
        X[s], y[s] = [], []
    elif kind == "extra_label":
        if isinstance(y[s], (list, tuple)):
            y[s] = list(y[s]) + [y[s][0] if len(y[s]) else "A"]


PARAMS = st.fixed_dictionaries({}, optional={
    "objective": st.sampled_from(["chainwise", "pseudolikelihood", "likelihood", "nope"]),
    "inference": st.sampled_from(["auto", "trp", "exact", "joint"]),
    "sigma": st.sampled_from([1.0, np.float32(2.0), 0.0, -1.0, np.inf, np.nan, "1"]),
    "min_instance_freq": st.sampled_from([1, 2, 0.5, np.int64(1), 0, 1.5]),
    "unary_features": st.sampled_from(["supported", "all", "default"]),
    "forbidden_transitions": st.sampled_from([None, [("A", "B")], {0: [("A", "A")]},
                                              [("Z", "Z")], [[("A", "B")], 1]]),
    "coupling": st.sampled_from(["adjacent", "none", [(0, 1)], [(0, 0)], [(5, 7)],
                                 [(np.int64(0), np.int64(1))], [("0", "1")], [[0, 1, 2]]]),
    "forbidden_couplings": st.sampled_from([None, {(0, 1): [("A", "A")]}, {(1, 0): []},
                                            {"01": [("A", "B")]}, {(0, 1): "AB"},
                                            {(0, 1): [(1, "A")]}, {(0, 5): []}]),
    "n_jobs": st.sampled_from([None, 1, 2, -1, np.int64(1), 0]),
    "random_state": st.sampled_from([None, 0, np.random.RandomState(0), np.int64(3), -1]),
    "max_memory": st.sampled_from([None, 10 ** 12, 1, np.int64(10 ** 10), 1.5]),
    "early_stopping": st.sampled_from([False, True]),
    "validation_scoring": st.sampled_from([None, "windowdiff", "nope", 3]),
    "solver": st.sampled_from(["lbfgs", "olbfgs"]),
    "warm_start": st.sampled_from([False, True]),
})


# --------------------------------------------------------------------------- estimator


def check_predictions(crf, X):
    """predict/decode/predict_marginals on ``X`` give one entry of the right size per sequence."""
    for name in ("predict", "decode", "predict_marginals"):
        ok, out = call(getattr(crf, name), X)
        if not ok:
            continue
        assert isinstance(out, list) and len(out) == len(X)
        for seq, res in zip(X, out):
            n = size(seq)
            if name == "predict_marginals":
                assert len(res) == crf.n_chains_
                for c, block in enumerate(res):
                    assert block.shape == (n, len(crf.classes_[c]))
                    assert np.all(np.isfinite(block))
            else:
                labels = res.labels if name == "decode" else res
                expected = (n,) if crf._one_chain else (n, crf.n_chains_)
                assert labels.shape == expected


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@FUZZ
@given(data=crf_data(), params=PARAMS)
def test_estimator_fuzz(data, params):
    X, y, wrap_x, wrap_y = data
    crf = FactorialCRF(max_iter=3, finetune_iter=1, bp_max_iter=10, **params)
    # a max_memory below the estimate is refused with the memory guard's MemoryError
    allowed = (MemoryError,) if params.get("max_memory") is not None else ()
    ok, _ = call(lambda a, b: crf.fit(wrap_x(a), wrap_y(b)), X, y, allowed=allowed)
    if not ok:
        assert not hasattr(crf, "coef_")
        return
    event("fit succeeded")
    check_predictions(crf, X)
    ok, acc = call(crf.score, X, y)
    assert not ok or 0.0 <= acc <= 1.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@FUZZ
@given(train=crf_data(), test=crf_data())
def test_fitted_estimator_on_other_inputs(train, test):
    """A model fitted on valid data, then given fuzzed (often incompatible) data."""
    X, y, _, _ = train
    crf = FactorialCRF(max_iter=3, finetune_iter=1)
    if not call(crf.fit, X, y)[0]:
        return
    X2, y2, wrap_x, _ = test
    check_predictions(crf, X2)
    ok, acc = call(lambda a, b: crf.score(wrap_x(a), b), X2, y2)
    assert not ok or 0.0 <= acc <= 1.0


# --------------------------------------------------------------------------- transformers

ATTR_VALUES = st.one_of(
    st.text(max_size=4), ODD_SCALARS, st.lists(st.one_of(st.text(max_size=2), ODD_SCALARS),
                                               max_size=2),
    st.sets(st.text(max_size=2), max_size=2), st.just([["nested"]]))
TOKENS = st.one_of(
    st.sampled_from([{"word": np.str_("np")}, {"word": b"by"}, {"word": 3}, {"word": None},
                     {"word": np.float64("nan")}, {"word": ["a", ["b"]]}, {"word": ()},
                     {"word": np.array(["a"])}, {"word": "a", 1: "x"}, {"pos": "NN"}]),
    st.text(max_size=5), st.sampled_from(["Fever", "37.5", "日本", "", "CT", "é"]),
    st.fixed_dictionaries({"word": st.text(max_size=4)}, optional={"pos": ATTR_VALUES}),
    st.dictionaries(st.one_of(st.sampled_from(["word", "pos"]), st.integers(), st.none()),
                    ATTR_VALUES, max_size=2),
    ODD_SCALARS, st.lists(st.text(max_size=2), max_size=2),
)
SEQUENCES = st.one_of(st.lists(TOKENS, max_size=5), st.lists(TOKENS, max_size=3).map(tuple),
                      ODD_SCALARS, st.just({"word": "a"}), st.just(np.array(["a", "b"])),
                      st.just(np.array([["a"]])), st.just(range(3)))
TRANSFORMERS = st.one_of(
    st.builds(NGramWindow, attribute=st.sampled_from(["word", "pos", "", 3]),
              offsets=st.one_of(st.lists(st.integers(-3, 3), max_size=3), st.just((0, 0)),
                                st.just((np.int64(1),)), st.just(0), st.just("0")),
              ngram_range=st.sampled_from([(1, 1), (1, 2), (2, 1), (0, 1), (1,), "1",
                                           (1, 10 ** 12), (10 ** 12, 10 ** 12)]),
              lowercase=st.sampled_from([True, False, np.bool_(True), 1])),
    st.builds(BagOfConcepts, window=st.sampled_from([0, 2, -1, 1.5, np.int64(3), 10 ** 12]),
              concept_map=st.sampled_from([None, {"fever": "C1"}, {"a": ["C1", "C2"]},
                                           {1: "C"}, {"a": None}, lambda w: ["C"], 7]),
              normalize=st.sampled_from([None, "l1", "l2", "log", "max"])),
    st.builds(RelativePosition, n_bins=st.sampled_from([1, 3, 8, 0, -2, 2.5, np.int64(4),
                                                        [2, 4], (), None])),
    st.builds(WordShape, mode=st.sampled_from(["ccpg", "repg", "x"]),
              offsets=st.sampled_from([None, (0,), (-1, 1), ()])),
    st.builds(Casing, offsets=st.sampled_from([(0,), (-1, 0)])),
    st.builds(Affixes, max_length=st.sampled_from([1, 3, 0, 10 ** 12])),
    st.builds(Lexicon, entries=st.sampled_from([{"fever": "SYM"}, {("chest", "pain"): "SYM"},
                                                {"": "X"}, {"a": ""}, {"a": 3}, [], None,
                                                {3: "X"}, {("a", 3): "X"}, {"a": ["X", 3]},
                                                {"a b": {"X"}}, {("a", ""): "X"}]),
              offsets=st.sampled_from([(0,), (-1, 1), (0, 0)]),
              mark_position=st.sampled_from([False, True, "yes"])),
    st.builds(BagOfConcepts, window=st.just(1),
              concept_map=st.sampled_from([lambda w: None, lambda w: 3, lambda w: [["x"]],
                                           lambda w: {"x"}, lambda w: "", lambda w: [None],
                                           {"a": {"C1", "C2"}}, {"a": [1, 2]}, {"a": ("",)}])),
    st.builds(RelativePosition, n_bins=st.sampled_from([[2, 2], [1, -1], [np.int64(2)],
                                                        [True], "8", 2 ** 70, [3, 2 ** 70]])),
)


def check_transform_output(out, X):
    assert isinstance(out, list) and len(out) == len(X)
    for seq, rows in zip(X, out):
        assert isinstance(rows, list) and len(rows) == len(seq)
        for row in rows:
            assert isinstance(row, dict)
            assert all(isinstance(k, str) and isinstance(v, float) and math.isfinite(v)
                       for k, v in row.items())


@FUZZ
@given(transformer=TRANSFORMERS, X=st.lists(SEQUENCES, max_size=3),
       wrap=CONTAINERS, union=st.booleans())
def test_transformer_fuzz(transformer, X, wrap, union):
    if union:
        transformer = make_sequence_union(transformer, RelativePosition(n_bins=2))
    for method in (transformer.fit_transform, transformer.transform):
        ok, out = call(lambda a, method=method: method(wrap(a)), X)
        if ok:
            check_transform_output(out, X)
    if call(lambda a: transformer.fit(wrap(a)), X)[0]:
        names = transformer.get_feature_names_out()
        assert all(isinstance(n, str) for n in names)


@FUZZ
@given(transformer_list=st.lists(st.tuples(
    st.sampled_from(["a", "b", "", "x__y", "transformer_list", 3]),
    st.sampled_from([NGramWindow(), RelativePosition(n_bins=2), "drop", "passthrough", None, 5])),
    max_size=3),
    weights=st.sampled_from([None, {"a": 2.0}, {"a": np.nan}, {"zz": 1.0}, {"a": "1"}, [1.0]]),
    X=st.lists(SEQUENCES, max_size=2))
def test_feature_union_fuzz(transformer_list, weights, X):
    union = SequenceFeatureUnion(transformer_list, transformer_weights=weights)
    ok, out = call(union.fit_transform, X)
    if ok:
        check_transform_output(out, X)


# --------------------------------------------------------------------------- found by fuzzing
# Each failure the fuzzing found, kept as a plain test (numbered as in the note).

def fitted(**params):
    return FactorialCRF(max_iter=3, finetune_iter=0, **params).fit(
        [[{"w=a": 1.0}, {"w=b": 1.0}]] * 2, [["A", "B"]] * 2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("X, y, message", [
    # 1. a label sequence that is not iterable
    ([[{"w=a": 1.0}]], [None], r"y\[0\] must be a sequence of labels"),
    # 2. a nested list of observation names
    ([[["w=a", ["w=b"]]]], [["A"]], r"X\[0\] token 0: observation names must be strings"),
    # 7. an array (or numeric string, complex) as observation value
    ([[{"w=a": np.array([1.0])}]], [["A"]], "observation values must be numbers"),
    ([[{"w=a": "1"}, {"w=b": 1.0}]], [["A", "B"]], "observation values must be numbers"),
    ([[{"w=a": 1j}]], [["A"]], "observation values must be numbers"),
    ([[{"w=a": 2 ** 2000}]], [["A"]], "at most 1e\\+100 in magnitude"),
])
def test_found_invalid_training_inputs_give_clear_messages(X, y, message):
    with pytest.raises(ValueError, match=message):
        FactorialCRF(max_iter=3).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_found_forbidden_label_of_another_type_is_named():  # 3.
    with pytest.raises(ValueError, match="label 'A' is not a label of chain 0"):
        FactorialCRF(max_iter=3, forbidden_transitions=[("A", "B")]).fit(
            [[{"w=a": 1.0}, {}]], [[0, 1]])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_found_score_with_an_empty_sequence():  # 4.
    crf = fitted()
    assert crf.score([[{"w=a": 1.0}, {"w=b": 1.0}], []], [["A", "B"], []]) == 1.0


def test_found_huge_n_bins_and_ngram_range_do_not_hang():  # 5.
    with no_hang(5), pytest.raises(ValueError, match="n_bins must be <= 10000"):
        RelativePosition(n_bins=2 ** 70).transform([["a"]])
    with no_hang(5):
        out = NGramWindow(offsets=(0, 1), ngram_range=(1, 10 ** 12)).transform([["a", "b"]])
    assert out == NGramWindow(offsets=(0, 1), ngram_range=(1, 2)).transform([["a", "b"]])


def test_found_early_stopping_when_the_solver_stops_at_once():  # 6.
    crf = FactorialCRF(early_stopping=True, max_iter=3).fit([[{}], [{}]], [["A"], ["A"]])
    assert crf.coef_ is not None and crf.predict([[{}]])[0].tolist() == ["A"]


@pytest.mark.parametrize("X, y, error", [
    ([[{}], [{}], [None, {}]], [["A"], ["A"], ["A", "A"]], r"X\[2\] token 0"),
    ([[{}]] * 3, None, "y is required"),
    (5, [["A"]], "X must be a list of sequences"),
])
def test_found_early_stopping_validates_before_training(X, y, error):  # 8.
    crf = FactorialCRF(early_stopping=True, max_iter=3)
    with pytest.raises(ValueError, match=error):
        crf.fit(X, y)
    assert not hasattr(crf, "coef_")
