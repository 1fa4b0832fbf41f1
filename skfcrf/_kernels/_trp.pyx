# cython: language_level=3
"""Loopy belief propagation with the TRP schedule (Wainwright et al.).

Variables are ``(c, t)`` (id ``t * C + c``).  Each *link* (all edge templates
joining the same pair of variables, merged) has, per instance, two messages
stored side by side in a per-token block of ``MS`` doubles: the *forward*
message (towards the link's ``b`` end, i.e. ``(a, t-1) -> (a, t)`` or
``(a, t) -> (b, t)``; ``L_b`` entries) at ``moff[k]`` and the *backward*
message (``L_a`` entries) right after it.

Each iteration draws a random spanning tree (forest) of the sequence's graph
with Kruskal's algorithm on a uniformly random edge order (Fisher-Yates
shuffle driven by a per-sequence splitmix64 stream), roots each component at
a random node (breadth-first order) and does a collect sweep (leaves to root)
then a distribute sweep (root to leaves).  A message ``m_{i->j}`` always
multiplies the unary of ``i`` with the messages from *all* neighbours of
``i`` in the full graph except ``j``.  Messages are normalised to sum 1; an
all-zero (underflowed) message is replaced by a uniform one.

Stopping: an iteration is *calm* when the largest absolute change of the
messages it sent is below ``tol``.  Converged when every edge has been on the
tree of a calm iteration since the last non-calm one, so every message has
been recomputed without moving (a single calm iteration is not enough: a
tree drawn twice in a row reproduces its own messages exactly while the
other edges are stale).  This implies every edge was updated at least once.
A graph that is a forest is solved exactly by its first iteration and stops
there.  Otherwise, after ``max_iter`` iterations, reported as not converged.

The layout (links, message and potential blocks) and the schedule's
``max_iter`` and ``tol`` come from :class:`skfcrf._kernels._contract.TrpLayout`.  One sequence runs as
:func:`_prepare_sequence`, :func:`_run_schedule` (each iteration
:func:`_draw_forest`, :func:`_bfs_order`, :func:`_tree_sweeps`), then
:func:`_beliefs` (sum-product) or :func:`_decode` and :func:`_refine`
(max-product).
"""
import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport exp, log, fabs, INFINITY

from ._alloc cimport Block, Carver, allocate, carver, take_doubles, take_ints
from ._common cimport longest_sequence, link_exp, link_log, write_pair, matvec
from ._contract cimport LinkView, Links, TrpLayout, TrpView


cdef struct Work:
    double* phi
    double* msg
    double* psi
    double* h
    double* h2
    double* mt
    double* pb
    double* lbuf
    int* eu
    int* ev
    int* ek
    int* et
    int* perm
    int* upd
    int* tre
    int* uf
    int* dptr
    int* adj
    int* cur
    int* order
    int* pare
    int* vis
    int* dec
    double* vd
    double* pshift
    int* vbp
    int* vlab
    int E           # edges of the current sequence (see _init_messages)


cdef inline unsigned long long _splitmix(unsigned long long* x) noexcept nogil:
    cdef unsigned long long z
    x[0] += 0x9E3779B97F4A7C15ULL
    z = x[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline int _below(unsigned long long* x, int n) noexcept nogil:
    """Uniform integer in [0, n) (n < 2**32), multiply-shift reduction."""
    return <int> (((_splitmix(x) >> 32) * <unsigned long long> n) >> 32)


cdef inline int _find(int* uf, int x) noexcept nogil:
    while uf[x] != x:
        uf[x] = uf[uf[x]]
        x = uf[x]
    return x


cdef inline const double* _psi(const TrpView* tp, const LinkView* lk, const double* psi, int k,
                               Py_ssize_t t) noexcept nogil:
    if tp.psi_off[k] >= 0:
        return psi + t * tp.PS + tp.psi_off[k]
    return lk.tied_exp + lk.tied_off[k]


cdef inline const double* _psiT(const TrpView* tp, const LinkView* lk, const double* psi, int k,
                                Py_ssize_t t) noexcept nogil:
    if tp.psi_off[k] >= 0:
        return psi + t * tp.PS + tp.psi_off[k] + lk.la[k] * lk.lb[k]
    return lk.tied_expT + lk.tied_off[k]


cdef inline double tp_shift(const TrpView* tp, const LinkView* lk, Work* wk, int k,
                            Py_ssize_t t) noexcept nogil:
    """Shift subtracted from link ``k``'s scores at instance ``t`` before exp."""
    if tp.psi_off[k] >= 0:
        return wk.pshift[t * tp.K + k]
    return lk.tied_shift[k]


cdef int _gather(const TrpView* tp, const LinkView* lk, const double* phi, const double* msg,
                 Py_ssize_t T, int c, Py_ssize_t t, long long excl, double* h) noexcept nogil:
    """h = unary of (c, t) times incoming messages except the one at offset ``excl``.

    Rescaled to max 1.  Returns the degree of (c, t) in the full graph.
    """
    cdef int L = tp.nl[c]
    cdef const double* ph = phi + t * tp.Ltot + tp.loff[c]
    cdef const double* m
    cdef int deg = 0, kc, q, k, y
    cdef long long off
    cdef double mx
    for y in range(L):
        h[y] = ph[y]
    kc = tp.inlink[c]
    if kc >= 0:
        if t > 0:
            deg += 1
            off = t * tp.MS + tp.moff[kc]
            if off != excl:
                m = msg + off
                for y in range(L):
                    h[y] *= m[y]
        if t < T - 1:
            deg += 1
            off = (t + 1) * tp.MS + tp.moff[kc] + L
            if off != excl:
                m = msg + off
                for y in range(L):
                    h[y] *= m[y]
    for q in range(tp.cpl_ptr[c], tp.cpl_ptr[c + 1]):
        k = tp.cpl_k[q]
        deg += 1
        off = t * tp.MS + tp.moff[k]
        if lk.a[k] == c:
            off += lk.lb[k]
        if off != excl:
            m = msg + off
            for y in range(L):
                h[y] *= m[y]
    mx = 0.0
    for y in range(L):
        mx = h[y] if h[y] > mx else mx
    if mx > 0.0 and mx < 1e-100:
        # rescale only when the product drifts towards underflow
        mx = 1.0 / mx
        for y in range(L):
            h[y] *= mx
    return deg


cdef double _send(const TrpView* tp, const LinkView* lk, Work* wk, Py_ssize_t T, int k,
                  Py_ssize_t t, int fwd) noexcept nogil:
    """Recompute one message of link ``k`` at instance ``t``; returns its max change."""
    cdef int a = lk.a[k], b = lk.b[k], La = lk.la[k], Lb = lk.lb[k]
    cdef long long mo = t * tp.MS + tp.moff[k]
    cdef long long excl, tgt
    cdef int csrc, Lout, j
    cdef Py_ssize_t tsrc
    cdef double* h = wk.h
    cdef double* out = wk.mt
    cdef double* old
    cdef double tot, d, delta = 0.0
    if lk.kind[k] == 0:
        csrc = a
        tsrc = t - 1 if fwd else t
    else:
        csrc = a if fwd else b
        tsrc = t
    if fwd:
        excl = mo + Lb
        tgt = mo
        Lout = Lb
    else:
        excl = mo
        tgt = mo + Lb
        Lout = La
    _gather(tp, lk, wk.phi, wk.msg, T, csrc, tsrc, excl, h)
    if fwd:
        matvec(h, La, _psi(tp, lk, wk.psi, k, t), Lb, out, tp.maxprod == 1)
    else:
        matvec(h, Lb, _psiT(tp, lk, wk.psi, k, t), La, out, tp.maxprod == 1)
    tot = 0.0
    for j in range(Lout):
        tot += out[j]
    if tot > 0.0 and tot < INFINITY:
        tot = 1.0 / tot
        for j in range(Lout):
            out[j] *= tot
    else:
        for j in range(Lout):
            out[j] = 1.0 / Lout
    old = wk.msg + tgt
    for j in range(Lout):
        d = fabs(out[j] - old[j])
        if d > delta:
            delta = d
        old[j] = out[j]
    return delta


cdef double _cond_unary(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                        Py_ssize_t ldu, Py_ssize_t g0, int c, Py_ssize_t t,
                        double* out) noexcept nogil:
    """Unary scores of chain ``c`` at ``t`` plus coupling scores to the other chains'
    current labels (``wk.dec``); original (unshifted) scores."""
    cdef int C = tp.C, L = tp.nl[c], q, k, y
    cdef const double* row = unary + (g0 + t) * ldu + tp.loff[c]
    cdef const double* P
    for y in range(L):
        out[y] = row[y]
    for q in range(tp.cpl_ptr[c], tp.cpl_ptr[c + 1]):
        k = tp.cpl_k[q]
        P = link_log(lk, k, g0 + t, wk.lbuf)
        if lk.a[k] == c:
            for y in range(L):
                out[y] += P[y * lk.lb[k] + wk.dec[t * C + lk.b[k]]]
        else:
            P = P + wk.dec[t * C + lk.a[k]] * lk.lb[k]
            for y in range(L):
                out[y] += P[y]
    return 0.0


cdef inline int _argmax(const double* h, int L, double* best_value) noexcept nogil:
    """First index of the largest entry of ``h`` and that entry."""
    cdef int y, best = 0
    cdef double bv = h[0]
    for y in range(1, L):
        if h[y] > bv:
            bv = h[y]
            best = y
    best_value[0] = bv
    return best


cdef void _conditional_viterbi(const TrpView* tp, const LinkView* lk, Work* wk,
                               const double* unary, Py_ssize_t ldu, Py_ssize_t g0,
                               Py_ssize_t T, int c, double* old) noexcept nogil:
    """Viterbi over chain ``c`` given the other chains' labels (``wk.dec``): the last
    token's scores in ``wk.vd``, back pointers in ``wk.vbp``; ``old`` receives the score of
    chain ``c``'s current labels under the same conditional model."""
    cdef int C = tp.C, L = tp.nl[c], kc = tp.inlink[c], y, i, best
    cdef Py_ssize_t t
    cdef double* delta = wk.vd
    cdef double* nd = wk.vd + tp.maxL
    cdef double* cu = wk.vd + 2 * tp.maxL
    cdef const double* P
    cdef double v, mx, di
    cdef int* bpt
    old[0] = 0.0
    for t in range(T):
        _cond_unary(tp, lk, wk, unary, ldu, g0, c, t, cu)
        old[0] += cu[wk.dec[t * C + c]]
        if t == 0:
            for y in range(L):
                delta[y] = cu[y]
            continue
        bpt = wk.vbp + t * L
        if kc < 0:
            mx = -INFINITY
            best = 0
            for i in range(L):
                if delta[i] > mx:
                    mx = delta[i]
                    best = i
            for y in range(L):
                delta[y] = mx + cu[y]
                bpt[y] = best
            continue
        P = link_log(lk, kc, g0 + t, wk.lbuf)
        old[0] += P[wk.dec[(t - 1) * C + c] * L + wk.dec[t * C + c]]
        for y in range(L):
            nd[y] = -INFINITY
            bpt[y] = 0
        for i in range(L):
            di = delta[i]
            if di == -INFINITY:
                continue
            for y in range(L):
                v = di + P[i * L + y]
                if v > nd[y]:
                    nd[y] = v
                    bpt[y] = i
        for y in range(L):
            delta[y] = nd[y] + cu[y]


cdef void _replace_chain(const TrpView* tp, Work* wk, Py_ssize_t T, int c,
                         int best) noexcept nogil:
    """Backtrack :func:`_conditional_viterbi`'s pointers from label ``best`` at the last
    token and store the path as chain ``c``'s labels in ``wk.dec``."""
    cdef int L = tp.nl[c]
    cdef Py_ssize_t t
    wk.vlab[T - 1] = best
    for t in range(T - 1, 0, -1):
        best = wk.vbp[t * L + best]
        wk.vlab[t - 1] = best
    for t in range(T):
        wk.dec[t * tp.C + c] = wk.vlab[t]


cdef void _refine(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                  Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """Block coordinate ascent on the decoded labelling: re-decode one chain at a
    time by exact Viterbi given the other chains' labels; a chain is replaced only
    when its conditional score strictly improves, so the joint score never drops."""
    cdef int c, _sweep, best, changed
    cdef double mx, old
    if tp.C == 1 and tp.inlink[0] >= 0:
        return          # the sequential decoding already is exact Viterbi
    for _sweep in range(20):
        changed = 0
        for c in range(tp.C):
            _conditional_viterbi(tp, lk, wk, unary, ldu, g0, T, c, &old)
            best = _argmax(wk.vd, tp.nl[c], &mx)
            if not (mx > old + 1e-9 * (1.0 + fabs(mx))) and old > -INFINITY:
                continue
            if mx == -INFINITY:
                continue
            changed = 1
            _replace_chain(tp, wk, T, c, best)
        if not changed:
            break


cdef void _exp_unaries(const TrpView* tp, Work* wk, const double* unary, Py_ssize_t ldu,
                       Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """``wk.phi``: each variable's unary potentials, ``exp(score - max)`` (0 if all -inf)."""
    cdef int c, y, L
    cdef Py_ssize_t t
    cdef const double* row
    cdef double* ph
    cdef double mx
    for t in range(T):
        row = unary + (g0 + t) * ldu
        for c in range(tp.C):
            ph = wk.phi + t * tp.Ltot + tp.loff[c]
            L = tp.nl[c]
            mx = -INFINITY
            for y in range(L):
                if row[tp.loff[c] + y] > mx:
                    mx = row[tp.loff[c] + y]
            if mx == -INFINITY:
                for y in range(L):
                    ph[y] = 0.0
            else:
                for y in range(L):
                    ph[y] = exp(row[tp.loff[c] + y] - mx)


cdef void _exp_untied(const TrpView* tp, const LinkView* lk, Work* wk, Py_ssize_t g0,
                      Py_ssize_t T) noexcept nogil:
    """``wk.psi``: the untied links' potential matrices of this sequence and their
    transposes, exponentiated once; their shifts in ``wk.pshift``."""
    cdef int k, i, j, La, Lb
    cdef Py_ssize_t t
    cdef double* ph
    cdef double sh
    if tp.PS == 0:
        return
    for t in range(T):
        for k in range(tp.K):
            if tp.psi_off[k] < 0 or (lk.kind[k] == 0 and t == 0):
                continue
            ph = wk.psi + t * tp.PS + tp.psi_off[k]
            link_exp(lk, k, g0 + t, ph, &sh)
            wk.pshift[t * tp.K + k] = sh
            La = lk.la[k]
            Lb = lk.lb[k]
            for i in range(La):
                for j in range(Lb):
                    ph[La * Lb + j * La + i] = ph[i * Lb + j]


cdef int _init_messages(const TrpView* tp, const LinkView* lk, Work* wk,
                        Py_ssize_t T) noexcept nogil:
    """Uniform messages, and the edge list (``eu``, ``ev``: variable ids; ``ek``, ``et``:
    link and instance).  Returns the number of edges."""
    cdef int C = tp.C, E = 0, k, y, La, Lb
    cdef Py_ssize_t t
    cdef long long mo
    for t in range(T):
        for k in range(tp.K):
            mo = t * tp.MS + tp.moff[k]
            La = lk.la[k]
            Lb = lk.lb[k]
            for y in range(Lb):
                wk.msg[mo + y] = 1.0 / Lb
            for y in range(La):
                wk.msg[mo + Lb + y] = 1.0 / La
            if lk.kind[k] == 0:
                if t == 0:
                    continue
                wk.eu[E] = (t - 1) * C + lk.a[k]
                wk.ev[E] = t * C + lk.a[k]
            else:
                wk.eu[E] = t * C + lk.a[k]
                wk.ev[E] = t * C + lk.b[k]
            wk.ek[E] = k
            wk.et[E] = t
            wk.perm[E] = E
            wk.upd[E] = -1
            E += 1
    return E


cdef void _prepare_sequence(const TrpView* tp, const LinkView* lk, Work* wk,
                            const double* unary, Py_ssize_t ldu, Py_ssize_t g0,
                            Py_ssize_t T) noexcept nogil:
    """Potentials of one sequence, uniform messages and the edge list (into ``wk``)."""
    _exp_unaries(tp, wk, unary, ldu, g0, T)
    _exp_untied(tp, lk, wk, g0, T)
    wk.E = _init_messages(tp, lk, wk, T)


cdef int _draw_forest(Work* wk, int V, unsigned long long* rng) noexcept nogil:
    """A random spanning forest: Kruskal on a uniformly shuffled edge order.

    Its edges go to ``wk.tre``, its adjacency (CSR) to ``wk.dptr`` / ``wk.adj``;
    ``wk.vis`` is cleared.  Returns the number of forest edges.
    """
    cdef int E = wk.E, i, j, e, v, ru, rv, n_acc = 0
    for i in range(E - 1, 0, -1):
        j = _below(rng, i + 1)
        e = wk.perm[i]
        wk.perm[i] = wk.perm[j]
        wk.perm[j] = e
    for v in range(V):
        wk.uf[v] = v
        wk.dptr[v] = 0
        wk.vis[v] = 0
    wk.dptr[V] = 0
    for i in range(E):
        e = wk.perm[i]
        ru = _find(wk.uf, wk.eu[e])
        rv = _find(wk.uf, wk.ev[e])
        if ru == rv:
            continue
        wk.uf[ru] = rv
        wk.tre[n_acc] = e
        n_acc += 1
        wk.dptr[wk.eu[e] + 1] += 1
        wk.dptr[wk.ev[e] + 1] += 1
    for v in range(V):
        wk.dptr[v + 1] += wk.dptr[v]
        wk.cur[v] = wk.dptr[v]
    for i in range(n_acc):
        e = wk.tre[i]
        wk.adj[wk.cur[wk.eu[e]]] = e
        wk.cur[wk.eu[e]] += 1
        wk.adj[wk.cur[wk.ev[e]]] = e
        wk.cur[wk.ev[e]] += 1
    return n_acc


cdef void _bfs_order(Work* wk, int V, unsigned long long* rng) noexcept nogil:
    """Breadth-first order of the forest (``wk.order``) from a random start, each
    component rooted at its first node reached; ``wk.pare[v]`` is the edge to ``v``'s
    parent (-1 at a root)."""
    cdef int n_ord = 0, r, q, v, w, head, i, e
    r = _below(rng, V)
    for q in range(V):
        v = (r + q) % V
        if wk.vis[v]:
            continue
        wk.vis[v] = 1
        wk.pare[v] = -1
        wk.order[n_ord] = v
        head = n_ord
        n_ord += 1
        while head < n_ord:
            v = wk.order[head]
            head += 1
            for i in range(wk.dptr[v], wk.dptr[v + 1]):
                e = wk.adj[i]
                w = wk.eu[e] + wk.ev[e] - v
                if not wk.vis[w]:
                    wk.vis[w] = 1
                    wk.pare[w] = e
                    wk.order[n_ord] = w
                    n_ord += 1


cdef inline double _send_parent_edge(const TrpView* tp, const LinkView* lk, Work* wk,
                                     Py_ssize_t T, int v, bint collect) noexcept nogil:
    """Recompute the message on the edge from ``v`` to its parent in the forest: towards the
    parent (``collect``) or towards ``v``; returns its max change (0 at a root)."""
    cdef int e = wk.pare[v]
    if e < 0:
        return 0.0
    return _send(tp, lk, wk, T, wk.ek[e], wk.et[e], (wk.eu[e] if collect else wk.ev[e]) == v)


cdef double _tree_sweeps(const TrpView* tp, const LinkView* lk, Work* wk, Py_ssize_t T,
                         int V) noexcept nogil:
    """Collect (leaves to roots) then distribute (roots to leaves) along ``wk.order``;
    returns the largest change of a message sent."""
    cdef int i
    cdef double mx, delta = 0.0
    for i in range(V - 1, -1, -1):
        mx = _send_parent_edge(tp, lk, wk, T, wk.order[i], True)
        if mx > delta:
            delta = mx
    for i in range(V):
        mx = _send_parent_edge(tp, lk, wk, T, wk.order[i], False)
        if mx > delta:
            delta = mx
    return delta


cdef void _run_schedule(const TrpView* tp, const LinkView* lk, Work* wk, Py_ssize_t T,
                        unsigned long long seed, unsigned char* conv,
                        int* niter) noexcept nogil:
    """TRP iterations on one prepared sequence until converged (module docstring) or
    ``tp.max_iter``."""
    cdef int V = <int> (T * tp.C), E = wk.E
    cdef int it, i, e, n_acc, n_calm = 0, gen = 0, n_it = 0
    cdef unsigned long long rng = seed
    cdef unsigned char converged = 0
    cdef double delta
    for it in range(tp.max_iter):
        n_acc = _draw_forest(wk, V, &rng)
        _bfs_order(wk, V, &rng)
        delta = _tree_sweeps(tp, lk, wk, T, V)
        n_it = it + 1
        if n_acc == E:
            converged = 1   # a forest: two sweeps are exact
            break
        if delta < tp.tol:
            # wk.upd[e] == gen marks edges re-sent calmly since the last change
            for i in range(n_acc):
                e = wk.tre[i]
                if wk.upd[e] != gen:
                    wk.upd[e] = gen
                    n_calm += 1
            if n_calm == E:
                converged = 1
                break
        else:
            gen += 1
            n_calm = 0
    conv[0] = converged
    niter[0] = n_it


cdef inline bint _propagate(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                            Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T, unsigned long long seed,
                            unsigned char* conv, int* niter) noexcept nogil:
    """The TRP messages of one sequence (:func:`_prepare_sequence`, :func:`_run_schedule`),
    shared by sum- and max-product; False for an empty sequence (converged, no iteration,
    nothing to read out)."""
    if T == 0:
        conv[0] = 1
        niter[0] = 0
        return False
    _prepare_sequence(tp, lk, wk, unary, ldu, g0, T)
    _run_schedule(tp, lk, wk, T, seed, conv, niter)
    return True


cdef int _decode_variable(const TrpView* tp, const LinkView* lk, Work* wk,
                          const double* row, Py_ssize_t T, int c,
                          Py_ssize_t t) noexcept nogil:
    """Label of (c, t) maximising its unary ``row``, the potentials to the decoded
    neighbours (left in-chain, earlier chains) and the max-product messages of the others;
    if all are -inf, the argmax of its belief."""
    cdef int C = tp.C, L = tp.nl[c], kc, q, k, y, best
    cdef const double* P
    cdef const double* m
    cdef double bv
    for y in range(L):
        wk.h[y] = row[tp.loff[c] + y]
    kc = tp.inlink[c]
    if kc >= 0 and t > 0:
        P = _psi(tp, lk, wk.psi, kc, t) + wk.dec[(t - 1) * C + c] * L
        for y in range(L):
            wk.h[y] += log(P[y])
    if kc >= 0 and t < T - 1:
        m = wk.msg + (t + 1) * tp.MS + tp.moff[kc] + L
        for y in range(L):
            wk.h[y] += log(m[y])
    for q in range(tp.cpl_ptr[c], tp.cpl_ptr[c + 1]):
        k = tp.cpl_k[q]
        if lk.a[k] == c:
            m = wk.msg + t * tp.MS + tp.moff[k] + lk.lb[k]
            for y in range(L):
                wk.h[y] += log(m[y])
        else:
            P = _psi(tp, lk, wk.psi, k, t) + wk.dec[t * C + lk.a[k]] * lk.lb[k]
            for y in range(L):
                wk.h[y] += log(P[y])
    best = _argmax(wk.h, L, &bv)
    if bv == -INFINITY:
        _gather(tp, lk, wk.phi, wk.msg, T, c, t, -1, wk.h)
        best = _argmax(wk.h, L, &bv)
    return best


cdef void _decode(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                  Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """Sequential decoding into ``wk.dec``, token-major (exact Viterbi backtracking on a
    chain), then block coordinate ascent (:func:`_refine`)."""
    cdef int c
    cdef Py_ssize_t t
    for t in range(T):
        for c in range(tp.C):
            wk.dec[t * tp.C + c] = _decode_variable(tp, lk, wk, unary + (g0 + t) * ldu, T, c, t)
    _refine(tp, lk, wk, unary, ldu, g0, T)


cdef int _node_beliefs(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                       Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T, double* node,
                       double* lz) noexcept nogil:
    """Node beliefs (4.6) into ``node``; adds their Bethe terms to ``lz``.  Returns 1 if
    some variable has no allowed label."""
    cdef int c, y, L, deg, infeasible = 0
    cdef Py_ssize_t t
    cdef const double* row
    cdef double tot, bv
    for t in range(T):
        row = unary + (g0 + t) * ldu
        for c in range(tp.C):
            L = tp.nl[c]
            deg = _gather(tp, lk, wk.phi, wk.msg, T, c, t, -1, wk.h)
            tot = 0.0
            for y in range(L):
                tot += wk.h[y]
            if not (tot > 0.0):
                infeasible = 1
                continue
            tot = 1.0 / tot
            for y in range(L):
                bv = wk.h[y] * tot
                node[(g0 + t) * ldu + tp.loff[c] + y] = bv
                if bv > 0.0:
                    lz[0] += bv * row[tp.loff[c] + y] - (1 - deg) * bv * log(bv)
    return infeasible


cdef int _pair_beliefs(const TrpView* tp, const LinkView* lk, Work* wk, Py_ssize_t T,
                       Py_ssize_t g0, double* pout, double* tacc, double* lz) noexcept nogil:
    """Pair beliefs (4.7) of every edge into ``pout`` / ``tacc``; adds their Bethe terms
    to ``lz``.  Returns 1 if some edge has no allowed assignment."""
    cdef int C = tp.C, e, k, i, j, La, Lb, cu, cv, tu, tv, t, infeasible = 0
    cdef long long mo
    cdef const double* P
    cdef double tot, bv
    for e in range(wk.E):
        k = wk.ek[e]
        t = wk.et[e]
        La = lk.la[k]
        Lb = lk.lb[k]
        mo = t * tp.MS + tp.moff[k]
        cu = wk.eu[e] % C
        tu = wk.eu[e] // C
        cv = wk.ev[e] % C
        tv = wk.ev[e] // C
        _gather(tp, lk, wk.phi, wk.msg, T, cu, tu, mo + Lb, wk.h)
        _gather(tp, lk, wk.phi, wk.msg, T, cv, tv, mo, wk.h2)
        P = _psi(tp, lk, wk.psi, k, t)
        tot = 0.0
        for i in range(La):
            for j in range(Lb):
                bv = P[i * Lb + j] * wk.h[i] * wk.h2[j]
                wk.pb[i * Lb + j] = bv
                tot += bv
        if not (tot > 0.0):
            infeasible = 1
            continue
        # E_b[score] + H(b) with log b = log psi_exp + log h_u + log h_v - log tot
        # and score = log psi_exp + shift wherever b > 0: only La + Lb logs
        lz[0] += log(tot) + (tp_shift(tp, lk, wk, k, t))
        tot = 1.0 / tot
        for j in range(Lb):
            wk.mt[j] = 0.0
        for i in range(La):
            bv = 0.0
            for j in range(Lb):
                wk.pb[i * Lb + j] *= tot
                bv += wk.pb[i * Lb + j]
                wk.mt[j] += wk.pb[i * Lb + j]
            if bv > 0.0:
                lz[0] -= bv * log(wk.h[i])
        for j in range(Lb):
            if wk.mt[j] > 0.0:
                lz[0] -= wk.mt[j] * log(wk.h2[j])
        write_pair(lk, k, g0 + t, wk.pb, pout, tacc)
    return infeasible


cdef double _beliefs(const TrpView* tp, const LinkView* lk, Work* wk, const double* unary,
                     Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T, double* node, double* pout,
                     double* tacc) noexcept nogil:
    """Node and pair beliefs of one sequence after the schedule; returns the Bethe
    ``log Z`` (``-inf`` if some factor has no allowed assignment)."""
    cdef double lz = 0.0
    cdef int infeasible = _node_beliefs(tp, lk, wk, unary, ldu, g0, T, node, &lz)
    infeasible |= _pair_beliefs(tp, lk, wk, T, g0, pout, tacc, &lz)
    return -INFINITY if infeasible else lz


cdef void _carve(Work* wk, Carver* c, Py_ssize_t Tmax, Py_ssize_t Emax, Py_ssize_t Vmax,
                 const TrpView* tp) noexcept nogil:
    """One thread's buffers, taken one after another from ``c`` (doubles, then ints)."""
    wk.phi = take_doubles(c, Tmax * tp.Ltot)
    wk.msg = take_doubles(c, Tmax * tp.MS)
    wk.psi = take_doubles(c, Tmax * tp.PS)
    wk.h = take_doubles(c, tp.maxL)
    wk.h2 = take_doubles(c, tp.maxL)
    wk.mt = take_doubles(c, tp.maxL)
    wk.pb = take_doubles(c, tp.maxsz)
    wk.lbuf = take_doubles(c, tp.maxsz)
    wk.vd = take_doubles(c, 3 * tp.maxL)
    wk.pshift = take_doubles(c, Tmax * tp.K)
    wk.eu = take_ints(c, Emax)
    wk.ev = take_ints(c, Emax)
    wk.ek = take_ints(c, Emax)
    wk.et = take_ints(c, Emax)
    wk.perm = take_ints(c, Emax)
    wk.upd = take_ints(c, Emax)
    wk.tre = take_ints(c, Vmax)
    wk.uf = take_ints(c, Vmax)
    wk.dptr = take_ints(c, Vmax + 1)
    wk.adj = take_ints(c, 2 * Vmax)
    wk.cur = take_ints(c, Vmax)
    wk.order = take_ints(c, Vmax)
    wk.pare = take_ints(c, Vmax)
    wk.vis = take_ints(c, Vmax)
    wk.dec = take_ints(c, Vmax)
    wk.vbp = take_ints(c, Tmax * tp.maxL)
    wk.vlab = take_ints(c, Tmax + 1)
    wk.E = 0


cdef class _Workspace:
    """One :c:type:`Work` per thread, its buffers carved out of one checked allocation."""
    cdef Block works, buf

    def __cinit__(self, TrpLayout layout, Py_ssize_t Tmax, int n_threads):
        cdef TrpView tp = layout.view()
        cdef Py_ssize_t Emax = Tmax * tp.K + 1
        cdef Py_ssize_t Vmax = Tmax * tp.C + 1
        cdef Work probe
        cdef Carver c = carver(NULL)
        cdef size_t per
        cdef int tid
        _carve(&probe, &c, Tmax, Emax, Vmax, &tp)
        per = c.used
        self.works = allocate(n_threads, sizeof(Work))
        self.buf = allocate(n_threads * per, 1)
        for tid in range(n_threads):
            c = carver(<char*> self.buf.ptr + tid * per)
            _carve(<Work*> self.works.ptr + tid, &c, Tmax, Emax, Vmax, &tp)


cdef _run(TrpLayout layout, const long long[::1] seq_ptr, const double[:, ::1] unary,
          const unsigned long long[::1] seeds, unsigned char[::1] conv, int[::1] niter,
          int n_threads, bint maxprod, double[:, ::1] node, double[::1] pout,
          double[::1] logz, int[:, ::1] labels):
    """TRP on every sequence, read out as :func:`trp_marginals` (sum-product: ``node``,
    ``pout``, ``logz``) or :func:`trp_map` (``maxprod``: ``labels``) says; the other mode's
    outputs are None."""
    cdef Links links = layout.links
    cdef LinkView lk = links.view()
    cdef TrpView tp = layout.view()
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t ldu = unary.shape[1]
    cdef Py_ssize_t s, T, g0, t
    cdef int tid, c
    cdef _Workspace ws = _Workspace(layout, longest_sequence(seq_ptr), n_threads)
    cdef Work* works = <Work*> ws.works.ptr
    cdef Work* wk
    cdef const double* unary_p = &unary[0, 0] if unary.shape[0] > 0 else NULL
    cdef double* node_p = &node[0, 0] if not maxprod and node.shape[0] > 0 else NULL
    cdef double* pout_p = &pout[0] if not maxprod and pout.shape[0] > 0 else NULL
    # per thread: the tied templates' expected counts (sum-product only)
    tacc_arr = np.zeros((n_threads, 1 if maxprod else max(links.tacc_size, 1)), np.float64)
    cdef double[:, ::1] tacc = tacc_arr
    tp.maxprod = maxprod
    with nogil:
        # round-robin, not on demand: each thread's tied sums have the same terms in
        # the same order in every run
        for s in prange(n_seq, schedule="static", chunksize=1, num_threads=n_threads):
            tid = threadid()
            g0 = seq_ptr[s]
            T = seq_ptr[s + 1] - g0
            wk = &works[tid]
            if not _propagate(&tp, &lk, wk, unary_p, ldu, g0, T, seeds[s], &conv[s], &niter[s]):
                if not maxprod:
                    logz[s] = 0.0
            elif maxprod:
                _decode(&tp, &lk, wk, unary_p, ldu, g0, T)
                for t in range(T):
                    for c in range(tp.C):
                        labels[g0 + t, c] = wk.dec[t * tp.C + c]
            else:
                logz[s] = _beliefs(&tp, &lk, wk, unary_p, ldu, g0, T, node_p, pout_p,
                                   &tacc[tid, 0])
    if not maxprod:
        links.scatter_tied(tacc_arr.sum(axis=0), pout)


def trp_marginals(TrpLayout layout, const long long[::1] seq_ptr, const double[:, ::1] unary,
                  const unsigned long long[::1] seeds, double[:, ::1] node, double[::1] pout,
                  double[::1] logz, unsigned char[::1] conv, int[::1] niter, int n_threads):
    """TRP sum-product for every sequence (the schedule's settings are ``layout``'s); fills
    the outputs (``node``, ``pout``: zero on entry).  Tied templates receive their expected
    counts summed over all positions."""
    _run(layout, seq_ptr, unary, seeds, conv, niter, n_threads, False, node, pout, logz, None)


def trp_map(TrpLayout layout, const long long[::1] seq_ptr, const double[:, ::1] unary,
            const unsigned long long[::1] seeds, int[:, ::1] labels, unsigned char[::1] conv,
            int[::1] niter, int n_threads):
    """TRP max-product and decoding for every sequence (the schedule's settings are
    ``layout``'s); fills ``labels`` (N, C)."""
    _run(layout, seq_ptr, unary, seeds, conv, niter, n_threads, True, None, None, None, labels)
