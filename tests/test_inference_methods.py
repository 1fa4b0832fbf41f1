"""The inference-method objects (skfcrf.inference): choice, registry and shared work."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf._kernels.batch import MAX_PRODUCT_STATES
from skfcrf._kernels.graph import IN_CHAIN, Graph
from skfcrf.active import max_marginals
from skfcrf.inference import (
    METHODS,
    ExactInference,
    InferenceMethod,
    JointStateInference,
    TRPInference,
    resolve_method,
)
from skfcrf.inference import _joint as joint_module

from _helpers import synthetic


def _fitted(inference="auto"):
    X, y = synthetic(n_seq=20, n_chains=2, seed=3)
    return FactorialCRF(max_iter=20, finetune_iter=3, inference=inference).fit(X, y), X, y


def test_registry_names_the_methods_and_every_entry_point_accepts_them():
    assert set(METHODS) == {"exact", "joint", "trp"}
    for name, cls in METHODS.items():
        assert issubclass(cls, InferenceMethod) and cls.name == name
    options = FactorialCRF._parameter_constraints["inference"][0].options
    assert options == {"auto", *METHODS}


def test_resolve_method_auto_and_errors():
    one = Graph.build([3], [(0, 0, IN_CHAIN, 1)])
    two = Graph.build([2, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1)])
    states = np.array([[0, 0], [1, 1]], np.int32)
    assert isinstance(resolve_method("auto", one), ExactInference)
    assert isinstance(resolve_method("auto", two, states), JointStateInference)
    assert isinstance(resolve_method("auto", two), TRPInference)
    with pytest.raises(ValueError, match="inference='joint' needs"):
        resolve_method("joint", two)
    with pytest.raises(ValueError, match="unknown inference method 'bp'"):
        resolve_method("bp", two)
    method = resolve_method("trp", two, max_iter=7)
    bound = method.bind(seeds=np.zeros(3, np.uint64))
    assert bound.max_iter == 7 and method.seeds is None and bound.seeds is not None
    with pytest.raises(TypeError, match="no input 'colour'"):
        method.bind(colour=1)


def test_decode_runs_one_joint_viterbi(monkeypatch):
    crf, X, _ = _fitted()
    assert crf._inference_inputs(X[:1])[3].name == "joint"
    calls = []

    def counting(name):
        original = getattr(joint_module, name)

        def counted(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)
        return counted

    for name in ("joint_map", "joint_map_and_log_partition"):
        monkeypatch.setattr(joint_module, name, counting(name))
    records = crf.decode(X)
    # one sweep: the labels, log Z and the underflow check share it
    assert calls == ["joint_map_and_log_partition"]
    assert [r.status for r in records] == ["exact"] * len(X)
    np.testing.assert_allclose([r.log_prob for r in records], crf.log_prob(X, crf.predict(X)))


@pytest.mark.parametrize("inference", ["joint", "exact", "trp"])
def test_log_prob_with_missing_labels_computes_each_log_z_once(monkeypatch, inference):
    crf, X, y = _fitted(inference)
    cls = type(crf._inference_inputs(X[:1])[3])
    calls = []
    original = cls.log_partition

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(cls, "log_partition", counting)
    partial = [np.array(seq, dtype=object) for seq in y]
    partial[0][0, 1] = None
    values = crf.log_prob(X, partial)
    assert len(calls) == 2                       # the model's log Z, and the clamped one
    assert values[0] > crf.log_prob(X[:1], y[:1])[0] and values[0] <= 0.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_exact_decodes_uncoupled_chains_apart_beyond_the_product_limit():
    """``coupling="none"`` with ``inference="exact"``: three chains of up to 17 labels
    (more product states than the limit) run as three chains -- the decoded
    labelling is each sequence's best (no labelling the model allows scores
    higher: neither the gold one nor the other chains' labels swapped in), and
    every chain's marginals are distributions."""
    rng = np.random.default_rng(12)
    X, y = [], []
    for _ in range(30):
        n = int(rng.integers(3, 8))
        labels = rng.integers(0, 17, size=(n, 3))
        X.append([[f"w{labels[t, 0]}", f"v{labels[t, 1] % 5}", f"u{labels[t, 2] % 3}"]
                  for t in range(n)])
        y.append([tuple(f"l{v}" for v in row) for row in labels])
    crf = FactorialCRF(coupling="none", inference="exact", finetune_iter=0, max_iter=15,
                       forbidden_transitions=None).fit(X, y)
    assert np.prod([len(c) for c in crf.classes_]) > MAX_PRODUCT_STATES
    pred = crf.predict(X)
    best = crf.log_prob(X, pred)
    assert np.all(best >= crf.log_prob(X, y) - 1e-9)
    shuffled = [p[::-1] for p in pred]
    assert np.all(best >= crf.log_prob(X, shuffled) - 1e-9)
    assert [r.status for r in crf.decode(X)] == ["exact"] * len(X)
    for seq in crf.predict_marginals(X):
        for m in seq:
            np.testing.assert_allclose(m.sum(axis=1), 1.0)
    # n-best and max-marginals run per component too
    for d, p in zip(crf.decode(X[:4], n_best=3), pred):
        lp = [r.log_prob for r in d.ranked]
        assert len(lp) == 3 and np.all(np.diff(lp) <= 1e-12)
        assert np.array_equal(d.ranked[0].labels, p)
    mm = max_marginals(crf, X[:4])
    for seq, top in zip(mm, best[:4]):
        for m in seq:     # every token's best label is on the best labelling
            np.testing.assert_allclose(m.max(axis=1), top)
