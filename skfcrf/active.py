"""Active learning with partially labelled sequences (Marcheggiani 2014, thesis 001, ch. 5).

The query strategies of section 5.3 rank the *unlabelled label variables* of a
pool of sequences by informativeness under a fitted model; the pool-based loop
of Algorithm 2 (:class:`ActiveLearner`) asks an oracle for the most
informative ones, adds them as partial labels (``None`` marks a missing label
in ``y``) and refits.

Query unit: one label of one chain at one token
-----------------------------------------------
The thesis labels one token of a one-chain model at a time.  With several
chains the unit here is a *variable* ``(sequence, token, chain)``: the label of
chain ``c`` at token ``t``, playing the thesis's ``y_t`` in every formula, with

* its marginals ``p(y_t^c = j | x, L)`` from :meth:`FactorialCRF.predict_marginals`
  given the labels known so far (``L``; clamped inference, thesis 5.2.2);
* its max-marginals ``p(y*_{y_t^c = j} | x, L)``: the probability of the best
  joint labelling of all chains with label ``j`` at token ``t`` of chain ``c``
  (:func:`max_marginals`), of which the thesis's sequence probabilities are
  the one-chain case.  ``y*`` is the joint Viterbi labelling, so ``y*_t`` in
  MVP and MVM is chain ``c``'s label in it.

Exact wherever inference is exact (one chain, several chains over the joint
label states or the product space); with TRP the marginals are TRP's and the
max-marginals chain-wise around the TRP labelling
(:func:`skfcrf._kernels.states.conditional_max_marginals`), both approximate.
``unit="token"`` instead queries whole tokens (all their unlabelled chains at
once), ranked by their most informative chain; ``unit="neighbourhood"`` queries
the same tokens and their neighbours ``t - 1`` and ``t + 1`` with them (the
exploratory annotation of thesis 001, section 5.4.2: a little more effort per
query against the "missed class effect" of single-token queries).  It is also much cheaper to train
on: a token labelled on some chains only adds joint label states (its labels
combined with every label of the missing chains; user guide, "Partial labels"),
which slows exact joint inference on large label sets (8 dictations, one seed
report, random strategy: the refit after two rounds of 30 single-chain labels
took 21.1 s, after two rounds of 30 whole tokens 2.3 s).

Scores and keys
---------------
Every strategy maps a block of variables -- marginals ``p`` ``(n, L)`` and log
max-marginals ``m`` ``(n, L)`` (``-inf``: impossible), one row per variable --
to ``score(p, m)``, the thesis's ``S(t, x)`` (smaller is more informative:
Algorithm 2, line 5 takes the argmin; the entropies carry no minus sign, as in
the thesis), and ``key(p, m)``, an increasing function of the score computed in
the log domain, which ranks identically but cannot underflow: the sequence
probabilities of long sequences are far below the smallest double.  Ranking
sorts the keys ascending; ties go to the earlier ``(sequence, token, chain)``.
"""
import numbers
import time

import numpy as np
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.utils import check_random_state

__all__ = ["Strategy", "STRATEGIES", "UNITS", "get_strategy", "max_marginals",
           "token_evidence", "informativeness", "query", "ActiveLearner"]

#: What one query asks for: a chain's label at a token, a token (all its chains), or a
#: token and its two neighbours.
UNITS = ("label", "token", "neighbourhood")


def _top2(a):
    """Largest and second largest entry of every row (second: ``-inf`` for one column)."""
    if a.shape[1] == 1:
        return a[:, 0], np.full(a.shape[0], -np.inf)
    part = -np.partition(-a, 1, axis=1)
    return part[:, 0], part[:, 1]


def _xlogx(p):
    """``p log p`` elementwise with ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


class Strategy:
    """A query strategy: ``score`` / ``key`` of variables from marginals and max-marginals.

    Parameters
    ----------
    name : str
        The thesis's abbreviation.
    score : callable
        ``score(p, m) -> (n,)``, the thesis's ``S(t, x)``; smaller is more
        informative.
    key : callable, optional
        ``key(p, m) -> (n,)``, increasing in ``score`` and free of underflow;
        defaults to ``score``.
    viterbi : bool
        Whether the strategy needs the max-marginals ``m`` (the Viterbi
        strategies of section 5.3.2).
    equation : str
        Where the thesis defines it.
    """

    def __init__(self, name, score, key=None, *, viterbi=False, equation=""):
        self.name = name
        self._score = score
        self._key = key if key is not None else score
        self.viterbi = viterbi
        self.equation = equation

    def score(self, p, m=None, random_state=None):
        """The thesis's ``S(t, x)`` of every row (smaller: more informative)."""
        return self._score(*self._checked(p, m))

    def key(self, p, m=None, random_state=None):
        """Ranking key of every row: increasing in :meth:`score`, no underflow."""
        return self._key(*self._checked(p, m))

    def _checked(self, p, m):
        p = np.atleast_2d(np.asarray(p, dtype=np.float64))
        if m is None:
            if self.viterbi:
                raise ValueError(f"strategy {self.name} needs the log max-marginals m")
        else:
            m = np.atleast_2d(np.asarray(m, dtype=np.float64))
            if m.shape != p.shape:
                raise ValueError(f"p has shape {p.shape}, m {m.shape}")
        return p, m

    def __repr__(self):
        return f"Strategy({self.name!r})"


class RandomStrategy(Strategy):
    """The random baseline (section 5.3.3): uniform keys from ``random_state``."""

    def __init__(self):
        super().__init__("random", None, viterbi=False, equation="section 5.3.3")

    def score(self, p, m=None, random_state=None):
        p = np.atleast_2d(np.asarray(p))
        return check_random_state(random_state).random_sample(p.shape[0])

    key = score


# -- greedy (token) strategies, section 5.3.1 ------------------------------------------

def _mtp(p, m):
    return p.max(axis=1)                                       # (5.9)


def _mte(p, m):
    return _xlogx(p).sum(axis=1)                               # (5.10), minus sign removed


def _mtm(p, m):
    first, second = _top2(p)                                   # (5.11)
    return first - np.maximum(second, 0.0)


# -- Viterbi strategies, section 5.3.2 -------------------------------------------------

def _mvp(p, m):
    # (5.12): the marginal of the label the Viterbi labelling gives the variable
    return p[np.arange(len(p)), np.argmax(m, axis=1)]


def _mvm(p, m):
    first, second = _top2(m)                                   # (5.13)
    return np.exp(first) - np.exp(second)


def _mvm_key(p, m):
    first, second = _top2(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return first + np.log1p(-np.exp(second - first))       # log(P1 - P2)


def _mvpe(p, m):
    return _xlogx(np.exp(m)).sum(axis=1)                       # (5.14), minus sign removed


def _mvpe_key(p, m):
    # score = -E with E = sum_j P_j (-log P_j) >= 0; key = -log E
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.isfinite(m) & (m < 0)        # P_j = 0 and P_j = 1 add nothing
        terms = np.where(inner, m + np.log(np.where(inner, -m, 1.0)), -np.inf)
    return -logsumexp(terms, axis=1)


def _me(p, m):
    return (p * np.exp(m)).sum(axis=1)                         # (5.15)


def _me_key(p, m):
    with np.errstate(divide="ignore"):
        return logsumexp(np.log(p) + m, axis=1)


def _med(p, m):
    return _me(p, m) - np.exp(m.max(axis=1))                   # (5.16)


def _med_key(p, m):
    # score = -(P1 - ME) = -P1 (1 - r), r = sum_j p_j P_j / P1 in [0, 1]; key = -log(P1 (1 - r))
    first = m.max(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (p * np.exp(m - first[:, None])).sum(axis=1)
        return -(first + np.log1p(-np.clip(r, 0.0, 1.0)))


#: The strategies by name: the thesis's eight and ``"random"``.
STRATEGIES = {
    "MTP": Strategy("MTP", _mtp, equation="(5.9)"),
    "MTE": Strategy("MTE", _mte, equation="(5.10)"),
    "MTM": Strategy("MTM", _mtm, equation="(5.11)"),
    "MVP": Strategy("MVP", _mvp, viterbi=True, equation="(5.12)"),
    "MVM": Strategy("MVM", _mvm, _mvm_key, viterbi=True, equation="(5.13)"),
    "MVPE": Strategy("MVPE", _mvpe, _mvpe_key, viterbi=True, equation="(5.14)"),
    "ME": Strategy("ME", _me, _me_key, viterbi=True, equation="(5.15)"),
    "MED": Strategy("MED", _med, _med_key, viterbi=True, equation="(5.16)"),
    "random": RandomStrategy(),
}


def get_strategy(strategy):
    """A :class:`Strategy` from its name (case-insensitive) or itself."""
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        for name, value in STRATEGIES.items():
            if name.lower() == strategy.lower():
                return value
    raise ValueError(f"unknown strategy {strategy!r}; expected one of {list(STRATEGIES)} "
                     "or a Strategy")


# -- evidence from a fitted model ----------------------------------------------------

def _crf_of(model):
    """The FactorialCRF of ``model``: itself or a Pipeline's last step."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _crf_and_features(model, X):
    """The FactorialCRF of ``model`` and its input for ``X``."""
    if hasattr(model, "steps"):
        return model.steps[-1][1], model[:-1].transform(X)
    return model, X


def _node_evidence(crf, X, fixed, viterbi):
    """Marginals ``(N, Ltot)``, log max-marginals (or None) and ``seq_ptr`` of ``X``."""
    seq_ptr, unary, pair, method = crf._inference_inputs(X)
    fixed = crf._fixed_labels(fixed, seq_ptr, method)
    node, _, _ = method.marginals_given(seq_ptr, unary, pair, fixed)
    if not viterbi:
        return node, None, seq_ptr
    return node, method.log_max_marginals(seq_ptr, unary, pair, fixed), seq_ptr


def _split(node, seq_ptr, offsets):
    return [[node[seq_ptr[s]:seq_ptr[s + 1], offsets[c]:offsets[c + 1]]
             for c in range(len(offsets) - 1)] for s in range(len(seq_ptr) - 1)]


def max_marginals(model, X, fixed=None):
    """``log p(y*_{y_t^c = j} | x, L)``: the log-probability of the best labelling
    with label ``j`` at token ``t`` of chain ``c``, for every label.

    Parameters
    ----------
    model : FactorialCRF or Pipeline ending in one
        Fitted.
    X : list of sequences
    fixed : list, optional
        Known labels ``L`` as for :meth:`FactorialCRF.decode` (``None`` where
        free).

    Returns
    -------
    list of list of ndarray
        Per sequence, per chain ``(n_tokens, n_labels_c)``, as
        :meth:`FactorialCRF.predict_marginals`; ``-inf`` where no allowed
        labelling has the label.  Each row's maximum is ``log p(y* | x, L)``.
        Exact where inference is exact (forward and backward Viterbi,
        :func:`skfcrf._kernels.states.state_max_marginals`); with TRP chain-wise
        around the TRP labelling and over the Bethe ``log Z`` (capped at 0).
    """
    crf, Xf = _crf_and_features(model, X)
    _, logm, seq_ptr = _node_evidence(crf, Xf, fixed, True)
    return _split(logm, seq_ptr, crf.graph_.label_offset)


def token_evidence(model, X, fixed=None, viterbi=True):
    """Marginals and log max-marginals of every variable of ``X`` given ``fixed``.

    Returns
    -------
    marginals, log_max_marginals : list of list of ndarray
        Per sequence, per chain ``(n_tokens, n_labels_c)``; the second is None
        without ``viterbi``.
    """
    crf, Xf = _crf_and_features(model, X)
    node, logm, seq_ptr = _node_evidence(crf, Xf, fixed, viterbi)
    off = crf.graph_.label_offset
    return _split(node, seq_ptr, off), (None if logm is None else _split(logm, seq_ptr, off))


def _known_mask(y_partial, lengths, n_chains):
    """Per sequence a boolean ``(T, C)`` mask of the given (non-None) labels."""
    if y_partial is None:
        return [np.zeros((T, n_chains), bool) for T in lengths]
    if len(y_partial) != len(lengths):
        raise ValueError(f"y_partial has {len(y_partial)} sequences, X {len(lengths)}")
    out = []
    for seq, T in zip(y_partial, lengths):
        if seq is None:
            out.append(np.zeros((T, n_chains), bool))
            continue
        arr = np.empty((T, n_chains), dtype=object)
        arr[:] = np.asarray(seq, dtype=object).reshape(T, n_chains)
        out.append(np.not_equal(arr, None))
    return out


def _sequence_keys(strategy, marg, logm, rng):
    """Keys ``(T, C)`` of one sequence's variables."""
    cols = []
    for c, p in enumerate(marg):
        m = None if logm is None else logm[c]
        cols.append(strategy.key(p, m, random_state=rng) if len(p) else np.zeros(0))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def informativeness(model, X, strategy="MTM", y_partial=None, random_state=None):
    """The ranking keys of every variable of ``X`` (smaller: more informative).

    Parameters
    ----------
    model : FactorialCRF or Pipeline ending in one
        Fitted.
    X : list of sequences
    strategy : str or Strategy, default="MTM"
        One of :data:`STRATEGIES`.
    y_partial : list, optional
        The labels known so far, per sequence ``(n_tokens, n_chains)`` with
        ``None`` where missing: inference is given them (``L`` of the thesis)
        and their variables get key ``+inf``.
    random_state : int, RandomState or None
        For ``"random"``.

    Returns
    -------
    list of ndarray
        Per sequence ``(n_tokens, n_chains)`` keys (:meth:`Strategy.key`).
    """
    strategy = get_strategy(strategy)
    rng = check_random_state(random_state)
    crf = _crf_of(model)
    marg, logm = token_evidence(model, X, fixed=y_partial, viterbi=strategy.viterbi)
    known = _known_mask(y_partial, [len(m[0]) for m in marg], crf.n_chains_)
    out = []
    for s in range(len(marg)):
        keys = _sequence_keys(strategy, marg[s], None if logm is None else logm[s], rng)
        out.append(np.where(known[s], np.inf, keys))
    return out


def _rank(keys, known, n, unit, chains):
    """The ``n`` best free variables (or tokens) over all sequences, best first."""
    rows = []
    for s, (k, kn) in enumerate(zip(keys, known)):
        k = np.where(kn, np.nan, k)
        if chains is not None:
            k[:, [c for c in range(k.shape[1]) if c not in chains]] = np.nan
        if unit != "label":
            free = ~np.isnan(k).all(axis=1)
            t = np.flatnonzero(free)
            rows.append(np.column_stack([np.full(len(t), s), t,
                                         np.nanmin(k[t], axis=1) if len(t) else t]))
        else:
            t, c = np.nonzero(~np.isnan(k))
            rows.append(np.column_stack([np.full(len(t), s), t, c, k[t, c]]))
    table = np.vstack(rows) if rows else np.zeros((0, 4 if unit == "label" else 3))
    order = np.argsort(table[:, -1], kind="stable")[:n]
    return table[order, :-1].astype(np.int64)


def _with_neighbours(rows, known):
    """``(sequence, token)`` rows followed each by its neighbours ``token - 1`` and
    ``token + 1`` that exist and have a free variable (``known``: per sequence the
    mask of the labels given), without repeats, in that order."""
    out, seen = [], set()
    for s, t in rows:
        for u in (t, t - 1, t + 1):
            if 0 <= u < len(known[s]) and (s, u) not in seen and not known[s][u].all():
                seen.add((s, u))
                out.append((s, u))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _check_unit(unit, chains, n_chains):
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    if chains is None:
        return None
    chains = [int(c) for c in np.atleast_1d(chains)]
    if any(c < 0 or c >= n_chains for c in chains):
        raise ValueError(f"chains must be in [0, {n_chains}), got {chains}")
    return chains


def query(model, X_pool, strategy="MTM", n=1, y_partial=None, unit="label", chains=None,
          random_state=None):
    """The ``n`` most informative unlabelled variables of the pool, best first.

    All are ranked once under the current model (no re-estimation between
    picks; :class:`ActiveLearner` re-estimates a sequence after each label, as
    Algorithm 2 does).

    Parameters
    ----------
    model, strategy, random_state
        As for :func:`informativeness`, which gives the keys ranked here.
    X_pool : list of sequences
        The pool (``X`` of :func:`informativeness`).
    n : int, default=1
    y_partial : list, optional
        Labels known so far (``None`` where missing); never queried again.
    unit : {"label", "token", "neighbourhood"}, default="label"
        ``"label"``: one chain's label at one token; ``"token"``: a token, all
        its unlabelled chains, ranked by its most informative one;
        ``"neighbourhood"``: such a token followed by its neighbours ``t - 1``
        and ``t + 1`` (those with an unlabelled chain), ``n`` tokens ranked.
    chains : int or list of int, optional
        Query only these chains.

    Returns
    -------
    ndarray of int64
        ``(k, 3)`` rows ``(sequence, token, chain)`` for ``unit="label"``,
        ``(k, 2)`` rows ``(sequence, token)`` for ``"token"``; ``k = min(n,
        number of unlabelled ones)``.  For ``"neighbourhood"`` ``(m, 2)`` rows:
        every ranked token followed by its neighbours.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> from skfcrf.active import query
    >>> X = [[{"w=the": 1}, {"w=cat": 1}], [{"w=a": 1}, {"w=dog": 1}]]
    >>> y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP")]]
    >>> crf = FactorialCRF(max_iter=50, forbidden_transitions=None).fit(X, y)
    >>> query(crf, X, strategy="MTM", n=2).shape           # (sequence, token, chain)
    (2, 3)
    >>> known = [[("DT", "B-NP"), (None, None)], None]      # labels given so far
    >>> rows = query(crf, X, strategy="MVM", n=3, y_partial=known, unit="token")
    >>> [tuple(map(int, r)) for r in rows if r[0] == 0]    # token 0 of sequence 0 is known
    [(0, 1)]
    """
    if not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    crf = _crf_of(model)
    chains = _check_unit(unit, chains, crf.n_chains_)
    keys = informativeness(model, X_pool, strategy, y_partial, random_state)
    known = _known_mask(y_partial, [len(k) for k in keys], crf.n_chains_)
    rows = _rank(keys, known, int(n), unit, chains)
    if unit == "neighbourhood":
        return _with_neighbours(rows, _restricted(known, chains))
    return rows


def _restricted(known, chains):
    """``known`` with the chains not queried counted as known."""
    if chains is None:
        return known
    out = []
    for k in known:
        k = np.array(k, dtype=bool)
        k[:, [c for c in range(k.shape[1]) if c not in chains]] = True
        out.append(k)
    return out


class ActiveLearner:
    """Pool-based active learning with partial labels: Algorithm 2 of thesis 001 (5.3).

    Every round fits the estimator on the labels given so far (the first round
    on the seed sequences), records its score on a test set if given, then asks
    the oracle for ``batch_size`` labels, one at a time: the most informative
    unlabelled variable (:func:`informativeness`) is labelled and -- with
    ``reestimate`` -- its sequence's keys are recomputed under the same model
    given the new label (Algorithm 2, line 6: ``Phi_i(x^(b), y_*)``).  A pool
    sequence enters the training set with its first label (the thesis's
    footnote to Algorithm 2); its other labels stay missing (``None``) and
    training marginalises them.

    Parameters
    ----------
    estimator : FactorialCRF or Pipeline ending in one
        Cloned; it must accept ``None`` labels.
    strategy : str or Strategy, default="MTM"
    batch_size : int, default=50
        Labels (``unit="label"``) or tokens (``"token"``, and the ranked tokens
        of ``"neighbourhood"``, each asked with its neighbours) per round (the
        thesis's ``B``).
    unit : {"label", "token", "neighbourhood"}, default="label"
        See :func:`query`.
    chains : int or list of int, optional
        Query only these chains.
    reestimate : bool, default=True
        Recompute a sequence's keys after each of its labels (Algorithm 2);
        False ranks the whole batch at once (:func:`query`), faster.
    warm_start : bool, default=True
        Refits continue from the previous weights (``warm_start`` of the
        estimator's last step).  The first fit then fixes the observations,
        label sets and feature support, so the seed must cover the labels; a
        round whose new labels hold one the model has not seen refits from
        scratch.  False refits from scratch every round (the features grow
        with the labelled sequences).
    random_state : int, RandomState or None
        For the random strategy and random seed sequences.
    verbose : int, default=0
        Print every round's figures when > 0.

    Attributes
    ----------
    estimator_ : the fitted estimator of the last round
    y_partial_ : list of object ndarray
        Per pool sequence ``(n_tokens, n_chains)`` labels, ``None`` where missing.
    queried_ : list of ndarray
        Per round the rows asked, in order: ``(sequence, token, chain)``, or
        ``(sequence, token)`` for the token units.
    history_ : list of dict
        Per round (:meth:`step`): ``round``, ``n_labels`` (labels given when
        fitting, seed included), ``n_sequences`` (sequences trained on),
        ``warm`` (whether the fit continued from the previous weights),
        ``score`` (test score or NaN), ``fit_time`` and ``query_time``
        (seconds; the query follows the fit).
    """

    def __init__(self, estimator, *, strategy="MTM", batch_size=50, unit="label", chains=None,
                 reestimate=True, warm_start=True, random_state=None, verbose=0):
        self.estimator = estimator
        self.strategy = strategy
        self.batch_size = batch_size
        self.unit = unit
        self.chains = chains
        self.reestimate = reestimate
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    # -- bookkeeping ---------------------------------------------------------------
    def start(self, X_pool, oracle, seed=1, n_chains=None):
        """Set up the pool, label the seed sequences in full and fit the first model.

        Parameters
        ----------
        X_pool : list of sequences
        oracle : callable or list of label sequences
            ``oracle(sequence, token, chain) -> label``, or the gold labels of
            the pool (simulation).
        seed : int or list of int, default=1
            Pool sequences labelled in full at the start (the thesis's
            ``T_1``): their indices, or how many to draw at random.
        n_chains : int, optional
            Needed only with a callable oracle: the number of chains.

        Returns
        -------
        self
        """
        self._rng = check_random_state(self.random_state)
        self._strategy = get_strategy(self.strategy)
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")
        self.X_pool_ = list(X_pool)
        self._oracle = self._as_oracle(oracle)
        if n_chains is None:
            if callable(oracle):
                raise ValueError("n_chains is needed with a callable oracle")
            n_chains = np.asarray(oracle[0], dtype=object).reshape(len(self.X_pool_[0]), -1).shape[1]
        self.n_chains_ = int(n_chains)
        self._chains = _check_unit(self.unit, self.chains, self.n_chains_)
        self.y_partial_ = [np.full((len(x), self.n_chains_), None, dtype=object)
                           for x in self.X_pool_]
        if isinstance(seed, numbers.Integral):
            seed = self._rng.choice(len(self.X_pool_), size=int(seed), replace=False)
        self.seed_ = [int(s) for s in seed]
        for s in self.seed_:
            for t in range(len(self.X_pool_[s])):
                for c in range(self.n_chains_):
                    self.y_partial_[s][t, c] = self._oracle(s, t, c)
        self.queried_ = []
        self.history_ = []
        self.estimator_ = None
        self._classes = None
        return self

    def _as_oracle(self, oracle):
        if callable(oracle):
            return oracle
        gold = [np.asarray(y, dtype=object) for y in oracle]
        if len(gold) != len(self.X_pool_):
            raise ValueError(f"oracle has {len(gold)} label sequences, the pool "
                             f"{len(self.X_pool_)}")
        gold = [g.reshape(len(g), -1) for g in gold]
        return lambda s, t, c: gold[s][t, c]

    @property
    def n_labels_(self):
        """Labels given so far, seed included."""
        return int(sum(np.not_equal(y, None).sum() for y in self.y_partial_))

    def labelled_sequences(self):
        """Indices of the pool sequences with at least one label (the training set)."""
        return [s for s, y in enumerate(self.y_partial_) if np.not_equal(y, None).any()]

    # -- one round -----------------------------------------------------------------
    def fit(self):
        """Fit the estimator on the labelled sequences (warm after the first fit)."""
        train = self.labelled_sequences()
        X = [self.X_pool_[s] for s in train]
        y = [self.y_partial_[s] for s in train]
        warm = self.warm_start and self.estimator_ is not None and self._known_classes(y)
        if warm:
            model = self.estimator_
            _crf_of(model).set_params(warm_start=True)
        else:
            model = clone(self.estimator)
        start = time.perf_counter()
        model.fit(X, y)
        self.estimator_ = model
        self._classes = _crf_of(model).classes_
        self._warm = bool(warm)
        return time.perf_counter() - start, len(train)

    def _known_classes(self, y):
        """Whether every label of ``y`` is among the fitted model's labels."""
        if self._classes is None:
            return False
        for c in range(self.n_chains_):
            given = {v for seq in y for v in seq[:, c] if v is not None}
            if not given <= set(self._classes[c].tolist()):
                return False
        return True

    def ask(self):
        """Ask the oracle for one batch under the current model; the rows asked."""
        n = self.batch_size
        if not self.reestimate:
            picked = query(self.estimator_, self.X_pool_, self._strategy, n, self.y_partial_,
                           self.unit, self._chains, self._rng)
            for row in picked:
                self._label(row)
            self.queried_.append(picked)
            return picked
        keys = informativeness(self.estimator_, self.X_pool_, self._strategy, self.y_partial_,
                               self._rng)
        known = [np.not_equal(y, None) for y in self.y_partial_]
        picked = []
        for _ in range(n):
            best = _rank(keys, known, 1, self.unit, self._chains)
            if len(best) == 0:
                break
            row = best[0]
            rows = ([row] if self.unit != "neighbourhood"
                    else _with_neighbours([row], _restricted(known, self._chains)))
            for r in rows:
                self._label(r)
                picked.append(r)
            s = int(row[0])
            known[s] = np.not_equal(self.y_partial_[s], None)
            keys[s] = self._resequence(s)
        picked = np.array(picked, dtype=np.int64).reshape(-1, 3 if self.unit == "label" else 2)
        self.queried_.append(picked)
        return picked

    def _resequence(self, s):
        """Keys of sequence ``s`` re-estimated given its labels (Algorithm 2, line 6)."""
        try:
            return informativeness(self.estimator_, [self.X_pool_[s]], self._strategy,
                                   [self.y_partial_[s]], self._rng)[0]
        except ValueError:
            # a label the model does not know (or forbids): keys without the labels
            keys = informativeness(self.estimator_, [self.X_pool_[s]], self._strategy, None,
                                   self._rng)[0]
            return np.where(np.not_equal(self.y_partial_[s], None), np.inf, keys)

    def _label(self, row):
        s, t = int(row[0]), int(row[1])
        chains = [int(row[2])] if self.unit == "label" else [
            c for c in (self._chains if self._chains is not None else range(self.n_chains_))
            if self.y_partial_[s][t, c] is None]
        for c in chains:
            label = self._oracle(s, t, c)
            if label is None:
                raise ValueError(f"the oracle gave no label for sequence {s} token {t} "
                                 f"chain {c}")
            self.y_partial_[s][t, c] = label

    def step(self, X_test=None, y_test=None, scoring=None, ask=True):
        """One round: fit on the labels so far, score on the test set, ask one batch.

        Returns
        -------
        dict
            The round's :attr:`history_` entry.
        """
        if not hasattr(self, "y_partial_"):
            raise RuntimeError("call start(X_pool, oracle, seed) first")
        n_labels = self.n_labels_
        fit_time, n_seq = self.fit()
        score = np.nan
        if X_test is not None:
            score = (scoring(self.estimator_, X_test, y_test) if scoring is not None
                     else self.estimator_.score(X_test, y_test))
        query_time = 0.0
        if ask:
            start = time.perf_counter()
            self.ask()
            query_time = time.perf_counter() - start
        entry = dict(round=len(self.history_), n_labels=n_labels, n_sequences=n_seq,
                     warm=self._warm, score=float(score), fit_time=fit_time,
                     query_time=query_time)
        self.history_.append(entry)
        if self.verbose:
            print(f"{self._strategy.name:>6} round {entry['round']}: {n_labels:7d} labels "
                  f"({n_seq} sequences)  score {score:.4f}  {'warm' if self._warm else 'cold'} "
                  f"fit {fit_time:.1f} s  "
                  f"query {query_time:.1f} s", flush=True)
        return entry

    def run(self, n_rounds, X_test=None, y_test=None, scoring=None):
        """``n_rounds`` rounds of :meth:`step`, then a last fit and score.

        Parameters
        ----------
        n_rounds : int
        X_test, y_test : optional
            Scored after every fit.
        scoring : callable, optional
            ``scoring(estimator, X_test, y_test)``; default ``estimator.score``
            (joint accuracy).

        Returns
        -------
        list of dict
            :attr:`history_` (one entry per fit: ``n_rounds + 1`` more).
        """
        for r in range(n_rounds + 1):
            self.step(X_test, y_test, scoring, ask=r < n_rounds)
        return self.history_
