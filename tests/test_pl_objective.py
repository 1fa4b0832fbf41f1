"""The fused pseudolikelihood objective against potentials -> PL kernel -> gradient mapping."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import skfcrf.model._observation_rows as rows_module
from skfcrf import FactorialCRF
from skfcrf._kernels._contract import sequence_blocks
from skfcrf._kernels._pseudolikelihood import pseudolikelihood
from skfcrf.estimators import training_problem

from _helpers import synthetic

MODES = ["all", "supported", "default"]


def unfused(est, batch, theta, n_threads):
    """The objective the long way round, through whole-batch potentials."""
    layout = est.layout_
    unary, pair, eo = layout.potentials(theta, batch.obs, n_threads, est.forbidden_)
    losses, dunary, dpair = pseudolikelihood(est.graph_, batch.seq_ptr, unary, pair, eo,
                                             batch.gold, n_threads)
    grad = layout.gradient(dunary, dpair, eo, batch.obs, n_threads)
    return losses, grad


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n_chains=st.integers(1, 3),
       unary=st.sampled_from(MODES), transition=st.sampled_from(MODES),
       coupling=st.sampled_from(MODES), n_threads=st.sampled_from([1, 2]),
       forbid=st.booleans(), differenced=st.booleans())
def test_fused_objective_equals_unfused(seed, n_chains, unary, transition, coupling, n_threads,
                                        forbid, differenced):
    X, y = synthetic(n_seq=6, n_chains=n_chains, seed=seed, length=(1, 7))
    forbidden = None
    if forbid:
        used = {(a[0], b[0]) for seq in y for a, b in zip(seq, seq[1:])}
        seen = sorted({tok[0] for seq in y for tok in seq})  # a label absent is refused
        unused = sorted({(a, b) for a in seen for b in seen} - used)
        forbidden = [unused[:1]] + [None] * (n_chains - 1)
    est = FactorialCRF(unary_features=unary, transition_features=transition,
                       coupling_features=coupling, forbidden_transitions=forbidden,
                       coupling="all" if n_chains == 3 else "adjacent")
    old = rows_module.PASS_COST
    rows_module.PASS_COST = 0.0 if differenced else np.inf
    try:
        objective, theta0, _ = training_problem(est, X, y)
        batch = objective.batch
    finally:
        rows_module.PASS_COST = old
    theta = np.random.default_rng(seed).normal(scale=0.7, size=theta0.shape)
    losses, grad = est.layout_.pseudolikelihood(theta, batch.obs, batch.gold, n_threads,
                                                est.forbidden_)
    ref_losses, ref_grad = unfused(est, batch, theta, n_threads)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9)


def test_fused_objective_with_empty_sequences():
    """Empty sequences cost nothing and do not disturb their neighbours."""
    X, y = synthetic(n_seq=5, n_chains=2, seed=1)
    est = FactorialCRF(transition_features="supported")
    objective, theta0, _ = training_problem(est, X, y)
    batch = objective.batch
    lengths = np.diff(batch.seq_ptr)
    # insert an empty sequence first, in the middle and last
    with_empty = np.concatenate([[0], np.cumsum(np.insert(lengths, [0, 2, 5], 0))])
    obs = est.layout_.observation_rows(batch.X, with_empty)
    theta = np.random.default_rng(0).normal(size=theta0.shape)
    losses, grad = est.layout_.pseudolikelihood(theta, obs, batch.gold, 2)
    ref_losses, ref_grad = est.layout_.pseudolikelihood(theta, batch.obs, batch.gold, 2)
    np.testing.assert_allclose(losses[[0, 3, 7]], 0.0)
    np.testing.assert_allclose(np.delete(losses, [0, 3, 7]), ref_losses, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n_seq=st.integers(1, 40), n_chains=st.integers(1, 3))
def test_objective_does_not_depend_on_threads(seed, n_seq, n_chains):
    """Accumulators belong to fixed blocks of sequences: 1, 2 or 3 threads, and repeated
    evaluations, give the same loss and gradient bit for bit (fused and unfused)."""
    X, y = synthetic(n_seq=n_seq, n_chains=n_chains, seed=seed, length=(1, 9))
    est = FactorialCRF(transition_features="supported")
    objective, theta0, _ = training_problem(est, X, y)
    batch = objective.batch
    theta = np.random.default_rng(seed).normal(scale=0.7, size=theta0.shape)
    ref = est.layout_.pseudolikelihood(theta, batch.obs, batch.gold, 1, est.forbidden_)
    ref_unfused = unfused(est, batch, theta, 1)
    for n_threads in (2, 3, 2):
        got = est.layout_.pseudolikelihood(theta, batch.obs, batch.gold, n_threads,
                                           est.forbidden_)
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
        got = unfused(est, batch, theta, n_threads)
        # the potentials' gradient mapping (likelihood path) still sums per thread
        np.testing.assert_allclose(got[1], ref_unfused[1], rtol=1e-12, atol=1e-12)
        assert np.array_equal(got[0], ref_unfused[0])


@given(lengths=st.lists(st.integers(0, 50), min_size=0, max_size=60),
       row=st.sampled_from([1, 10 ** 3, 10 ** 6, 10 ** 8]), most=st.sampled_from([8, 16]))
def test_sequence_blocks_partition(lengths, row, most):
    """The one block partition of the objective kernels (pseudolikelihood: at most 16
    blocks, chain-wise: 8)."""
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    b = sequence_blocks(seq_ptr, row, most)
    n_seq = len(lengths)
    assert b[0] == 0 and b[-1] == n_seq and np.all(np.diff(b) >= 0)
    assert 1 <= len(b) - 1 <= max(1, min(most, n_seq))
    if n_seq >= 4:
        assert len(b) - 1 >= 4
