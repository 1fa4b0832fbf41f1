# cython: language_level=3
"""Shared inline helpers of the inference kernels (header only, no module).

A *link* merges every edge template joining the same pair of variables
(``kind``, ``a``, ``b``); its potential at a token is the product of the
templates' potentials.  :func:`skfcrf._bp.inference._prepare_links` builds the
arrays that :func:`links_from` turns into the C struct :c:type:`Links`.
"""
from libc.math cimport exp, INFINITY


cdef struct Links:
    int K
    const int* a
    const int* b
    const int* kind
    const int* la
    const int* lb
    const long long* tied_off      # per link: start in tied_log / tied_exp
    const double* tied_log         # sum of the link's tied template matrices
    const double* tied_exp         # exp(tied_log - tied_shift)
    const double* tied_shift
    const int* unt_ptr             # per link: range into unt_off
    const long long* unt_off       # edge_offset of each untied template
    const double* pair
    const int* tmpl_ptr            # per link: range into tmpl_* (templates of the link)
    const long long* tmpl_out_off  # edge_offset[e] (untied output goes there)
    const long long* tmpl_tacc_off  # offset in the tied accumulator, -1 for untied


cdef inline size_t _addr(object arr):
    return <size_t> arr.__array_interface__["data"][0]


cdef inline Links links_from(dict d, object pair):
    """Fill a :c:type:`Links` from the prepared arrays (kept alive by ``d``)."""
    cdef Links lk
    lk.K = d["K"]
    lk.a = <const int*> _addr(d["link_a"])
    lk.b = <const int*> _addr(d["link_b"])
    lk.kind = <const int*> _addr(d["link_kind"])
    lk.la = <const int*> _addr(d["link_la"])
    lk.lb = <const int*> _addr(d["link_lb"])
    lk.tied_off = <const long long*> _addr(d["tied_off"])
    lk.tied_log = <const double*> _addr(d["tied_log"])
    lk.tied_exp = <const double*> _addr(d["tied_exp"])
    lk.tied_shift = <const double*> _addr(d["tied_shift"])
    lk.unt_ptr = <const int*> _addr(d["unt_ptr"])
    lk.unt_off = <const long long*> _addr(d["unt_off"])
    lk.pair = <const double*> _addr(pair)
    lk.tmpl_ptr = <const int*> _addr(d["tmpl_ptr"])
    lk.tmpl_out_off = <const long long*> _addr(d["tmpl_out_off"])
    lk.tmpl_tacc_off = <const long long*> _addr(d["tmpl_tacc_off"])
    return lk


cdef inline const double* link_exp(const Links* lk, int k, Py_ssize_t g,
                                   double* buf, double* shift) noexcept nogil:
    """Potential matrix of link ``k`` at global token ``g`` as ``exp(score - shift)``.

    Returns a pointer to the precomputed tied matrix when the link has no
    untied template, else fills ``buf``.  ``shift`` receives the subtracted max.
    """
    cdef int p0 = lk.unt_ptr[k]
    cdef int p1 = lk.unt_ptr[k + 1]
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int p
    cdef const double* src
    cdef double mx
    if p0 == p1:
        shift[0] = lk.tied_shift[k]
        return lk.tied_exp + lk.tied_off[k]
    src = lk.tied_log + lk.tied_off[k]
    for i in range(sz):
        buf[i] = src[i]
    for p in range(p0, p1):
        src = lk.pair + lk.unt_off[p] + g * sz
        for i in range(sz):
            buf[i] += src[i]
    mx = -INFINITY
    for i in range(sz):
        if buf[i] > mx:
            mx = buf[i]
    if mx == -INFINITY:
        mx = 0.0
    for i in range(sz):
        buf[i] = exp(buf[i] - mx)
    shift[0] = mx
    return buf


cdef inline const double* link_log(const Links* lk, int k, Py_ssize_t g,
                                   double* buf) noexcept nogil:
    """Score (log-potential) matrix of link ``k`` at global token ``g``."""
    cdef int p0 = lk.unt_ptr[k]
    cdef int p1 = lk.unt_ptr[k + 1]
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int p
    cdef const double* src
    if p0 == p1:
        return lk.tied_log + lk.tied_off[k]
    src = lk.tied_log + lk.tied_off[k]
    for i in range(sz):
        buf[i] = src[i]
    for p in range(p0, p1):
        src = lk.pair + lk.unt_off[p] + g * sz
        for i in range(sz):
            buf[i] += src[i]
    return buf


cdef inline void write_pair(const Links* lk, int k, Py_ssize_t g, const double* P,
                            double* out, double* tacc) noexcept nogil:
    """Store the pair marginal ``P`` of link ``k`` at token ``g`` for each template."""
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int q
    cdef double* dst
    for q in range(lk.tmpl_ptr[k], lk.tmpl_ptr[k + 1]):
        if lk.tmpl_tacc_off[q] >= 0:
            dst = tacc + lk.tmpl_tacc_off[q]
            for i in range(sz):
                dst[i] += P[i]
        else:
            dst = out + lk.tmpl_out_off[q] + g * sz
            for i in range(sz):
                dst[i] = P[i]
