"""A/B timing of decoding a saved model: the working tree against an earlier commit.

The working tree fits the default model on ``make_dictations(n_reports, "rcg",
random_state=1)`` (the first two thirds, standard features) and saves it; then worker
processes of ``--rev`` (exported and built as by ``ab_revisions.py``) and of the working
tree alternate, each loading that model file and timing one call of ``decode``
(``--n-best``), ``predict_marginals`` or ``log_prob`` of the gold labels on the last
third.  Prints per-round times, the median ratio A/B and whether the two versions'
outputs are identical to the bit.

    python benchmarks/ab_decode.py --rev e3ccd32 --what decode marginals log_prob --rounds 5
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
from ab_revisions import ROOT, export_and_build, run_worker

WORKER = r"""
import hashlib, json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
args = json.loads(sys.argv[1])
from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from _dictations import standard_features
X, y = make_dictations(n_reports=args["n_reports"], style="rcg", random_state=1)
F = standard_features().fit_transform(X)
cut = 2 * len(F) // 3
F, y = F[cut:], y[cut:]
crf = FactorialCRF.load(args["model"])
h = hashlib.sha1()
t0 = time.perf_counter()
if args["what"] == "decode":
    out = crf.decode(F, n_best=args["n_best"])
    seconds = time.perf_counter() - t0
    for r in out:
        for a in r.ranked:
            h.update(np.asarray(a.labels).astype(str).tobytes())
            h.update(np.float64(a.log_prob).tobytes())
elif args["what"] == "marginals":
    out = crf.predict_marginals(F)
    seconds = time.perf_counter() - t0
    for seq in out:
        for m in seq:
            h.update(m.tobytes())
else:
    out = crf.log_prob(F, y)
    seconds = time.perf_counter() - t0
    h.update(out.tobytes())
print(json.dumps({{"seconds": seconds, "hash": h.hexdigest()}}))
"""


def fit_model(n_reports, path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from skfcrf import FactorialCRF
    from skfcrf.datasets import make_dictations

    from _dictations import standard_features

    X, y = make_dictations(n_reports=n_reports, style="rcg", random_state=1)
    F = standard_features().fit_transform(X)
    cut = 2 * len(F) // 3
    FactorialCRF(max_iter=40, finetune_iter=5).fit(F[:cut], y[:cut]).save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="commit to compare against (A)")
    ap.add_argument("--what", nargs="+", default=["decode", "marginals", "log_prob"],
                    choices=("decode", "marginals", "log_prob"))
    ap.add_argument("--n-reports", type=int, default=150)
    ap.add_argument("--n-best", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    opt = ap.parse_args()
    model = os.path.join(tempfile.mkdtemp(prefix="skfcrf_ab_decode_"), "model.npz")
    fit_model(opt.n_reports, model)
    old_tree = export_and_build(opt.rev)
    for what in opt.what:
        args = {"n_reports": opt.n_reports, "model": model, "what": what, "n_best": opt.n_best}
        a, b, same = [], [], True
        for _ in range(opt.rounds):
            ra, rb = (run_worker(tree, WORKER.format(bench=os.path.join(tree, "benchmarks")), args)
                      for tree in (old_tree, ROOT))
            a.append(ra["seconds"])
            b.append(rb["seconds"])
            same &= ra["hash"] == rb["hash"]
        ratios = np.array(a) / np.array(b)
        print(json.dumps({"what": what, "A_median_s": round(float(np.median(a)), 3),
                          "B_median_s": round(float(np.median(b)), 3),
                          "ratio_A_over_B_median": round(float(np.median(ratios)), 3),
                          "range": [round(float(ratios.min()), 3), round(float(ratios.max()), 3)],
                          "identical_outputs": bool(same)}), flush=True)


if __name__ == "__main__":
    main()
