"""The default ``FactorialCRF()`` on the dictation benchmark: fit seconds and joint accuracy.

``make_dictations(300, "rcg", random_state=1)``, the first 200 reports to train, the
other 100 to test, ``make_dictation_features()``, ``sigma=31.6``, ``n_jobs=2`` (the data
of ``bench_calibration.py --task dictations``).  Prints the package it imported, the fit
seconds, the joint accuracy and the fitted ``transitions_["world"]`` ("old" for a
revision without it), so that two revisions can be timed in turn as whole processes:

    python benchmarks/bench_default_fit.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_default_fit.py
"""
import time
import warnings

import skfcrf
from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import joint_accuracy
from skfcrf.transformers import make_dictation_features


def main():
    warnings.simplefilter("ignore")
    X, y = make_dictations(300, style="rcg", random_state=1)
    F = make_dictation_features().fit_transform(X)
    t0 = time.perf_counter()
    crf = FactorialCRF(sigma=31.6, n_jobs=2).fit(F[:200], y[:200])
    seconds = time.perf_counter() - t0
    world = (getattr(crf, "transitions_", None) or {"world": "old"})["world"]
    print(f"{skfcrf.__file__}: fit {seconds:.2f} s, joint "
          f"{joint_accuracy(y[200:], crf.predict(F[200:])):.4f}, transitions {world}", flush=True)


if __name__ == "__main__":
    main()
