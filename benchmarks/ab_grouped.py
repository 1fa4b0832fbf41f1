"""A/B timing of the grouped (back-off) joint-state kernels: ``--rev``'s against the working tree's.

The old ``_joint.pyx`` is compiled beside the new one (:func:`ab_kernel.build_old`) and
swapped in for A under the same Python wrapper (``skfcrf._kernels.joint``), which still
hands it every table it reads.  Both time ``predict`` and ``predict_marginals`` of a
fitted model on the 200 training reports of the dictation benchmark
(``bench_calibration.py``'s data), one thread, alternating A and B: medians and ratios.

    python benchmarks/ab_grouped.py --rev bc10d28 [--model MODEL.npz] [--repeat 5]

Without ``--model`` it fits ``FactorialCRF(forbidden_transitions="backoff", sigma=31.6,
n_jobs=2)`` first (about a minute) and also times the closed (``"auto"``) model.
"""
import argparse
import os
import sys

from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_kernel import ab, build_old  # noqa: E402
from bench_calibration import data  # noqa: E402

import skfcrf._kernels.joint as joint  # noqa: E402
from skfcrf import FactorialCRF  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    Xtr, ytr, _, _, params = data("dictations", 200, 100)
    if args.model:
        models = {"given": FactorialCRF.load(args.model)}
    else:
        models = {f: FactorialCRF(forbidden_transitions=f, n_jobs=2, **params).fit(Xtr, ytr)
                  for f in ("backoff", "auto")}
    from skfcrf._kernels import _joint as new
    mods = {"old": build_old("joint", args.rev), "new": new}

    def swap(label):
        joint._kernel = lambda: mods[label]

    threadpool_limits(1, user_api="blas")
    for name, crf in models.items():
        crf.set_params(n_jobs=1)
        ab(f"{name} predict (200 reports)", swap, lambda crf=crf: crf.predict(Xtr), args.repeat)
        ab(f"{name} predict_marginals (200 reports)", swap,
           lambda crf=crf: crf.predict_marginals(Xtr), args.repeat)


if __name__ == "__main__":
    main()
