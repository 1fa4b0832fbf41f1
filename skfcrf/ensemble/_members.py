"""What the ensembles ask of their members: marginals and labels, through a pipeline too.

A member is an estimator with ``predict_marginals`` and ``classes_`` (as
:class:`~skfcrf.FactorialCRF`, :class:`~skfcrf.structure.SegmentEncoded` and the
ensembles themselves have), or a :class:`~sklearn.pipeline.Pipeline` -- possibly
inside a :class:`~sklearn.frozen.FrozenEstimator` -- whose last step is one: its
other steps turn the raw input into that step's observations.  ``Pipeline`` has no
``predict_marginals`` of its own, so the steps are run here.
"""
import numpy as np

__all__ = ["has_marginals", "member_classes", "member_marginals", "one_chain", "split_pipeline",
           "transform_steps"]


def split_pipeline(estimator):
    """``(steps, last)``: the transforming steps of a pipeline and its last step.

    An estimator that is not a pipeline is ``([], estimator)``; ``None`` and
    ``"passthrough"`` steps are left out.
    """
    steps = getattr(estimator, "steps", None)
    if steps is None:
        return [], estimator
    return [s for _, s in steps[:-1] if s is not None and s != "passthrough"], steps[-1][1]


def transform_steps(steps, X):
    """``X`` through the fitted transformers ``steps`` in turn."""
    for step in steps:
        X = step.transform(X)
    return X


def has_marginals(estimator):
    """Whether ``estimator`` (or the last step of the pipeline it is) has ``predict_marginals``."""
    if hasattr(estimator, "predict_marginals"):
        return True
    return hasattr(split_pipeline(estimator)[1], "predict_marginals")


def member_marginals(estimator, X):
    """A fitted member's marginals of ``X``: per sequence, per chain ``(n_tokens, n_labels)``.

    A pipeline's transforming steps are applied first, then its last step's
    ``predict_marginals``.
    """
    if hasattr(estimator, "predict_marginals"):
        return estimator.predict_marginals(X)
    steps, last = split_pipeline(estimator)
    return last.predict_marginals(transform_steps(steps, X))


def member_classes(estimator):
    """The per-chain label arrays of a fitted member (a pipeline's last step's)."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        classes = split_pipeline(estimator)[1].classes_
    return [np.asarray(c, dtype=object) for c in classes]


def one_chain(estimator):
    """Whether a fitted member answers 1-D label sequences (fitted on one chain given 1-D)."""
    return bool(getattr(split_pipeline(estimator)[1], "_one_chain",
                        getattr(estimator, "_one_chain", False)))
