"""A/B timing of whole loss + gradient evaluations: the working tree against an earlier commit.

Exports ``--rev`` into a temporary directory and builds its extensions there, then runs
the same workload (one fit's training batch, random weights, repeated unpenalised
loss/gradient calls: the objective object's ``data_loss_gradient``, or
``FactorialCRF._loss_grad`` in revisions before the objective objects) with each version
in worker processes (BLAS on one thread, as in a fit), alternating A (``--rev``) and B
(working tree) ``--rounds`` times, so both see the same machine load. Prints per-round
medians, the median ratio, and each worker's peak RSS. Workloads: ``dictations`` (three
chains, pseudolikelihood, as target 3), ``conll1`` (chunks, likelihood, as target 1),
``conll2`` (POS + chunks from words, pseudolikelihood, as target 2).

    python benchmarks/ab_revisions.py --rev 3027f3d --workload dictations --n-reports 300 \\
        --n-jobs 2 --rounds 5 --repeat 3 [--objective independent]

``--objective`` replaces the workload's objective (e.g. ``independent``,
``chainwise``, ``likelihood``: the likelihood over the joint label states on
the dictations; ``deleted``, dictations only: the joint stage of a
``forbidden_transitions="backoff"`` fit, its deleted likelihood, with the seconds its
construction took).  The independent chains are evaluated with their coupling
weights at zero, as their solver does; ``--chains 0`` (with ``--objective
independent``) evaluates those chains' blocks alone, as the per-block solver does
once the other chains have used their iterations.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))


def export_and_build(rev):
    """``rev``'s tree in a temporary directory with its extensions built in place."""
    tmp = tempfile.mkdtemp(prefix="skfcrf_rev_")
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"], cwd=tmp,
                   check=True, capture_output=True)
    return tmp


WORKER = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
args = json.loads(sys.argv[1])
from skfcrf import FactorialCRF
if args["workload"] == "dictations":
    from skfcrf.datasets import make_dictations
    from _dictations import standard_features
    X, y = make_dictations(n_reports=args["n_reports"], style="rcg", random_state=0)
    X = standard_features().fit_transform(X)
    deleted = args["objective"] == "deleted"
    est = FactorialCRF(objective="chainwise" if deleted else args["objective"] or "pseudolikelihood",
                       min_instance_freq=2, n_jobs=args["n_jobs"],
                       **(dict(forbidden_transitions="backoff") if deleted else {{}}))
elif args["workload"] == "conll1":
    import math
    from _conll import load, chunk_observations, chain_labels
    X, y = load("train")
    X, y = chunk_observations(X), chain_labels(y, 1)
    est = FactorialCRF(objective=args["objective"] or "likelihood", sigma=1 / math.sqrt(2),
                       n_jobs=args["n_jobs"])
else:
    from _conll import load, word_observations
    X, y = load("train")
    X = word_observations(X)
    est = FactorialCRF(objective=args["objective"] or "pseudolikelihood", n_jobs=args["n_jobs"])
try:
    from skfcrf.estimators import training_problem
except ImportError:                      # a revision before the objective objects
    batch, theta0, seeds, _ = est._prepare_fit(X, y)
    evaluate = lambda theta: est._loss_grad(theta, batch, seeds, args["n_jobs"])
    uncoupled, setup = None, None
else:
    objective, theta0, _ = training_problem(est, X, y)
    setup = None
    if args["objective"] == "deleted":      # the back-off fit's joint stage
        t0 = time.perf_counter()
        objective = est._deleted_likelihood(objective)
        setup = time.perf_counter() - t0
        theta0 = np.zeros(objective.layout.n_params)
    evaluate = objective.data_loss_gradient
    uncoupled = getattr(objective, "_coupling", None)
theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)
if uncoupled is not None:
    theta[uncoupled] = 0.0          # the independent chains' weights: couplings at zero
if args.get("chains"):
    active = np.isin(np.arange(len(objective.blocks)), args["chains"])
    evaluate = lambda theta: (lambda r: (float(np.nansum(r[0])), r[1]))(
        objective.block_losses_gradient(theta, active))
# BLAS on one thread, as in a fit (FactorialCRF._train): otherwise its idle threads spin
# after every numpy product on the core the kernel's other thread needs
from threadpoolctl import threadpool_limits
with threadpool_limits(limits=1, user_api="blas"):
    evaluate(theta)                                           # warm-up
    times = []
    for _ in range(args["repeat"]):
        t0 = time.perf_counter()
        loss, grad = evaluate(theta)
        times.append(time.perf_counter() - t0)
print(json.dumps({{"times": times, "loss": loss, "grad_norm": float(np.linalg.norm(grad)),
                  "setup": setup,
                  "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20}}))
"""


def run_worker(tree, code, args):
    """Run the worker script ``code`` on ``args`` with ``tree``'s package; its last output line, as JSON."""
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, check=True,
                         capture_output=True, text=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def ab_parser(doc, timed):
    """The options of every A/B script: ``--rev``, ``--rounds``, ``--repeat`` (``timed``: what a
    worker times)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--rev", required=True, help="commit to compare against (A)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3, help=f"timed {timed} per worker")
    return ap


def run(tree, args):
    # each tree's own benchmark helpers (they follow that tree's package API)
    return run_worker(tree, WORKER.format(bench=os.path.join(tree, "benchmarks")), args)


def main():
    ap = ab_parser(__doc__, "evaluations")
    ap.add_argument("--workload", choices=["dictations", "conll1", "conll2"], default="dictations")
    ap.add_argument("--n-reports", type=int, default=300)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--objective", default=None,
                    help="objective= of the workload (default: the workload's own, above)")
    ap.add_argument("--chains", type=int, nargs="*", default=None,
                    help="with --objective independent: these chains' blocks alone")
    opt = ap.parse_args()
    old_tree = export_and_build(opt.rev)
    args = {"workload": opt.workload, "n_reports": opt.n_reports, "n_jobs": opt.n_jobs,
            "repeat": opt.repeat, "objective": opt.objective, "chains": opt.chains}
    a, b, ratios = [], [], []
    for r in range(opt.rounds):
        ra, rb = run(old_tree, args), run(ROOT, args)
        ma, mb = float(np.median(ra["times"])), float(np.median(rb["times"]))
        a.append(ma)
        b.append(mb)
        ratios.append(ma / mb)
        setup = (f"; set-up A {ra['setup']:.2f} s B {rb['setup']:.2f} s"
                 if ra.get("setup") is not None and rb.get("setup") is not None else "")
        print(f"round {r + 1}: A {ma:.3f} s  B {mb:.3f} s  x{ma / mb:.2f}  "
              f"(peak RSS A {ra['rss_gb']:.2f} GB, B {rb['rss_gb']:.2f} GB; "
              f"loss A {ra['loss']:.10g} B {rb['loss']:.10g}{setup})", flush=True)
    print(f"{opt.workload} n_jobs={opt.n_jobs}: A ({opt.rev}) median {np.median(a):.3f} s, "
          f"B (working tree) median {np.median(b):.3f} s, median ratio x{np.median(ratios):.2f} "
          f"(range x{min(ratios):.2f} to x{max(ratios):.2f})")


if __name__ == "__main__":
    main()
