"""Kernels whose scratch memory cannot be allocated raise MemoryError (no sentinel values)."""
import numpy as np
import pytest
from kernel_reference import GRAPHS, PL_PROBLEMS, inference_problem, pl_problem, pl_results

from skfcrf._kernels import _alloc
from skfcrf._kernels.batch import map_assign, marginals


@pytest.fixture
def tiny_limit():
    """Allocations of more than 64 bytes fail while the test runs."""
    previous = _alloc.set_limit(64)
    try:
        yield
    finally:
        _alloc.set_limit(previous)


@pytest.mark.parametrize("name", ["one_tied", "two_mixed", "three_mixed"])
@pytest.mark.parametrize("method", ["exact", "trp"])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_inference_raises_memory_error(tiny_limit, name, method, n_threads):
    index = [g[0] for g in GRAPHS].index(name)
    graph, seq_ptr, unary, pair = inference_problem(*GRAPHS[index], seed=100 + index)
    with pytest.raises(MemoryError):
        marginals(graph, seq_ptr, unary, pair, method=method, n_threads=n_threads)
    with pytest.raises(MemoryError):
        map_assign(graph, seq_ptr, unary, pair, method=method, n_threads=n_threads)


def test_pseudolikelihood_raises_memory_error(tiny_limit):
    with pytest.raises(MemoryError):
        pl_results(pl_problem(PL_PROBLEMS[2], seed=202))


def test_overflowing_size_raises_memory_error():
    """A size whose byte count overflows is refused, not wrapped around."""
    with pytest.raises(MemoryError):
        _alloc.allocate_for_test(2 ** 62, 8)


def test_limit_is_restored():
    graph, seq_ptr, unary, pair = inference_problem(*GRAPHS[2], seed=102)
    previous = _alloc.set_limit(64)
    assert _alloc.set_limit(previous) == 64
    node = marginals(graph, seq_ptr, unary, pair)[0]
    assert np.isfinite(node).all()


def test_feature_products_raise_memory_error(tiny_limit):
    from skfcrf._kernels._features import add_scores
    seq_ptr = np.array([0, 2, 3], dtype=np.int64)
    direct = (np.array([0, 1, 1, 2], np.int32), np.array([0, 0], np.int32), np.ones(2))
    feat_ptr = np.array([0, 2], dtype=np.int64)
    ent_col = np.array([0, 20], dtype=np.int32)
    out = np.zeros((3, 40))
    with pytest.raises(MemoryError):
        add_scores(seq_ptr, direct, None, feat_ptr, ent_col, np.ones(2), out, 1)


def test_reused_scratch_gives_the_same_results():
    """Inside ``reusing_scratch`` a freed block is kept and handed to the next kernel,
    whatever the previous one left in it: the results keep their bits; leaving the
    context frees the block, and outside it nothing is kept."""
    problems = [inference_problem(*GRAPHS[i], seed=300 + i) for i in (1, 2)]
    fresh = [marginals(*p, method="exact")[0] for p in problems]
    assert _alloc.kept_bytes() == 0
    with _alloc.reusing_scratch():
        for _ in range(2):
            for p, expected in zip(problems, fresh):
                # the other problem's kernel ran last: its data is in the kept block
                np.testing.assert_array_equal(marginals(*p, method="exact")[0], expected)
                assert _alloc.kept_bytes() > 0
        with _alloc.reusing_scratch():                      # nested: still kept inside
            marginals(*problems[0], method="exact")
        assert _alloc.kept_bytes() > 0
    assert _alloc.kept_bytes() == 0


def test_limit_applies_to_reused_scratch():
    graph, seq_ptr, unary, pair = inference_problem(*GRAPHS[2], seed=102)
    with _alloc.reusing_scratch():
        marginals(graph, seq_ptr, unary, pair)
        assert _alloc.kept_bytes() > 0
        previous = _alloc.set_limit(64)
        try:
            with pytest.raises(MemoryError):
                marginals(graph, seq_ptr, unary, pair)
        finally:
            _alloc.set_limit(previous)
