"""A/B timing of one Cython kernel: the working tree's against an earlier commit's.

Compiles ``skfcrf/_kernels/<kernel>.pyx`` as of ``--rev`` under another module name
in a temporary directory, then times the two on the same inputs, alternating
A and B, in one process.  Prints medians and the ratio.

    python benchmarks/ab_kernel.py pseudolikelihood --rev b0c27e5 --workload conll2 --repeat 5
    python benchmarks/ab_kernel.py joint --rev 7de5f1b --n-reports 300 --repeat 5
    python benchmarks/ab_kernel.py joint --rev 7de5f1b --model /tmp/seed.npz --n-jobs 2

``joint --model MODEL``: instead of the random model, the potentials of a model saved
by ``bench_dictations_seed.py --save MODEL`` on the seed-scale test reports (the
default model's sparse joint-state transitions; decoding's Viterbi and ``log Z``, and
the training stage's marginals).

``chainwise`` times the chain-wise kernel (``chainwise_objective``) inside an
objective object on ``--n-reports`` dictations (``--objective independent``, the
default fit's first stage, or ``chainwise``), swapping the old function in for A:

    python benchmarks/ab_kernel.py chainwise --rev 8ee3812 --n-reports 600 --n-jobs 2

``--chains 0`` (with ``--objective independent``) times those chains' blocks alone
(``block_losses_gradient(theta, active)``), as the per-block solver evaluates them.

``objective`` times the fused training objective (``pseudolikelihood_objective``
of the same module: feature products, pseudolikelihood and gradient mapping)
through the ``PseudoLikelihood`` objective object, swapping the old function in for A.
"""
import argparse
import ast
import importlib
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _absolute_cimports(text):
    """The rev's sources cimport the copied headers without the package (relative
    cimports made absolute); compiled modules with a .pxd (the allocator, the typed
    structure) are cimported and imported from the installed package instead."""
    for compiled in ("_alloc", "_contract"):
        for verb in ("cimport", "import"):
            text = text.replace(f"from .{compiled} {verb}", f"from skfcrf._kernels.{compiled} {verb}")
    return text.replace("from ._", "from _")


def compile_args():
    """The kernels' compiler flags, ``COMPILE_ARGS`` of the working tree's ``setup.py``
    (a literal list there), so that both builds of an A/B round the same way."""
    with open(os.path.join(ROOT, "setup.py")) as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "COMPILE_ARGS"):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("setup.py has no COMPILE_ARGS list")


def build_old(kernel, rev):
    src = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:skfcrf/_kernels/_{kernel}.pyx"],
                         check=True, capture_output=True, text=True).stdout
    tmp = tempfile.mkdtemp(prefix="skfcrf_ab_")
    name = f"_{kernel}_old"
    with open(os.path.join(tmp, f"{name}.pyx"), "w") as fh:
        fh.write(_absolute_cimports(src))
    for pxd in ("_common.pxd", "_table.pxd", "_simd.h", "_vexp.h"):
        got = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:skfcrf/_kernels/{pxd}"],
                             capture_output=True, text=True)
        if got.returncode == 0:
            with open(os.path.join(tmp, pxd), "w") as fo:
                fo.write(_absolute_cimports(got.stdout))
    setup = f"""
import numpy as np
from setuptools import setup, Extension
from Cython.Build import cythonize
setup(ext_modules=cythonize([Extension("{name}", ["{name}.pyx"], include_dirs=[np.get_include()],
      extra_compile_args={compile_args() + ["-fopenmp"]!r}, extra_link_args=["-fopenmp"])],
      include_path=[{ROOT!r}],
      compiler_directives=dict(language_level=3, boundscheck=False, wraparound=False,
                               cdivision=True, initializedcheck=False)))
"""
    with open(os.path.join(tmp, "setup.py"), "w") as fh:
        fh.write(setup)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp, check=True,
                   capture_output=True)
    sys.path.insert(0, tmp)
    return importlib.import_module(name)


def conll2_workload(n_jobs):
    """Potentials of a two-chain (POS 44, chunk 23) FCRF over CoNLL-2000 train, random weights."""
    sys.path.insert(0, os.path.dirname(__file__))
    from skfcrf import FactorialCRF
    from skfcrf.estimators import training_problem

    from _conll import load, word_observations
    X, y = load("train")
    est = FactorialCRF(n_jobs=n_jobs)
    objective, theta0, _ = training_problem(est, word_observations(X), y)
    batch = objective.batch
    theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)
    unary, pair, eo = est.layout_.potentials(theta, batch.obs, n_jobs, est.forbidden_)
    return est.graph_, batch.seq_ptr, unary, pair, eo, batch.gold


def dictations_workload(n_jobs, n_reports=300):
    """Potentials of the three-chain dictation FCRF (7, 72, 44 labels), random weights."""
    from skfcrf import FactorialCRF
    from skfcrf.datasets import make_dictations
    from skfcrf.estimators import training_problem
    sys.path.insert(0, os.path.dirname(__file__))
    from _dictations import standard_features
    X, y = make_dictations(n_reports=n_reports, style="rcg", random_state=0)
    F = standard_features().fit_transform(X)
    est = FactorialCRF(min_instance_freq=2, n_jobs=n_jobs)
    objective, theta0, _ = training_problem(est, F, y)
    batch = objective.batch
    theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)
    unary, pair, eo = est.layout_.potentials(theta, batch.obs, n_jobs, est.forbidden_)
    return est.graph_, batch.seq_ptr, unary, pair, eo, batch.gold


def ab_objective(args):
    """A/B of the fused pseudolikelihood kernel inside the PseudoLikelihood objective object."""
    import skfcrf.model._layout as model
    from skfcrf import FactorialCRF
    from skfcrf.estimators import training_problem
    old = build_old("pseudolikelihood", args.rev)
    sys.path.insert(0, os.path.dirname(__file__))
    if args.workload == "dictations":
        from skfcrf.datasets import make_dictations

        from _dictations import standard_features
        X, y = make_dictations(n_reports=300, style="rcg", random_state=0)
        X = standard_features().fit_transform(X)
        est = FactorialCRF(objective="pseudolikelihood", min_instance_freq=2, n_jobs=args.n_jobs)
    else:
        from _conll import load, word_observations
        X, y = load("train")
        X = word_observations(X)
        est = FactorialCRF(objective="pseudolikelihood", n_jobs=args.n_jobs)
    objective, theta0, _ = training_problem(est, X, y)
    theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)
    fns = {"old": old.pseudolikelihood_objective, "new": model.pseudolikelihood_objective}

    def evaluate(label):
        model.pseudolikelihood_objective = fns[label]
        try:
            return objective.data_loss_gradient(theta)
        finally:
            model.pseudolikelihood_objective = fns["new"]

    (la, ga), (lb, gb) = evaluate("old"), evaluate("new")
    print(f"loss old {la:.6f} new {lb:.6f}; max gradient difference {np.abs(ga - gb).max():.3g}")
    times = {"old": [], "new": []}
    for _ in range(args.repeat):
        for label in ("old", "new"):
            t = time.perf_counter()
            evaluate(label)
            times[label].append(time.perf_counter() - t)
    mo, mn = np.median(times["old"]), np.median(times["new"])
    print(f"objective on {args.workload}, n_jobs={args.n_jobs}: old ({args.rev}) median {mo:.3f} s, "
          f"new median {mn:.3f} s, speed-up x{mo / mn:.2f}")


def same(a, b):
    """Whether two results (arrays, numbers, tuples or lists of them) are bit-identical."""
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, np.ndarray):
        return same(sorted(vars(a).items()), sorted(vars(b).items()))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b or (isinstance(a, float) and np.isnan(a) and np.isnan(b))


def largest_relative(out):
    """Largest relative difference between the float arrays of ``out["old"]`` and ``out["new"]``."""
    pairs = zip(out["old"], out["new"]) if isinstance(out["old"], (tuple, list)) else [
        (out["old"], out["new"])]
    return max((float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-300), initial=0.0))
                for x, y in pairs if isinstance(x, np.ndarray) and x.dtype.kind == "f"),
               default=0.0)


def ab(name, swap, call, repeat):
    """A/B of ``call()`` (which returns its results) with ``swap(label)`` installing the
    ``"old"`` or ``"new"`` code, alternating ``repeat`` times: whether the results agree,
    and wall and CPU medians."""
    out = {}
    for label in ("old", "new"):
        swap(label)
        out[label] = call()
    print(f"{name}: results " + ("bit-identical" if same(out["old"], out["new"]) else
                                 f"differ (largest relative {largest_relative(out):.1e})"))
    wall = {"old": [], "new": []}
    cpu = {"old": [], "new": []}
    for _ in range(repeat):
        for label in ("old", "new"):
            swap(label)
            t, c = time.perf_counter(), time.process_time()
            call()
            wall[label].append(time.perf_counter() - t)
            cpu[label].append(time.process_time() - c)
    swap("new")
    for kind, d in (("wall", wall), ("cpu", cpu)):
        mo, mn = np.median(d["old"]), np.median(d["new"])
        print(f"  {kind}: old median {mo:.4f} s, new median {mn:.4f} s, old/new x{mo / mn:.3f}")


def ab_chainwise(args):
    """A/B of the chain-wise kernel inside the ``--objective`` object
    (:class:`~skfcrf.objectives.IndependentChains` or the chain-wise objective; random
    weights) on the dictation FCRF."""
    import skfcrf.objectives._chainwise as module
    from skfcrf import FactorialCRF
    from skfcrf.datasets import make_dictations
    from skfcrf.estimators import training_problem

    from _dictations import standard_features
    fns = {"old": build_old("chainwise", args.rev).chainwise_objective,
           "new": module.chainwise_objective}
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=0)
    est = FactorialCRF(objective=args.objective, min_instance_freq=2, n_jobs=args.n_jobs)
    objective, theta0, _ = training_problem(est, standard_features().fit_transform(X), y)
    theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)

    def swap(label):
        module.chainwise_objective = fns[label]

    print(f"dictations {args.n_reports}, n_jobs={args.n_jobs}, old = {args.rev}")
    if args.chains:
        # those chains' blocks alone, as the per-block solver evaluates them once the
        # costlier chains have used their iterations
        active = np.isin(np.arange(len(objective.blocks)), args.chains)
        ab(f"{type(objective).__name__}.block_losses_gradient, chains {args.chains}", swap,
           lambda: objective.block_losses_gradient(theta, active), args.repeat)
        return
    ab(f"{type(objective).__name__}.data_loss_gradient", swap,
       lambda: objective.data_loss_gradient(theta), args.repeat)


def old_joint_wrapper(rev):
    """``rev``'s ``skfcrf._kernels.joint`` (the Python wrapper) over ``rev``'s compiled kernel."""
    src = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:skfcrf/_kernels/joint.py"],
                         check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("joint_old")
    exec(compile(src, "joint_old.py", "exec"), module.__dict__)
    kernel = build_old("joint", rev)
    module._kernel = lambda: kernel
    return module


def ab_joint_model(args):
    """A/B of exact joint-state inference on a saved seed-scale model's potentials of the
    669 seed-scale test reports."""
    import skfcrf._kernels.joint as new
    from skfcrf import FactorialCRF
    from skfcrf.datasets import make_dictations

    from _dictations import standard_features
    modules = {"old": old_joint_wrapper(args.rev), "new": new}
    X, _ = make_dictations(2007, style="rcg", random_state=1)
    F = standard_features().fit(X[:1338]).transform(X[1338:])
    crf = FactorialCRF.load(args.model).set_params(n_jobs=args.n_jobs)
    seq_ptr, unary, pair, method = crf._inference_inputs(F)
    current = {}

    def swap(label):
        current["m"] = modules[label]

    args_ = (method.graph, method.joint_states, seq_ptr, unary, pair, args.n_jobs)
    kw = dict(state_trans=method.state_trans, backoff=method.backoff)
    print(f"{args.model} on the 669 seed-scale test reports, n_jobs={args.n_jobs}, "
          f"old = {args.rev}")
    ab("joint_map", swap, lambda: current["m"].joint_map(*args_, **kw), args.repeat)
    ab("joint_log_partition", swap,
       lambda: current["m"].joint_log_partition(*args_, **kw), args.repeat)
    ab("joint_marginals (pair marginals)", swap, lambda: current["m"].joint_marginals(
        *args_, pair_marginals=True, **kw), args.repeat)


def ab_joint(args):
    """A/B of exact joint-state inference (wrapper and kernel of ``--rev`` against the
    working tree's) on the dictation FCRF's potentials, with random joint-state
    transition weights as the default model has."""
    import skfcrf._kernels.joint as new
    from skfcrf._kernels.joint import joint_states_from_labels
    modules = {"old": old_joint_wrapper(args.rev), "new": new}
    graph, seq_ptr, unary, pair, eo, gold = dictations_workload(args.n_jobs, args.n_reports)
    states = joint_states_from_labels(gold)
    V = np.random.default_rng(1).normal(scale=0.1, size=(len(states), len(states)))
    current = {}

    def swap(label):
        current["m"] = modules[label]

    print(f"dictations {args.n_reports}, n_jobs={args.n_jobs}, old = {args.rev}")
    ab("joint_marginals", swap, lambda: current["m"].joint_marginals(
        graph, states, seq_ptr, unary, pair, args.n_jobs, pair_marginals=True,
        state_trans=V, state_pairs=True), args.repeat)
    ab("joint_map", swap, lambda: current["m"].joint_map(
        graph, states, seq_ptr, unary, pair, args.n_jobs, state_trans=V), args.repeat)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel", choices=["pseudolikelihood", "objective", "joint", "chainwise"])
    ap.add_argument("--rev", required=True)
    ap.add_argument("--workload", default="conll2", choices=["conll2", "dictations"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--n-reports", type=int, default=300,
                    help="dictation reports (joint, chainwise)")
    ap.add_argument("--chains", type=int, nargs="*", default=None,
                    help="chainwise --objective independent: these chains' blocks alone")
    ap.add_argument("--objective", default="independent", choices=["independent", "chainwise"],
                    help="chainwise: the objective the kernel runs in")
    ap.add_argument("--model", default=None,
                    help="joint: a model saved by bench_dictations_seed.py --save")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    from skfcrf._kernels._alloc import reusing_scratch
    threadpool_limits(1, user_api="blas")   # as FactorialCRF.fit does
    # and as a fit, the kernels' scratch kept from one call to the next: otherwise every
    # call maps and zeroes fresh pages, a cost that varies from call to call
    with reusing_scratch():
        return dispatch(args)


def dispatch(args):
    """The A/B that ``args.kernel`` names."""
    if args.kernel == "objective":
        return ab_objective(args)
    if args.kernel == "chainwise":
        sys.path.insert(0, os.path.dirname(__file__))
        return ab_chainwise(args)
    if args.kernel == "joint":
        return ab_joint_model(args) if args.model else ab_joint(args)
    old = build_old(args.kernel, args.rev)
    new = importlib.import_module(f"skfcrf._kernels._{args.kernel}")
    work = (conll2_workload if args.workload == "conll2" else dictations_workload)(args.n_jobs)
    fn_old, fn_new = getattr(old, args.kernel), getattr(new, args.kernel)
    la, _, _ = fn_old(*work, n_threads=args.n_jobs)
    lb, _, _ = fn_new(*work, n_threads=args.n_jobs)
    print(f"loss old {la.sum():.6f} new {lb.sum():.6f}")
    times = {"old": [], "new": []}
    for _ in range(args.repeat):
        for label, fn in (("old", fn_old), ("new", fn_new)):
            t = time.perf_counter()
            fn(*work, n_threads=args.n_jobs)
            times[label].append(time.perf_counter() - t)
    mo, mn = np.median(times["old"]), np.median(times["new"])
    print(f"{args.kernel} on {args.workload}, n_jobs={args.n_jobs}: old ({args.rev}) median {mo:.3f} s, "
          f"new median {mn:.3f} s, speed-up x{mo / mn:.2f}")


if __name__ == "__main__":
    main()
