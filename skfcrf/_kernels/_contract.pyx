# cython: language_level=3
"""The model structure the kernels read, built once per call as typed arrays.

Links (:class:`Links`)
----------------------
A *link* is a pair of variables joined by one or more edge templates of the
graph (:mod:`skfcrf._kernels.graph`): in-chain ``(a, t-1) -- (a, t)`` or coupling
``(a, t) -- (b, t)``.  Its potential at a token is the product of its templates'
potentials, i.e. the sum of their scores: the *tied* templates' matrices, summed
once into ``tied_log``, plus the *untied* templates' matrices at that token, read
from the flat ``pair`` array.  Per link ``k`` (``K`` links):

``a[k], b[k], kind[k], la[k], lb[k]``
    Its chains, kind (0 in-chain, 1 coupling) and label counts.
``tied_off[k]``
    Start of its ``la x lb`` row-major block in ``tied_log`` (the sum of its
    tied matrices, zeros if none), ``tied_exp = exp(tied_log - tied_shift[k])``,
    their transposes ``tied_logT``, ``tied_expT`` (``lb x la``), and
    ``tied_inv = exp(tied_shift[k] - tied_log)`` (only where ``tied_fast[k]``).
``tied_shift[k]``
    The largest finite entry of ``tied_log`` (0 if none).
``tied[k]``
    1 when the link has no untied template: its potential is ``tied_log``.
``tied_fast[k]``
    1 when, moreover, every entry is finite and they span at most
    :data:`EXP_RANGE` nats (``tied_inv`` is then finite; the pseudolikelihood
    kernel's cached-exponential path).
``unt_ptr[k] .. unt_ptr[k+1]``
    Its untied templates: ``unt_off[p]`` is the template's offset in ``pair``;
    its matrix at global token ``g`` starts at ``unt_off[p] + g * la * lb``.
``tmpl_ptr[k] .. tmpl_ptr[k+1]``
    All its templates ``q`` (graph edge ``tmpl_edge[q]``), where its marginals go:
    untied ones to ``tmpl_out_off[q] + g * la * lb`` of the output, tied ones
    (summed over tokens) to ``tmpl_tacc_off[q]`` of a per-thread accumulator of
    ``tacc_size`` doubles (-1 for untied).

Per chain ``c``: ``n_labels[c]``, ``label_offset[c]`` (column of its first label
in a unary row; ``label_offset[C]`` is the row width) and ``inlink[c]``, its
in-chain link or -1.

Inference merges templates: :func:`inference_links` orders the links in-chain
first (chain order), then couplings sorted by ``(a, b)``; for exact inference
every chain gets an in-chain link (an all-zero-score one if the graph has none).
The pseudolikelihood keeps one link per template, in template order
(:func:`template_links`), so its sums run in the graph's edge order.

Product space (:class:`ProductSpace`, exact inference over several chains)
--------------------------------------------------------------------------
``S = prod(n_labels)`` states in mixed radix, chain ``C-1`` fastest:
``lab[s * C + c]`` is chain ``c``'s label in state ``s``, ``stride[c]`` the
distance between states differing by one in chain ``c``'s label; ``cpl`` lists
the coupling links.

TRP layout (:class:`TrpLayout`)
-------------------------------
Per token, a block of ``message_size`` doubles holds every link's two messages:
forward (``lb`` entries) at ``moff[k]``, backward (``la``) right after.  Per
token, a block of ``potential_size`` doubles holds the exponentiated matrix
and its transpose of each link with untied templates, at ``psi_off[k]`` (-1 for
tied links, whose ``tied_exp`` / ``tied_expT`` are used).  ``cpl_ptr[c] ..
cpl_ptr[c+1]`` indexes ``cpl_k``, the coupling links touching chain ``c``.  The
layout also holds the schedule's settings, ``max_iter`` and ``tol``.

Parameter tables (:class:`ParameterTables`, the fused training objectives)
--------------------------------------------------------------------------
What the objective kernels read of a ``ParameterLayout``: offsets of the weights,
edge tables, the feature table and the forbidden assignments (one encoding:
``forbid`` / ``forbid_offset``), built once per objective.  The objectives'
sequences are cut into gradient blocks by one partition, :func:`sequence_blocks`.
"""
import numpy as np

from skfcrf._kernels.graph import COUPLING, IN_CHAIN

#: Widest span (nats) of a tied matrix whose pseudolikelihood conditionals are
#: built from cached exponentials (see :mod:`skfcrf._kernels._pseudolikelihood`).
EXP_RANGE = 600.0


def _ints(values, dtype):
    """``values`` as a contiguous array of at least one element (pointers stay valid)."""
    x = np.ascontiguousarray(values, dtype=dtype)
    return x if x.size else np.zeros(1, dtype)


def _cat(parts):
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(1),
                                dtype=np.float64)


cdef class Links:
    """Links of a graph and their tied potentials (see the module docstring).

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
    tied_matrices : sequence
        Per edge template: its flat ``L_a * L_b`` score matrix if tied, else None.
    untied_offset : int64 array of shape (E,) or more
        Per edge template: its offset in ``pair`` (and in the output).
    pair : float64 ndarray, optional
        The untied potentials the kernels read (kept alive here).
    merge : bool
        Merge templates joining the same variables (inference), or keep one
        link per template in template order (pseudolikelihood).
    virtual_inchain : bool
        Give every chain an in-chain link (merge only).
    """

    def __init__(self, graph, tied_matrices, untied_offset, pair=None, merge=True,
                 virtual_inchain=False):
        C = graph.n_chains
        nl = np.asarray(graph.n_labels, dtype=np.int64)
        E = graph.n_edges
        if merge:
            groups = {}
            for e in range(E):
                key = (int(graph.edge_kind[e]), int(graph.edge_a[e]), int(graph.edge_b[e]))
                groups.setdefault(key, []).append(e)
            keys = [(IN_CHAIN, c, c) for c in range(C)
                    if (IN_CHAIN, c, c) in groups or virtual_inchain]
            keys += sorted(k for k in groups if k[0] == COUPLING)
            members = [groups.get(key, []) for key in keys]
        else:
            keys = [(int(graph.edge_kind[e]), int(graph.edge_a[e]), int(graph.edge_b[e]))
                    for e in range(E)]
            members = [[e] for e in range(E)]
        K = len(keys)
        link = np.zeros((6, K), np.int32)     # a, b, kind, la, lb, tied
        tied_fast = np.zeros(K, np.int32)
        tied_off = np.zeros(K, np.int64)
        tied_shift = np.zeros(K, np.float64)
        logs, exps, expTs, logTs, invs, invTs = [], [], [], [], [], []
        unt_ptr, unt_off = [0], []
        tmpl_ptr, tmpl_edge, tmpl_out_off, tmpl_tacc_off = [0], [], [], []
        inlink = np.full(C, -1, np.int32)
        tacc_size = 0
        pos = 0
        for k, ((kind, a, b), group) in enumerate(zip(keys, members)):
            la, lb = int(nl[a]), int(nl[b])
            sz = la * lb
            if kind == IN_CHAIN and inlink[a] < 0:
                inlink[a] = k
            tl = np.zeros(sz, np.float64)
            n_untied = len(unt_off)
            for e in group:
                off = int(untied_offset[e])
                tmpl_edge.append(e)
                tmpl_out_off.append(off)
                if graph.edge_tied[e]:
                    tl += tied_matrices[e]
                    tmpl_tacc_off.append(tacc_size)
                    tacc_size += sz
                else:
                    unt_off.append(off)
                    tmpl_tacc_off.append(-1)
            link[:, k] = a, b, kind, la, lb, len(unt_off) == n_untied
            unt_ptr.append(len(unt_off))
            tmpl_ptr.append(len(tmpl_edge))
            mx = tl.max() if sz else 0.0
            if not np.isfinite(mx):
                mx = 0.0
            with np.errstate(under="ignore"):
                te = np.exp(tl - mx)
            inv = np.zeros(sz, np.float64)
            if link[5, k] and group and sz and np.isfinite(tl).all() and mx - tl.min() <= EXP_RANGE:
                tied_fast[k] = 1
                inv = np.exp(mx - tl)
            tied_shift[k] = mx
            tied_off[k] = pos
            pos += sz
            logs.append(tl)
            exps.append(te)
            expTs.append(te.reshape(la, lb).T.ravel())
            logTs.append(tl.reshape(la, lb).T.ravel())
            invs.append(inv)
            invTs.append(inv.reshape(la, lb).T.ravel())

        self.n_chains = C
        self.total_labels = int(graph.label_offset[C])
        self.n_links = K
        self.max_labels = int(nl.max()) if C else 1
        self.max_size = int(max([int(la) * int(lb) for la, lb in zip(link[3], link[4])] + [1]))
        self.tied_size = pos
        self.tacc_size = tacc_size
        self.n_labels = _ints(graph.n_labels, np.int32)
        self.label_offset = _ints(graph.label_offset, np.int32)
        self.inlink = _ints(inlink, np.int32)
        self.a, self.b, self.kind, self.la, self.lb, self.tied = [_ints(x, np.int32) for x in link]
        self.tied_fast = _ints(tied_fast, np.int32)
        self.tied_off = _ints(tied_off, np.int64)
        self.tied_shift = _ints(tied_shift, np.float64)
        self.tied_log, self.tied_exp, self.tied_expT = _cat(logs), _cat(exps), _cat(expTs)
        self.tied_logT, self.tied_inv, self.tied_invT = _cat(logTs), _cat(invs), _cat(invTs)
        self.unt_ptr = _ints(unt_ptr, np.int32)
        self.unt_off = _ints(unt_off, np.int64)
        self.tmpl_ptr = _ints(tmpl_ptr, np.int32)
        self.tmpl_edge = _ints(tmpl_edge, np.int32)
        self.tmpl_out_off = _ints(tmpl_out_off, np.int64)
        self.tmpl_tacc_off = _ints(tmpl_tacc_off, np.int64)
        if pair is not None:
            self.pair = pair

    cdef LinkView view(self) noexcept:
        cdef LinkView lk
        lk.K = self.n_links
        lk.a = &self.a[0]
        lk.b = &self.b[0]
        lk.kind = &self.kind[0]
        lk.la = &self.la[0]
        lk.lb = &self.lb[0]
        lk.tied = &self.tied[0]
        lk.tied_off = &self.tied_off[0]
        lk.tied_log = &self.tied_log[0]
        lk.tied_exp = &self.tied_exp[0]
        lk.tied_expT = &self.tied_expT[0]
        lk.tied_logT = &self.tied_logT[0]
        lk.tied_inv = &self.tied_inv[0]
        lk.tied_invT = &self.tied_invT[0]
        lk.tied_shift = &self.tied_shift[0]
        lk.tied_fast = &self.tied_fast[0]
        lk.unt_ptr = &self.unt_ptr[0]
        lk.unt_off = &self.unt_off[0]
        lk.pair = &self.pair[0] if self.pair is not None and self.pair.shape[0] else NULL
        lk.tmpl_ptr = &self.tmpl_ptr[0]
        lk.tmpl_out_off = &self.tmpl_out_off[0]
        lk.tmpl_tacc_off = &self.tmpl_tacc_off[0]
        return lk

    def arrays(self):
        """The per-link and per-template arrays as numpy arrays, trimmed to their lengths
        (for inspection and tests; the kernels read :meth:`view`)."""
        K, n_unt, n_tmpl = self.n_links, self.unt_ptr[self.n_links], self.tmpl_ptr[self.n_links]
        per_link = dict(a=self.a, b=self.b, kind=self.kind, la=self.la, lb=self.lb,
                        tied=self.tied, tied_fast=self.tied_fast, tied_off=self.tied_off,
                        tied_shift=self.tied_shift)
        tied = dict(tied_log=self.tied_log, tied_exp=self.tied_exp, tied_expT=self.tied_expT,
                    tied_logT=self.tied_logT, tied_inv=self.tied_inv, tied_invT=self.tied_invT)
        out = {name: np.asarray(x)[:K] for name, x in per_link.items()}
        out.update({name: np.asarray(x)[:self.tied_size] for name, x in tied.items()})
        out.update(unt_ptr=np.asarray(self.unt_ptr)[:K + 1],
                   tmpl_ptr=np.asarray(self.tmpl_ptr)[:K + 1],
                   unt_off=np.asarray(self.unt_off)[:n_unt],
                   tmpl_edge=np.asarray(self.tmpl_edge)[:n_tmpl],
                   tmpl_out_off=np.asarray(self.tmpl_out_off)[:n_tmpl],
                   tmpl_tacc_off=np.asarray(self.tmpl_tacc_off)[:n_tmpl],
                   inlink=np.asarray(self.inlink)[:self.n_chains])
        return out

    def inchain_link(self, int c):
        """The in-chain link of chain ``c``, or -1."""
        return self.inlink[c]

    def tied_exp_of(self, int k):
        """``tied_exp`` of link ``k`` as an ``(la, lb)`` array (a view)."""
        o = self.tied_off[k]
        return np.asarray(self.tied_exp)[o:o + self.la[k] * self.lb[k]].reshape(
            self.la[k], self.lb[k])

    def scatter_tied(self, const double[::1] total, double[::1] out):
        """Copy each tied template's block of the summed accumulator ``total`` to ``out``
        at the template's offset (its expected counts)."""
        cdef Py_ssize_t q, i, sz, k
        cdef long long o
        for k in range(self.n_links):
            sz = self.la[k] * self.lb[k]
            for q in range(self.tmpl_ptr[k], self.tmpl_ptr[k + 1]):
                o = self.tmpl_tacc_off[q]
                if o < 0:
                    continue
                for i in range(sz):
                    out[self.tmpl_out_off[q] + i] = total[o + i]


def inference_links(graph, pair, edge_offset, virtual_inchain=False):
    """The merged :class:`Links` of ``graph`` over potentials ``pair`` (``pair_layout``)."""
    tied = [pair[edge_offset[e]:edge_offset[e] + graph.edge_size(e)] if graph.edge_tied[e]
            else None for e in range(graph.n_edges)]
    return Links(graph, tied, edge_offset, pair, merge=True, virtual_inchain=virtual_inchain)


def template_links(graph, tied_matrices):
    """One :class:`Links` link per edge template, in template order (pseudolikelihood).

    The pseudolikelihood kernel places the untied potentials itself, so the links'
    untied offsets are left at 0 and no ``pair`` is attached.
    """
    return Links(graph, tied_matrices, np.zeros(max(graph.n_edges, 1), np.int64), merge=False)


ctypedef fused ChainView:
    ProductView
    TrpView


cdef inline void _chain_fields(ChainView* v, Links links) noexcept:
    """The fields every view over ``links`` has: the chains, their label counts, label offsets
    and in-chain links, and the largest link matrix."""
    v.C = links.n_chains
    v.nl = &links.n_labels[0]
    v.loff = &links.label_offset[0]
    v.inlink = &links.inlink[0]
    v.maxsz = links.max_size


cdef class ProductSpace:
    """Mixed-radix product-state tables of exact multi-chain inference (see module doc).

    ``links`` must have an in-chain link for every chain (``virtual_inchain``).
    """

    def __init__(self, Links links):
        nl = [int(x) for x in np.asarray(links.n_labels)[:links.n_chains]]
        S = int(np.prod(nl))
        lab = np.stack(np.unravel_index(np.arange(S), nl), axis=1).astype(np.int32)
        stride = np.ones(len(nl), np.int64)
        for c in range(len(nl) - 2, -1, -1):
            stride[c] = stride[c + 1] * nl[c + 1]
        kinds = np.asarray(links.kind)[:links.n_links]
        self.links = links
        self.n_chains = len(nl)
        self.n_states = S
        self.lab = _ints(lab.ravel(), np.int32)
        self.stride = _ints(stride, np.int64)
        self.cpl = _ints(np.flatnonzero(kinds == COUPLING), np.int32)

    cdef ProductView view(self) noexcept:
        cdef ProductView pd
        cdef Links lk = self.links
        cdef int k
        _chain_fields(&pd, lk)
        pd.S = self.n_states
        pd.lab = &self.lab[0]
        pd.stride = &self.stride[0]
        pd.cpl = &self.cpl[0]
        pd.n_cpl = 0
        for k in range(lk.n_links):
            pd.n_cpl += lk.kind[k] == COUPLING
        return pd


cdef class TrpLayout:
    """Message and potential layout of TRP (see the module docstring), and its
    schedule's settings: at most ``max_iter`` iterations, messages calm below ``tol``
    (:mod:`skfcrf._kernels._trp`)."""

    def __init__(self, Links links, int max_iter=1000, double tol=1e-6):
        C, K = links.n_chains, links.n_links
        la, lb = np.asarray(links.la)[:K], np.asarray(links.lb)[:K]
        kinds, a, b = (np.asarray(links.kind)[:K], np.asarray(links.a)[:K],
                       np.asarray(links.b)[:K])
        unt_ptr = np.asarray(links.unt_ptr)
        moff = np.zeros(max(K, 1), np.int64)
        psi_off = np.full(max(K, 1), -1, np.int64)
        ms = ps = 0
        for k in range(K):
            moff[k] = ms
            ms += int(la[k]) + int(lb[k])
        for k in range(K):
            if unt_ptr[k + 1] > unt_ptr[k]:
                psi_off[k] = ps
                ps += 2 * int(la[k]) * int(lb[k])   # matrix and its transpose
        cpl_ptr, cpl_k = [0], []
        for c in range(C):
            for k in range(K):
                if kinds[k] == COUPLING and (a[k] == c or b[k] == c):
                    cpl_k.append(k)
            cpl_ptr.append(len(cpl_k))
        self.links = links
        self.message_size = ms
        self.potential_size = ps
        self.moff = moff
        self.psi_off = psi_off
        self.cpl_ptr = _ints(cpl_ptr, np.int32)
        self.cpl_k = _ints(cpl_k, np.int32)
        self.max_iter = max_iter
        self.tol = tol

    cdef TrpView view(self) noexcept:
        cdef TrpView tp
        cdef Links lk = self.links
        _chain_fields(&tp, lk)
        tp.Ltot = lk.total_labels
        tp.K = lk.n_links
        tp.MS = self.message_size
        tp.PS = self.potential_size
        tp.maxL = lk.max_labels
        tp.cpl_ptr = &self.cpl_ptr[0]
        tp.cpl_k = &self.cpl_k[0]
        tp.moff = &self.moff[0]
        tp.psi_off = &self.psi_off[0]
        tp.maxprod = 0
        tp.max_iter = self.max_iter
        tp.tol = self.tol
        return tp


# Block partition of the objective kernels.  Gradient accumulators belong to fixed
# blocks of sequences, not to threads: threads take whole blocks, each block's
# sequences run in order, and the blocks are summed in order.  So loss and gradient do
# not depend on n_threads or on which thread ran which block (bit for bit), and two
# evaluations of the same weights agree exactly.  Up to MAX_BLOCKS blocks (or the
# caller's ``max_blocks``), fewer when their accumulators would exceed BLOCK_BYTES, but
# at least MIN_BLOCKS so that two threads can share the work.  Block sizes shrink
# geometrically (by BLOCK_RATIO): threads start on the large ones, and the last block
# left, which one thread finishes while the other waits, is small.
MAX_BLOCKS = 16
MIN_BLOCKS = 4
BLOCK_BYTES = 128 * 2 ** 20
BLOCK_RATIO = 0.8


def sequence_blocks(seq_ptr, row_doubles, max_blocks=MAX_BLOCKS):
    """Block boundaries (indices into the sequences), token counts shrinking by BLOCK_RATIO.

    ``row_doubles`` is the size of one block's accumulators.  Returns an int64
    array ``b`` of length ``n_blocks + 1``: block ``k`` holds sequences
    ``b[k] .. b[k+1]-1`` (possibly none).  The partition depends on the data
    and the model size only, never on the number of threads.
    """
    seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
    n_seq = len(seq_ptr) - 1
    fit = BLOCK_BYTES // max(8 * int(row_doubles), 1)
    n_blocks = max(1, min(max_blocks, max(MIN_BLOCKS, fit), n_seq))
    total = seq_ptr[-1] - seq_ptr[0]
    share = np.cumsum(BLOCK_RATIO ** np.arange(n_blocks))
    targets = seq_ptr[0] + total * share[:-1] / share[-1]
    cuts = np.searchsorted(seq_ptr, targets)
    return np.concatenate([[0], np.clip(cuts, 0, n_seq), [n_seq]]).astype(np.int64)


#: Dense rows (:func:`dense_rows`): the score columns from the table's first that
#: they may cover (their most values, ``SKFCRF_DENSE_WIDTH`` of ``_simd.h``), their
#: length's multiple (a vector of doubles), and the fewest entries that earn one.
DENSE_WIDTH = 32
DENSE_STEP = 8
#: The row lengths that ``_simd.h``'s row products have a copy for.
DENSE_LENGTHS = (8, 16, 24, 32)
DENSE_MIN_ENTRIES = 4
#: At most this many dense rows (256 KiB of values), those that save the most work:
#: many more (17,000 on CoNLL-2000 chunking) left the cache and lost what they saved.
DENSE_MAX_ROWS = 1024


def dense_rows(feat_ptr, ent_col, occurrences=None):
    """The dense rows of a feature table (``_table.pxd``'s ``Dense``).

    The rows cover :data:`DENSE_WIDTH` score columns from ``base``, the table's
    first column (0, or the first label of the one chain a reduced table scores).
    An observation with at least :data:`DENSE_MIN_ENTRIES` entries, all in those
    columns, gets a dense row: its weights (or their gradient) at their columns,
    zeros elsewhere; with ``occurrences`` (per observation, its number of stored
    values in the data) only the :data:`DENSE_MAX_ROWS` whose entries are updated
    most often.  The rows are ``width`` values long: the columns from ``base`` to
    the rows' last one, rounded up to :data:`DENSE_STEP` (8 for a 7-label chain's
    table, where 32 did four times the vector work and touched four times the
    score columns).  Returns ``(of, slot, base, width)``: per observation its
    dense row or -1, per table entry its place in the rows' values (row ``k`` at
    ``k * width``) or -1, the rows' first score column and their length.
    """
    feat_ptr = np.asarray(feat_ptr, dtype=np.int64)
    ent_col = np.asarray(ent_col, dtype=np.int64)
    n_features = len(feat_ptr) - 1
    count = np.diff(feat_ptr)
    has = count > 0
    hi = np.zeros(n_features, dtype=np.int64)
    base = int(ent_col.min()) if len(ent_col) else 0
    if len(ent_col):
        hi[has] = np.maximum.reduceat(ent_col, feat_ptr[:-1][has]) + 1
    rows = np.flatnonzero(has & (count >= DENSE_MIN_ENTRIES) & (hi <= base + DENSE_WIDTH))
    if occurrences is not None and len(rows) > DENSE_MAX_ROWS:
        work = np.asarray(occurrences, dtype=np.int64)[rows] * count[rows]
        rows = np.sort(rows[np.argsort(-work, kind="stable")[:DENSE_MAX_ROWS]])
    span = int(hi[rows].max()) - base if len(rows) else 1
    width = min(DENSE_WIDTH, -(-span // DENSE_STEP) * DENSE_STEP)
    of = np.full(n_features, -1, dtype=np.int32)
    of[rows] = np.arange(len(rows), dtype=np.int32)
    entry_row = of[np.repeat(np.arange(n_features), count)]
    slot = np.where(entry_row >= 0, entry_row.astype(np.int64) * width + ent_col - base, -1)
    return of, slot, base, width


#: ``_simd.h``'s SKFCRF_SLOT_BITS: the low bits of a resolved observation's slot hold
#: its entry count, the others its first entry (:func:`resolve_slots`).
cdef long long _SLOT_BITS = 20
SLOT_BITS = _SLOT_BITS


def resolve_slots(indices, feat_ptr, dense_of=None):
    """Per stored observation of a CSR (``indices``: its observation columns) where the
    feature table keeps its weights: an int64 array (``_simd.h``'s slot layout) --
    ``start << SLOT_BITS | count`` of its entries ``feat_ptr[f]:feat_ptr[f + 1]``, or
    ``-k - 1`` when ``dense_of[f] = k >= 0`` (its dense row; ``dense_of`` as
    :func:`dense_rows` returns it, or None: no dense rows).  None when some
    observation has ``2**SLOT_BITS`` entries or more, or the table more than
    ``2**42`` (the kernels then look the observations up as they go)."""
    cdef const int[::1] idx = np.ascontiguousarray(indices, dtype=np.int32)
    cdef const long long[::1] fp = np.ascontiguousarray(feat_ptr, dtype=np.int64)
    counts = np.diff(np.asarray(fp))
    if counts.size and (fp[fp.shape[0] - 1] >= (1 << 42) or counts.max() >= (1 << SLOT_BITS)):
        return None
    cdef const int[::1] of = (np.ascontiguousarray(dense_of, dtype=np.int32)
                              if dense_of is not None else np.full(1, -1, np.int32))
    cdef bint has_dense = dense_of is not None
    out_arr = np.empty(idx.shape[0], dtype=np.int64)
    cdef long long[::1] out = out_arr
    cdef Py_ssize_t j
    cdef int f
    with nogil:
        for j in range(idx.shape[0]):
            f = idx[j]
            if has_dense and of[f] >= 0:
                out[j] = -<long long> of[f] - 1
            else:
                out[j] = (fp[f] << _SLOT_BITS) | (fp[f + 1] - fp[f])
    return out_arr


def block_accumulators(workspace, shape):
    """An uninitialised float64 array of ``shape`` for the blocks' accumulators:
    ``workspace``'s (a dict the caller keeps between calls, or None) if it holds one
    of that shape, else a new one, left there for the next call."""
    if workspace is None:
        return np.empty(shape)
    arr = workspace.get("block_rows")
    if arr is None or arr.shape != shape:
        arr = workspace["block_rows"] = np.empty(shape)
    return arr


def summed_rows(block_rows):
    """The rows of ``block_rows`` (one per block) added in order (the same sum for
    every thread count)."""
    total = block_rows[0].copy()
    for row in block_rows[1:]:
        total += row
    return total


cdef class ParameterTables:
    """What the objective kernels read of a :class:`~skfcrf.model._layout.ParameterLayout`.

    Built once per objective from the layout (and the forbidden assignments), and
    passed to the kernels whole (their :c:type:`ParameterView`): per chain its
    label count and offset, per edge template its kind, chains, score column
    (``e_col``, -1 when tied) and bias offset (``bias_edge``, ``E + 1``), the
    feature table (``feat_ptr``, ``ent_col``) and the score width.

    Forbidden assignments have one encoding: ``forbid`` (uint8, 1 = forbidden)
    holds every edge template's ``L_a x L_b`` mask, edge ``e``'s at
    ``forbid_offset[e]`` (``E + 1`` offsets; all zeros without any).

    Per chain ``c`` for the chain-wise kernel: its untied in-chain templates
    ``chain_untied[chain_untied_ptr[c]:chain_untied_ptr[c + 1]]`` and the start
    ``chain_tied[c]`` of its ``L_c x L_c`` block in :meth:`chain_transitions`.

    Parameters
    ----------
    layout : ParameterLayout
    forbidden : dict, optional
        Edge index -> boolean ``(L_a, L_b)`` mask of forbidden assignments.
    table : (feat_ptr, ent_col), optional
        A feature table with fewer entries than the layout's (some weights left
        out): the bias offsets shift down by the difference, as in a ``theta``
        of the kept table entries followed by the biases.
    """

    def __init__(self, layout, forbidden=None, table=None):
        self._args = (layout, forbidden, table)
        graph = layout.graph
        E, C = graph.n_edges, graph.n_chains
        feat_ptr, ent_col = (layout.feat_ptr, layout.ent_col) if table is None else table
        shift = int(layout.n_table) - int(feat_ptr[-1])
        self.graph = graph
        self.width = layout.score_width
        self.n_table = int(feat_ptr[-1])
        self.bias_unary = int(layout.bias_unary) - shift
        self.n_params = int(layout.n_params) - shift
        self.n_chains, self.n_edges = C, E
        self.total_labels = int(graph.total_labels)
        self.max_labels = int(np.max(graph.n_labels)) if C else 1
        self.n_labels = _ints(graph.n_labels, np.int32)
        self.label_offset = _ints(graph.label_offset, np.int32)
        sizes = np.asarray(graph.n_labels, dtype=np.int64) ** 2
        self.chain_tied = _ints(np.concatenate([[0], np.cumsum(sizes)[:-1]]), np.int64)
        untied = [[e for e in range(E) if graph.edge_kind[e] == IN_CHAIN
                   and graph.edge_a[e] == c and not graph.edge_tied[e]] for c in range(C)]
        self.chain_untied_ptr = _ints(np.concatenate([[0], np.cumsum([len(u) for u in untied])]),
                                      np.int32)
        self.chain_untied = _ints(sum(untied, []), np.int32)
        self.e_kind = _ints(graph.edge_kind, np.int32)
        self.e_a = _ints(graph.edge_a, np.int32)
        self.e_b = _ints(graph.edge_b, np.int32)
        self.e_tied = _ints(graph.edge_tied, np.int32)
        self.e_col = _ints(layout.edge_col, np.int64)
        self.bias_edge = _ints(np.asarray(layout.bias_edge, dtype=np.int64) - shift, np.int64)
        edge_sizes = [graph.edge_size(e) for e in range(E)]
        forbid_offset = np.concatenate([[0], np.cumsum(edge_sizes)]).astype(np.int64)
        forbid = np.zeros(max(int(forbid_offset[-1]), 1), dtype=np.uint8)
        for e, mask in (forbidden or {}).items():
            forbid[forbid_offset[e]:forbid_offset[e + 1]] = np.asarray(mask).ravel()
        self.forbid_offset = forbid_offset
        self.forbid = forbid
        self.feat_ptr = _ints(feat_ptr, np.int64)
        self.ent_col = _ints(ent_col, np.int32)

    def __reduce__(self):
        # rebuilt from what it was built from (objectives are pickled, e.g. by Dask)
        return ParameterTables, self._args

    def forbidden_of(self, int e):
        """Edge ``e``'s forbidden assignments, a flat bool mask of ``L_a * L_b``."""
        return np.asarray(self.forbid[self.forbid_offset[e]:self.forbid_offset[e + 1]],
                          dtype=bool)

    def chain_transitions(self, const double[::1] theta):
        """Per chain ``c`` the sum ``W_c`` of its tied in-chain templates' weights
        (``-inf`` where one of its templates forbids; zeros without any), flat at
        ``chain_tied[c]``: ``(tied_log, tied_exp, tied_shift)`` with
        ``tied_shift[c] = w_c``, the largest finite entry (0 if none), and
        ``tied_exp = exp(W_c - w_c)``."""
        values = np.asarray(theta)
        logs = []
        for c in range(self.n_chains):
            L = int(self.n_labels[c])
            w = np.zeros(L * L)
            for e in range(self.n_edges):
                if self.e_kind[e] == IN_CHAIN and self.e_a[e] == c:
                    if self.e_tied[e]:
                        w += values[self.bias_edge[e]:self.bias_edge[e + 1]]
                    w[self.forbidden_of(e)] = -np.inf
            logs.append(w)
        shifts = np.array([w.max() if np.isfinite(w.max()) else 0.0 for w in logs])
        tied_log = np.concatenate(logs)
        with np.errstate(under="ignore"):
            tied_exp = np.concatenate([np.exp(w - m) for w, m in zip(logs, shifts)])
        return tied_log, tied_exp, shifts

    cdef ParameterView view(self) noexcept:
        cdef ParameterView pv
        pv.width = self.width
        pv.ltot = self.total_labels
        pv.n_table = self.n_table
        pv.bias_unary = self.bias_unary
        pv.n_chains = self.n_chains
        pv.n_edges = self.n_edges
        pv.max_labels = self.max_labels
        pv.n_labels = &self.n_labels[0]
        pv.label_offset = &self.label_offset[0]
        pv.chain_tied = &self.chain_tied[0]
        pv.chain_untied_ptr = &self.chain_untied_ptr[0]
        pv.chain_untied = &self.chain_untied[0]
        pv.e_kind = &self.e_kind[0]
        pv.e_a = &self.e_a[0]
        pv.e_b = &self.e_b[0]
        pv.e_tied = &self.e_tied[0]
        pv.e_col = &self.e_col[0]
        pv.bias_edge = &self.bias_edge[0]
        pv.forbid = &self.forbid[0]
        pv.forbid_offset = &self.forbid_offset[0]
        pv.feat_ptr = &self.feat_ptr[0]
        pv.ent_col = &self.ent_col[0]
        return pv
