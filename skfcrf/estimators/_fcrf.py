"""The :class:`FactorialCRF` estimator.

``fit`` reads: validate the parameters and the data -> encode observations and
labels -> build the model structure (graph, parameter layout, constraints) from
the training set's statistics, as a one-batch case of the pipeline a Dask fit
runs per partition (:mod:`skfcrf.model._building`) ->
an objective object (:mod:`skfcrf.objectives`) -> a solver (:mod:`skfcrf.solvers`) ->
fitted attributes.  Prediction asks the model's inference method
(:mod:`skfcrf.inference`) and never changes the estimator.
"""
import copy
import inspect
import numbers
import warnings
import weakref
from collections import namedtuple

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, RealNotInt, StrOptions
from threadpoolctl import threadpool_info

from skfcrf._blas import single_blas_thread
from skfcrf._kernels._alloc import reusing_scratch
from skfcrf._kernels.graph import IN_CHAIN
from skfcrf._kernels.joint import state_index
from skfcrf._validation import check_label_sequences
from skfcrf.estimators._anchoring import MIN_SEQUENCES, anchors_record, choose_anchors
from skfcrf.estimators._calibration import (
    calibration_folds,
    fit_temperature,
    held_out_targets,
    temper,
)
from skfcrf.estimators._early_stopping import (
    EarlyStopping,
    validation_scorer,
    validation_split,
)
from skfcrf.estimators._observations import ObservationEncoder
from skfcrf.estimators._persistence import load as _load_model
from skfcrf.estimators._persistence import save as _save_model
from skfcrf.inference import METHODS, SequenceDecoding, resolve_method
from skfcrf.inference._anchors import anchored_labels
from skfcrf.metrics._accuracy import joint_accuracy
from skfcrf.model._building import (
    StructureStatistics,
    build_model,
    collect_options,
    model_graph,
    select_sequences,
    transitions_choice,
)
from skfcrf.model._fixed import check_fixed, encode_fixed
from skfcrf.model._inspection import top_weights as _top_weights
from skfcrf.model._labels import edge_name, encode_labels, label_sets, merge_label_sets
from skfcrf.model._layout import SUPPORT_MODES, TRANSITION_MODES, check_gold_allowed
from skfcrf.model._partial import complete_labels, labelled_sequences
from skfcrf.objectives import (
    OBJECTIVES,
    Likelihood,
    SequenceTerms,
    StateTransitionStage,
    TrainingBatch,
)
from skfcrf.objectives._backoff import DeletedLikelihood, fold_backoff, fold_state_pair_counts
from skfcrf.solvers import (
    LBFGS,
    OWLQN,
    SEQUENCE_SOLVERS,
    SGD,
    SOLVERS,
    BlockLBFGS,
    BlockObjective,
    ConvergenceMonitor,
    OnlineLBFGS,
    warn_if_not_converged,
)

#: What :func:`training_problem` returns: the objective ``fit`` minimises, the
#: starting weights and the random state the solver draws from.
TrainingProblem = namedtuple("TrainingProblem", ["objective", "theta0", "random_state"])

#: ``max_iter``'s default: reaching it in the first stage of the staged default fit
#: (``objective="independent"``, ``solver="lbfgs"``) is by design and gives no warning.
DEFAULT_MAX_ITER = 100

#: Where the back-off weights (``forbidden_transitions="backoff"``) start before
#: each chain's deleted likelihood moves them (:class:`~skfcrf.objectives._backoff.
#: ChainBackoffStage`): a transition without a weight of its own ``exp(-5)`` times
#: less likely than an average one.
BACKOFF_START = -5.0

_POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")
_POSITIVE_REAL = Interval(numbers.Real, 0, None, closed="neither")


class FactorialCRF(BaseEstimator):
    """Factorial conditional random field: several coupled label chains over one sequence.

    Each chain has a unary and an in-chain pairwise clique template; coupled
    chain pairs share a between-chain pairwise template at every token; all
    weights are tied across time.  By default training is staged: every chain
    alone by its exact likelihood (``objective="independent"``), then the
    couplings by the exact joint likelihood over the label combinations seen in
    training (``finetune_iter``); decoding is exact, over one chain or those
    joint label states (``inference="auto"``), with loopy belief propagation
    (TRP) only where exact inference does not apply.

    Parameters
    ----------
    sigma : float, default=10.0
        Standard deviation of the Gaussian prior: the penalty is
        ``sum(w**2) / (2 * sigma**2)``.  ``np.inf`` disables it.
    l1 : float, default=0.0
        L1 penalty per unit of ``|w|``: ``l1 * sum(|w|)`` is added to the
        Gaussian penalty (elastic net with both; ``sigma=np.inf`` for L1
        alone), which drives many weights to exactly zero (``n_nonzero_``).
        With ``l1 > 0`` every L-BFGS stage (the ``objective``'s, the
        fine-tuning and the joint-state transition stages) is trained by
        OWL-QN (Andrew & Gao 2007), which has the same stopping tests; with
        the ``"independent"`` objective one OWL-QN runs over all the chains
        (the penalty is not split per chain as ``BlockLBFGS`` splits the
        loss).  ``solver="olbfgs"`` does not support it (``ValueError``).
        0 trains exactly as without the parameter.
    objective : {"independent", "chainwise", "pseudolikelihood", "likelihood"}, \
            default="independent"
        ``"independent"``: every chain's exact likelihood without the
        couplings (the coupling weights stay at zero: independent chains,
        the likelihood itself for one chain); the fine-tuning stage
        (``finetune_iter``) then learns the couplings by the exact joint
        likelihood.  ``"chainwise"``: chain-wise (blocked) pseudolikelihood,
        each chain's exact conditional likelihood given the other chains'
        gold labels.  ``"pseudolikelihood"``:
        factor-based pseudolikelihood (each factor conditioned on its Markov
        blanket under the gold labels).  ``"likelihood"``: likelihood with
        marginals from the ``inference`` method (exact for one chain, exact
        over the joint label states, or TRP sum-product).  See the user guide
        for the measured trade-offs.
    solver : {"lbfgs", "olbfgs", "sgd", "perceptron", "passive_aggressive", "arow"}, \
            default="lbfgs"
        Batch L-BFGS (:class:`~skfcrf.solvers.LBFGS`: the steps of scipy's
        L-BFGS-B) or online L-BFGS over mini-batches.  With
        ``"lbfgs"`` the ``"independent"`` objective runs one L-BFGS per chain
        (``BlockLBFGS``), the chains evaluated together.  CRFsuite's online
        trainers, one sequence at a time, over the whole model (they need
        ``objective="likelihood"``, exact ``inference`` -- one chain or the
        joint label states, the default -- and every label given; they run no
        later stage): ``"sgd"``, SGD on the penalised likelihood with a
        calibrated step size (:class:`~skfcrf.solvers.SGD`, CRFsuite's
        ``l2sgd``; ``eta0`` is the calibration's first candidate, ``tol`` its
        ``delta``); ``"perceptron"``, the averaged structured perceptron
        (:class:`~skfcrf.solvers.AveragedPerceptron`, ``ap``);
        ``"passive_aggressive"``, structured PA, PA-I or PA-II
        (:class:`~skfcrf.solvers.PassiveAggressive`, ``pa``); ``"arow"``,
        AROW with a diagonal covariance (:class:`~skfcrf.solvers.AROW`).  The
        three margin trainers ignore ``sigma`` (no prior) and stop when the
        mean loss per sequence falls below ``tol``.  Their constants:
        ``solver_options``.
    solver_options : dict, default=None
        Constants of the online solvers, by their solver class's parameter
        names: ``"olbfgs"``: ``c`` (step scaling), ``lam`` (trust-region
        term), ``epsilon`` (first step's scale), ``divergence`` (the rise of
        the epoch loss that stops training as diverged;
        :class:`~skfcrf.solvers.OnlineLBFGS`); ``"sgd"``: ``period``,
        ``calibration_rate``, ``calibration_samples``,
        ``calibration_candidates``, ``calibration_max_trials``;
        ``"passive_aggressive"``: ``pa_type`` (0, 1, 2), ``c``,
        ``error_sensitive``, ``averaging``; ``"arow"``: ``variance``,
        ``gamma``.  ``None``: the solver's defaults (CRFsuite's for the four
        sequence trainers).  Any other key, or options for another solver,
        raise ``ValueError``.
    max_iter : int, default=100
        L-BFGS iterations, or epochs (passes over the data) for ``"olbfgs"``,
        of the ``objective``.  With ``objective="independent"`` and
        ``"lbfgs"``, iterations of the chain that costs most per evaluation:
        a chain that costs at most ``1/k`` as much runs up to ``k * max_iter``
        iterations, no more work (evaluated alone once the others have
        stopped), so ``n_iter_`` can exceed ``max_iter``.  See "Convergence
        warnings" in the Notes for when reaching it warns.
    finetune_iter : int, default=10
        After an ``"independent"``, ``"chainwise"`` or ``"pseudolikelihood"``
        fit, this many L-BFGS iterations of the likelihood, started from its
        weights, when the likelihood is exact (one chain, or several with
        ``inference`` resolving to ``"joint"``); 0 disables it.  After
        ``"independent"`` this stage learns the couplings.  Reaching
        ``finetune_iter`` is by design and gives no warning.
    tol : float, default=1e-5
        L-BFGS stops when the relative loss reduction or the largest gradient
        component falls below ``tol``; oLBFGS when the epoch loss improves by
        less than ``tol`` (relative) twice in a row.
    lbfgs_memory : int, default=3
        Number of correction pairs kept by (online) L-BFGS.
    min_instance_freq : int or float, default=1
        Pre-pruning: observations occurring in fewer training sequences are
        dropped.  A float in (0, 1] is a fraction of the training sequences.
    unary_features, transition_features, coupling_features : {"all", "supported", "default"} or "none"
        Feature support of the unary, in-chain pairwise and between-chain
        pairwise templates.  ``"default"``: one bias weight per assignment;
        ``"supported"``: the biases plus weights for (observation, assignment)
        pairs seen in training; ``"all"``: the biases plus weights for every
        (observation, assignment) pair.  ``transition_features`` also takes
        ``"none"``: no in-chain transitions at all, so the labels of a token
        depend on its own observations only (with couplings, on each other's
        too) -- the independent-labels models IML (``coupling="none"``) and CML
        (``coupling="all"``) of Marcheggiani (2014); ``forbidden_transitions``
        must then be ``"auto"`` or None and ``state_transitions`` not True.
    coupling : {"adjacent", "all", "none"} or list of (int, int), default="adjacent"
        Which chain pairs are coupled at every token.  With ``"none"`` no factor
        joins two chains, but ``inference="auto"`` still decodes them jointly
        over the label combinations seen in training, which couples them (no
        chain takes a label that never went with the others'); ``"none"`` with
        ``inference="exact"`` gives independent chains, each decoded alone.
    coupling_observations : str or list of str, default=None
        With ``coupling_features="supported"`` or ``"all"``: the observations
        that get coupling weights, as name prefixes (an observation whose name
        starts with one of them; e.g. ``"lower__"`` for the observations of
        the ``lower`` transformer of a
        :func:`~skfcrf.transformers.make_sequence_union`).  None: every
        observation.  Coupling weights on all observations multiply the
        weights by the coupling's label pairs; a small group keeps the
        observation-dependent couplings affordable.  Needs named observations;
        ``ValueError`` with ``coupling_features="default"`` or when no kept
        observation matches.
    inference : {"auto", "joint", "trp", "exact"}, default="auto"
        Inference for decoding and marginals.  ``"joint"``: exact Viterbi /
        forward-backward over the label combinations seen in training
        (``joint_states_``); a combination never seen in training is then not
        predicted, unless fixed labels need it (see the user guide).  ``"trp"``: loopy belief propagation
        with the TRP schedule (max-product decoding refined by chain-wise
        coordinate ascent).  ``"exact"``: over the full product label space
        of each group of coupled chains (small label sets only; chains that no
        coupling joins are decoded apart, so ``coupling="none"`` with
        ``"exact"`` gives every chain its own Viterbi and forward-backward).
        ``"auto"``: exact for one chain; for several, ``"joint"`` when the
        in-chain templates are tied and at most 4096 combinations were seen,
        else ``"trp"``.  The same method gives the likelihood objective its
        marginals.
    bp_max_iter : int, default=1000
        Maximum TRP iterations (spanning trees) per sequence.
    bp_tol : float, default=1e-6
        TRP stops when no message changes by more than this.
    forbidden_transitions : "auto", "unseen", "backoff", None, list or dict, default="auto"
        Per chain an iterable of ``(label_from, label_to)`` pairs that may not
        follow each other: a list with one entry per chain, a dict
        ``{chain: pairs}``, or for a one-chain model the pairs themselves.
        ``"unseen"``: every in-chain transition that never occurs in the
        training labels (with ``warm_start``, in none of the fits) is forbidden,
        the closed world.  ``"backoff"`` (several chains, joint inference,
        every label given): a transition seen in at most one of five folds of
        the training sequences is not forbidden but scored by a learnt back-off
        weight of its target label (``top_weights(kind="backoff")``), so every
        labelling over the joint states has a finite ``log_prob``; the
        fine-tuning stage then trains on a deleted likelihood (each fold scored
        with the transitions new to the other folds as back-off ones,
        :mod:`skfcrf.objectives._backoff`), starting the back-off weights where
        each chain's own deleted likelihood puts them (L-BFGS-B to ``tol``, at
        most ``max_iter`` iterations per chain), and a joint-state transition
        weight is dropped on the same terms (user guide, "Back-off
        transitions").  It needs ``finetune_iter > 0`` and an objective other
        than ``"likelihood"`` (``ValueError``); a fit stopped by the callback
        or early stopping before the fine-tuning keeps those transitions
        forbidden.  ``"auto"`` (several chains decoded over their joint label
        states, every label given): trained and MAP-decoded over the
        transitions seen in training, as ``"unseen"``, but for a chain with
        more than 15% of its transitions seen and a new one at more than 0.01%
        of the training tokens (a loose grammar, as part of speech), which
        stays open as with None; from five training sequences on (in one
        process) the unseen transitions then get back-off weights for
        ``log_prob``, the marginals and ``decode(fixed=...)``.  Otherwise None.
        ``transitions_`` says what a fit chose and why.  Explicit
        ``"backoff"`` needs two training sequences.  Only explicit pairs and
        ``"unseen"`` make a transition impossible in the fitted model (zero
        potential, in training and decoding); joint-state inference then runs
        on the allowed state pairs only, and on the seen pairs plus one
        back-off weight per label with back-off transitions, which is much
        faster than over all pairs (user guide, "Decoding: exact over the
        observed label combinations" and "Back-off transitions").
    state_transitions : {"auto", True, False}, default="auto"
        Joint-state transition weights: one weight for every pair of label
        combinations (of all chains) seen at consecutive tokens in training,
        added to the in-chain transitions.  They score what the in-chain
        transitions and same-token couplings cannot: how a change on one chain
        goes with the labels of another chain at the previous token (e.g. a
        chunk boundary after a given part of speech).  Exact inference over
        the joint label states (``inference`` resolving to ``"joint"``) is
        needed to train and use them; they are learnt by the likelihood (the
        default's fine-tuning stage, or ``objective="likelihood"``) and left
        at zero by the other objectives.  ``"auto"``: on when the model has
        several chains, inference resolves to ``"joint"``, every training
        label is given and the likelihood over the joint states is trained
        (``finetune_iter > 0`` or ``objective="likelihood"``).  ``True``
        raises ``ValueError`` where they cannot be used.
    state_transition_iter : int, default=10
        After the likelihood training or fine-tuning of a model with
        joint-state transitions, this many L-BFGS iterations of the likelihood
        move those weights alone (the others held): among all the weights a
        few iterations hardly move them, as they nearly duplicate the in-chain
        transitions and couplings.  0 leaves them to the joint stage.
    segment_encoding : {"bio", "bme", "bioes"}, default="bio"
        ``"bme"`` (or ``"bioes"``) trains on the segment chains re-tagged as
        Chou's begin / middle / end states (thesis 002, 6.3; a chain is a
        segment chain when a training label has a ``B-`` or ``Begin`` prefix)
        and converts every output back: ``predict``, ``decode`` and ``score``
        answer in the training labels' own scheme, ``log_prob`` takes them;
        ``classes_`` and ``predict_marginals`` are over the encoded labels
        (:class:`skfcrf.structure.SegmentEncoded` sums them back, for any
        estimator).  Every training label must be given, and ``decode`` takes
        no fixed labels.
    forbidden_couplings : None or dict, default=None
        ``{(i, j): [(label_i, label_j), ...]}``: label combinations that may not
        occur at the same token in coupled chains ``i < j`` (e.g. an ``I-`` on a
        coarse chain over an ``O`` on a fine one).
    batch_size : int, default=32
        Sequences per mini-batch of ``solver="olbfgs"``.
    eta0 : float, default=0.1
        oLBFGS initial step size; it decays as ``tau / (tau + t) * eta0``.
        With ``solver="sgd"`` the first step size its calibration tries.
    tau : float, default=1000.0
        oLBFGS step-size decay constant.
    n_jobs : int, default=None
        Threads for the loss/gradient and inference kernels (``None``: 1,
        ``-1``: all cores).  With ``objective="pseudolikelihood"``,
        ``"chainwise"`` or ``"independent"`` (without fine-tuning) the fit is
        the same bit for bit for every ``n_jobs`` and every run (gradients are
        summed per fixed block of sequences); with the likelihood (or the
        fine-tuning stage) it is the same in every run with a given
        ``n_jobs`` and differs between thread counts by rounding only.
    random_state : int, RandomState or None, default=None
        Seeds TRP's spanning trees and oLBFGS's batch order.  Prediction with
        ``None`` uses seed 0, so predictions are repeatable.
    verbose : int, default=0
        Print the loss at every iteration when > 0.
    warm_start : bool, default=False
        Continue from the fitted weights; the observations and label sets
        learned by the first fit are kept.
    callback : callable, default=None
        ``callback(iteration, loss, coef)`` after every solver iteration (epoch
        for ``"olbfgs"``) with the penalised training loss and a read-only view
        of the current weights; returning ``True`` stops training (then
        ``converged_`` is False and no warning is given).
    early_stopping : bool, default=False
        Set ``validation_fraction`` of the training sequences aside, score the
        weights on them every ``validation_interval`` iterations and keep the
        best; stop after ``n_iter_no_change`` scores in a row without
        improvement (then ``converged_`` is True).
    validation_fraction : float in (0, 1), default=0.1
        Fraction of the sequences held out (at least one) for early stopping.
    n_iter_no_change : int, default=10
        Validation scores in a row without improvement that stop training.
    validation_scoring : None, str or callable, default=None
        The held-out score: None is joint accuracy (:meth:`score`); a name of
        :func:`skfcrf.metrics.make_chain_scorer` (e.g. ``"windowdiff"``, scored
        as a loss); or a scorer ``f(estimator, X, y)``.
    validation_interval : int, default=5
        Solver iterations between validation scores.
    calibration : {None, "temperature"}, default=None
        Calibrate the token marginals (:meth:`predict_marginals`).
        ``"temperature"``: after the fit, cross-fitting over
        ``calibration_cv`` folds of the training sequences -- a copy of the
        estimator (the same parameters, without ``callback`` and
        ``warm_start``) fitted on all folds but one gives the marginals of the
        held-out fold -- and per chain the temperature ``T_c`` that minimises
        the Brier score of the tempered held-out marginals ``p ** (1 / T_c)``
        (normalised per token) is kept in ``marginal_temperatures_``.  The
        model itself is fitted on all the sequences exactly as without
        calibration, so its weights, :meth:`predict`, :meth:`decode` and
        :meth:`log_prob` are unchanged; the fit costs about
        ``calibration_cv - 1`` fits more.  With a development set held out
        from training, :meth:`calibrate` fits the temperatures on it instead,
        for the cost of decoding it.  See Notes, "Calibrated marginals".
    calibration_cv : int, default=4
        With ``calibration="temperature"``: the number of folds (at least 2,
        at most the number of training sequences).  Every training sequence
        is held out once, so the temperatures are fitted on as many tokens as
        the model; the copies see ``(calibration_cv - 1) / calibration_cv``
        of the sequences, and a model fitted on fewer sequences is more
        over-confident (on the dictations 2 folds over-correct).
    anchors : "auto", None or list of int, default="auto"
        Chains whose own confident labels MAP decoding keeps (``predict``,
        ``decode``): at a token where the chain's own factors (its unary and
        in-chain transition scores, without the couplings) give its best label
        a marginal of at least 0.99, that label is fixed and the chains are
        decoded jointly given it, so another chain's error cannot overrule it.
        ``"auto"`` (several chains decoded over their joint label states,
        some transition not open, every label given, BIO segments, at least
        six training sequences): fit once more on two thirds of the training sequences and
        anchor, chain by chain greedily, what raises the joint accuracy on the
        held-out third; ``anchors_`` says what was chosen and why.  None or
        ``[]``: no anchor.  Marginals and ``log_prob`` are not anchored.
    max_memory : int, optional
        Bytes a fit may use.  Before building the model, ``fit`` estimates its
        peak memory (weights, optimizer history, gradient accumulators, batch
        arrays; ``verbose`` prints the estimate) and raises ``MemoryError`` --
        naming the number of weights and the template responsible -- when it
        exceeds ``max_memory``, or without it the memory the system reports
        available.

    Attributes
    ----------
    classes_ : list of ndarray
        Labels of each chain.
    n_chains_ : int
    n_features_in_ : int
        Number of observations kept after pre-pruning.
    observation_names_ : ndarray of str or None
        Their names (None for matrix input).
    joint_states_ : ndarray of shape (n_states, n_chains)
        The distinct label combinations (label indices per chain) of the
        training data, the state space of ``inference="joint"``.
    coef_ : ndarray
        All weights (see :mod:`skfcrf.model._layout` for the layout).
    n_nonzero_ : int
        Number of non-zero weights in ``coef_`` (how sparse ``l1`` made the model).
    loss_curve_ : list of float
        Penalised training loss after every iteration (epoch for oLBFGS).
    n_iter_ : int
        Solver iterations (epochs for ``"olbfgs"``) run by the last fit.
    converged_ : bool
        Whether the first stage's stopping criterion (``tol``) was met: False
        when it stopped at its iteration budget, on a failed line search, or by
        the callback (see "Convergence warnings" in the Notes).
    anchors_ : dict
        The anchored chains of MAP decoding (``anchors``): ``chains`` (chain
        indices), ``threshold``, ``heldout`` (with ``"auto"``: the held-out
        joint accuracy of each anchor set tried, by its chains) and ``reason``.
    transitions_ : dict
        What the fit made of the in-chain transitions and why: ``world``
        (``"seen+backoff"``: ``"auto"``'s seen transitions with back-off scores
        for the others; ``"seen"``, ``"backoff"``, ``"open"`` or
        ``"explicit"``), ``decoding`` (``"seen"``: MAP decoding keeps to the
        transitions seen in training; ``"allowed"``: to every allowed one),
        ``unseen`` (per chain, the transitions never seen that are forbidden
        or backed off), ``open`` (the chains ``"auto"`` left open),
        ``new_rate`` (per chain, the share of its training transitions seen in
        no other sequence) and ``reason``.  None after an interrupted fit.
    inference_stats_ : dict
        Inference during training: ``method``, ``converged_fraction`` and
        ``mean_iterations`` of TRP over all likelihood evaluations (1.0 and
        0.0 when training ran no loopy inference).  Prediction never changes
        it; :meth:`decode` reports per sequence.
    validation_scores_ : list of float
        With ``early_stopping``: the held-out scores, in order.
    best_validation_score_ : float
        With ``early_stopping``: the best of them; ``coef_`` holds its weights.
    best_iteration_ : int
        With ``early_stopping``: the iteration of the best weights.
    marginal_temperatures_ : ndarray of shape (n_chains,)
        The temperature of every chain's token marginals: fitted with
        ``calibration="temperature"``, else 1.0 (the model's own marginals).

    Notes
    -----
    **Convergence warnings.**  A ``ConvergenceWarning`` is given when the user can
    act on it, in the words of the parameters:

    * a ``max_iter`` other than the default reached before ``tol`` was met:
      "stopped after N iterations before converging; raise max_iter (now M) or tol";
      so is the default ``max_iter`` for the other objectives and solvers;
    * the line search finding no lower loss (the weights are the last that lowered
      it; a larger ``tol`` accepts them).

    The budgets the staged default fit is designed with give no warning: the
    default ``max_iter`` of the first stage (``objective="independent"`` with
    ``solver="lbfgs"``, the per-chain budgets included), ``finetune_iter`` and
    ``state_transition_iter`` -- the later stages continue where the first
    stopped.  ``converged_`` and ``n_iter_`` still tell how the first stage
    ended, and ``verbose > 0`` prints why it stopped.  Stops by the ``callback``
    or by early stopping never warn.

    **Calibrated marginals.**  A model trained to convergence is over-confident on
    new sequences: its largest token marginal is on average higher than the rate
    at which that label is right (on the dictations' section chain 99.6 % mean
    confidence for 94.4 % accuracy: a section labelled wrongly as a whole gets
    the confidence of all its tokens' evidence).  ``calibration="temperature"``
    reports per chain ``p_t(j) ** (1 / T_c)``, normalised over the chain's
    labels at the token, with ``T_c`` fitted on held-out sequences: the
    cross-fitted folds of the training set (see ``calibration``), or a
    development set given to :meth:`calibrate` after the fit
    (:mod:`skfcrf.estimators._calibration`).  The map is per
    token and order-preserving: the most probable label of every token and
    chain, the labels of marginal 0 (forbidden) and fixed labels (marginal 1)
    stay as they are.  It applies to :meth:`predict_marginals` only: the
    joint distribution -- :meth:`predict`, :meth:`decode` (labellings and their
    ``log_prob``) and :meth:`log_prob` -- is the model's own.  (Per-chain
    temperatures on the token marginals are not the marginals of one joint
    distribution; one temperature on all the weights would be, and would
    leave the Viterbi labelling unchanged as well, but it cannot serve chains
    that are over-confident to different degrees.)  The temperatures minimise
    the Brier score rather than the log loss: both are proper scores, but the
    log loss is dominated by the few confidently wrong tokens and over-corrects.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> X = [[{"w=the": 1}, {"w=cat": 1}], [{"w=a": 1}, {"w=dog": 1}]]
    >>> y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP")]]
    >>> crf = FactorialCRF(max_iter=50).fit(X, y)
    >>> crf.predict(X)[0].tolist()
    [['DT', 'B-NP'], ['NN', 'I-NP']]
    """


    _parameter_constraints = {
        "sigma": [_POSITIVE_REAL, Options(numbers.Real, {np.inf})],
        "l1": [Interval(numbers.Real, 0, None, closed="left")],
        "objective": [StrOptions(set(OBJECTIVES))],
        "solver": [StrOptions(set(SOLVERS))],
        "solver_options": [None, dict],
        "segment_encoding": [StrOptions({"bio", "bme", "bioes"})],
        "max_iter": [_POSITIVE_INT],
        "tol": [_POSITIVE_REAL],
        "lbfgs_memory": [_POSITIVE_INT],
        "min_instance_freq": [_POSITIVE_INT,
                              Interval(RealNotInt, 0, 1, closed="right")],
        "unary_features": [StrOptions(set(SUPPORT_MODES))],
        "transition_features": [StrOptions(set(TRANSITION_MODES))],
        "coupling_features": [StrOptions(set(SUPPORT_MODES))],
        "coupling": [StrOptions({"adjacent", "all", "none"}), list, tuple],
        "coupling_observations": [None, str, list, tuple],
        "inference": [StrOptions({"auto", *METHODS})],
        "bp_max_iter": [_POSITIVE_INT],
        "bp_tol": [_POSITIVE_REAL],
        "forbidden_transitions": [None, StrOptions({"auto", "unseen", "backoff"}), list, tuple,
                                  dict],
        "forbidden_couplings": [None, dict],
        "batch_size": [_POSITIVE_INT],
        "eta0": [_POSITIVE_REAL],
        "tau": [_POSITIVE_REAL],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None, closed="left"), "boolean"],
        "warm_start": ["boolean"],
        "callback": [callable, None],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [_POSITIVE_INT],
        "validation_scoring": [None, str, callable],
        "validation_interval": [_POSITIVE_INT],
        "max_memory": [None, _POSITIVE_INT],
        "calibration": [None, StrOptions({"temperature"})],
        "calibration_cv": [Interval(numbers.Integral, 2, None, closed="left")],
        "finetune_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "state_transitions": [StrOptions({"auto"}), "boolean"],
        "state_transition_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "anchors": [None, StrOptions({"auto"}), list, tuple],
    }

    def __init__(self, *, sigma=10.0, objective="independent", solver="lbfgs", max_iter=100,
                 tol=1e-5, lbfgs_memory=3, min_instance_freq=1, unary_features="supported",
                 transition_features="default", coupling_features="default", coupling="adjacent",
                 coupling_observations=None, inference="auto", bp_max_iter=1000, bp_tol=1e-6,
                 forbidden_transitions="auto",
                 forbidden_couplings=None, batch_size=32, eta0=0.1, tau=1000.0, n_jobs=None,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10,
                 validation_scoring=None, validation_interval=5, max_memory=None,
                 finetune_iter=10, state_transitions="auto", state_transition_iter=10, l1=0.0,
                 calibration=None, calibration_cv=4, solver_options=None,
                 segment_encoding="bio", anchors="auto"):
        self.sigma = sigma
        self.l1 = l1
        self.objective = objective
        self.solver = solver
        self.solver_options = solver_options
        self.segment_encoding = segment_encoding
        self.max_iter = max_iter
        self.tol = tol
        self.lbfgs_memory = lbfgs_memory
        self.min_instance_freq = min_instance_freq
        self.unary_features = unary_features
        self.transition_features = transition_features
        self.coupling_features = coupling_features
        self.coupling = coupling
        self.coupling_observations = coupling_observations
        self.inference = inference
        self.bp_max_iter = bp_max_iter
        self.bp_tol = bp_tol
        self.forbidden_transitions = forbidden_transitions
        self.forbidden_couplings = forbidden_couplings
        self.batch_size = batch_size
        self.eta0 = eta0
        self.tau = tau
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.validation_scoring = validation_scoring
        self.validation_interval = validation_interval
        self.max_memory = max_memory
        self.finetune_iter = finetune_iter
        self.state_transitions = state_transitions
        self.state_transition_iter = state_transition_iter
        self.calibration = calibration
        self.calibration_cv = calibration_cv
        self.anchors = anchors

    def _validate_params(self):
        super()._validate_params()
        if self.l1 > 0 and self.solver != "lbfgs":
            raise ValueError(
                f"l1={self.l1!r} (L1 regularisation, trained by OWL-QN) is not supported "
                f"with solver={self.solver!r}; use solver='lbfgs' or l1=0")
        self._check_solver_options()
        self._check_no_transitions()
        if (isinstance(self.forbidden_transitions, str)
                and self.forbidden_transitions == "backoff"
                and (self.finetune_iter == 0 or self.objective == "likelihood")):
            raise ValueError(
                "forbidden_transitions='backoff' learns the back-off weights in the "
                f"fine-tuning stage: it needs finetune_iter > 0 (now {self.finetune_iter}) "
                f"and an objective other than 'likelihood' (now {self.objective!r})")

    def _check_no_transitions(self):
        """ValueError for settings about in-chain transitions in a model without them
        (``transition_features="none"``)."""
        if self.transition_features != "none":
            return
        forbidden = self.forbidden_transitions
        if forbidden is not None and not (isinstance(forbidden, str) and forbidden == "auto"):
            raise ValueError(
                f"forbidden_transitions={forbidden!r} forbids or backs off in-chain "
                "transitions, which a model with transition_features='none' does not have; "
                "use forbidden_transitions='auto' or None")
        if self.state_transitions is True:
            raise ValueError(
                "state_transitions=True adds joint-state transition weights, which a model "
                "with transition_features='none' (no transitions) does not have; use "
                "state_transitions='auto' or False")

    def _check_solver_options(self):
        """ValueError for an online trainer with an objective other than the likelihood,
        or for ``solver_options`` the solver does not have."""
        options = self.solver_options or {}
        if self.solver not in SEQUENCE_SOLVERS and self.solver != "olbfgs":
            if options:
                raise ValueError(f"solver_options={options!r}: solver={self.solver!r} has no "
                                 "options (they are for 'olbfgs', 'sgd', 'perceptron', "
                                 "'passive_aggressive' and 'arow')")
            return
        if self.solver != "olbfgs" and self.objective != "likelihood":
            raise ValueError(
                f"solver={self.solver!r} trains the whole model one sequence at a time on its "
                f"exact decoding or likelihood: set objective='likelihood' (now "
                f"{self.objective!r}; its staged training does not apply)")
        unknown = sorted(set(options) - set(_solver_option_names(self.solver)))
        if unknown:
            raise ValueError(f"solver_options {unknown} are not options of "
                             f"solver={self.solver!r}; its options are "
                             f"{list(_solver_option_names(self.solver))}")

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Fit the model to observation sequences ``X`` and label sequences ``y``.

        Parameters
        ----------
        X : list of sequences
            Per sequence a list of per-token observation dicts ``{name: value}``,
            a list of per-token lists of observation names, or a 2-D sparse
            matrix ``(n_tokens, n_observations)``.
        y : list of label sequences
            Per sequence an array-like ``(n_tokens, n_chains)`` or a list of
            per-token tuples; 1-D sequences mean one chain.  ``None`` (or a
            float NaN) marks a missing label: the ``"independent"`` and
            ``"likelihood"`` objectives then maximise the probability of the
            given labels, summed over the labellings that agree with them; a
            sequence with no label is left out (see the user guide, "Partial
            labels").

        Returns
        -------
        self

        Notes
        -----
        An interrupt (``KeyboardInterrupt``, Ctrl-C) during training leaves a
        usable model: the weights of the last completed iteration (the
        starting weights if none completed), ``n_iter_`` and ``loss_curve_``
        up to it and ``converged_ = False``; the interrupt is then re-raised.
        The kernels' threads finish their current evaluation first (they do not
        check for signals), so no thread is left running.
        """
        y = self._encode_segments(y)
        folds = None
        if self.calibration is not None:
            self._validate_params()
            X, y = _listed(X), _listed(y)
            if isinstance(X, list):      # else the fit below says what is wrong with X
                folds = calibration_folds(len(X), self.calibration_cv, self.random_state)
        stopper = None
        fit_X, fit_y = X, y
        if self.early_stopping:
            fit_X, fit_y, stopper = self._hold_out(X, y)
        objective, theta0, rng = training_problem(self, fit_X, fit_y)
        self._fit_objective(objective, theta0, rng, stopper)
        self._score_unseen(objective)
        del objective       # the held-out fit of anchors="auto" builds its own
        self.anchors_ = self._choose_anchors(fit_X, fit_y)
        # the model's own marginals until (and unless) the calibration completes
        self.marginal_temperatures_ = np.ones(self.n_chains_)
        if folds is not None:
            self.marginal_temperatures_ = self._fit_temperatures(X, y, folds)
        return self

    def _encode_segments(self, y):
        """``y`` with its segment chains re-tagged (``segment_encoding``), and
        ``segment_codec_`` set (None for ``"bio"``); a warm start keeps the codec
        of the first fit."""
        self._validate_params()
        if self.segment_encoding == "bio":
            self.segment_codec_ = None
            return y
        from skfcrf.structure._encoded import SegmentCodec

        seqs, one_chain = _label_arrays(y)
        codec = getattr(self, "segment_codec_", None)
        if not (self.warm_start and codec is not None
                and codec.scheme == self.segment_encoding):
            codec = SegmentCodec.from_labels(self.segment_encoding, seqs)
        self.segment_codec_ = codec
        return [_one_or_all(codec.encode(s), one_chain) for s in seqs]

    def _segment_output(self, labels):
        """Decoded labels of one sequence in the user's scheme."""
        codec = getattr(self, "segment_codec_", None)
        if codec is None:
            return labels
        return _one_or_all(codec.decode(labels), np.ndim(labels) == 1)

    def _fit_temperatures(self, X, y, folds):
        """Per chain the temperature of the marginals (``calibration="temperature"``).

        For every ``(train, held)`` pair of sequence indices in ``folds``, a copy
        of this estimator -- no callback, no warm start, no calibration -- is
        fitted on ``train``; the marginals of all the held-out sequences give,
        per chain, the temperature that minimises their Brier score
        (:func:`~skfcrf.estimators._calibration.fit_temperature`).
        """
        copy = clone(self).set_params(calibration=None, callback=None, warm_start=False,
                                      verbose=0)
        marginals = [[] for _ in range(self.n_chains_)]
        gold = [[] for _ in range(self.n_chains_)]
        for train, held in folds:
            with warnings.catch_warnings():
                # the fit of the model itself has warned already if it had to
                warnings.simplefilter("ignore", ConvergenceWarning)
                copy.fit([X[i] for i in train], [y[i] for i in train])
            y_held, _ = check_label_sequences([y[i] for i in held], n_chains=self.n_chains_,
                                              allow_missing=True)
            X_held = [X[i] for i in held]
            for c, (m, g) in enumerate(held_out_targets(copy, copy.predict_marginals(X_held),
                                                        y_held)):
                marginals[c].append(m)
                gold[c].append(g)
        temperatures = np.array([fit_temperature(m, g) for m, g in zip(marginals, gold)])
        if self.verbose:
            print(f"calibration: marginal temperatures per chain "
                  f"{', '.join(f'{t:.3g}' for t in temperatures)} "
                  f"({len(folds)} folds)", flush=True)
        return temperatures

    def _fit_objective(self, objective, theta0, rng, stopper=None):
        """Minimise ``objective`` from ``theta0``; set the fitted weights and curves."""
        monitor = ConvergenceMonitor(self.verbose, self._iteration_callback(stopper),
                                     unit="epoch" if self._online else "iteration")
        if self.solver in SEQUENCE_SOLVERS:
            # the trainers read one sequence at a time, decoded by the model's inference
            objective = SequenceTerms(
                objective.batch, resolve_method(self.inference, self.graph_, self.joint_states_),
                forbidden=self.forbidden_, joint_states=self.joint_states_)
        result = self._train(objective, theta0, self._solver(rng, objective), monitor,
                             stopper)
        stopped_early = stopper is not None and stopper.triggered
        if not np.all(np.isfinite(result.coef)):
            raise ValueError(
                f"training produced non-finite weights ({result.message}); lower eta0 or raise "
                "tau (solver='olbfgs'), lower sigma, or scale the observation values down")
        self.coef_ = result.coef
        self.n_iter_ = result.n_iter
        self.converged_ = bool(result.converged) or stopped_early
        self.loss_curve_ = monitor.history
        if stopper is not None:
            self._keep_best(stopper, result)
        self.inference_stats_ = dict(
            objective.inference_stats()
            or {"method": None, "converged_fraction": 1.0, "mean_iterations": 0.0},
            phase="fit")
        return self

    def _train(self, objective, theta0, solver, monitor, stopper):
        """Run the solver on the objective, then the likelihood fine-tuning stage if any."""
        try:
            # the kernels parallelise over sequences themselves; BLAS threads inside
            # their small matrix products only add contention.  Their scratch blocks
            # are reused from one evaluation to the next (no page faults)
            with single_blas_thread(), reusing_scratch():
                result = solver.solve(objective, theta0, monitor)
                warn_if_not_converged(
                    result, monitor.stopped_by_callback, max_iter=self.max_iter, tol=self.tol,
                    unit="epochs" if self._online else "iterations",
                    designed_budget=((isinstance(solver, BlockLBFGS)
                                      or (isinstance(solver, OWLQN)
                                          and isinstance(objective, BlockObjective)))
                                     and self.max_iter == DEFAULT_MAX_ITER),
                    verbose=self.verbose)
                finetune = self._finetuning(objective, monitor, stopper)
                if finetune is not None:
                    start = result.coef
                    if isinstance(finetune, DeletedLikelihood):
                        start = self._open_backoff(finetune, start)
                    tuned = self._batch_solver(self.finetune_iter).solve(
                        finetune, start, monitor)
                    result.coef, result.n_iter = tuned.coef, result.n_iter + tuned.n_iter
                likelihood = finetune if finetune is not None else objective
                stage = self._state_transition_stage(likelihood, result.coef, monitor,
                                                     stopper)
                if stage is not None:
                    monitor.expand = stage.full
                    try:
                        held = stage.theta[~stage.free]
                        tuned = self._batch_solver(
                            self.state_transition_iter,
                            offset=self.l1 * float(np.abs(held).sum())).solve(
                                stage, stage.start, monitor)
                    finally:
                        monitor.expand = None
                    result.coef = stage.full(tuned.coef)
                    result.n_iter += tuned.n_iter
        except KeyboardInterrupt:
            self._keep_interrupted(monitor, theta0)
            raise
        return result

    def _finetuning(self, objective, monitor, stopper):
        """The likelihood objective that fine-tunes a chain-wise/PL fit, or None.

        Only with ``finetune_iter > 0``, a non-likelihood objective, exact
        inference (one chain, or joint label states) and a first stage that ran
        to its end (not stopped by the callback or early stopping).
        """
        if (self.finetune_iter == 0 or self.objective == "likelihood"
                or monitor.stopped_by_callback or (stopper is not None and stopper.triggered)):
            return None
        method = resolve_method(self.inference, self.graph_, self.joint_states_)
        if not method.exact:
            return None
        if getattr(self, "_backoff", None):
            return self._deleted_likelihood(objective)
        return Likelihood(objective.batch, method=method, joint_states=self.joint_states_,
                          sigma=self.sigma, forbidden=self.forbidden_,
                          n_threads=objective.n_threads)

    def _deleted_likelihood(self, objective):
        """The fine-tuning objective of a model with back-off transitions
        (:class:`~skfcrf.objectives._backoff.DeletedLikelihood`) over the layout
        with back-off weights for the transitions seen in at most one fold."""
        graph = self.graph_
        explicit = {e: m for e, m in self.forbidden_.items()
                    if graph.edge_kind[e] != IN_CHAIN}
        batch = copy.copy(objective.batch)
        masks = fold_backoff(graph, batch.seq_ptr, batch.gold, explicit, sorted(self._backoff))
        layout = self.layout_
        if layout.n_state_pairs:
            # a state pair through a back-off transition, or seen in at most one fold,
            # has no weight of its own
            states = self.joint_states_
            counts = fold_state_pair_counts(states, batch.seq_ptr, batch.gold)
            keep = counts[state_index(states, layout.state_from),
                          state_index(states, layout.state_to)] >= 2
            for c, mask in masks.items():
                keep &= ~mask[layout.state_from[:, c], layout.state_to[:, c]]
            layout = layout.with_state_pairs(layout.state_from[keep], layout.state_to[keep])
            self._kept_state_pairs = keep
        batch.layout = layout.with_backoff(masks)
        return DeletedLikelihood(batch, joint_states=self.joint_states_, sigma=self.sigma,
                                 forbidden=explicit, n_threads=objective.n_threads)

    def _open_backoff(self, deleted, coef):
        """Switch the estimator to the back-off model of ``deleted`` (its layout and
        forbidden assignments); the weights ``coef`` (of the closed layout) moved to
        it, with the back-off weights each chain's own deleted likelihood gives them.
        Until then the model forbids the unseen transitions."""
        closed = self.layout_
        state = coef[closed.bias_state:closed.bias_state + closed.n_state_pairs]
        if closed.n_state_pairs:
            state = state[self._kept_state_pairs]
        self.layout_, self.forbidden_ = deleted.layout, deleted.forbidden
        self._backoff = {}
        # every chain's back-off weights where its own deleted likelihood puts them:
        # the fine-tuning hardly moves them from BACKOFF_START
        return self._chain_backoff_weights(
            deleted, np.concatenate([coef[:closed.bias_state], state]))

    def _chain_backoff_weights(self, deleted, coef):
        """``coef`` (every weight but the back-off ones) followed by the back-off
        weights of ``deleted``'s layout, each chain's where its own deleted likelihood
        puts them, the other weights held
        (:class:`~skfcrf.objectives._backoff.ChainBackoffStage`)."""
        theta = np.concatenate([coef, np.full(deleted.layout.n_backoff, BACKOFF_START)])
        stage = deleted.chain_backoff_stage(theta)
        weights, n_iter = stage.solve(self.max_iter, self.tol)
        if self.verbose:
            print(f"back-off weights: each chain's deleted likelihood, at most {n_iter} "
                  f"iterations a chain", flush=True)
        return stage.full(weights)

    def _score_unseen(self, objective):
        """``forbidden_transitions="auto"``: the in-chain transitions never seen in
        training (forbidden while training) get back-off weights, each chain's from
        its own deleted likelihood over the training batch of ``objective`` with the
        trained weights held (:class:`~skfcrf.objectives._backoff.ChainBackoffStage`);
        MAP decoding keeps to the seen transitions (:meth:`_inference_inputs`).
        Sets ``transitions_``."""
        scored = getattr(self, "_scored", None) or {}
        self._scored = {}
        if not scored or not np.all(np.isfinite(self.coef_)):
            self.transitions_ = transitions_choice(self, False, self._grammar)
            return
        graph = self.graph_
        kept = {e: m for e, m in self.forbidden_.items()
                if not (graph.edge_kind[e] == IN_CHAIN and int(graph.edge_a[e]) in scored)}
        batch = copy.copy(objective.batch)
        batch.layout = self.layout_.with_backoff(scored)
        deleted = DeletedLikelihood(batch, joint_states=self.joint_states_, sigma=self.sigma,
                                    forbidden=kept, n_threads=objective.n_threads)
        with single_blas_thread(), reusing_scratch():
            self.coef_ = self._chain_backoff_weights(deleted, self.coef_)
        self.layout_, self.forbidden_ = batch.layout, kept
        self.transitions_ = transitions_choice(self, True, self._grammar)

    def _state_transition_stage(self, likelihood, coef, monitor, stopper):
        """The joint-state transition weights alone under the likelihood, or None.

        After the likelihood training (or fine-tuning) of a model with
        joint-state transitions, ``state_transition_iter`` L-BFGS iterations
        move those weights alone, the others held.  They are nearly redundant
        with the in-chain transitions and couplings, so among all the weights
        L-BFGS hardly moves them in a few iterations; alone they are learnt
        quickly.
        """
        if self.state_transition_iter == 0 or monitor.stopped_by_callback or (
                stopper is not None and stopper.triggered):
            return None
        if isinstance(likelihood, DeletedLikelihood):
            # not with the other weights: L-BFGS then moved the joint-state transitions
            # and lost 2.9 points of joint accuracy on the dictations
            if not likelihood.layout.n_state_pairs:
                return None
            return likelihood.held_stage(coef)
        if (not self.layout_.n_state_pairs
                or not isinstance(likelihood, Likelihood)):
            return None
        return self._state_transitions_alone(likelihood, coef)

    def _state_transitions_alone(self, likelihood, coef):
        """``likelihood`` over the joint-state transition weights alone, the others at ``coef``."""
        return StateTransitionStage(likelihood, coef)

    def _keep_interrupted(self, monitor, theta0):
        """After Ctrl-C: the weights of the last completed iteration, not converged."""
        last = monitor.last_coef
        self.coef_ = last if last is not None else theta0
        self.n_iter_ = monitor.n_iter
        self.converged_ = False
        self.loss_curve_ = monitor.history
        self.marginal_temperatures_ = np.ones(self.n_chains_)
        self.inference_stats_ = {"method": None, "converged_fraction": float("nan"),
                                 "mean_iterations": float("nan"), "phase": "fit"}

    def _hold_out(self, X, y):
        """Training part of ``X, y`` and an EarlyStopping over the held-out part."""
        X, y = _listed(X), _listed(y)
        # validate every sequence now: a bad held-out one would only show after training
        _, y_seqs, _ = self._check_Xy(X, y)
        self._check_lengths(ObservationEncoder().fit_transform(X)[1], y_seqs)
        train, val = validation_split(len(X), self.validation_fraction, self.random_state)
        stopper = EarlyStopping(self, [X[i] for i in val], [y[i] for i in val],
                                validation_scorer(self.validation_scoring),
                                self.validation_interval, self.n_iter_no_change)
        return [X[i] for i in train], [y[i] for i in train], stopper

    def _iteration_callback(self, stopper):
        """The user's callback and early stopping as one monitor callback."""
        if stopper is None:
            return self.callback
        user = self.callback

        def callback(iteration, loss, coef):
            stop_user = user is not None and user(iteration, loss, coef) is True
            return stopper(iteration, loss, coef) or stop_user

        return callback

    def _keep_best(self, stopper, result):
        """Score the final weights if not yet scored; keep the best weights seen."""
        if stopper.last_scored != result.n_iter:
            stopper.score(result.n_iter, result.coef)
        self.coef_ = stopper.best_coef
        self.validation_scores_ = stopper.scores
        self.best_validation_score_ = stopper.best_score
        self.best_iteration_ = stopper.best_iteration

    def _encode_training_data(self, X, y):
        """Validated, encoded training data; fits the encoders and structure unless warm.

        The training set is the one batch of the model-building pipeline
        (:mod:`skfcrf.model._building`).  Returns ``Xm, seq_ptr, gold, known, labelled,
        warm``: ``gold`` is complete (missing labels filled,
        :func:`complete_labels`), ``known`` the mask of given labels (None: all
        given), ``labelled`` the indices of the sequences with a given label
        (the others are left out of training).
        """
        X, y_seqs, one_chain = self._check_Xy(X, y)
        labelled = labelled_sequences(y_seqs)
        warm = self.warm_start and hasattr(self, "coef_")
        if warm:
            if y_seqs[0].shape[1] != self.n_chains_:
                raise ValueError(
                    f"warm_start: y has {y_seqs[0].shape[1]} chains, the model {self.n_chains_}"
                )
            Xm, seq_ptr = self.encoder_.transform(X)
        else:
            encoder = ObservationEncoder()
            if len(labelled) < len(X):  # the vocabulary of the sequences trained on
                encoder.fit_transform([X[i] for i in labelled], self.min_instance_freq)
                Xm, seq_ptr = encoder.transform(X)
            else:
                Xm, seq_ptr = encoder.fit_transform(X, self.min_instance_freq)
        self._check_lengths(seq_ptr, y_seqs)
        if not warm:
            self.encoder_ = encoder
            self.n_chains_ = y_seqs[0].shape[1]
            self._one_chain = one_chain
            self.classes_ = merge_label_sets([label_sets([y_seqs[i] for i in labelled],
                                                         self.n_chains_)])
            self._fit_graph()
        gold = encode_labels(self.classes_, y_seqs,
                             "warm_start=True keeps the labels of the first fit; fit without "
                             "it to learn new labels") if warm else encode_labels(self.classes_, y_seqs)
        stats = StructureStatistics.collect(self.graph_, Xm, seq_ptr, gold,
                                            **collect_options(self, self.n_chains_, warm))
        method = self._fit_model(stats, warm)
        check_gold_allowed(self.graph_, seq_ptr, gold, self.forbidden_,
                           lambda e: edge_name(self.graph_, e))
        known = gold >= 0 if stats.partial else None
        if stats.partial:
            gold = complete_labels(
                self.layout_, seq_ptr, gold, self.classes_, self.forbidden_,
                method.bind(max_iter=self.bp_max_iter, tol=self.bp_tol,
                            seeds=np.zeros(len(seq_ptr) - 1, np.uint64),
                            n_threads=kernel_threads(self.n_jobs)))
        return Xm, seq_ptr, gold, known, labelled, warm

    def _fit_graph(self):
        """``n_features_in_``, ``observation_names_``, ``couplings_`` and ``graph_`` of
        the fitted encoder and ``classes_``."""
        self.n_features_in_ = len(self.encoder_.kept_columns)
        self.observation_names_ = self.encoder_.names
        self.couplings_, self.graph_ = model_graph(self, self.classes_)

    def _fit_model(self, stats, warm=False):
        """``layout_``, ``joint_states_`` and ``forbidden_`` from the merged
        :class:`StructureStatistics` of the training data (:func:`build_model`);
        returns the model's inference method."""
        if warm:
            self._close_backoff()
        model = build_model(self, self.graph_, self.n_features_in_, self.classes_, stats,
                            previous=self if warm else None,
                            observation_names=self.observation_names_)
        self.layout_, self.joint_states_, self.forbidden_ = (
            model.layout, model.joint_states, model.forbidden)
        self._backoff = model.backoff
        self._scored, self._grammar = model.scored, model.grammar
        self.transitions_ = None
        return model.method

    def _close_backoff(self):
        """Undo :meth:`_open_backoff` (a warm start trains with the unseen transitions
        forbidden again)."""
        layout = self.layout_
        if not layout.n_backoff:
            return
        forbidden = dict(self.forbidden_)
        for e, mask in layout.backoff_edges.items():
            forbidden[e] = forbidden[e] | mask if e in forbidden else mask.copy()
        self.coef_ = self.coef_[:layout.bias_state + layout.n_state_pairs].copy()
        self.layout_ = layout.with_backoff({})
        self.forbidden_ = forbidden

    def _objective(self, batch):
        """The objective object for this estimator's settings over ``batch``."""
        kwargs = dict(sigma=self.sigma, forbidden=self.forbidden_,
                      n_threads=kernel_threads(self.n_jobs))
        method = resolve_method(self.inference, self.graph_, self.joint_states_)
        if OBJECTIVES[self.objective] is Likelihood:
            kwargs.update(method=method, bp_max_iter=self.bp_max_iter, bp_tol=self.bp_tol,
                          joint_states=self.joint_states_)
        return OBJECTIVES[self.objective](batch, **kwargs)

    def _batch_solver(self, max_iter, offset=0.0):
        """L-BFGS with ``max_iter`` iterations, or OWL-QN when ``l1 > 0``."""
        if self.l1 > 0:
            return OWLQN(self.l1, memory=self.lbfgs_memory, max_iter=max_iter, tol=self.tol,
                         offset=offset)
        return LBFGS(memory=self.lbfgs_memory, max_iter=max_iter, tol=self.tol)

    def _solver(self, rng, objective):
        """The solver for ``objective``: L-BFGS per block when its loss is a sum over
        blocks of weights (the independent chains), else the ``solver`` setting;
        OWL-QN when ``l1 > 0``."""
        if self.l1 > 0:
            return self._batch_solver(self.max_iter)
        if self.solver == "olbfgs":
            return OnlineLBFGS(memory=self.lbfgs_memory, max_iter=self.max_iter, tol=self.tol,
                               batch_size=self.batch_size, eta0=self.eta0, tau=self.tau,
                               random_state=rng, **(self.solver_options or {}))
        if self.solver in SEQUENCE_SOLVERS:
            options = dict(self.solver_options or {}, max_iter=self.max_iter,
                           random_state=rng)
            if self.solver == "sgd":
                return SGD(1.0 / self.sigma ** 2, delta=self.tol, eta0=self.eta0, **options)
            return SOLVERS[self.solver](tol=self.tol, **options)
        if isinstance(objective, BlockObjective):
            return BlockLBFGS(memory=self.lbfgs_memory, max_iter=self.max_iter, tol=self.tol)
        return SOLVERS[self.solver](memory=self.lbfgs_memory, max_iter=self.max_iter,
                                    tol=self.tol)

    @property
    def _online(self):
        """Whether ``max_iter`` counts epochs."""
        return self.solver == "olbfgs" or self.solver in SEQUENCE_SOLVERS

    def _check_Xy(self, X, y):
        if y is None:
            raise ValueError("y is required: a list of label sequences")
        y_seqs, one_chain = check_label_sequences(y, allow_missing=True)
        X_list = _listed(X)
        if not isinstance(X_list, list):
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}")
        if len(X_list) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: {len(X_list)} != {len(y_seqs)}")
        return X_list, y_seqs, one_chain

    @staticmethod
    def _check_lengths(seq_ptr, y_seqs):
        lengths = np.diff(seq_ptr)
        for i, (n_obs, seq) in enumerate(zip(lengths, y_seqs)):
            if n_obs != len(seq):
                raise ValueError(
                    f"sequence {i}: X has {n_obs} tokens but y has {len(seq)} labels"
                )

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError(
                "This FactorialCRF instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )
        if not np.all(np.isfinite(self.coef_)):
            raise ValueError("this model's weights (coef_) are not all finite; it cannot "
                             "decode: fit it again")

    def _choose_anchors(self, X, y):
        """The ``anchors_`` record of a fit on ``X, y`` (:mod:`~skfcrf.estimators._anchoring`)."""
        anchors = self.anchors
        if anchors is None or (isinstance(anchors, (list, tuple)) and not anchors):
            return anchors_record([], "anchors=None: no anchor")
        if not isinstance(anchors, str):
            if any(not isinstance(c, numbers.Integral) or isinstance(c, bool)
                   or not 0 <= c < self.n_chains_ for c in anchors) \
                    or len(set(anchors)) != len(anchors):
                raise ValueError(f"anchors={anchors!r}: expected distinct chain indices in "
                                 f"0..{self.n_chains_ - 1}, 'auto' or None")
            if getattr(self, "segment_codec_", None) is not None:
                raise ValueError(f"anchors need segment_encoding='bio' (now "
                                 f"{self.segment_encoding!r}): an anchored inside label does "
                                 "not say which encoded label its token has")
            return anchors_record(anchors, "given by anchors")
        why = self._anchors_not_chosen(X, y)
        if why:
            return anchors_record([], f"anchors='auto' chose none: {why}")

        def fit_copy(X_fit, y_fit):
            copy_ = clone(self).set_params(anchors=None, callback=None, verbose=0,
                                           calibration=None, warm_start=False)
            with warnings.catch_warnings():     # the fit itself has said what concerns both
                warnings.simplefilter("ignore", ConvergenceWarning)
                return copy_.fit(X_fit, y_fit)

        return choose_anchors(fit_copy, X, y, self.n_chains_)

    def _anchors_not_chosen(self, X, y):
        """Why ``anchors="auto"`` anchors no chain without trying, or None."""
        if self.n_chains_ < 2:
            return "one chain"
        if not np.all(np.isfinite(self.coef_)) or self.transitions_ is None:
            return "the fit did not complete"
        if self.transitions_["world"] == "open":
            # measured: on CoNLL-2000 and EWT no anchor changed a decoded label
            return ("every in-chain transition is open, so no unseen transition forces a "
                    "chain's labels")
        if getattr(self, "segment_codec_", None) is not None:
            return f"segment_encoding={self.segment_encoding!r}"
        if not resolve_method(self.inference, self.graph_,
                              getattr(self, "joint_states_", None)).over_joint_states:
            return "the chains are not decoded over their joint label states"
        if not isinstance(X, list) or len(X) < MIN_SEQUENCES:
            return f"fewer than {MIN_SEQUENCES} training sequences to hold some out"
        for seq in y:
            for v in np.asarray(seq, dtype=object).ravel():
                if v is None or (isinstance(v, float) and v != v):
                    return "some training labels are missing"
        return None

    def _with_anchors(self, X, fixed):
        """``fixed`` with the anchored chains' sure labels (``anchors_``) where it leaves
        them free; ``fixed`` itself when no chain is anchored."""
        chains = (getattr(self, "anchors_", None) or {}).get("chains")
        if not chains:
            return fixed
        seq_ptr, unary, pair, _ = self._inference_inputs(X, seen_only=True)
        kept = anchored_labels(self.graph_, seq_ptr, unary, pair, chains,
                               n_threads=kernel_threads(self.n_jobs))
        given = encode_fixed(fixed, seq_ptr, self.classes_, self._one_chain)
        if given is not None:
            kept = np.where(given.index >= 0, given.index, kept)
        out = []
        for s in range(len(seq_ptr) - 1):
            block = kept[seq_ptr[s]:seq_ptr[s + 1]]
            labels = np.full(block.shape, None, dtype=object)
            for c in range(self.n_chains_):
                sure = block[:, c] >= 0
                labels[sure, c] = self.classes_[c][block[sure, c]]
            out.append(labels[:, 0] if self._one_chain else labels)
        return out

    def _decodes_seen(self):
        """Whether MAP decoding keeps to the in-chain transitions seen in training
        while the unseen ones have back-off weights (``forbidden_transitions="auto"``,
        :meth:`_score_unseen`)."""
        choice = getattr(self, "transitions_", None)
        return bool(choice) and choice.get("decoding") == "seen" and self.layout_.n_backoff > 0

    def _inference_inputs(self, X, seen_only=False):
        """Potentials of ``X``: ``seq_ptr, unary, pair``, and the model's inference
        method.  ``seen_only``: with the back-off transitions of :meth:`_decodes_seen`
        forbidden (the space MAP decoding runs over).

        What it derives from the fitted model alone (the inference method, the
        forbidden assignments) is built once and reused (:func:`_derived`); a
        few tokens run on one thread, without asking the thread pools."""
        tied = self._check_fitted_once()
        indptr, indices, data, seq_ptr = self.encoder_.transform_arrays(X)
        n_seq = len(seq_ptr) - 1
        # the kernels share out whole sequences: one sequence, or a few tokens, is one thread
        tiny = (n_seq == 1 or seq_ptr[-1] <= TINY_TOKENS) and self.n_jobs != 0
        n_threads = 1 if tiny else kernel_threads(self.n_jobs)
        obs = self.layout_.observation_rows_of(indptr, indices, data, seq_ptr)
        seen_only = seen_only and self._decodes_seen()
        forbidden = self._decoding_forbidden(seen_only)
        unary, pair, _ = self.layout_.potentials(self.coef_, obs, n_threads, forbidden)
        if tied and not (np.isfinite(unary).all()
                         and np.isfinite(self.coef_[self.layout_.n_table:]).all()):
            self._check_fitted()        # a weight this call uses was made non-finite
        method = self._decoding_method().bind(seeds=self._decoding_seeds(n_seq),
                                              n_threads=n_threads)
        if self.layout_.n_state_pairs:
            if not method.over_joint_states:
                raise ValueError(
                    "this model has joint-state transition weights, which only inference "
                    f"over the joint label states uses; inference={self.inference!r} resolves "
                    f"to {method.name!r} (set inference='joint' or 'auto')")
            method = method.bind(state_trans=self.layout_.state_transitions(
                self.coef_, getattr(self, "joint_states_", None)))
        if self.layout_.n_backoff and method.over_joint_states and not seen_only:
            method = method.bind(backoff=self.layout_.backoff)
        return seq_ptr, unary, pair, method

    def _check_fitted_once(self):
        """:meth:`_check_fitted`, scanning ``coef_`` once per ``coef_`` array where the
        weights a call uses are all in its potentials and biases: returns True when
        the caller is to check those (:meth:`_inference_inputs`) -- the models whose
        pair potentials are their biases alone (every edge tied)."""
        layout = getattr(self, "layout_", None)
        if (not hasattr(self, "coef_") or layout is None
                or layout.score_width != layout.graph.total_labels):
            self._check_fitted()
            return False

        def scan():
            self._check_fitted()
            return True

        return _derived(self, "finite", (self.coef_, layout), scan)

    def _decoding_forbidden(self, seen_only):
        """The forbidden assignments of decoding: ``forbidden_``, with ``seen_only`` also
        the back-off transitions (:meth:`_inference_inputs`); built once per model."""
        if not seen_only:
            return self.forbidden_

        def build():
            forbidden = dict(self.forbidden_)
            for e, mask in self.layout_.backoff_edges.items():
                forbidden[e] = forbidden[e] | mask if e in forbidden else mask
            return forbidden

        return _derived(self, "forbidden_seen", (self.forbidden_, self.layout_), build)

    def _decoding_method(self):
        """The model's inference method (:func:`resolve_method`), without the inputs of
        a call (seeds, threads, weights); built once per model and settings."""
        states = getattr(self, "joint_states_", None)
        return _derived(
            self, "method", (self.inference, self.graph_, states, self.bp_max_iter, self.bp_tol),
            lambda: resolve_method(self.inference, self.graph_, states,
                                   max_iter=self.bp_max_iter, tol=self.bp_tol))

    def _decoding_seeds(self, n_seq):
        """Per sequence the seed of randomised inference (TRP's trees): predictions are
        repeatable, without a ``random_state`` the seeds come from seed 0."""
        state = 0 if self.random_state is None else self.random_state
        if n_seq != 1 or not isinstance(state, numbers.Integral):   # a RandomState moves on
            return check_random_state(state).randint(0, 2 ** 31 - 1, size=n_seq).astype(np.uint64)

        def build():
            seeds = check_random_state(state).randint(0, 2 ** 31 - 1, size=1).astype(np.uint64)
            seeds.setflags(write=False)
            return seeds

        return _derived(self, "one_seed", (state,), build)

    def _decoded_labels(self, X):
        seq_ptr, unary, pair, method = self._inference_inputs(X, seen_only=True)
        labels, status, n_iter = method.map(seq_ptr, unary, pair)
        decoded = np.empty(labels.shape, dtype=object)
        for c in range(self.n_chains_):
            decoded[:, c] = self.classes_[c][labels[:, c]]
        out = []
        for s in range(len(seq_ptr) - 1):
            block = decoded[seq_ptr[s]:seq_ptr[s + 1]]
            out.append(self._segment_output(block[:, 0].copy() if self._one_chain
                                            else block.copy()))
        return out, status, n_iter

    def predict(self, X):
        """Most probable labelling of each sequence by the model's ``inference`` method.

        Exact Viterbi over one chain or the joint label states by default; TRP
        max-product where exact inference does not apply (:meth:`decode` says
        which, per sequence).

        Returns
        -------
        list of ndarray
            Per sequence an object array ``(n_tokens, n_chains)``, or 1-D when
            the model was fitted on one chain given as 1-D label sequences.
        """
        if (getattr(self, "anchors_", None) or {}).get("chains"):
            return [d.labels for d in self.decode(X)]
        return self._decoded_labels(X)[0]

    def _fixed_labels(self, fixed, seq_ptr, method):
        """Validated, encoded ``fixed`` (or None), checked against the model's constraints."""
        encoded = encode_fixed(fixed, seq_ptr, self.classes_, self._one_chain)
        if encoded is not None:
            check_fixed(encoded, self.graph_, self.forbidden_)
        return encoded

    def _as_output(self, labels):
        """Label indices ``(T, C)`` of one sequence as the labels :meth:`predict` returns."""
        out = np.empty(labels.shape, dtype=object)
        for c in range(self.n_chains_):
            out[:, c] = self.classes_[c][labels[:, c]]
        return self._segment_output(out[:, 0].copy() if self._one_chain else out)

    def decode(self, X, fixed=None, n_best=1):
        """Most probable labelling(s) of each sequence, with how far they can be trusted.

        Parameters
        ----------
        X : list of sequences
            As for :meth:`fit`.
        fixed : list, optional
            Per sequence an array-like ``(n_tokens, n_chains)`` of labels --
            ``(n_tokens,)`` for a model fitted on 1-D label sequences -- with
            ``None`` where the label is free (or ``None`` for a whole free
            sequence): decode given these labels (an annotator's corrections,
            or one chain given and the others inferred).
        n_best : int, default=1
            Number of labellings per sequence: the best one and up to
            ``n_best - 1`` next best in ``alternatives``.

        Returns
        -------
        list of SequenceDecoding
            Per sequence its ``labels`` (as :meth:`predict` returns them),
            ``status`` (``"exact"``: exact inference, e.g. over the joint label
            states; ``"converged"``: loopy max-product converged;
            ``"approximate"``: it did not), ``n_iter`` (inference iterations),
            ``log_prob`` (``log p(labels | x)``, given the fixed labels if
            any: exact when the status is ``"exact"``, else the TRP/Bethe
            estimate) and ``alternatives``: with ``n_best > 1``
            the next best distinct labellings, best first, as
            ``SequenceDecoding`` records -- exact (A* k-best search) with exact
            inference, ``"approximate"`` with TRP (chain-wise search from the
            TRP labelling; see the user guide).

        Raises
        ------
        ValueError
            When ``fixed`` has the wrong shape, holds a label unknown to the
            model, or fixed labels the model's constraints forbid (forbidden
            transitions or couplings, or no labelling through the free tokens
            between them); the message names the sequence, token and chain.

        Notes
        -----
        With ``inference="joint"``, fixed labels in a label combination never
        seen in training (not in ``joint_states_``) are decoded over the seen
        combinations plus those the sequence's fixed labels need: a fully
        fixed token's combination, and for a partially fixed token that agrees
        with no seen combination its fixed labels with every label of the free
        chains (explicitly forbidden couplings left out).  ``log_prob`` is
        then relative to that extended space, whose normaliser is a lower
        bound on the model's over all combinations (see the user guide,
        "Label combinations never seen in training").

        Examples
        --------
        >>> from skfcrf import FactorialCRF
        >>> X = [[{"w=the": 1}, {"w=cat": 1}], [{"w=a": 1}, {"w=dog": 1}]]
        >>> y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP")]]
        >>> crf = FactorialCRF(max_iter=50, forbidden_transitions=None).fit(X, y)
        >>> result = crf.decode(X)[0]
        >>> result.labels.tolist(), result.status
        ([['DT', 'B-NP'], ['NN', 'I-NP']], 'exact')
        >>> bool(result.log_prob < 0)
        True
        >>> given = crf.decode(X[:1], fixed=[[("NN", None), (None, None)]], n_best=2)[0]
        >>> given.labels[0].tolist(), len(given.ranked)
        (['NN', 'I-NP'], 2)
        """
        if not isinstance(n_best, numbers.Integral) or isinstance(n_best, bool) or n_best < 1:
            raise ValueError(f"n_best must be a positive integer, got {n_best!r}")
        if fixed is not None and getattr(self, "segment_codec_", None) is not None:
            raise ValueError(
                f"decode(fixed=...) is not supported with segment_encoding="
                f"{self.segment_encoding!r}: an inside label does not say which encoded "
                "label (middle or end) its token has")
        ranked = self._ranked(X, self._with_anchors(X, fixed), int(n_best))
        out = []
        for entries in ranked:
            records = [SequenceDecoding(self._as_output(lab), st, n, log_prob=lp)
                       for lab, lp, st, n in entries]
            first = records[0]
            if len(records) > 1:
                first = SequenceDecoding(first.labels, first.status, first.n_iter,
                                         log_prob=first.log_prob,
                                         alternatives=tuple(records[1:]))
            out.append(first)
        return out

    def _ranked(self, X, fixed, n_best, seen_only=True):
        """:meth:`decode`'s ranked labellings: over the seen transitions where the model
        decodes so (:meth:`_decodes_seen`) and the fixed labels allow it, else (per
        sequence) over the back-off model."""
        seq_ptr, unary, pair, method = self._inference_inputs(X, seen_only=seen_only)
        try:
            encoded = self._fixed_labels(fixed, seq_ptr, method)
            return method.decode_ranked(seq_ptr, unary, pair, encoded, n_best)
        except ValueError:
            X, fixed = _listed(X), _listed(fixed)
            if not (seen_only and self._decodes_seen() and isinstance(fixed, list)
                    and isinstance(X, list) and len(fixed) == len(X)):
                raise
        # some sequence's fixed labels need a transition never seen in training
        if len(X) == 1:
            return self._ranked(X, fixed, n_best, seen_only=False)
        return [self._ranked([x], [f], n_best)[0] for x, f in zip(X, fixed)]

    def log_prob(self, X, y):
        """``log p(y | x)`` of given labellings, per sequence.

        Exact for one chain and for exact inference over several chains
        (``inference`` resolving to ``"joint"`` or ``"exact"``); with TRP the
        Bethe estimate (capped at 0).  A labelling the model's constraints
        forbid (forbidden transitions or couplings) has ``-inf``.

        With ``"joint"`` the normaliser ``log Z`` is over the label
        combinations seen in training (``joint_states_``), plus, for a
        sequence whose labelling uses others, those combinations (per
        sequence; for a token with missing labels that agree with no seen
        combination, its given labels with every label of the missing
        chains).  The value is then the log-probability under the model
        restricted to that extended space: its ``log Z`` is a lower bound on
        the one over all combinations, so the value is an upper bound on the
        full model's, and as the space depends on the labelling, the
        probabilities of labellings with different unseen combinations need
        not sum to 1 (see the user guide, "Label combinations never seen in
        training").  Labellings over the seen combinations are scored as
        before.

        A labelling with missing labels (``None``) gets the log-probability
        of its given labels, ``log sum_y' p(y' | x)`` over the labellings
        ``y'`` that agree with them: ``log Z(given labels) - log Z``.

        Parameters
        ----------
        X : list of sequences
        y : list of label sequences
            As for :meth:`fit`, one labelling per sequence of ``X``; ``None``
            where a label is missing.

        Returns
        -------
        ndarray of shape (n_sequences,)
        """
        y_seqs = self._model_labels(y, "log_prob")
        seq_ptr, unary, pair, method = self._inference_inputs(X)
        if len(y_seqs) != len(seq_ptr) - 1:
            raise ValueError(f"X and y have different numbers of sequences: "
                             f"{len(seq_ptr) - 1} != {len(y_seqs)}")
        self._check_lengths(seq_ptr, y_seqs)
        y_seqs = [seq if len(seq) else np.empty((0, self.n_chains_), dtype=object)
                  for seq in y_seqs]
        gold = encode_labels(self.classes_, y_seqs,
                             "it was not in the training data; log_prob scores labellings "
                             "with the labels the model was trained on only")
        return method.log_probs_given(seq_ptr, unary, pair, gold)

    def _model_labels(self, y, caller):
        """Label sequences ``y`` of this fitted model's chains, checked (missing labels
        allowed) and in its segment encoding (which needs every label)."""
        self._check_fitted()
        y_seqs, _ = check_label_sequences(y, n_chains=self.n_chains_,
                                          allow_empty_sequences=True, allow_missing=True)
        codec = getattr(self, "segment_codec_", None)
        if codec is not None:
            if any(np.equal(seq, None).any() for seq in y_seqs):
                raise ValueError(f"{caller} with segment_encoding={self.segment_encoding!r} "
                                 "needs every label of y")
            y_seqs = [codec.encode(seq) for seq in y_seqs]
        return y_seqs

    def predict_marginals(self, X, fixed=None, return_status=False):
        """Marginal probability of every label of every chain at every token.

        Parameters
        ----------
        X : list of sequences
        fixed : list, optional
            Fixed labels as for :meth:`decode`: the marginals given them (a
            fixed label has marginal 1).
        return_status : bool, default=False
            Also return, per sequence, how far the marginals can be trusted:
            ``"exact"`` (exact inference) or, for TRP sum-product,
            ``"converged"`` / ``"approximate"``.

        Returns
        -------
        marginals : list of list of ndarray
            Per sequence, per chain a float array ``(n_tokens, n_labels_c)``.
        status : list of str
            Only with ``return_status=True``.

        Raises
        ------
        ValueError
            For ``fixed`` as in :meth:`decode`.
        """
        return self._marginals(X, fixed, return_status, tempered=True)

    def _marginals(self, X, fixed, return_status, tempered):
        """:meth:`predict_marginals`, with ``marginal_temperatures_`` applied or not."""
        seq_ptr, unary, pair, method = self._inference_inputs(X)
        fixed = self._fixed_labels(fixed, seq_ptr, method)
        node, status, _ = method.marginals_given(seq_ptr, unary, pair, fixed)
        off = self.graph_.label_offset
        temperatures = getattr(self, "marginal_temperatures_", None) if tempered else None
        chains = []
        for c in range(self.n_chains_):
            block = node[:, off[c]:off[c + 1]]
            if temperatures is not None and temperatures[c] != 1.0:
                block = temper(block, float(temperatures[c]))
            chains.append(block)
        marginals = [[chains[c][seq_ptr[s]:seq_ptr[s + 1]].copy() for c in range(self.n_chains_)]
                     for s in range(len(seq_ptr) - 1)]
        return (marginals, [str(v) for v in status]) if return_status else marginals

    def calibrate(self, X, y):
        """Fit the marginal temperatures on labelled sequences held out from training.

        Per chain the temperature ``T_c`` that minimises the Brier score of the
        tempered marginals ``p ** (1 / T_c)`` of ``X`` against ``y`` replaces
        ``marginal_temperatures_`` (the same fit as ``calibration="temperature"``
        makes on its cross-fitted folds; see the user guide, "Calibrated
        marginals").  The weights are not touched: :meth:`predict`,
        :meth:`decode` and :meth:`log_prob` are unchanged, and only
        :meth:`predict_marginals` is tempered.  The cost is one
        :meth:`predict_marginals` of ``X``, against the ``calibration_cv - 1``
        extra fits of ``calibration="temperature"``; the sequences must not be
        among those the model was fitted on, or the temperatures come out at or
        below 1 (a model is nearly always right, and sure, on its training data).  A
        later :meth:`fit` sets the temperatures again.

        Parameters
        ----------
        X : list of sequences
            Sequences held out from training (a development set).
        y : list of label sequences
            Their labels, as for :meth:`fit`; ``None`` where a label is missing
            (left out).  A label the model was not trained on counts as a token
            the model gets wrong.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            When ``X`` and ``y`` differ in the number of sequences or of tokens,
            or ``y`` in the number of chains; with a ``segment_encoding`` other
            than ``"bio"``, when a label is missing.

        Examples
        --------
        >>> from skfcrf import FactorialCRF
        >>> X = [[{"w=the": 1}, {"w=cat": 1}], [{"w=a": 1}, {"w=dog": 1}]]
        >>> y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP")]]
        >>> crf = FactorialCRF(max_iter=20).fit(X, y)
        >>> X_dev = [[{"w=the": 1}, {"w=dog": 1}]]
        >>> y_dev = [[("DT", "B-NP"), ("NN", "I-NP")]]
        >>> crf.calibrate(X_dev, y_dev).marginal_temperatures_.shape
        (2,)
        """
        y_seqs = self._model_labels(y, "calibrate")
        X = _listed(X)
        if isinstance(X, list) and len(X) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: "
                             f"{len(X)} != {len(y_seqs)}")
        marginals = self._marginals(X, None, False, tempered=False)
        self._check_lengths(np.cumsum([0] + [len(m[0]) for m in marginals]), y_seqs)
        self.marginal_temperatures_ = np.array(
            [fit_temperature(m, g) for m, g in held_out_targets(self, marginals, y_seqs)])
        return self

    @property
    def n_nonzero_(self):
        """Number of non-zero weights in ``coef_``."""
        if not hasattr(self, "coef_"):
            raise AttributeError("'FactorialCRF' object has no attribute 'n_nonzero_' "
                                 "(not fitted yet)")
        return int(np.count_nonzero(self.coef_))

    def top_weights(self, n=20, chain=None, kind=None):
        """The ``n`` largest-magnitude weights as records, largest first.

        Parameters
        ----------
        n : int, default=20
        chain : int, optional
            Only weights of templates that involve this chain.
        kind : {"unary", "transition", "coupling", "state_transition", "backoff"}, optional
            Only weights of this template kind.

        Returns
        -------
        list of WeightRecord
            Each with ``kind``, ``chains``, ``observation`` (name, or ``"bias"``),
            ``labels`` (the label assignment scored) and ``weight``.

        Examples
        --------
        >>> from skfcrf import FactorialCRF
        >>> X = [[["w=the"], ["w=cat"]], [["w=a"], ["w=dog"]]]
        >>> y = [["DT", "NN"], ["DT", "NN"]]
        >>> crf = FactorialCRF(max_iter=50).fit(X, y)
        >>> top = crf.top_weights(n=1, kind="unary")[0]
        >>> top.kind, top.labels in [("DT",), ("NN",)], top.weight > 0
        ('unary', True, True)
        """
        self._check_fitted()
        return _top_weights(self.layout_, self.coef_, self.classes_, self.observation_names_,
                            n=n, chain=chain, kind=kind)

    def score(self, X, y):
        """Joint accuracy (:func:`skfcrf.metrics.joint_accuracy`): the fraction of tokens
        at which every chain is right.

        Tokens with a missing label (``None``) in ``y`` and empty sequences are
        skipped; ``ValueError`` when nothing is left to score.
        """
        y_seqs, _ = check_label_sequences(y, allow_empty_sequences=True, allow_missing=True)
        pred = self.predict(X)
        if len(pred) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: {len(pred)} != {len(y_seqs)}")
        scored = [i for i, t in enumerate(y_seqs) if len(t)]     # empty ones hold nothing
        return joint_accuracy([y_seqs[i] for i in scored], [pred[i] for i in scored])

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model to ``path`` (a ``.npz`` file of arrays and JSON; no pickle).

        ``path`` is a path (written atomically: a failed save leaves any previous
        file intact) or a binary file object.
        """
        self._check_fitted()
        _save_model(self, path)

    @classmethod
    def load(cls, path):
        """Load a model written by :meth:`save` from a path or binary file object.

        Executes no code from the file; a damaged, foreign or newer-format file
        raises ``ValueError`` saying what is wrong.
        """
        return _load_model(cls, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags


#: At most this many tokens in a call: the kernels run on one thread, and
#: :func:`kernel_threads` (a scan of the loaded libraries, ~2 ms) is not asked.
TINY_TOKENS = 256

#: Per estimator, what prediction derived from its fitted state (:func:`_derived`).
_DERIVED = weakref.WeakKeyDictionary()


def _derived(estimator, name, inputs, build):
    """``build()``, made once for the fitted objects and settings ``inputs`` of
    ``estimator`` and reused while they stay the same objects (or equal scalars);
    kept beside the estimator, not in it (nothing more to pickle or clone)."""
    cache = _DERIVED.get(estimator)
    if cache is None:
        cache = _DERIVED.setdefault(estimator, {})
    entry = cache.get(name)
    if entry is not None and all(_same(a, b) for a, b in zip(entry[0], inputs)):
        return entry[1]
    value = build()
    cache[name] = (inputs, value)
    return value


def _same(a, b):
    """The same object, or equal str / numbers (a setting set again)."""
    return a is b or (type(a) is type(b) and isinstance(a, (str, numbers.Number)) and a == b)


def _listed(seqs):
    """``seqs`` as a list when it is an iterable of sequences, else unchanged (for the checks)."""
    if seqs is None or isinstance(seqs, (str, bytes, dict)):
        return seqs
    try:
        return list(seqs)
    except TypeError:
        return seqs


def _solver_option_names(solver):
    """The ``solver_options`` keys of an online solver: its class's parameters but
    those the estimator sets from its own (``max_iter``, ``tol``, ``batch_size``, ...)."""
    set_by_estimator = {"l2", "max_iter", "tol", "delta", "eta0", "random_state", "memory",
                        "batch_size", "tau"}
    params = inspect.signature(SOLVERS[solver]).parameters
    return tuple(p for p in params if p not in set_by_estimator)


def _label_arrays(y):
    """``y`` as ``(n_tokens, n_chains)`` object arrays, and whether it was 1-D."""
    seqs = [np.asarray(s, dtype=object) for s in y]
    if not seqs:
        raise ValueError("y holds no sequence")
    one_chain = seqs[0].ndim == 1
    return [s.reshape(len(s), -1) for s in seqs], one_chain


def _one_or_all(labels, one_chain):
    return labels[:, 0].copy() if one_chain else labels


def kernel_threads(n_jobs):
    """Threads the compiled kernels use for ``n_jobs``, within the process's OpenMP limit.

    ``n_jobs`` as in joblib (``None``: 1, ``-1``: all cores), capped by the
    OpenMP thread limit in force -- which joblib lowers in its worker processes
    (``GridSearchCV(n_jobs=2)`` on 2 cores gives each worker 1) and which
    ``threadpoolctl.threadpool_limits(user_api="openmp")`` sets -- so nested
    parallelism does not oversubscribe the cores.
    """
    n = effective_n_jobs(n_jobs)
    limits = [info["num_threads"] for info in threadpool_info()
              if info.get("user_api") == "openmp"]
    return max(1, min([n, *limits]))


def training_problem(estimator, X, y):
    """What ``estimator.fit(X, y)`` minimises: validate, encode, build the structure.

    Sets the estimator's structure attributes (``classes_``, ``graph_``,
    ``layout_``, ...) as ``fit`` does, but runs no solver.  Tests, benchmarks
    and custom solvers use it to reach the objective object.

    Returns
    -------
    TrainingProblem
        ``(objective, theta0, random_state)``: the objective object
        (``objective.loss_gradient(theta) -> (loss, grad)``), the starting
        weights (zeros, or the fitted ones with ``warm_start``) and the random
        state the solver continues from.
    """
    estimator._validate_params()
    Xm, seq_ptr, gold, known, labelled, warm = estimator._encode_training_data(X, y)
    rng = check_random_state(estimator.random_state)
    seeds = rng.randint(0, 2 ** 31 - 1, size=len(seq_ptr) - 1).astype(np.uint64)
    Xm = Xm.tocsr()
    if len(labelled) < len(seeds):     # sequences without a label contribute nothing
        rows, seq_ptr = select_sequences(seq_ptr, labelled)
        Xm, gold, seeds = Xm[rows], gold[rows], seeds[labelled]
        known = None if known is None else known[rows]
    batch = TrainingBatch(Xm, seq_ptr, gold, estimator.layout_, seeds, known)
    theta0 = estimator.coef_.copy() if warm else np.zeros(estimator.layout_.n_params)
    return TrainingProblem(estimator._objective(batch), theta0, rng)
