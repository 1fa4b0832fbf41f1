"""Token-level F1 and Cohen's kappa over the tags of every chain; paired tests."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.metrics import cohen_kappa_score, f1_score

from skfcrf.metrics import (
    cohen_kappa,
    make_chain_scorer,
    paired_test,
    sequence_scores,
    tag_counts,
    token_f1,
)


def _random_pair(rng, n_seq=4, n_chains=2, labels=("O", "A", "B")):
    lengths = rng.integers(1, 8, size=n_seq)
    y = [rng.choice(labels, size=(n, n_chains)) for n in lengths]
    p = [np.where(rng.random(t.shape) < 0.6, t, rng.choice(labels, size=t.shape)) for t in y]
    return y, p


def _indicators(y, p, chain, label):
    t = np.concatenate([s[:, chain] for s in y]) == label
    q = np.concatenate([s[:, chain] for s in p]) == label
    return t, q


@pytest.mark.parametrize("seed", range(5))
def test_per_tag_counts_and_scores_match_sklearn_on_indicators(seed):
    rng = np.random.default_rng(seed)
    y, p = _random_pair(rng)
    c = tag_counts(y, p, outside=["O"])
    assert c.tags == [(ch, lab) for ch in range(2) for lab in ("A", "B")
                      if any((s[:, ch] == lab).any() for s in y + p)]
    f1s, kappas = [], []
    for (ch, lab), tp, fp, fn, tn in zip(c.tags, c.tp, c.fp, c.fn, c.tn):
        t, q = _indicators(y, p, ch, lab)
        assert (tp, fp, fn, tn) == ((t & q).sum(), (~t & q).sum(), (t & ~q).sum(),
                                    (~t & ~q).sum())
        f1s.append(f1_score(t, q, zero_division=1.0))
        kappas.append(cohen_kappa_score(t, q) if (t != t[0]).any() or (q != q[0]).any()
                      else np.nan)
    assert token_f1(y, p, average="macro", outside=["O"]) == pytest.approx(np.mean(f1s))
    assert cohen_kappa(y, p, average="macro", outside=["O"]) == pytest.approx(
        np.nanmean(kappas))


@pytest.mark.parametrize("seed", range(5))
def test_micro_scores_pool_the_tags_of_every_chain(seed):
    rng = np.random.default_rng(seed)
    y, p = _random_pair(rng, n_chains=3)
    tt, qq = [], []
    for ch in range(3):
        for lab in ("A", "B"):
            t, q = _indicators(y, p, ch, lab)
            tt.append(t)
            qq.append(q)
    t, q = np.concatenate(tt), np.concatenate(qq)
    assert token_f1(y, p, outside=["O"]) == pytest.approx(f1_score(t, q))
    assert cohen_kappa(y, p, outside=["O"]) == pytest.approx(cohen_kappa_score(t, q))


def test_one_chain_micro_f1_over_every_label_is_its_accuracy():
    rng = np.random.default_rng(0)
    y, p = _random_pair(rng, n_chains=1)
    acc = np.mean(np.concatenate([a[:, 0] == b[:, 0] for a, b in zip(y, p)]))
    assert token_f1(y, p) == pytest.approx(acc)
    assert token_f1(y, p, chain=0) == pytest.approx(acc)


def test_hand_computed_example_and_conventions():
    y = [[("A", "x"), ("A", "y"), ("O", "y")]]
    p = [[("A", "x"), ("O", "y"), ("O", "x")]]
    # chain 0: A TP 1 FN 1; chain 1: x TP 1 FP 1, y TP 1 FN 1 -> micro 6 / 9
    assert token_f1(y, p, outside=["O"]) == pytest.approx(6 / 9)
    assert token_f1(y, p, chain=1, outside=["O"]) == pytest.approx(4 / 6)
    # kappa of A: TP 1, FP 0, FN 1, TN 1 -> P(A) 2/3, P(E) (1*2 + 1*2) / 9
    pa, pe = 2 / 3, 4 / 9
    assert cohen_kappa(y, p, chain=0, outside=["O"]) == pytest.approx((pa - pe) / (1 - pe))
    # every token outside: no tag
    assert np.isnan(token_f1([["O"]], [["O"]], outside=["O"]))
    assert np.isnan(cohen_kappa([["O"]], [["O"]], outside=["O"]))
    # a perfect annotation
    assert token_f1(y, y) == 1.0 and cohen_kappa(y, y, average="macro") == 1.0


def test_missing_gold_labels_are_left_out():
    y = [[("A",), (None,), ("B",)]]
    p = [[("A",), ("B",), ("A",)]]
    assert token_f1(y, p) == pytest.approx(token_f1([["A", "B"]], [["A", "A"]]))
    c = tag_counts(y, p)
    assert (c.tp + c.fp + c.fn + c.tn == 2).all()


labels = st.sampled_from(["O", "A", "B", "C"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(labels, labels), min_size=1, max_size=6), min_size=1,
                max_size=4), st.randoms(use_true_random=False))
def test_scores_are_symmetric_and_bounded(y, rnd):
    p = [[(rnd.choice("OABC"), rnd.choice("OABC")) for _ in s] for s in y]
    for avg in ("micro", "macro"):
        f = token_f1(y, p, average=avg, outside=["O"])
        assert f == pytest.approx(token_f1(p, y, average=avg, outside=["O"]), nan_ok=True)
        assert np.isnan(f) or 0.0 <= f <= 1.0
        k = cohen_kappa(y, p, average=avg, outside=["O"])
        assert k == pytest.approx(cohen_kappa(p, y, average=avg, outside=["O"]), nan_ok=True)
        assert np.isnan(k) or -1.0 - 1e-12 <= k <= 1.0 + 1e-12


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="average"):
        token_f1([["A"]], [["A"]], average="weighted")
    with pytest.raises(ValueError, match="average"):
        cohen_kappa([["A"]], [["A"]], average=None)
    with pytest.raises(ValueError, match="chain"):
        token_f1([["A"]], [["A"]], chain=3)
    with pytest.raises(ValueError, match="method"):
        paired_test([1, 2, 3], [1, 2, 4], method="sign")
    with pytest.raises(ValueError, match="one length"):
        paired_test([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least 2"):
        paired_test([1.0, np.nan], [0.0, 1.0])


def test_paired_tests_match_scipy_and_are_reproducible():
    rng = np.random.default_rng(3)
    a = rng.random(30)
    b = a - 0.05 + 0.1 * rng.random(30)
    r = paired_test(a, b)
    ref = stats.ttest_rel(a, b)
    assert (r.statistic, r.pvalue) == pytest.approx((ref.statistic, ref.pvalue))
    assert r.mean_difference == pytest.approx(np.mean(a - b)) and r.n == 30
    w = paired_test(a, b, method="wilcoxon")
    assert w.pvalue == pytest.approx(stats.wilcoxon(a - b).pvalue)
    p1 = paired_test(a, b, method="permutation", n_resamples=999, random_state=0)
    p2 = paired_test(a, b, method="permutation", n_resamples=999, random_state=0)
    assert p1 == p2 and 0.0 < p1.pvalue <= 1.0
    # a clear difference is significant under every test
    better = a + 0.2 + 0.05 * rng.random(30)
    for method in ("t", "wilcoxon", "permutation"):
        assert paired_test(better, a, method=method, random_state=0).pvalue < 0.01


def test_sequence_scores_and_named_scorers():
    y = [np.array([["A", "x"], ["B", "y"]], dtype=object),
         np.array([["A", "x"]], dtype=object)]
    p = [np.array([["A", "x"], ["A", "y"]], dtype=object),
         np.array([["A", "y"]], dtype=object)]
    per = sequence_scores(y, p, token_f1)
    assert per.tolist() == pytest.approx([token_f1(y[:1], p[:1]), token_f1(y[1:], p[1:])])

    class Fixed(BaseEstimator):
        def predict(self, X):
            return p

    for name, func, avg in (("token_f1_micro", token_f1, "micro"),
                            ("kappa_macro", cohen_kappa, "macro")):
        scorer = make_chain_scorer(name)
        assert scorer(Fixed(), [None, None], y) == pytest.approx(func(y, p, average=avg))
    with pytest.raises(ValueError, match="all chains"):
        make_chain_scorer("token_f1_micro", chain=0)
