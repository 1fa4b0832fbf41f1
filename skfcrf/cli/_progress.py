"""Progress bars with an ETA for the long work of the commands (``tqdm``, on stderr).

A bar is shown only when stderr is a terminal and ``--quiet`` is not given
(tqdm's ``disable=None``); ``force=True`` (tests) shows it on any file.  The
bars are transient (``leave=False``): the one-line summaries the commands print
afterwards stay the record of what happened.

* :func:`bar`: a plain ``tqdm`` bar (or a disabled one).
* :class:`FitProgress`: the ``callback`` of :class:`skfcrf.FactorialCRF`, one
  bar per fit, counting solver iterations against the most the fit can run in all
  its stages (:func:`fit_budget`; the bar ends early when a stage converges).
* :func:`fit_budget`: that most, stage by stage, for an estimator and its data.
* :func:`decode_with_progress`: :meth:`skfcrf.FactorialCRF.decode` over
  batches of sequences, the bar counting sequences; :func:`decode_data`, the
  same on the tokens of a data file, after a one-line message.
"""
import math
import sys
from collections import namedtuple

#: seconds between redraws: enough to follow, cheap next to an iteration
MIN_INTERVAL = 0.5


def _bar_class():
    """``tqdm`` without its monitor thread (``monitor_interval = 0``).

    The monitor only adjusts the redraw rate of bars whose updates suddenly slow
    down; ours redraw by time (``mininterval``) anyway, and a command (or a test)
    should leave no thread behind.
    """
    from tqdm import tqdm

    class Bar(tqdm):
        monitor_interval = 0

    return Bar


def bar(total, desc, *, quiet=False, unit="it", file=None, force=False):
    """A ``tqdm`` progress bar on ``file`` (default stderr).

    Parameters
    ----------
    total : int
    desc : str
    quiet : bool, default=False
        No bar (``--quiet``).
    unit : str, default="it"
    file : file-like, optional
        Default ``sys.stderr``.
    force : bool, default=False
        Show the bar even when ``file`` is not a terminal.

    Returns
    -------
    tqdm.tqdm
        Disabled (``.disable`` is True, updates cost nothing) when quiet or
        not on a terminal.
    """
    disable = True if quiet else (False if force else None)
    return _bar_class()(total=total, desc=desc, unit=unit, file=file if file is not None else sys.stderr,
                disable=disable, leave=False, dynamic_ncols=True, mininterval=MIN_INTERVAL)


class FitProgress:
    """Iteration bars for :class:`skfcrf.FactorialCRF` fits, through its ``callback``.

    ``progress.callback`` is a plain function (:func:`sklearn.base.clone`
    keeps it as it is, so a cloned estimator, e.g. one per cross-validation
    fold, reports to the same object).  The first iteration of a fit opens a
    bar described by ``desc(k)`` for the ``k``-th fit (``k`` from 1); call
    :meth:`finish` when the fit is done.  The bar shows the loss.

    Parameters
    ----------
    total : int or callable
        Upper bound of the iterations of one fit in all its stages
        (:attr:`FitBudget.total`), or ``total(k) -> int`` for the ``k``-th fit (one
        budget per cross-validation fold).
    desc : str or callable
        Bar description, or ``desc(k) -> str``.
    quiet, file, force
        As in :func:`bar`.
    """

    def __init__(self, total, desc, *, quiet=False, file=None, force=False):
        self.total = total
        self.desc = desc if callable(desc) else (lambda k: desc)
        self.quiet = quiet
        self.file = file
        self.force = force
        self.n_fits = 0
        self.current = None

        def callback(iteration, loss, coef):
            self._step(loss)

        self.callback = callback

    def _step(self, loss):
        if self.current is None:
            self.n_fits += 1
            total = self.total(self.n_fits) if callable(self.total) else self.total
            self.current = bar(total, self.desc(self.n_fits), quiet=self.quiet, unit="iter",
                               file=self.file, force=self.force)
        if not self.current.disable:
            self.current.set_postfix_str(f"loss {loss:.6g}", refresh=False)
            self.current.update(1)

    def finish(self):
        """Close the bar of the current fit (if any); the next iteration opens a new one."""
        if self.current is not None:
            self.current.close()
            self.current = None


class FitBudget(namedtuple("FitBudget", ["stages", "unit", "max_iter", "per_block"])):
    """The most iterations a :class:`skfcrf.FactorialCRF` fit can run, stage by stage.

    Attributes
    ----------
    stages : list of (str, int)
        ``(name, most iterations)`` of the stages the fit runs, in order: ``"first
        stage"`` (the objective), then ``"likelihood fine-tuning"`` and ``"joint-state
        transitions"`` where they apply.  Every stage may end early (converged).
    unit : str
        What the first stage counts: ``"iterations"``, or ``"epochs"`` for the online
        solvers (the later stages count L-BFGS iterations).
    max_iter : int
        The estimator's ``max_iter``.
    per_block : bool
        Whether the first stage is L-BFGS per chain (``objective="independent"``), whose
        cheaper chains may run a multiple of ``max_iter``
        (:meth:`skfcrf.solvers.BlockLBFGS.block_iterations`).
    """

    @property
    def total(self):
        """The most iterations in all stages (the sum over :attr:`stages`)."""
        return sum(n for _, n in self.stages)

    @property
    def first(self):
        """The most iterations of the first stage."""
        return self.stages[0][1]

    def describe(self):
        """``at most 320 iterations in all stages: 300 in the first stage (...), then 10
        of likelihood fine-tuning and 10 of joint-state transitions``."""
        first = f"{self.first}{' epochs' if self.unit == 'epochs' else ''} in the first stage"
        if self.per_block and self.first > self.max_iter:
            first += (f" (--max-iter {self.max_iter} per chain; a chain that costs at most 1/k "
                      "as much per iteration as the costliest may run k times as many)")
        elif self.per_block:
            first += f" (--max-iter {self.max_iter} per chain)"
        later = [f"{n} of {name}" for name, n in self.stages[1:]]
        text = f"at most {self.total} iterations in all stages: {first}"
        if later:
            text += ", then " + " and ".join(later)
        return text


def fit_budget(estimator, X, y):
    """The most iterations ``estimator.fit(X, y)`` can run, stage by stage.

    The first stage runs ``max_iter`` iterations (or epochs) at most, but L-BFGS per chain
    (``objective="independent"``) gives a chain that costs at most ``1/k`` as much per
    evaluation as the costliest ``k * max_iter`` (:class:`skfcrf.solvers.BlockLBFGS`): its
    budget depends on the data, so the training problem of ``X, y`` is built (on a clone,
    :func:`skfcrf.estimators.training_problem`: the observations encoded and the model's
    structure made, no solver run; a small cost next to training).  Likelihood
    fine-tuning (``finetune_iter``) follows an objective other than the likelihood when
    inference is exact; the joint-state transitions (``state_transition_iter``) follow
    the likelihood (trained or fine-tuned) of a model with joint-state transitions.

    Parameters
    ----------
    estimator : FactorialCRF
        Unfitted (or fitted: its parameters are what counts), with the settings of the fit;
        ``segment_encoding`` other than ``"bio"``, ``warm_start`` and ``calibration`` are
        not taken into account (no command line option sets them).
    X, y : list of sequences
        The training data, as ``fit`` gets it.

    Returns
    -------
    FitBudget
        Its :attr:`~FitBudget.total` bounds ``n_iter_`` after the fit (the callback is
        called once per iteration counted there).
    """
    from sklearn.base import clone

    from skfcrf.estimators import training_problem
    from skfcrf.inference import resolve_method
    from skfcrf.solvers import SEQUENCE_SOLVERS, BlockLBFGS, BlockObjective

    probe = clone(estimator).set_params(callback=None, verbose=0, warm_start=False)
    if probe.early_stopping:
        # the fit trains on all but the held-out sequences
        from skfcrf.estimators._early_stopping import validation_split

        X, y = list(X), list(y)
        train, _ = validation_split(len(X), probe.validation_fraction, probe.random_state)
        X, y = [X[i] for i in train], [y[i] for i in train]
    objective = training_problem(probe, X, y).objective
    online = probe.solver == "olbfgs" or probe.solver in SEQUENCE_SOLVERS
    per_block = not online and probe.l1 == 0 and isinstance(objective, BlockObjective)
    first = probe.max_iter
    if per_block:
        solver = BlockLBFGS(memory=probe.lbfgs_memory, max_iter=probe.max_iter, tol=probe.tol)
        first = int(solver.block_iterations(objective).max())
    stages = [("first stage", first)]
    exact = resolve_method(probe.inference, probe.graph_, probe.joint_states_).exact
    finetune = probe.finetune_iter > 0 and probe.objective != "likelihood" and exact
    if finetune:
        stages.append(("likelihood fine-tuning", probe.finetune_iter))
    likelihood = finetune or (probe.objective == "likelihood"
                              and probe.solver not in SEQUENCE_SOLVERS)
    if probe.state_transition_iter > 0 and likelihood and probe.layout_.n_state_pairs > 0:
        stages.append(("joint-state transitions", probe.state_transition_iter))
    return FitBudget(stages, "epochs" if online else "iterations", probe.max_iter, per_block)


def decode_with_progress(crf, X, *, quiet=False, desc="decoding", file=None, force=False,
                         n_updates=50):
    """``crf.decode(X)``, with a bar counting the decoded sequences.

    Without a bar this is one ``decode`` call; with one, ``X`` is decoded in
    about ``n_updates`` batches (at least 16 sequences each, so every batch
    still keeps the kernels' threads busy).  The records are the same either
    way: sequences are decoded independently.
    """
    X = list(X)
    b = bar(len(X), desc, quiet=quiet, unit="seq", file=file, force=force)
    if b.disable:
        b.close()
        return crf.decode(X)
    size = max(16, math.ceil(len(X) / n_updates))
    out = []
    try:
        for start in range(0, len(X), size):
            out.extend(crf.decode(X[start:start + size]))
            b.update(min(size, len(X) - start))
    finally:
        b.close()
    return out


def decode_data(crf, config, X, *, quiet=False, what="tagging", model_path="MODEL"):
    """The decodings of the tokens ``X`` read from a data file by a model of ``skfcrf train``
    (observations from its feature ``config``): a message ("``what`` N sequences..."), then
    :func:`decode_with_progress`.  Before decoding, the observations are checked against the
    model's (:func:`skfcrf.cli._files.check_observations`; ``model_path`` names the model
    and its features file in the error)."""
    from skfcrf.cli._common import counted, progress
    from skfcrf.cli._files import check_observations, features_from_config

    progress(f"{what} {counted(len(X), 'sequence')}...", quiet)
    Xf = features_from_config(config).transform(X)
    check_observations(crf, Xf, model_path)
    return decode_with_progress(crf, Xf, quiet=quiet)
