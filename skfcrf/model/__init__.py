"""What a model is: its graph, parameter layout, labels and constraints, and how they are built.

This package owns the model's structure, below the training objectives, the
inference methods' callers and the estimator:

=============================  ===============================================
module                         what it holds
=============================  ===============================================
:mod:`._layout`                ``ParameterLayout`` (where every weight lives in
                               ``theta``, the potentials and their gradient),
                               ``GoldStatistics``, ``build_graph``
:mod:`._observation_rows`      the sparse observation rows the kernels read
:mod:`._labels`                label sets and encoding, couplings, the forbidden
                               transitions and couplings (masks)
:mod:`._fixed`                 fixed labels (``decode(fixed=)``, partial ``y``):
                               encoding, clamping, constraint checks
:mod:`._partial`               partial labels: label combinations given, completing
                               missing labels
:mod:`._memory`                the memory a fit needs, and the guard
:mod:`._building`              one model-building pipeline: statistics gathered per
                               batch of sequences, merged, then ``build_model``
                               (forbidden-transitions rule, memory guard) -- a
                               local fit is the one-batch case of a Dask fit
:mod:`._inspection`            reading weights back: ``top_weights``, weight masks
=============================  ===============================================

It depends on :mod:`skfcrf._kernels` and :mod:`skfcrf.inference` only.
"""
