"""The :class:`FactorialCRF` estimator."""
import numbers
import time
import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from skfcrf._bp.graph import IN_CHAIN
from skfcrf._validation import check_label_sequences
from skfcrf.estimators import _persistence
from skfcrf.estimators._model import (
    SUPPORT_MODES,
    GoldStatistics,
    ParameterLayout,
    build_graph,
    check_gold_allowed,
)
from skfcrf.estimators._observations import ObservationEncoder
from skfcrf.estimators._optim import OnlineLBFGS, lbfgs


def _inference():
    from skfcrf._bp import inference

    return inference


class _Batch:
    """Training data of a set of sequences in the form the kernels need."""

    def __init__(self, X, seq_ptr, gold, layout):
        self.X = X
        self.seq_ptr = seq_ptr
        self.gold = np.ascontiguousarray(gold, dtype=np.int32)
        self.layout = layout
        self.graph = layout.graph
        self.obs = layout.observation_rows(X, seq_ptr)
        self._gold_stats = None

    def gold_stats(self, edge_offset):
        if self._gold_stats is None:
            self._gold_stats = GoldStatistics(self.graph, self.seq_ptr, self.gold, edge_offset)
        return self._gold_stats

    def subset(self, seq_index):
        """The batch restricted to the given sequences (in that order)."""
        lengths = np.diff(self.seq_ptr)[seq_index]
        rows = np.concatenate([np.arange(self.seq_ptr[s], self.seq_ptr[s + 1]) for s in seq_index])
        seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return _Batch(self.X[rows], seq_ptr, self.gold[rows], self.layout)


class FactorialCRF(BaseEstimator):
    """Factorial conditional random field: several coupled label chains over one sequence.

    Each chain has a unary and an in-chain pairwise clique template; coupled
    chain pairs share a between-chain pairwise template at every token; all
    weights are tied across time.  Training maximises the penalised
    pseudolikelihood or likelihood; decoding is exact for one chain and uses
    loopy belief propagation with the TRP schedule for several.

    Parameters
    ----------
    sigma : float, default=10.0
        Standard deviation of the Gaussian prior: the penalty is
        ``sum(w**2) / (2 * sigma**2)``.  ``np.inf`` disables it.
    objective : {"pseudolikelihood", "likelihood"}, default="pseudolikelihood"
        Factor-based pseudolikelihood (each factor conditioned on its Markov
        blanket under the gold labels), or likelihood with marginals from exact
        inference (one chain, or ``inference="exact"``) or TRP sum-product.
    solver : {"lbfgs", "olbfgs"}, default="lbfgs"
        Batch L-BFGS (scipy) or online L-BFGS over mini-batches.
    max_iter : int, default=800
        L-BFGS iterations, or epochs (passes over the data) for ``"olbfgs"``.
    tol : float, default=1e-5
        L-BFGS stops when the relative loss reduction or the largest gradient
        component falls below ``tol``; oLBFGS when the epoch loss improves by
        less than ``tol`` (relative) twice in a row.
    lbfgs_memory : int, default=3
        Number of correction pairs kept by (online) L-BFGS.
    min_instance_freq : int or float, default=1
        Pre-pruning: observations occurring in fewer training sequences are
        dropped.  A float in (0, 1] is a fraction of the training sequences.
    unary_features, transition_features, coupling_features : {"all", "supported", "default"}
        Feature support of the unary, in-chain pairwise and between-chain
        pairwise templates.  ``"default"``: one bias weight per assignment;
        ``"supported"``: the biases plus weights for (observation, assignment)
        pairs seen in training; ``"all"``: the biases plus weights for every
        (observation, assignment) pair.
    coupling : {"adjacent", "all", "none"} or list of (int, int), default="adjacent"
        Which chain pairs are coupled at every token.
    inference : {"auto", "trp", "exact"}, default="auto"
        ``"auto"`` is exact forward-backward/Viterbi for one chain and TRP for
        several; ``"exact"`` with several chains runs forward-backward over the
        product label space (small label sets only).
    bp_max_iter : int, default=1000
        Maximum TRP iterations (spanning trees) per sequence.
    bp_tol : float, default=1e-6
        TRP stops when no message changes by more than this.
    forbidden_transitions : None, list or dict, default=None
        Per chain an iterable of ``(label_from, label_to)`` pairs that may not
        follow each other: a list with one entry per chain, a dict
        ``{chain: pairs}``, or for a one-chain model the pairs themselves.
        Enforced in training and decoding (zero potential).
    forbidden_couplings : None or dict, default=None
        ``{(i, j): [(label_i, label_j), ...]}``: label combinations that may not
        occur at the same token in coupled chains ``i < j`` (e.g. an ``I-`` on a
        coarse chain over an ``O`` on a fine one).
    batch_size : int, default=32
        Sequences per mini-batch of ``solver="olbfgs"``.
    eta0 : float, default=0.1
        oLBFGS initial step size; it decays as ``tau / (tau + t) * eta0``.
    tau : float, default=1000.0
        oLBFGS step-size decay constant.
    n_jobs : int, default=None
        Threads for the loss/gradient and inference kernels (``None``: 1,
        ``-1``: all cores).  With ``objective="pseudolikelihood"`` the fit is
        the same bit for bit for every ``n_jobs`` and every run (gradients are
        summed per fixed block of sequences); with ``"likelihood"`` it differs
        between thread counts by rounding only.
    random_state : int, RandomState or None, default=None
        Seeds TRP's spanning trees and oLBFGS's batch order.  Prediction with
        ``None`` uses seed 0, so predictions are repeatable.
    verbose : int, default=0
        Print the loss at every iteration when > 0.
    warm_start : bool, default=False
        Continue from the fitted weights; the observations and label sets
        learned by the first fit are kept.

    Attributes
    ----------
    classes_ : list of ndarray
        Labels of each chain.
    n_chains_ : int
    n_features_in_ : int
        Number of observations kept after pre-pruning.
    observation_names_ : ndarray of str or None
        Their names (None for matrix input).
    coef_ : ndarray
        All weights (see :mod:`skfcrf.estimators._model` for the layout).
    loss_curve_ : list of float
        Penalised training loss after every iteration (epoch for oLBFGS).
    n_iter_ : int
    inference_stats_ : dict
        ``converged_fraction`` and ``mean_iterations`` of the most recent
        inference (likelihood training or prediction), with ``method``.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> X = [[{"w=the": 1}, {"w=cat": 1}], [{"w=a": 1}, {"w=dog": 1}]]
    >>> y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP")]]
    >>> crf = FactorialCRF(max_iter=50).fit(X, y)
    >>> crf.predict(X)[0].tolist()
    [['DT', 'B-NP'], ['NN', 'I-NP']]
    """

    def __init__(self, sigma=10.0, objective="pseudolikelihood", solver="lbfgs", max_iter=800,
                 tol=1e-5, lbfgs_memory=3, min_instance_freq=1, unary_features="supported",
                 transition_features="default", coupling_features="default", coupling="adjacent",
                 inference="auto", bp_max_iter=1000, bp_tol=1e-6, forbidden_transitions=None,
                 forbidden_couplings=None, batch_size=32, eta0=0.1, tau=1000.0, n_jobs=None,
                 random_state=None, verbose=0, warm_start=False):
        self.sigma = sigma
        self.objective = objective
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.lbfgs_memory = lbfgs_memory
        self.min_instance_freq = min_instance_freq
        self.unary_features = unary_features
        self.transition_features = transition_features
        self.coupling_features = coupling_features
        self.coupling = coupling
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

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        def positive(name, integer=False, allow_inf=False):
            v = getattr(self, name)
            kind = numbers.Integral if integer else numbers.Real
            if isinstance(v, bool) or not isinstance(v, kind) or not (v > 0) or (
                    not allow_inf and not np.isfinite(v)):
                what = "a positive integer" if integer else "a positive number"
                raise ValueError(f"{name} must be {what}, got {v!r}")

        positive("sigma", allow_inf=True)
        positive("max_iter", integer=True)
        positive("tol")
        positive("lbfgs_memory", integer=True)
        positive("bp_max_iter", integer=True)
        positive("bp_tol")
        positive("batch_size", integer=True)
        positive("eta0")
        positive("tau")
        choices = {
            "objective": ("pseudolikelihood", "likelihood"),
            "solver": ("lbfgs", "olbfgs"),
            "unary_features": SUPPORT_MODES,
            "transition_features": SUPPORT_MODES,
            "coupling_features": SUPPORT_MODES,
            "inference": ("auto", "trp", "exact"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        m = self.min_instance_freq
        if isinstance(m, bool) or not isinstance(m, numbers.Real):
            raise ValueError(f"min_instance_freq must be an int >= 1 or a float in (0, 1], got {m!r}")
        if isinstance(m, numbers.Integral):
            if m < 1:
                raise ValueError(f"min_instance_freq must be >= 1 when an int, got {m}")
        elif not 0 < m <= 1:
            raise ValueError(f"min_instance_freq must be in (0, 1] when a float, got {m}")
        if not isinstance(self.verbose, numbers.Integral):
            raise ValueError(f"verbose must be an int, got {self.verbose!r}")

    def _resolve_couplings(self, n_chains):
        spec = self.coupling
        if isinstance(spec, str):
            if spec == "adjacent":
                return [(c, c + 1) for c in range(n_chains - 1)]
            if spec == "all":
                return [(a, b) for a in range(n_chains) for b in range(a + 1, n_chains)]
            if spec == "none":
                return []
            raise ValueError(
                f"coupling must be 'adjacent', 'all', 'none' or a list of chain pairs, got {spec!r}"
            )
        pairs = set()
        try:
            items = list(spec)
        except TypeError:
            raise ValueError(f"coupling must be a string or a list of chain pairs, got {spec!r}") from None
        for item in items:
            try:
                a, b = (int(v) for v in item)
            except (TypeError, ValueError):
                raise ValueError(f"coupling pairs must be (int, int), got {item!r}") from None
            if a == b or not (0 <= a < n_chains and 0 <= b < n_chains):
                raise ValueError(
                    f"coupling pair {item!r} is invalid for {n_chains} chains "
                    "(two different chain indices needed)"
                )
            pairs.add((min(a, b), max(a, b)))
        return sorted(pairs)

    def _label_index(self, chain, label, what):
        classes = self.classes_[chain]
        idx = np.searchsorted(classes, label) if len(classes) else 0
        try:
            found = idx < len(classes) and classes[idx] == label
        except TypeError:
            found = False
        if not found:
            raise ValueError(f"{what}: label {label!r} is not a label of chain {chain}")
        return int(idx)

    def _forbidden_masks(self):
        """Edge index -> boolean mask of forbidden assignments."""
        graph = self.graph_
        masks = {}
        spec = self.forbidden_transitions
        if spec is not None:
            if isinstance(spec, dict):
                per_chain = spec
            else:
                spec = list(spec)
                if self.n_chains_ == 1 and spec and all(
                        isinstance(p, (tuple, list)) and len(p) == 2
                        and not isinstance(p[0], (tuple, list, set)) for p in spec):
                    per_chain = {0: spec}
                else:
                    if len(spec) != self.n_chains_:
                        raise ValueError(
                            "forbidden_transitions must have one entry per chain "
                            f"({self.n_chains_}), got {len(spec)}"
                        )
                    per_chain = dict(enumerate(spec))
            for chain, pairs in per_chain.items():
                if not isinstance(chain, numbers.Integral) or not 0 <= chain < self.n_chains_:
                    raise ValueError(f"forbidden_transitions: no chain {chain!r}")
                if pairs is None:
                    continue
                L = len(self.classes_[chain])
                mask = np.zeros((L, L), dtype=bool)
                for pair in pairs:
                    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                        raise ValueError(f"forbidden_transitions: expected (from, to) pairs, got {pair!r}")
                    a = self._label_index(chain, pair[0], "forbidden_transitions")
                    b = self._label_index(chain, pair[1], "forbidden_transitions")
                    mask[a, b] = True
                e = next(e for e in range(graph.n_edges)
                         if graph.edge_kind[e] == IN_CHAIN and graph.edge_a[e] == chain)
                if mask.any():
                    masks[e] = mask
        if self.forbidden_couplings is not None:
            if not isinstance(self.forbidden_couplings, dict):
                raise ValueError("forbidden_couplings must be a dict {(i, j): [(label_i, label_j), ...]}")
            for key, pairs in self.forbidden_couplings.items():
                try:
                    i, j = (int(v) for v in key)
                except (TypeError, ValueError):
                    raise ValueError(f"forbidden_couplings: keys must be chain pairs, got {key!r}") from None
                swap = i > j
                a, b = (j, i) if swap else (i, j)
                edges = [e for e in range(graph.n_edges) if graph.edge_kind[e] != IN_CHAIN
                         and graph.edge_a[e] == a and graph.edge_b[e] == b]
                if not edges:
                    raise ValueError(f"forbidden_couplings: chains {key!r} are not coupled")
                mask = np.zeros((len(self.classes_[a]), len(self.classes_[b])), dtype=bool)
                for pair in pairs:
                    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                        raise ValueError(f"forbidden_couplings: expected label pairs, got {pair!r}")
                    la, lb = (pair[1], pair[0]) if swap else (pair[0], pair[1])
                    mask[self._label_index(a, la, "forbidden_couplings"),
                         self._label_index(b, lb, "forbidden_couplings")] = True
                if mask.any():
                    masks[edges[0]] = masks.get(edges[0], False) | mask
        return masks

    def _edge_name(self, e):
        g = self.graph_
        if g.edge_kind[e] == IN_CHAIN:
            return f"chain {g.edge_a[e]}"
        return f"chains ({g.edge_a[e]}, {g.edge_b[e]})"

    # ------------------------------------------------------------------ encoding
    def _encode_labels(self, y_seqs, fit):
        if fit:
            self.classes_ = []
            for c in range(self.n_chains_):
                values = np.concatenate([s[:, c] for s in y_seqs])
                try:
                    classes = np.unique(values)
                except TypeError:
                    raise ValueError(
                        f"labels of chain {c} must be mutually comparable (all str or all numbers)"
                    ) from None
                self.classes_.append(classes)
        gold = np.empty((sum(len(s) for s in y_seqs), self.n_chains_), dtype=np.int32)
        row = 0
        for i, seq in enumerate(y_seqs):
            for c in range(self.n_chains_):
                classes = self.classes_[c]
                try:
                    idx = np.searchsorted(classes, seq[:, c])
                except TypeError:
                    raise ValueError(f"y[{i}] chain {c}: labels of mixed types") from None
                idx = np.minimum(idx, len(classes) - 1)
                bad = classes[idx] != seq[:, c]
                if np.any(bad):
                    t = int(np.flatnonzero(bad)[0])
                    raise ValueError(
                        f"y[{i}] token {t} chain {c}: label {seq[t, c]!r} was not seen when the "
                        "model was first fitted (warm_start keeps the label sets)"
                    )
                gold[row:row + len(seq), c] = idx
            row += len(seq)
        return gold

    def _check_Xy(self, X, y):
        if y is None:
            raise ValueError("y is required: a list of label sequences")
        y_seqs, one_chain = check_label_sequences(y)
        X_list = list(X) if not isinstance(X, (str, bytes)) and X is not None else X
        if X_list is None or isinstance(X_list, (str, bytes)):
            raise ValueError("X must be a list of sequences")
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
            per-token tuples; 1-D sequences mean one chain.

        Returns
        -------
        self
        """
        batch, theta0, seeds_all, rng = self._prepare_fit(X, y)
        n_threads = effective_n_jobs(self.n_jobs)
        self._train_stats = []
        self.loss_curve_ = []
        start = time.perf_counter()
        # the kernels parallelise over sequences themselves; BLAS threads inside
        # their small dgemm calls only add contention
        with threadpool_limits(limits=1, user_api="blas"):
            if self.solver == "lbfgs":
                def fun(theta):
                    return self._penalized(theta, batch, seeds_all, n_threads)

                def callback(theta, loss):
                    self.loss_curve_.append(loss)
                    if self.verbose:
                        print(f"iteration {len(self.loss_curve_)}: loss {loss:.6g} "
                              f"({time.perf_counter() - start:.1f} s)", flush=True)

                res = lbfgs(fun, theta0, self.lbfgs_memory, self.max_iter, self.tol, callback)
                self.coef_ = res.x
                self.n_iter_ = int(res.nit)
                hit_limit = self.n_iter_ >= self.max_iter
            else:
                self.coef_, self.n_iter_, hit_limit = self._fit_olbfgs(
                    theta0, batch, seeds_all, n_threads, rng, start)
        if hit_limit:
            warnings.warn(
                f"{self.solver} stopped at max_iter={self.max_iter} before converging; "
                "increase max_iter or tol", ConvergenceWarning)
        if self._train_stats:
            conv = np.concatenate([c for c, _ in self._train_stats])
            its = np.concatenate([i for _, i in self._train_stats])
            self.inference_stats_ = {"method": self._method(), "phase": "fit",
                                     "converged_fraction": float(conv.mean()),
                                     "mean_iterations": float(its.mean())}
        else:
            self.inference_stats_ = {"method": None, "phase": "fit",
                                     "converged_fraction": 1.0, "mean_iterations": 0.0}
        del self._train_stats
        return self

    def _prepare_fit(self, X, y):
        """Validate, encode and build the model structure; return the training batch."""
        self._validate_params()
        X, y_seqs, one_chain = self._check_Xy(X, y)
        warm = self.warm_start and hasattr(self, "coef_")
        if warm:
            if y_seqs[0].shape[1] != self.n_chains_:
                raise ValueError(
                    f"warm_start: y has {y_seqs[0].shape[1]} chains, the model {self.n_chains_}"
                )
            Xm, seq_ptr = self.encoder_.transform(X)
        else:
            encoder = ObservationEncoder()
            Xm, seq_ptr = encoder.fit_transform(X, self.min_instance_freq)
        self._check_lengths(seq_ptr, y_seqs)
        if not warm:
            self.encoder_ = encoder
            self.n_chains_ = y_seqs[0].shape[1]
            self._one_chain = one_chain
        gold = self._encode_labels(y_seqs, fit=not warm)
        if not warm:
            self.n_features_in_ = Xm.shape[1]
            self.observation_names_ = self.encoder_.names
            self.couplings_ = self._resolve_couplings(self.n_chains_)
            self.graph_ = build_graph([len(c) for c in self.classes_], self.couplings_,
                                      self.transition_features, self.coupling_features)
            self.layout_ = ParameterLayout.from_training(
                self.graph_, Xm, seq_ptr, gold, self.unary_features,
                self.transition_features, self.coupling_features)
        self.forbidden_ = self._forbidden_masks()
        check_gold_allowed(self.graph_, seq_ptr, gold, self.forbidden_, self._edge_name)
        rng = check_random_state(self.random_state)
        batch = _Batch(Xm.tocsr(), seq_ptr, gold, self.layout_)
        theta0 = self.coef_.copy() if warm else np.zeros(self.layout_.n_params)
        seeds = rng.randint(0, 2 ** 31 - 1, size=len(seq_ptr) - 1).astype(np.uint64)
        return batch, theta0, seeds, rng

    def _inv_var(self):
        return 0.0 if np.isinf(self.sigma) else 1.0 / self.sigma ** 2

    def _penalized(self, theta, batch, seeds, n_threads):
        """Penalised objective: data loss plus ``sum(theta**2) / (2 sigma**2)``, and gradient."""
        loss, grad = self._loss_grad(theta, batch, seeds, n_threads)
        inv_var = self._inv_var()
        return loss + 0.5 * inv_var * (theta @ theta), grad + inv_var * theta

    def _fit_olbfgs(self, theta, batch, seeds_all, n_threads, rng, start):
        n_seq = len(batch.seq_ptr) - 1
        size = min(self.batch_size, n_seq)
        inv_var = self._inv_var()
        opt = OnlineLBFGS(memory=self.lbfgs_memory, eta0=self.eta0, tau=self.tau)
        best = np.inf
        stalls = 0
        for epoch in range(self.max_iter):
            order = rng.permutation(n_seq)
            epoch_loss = 0.0
            for lo in range(0, n_seq, size):
                idx = order[lo:lo + size]
                sub = batch.subset(idx)
                scale = n_seq / len(idx)

                def batch_fun(th, sub=sub, seeds=seeds_all[idx], scale=scale):
                    # unbiased estimate of the full penalised objective
                    loss, grad = self._loss_grad(th, sub, seeds, n_threads)
                    return (scale * loss + 0.5 * inv_var * (th @ th),
                            scale * grad + inv_var * th)

                theta, loss = opt.step(theta, batch_fun)
                epoch_loss += loss * len(idx) / n_seq
            self.loss_curve_.append(epoch_loss)
            if self.verbose:
                print(f"epoch {epoch + 1}: loss {epoch_loss:.6g} "
                      f"({time.perf_counter() - start:.1f} s)", flush=True)
            if epoch_loss > best - self.tol * max(abs(best), 1.0):
                stalls += 1
                if stalls >= 2:
                    return theta, epoch + 1, False
            else:
                stalls = 0
            best = min(best, epoch_loss)
        return theta, self.max_iter, True

    def _method(self):
        if self.inference == "auto":
            return "exact" if self.n_chains_ == 1 else "trp"
        return self.inference

    def _loss_grad(self, theta, batch, seeds, n_threads):
        """Unpenalised negative log-(pseudo)likelihood of a batch and its gradient."""
        layout = self.layout_
        if self.objective == "pseudolikelihood":
            losses, grad = layout.pseudolikelihood(theta, batch.obs, batch.gold, n_threads,
                                                   self.forbidden_)
            return float(losses.sum()), grad
        unary, pair, edge_offset = layout.potentials(theta, batch.obs, n_threads, self.forbidden_)
        node, pmarg, log_z, conv, n_it = _inference().marginals(
            self.graph_, batch.seq_ptr, unary, pair, method=self._method(),
            max_iter=self.bp_max_iter, tol=self.bp_tol, seeds=seeds, n_threads=n_threads)
        if self._method() == "trp" and getattr(self, "_train_stats", None) is not None:
            self._train_stats.append((np.asarray(conv), np.asarray(n_it)))
        stats = batch.gold_stats(edge_offset)
        loss = float(log_z.sum() - stats.score(unary, pair))
        dunary = node
        dunary.ravel()[stats.unary_index] -= 1.0
        dpair = pmarg - stats.pair_counts
        dpair[~np.isfinite(pair)] = 0.0
        grad = layout.gradient(dunary, dpair, edge_offset, batch.obs, n_threads)
        return loss, grad

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError(
                "This FactorialCRF instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )

    def _potentials_for(self, X):
        self._check_fitted()
        Xm, seq_ptr = self.encoder_.transform(X)
        n_threads = effective_n_jobs(self.n_jobs)
        obs = self.layout_.observation_rows(Xm, seq_ptr)
        unary, pair, _ = self.layout_.potentials(self.coef_, obs, n_threads, self.forbidden_)
        # predictions are repeatable: without a random_state the trees come from seed 0
        state = 0 if self.random_state is None else self.random_state
        seeds = check_random_state(state).randint(
            0, 2 ** 31 - 1, size=len(seq_ptr) - 1).astype(np.uint64)
        return seq_ptr, unary, pair, seeds, n_threads

    @staticmethod
    def _nonempty(seq_ptr):
        """seq_ptr of the non-empty sequences and their indices."""
        lengths = np.diff(seq_ptr)
        keep = np.flatnonzero(lengths > 0)
        return np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64), keep

    def _record_stats(self, conv, n_it, method):
        self.inference_stats_ = {
            "method": method, "phase": "predict",
            "converged_fraction": float(np.mean(conv)) if len(conv) else 1.0,
            "mean_iterations": float(np.mean(n_it)) if len(n_it) else 0.0,
        }

    def predict(self, X):
        """Most probable labelling of each sequence (Viterbi, or TRP max-product).

        Returns
        -------
        list of ndarray
            Per sequence an object array ``(n_tokens, n_chains)``, or 1-D when
            the model was fitted on one chain given as 1-D label sequences.
        """
        seq_ptr, unary, pair, seeds, n_threads = self._potentials_for(X)
        ptr, keep = self._nonempty(seq_ptr)
        method = self._method()
        labels, conv, n_it = _inference().map_assign(
            self.graph_, ptr, unary, pair, method=method, max_iter=self.bp_max_iter,
            tol=self.bp_tol, seeds=seeds[keep], n_threads=n_threads)
        self._record_stats(conv, n_it, method)
        decoded = np.empty(labels.shape, dtype=object)
        for c in range(self.n_chains_):
            decoded[:, c] = self.classes_[c][labels[:, c]]
        out = []
        for s in range(len(seq_ptr) - 1):
            block = decoded[seq_ptr[s]:seq_ptr[s + 1]]
            out.append(block[:, 0].copy() if self._one_chain else block.copy())
        return out

    def predict_marginals(self, X):
        """Marginal probability of every label of every chain at every token.

        Returns
        -------
        list of list of ndarray
            Per sequence, per chain a float array ``(n_tokens, n_labels_c)``.
        """
        seq_ptr, unary, pair, seeds, n_threads = self._potentials_for(X)
        ptr, keep = self._nonempty(seq_ptr)
        method = self._method()
        node, _, _, conv, n_it = _inference().marginals(
            self.graph_, ptr, unary, pair, method=method, max_iter=self.bp_max_iter,
            tol=self.bp_tol, seeds=seeds[keep], n_threads=n_threads)
        self._record_stats(conv, n_it, method)
        off = self.graph_.label_offset
        return [[node[seq_ptr[s]:seq_ptr[s + 1], off[c]:off[c + 1]].copy()
                 for c in range(self.n_chains_)] for s in range(len(seq_ptr) - 1)]

    def score(self, X, y):
        """Joint accuracy: the fraction of tokens at which every chain is right."""
        y_seqs, _ = check_label_sequences(y, allow_empty_sequences=True)
        pred = self.predict(X)
        if len(pred) != len(y_seqs):
            raise ValueError(f"X and y have different numbers of sequences: {len(pred)} != {len(y_seqs)}")
        right = total = 0
        for i, (p, t) in enumerate(zip(pred, y_seqs)):
            p = np.asarray(p, dtype=object).reshape(len(p), -1)
            if p.shape != t.shape:
                raise ValueError(f"sequence {i}: prediction shape {p.shape} != label shape {t.shape}")
            right += int(np.all(p == t, axis=1).sum())
            total += len(t)
        return right / total if total else 0.0

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model to ``path`` (a ``.npz`` file of arrays and JSON; no pickle)."""
        self._check_fitted()
        _persistence.save(self, path)

    @classmethod
    def load(cls, path):
        """Load a model written by :meth:`save`; executes no code from the file."""
        return _persistence.load(cls, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags
