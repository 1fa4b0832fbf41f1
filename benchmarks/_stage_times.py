"""Where a fit's time goes, by stage: calls and seconds of the default fit's stage methods.

:func:`stage_times` wraps, for the duration of a ``with`` block, the methods that each
stage of the default staged fit calls once per evaluation or once per set-up, and counts
their calls and wall seconds (the wrappers call the originals unchanged, so the fit's
results are the same).  ``print_stage_times`` prints them in the fit's order.

    with stage_times() as times:
        crf.fit(F, y)
    print_stage_times(times)
"""
import contextlib
import functools
import time

from skfcrf.estimators import FactorialCRF
from skfcrf.objectives._backoff import ChainBackoffStage, DeletedLikelihood, HeldStage
from skfcrf.objectives._chainwise import IndependentChains
from skfcrf.objectives._likelihood import Likelihood, StateTransitionStage

#: (label, class, method) in the order the default fit reaches them.
STAGES = (
    ("encoding the training data", FactorialCRF, "_encode_training_data"),
    ("first stage: evaluations", IndependentChains, "block_losses_gradient"),
    ("back-off set-up: deleted likelihood", DeletedLikelihood, "__init__"),
    ("back-off set-up: chain stage", ChainBackoffStage, "__init__"),
    ("back-off set-up: chain stage solve", ChainBackoffStage, "solve"),
    ("fine-tuning: evaluations (back-off)", DeletedLikelihood, "loss_gradient"),
    ("fine-tuning: evaluations (closed)", Likelihood, "loss_gradient"),
    ("transition stage: set-up (back-off)", HeldStage, "__init__"),
    ("transition stage: evaluations (back-off)", HeldStage, "loss_gradient"),
    ("transition stage: evaluations (closed)", StateTransitionStage, "loss_gradient"),
)


@contextlib.contextmanager
def stage_times():
    """Count calls and seconds of :data:`STAGES`' methods inside the block: yields a
    dict label -> ``[calls, seconds]``.  A call inside another counted call of the same
    label (a subclass's method calling its parent's) is not counted again."""
    times = {label: [0, 0.0] for label, _, _ in STAGES}
    originals = []
    for label, cls, name in STAGES:
        original = cls.__dict__.get(name)
        if original is None:          # inherited: wrap what the class resolves
            original = getattr(cls, name)
            originals.append((cls, name, None))
        else:
            originals.append((cls, name, original))
        setattr(cls, name, _counted(original, times[label]))
    try:
        yield times
    finally:
        for cls, name, original in originals:
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


def _counted(method, cell):
    depth = [0]

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if depth[0]:
            return method(*args, **kwargs)
        depth[0] += 1
        t0 = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            cell[0] += 1
            cell[1] += time.perf_counter() - t0
            depth[0] -= 1
    return wrapper


def print_stage_times(times):
    """One line per stage that ran: calls, seconds, seconds a call."""
    print("stage times (calls, seconds):")
    for label, (calls, seconds) in times.items():
        if calls:
            print(f"  {label}: {calls} x, {seconds:.1f} s ({seconds / calls:.3f} s each)")
