"""Training a :class:`~skfcrf.FactorialCRF` on a Dask cluster: :class:`DaskFactorialCRF`.

Needs ``dask`` and ``distributed`` (``pip install skfcrf[dask]``); importing
``skfcrf`` itself never imports them.

How a fit runs (the client is the process calling ``fit``)::

    training data        a dask.bag of (x, y) pairs, P partitions in a fixed order
                         (lists are split into partitions by the client)
    1. statistics        per partition, on the workers: observation names in order
                         of first occurrence and their instance frequencies, labels
                         per chain, sequence and token counts -> the client merges
                         them in partition order: vocabulary, pruning, label sets,
                         the graph
    2. encoding          per partition, once: (CSR observations, seq_ptr, gold) kept
                         in the workers' memory (futures held by the client)
    3. structure         per encoded partition: feature-table keys of the
                         "supported" templates, label combinations, seen
                         transitions, column counts -> the client merges them and
                         builds layout_, joint_states_, forbidden_ as a local fit
                         does from its one batch (skfcrf.model._building)
    4. objectives        per encoded partition: the objective object of the
                         estimator's settings over that partition (prior off)
    5. optimisation      in the client, by the solver code of FactorialCRF (scipy
                         L-BFGS, BlockLBFGS, the likelihood fine-tuning stage);
                         every loss/gradient evaluation sends theta out once (a
                         task holding it; workers copy it from each other), evaluates
                         each partition's objective and sums
                         the results over a fixed tree of partition indices (fan-in
                         :data:`FANIN`): one gradient reaches the client; the prior
                         is added once, in the client

The data term of every objective is a sum over sequences, so the sum over the
partitions is the local objective up to floating-point summation order.  The
reduction tree depends only on the number of partitions, never on which worker
holds which partition or finishes first: the fitted weights are bit-identical
for every assignment of the same partitions to workers.

A worker lost during ``fit`` takes its partitions' encoded data and objectives
with it; Dask recomputes them from the collection (the futures keep their
lineage: raw partition -> encoding -> objective) on the remaining or restarted
workers, and the evaluation that needed them waits for them.
"""
import numbers
import uuid

try:
    import dask
    import dask.bag as db
    import distributed
except ImportError as exc:  # pragma: no cover - exercised when dask is absent
    raise ImportError(
        "skfcrf.dask needs dask and distributed: pip install skfcrf[dask] "
        f"(or pip install 'dask[distributed]'); the import failed with: {exc}"
    ) from exc

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from skfcrf._validation import check_label_sequences
from skfcrf.estimators._anchoring import anchors_record
from skfcrf.estimators._fcrf import FactorialCRF, kernel_threads
from skfcrf.estimators._observations import ObservationCounts, ObservationEncoder
from skfcrf.model._building import StructureStatistics, collect_options
from skfcrf.model._inspection import weight_mask
from skfcrf.model._labels import edge_name, encode_labels, label_sets, merge_label_sets
from skfcrf.model._layout import check_gold_allowed
from skfcrf.objectives import OBJECTIVES, Restricted, TrainingBatch
from skfcrf.solvers import SEQUENCE_SOLVERS

__all__ = ["DaskFactorialCRF", "FANIN"]

#: Partial sums per node of the reduction tree (partition results summed in index order).
FANIN = 8


# ---------------------------------------------------------------------- worker side
def _pairs(part, index):
    """``(X, y)`` lists of a partition of (x, y) pairs."""
    part = list(part)
    for i, item in enumerate(part):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"partition {index}, element {i}: expected an (x, y) pair of "
                             f"sequences, got {type(item).__name__}")
    return [p[0] for p in part], [p[1] for p in part]


def _in_partition(index, fn, *args):
    """``fn(*args)``; a ValueError names the partition (sequence indices are its own)."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise ValueError(f"partition {index} (sequences numbered within it): {exc}") from None


def _partition_statistics(part, index):
    """Step 1: what the vocabulary, pruning and label sets need, or None for no sequences."""
    X, y = _pairs(part, index)
    if not X:
        return None

    def stats():
        y_seqs, one_chain = check_label_sequences(y)
        n_chains = y_seqs[0].shape[1]
        return dict(counts=ObservationEncoder().count(X), n_chains=n_chains,
                    one_chain=one_chain, labels=label_sets(y_seqs, n_chains))

    return _in_partition(index, stats)


def _encode_partition(part, index, encoder, classes):
    """Step 2: ``(X csr, seq_ptr, gold)`` of a partition with the fitted encoder and labels."""
    X, y = _pairs(part, index)

    def encode():
        y_seqs, _ = check_label_sequences(y, n_chains=len(classes))
        Xm, seq_ptr = encoder.transform(X)
        FactorialCRF._check_lengths(seq_ptr, y_seqs)
        return Xm.tocsr(), seq_ptr, encode_labels(classes, y_seqs)

    return _in_partition(index, encode)


def _structure_statistics(encoded, graph, options):
    """Step 3: the partition's :class:`~skfcrf.model._building.StructureStatistics`."""
    return StructureStatistics.collect(graph, *encoded, **options)


def _partition_objective(encoded, index, layout, forbidden, seeds, name, options, n_jobs):
    """Step 4: the objective object of a partition, without the prior (added in the client)."""
    Xm, seq_ptr, gold = encoded
    _in_partition(index, check_gold_allowed, layout.graph, seq_ptr, gold, forbidden,
                  lambda e: edge_name(layout.graph, e))
    batch = TrainingBatch(Xm, seq_ptr, gold, layout, seeds)
    return OBJECTIVES[name](batch, **_worker_options(options, forbidden, n_jobs))


def _derived_objective(objective, name, options, n_jobs):
    """Another objective (the fine-tuning likelihood) over a partition objective's batch."""
    return OBJECTIVES[name](objective.batch,
                            **_worker_options(options, objective.forbidden, n_jobs))


def _worker_options(options, forbidden, n_jobs):
    return dict(options, sigma=np.inf, forbidden=forbidden, n_threads=kernel_threads(n_jobs))


def _evaluate(objective, theta, chains=None):
    """One partition's unpenalised data term: ``(loss or per-chain losses, gradient, trp)``.

    ``chains``: the chains of a chain-wise objective to evaluate (None: all).
    ``trp`` is ``(converged sequences, TRP iterations, sequences)`` of this
    evaluation, or None when it ran no loopy inference.
    """
    if hasattr(objective, "chain_losses_gradient"):
        loss, grad = objective.chain_losses_gradient(theta, chains)
    else:
        loss, grad = objective.data_loss_gradient(theta)
    trp = None
    converged = getattr(objective, "_converged", None)
    if converged:
        c, n = np.concatenate(converged), np.concatenate(objective._n_iter)
        trp = (float(c.sum()), float(n.sum()), int(c.size))
        converged.clear()
        objective._n_iter.clear()
    return loss, grad, trp


def _block_costs(objective):
    return objective.block_costs()


def _all_built(*objectives):
    """Nothing; raises the error of an objective that could not be built (early, not at
    the first evaluation)."""
    return None


def _identity(value):
    return value


def _add(*results):
    """Sum of partition results, in the order given."""
    loss, grad, trp = results[0]
    loss, grad = np.array(loss, dtype=np.float64), grad.copy()
    trp = None if trp is None else list(trp)
    for r_loss, r_grad, r_trp in results[1:]:
        loss += r_loss
        grad += r_grad
        if r_trp is not None:
            trp = list(r_trp) if trp is None else [a + b for a, b in zip(trp, r_trp)]
    return loss, grad, trp


def _predict_partition(part, model):
    part = list(part)
    return model.predict(part) if part else []


# ---------------------------------------------------------------------- client side
class _Cluster:
    """The encoded training partitions on the cluster and the evaluations over them."""

    def __init__(self, client, partitions):
        self.client = client
        self.partitions = partitions        # Delayed objects, one per partition, in order
        self.encoded = None
        self.objectives = []                # futures of every objective built (kept to the end)
        self.n_evaluations = 0

    def compute(self, tasks):
        return self.client.gather(self.client.compute(tasks))

    def put(self, value):
        """A future of ``value``, made by a task rather than scattered: when the worker
        holding it is lost, the scheduler can make it again."""
        return self.client.submit(_identity, value, pure=False)

    def evaluate(self, objectives, theta, chains=None):
        """The data term summed over the partitions: ``(loss, grad, trp)``."""
        theta_f = self.put(np.ascontiguousarray(theta, dtype=np.float64))
        level = [self.client.submit(_evaluate, obj, theta_f, chains, pure=False)
                 for obj in objectives]
        while len(level) > 1:   # a fixed tree over the partition indices
            level = [self.client.submit(_add, *level[i:i + FANIN], pure=False)
                     for i in range(0, len(level), FANIN)]
        self.n_evaluations += 1
        return self.client.gather(level[0])

    def objective(self, template, partition_objectives, n_jobs):
        """The cluster version of ``template`` (an objective over no sequences).

        Its partitions' objectives are built from ``partition_objectives``
        (futures; the first stage's) by the workers.
        """
        name = _objective_name(template)
        options = template._options()
        parts = [self.client.submit(_derived_objective, obj, name, options, n_jobs, pure=False)
                 for obj in partition_objectives]
        self.objectives.extend(parts)
        return _cluster_objective(template, self, parts)


def _objective_name(objective):
    return next(k for k, v in OBJECTIVES.items() if type(objective) is v)


class _ClusterData:
    """Mixin: the data term is the sum of the partitions' on the cluster.

    Mixed into an objective class over no sequences: the class's own
    ``loss_gradient`` (the prior, the independent chains' zeroed couplings)
    runs in the client around the summed data term.
    """

    def _bind(self, cluster, partitions):
        self._cluster = cluster
        self._partitions = partitions
        self._trp = None
        return self

    def _sum(self, theta, chains=None):
        loss, grad, trp = self._cluster.evaluate(self._partitions, theta, chains)
        if trp is not None:
            self._trp = trp if self._trp is None else [a + b for a, b in zip(self._trp, trp)]
        return loss, grad

    def chain_losses_gradient(self, theta, chains=None):
        return self._sum(theta, chains)

    def block_costs(self):
        """The partitions' estimated block costs, summed (every term is a sum over
        tokens)."""
        client = self._cluster.client
        return np.sum(client.gather([client.submit(_block_costs, obj, pure=False)
                                     for obj in self._partitions]), axis=0)

    def data_loss_gradient(self, theta):
        loss, grad = self._sum(theta)   # per-chain losses for the chain-wise objectives
        return float(np.sum(loss)), grad

    def inference_stats(self):
        if self._trp is None:
            return None
        converged, iterations, n = self._trp
        return {"method": self.method.name, "converged_fraction": converged / n,
                "mean_iterations": iterations / n}


_CLUSTER_CLASSES = {}


def _cluster_objective(template, cluster, partitions):
    """``template``'s class with its data term on the cluster, same options."""
    cls = type(template)
    if cls not in _CLUSTER_CLASSES:
        _CLUSTER_CLASSES[cls] = type(f"Cluster{cls.__name__}", (_ClusterData, cls), {})
    obj = _CLUSTER_CLASSES[cls](template.batch, **template._options())
    return obj._bind(cluster, partitions)


def _empty_batch(layout, n_chains):
    """A batch of no sequences: what the client-side objectives are built over."""
    return TrainingBatch(sp.csr_matrix((0, layout.n_features)), np.zeros(1, dtype=np.int64),
                         np.zeros((0, n_chains), dtype=np.int32), layout,
                         np.zeros(0, dtype=np.uint64))


class DaskFactorialCRF(FactorialCRF):
    """A :class:`~skfcrf.FactorialCRF` trained on a Dask cluster.

    The model, its parameters and its fitted attributes are those of
    ``FactorialCRF``; only where the training data lives and where the
    loss/gradient is computed differ: every worker encodes its partitions of
    the training collection once and keeps them in memory, the client runs
    the optimiser and sends the weights out once per loss/gradient
    evaluation, and one gradient comes back (module docstring).  The fitted
    weights equal a local fit on the same sequences up to floating-point
    summation order, and are the same bit for bit for every assignment of
    the same partitions to workers.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster to train on; None uses the default client
        (``distributed.default_client()``).  Clones share it; it is not
        pickled with the estimator.
    npartitions : int, optional
        Partitions that list input is split into; None: one per worker
        thread of the cluster.  The weights depend (by rounding only) on the
        partitioning, so pass it to get identical weights on clusters of
        different sizes.  A bag keeps its own partitions.
    **params
        Every parameter of :class:`~skfcrf.FactorialCRF`, with the same
        meaning and defaults.  ``n_jobs`` is the number of kernel threads in
        each task on a worker.  Not supported on a cluster (``fit`` raises
        ``ValueError``): ``solver="olbfgs"`` and the online trainers
        (``"sgd"``, ``"perceptron"``, ``"passive_aggressive"``, ``"arow"``:
        one sequence at a time), ``early_stopping=True``,
        ``warm_start=True``, ``calibration``, ``segment_encoding`` other than
        ``"bio"`` and ``forbidden_transitions="backoff"`` (its deleted fine-tuning
        runs on one process's batch); fit a local model
        (:meth:`to_local`) for those.  So ``forbidden_transitions="auto"``
        resolves to ``"unseen"`` here where a local fit backs off.  ``anchors="auto"``
        fits its held-out copy on the cluster, from list input only (a bag's
        sequences cannot be held out: no anchor).
        Missing labels (``None`` in ``y``, partial labels) are not supported on a
        cluster either: the partition that holds one raises ``ValueError``.

    Attributes
    ----------
    n_partitions_ : int
        Non-empty partitions trained on.
    n_evaluations_ : int
        Loss/gradient evaluations on the cluster.

    Notes
    -----
    Every fitted attribute of :class:`~skfcrf.FactorialCRF` (``coef_``,
    ``classes_``, ``loss_curve_``, ...) is set as a local fit sets it.
    :meth:`fit` and :meth:`predict` use the cluster; the other methods
    (``decode``, ``predict_marginals``, ``log_prob``, ``save``, ...) run in
    the client on lists, as a local model's do.

    See Also
    --------
    FactorialCRF : the local estimator; :meth:`to_local` returns one.

    Examples
    --------
    .. code-block:: python

        from distributed import Client, LocalCluster
        from skfcrf.dask import DaskFactorialCRF

        client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
        bag = dask.bag.from_sequence(list(zip(X, y)), npartitions=8)  # (x, y) pairs
        crf = DaskFactorialCRF(max_iter=100).fit(bag)
        y_pred = crf.predict(X_test)           # a list in, a list out
        local = crf.to_local()                 # a plain FactorialCRF
    """

    #: ``forbidden_transitions="auto"`` keeps the unseen transitions forbidden, without
    #: the back-off weights a local fit adds after training
    #: (:func:`skfcrf.model._building.learns_backoff`): their deleted likelihood runs
    #: on one process's batch.  The trained weights and predictions are the local
    #: fit's.
    _auto_backoff = False

    _parameter_constraints = {
        **FactorialCRF._parameter_constraints,
        "client": "no_validation",
        "npartitions": [None, Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, *, client=None, npartitions=None, sigma=10.0, objective="independent",
                 solver="lbfgs", max_iter=100, tol=1e-5, lbfgs_memory=3, min_instance_freq=1,
                 unary_features="supported", transition_features="default",
                 coupling_features="default", coupling="adjacent", coupling_observations=None,
                 inference="auto", bp_max_iter=1000, bp_tol=1e-6, forbidden_transitions="auto",
                 forbidden_couplings=None, batch_size=32, eta0=0.1, tau=1000.0, n_jobs=None,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10,
                 validation_scoring=None, validation_interval=5, max_memory=None,
                 finetune_iter=10, state_transitions="auto", state_transition_iter=10, l1=0.0,
                 calibration=None, calibration_cv=4, solver_options=None,
                 segment_encoding="bio", anchors="auto"):
        super().__init__(
            sigma=sigma, objective=objective, solver=solver, max_iter=max_iter, tol=tol,
            lbfgs_memory=lbfgs_memory, min_instance_freq=min_instance_freq,
            unary_features=unary_features, transition_features=transition_features,
            coupling_features=coupling_features, coupling=coupling,
            coupling_observations=coupling_observations, inference=inference,
            bp_max_iter=bp_max_iter, bp_tol=bp_tol, forbidden_transitions=forbidden_transitions,
            forbidden_couplings=forbidden_couplings, batch_size=batch_size, eta0=eta0, tau=tau,
            n_jobs=n_jobs, random_state=random_state, verbose=verbose, warm_start=warm_start,
            callback=callback, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            validation_scoring=validation_scoring, validation_interval=validation_interval,
            max_memory=max_memory, finetune_iter=finetune_iter,
            state_transitions=state_transitions, state_transition_iter=state_transition_iter,
            l1=l1, calibration=calibration, calibration_cv=calibration_cv,
            solver_options=solver_options, segment_encoding=segment_encoding, anchors=anchors)
        self.client = client
        self.npartitions = npartitions

    # ------------------------------------------------------------------ sklearn plumbing
    def __sklearn_clone__(self):
        # a Client cannot be copied: the clone shares it, every other parameter is cloned
        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def __getstate__(self):
        state = super().__getstate__()
        state = dict(state)
        state["client"] = None
        state.pop("_cluster", None)
        return state

    def _get_client(self):
        if self.client is not None:
            return self.client
        try:
            return distributed.default_client()
        except ValueError:
            raise ValueError("DaskFactorialCRF needs a Dask client: pass client=... or create "
                             "one first (distributed.Client(...))") from None

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Fit the model on the cluster.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences
            A bag of ``(x, y)`` pairs, one per sequence (then ``y`` is None),
            in the forms :meth:`FactorialCRF.fit` accepts; or a list of
            observation sequences, split into ``npartitions`` partitions.
        y : list of label sequences, optional
            With list ``X``: its label sequences.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For data :meth:`FactorialCRF.fit` refuses (the message names the
            partition; sequence numbers count within it) and for the
            parameters not supported on a cluster.
        """
        self._validate_params()
        for name, bad, why in (("solver", self.solver == "olbfgs"
                                or self.solver in SEQUENCE_SOLVERS, repr(self.solver)),
                               ("early_stopping", self.early_stopping, "True"),
                               ("calibration", self.calibration is not None,
                                repr(self.calibration)),
                               ("forbidden_transitions",
                                isinstance(self.forbidden_transitions, str)
                                and self.forbidden_transitions == "backoff", "'backoff'"),
                               ("warm_start", self.warm_start, "True"),
                               ("segment_encoding", self.segment_encoding != "bio",
                                repr(self.segment_encoding))):
            if bad:
                raise ValueError(f"DaskFactorialCRF does not support {name}={why}; fit a "
                                 "FactorialCRF (e.g. .to_local()) for it")
        client = self._get_client()
        cluster = _Cluster(client, self._partitions(X, y, client))
        try:
            objective, theta0, rng = self._cluster_problem(cluster)
            self._cluster = cluster
            self._fit_objective(objective, theta0, rng)
            self._score_unseen(objective)       # says why the unseen stay forbidden
            self.n_evaluations_ = cluster.n_evaluations
        finally:
            self.__dict__.pop("_cluster", None)
        del objective
        if isinstance(X, db.Bag) and self.anchors == "auto":
            self.anchors_ = anchors_record([], "anchors='auto' chose none: a bag's sequences "
                                               "cannot be held out (pass lists, or anchors=[...])")
        elif isinstance(X, db.Bag):
            self.anchors_ = self._choose_anchors(X, y)
        else:   # "auto": the held-out copy is fitted on the cluster too
            self.anchors_ = self._choose_anchors(list(X), list(y))
        return self

    def _partitions(self, X, y, client):
        """The training data as Delayed partitions of (x, y) pairs, in order."""
        if isinstance(X, db.Bag):
            if y is not None:
                raise ValueError("with a dask bag X holds (x, y) pairs: y must be None")
            return X.to_delayed(optimize_graph=True)
        if y is None:
            raise ValueError("y is required with list X (or pass a dask bag of (x, y) pairs)")
        X, y = list(X), list(y)
        if len(X) != len(y):
            raise ValueError(f"X and y have different numbers of sequences: {len(X)} != {len(y)}")
        if not X:
            raise ValueError("X is empty: at least one sequence is required")
        n = self.npartitions
        if n is None:
            n = max(1, sum(client.nthreads().values()))
        return db.from_sequence(list(zip(X, y)), npartitions=min(int(n), len(X))).to_delayed()

    def _cluster_problem(self, cluster):
        """Steps 1-4 of the module docstring: ``(objective, theta0, random state)``."""
        stats = cluster.compute([dask.delayed(_partition_statistics, pure=True)(p, k)
                                 for k, p in enumerate(cluster.partitions)])
        keep = [k for k, s in enumerate(stats) if s is not None]
        if not keep:
            raise ValueError("X is empty: at least one sequence is required")
        stats = [stats[k] for k in keep]
        partitions = [cluster.partitions[k] for k in keep]
        self.n_partitions_ = len(keep)
        for what in ("n_chains", "one_chain"):
            values = {s[what] for s in stats}
            if len(values) > 1:
                raise ValueError(f"the partitions' label sequences differ in {what}: "
                                 f"{sorted(values)}")
        self.n_chains_, self._one_chain = stats[0]["n_chains"], stats[0]["one_chain"]
        counts = ObservationCounts.merge(s["counts"] for s in stats)
        self.encoder_ = ObservationEncoder().fit_counts(counts, self.min_instance_freq)
        self.classes_ = merge_label_sets(s["labels"] for s in stats)

        encoder_f = cluster.put(self.encoder_)
        cluster.encoded = cluster.client.compute(
            [dask.delayed(_encode_partition, pure=True)(p, k, encoder_f, self.classes_)
             for k, p in zip(keep, partitions)])
        self._fit_graph()
        wanted = collect_options(self, self.n_chains_)
        self._fit_model(StructureStatistics.merge(cluster.client.gather(
            [cluster.client.submit(_structure_statistics, enc, self.graph_, wanted, pure=False)
             for enc in cluster.encoded])))

        rng = check_random_state(self.random_state)
        sizes = [s["counts"].n_sequences for s in stats]
        seeds = rng.randint(0, 2 ** 31 - 1, size=sum(sizes)).astype(np.uint64)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        template = self._objective(_empty_batch(self.layout_, self.n_chains_))
        name, options = _objective_name(template), template._options()
        layout_f = cluster.put(self.layout_)
        parts = [cluster.client.submit(_partition_objective, enc, k, layout_f, self.forbidden_,
                                       seeds[bounds[i]:bounds[i + 1]], name, options,
                                       self.n_jobs, pure=False)
                 for i, (k, enc) in enumerate(zip(keep, cluster.encoded))]
        cluster.client.gather(cluster.client.submit(_all_built, *parts, pure=False))
        cluster.objectives.extend(parts)
        cluster.first_stage = parts
        return _cluster_objective(template, cluster, parts), np.zeros(self.layout_.n_params), rng

    def _finetuning(self, objective, monitor, stopper):
        template = super()._finetuning(objective, monitor, stopper)
        if template is None:
            return None
        cluster = self._cluster
        return cluster.objective(template, cluster.first_stage, self.n_jobs)

    def _state_transitions_alone(self, likelihood, coef):
        # the cluster evaluates the whole likelihood; its gradient is restricted here
        return Restricted(likelihood, weight_mask(self.layout_, "state_transition", None), coef)

    # ------------------------------------------------------------------ prediction
    def to_local(self):
        """A plain :class:`~skfcrf.FactorialCRF` equal to this fitted model.

        Same parameters (without ``client`` and ``npartitions``) and the same
        fitted attributes; it predicts, saves and loads without Dask.
        """
        self._check_fitted()
        params = self.get_params(deep=False)
        local = FactorialCRF(**{k: v for k, v in params.items()
                                if k not in ("client", "npartitions")})
        for key, value in vars(self).items():
            if (key.endswith("_") and not key.startswith("_")) or key == "_one_chain":
                if key not in ("n_partitions_", "n_evaluations_"):
                    setattr(local, key, value)
        return local

    def predict(self, X):
        """Most probable labelling of each sequence, computed on the cluster.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences
            A bag of observation sequences, or a list (split into
            ``npartitions`` partitions, computed, and returned as a list).

        Returns
        -------
        dask.bag.Bag or list of ndarray
            A bag of the per-sequence predictions (lazy, in the order of
            ``X``) for a bag; a list for a list, as
            :meth:`FactorialCRF.predict` returns it.
        """
        model = dask.delayed(self.to_local(), name=f"skfcrf-model-{uuid.uuid4().hex}")
        if isinstance(X, db.Bag):
            return X.map_partitions(_predict_partition, model)
        client = self._get_client()
        X = list(X)
        if not X:
            return self.to_local().predict(X)   # raises as FactorialCRF does
        n = self.npartitions or max(1, sum(client.nthreads().values()))
        bag = db.from_sequence(X, npartitions=min(int(n), len(X)))
        return list(client.compute(bag.map_partitions(_predict_partition, model)).result())
