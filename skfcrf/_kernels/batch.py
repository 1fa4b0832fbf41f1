"""Python-facing inference API over the compiled kernels.

Two entry points, both over a *batch* of sequences laid out as described in
:mod:`skfcrf._kernels.graph`:

* :func:`marginals` -- sum-product: node and pair marginals, ``log Z``;
* :func:`map_assign` -- max-product / Viterbi: the most probable labelling.

``method="exact"`` is exact inference: forward-backward / Viterbi on one
chain (:mod:`skfcrf._kernels._chain`), or over the product state space of several
chains (:mod:`skfcrf._kernels._exact`, at most :data:`MAX_PRODUCT_STATES` states).
Chains that no coupling edge joins, directly or through other chains, are
independent given the observations: each connected component of the coupling
edges (:func:`coupled_components`) is then inferred alone, its own product at most
:data:`MAX_PRODUCT_STATES` states -- three uncoupled chains of 7, 72 and 44 labels
are three chains, not 22,176 states.
``method="trp"`` is loopy belief propagation with the tree-based
reparameterisation schedule (:mod:`skfcrf._kernels._trp`); see :func:`marginals`
for what it returns.

Edge templates joining the same two variables (same kind and chains) are
merged into one *link* whose potential is the product of theirs; each of the
merged templates receives the link's pair marginal.  The links, and the
product-state and TRP tables built on them, are the typed structure objects of
:mod:`skfcrf._kernels._contract`, built once per call and passed to the kernels
(when every edge is tied, once per graph and tied potentials: :func:`_links`).
The kernels raise ``MemoryError`` when their scratch memory cannot be allocated.
"""
import numbers
import os

import numpy as np

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, pair_layout

__all__ = ["marginals", "map_assign", "coupled_components", "MAX_PRODUCT_STATES"]

#: Largest product state space (``prod(n_labels)`` of one connected component of
#: the coupled chains) that ``method="exact"`` accepts when it has more than one chain.
MAX_PRODUCT_STATES = 4096

_DEFAULT_SEED = 0x5EED5EED

#: How many graphs, and structure objects of all-tied graphs, are remembered
#: (:func:`_check_graph`, :func:`_links`): a model's are then built once, not at
#: every call -- which for one short sequence cost more than inference itself.
_REMEMBERED = 8
_checked_graphs = []
_structures = []


def _kernels():
    try:
        from skfcrf._kernels import _chain, _contract, _exact, _trp
    except ImportError as exc:  # pragma: no cover - build problem
        raise ImportError(
            "skfcrf's compiled inference kernels are missing; build them with "
            "`python setup.py build_ext --inplace` or `pip install -e .`"
        ) from exc
    return _chain, _contract, _exact, _trp


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

def _check_inputs(graph, seq_ptr, unary, pair, method, max_iter, tol, seeds, n_threads):
    if not isinstance(graph, Graph):
        raise ValueError(f"graph must be a skfcrf._kernels.graph.Graph, got {type(graph).__name__}")
    if method not in ("exact", "trp"):
        raise ValueError(f"method must be 'exact' or 'trp', got {method!r}")
    _check_graph(graph)

    seq_ptr = np.asarray(seq_ptr)
    if seq_ptr.ndim != 1 or seq_ptr.shape[0] < 1 or not np.issubdtype(seq_ptr.dtype, np.integer):
        raise ValueError("seq_ptr must be a 1-D integer array of length n_seq + 1")
    seq_ptr = np.ascontiguousarray(seq_ptr, dtype=np.int64)
    if seq_ptr[0] != 0 or np.any(np.diff(seq_ptr) < 0):
        raise ValueError("seq_ptr must start at 0 and be non-decreasing")

    unary = np.asarray(unary)
    if unary.ndim != 2:
        raise ValueError(f"unary must be 2-D (N, Ltot), got shape {unary.shape}")
    n_tokens = int(seq_ptr[-1])
    if unary.shape != (n_tokens, graph.total_labels):
        raise ValueError(
            f"unary has shape {unary.shape}, expected (seq_ptr[-1], total_labels) = "
            f"({n_tokens}, {graph.total_labels})"
        )
    unary = np.ascontiguousarray(unary, dtype=np.float64)

    edge_offset = pair_layout(graph, n_tokens)
    pair = np.asarray(pair)
    if pair.ndim != 1 or pair.shape[0] != edge_offset[-1]:
        raise ValueError(
            f"pair must be a flat array of length {int(edge_offset[-1])} "
            f"(pair_layout(graph, N)[-1]), got shape {pair.shape}"
        )
    pair = np.ascontiguousarray(pair, dtype=np.float64)
    for name, arr in (("unary", unary), ("pair", pair)):
        # one pass: max() is NaN if any entry is NaN and +inf if any is +inf
        if arr.size and not np.max(arr) < np.inf:
            raise ValueError(f"{name} contains NaN or +inf (only -inf, meaning forbidden, is allowed)")

    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a non-negative number, got {tol!r}")
    n_seq = seq_ptr.shape[0] - 1
    if seeds is None:
        seeds = (np.arange(n_seq, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                 + np.uint64(_DEFAULT_SEED))
    else:
        seeds = np.asarray(seeds)
        if seeds.shape != (n_seq,):
            raise ValueError(f"seeds must have shape (n_seq,) = ({n_seq},), got {seeds.shape}")
        seeds = np.ascontiguousarray(seeds.astype(np.uint64, copy=False))
    if n_threads is None:
        n_threads = 1
    if not isinstance(n_threads, numbers.Integral) or n_threads == 0 or n_threads < -1:
        raise ValueError(f"n_threads must be a positive integer or -1, got {n_threads!r}")
    if n_threads == -1:
        n_threads = os.cpu_count() or 1
    n_threads = int(max(1, min(n_threads, max(n_seq, 1))))
    return seq_ptr, unary, pair, edge_offset, seeds, n_threads


def _check_graph(graph):
    """Raise ValueError for a malformed graph; a graph that passed is remembered."""
    if any(g is graph for g in _checked_graphs):
        return
    n_labels = np.asarray(graph.n_labels)
    if graph.n_chains < 1 or np.any(n_labels < 1):
        raise ValueError("graph needs at least one chain and every chain at least one label")
    for e in range(graph.n_edges):
        a, b, kind = int(graph.edge_a[e]), int(graph.edge_b[e]), int(graph.edge_kind[e])
        if not (0 <= a < graph.n_chains and 0 <= b < graph.n_chains):
            raise ValueError(f"edge {e} refers to a chain that does not exist")
        if kind == IN_CHAIN and a != b or kind == COUPLING and not a < b or kind not in (0, 1):
            raise ValueError(f"edge {e} is malformed (kind={kind}, a={a}, b={b})")
    _checked_graphs.insert(0, graph)
    del _checked_graphs[_REMEMBERED:]


def _links(graph, pair, edge_offset, method, max_iter=1000, tol=1e-6):
    """``(links, structure)``: the kernels' :class:`~skfcrf._kernels._contract.Links`
    of ``pair`` and, for ``"trp"`` or exact inference over several chains, the
    ``TrpLayout`` or ``ProductSpace`` on them (else None).

    When every edge template is tied, ``pair`` holds the tied potentials alone --
    the same at every call of a model -- and these objects are built once for the
    graph and those potentials (compared by value) and reused.
    """
    _chain, _contract, _exact, _trp = _kernels()
    key = (method, max_iter, tol) if method == "trp" else (method,)
    cache = bool(np.all(graph.edge_tied)) and pair.shape[0] <= 1 << 16
    if cache:
        for g, k, p, built in _structures:
            if g is graph and k == key and np.array_equal(p, pair):
                return built
    links = _contract.inference_links(graph, pair, edge_offset,
                                      virtual_inchain=(method == "exact"))
    if method == "trp":
        structure = _contract.TrpLayout(links, int(max_iter), float(tol))
    elif graph.n_chains > 1:
        structure = _contract.ProductSpace(links)
    else:
        structure = None
    if cache:
        _structures.insert(0, (graph, key, pair.copy(), (links, structure)))
        del _structures[_REMEMBERED:]
    return links, structure


def coupled_components(graph):
    """The chains of each connected component of ``graph``'s coupling edges.

    Returns
    -------
    list of list of int
        Every chain in exactly one list, each list ascending, the lists in the
        order of their first chain; one list when every chain is coupled to
        every other through some path, one per chain when there is no coupling.
    """
    root = list(range(graph.n_chains))

    def find(c):
        while root[c] != c:
            root[c] = root[root[c]]
            c = root[c]
        return c

    for e in range(graph.n_edges):
        if graph.edge_kind[e] == COUPLING:
            a, b = find(int(graph.edge_a[e])), find(int(graph.edge_b[e]))
            root[max(a, b)] = min(a, b)
    parts = {}
    for c in range(graph.n_chains):
        parts.setdefault(find(c), []).append(c)
    return list(parts.values())


class Component:
    """One connected component of the coupled chains as a graph of its own: its
    chains' unary columns and its edges' segments of ``pair`` (in edge order)."""

    def __init__(self, graph, chains, edge_offset):
        index = {c: i for i, c in enumerate(chains)}
        self.edges = [e for e in range(graph.n_edges) if int(graph.edge_a[e]) in index]
        self.graph = Graph.build(
            graph.n_labels[chains],
            [(index[int(graph.edge_a[e])], index[int(graph.edge_b[e])],
              int(graph.edge_kind[e]), int(graph.edge_tied[e])) for e in self.edges])
        off = graph.label_offset
        self.chains = np.asarray(chains)
        self.columns = np.concatenate([np.arange(off[c], off[c + 1]) for c in chains])
        self.spans = [(int(edge_offset[e]), int(edge_offset[e + 1])) for e in self.edges]

    def unary(self, unary):
        return np.ascontiguousarray(unary[:, self.columns])

    def pair(self, pair):
        return np.concatenate([pair[a:b] for a, b in self.spans] + [np.zeros(0)])

    def put_pair(self, part, out):
        """Write the component's pair-layout array ``part`` into the full one ``out``."""
        at = 0
        for a, b in self.spans:
            out[a:b] = part[at:at + b - a]
            at += b - a


def split_components(graph, edge_offset):
    """The :class:`Component` of every connected component of the coupled chains,
    or None when there is one."""
    parts = coupled_components(graph)
    if len(parts) == 1:
        return None
    return [Component(graph, chains, edge_offset) for chains in parts]


def _marginals_by_component(parts, seq_ptr, unary, pair, n_threads, node, pout, log_z):
    """:func:`marginals` of each :class:`Component` into the full outputs.  A sequence that
    one component allows no labelling has none at all: its rows are then computed
    again with every label forbidden, so that (as over the product space) it adds
    no marginals and no pair counts anywhere."""
    for attempt in range(2):
        log_z[:] = 0.0
        for part in parts:
            n, pm, lz, _, _ = marginals(part.graph, seq_ptr, part.unary(unary), part.pair(pair),
                                        method="exact", n_threads=n_threads)
            node[:, part.columns] = n
            part.put_pair(pm, pout)
            log_z += lz
        dead = np.flatnonzero(log_z == -np.inf)
        if attempt or not dead.size:
            return
        unary = unary.copy()
        for s in dead:
            unary[seq_ptr[s]:seq_ptr[s + 1]] = -np.inf


def _check_product_size(graph):
    S = int(np.prod([int(x) for x in graph.n_labels], dtype=object))
    if S > MAX_PRODUCT_STATES:
        raise ValueError(
            f"exact inference over {graph.n_chains} chains needs a product state space of "
            f"{S} states (n_labels={list(map(int, graph.n_labels))}), more than the limit of "
            f"{MAX_PRODUCT_STATES}; use method='trp'"
        )


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def marginals(graph, seq_ptr, unary, pair, method="exact", max_iter=1000, tol=1e-6,
              seeds=None, n_threads=1):
    """Sum-product inference: node and pair marginals and log partition functions.

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
        Chains and edge templates.
    seq_ptr : int64 ndarray of shape (n_seq + 1,)
        Sequence ``s`` owns token rows ``seq_ptr[s]:seq_ptr[s + 1]``.
    unary : float64 ndarray of shape (N, Ltot)
        Unary log-potentials; ``-inf`` forbids a label.
    pair : float64 ndarray, flat
        Pairwise log-potentials laid out by :func:`~skfcrf._kernels.graph.pair_layout`;
        ``-inf`` forbids a label pair.
    method : {"exact", "trp"}, default="exact"
        ``"exact"``: scaled forward-backward on one chain (log-space fallback
        on underflow), or over the product state space of several chains, each
        connected component of the coupled chains alone (at most
        :data:`MAX_PRODUCT_STATES` states each, else ``ValueError``).
        ``"trp"``: loopy sum-product with the TRP schedule (random spanning
        trees); exact on a single chain and on forests.
    max_iter : int, default=1000
        Maximum number of TRP iterations (spanning trees); ignored by exact.
    tol : float, default=1e-6
        TRP convergence threshold on the largest message change.
    seeds : uint64 array-like of shape (n_seq,), optional
        Per-sequence seeds of the spanning-tree generator; ``None`` uses
        fixed defaults, so results are reproducible and independent of
        ``n_threads``.
    n_threads : int, default=1
        OpenMP threads, parallel over sequences (-1: all CPUs).

    Returns
    -------
    node_marg : float64 ndarray of shape (N, Ltot)
        Per-chain, per-token label marginals (each chain block sums to 1).
    pair_marg : float64 ndarray laid out like ``pair``
        Tied edges: sum over positions of the pair marginals (expected
        counts); untied edges: per-position marginals, zeros at unused slots.
    log_z : float64 ndarray of shape (n_seq,)
        ``log Z`` per sequence, ``-inf`` when no allowed assignment exists.
        For ``"trp"`` this is the Bethe approximation (minus the Bethe free
        energy at the final beliefs), which is exact on trees.
    converged : bool ndarray of shape (n_seq,)
        Always True for ``"exact"``.  For ``"trp"``: every edge's messages
        were recomputed (on some tree) since the last iteration in which a
        message moved by ``tol`` or more, and none moved by ``tol``.
    n_iter : int32 ndarray of shape (n_seq,)
        TRP iterations used (1 for exact; 0 for empty sequences).

    Raises
    ------
    ValueError
        On malformed inputs or a too large product space for ``"exact"``.
    """
    seq_ptr, unary, pair, edge_offset, seeds, n_threads = _check_inputs(
        graph, seq_ptr, unary, pair, method, max_iter, tol, seeds, n_threads)
    _chain, _contract, _exact, _trp = _kernels()
    n_seq = seq_ptr.shape[0] - 1
    N = unary.shape[0]
    node = np.zeros((N, graph.total_labels), np.float64)
    pout = np.zeros(pair.shape[0], np.float64)
    log_z = np.zeros(n_seq, np.float64)
    converged = np.ones(n_seq, np.uint8)
    n_iter = (np.diff(seq_ptr) > 0).astype(np.int32)
    if method == "exact" and graph.n_chains > 1:
        parts = split_components(graph, edge_offset)
        if parts is not None:
            _marginals_by_component(parts, seq_ptr, unary, pair, n_threads, node, pout, log_z)
            return node, pout, log_z, converged.astype(bool), n_iter
        _check_product_size(graph)
    links, structure = _links(graph, pair, edge_offset, method, max_iter, tol)
    if method == "trp":
        _trp.trp_marginals(structure, seq_ptr, unary, seeds, node, pout, log_z, converged,
                           n_iter, n_threads)
    elif graph.n_chains == 1:
        _chain.chain_marginals(links, seq_ptr, unary, node, pout, log_z, n_threads)
    else:
        _exact.product_marginals(structure, seq_ptr, unary, node, pout, log_z, n_threads)
    return node, pout, log_z, converged.astype(bool), n_iter


def map_assign(graph, seq_ptr, unary, pair, method="exact", max_iter=1000, tol=1e-6,
               seeds=None, n_threads=1):
    """Max-product inference: the most probable joint labelling.

    Parameters are those of :func:`marginals`.  ``"exact"`` is Viterbi (one
    chain, log space) or Viterbi over the product state space (several
    chains).  ``"trp"`` runs max-product with the TRP schedule and then
    decodes the variables in token-major order: each takes the label
    maximising its unary, the potentials to its already decoded neighbours
    and the max-product messages from the others (ties: smallest label) --
    on a tree with converged messages this is the argmax of the max-marginal
    beliefs made consistent, and on a single chain it is exact Viterbi.  With
    several chains the labelling is then improved by block coordinate ascent:
    each chain in turn is re-decoded by exact Viterbi given the other chains'
    labels, and replaced only when its score strictly improves (at most 20
    sweeps), so the joint score never decreases and a forbidden pair is
    left only if no chain-wise move can remove it.

    Loopy max-product need not converge (it often cycles on strongly coupled
    models); then ``max_iter`` iterations are run, ``converged`` is False and
    the decoding above still yields a labelling.

    Returns
    -------
    labels : int32 ndarray of shape (N, C)
        Label index per token and chain.
    converged : bool ndarray of shape (n_seq,)
    n_iter : int32 ndarray of shape (n_seq,)
    """
    seq_ptr, unary, pair, edge_offset, seeds, n_threads = _check_inputs(
        graph, seq_ptr, unary, pair, method, max_iter, tol, seeds, n_threads)
    _chain, _contract, _exact, _trp = _kernels()
    n_seq = seq_ptr.shape[0] - 1
    N = unary.shape[0]
    labels = np.zeros((N, graph.n_chains), np.int32)
    converged = np.ones(n_seq, np.uint8)
    n_iter = (np.diff(seq_ptr) > 0).astype(np.int32)
    if method == "exact" and graph.n_chains > 1:
        parts = split_components(graph, edge_offset)
        if parts is not None:
            for part in parts:
                labels[:, part.chains] = map_assign(part.graph, seq_ptr, part.unary(unary),
                                                    part.pair(pair), method="exact",
                                                    n_threads=n_threads)[0]
            return labels, converged.astype(bool), n_iter
        _check_product_size(graph)
    links, structure = _links(graph, pair, edge_offset, method, max_iter, tol)
    if method == "trp":
        _trp.trp_map(structure, seq_ptr, unary, seeds, labels, converged, n_iter, n_threads)
    elif graph.n_chains == 1:
        _chain.chain_viterbi(links, seq_ptr, unary, labels, n_threads)
    else:
        _exact.product_viterbi(structure, seq_ptr, unary, labels, n_threads)
    return labels, converged.astype(bool), n_iter
