"""Feature-table products with differenced (slowly varying) observation columns."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import skfcrf.model._observation_rows as rows_module
from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.model._observation_rows import ObservationRows, token_differences

from _helpers import check_gradient, short_fit


def window_counts(lengths, n_concepts, window, seed):
    """Stacked sparse bag-of-concepts counts (+-window) plus one token-identity column block."""
    rng = np.random.default_rng(seed)
    rows = []
    for T in lengths:
        concept = rng.integers(-1, n_concepts, size=T)    # -1: token without a concept
        ident = rng.integers(0, 5, size=T)
        M = np.zeros((T, n_concepts + 5))
        for t in range(T):
            for j in range(max(0, t - window), min(T, t + window + 1)):
                if concept[j] >= 0:
                    M[t, concept[j]] += 1.0
            M[t, n_concepts + ident[t]] = 1.0
        rows.append(M)
    X = sp.csr_matrix(np.vstack(rows)) if rows else sp.csr_matrix((0, n_concepts + 5))
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return X, seq_ptr


def random_table(n_feat, width, rng):
    """A random feature table: observation f owns a random subset of score columns."""
    cols = [np.sort(rng.choice(width, size=rng.integers(0, width + 1), replace=False))
            for _ in range(n_feat)]
    feat_ptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])]).astype(np.int64)
    ent_col = np.concatenate(cols).astype(np.int32) if cols else np.zeros(0, np.int32)
    return feat_ptr, ent_col


def dense_weights(feat_ptr, ent_col, theta, width):
    W = np.zeros((len(feat_ptr) - 1, width))
    for f in range(len(feat_ptr) - 1):
        for p in range(feat_ptr[f], feat_ptr[f + 1]):
            W[f, ent_col[p]] += theta[p]
    return W


def test_token_differences_reconstruct_rows():
    X, seq_ptr = window_counts([4, 1, 0, 7], n_concepts=3, window=2, seed=0)
    D = token_differences(X, seq_ptr).toarray()
    for s in range(len(seq_ptr) - 1):
        a, b = seq_ptr[s], seq_ptr[s + 1]
        np.testing.assert_array_equal(np.cumsum(D[a:b], axis=0), X[a:b].toarray())


def test_slowly_varying_columns_are_differenced_and_others_not():
    X, seq_ptr = window_counts([30, 25, 40], n_concepts=4, window=5, seed=1)
    counts = np.full(X.shape[1], 20)
    obs = ObservationRows(X, seq_ptr, counts, width=20)
    assert obs.has_differences
    assert obs.differenced[:4].all()             # window counts change rarely
    assert not obs.differenced[4:].any()         # token identities change every token
    # when the extra passes over the scores cost more than they save: direct only
    assert not ObservationRows(X, seq_ptr, np.ones(X.shape[1]), width=20).has_differences


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(0, 12), min_size=1, max_size=5),
       seed=st.integers(0, 2 ** 16), n_threads=st.sampled_from([1, 2]))
def test_products_equal_dense_products(lengths, seed, n_threads):
    rng = np.random.default_rng(seed)
    X, seq_ptr = window_counts(lengths, n_concepts=3, window=3, seed=seed)
    width = 6
    feat_ptr, ent_col = random_table(X.shape[1], width, rng)
    theta = rng.normal(size=feat_ptr[-1])
    # large table counts and a narrow score matrix make differencing pay whenever it can
    for counts in (np.full(X.shape[1], 1000), np.zeros(X.shape[1])):
        obs = ObservationRows(X, seq_ptr, counts, width)
        out = rng.normal(size=(X.shape[0], width))
        products = X @ dense_weights(feat_ptr, ent_col, theta, width)
        expected = out + products
        obs.add_scores(feat_ptr, ent_col, theta, out, n_threads)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        # clear=True writes the products, whatever the array held (NaN here)
        written = np.full_like(out, np.nan)
        obs.add_scores(feat_ptr, ent_col, theta, written, n_threads, clear=True)
        np.testing.assert_allclose(written, products, rtol=1e-12, atol=1e-12)

        dscore = rng.normal(size=(X.shape[0], width))
        dense_grad = X.T @ dscore
        expected = np.array([dense_grad[f, ent_col[p]] for f in range(X.shape[1])
                             for p in range(feat_ptr[f], feat_ptr[f + 1])])
        grad = np.full(feat_ptr[-1], 0.5)
        obs.add_gradient(feat_ptr, ent_col, dscore.copy(), grad, n_threads)
        np.testing.assert_allclose(grad, expected + 0.5, rtol=1e-12, atol=1e-12)

        # a bias per column added in the same pass: the bits of adding it afterwards
        bias = rng.normal(size=width)
        with_bias = np.full_like(out, np.nan)
        obs.add_scores(feat_ptr, ent_col, theta, with_bias, n_threads, clear=True, bias=bias)
        np.testing.assert_array_equal(with_bias, written + bias)
        # the column sums of dscore as given (its suffix sums overwrite it), beside grad
        sums = np.full(width, 0.25)
        again = np.full(feat_ptr[-1], 0.5)
        obs.add_gradient(feat_ptr, ent_col, dscore.copy(), again, n_threads, col_sums=sums)
        np.testing.assert_allclose(sums, dscore.sum(axis=0) + 0.25, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(again, grad)


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(0, 12), min_size=1, max_size=6),
       seed=st.integers(0, 2 ** 16), large=st.booleans())
def test_rows_of_whole_sequences_keep_the_choice_and_give_their_products(lengths, seed,
                                                                          large):
    """``take`` of some sequences: the same differenced columns as the whole batch,
    and the products (scores and gradient) of those sequences' observations."""
    rng = np.random.default_rng(seed)
    X, seq_ptr = window_counts(lengths, n_concepts=3, window=3, seed=seed)
    width = 6
    counts = np.full(X.shape[1], 1000 if large else 0)
    whole = ObservationRows(X, seq_ptr, counts, width)
    picked = rng.permutation(len(lengths))[:int(rng.integers(1, len(lengths) + 1))]
    rows = np.concatenate([np.arange(seq_ptr[s], seq_ptr[s + 1]) for s in picked]
                          ).astype(np.int64)
    sub_ptr = np.concatenate([[0], np.cumsum(np.diff(seq_ptr)[picked])]).astype(np.int64)
    part = whole.take(rows, sub_ptr)
    assert part.shape == (len(rows), X.shape[1])
    np.testing.assert_array_equal(part.differenced, whole.differenced)
    feat_ptr, ent_col = random_table(X.shape[1], width, rng)
    theta = rng.normal(size=feat_ptr[-1])
    out = np.full((len(rows), width), np.nan)
    part.add_scores(feat_ptr, ent_col, theta, out, clear=True)
    np.testing.assert_allclose(out, X[rows] @ dense_weights(feat_ptr, ent_col, theta, width),
                               rtol=1e-12, atol=1e-12)
    dscore = rng.normal(size=(len(rows), width))
    dense_grad = X[rows].T @ dscore
    expected = np.array([dense_grad[f, ent_col[p]] for f in range(X.shape[1])
                         for p in range(feat_ptr[f], feat_ptr[f + 1])])
    grad = np.zeros(feat_ptr[-1])
    part.add_gradient(feat_ptr, ent_col, dscore, grad)
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="seq_ptr ends at"):
        whole.take(rows, np.append(sub_ptr, len(rows) + 1))


def test_bias_and_column_sums_of_the_wrong_length_are_refused():
    X, seq_ptr = window_counts([3, 2], n_concepts=3, window=1, seed=0)
    rng = np.random.default_rng(0)
    feat_ptr, ent_col = random_table(X.shape[1], 4, rng)
    obs = ObservationRows(X, seq_ptr, np.ones(X.shape[1]), 4)
    theta = rng.normal(size=feat_ptr[-1])
    with pytest.raises(ValueError, match="bias must have 4 values"):
        obs.add_scores(feat_ptr, ent_col, theta, np.zeros((5, 4)), bias=np.zeros(3))
    with pytest.raises(ValueError, match="col_sums must have 4 values"):
        obs.add_gradient(feat_ptr, ent_col, np.zeros((5, 4)), np.zeros(feat_ptr[-1]),
                         col_sums=np.zeros(5))


def concept_data(n_seq=12, seed=0):
    """Sequences whose observations include +-3 window concept counts."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        T = int(rng.integers(3, 10))
        toks = rng.integers(0, 4, size=T)
        seq = []
        for t in range(T):
            obs = {f"w={toks[t]}": 1.0}
            for j in range(max(0, t - 3), min(T, t + 4)):
                key = f"boc={toks[j] % 2}"
                obs[key] = obs.get(key, 0.0) + 1.0
            seq.append(obs)
        X.append(seq)
        y.append([(f"a{k % 2}", f"b{int(k >= 2)}") for k in toks])
    return X, y


@pytest.mark.parametrize("objective", ["pseudolikelihood", "likelihood"])
def test_gradient_with_differenced_columns(objective, monkeypatch):
    monkeypatch.setattr(rows_module, "PASS_COST", 0.0)
    X, y = concept_data()
    est = FactorialCRF(objective=objective, sigma=2.0, random_state=0)
    batch = training_problem(est, X, y).objective.batch
    assert batch.obs.has_differences
    check_gradient(est, X, y, rel=1e-5)


@short_fit
def test_fit_predict_do_not_depend_on_differencing(monkeypatch):
    X, y = concept_data(n_seq=20)
    monkeypatch.setattr(rows_module, "PASS_COST", 0.0)
    est = FactorialCRF(max_iter=30, random_state=0).fit(X, y)
    Xm, seq_ptr = est.encoder_.transform(X)
    assert est.layout_.observation_rows(Xm, seq_ptr).has_differences
    monkeypatch.setattr(rows_module, "PASS_COST", np.inf)
    ref = FactorialCRF(max_iter=30, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-7, atol=1e-9)
    assert [p.tolist() for p in est.predict(X)] == [p.tolist() for p in ref.predict(X)]


def test_potentials_into_a_reused_array_have_the_bits_of_a_new_one():
    """``Layout.potentials(out=...)`` (an objective's array kept between evaluations)
    overwrites whatever ``out`` held and gives the potentials of a new array, bit for
    bit; an array of the wrong shape, type or layout is refused."""
    X, y = concept_data()
    est = FactorialCRF(objective="likelihood", random_state=0)
    objective = training_problem(est, X, y).objective
    layout, obs = objective.layout, objective.batch.obs
    theta = np.random.default_rng(1).normal(size=layout.n_params)
    unary, pair, eo = layout.potentials(theta, obs, 2)
    out = np.full((obs.shape[0], layout.score_width), np.nan)
    unary2, pair2, eo2 = layout.potentials(theta, obs, 2, out=out)
    np.testing.assert_array_equal(unary2, unary)
    np.testing.assert_array_equal(pair2, pair)
    np.testing.assert_array_equal(eo2, eo)
    for bad in (out[:-1], out.astype(np.float32), np.asfortranarray(out)):
        with pytest.raises(ValueError, match="out must be"):
            layout.potentials(theta, obs, 2, out=bad)
    # the objective's evaluations reuse its arrays and keep their results
    first = objective.data_loss_gradient(theta)
    again = objective.data_loss_gradient(theta)
    assert first[0] == again[0]
    np.testing.assert_array_equal(first[1], again[1])


def test_a_training_batch_subset_takes_the_whole_batchs_rows(monkeypatch):
    """``TrainingBatch.subset`` prepares no observation rows of its own: the fold
    potentials of a subset equal those of the same sequences in the whole batch."""
    monkeypatch.setattr(rows_module, "PASS_COST", 0.0)
    X, y = concept_data(n_seq=9, seed=3)
    objective, theta, _ = training_problem(FactorialCRF(objective="likelihood"), X, y)
    batch = objective.batch
    assert batch.obs.has_differences
    sub = batch.subset(np.array([5, 1, 7]))
    assert sub.obs.differenced is batch.obs.differenced
    layout = objective.layout
    theta = np.random.default_rng(0).normal(size=theta.shape)
    unary, _, _ = layout.potentials(theta, batch.obs)
    part, _, _ = layout.potentials(theta, sub.obs)
    rows = np.concatenate([np.arange(batch.seq_ptr[s], batch.seq_ptr[s + 1])
                           for s in (5, 1, 7)])
    np.testing.assert_array_equal(part, unary[rows])
