"""One request at a time (issue 77): one sequence per call gives what the batch gives.

The one-sequence path reads dicts straight into the kernels' arrays, decides the
differenced observation columns from the stored entries, reuses what it derived
from the fitted model (inference method, forbidden tables, structure objects,
the weights' finiteness) and runs on one thread; none of it may change a result
or an error.
"""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

from skfcrf import FactorialCRF, crfsuite
from skfcrf._kernels._dicts import read_crfsuite_sequence
from skfcrf.crfsuite import _sequences
from skfcrf.model._observation_rows import ObservationRows

from _helpers import short_fit, synthetic

pytestmark = short_fit


def _with_numbers(X):
    """``X`` with a few numeric and zero-valued observations (the zeros are dropped)."""
    return [[{**tok, "len": float(len(seq)), "zero": 0.0, "pos": t} for t, tok in enumerate(seq)]
            for seq in X]


MODELS = {
    "one chain": dict(n_chains=1, params=dict(inference="auto")),
    "joint states": dict(n_chains=2, params=dict(inference="joint")),
    "trp": dict(n_chains=2, params=dict(inference="trp", objective="pseudolikelihood")),
    "exact product": dict(n_chains=3, params=dict(inference="exact", coupling="all")),
    "untied transitions": dict(n_chains=2, params=dict(transition_features="supported")),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    spec = MODELS[request.param]
    X, y = synthetic(n_seq=30, n_chains=spec["n_chains"], seed=3, noise=0.1)
    X = _with_numbers(X)
    if spec["n_chains"] == 1:
        y = [np.asarray(seq, dtype=object).reshape(len(seq), -1)[:, 0] for seq in y]
    crf = FactorialCRF(max_iter=15, random_state=1, **spec["params"]).fit(X, y)
    return crf, X


def _same_decoding(one, other, exact_bits):
    for a, b in zip(one.ranked, other.ranked, strict=True):
        np.testing.assert_array_equal(a.labels, b.labels)
        assert (a.status, a.n_iter) == (b.status, b.n_iter)
        if exact_bits:
            np.testing.assert_array_equal(a.log_prob, b.log_prob)
        else:
            np.testing.assert_allclose(a.log_prob, b.log_prob, rtol=1e-12, atol=1e-12)


def test_one_sequence_equals_the_batch(fitted):
    """Per sequence, one call gives what a batch gives it: to the bit over one chain
    and the product space; over joint label states the kernels' sums may round
    differently in a batch; TRP's trees are seeded by the position in the batch, so
    a sequence is compared with the batch it comes first in."""
    crf, X = fitted
    X = X + [[]]       # an empty sequence too
    exact_bits = crf.inference in ("auto", "exact") and crf.n_chains_ == 1 or crf.inference == "exact"
    seeded = crf._decoding_method().name == "trp"
    batch = (crf.predict(X), crf.decode(X, n_best=2), crf.predict_marginals(X, return_status=True))
    for s, x in enumerate(X):
        if seeded:
            rotated = X[s:] + X[:s]
            labels, decoded, (marginals, status) = (
                crf.predict(rotated)[0], crf.decode(rotated, n_best=2)[0],
                [m[0] for m in crf.predict_marginals(rotated, return_status=True)])
        else:
            labels, decoded, marginals, status = (batch[0][s], batch[1][s], batch[2][0][s],
                                                  batch[2][1][s])
        np.testing.assert_array_equal(crf.predict([x])[0], labels)
        _same_decoding(crf.decode([x], n_best=2)[0], decoded, exact_bits)
        chains, one_status = crf.predict_marginals([x], return_status=True)
        assert one_status == [status]
        for got, want in zip(chains[0], marginals, strict=True):
            if exact_bits:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_one_sequence_equals_the_matrix_path(fitted):
    """The potentials of the arrays read at once equal those of the sparse matrix path."""
    crf, X = fitted
    layout = crf.layout_
    for x in X[:10]:
        indptr, indices, data, seq_ptr = crf.encoder_.transform_arrays([x])
        Xm, ptr = crf.encoder_.transform([x])
        np.testing.assert_array_equal(seq_ptr, ptr)
        a = layout.potentials(crf.coef_, layout.observation_rows_of(indptr, indices, data, seq_ptr))
        b = layout.potentials(crf.coef_, layout.observation_rows(Xm, ptr))
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_differencing_choice_is_the_matrix_paths():
    rng = np.random.default_rng(0)
    for trial in range(300):
        lengths = rng.integers(0, 7, size=rng.integers(1, 4))
        n = int(lengths.sum())
        seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        F, width = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        dense = rng.choice([0.0, 0.0, 1.0, 2.0], size=(n, F))
        if trial % 3 == 0:
            dense[:, 0] = 1.0                    # a bias-like column: differenced
        X = sp.csr_matrix(dense)
        feat_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 30, size=F))]).astype(np.int64)
        want = ObservationRows(X, seq_ptr, np.diff(feat_ptr), width)
        got = ObservationRows.from_csr(X.indptr, X.indices, X.data, seq_ptr, F, feat_ptr, width)
        np.testing.assert_array_equal(got.differenced, want.differenced)
        for a, b in zip(got.direct, want.direct):
            np.testing.assert_array_equal(a, b)
        assert (got.diff is None) == (want.diff is None)


def test_bad_single_inputs_raise_as_before(fitted):
    crf, X = fitted
    with pytest.raises(ValueError, match="X is empty"):
        crf.predict([])
    with pytest.raises(ValueError, match=r"X\[0\] token 1: expected a dict"):
        crf.predict([[X[0][0], "w=1"]])
    with pytest.raises(ValueError, match=r"X\[0\] token 0: observation values must be numbers"):
        crf.predict([[{"len": "three"}]])
    with pytest.raises(ValueError, match=r"X\[0\] token 1: observation values must be finite"):
        crf.predict([[{"len": 1.0}, {"len": np.inf}]])
    with pytest.raises(ValueError, match="X must be a list of sequences"):
        crf.predict("w=1")
    with pytest.raises(ValueError, match="every sequence must have the same form"):
        crf.decode([{"w=1": 1.0}])
    with pytest.raises(ValueError, match="fixed has 2 entries"):
        crf.predict_marginals([X[0]], fixed=[None, None])


def test_non_finite_weights_raise_at_every_call(fitted):
    crf, X = copy.deepcopy(fitted)
    crf.predict([X[0]])                             # the weights were checked: reused
    for where in (crf.layout_.bias_unary, slice(0, crf.layout_.n_table)):
        crf.coef_ = crf.coef_.copy()
        crf.predict([X[0]])
        saved = crf.coef_[where].copy()
        crf.coef_[where] = np.nan                   # made non-finite in place afterwards
        for call in (crf.predict, crf.predict_marginals, crf.decode):
            with pytest.raises(ValueError, match="not all finite"):
                call([X[0]])
        crf.coef_[where] = saved
    crf.coef_ = np.full_like(crf.coef_, np.inf)
    with pytest.raises(ValueError, match="not all finite"):
        crf.predict([X[0]])


# ---------------------------------------------------------------------- the drop-in
@pytest.fixture(scope="module")
def dropin():
    X, y = synthetic(n_seq=30, n_chains=1, seed=4, noise=0.1)
    X = [[{"w": next(iter(tok))[2:], "odd": "odd=1" in tok, "t": t, "x": 0.5, "no": False}
          for t, tok in enumerate(seq)] for seq in X]
    y = [[str(lab[0]) for lab in seq] for seq in y]
    return crfsuite.CRF(max_iterations=20).fit(X, y), X


def test_dropin_single_equals_batch(dropin):
    crf, X = dropin
    X = X + [[]]
    labels = crf.predict(X)
    marginals = crf.predict_marginals(X)
    via_dicts = crf.crf_.predict(_sequences(X))      # the general reading
    for s, x in enumerate(X):
        assert crf.predict_single(x) == labels[s] == via_dicts[s].tolist()
        assert crf.predict_marginals_single(x) == marginals[s]


def test_dropin_odd_tokens_read_as_before(dropin):
    """Tokens outside the fast reader (nested values, bytes, a name twice, numpy
    numbers, lists of names) read as the general path reads them."""
    crf, X = dropin
    w = X[0][0]["w"]
    odd = [[{"w": [w, w]}, {"w": {"": w}}, {"w": w.encode(), "x": np.float64(2.0)},
            ["odd", "w:" + w], {"w:" + w: 1.0, "w": w}, {"x": 10 ** 20}]]
    assert crf.predict(odd)[0] == crf.crf_.predict(_sequences(odd))[0].tolist()


def test_dropin_reader_agrees_with_the_dict_reading(dropin):
    crf, X = dropin
    encoder = crf.crf_.encoder_
    rng = np.random.default_rng(1)
    names = list(encoder.vocabulary)[:20] + ["unknown"]
    for _ in range(200):
        tokens = []
        for _ in range(int(rng.integers(0, 4))):
            tok = {}
            for _ in range(int(rng.integers(0, 5))):
                name = str(rng.choice(names))
                key, _, value = name.partition(":")
                kind = rng.integers(0, 4)
                tok[key if kind else name] = (value if (kind == 0 and value) else
                                              [1.0, 0.0, True, False, 3][int(rng.integers(0, 5))])
            tokens.append(tok)
        part = read_crfsuite_sequence(tokens, encoder.vocabulary)
        want = encoder.transform_arrays(_sequences([tokens]))
        if part is None:
            continue
        got = encoder.arrays_of([tokens], [part])
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_dropin_bad_single_inputs_raise_as_before(dropin):
    crf, X = dropin
    with pytest.raises(ValueError, match="a sequence must be a list of tokens"):
        crf.predict_single("abc")
    with pytest.raises(ValueError, match="each token must be a dict of attributes"):
        crf.predict_single([3])
    with pytest.raises(ValueError, match="attribute names must be str"):
        crf.predict_single([{1: "a"}])
    with pytest.raises(ValueError, match="values must be str, bool, numbers"):
        crf.predict_single([{"w": None}])
    with pytest.raises(ValueError, match="observation values must be finite"):
        crf.predict_single([{"x": np.nan}])
    with pytest.raises(ValueError, match="X must be a list of sequences"):
        crf.predict(None)
