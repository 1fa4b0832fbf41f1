"""A/B timing of the TRP and n-best kernels: ``--rev``'s against the working tree's.

The old kernel is compiled by :func:`ab_kernel.build_old` and swapped in for A; both run
alternately in one process on the same inputs (the dictation FCRF's potentials with
random weights, one thread, BLAS on one thread); prints wall and CPU medians and
whether the results are bit-identical.  Modes: ``trp`` (TRP marginals and MAP) and
``nbest`` (state n-best, max-marginals, the k-best kernels).  The pseudolikelihood
objective, the chain-wise kernel and the joint-state kernels (whose wrapper changes with
them) are timed by ``ab_kernel.py``.

    python benchmarks/ab_kernel_swap.py trp a6d2966 5
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_kernel import ab, build_old, dictations_workload  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import skfcrf._kernels as bp  # noqa: E402


def main():
    mode, rev, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
    n_reports = {"trp": 30, "nbest": 100}
    if mode not in n_reports:
        sys.exit(f"ab_kernel_swap.py: mode {mode!r} is not one of {sorted(n_reports)} "
                 "(the chain-wise kernel: ab_kernel.py chainwise)")
    threadpool_limits(1, user_api="blas")
    graph, seq_ptr, unary, pair, eo, gold = dictations_workload(1, n_reports[mode])
    from skfcrf._kernels.joint import joint_states_from_labels
    states = joint_states_from_labels(gold)
    kname = "_" + mode
    import importlib
    mods = {"old": build_old(mode, rev), "new": importlib.import_module(f"skfcrf._kernels.{kname}")}

    def swap(label):
        setattr(bp, kname, mods[label])
        sys.modules[f"skfcrf._kernels.{kname}"] = mods[label]
    if mode == "nbest":
        from skfcrf._kernels.states import state_max_marginals, state_nbest
        sp = seq_ptr
        ab("state_nbest k=5", swap, lambda: state_nbest(graph, states, sp, unary, pair, 5), repeat)
        ab("state_max_marginals", swap,
           lambda: state_max_marginals(graph, states, sp, unary, pair), repeat)
        old, new = mods["old"], mods["new"]
        rng = np.random.default_rng(0)
        phi = rng.normal(size=(200, 60))
        trans = rng.normal(size=(1, 60, 60))
        trans[0][rng.random((60, 60)) < 0.3] = -np.inf
        tindex = np.zeros(200, np.int64)
        for fn in ("kbest_viterbi", "kbest_astar"):
            fo, fnw = getattr(old, fn), getattr(new, fn)
            cur = {}
            ab(f"{fn} T=200 S=60 k=5",
               lambda label, cur=cur, fo=fo, fnw=fnw: cur.update(f=fo if label == "old" else fnw),
               lambda cur=cur: cur["f"](phi, trans, tindex, 5), repeat)
    elif mode == "trp":
        from skfcrf._kernels.batch import map_assign, marginals
        sp = seq_ptr
        kw = dict(method="trp", max_iter=40, n_threads=1)
        ab("trp marginals", swap, lambda: marginals(graph, sp, unary, pair, **kw), repeat)
        ab("trp map_assign", swap, lambda: map_assign(graph, sp, unary, pair, **kw), repeat)


if __name__ == "__main__":
    main()
