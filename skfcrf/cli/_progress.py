"""Progress bars with an ETA for the long work of the commands (``tqdm``, on stderr).

A bar is shown only when stderr is a terminal and ``--quiet`` is not given
(tqdm's ``disable=None``); ``force=True`` (tests) shows it on any file.  The
bars are transient (``leave=False``): the one-line summaries the commands print
afterwards stay the record of what happened.

* :func:`bar`: a plain ``tqdm`` bar (or a disabled one).
* :class:`FitProgress`: the ``callback`` of :class:`skfcrf.FactorialCRF`, one
  bar per fit, counting solver iterations against the at most
  ``max_iter + finetune_iter`` (the bar ends early when the solver converges).
* :func:`decode_with_progress`: :meth:`skfcrf.FactorialCRF.decode` over
  batches of sequences, the bar counting sequences; :func:`decode_data`, the
  same on the tokens of a data file, after a one-line message.
"""
import math
import sys

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
    total : int
        Upper bound of the iterations of one fit (``max_iter``, plus
        ``finetune_iter`` when fine-tuning follows).
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
            self.current = bar(self.total, self.desc(self.n_fits), quiet=self.quiet, unit="iter",
                               file=self.file, force=self.force)
        if not self.current.disable:
            self.current.set_postfix_str(f"loss {loss:.6g}", refresh=False)
            self.current.update(1)

    def finish(self):
        """Close the bar of the current fit (if any); the next iteration opens a new one."""
        if self.current is not None:
            self.current.close()
            self.current = None


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
