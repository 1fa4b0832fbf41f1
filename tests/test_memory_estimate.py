"""The memory guard's estimate is within 30% of a fit's measured peak memory.

One small configuration dominated by weights (one chain of 12 labels,
``transition_features="all"`` over about 2,500 observations: 0.37 M weights) is fitted
in a fresh interpreter; its peak is the kernel's high-water mark after the fit
(reset just before it through ``/proc/self/clear_refs``) minus the resident
memory before it, measured by ``benchmarks/bench_memory_estimate.py``'s
``measure_fit``; that script runs the larger configurations.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from skfcrf import FactorialCRF
    from skfcrf.model._memory import check_fit_memory, column_counts, estimate_fit_memory
    from skfcrf.estimators import training_problem
    sys.path.insert(0, "benchmarks")
    from bench_memory_estimate import measure_fit

    rng = np.random.default_rng(0)
    X, y = [], []
    for s in range(200):
        toks = rng.integers(0, 4000, size=20)
        X.append([{f"w={t}": 1.0} for t in toks])
        y.append([f"L{t % 12}" for t in toks])
    params = dict(objective="likelihood", transition_features="all", max_iter=8)
    probe = FactorialCRF(**params)
    objective, _, _ = training_problem(probe, X, y)
    Xm, seq_ptr = probe.encoder_.transform(X)
    est = estimate_fit_memory(probe.graph_, Xm.shape[0], Xm.shape[1], Xm.nnz,
                              unary_features="supported", transition_features="all",
                              coupling_features="default", objective="likelihood",
                              lbfgs_memory=3, column_counts=column_counts(Xm),
                              n_sequences=len(seq_ptr) - 1)
    total = check_fit_memory(est, max_memory=2 ** 62)
    del objective, probe, Xm
    crf = FactorialCRF(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured, method = measure_fit(crf, X, y)
    print(json.dumps(dict(estimate=total, measured=measured, method=method,
                          n_weights=est["n_weights"], n_params=int(crf.coef_.size))))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="needs Linux's /proc/self/clear_refs to reset the peak RSS")
def test_estimate_within_30_percent_of_measured_peak():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=env, cwd=root, timeout=120, check=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    if rec["method"] != "VmHWM after clear_refs":
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak RSS")
    # "all" transitions are counted exactly; "supported" unary weights by an upper bound
    assert rec["n_params"] <= rec["n_weights"] <= 1.05 * rec["n_params"]
    ratio = rec["estimate"] / rec["measured"]
    assert 0.7 <= ratio <= 1.3, rec
