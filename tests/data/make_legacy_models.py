"""Writes the format-1 model files of tests/data/ with skfcrf 0.1.0.

``model_v1_names.npz``: two chains, observation names, a forbidden transition;
``model_v1_matrix.npz``: one chain given as 1-D labels, matrix observations.
Run from an extract of commit 23ea604 (skfcrf 0.1.0) with its kernels built::

    git archive 23ea604 | tar -x -C /tmp/v010 && cd /tmp/v010
    python setup.py build_ext --inplace
    PYTHONPATH=/tmp/v010 python <this file> OUT_DIR

It prints the predictions of both models on their training data, which
tests/test_model_files.py checks today's code reproduces.
"""
import os
import sys

import numpy as np
import scipy.sparse as sp

from skfcrf import FactorialCRF

X = [[["w=the", "cap=0"], ["w=cat", "cap=0"], ["w=sat", "cap=0"]],
     [["w=A", "cap=1"], ["w=dog", "cap=0"]],
     [["w=the", "cap=0"], ["w=dog", "cap=0"], ["w=ran", "cap=0"]]]
y = [[("DT", "B"), ("NN", "I"), ("VB", "O")],
     [("DT", "B"), ("NN", "I")],
     [("DT", "B"), ("NN", "I"), ("VB", "O")]]
est = FactorialCRF(max_iter=30, random_state=0,
                   forbidden_transitions=[None, [("O", "I")]]).fit(X, y)
est.save(os.path.join(sys.argv[1], "model_v1_names.npz"))
print([p.tolist() for p in est.predict(X)])

Xm = [sp.csr_matrix(np.array([[1.0, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0]])),
      sp.csr_matrix(np.array([[1.0, 0, 0, 0], [0, 0, 1, 1]]))]
ym = [[1, 2, 3], [1, 3]]
est = FactorialCRF(max_iter=30, random_state=0).fit(Xm, ym)
est.save(os.path.join(sys.argv[1], "model_v1_matrix.npz"))
print([p.tolist() for p in est.predict(Xm)])
