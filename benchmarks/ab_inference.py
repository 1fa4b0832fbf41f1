"""A/B timing of inference (``marginals`` / ``map_assign``): the working tree against a commit.

Exports ``--rev`` into a temporary directory and builds it (as ab_revisions.py does), then
times, in worker processes alternating A (``--rev``) and B (working tree) ``--rounds``
times, ``--method`` inference on the potentials of the three-chain dictation FCRF (random
weights, as ab_kernel.py's dictations workload).  Prints per-round medians and the median
ratio for each of marginals and map_assign, and checks that A and B agree.

    python benchmarks/ab_inference.py --rev 348513f --method trp --n-reports 100 --rounds 5
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ab_revisions import ROOT, ab_parser, export_and_build, run_worker  # noqa: E402

WORKER = r"""
import hashlib, json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
args = json.loads(sys.argv[1])
from ab_kernel import dictations_workload
from skfcrf._kernels.batch import map_assign, marginals
graph, seq_ptr, unary, pair, eo, gold = dictations_workload(1, args["n_reports"])
kw = dict(method=args["method"], max_iter=args["max_iter"], n_threads=args["n_jobs"])
out = {{}}
for name, fn in (("marginals", marginals), ("map_assign", map_assign)):
    res = fn(graph, seq_ptr, unary, pair, **kw)
    times = []
    for _ in range(args["repeat"]):
        t0 = time.perf_counter()
        fn(graph, seq_ptr, unary, pair, **kw)
        times.append(time.perf_counter() - t0)
    digest = hashlib.sha1(b"".join(np.ascontiguousarray(r).tobytes() for r in res)).hexdigest()
    out[name] = {{"times": times, "digest": digest}}
print(json.dumps(out))
"""


def run(tree, args):
    return run_worker(tree, WORKER.format(bench=HERE), args)


def main():
    ap = ab_parser(__doc__, "calls")
    ap.add_argument("--method", choices=["trp", "exact"], default="trp")
    ap.add_argument("--n-reports", type=int, default=100)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--n-jobs", type=int, default=1)
    opt = ap.parse_args()
    old_tree = export_and_build(opt.rev)
    args = {"method": opt.method, "n_reports": opt.n_reports, "max_iter": opt.max_iter,
            "n_jobs": opt.n_jobs, "repeat": opt.repeat}
    ratios = {"marginals": [], "map_assign": []}
    meds = {k: ([], []) for k in ratios}
    for r in range(opt.rounds):
        ra, rb = run(old_tree, args), run(ROOT, args)
        for name in ratios:
            ma, mb = (float(np.median(x[name]["times"])) for x in (ra, rb))
            same = ra[name]["digest"] == rb[name]["digest"]
            meds[name][0].append(ma)
            meds[name][1].append(mb)
            ratios[name].append(ma / mb)
            print(f"round {r + 1} {name}: A {ma:.3f} s  B {mb:.3f} s  x{ma / mb:.2f}  "
                  f"results {'identical' if same else 'DIFFER'}", flush=True)
    for name, rs in ratios.items():
        print(f"{name} {opt.method} n_jobs={opt.n_jobs}: A ({opt.rev}) median "
              f"{np.median(meds[name][0]):.3f} s, B median {np.median(meds[name][1]):.3f} s, "
              f"median ratio x{np.median(rs):.2f} (range x{min(rs):.2f} to x{max(rs):.2f})")


if __name__ == "__main__":
    main()
