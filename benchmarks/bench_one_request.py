"""Issue 77, part 1: one request at a time -- tagging one sentence per call, vs CRFsuite.

CoNLL-2000 chunking with the sklearn-crfsuite tutorial's features (``word2features``
of ``bench_crfsuite_dropin.py``: word, lower-cased word, suffixes, shape flags, POS,
the same for the neighbours, BOS/EOS).  One chunk chain trained by
``sklearn_crfsuite.CRF`` and by the drop-in ``skfcrf.crfsuite.CRF`` (``c1``, ``c2``,
``max_iterations=100``, ``all_possible_transitions=True``), and by a default
``FactorialCRF(max_iter=100)`` on the same observations (a ``"name:value"`` key per
string attribute).  Then the 2,012 test sentences are tagged one call each, timed
per loop; every repeat alternates the contenders, the table shows the medians and
the ratio to CRFsuite's ``predict_single`` (per-call milliseconds in brackets):

- CRFsuite ``predict_single`` and ``predict_marginals_single``;
- the drop-in's ``predict_single`` and ``predict_marginals_single``;
- ``FactorialCRF.predict([x])``, ``predict_marginals([x])`` and ``decode([x])``;

then the batch ``predict`` of all the sentences by each.  One thread on every side.

    python benchmarks/bench_one_request.py [--repeat 5] [--models /tmp/models.pkl]

``--before DIR`` (a copy of an older tree, built in place) times both versions on
the same fitted models, in worker processes that alternate ``--rounds`` times: the
table then has a before and an after column and their ratio.  The models are
fitted once (by the working tree) and pickled; ``--models PATH`` keeps them
between runs.
"""
import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def numeric(token):
    """A tutorial token as ``FactorialCRF``'s numeric observations (CRFsuite's reading)."""
    return {(k + ":" + v if isinstance(v, str) else k): (1.0 if isinstance(v, str) else float(v))
            for k, v in token.items()}


def data():
    """Tutorial features and chunk labels of the CoNLL-2000 training and test sets."""
    from bench_crfsuite_dropin import sent2features

    from _conll import chain_labels, load
    X_train, y_train = load("train")
    X_test, y_test = load("test")
    return ([sent2features(s) for s in X_train], chain_labels(y_train, 1),
            [sent2features(s) for s in X_test], chain_labels(y_test, 1))


def fit_models(F_train, y_train, args):
    import sklearn_crfsuite

    from skfcrf import FactorialCRF, crfsuite
    settings = dict(algorithm="lbfgs", c1=args.c1, c2=args.c2, max_iterations=100,
                    all_possible_transitions=True)
    models = {}
    for name, module in (("crfsuite", sklearn_crfsuite), ("dropin", crfsuite)):
        t = time.perf_counter()
        models[name] = module.CRF(**settings).fit(F_train, y_train)
        print(f"fit {name}: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    models["fcrf"] = FactorialCRF(max_iter=100).fit(
        [[numeric(tok) for tok in s] for s in F_train], y_train)
    print(f"fit FactorialCRF: {time.perf_counter() - t:.1f} s", flush=True)
    return models


def per_call(models, F_test, with_crfsuite=True):
    """``{name: (loop over the sentences, one call each)}`` of every contender."""
    N_test = [[numeric(tok) for tok in s] for s in F_test]
    dropin, fcrf = models["dropin"], models["fcrf"]
    loops = {}
    if with_crfsuite:
        cs = models["crfsuite"]
        loops["CRFsuite predict_single"] = lambda: [cs.predict_single(x) for x in F_test]
        loops["CRFsuite predict_marginals_single"] = (
            lambda: [cs.predict_marginals_single(x) for x in F_test])
    loops["drop-in predict_single"] = lambda: [dropin.predict_single(x) for x in F_test]
    loops["drop-in predict_marginals_single"] = (
        lambda: [dropin.predict_marginals_single(x) for x in F_test])
    loops["FactorialCRF.predict([x])"] = lambda: [fcrf.predict([x]) for x in N_test]
    loops["FactorialCRF.predict_marginals([x])"] = (
        lambda: [fcrf.predict_marginals([x]) for x in N_test])
    loops["FactorialCRF.decode([x])"] = lambda: [fcrf.decode([x]) for x in N_test]
    if with_crfsuite:
        loops["CRFsuite predict (batch)"] = lambda: cs.predict(F_test)
    loops["drop-in predict (batch)"] = lambda: dropin.predict(F_test)
    loops["FactorialCRF.predict (batch)"] = lambda: fcrf.predict(N_test)
    return loops


def time_loops(loops, repeat):
    """Median seconds of every loop over ``repeat`` rounds, the loops alternating."""
    times = {name: [] for name in loops}
    for _ in range(repeat):
        for name, loop in loops.items():
            t = time.perf_counter()
            loop()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def check_batch(models, F_test):
    """The one-call results equal the batch ones (a sanity check of the benchmark)."""
    dropin = models["dropin"]
    batch = dropin.predict(F_test)
    assert all(dropin.predict_single(x) == list(b) for x, b in zip(F_test[:200], batch))


def show(medians, n, columns=None):
    ref = medians.get("CRFsuite predict_single")
    if columns is None:
        print(f"{'':40s} {'seconds':>8s} {'ms/call':>8s} {'/ CRFsuite':>10s}")
        for name, s in medians.items():
            ratio = f"{s / ref:10.2f}" if ref else ""
            print(f"{name:40s} {s:8.3f} {1000 * s / n:8.3f} {ratio}")
        return
    before, after = columns
    print(f"{'':40s} {'before s':>9s} {'after s':>8s} {'after/before':>12s} "
          f"{'after ms/call':>13s} {'after / CRFsuite':>16s}")
    for name in after:
        b, a = before.get(name), after[name]
        ab = f"{a / b:12.3f}" if b else f"{'':12s}"
        bs = f"{b:9.3f}" if b else f"{'':9s}"
        print(f"{name:40s} {bs} {a:8.3f} {ab} {1000 * a / n:13.3f} {a / ref:16.2f}")


def worker(args):
    with open(args.models, "rb") as fh:
        models = pickle.load(fh)
    _, _, F_test, _ = data()
    loops = per_call(models, F_test, with_crfsuite=args.with_crfsuite)
    print(json.dumps(time_loops(loops, args.repeat)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--models", help="pickle of the fitted models: read if it exists, else written")
    ap.add_argument("--before", help="an older tree (built in place) to time against")
    ap.add_argument("--rounds", type=int, default=3, help="with --before: alternations")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--with-crfsuite", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    F_train, y_train, F_test, _ = data()
    print(f"CoNLL-2000 chunking: {len(F_train)} training sentences, {len(F_test)} test "
          f"sentences ({sum(map(len, F_test))} tokens); one thread")
    if args.models and os.path.exists(args.models):
        with open(args.models, "rb") as fh:
            models = pickle.load(fh)
    else:
        models = fit_models(F_train, y_train, args)
        if args.models:
            with open(args.models, "wb") as fh:
                pickle.dump(models, fh)
    if args.before is None:
        check_batch(models, F_test)
        show(time_loops(per_call(models, F_test), args.repeat), len(F_test))
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = args.models or os.path.join(tmp, "models.pkl")
        if not args.models:
            with open(path, "wb") as fh:
                pickle.dump(models, fh)
        runs = {"before": [], "after": []}
        for r in range(args.rounds):
            for side, tree in (("before", args.before), ("after", ROOT)):
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, HERE]))
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--models", path,
                       "--repeat", str(args.repeat)] + (["--with-crfsuite"] if side == "after"
                                                        else [])
                out = subprocess.run(cmd, env=env, cwd=tmp, check=True, capture_output=True,
                                     text=True).stdout
                runs[side].append(json.loads(out.strip().splitlines()[-1]))
                print(f"round {r + 1} {side} done", flush=True)
    medians = {side: {name: statistics.median(run[name] for run in rs) for name in rs[0]}
               for side, rs in runs.items()}
    print(f"medians of {args.rounds} rounds x {args.repeat} repeats (before: {args.before})")
    show(medians["after"], len(F_test), columns=(medians["before"], medians["after"]))


if __name__ == "__main__":
    main()
