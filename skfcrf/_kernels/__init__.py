"""The compiled kernels and the thin Python modules that lay out their inputs.

This package owns the hot loops (Cython, typed memoryviews, ``nogil``) and the
data layouts they read; it knows nothing of estimators, objectives objects or
inference methods, which call it.

==========================  ===================================================
module                      what it holds
==========================  ===================================================
:mod:`.graph`               ``Graph``: chains and edge templates; the flat
                            pairwise layout (``pair_layout``) and token helpers
:mod:`._contract`           the typed inputs every kernel takes (one contract):
                            ``Links``, ``ProductSpace``, ``TrpLayout``,
                            ``ParameterTables``, ``JointTables``; the block
                            partition of sequences
:mod:`._alloc`              checked scratch memory and the ``Carver`` that lays
                            out per-thread scratch
:mod:`.batch`               marginals and MAP over a batch: one chain, the
                            product space (``_chain``, ``_exact``) and TRP
                            (``_trp``)
:mod:`.joint`               forward-backward and Viterbi over joint label states
                            (``_joint``)
:mod:`.states`              computations over a chain of states: exact and
                            chain-wise n-best (``_nbest``), max-marginals,
                            forward ``log Z``, log-domain fallbacks, labelling
                            scores
``_chainwise``,             fused loss + gradient of the chain-wise,
``_pseudolikelihood``,      pseudolikelihood and feature-table kernels (called
``_features``               by :mod:`skfcrf.objectives`)
``_online``                 whole epochs of the online trainers (SGD,
                            perceptron, PA, AROW) on one chain (called by
                            :class:`skfcrf.objectives.SequenceTerms`)
``_simd``, ``_align``       SIMD helpers; the transcript-alignment table
``_dicts``                  observation dicts read into CSR arrays (holds the
                            GIL: it reads Python objects)
==========================  ===================================================
"""
