# cython: language_level=3
"""The model structure the kernels read (see _contract.pyx for the layout)."""


cdef struct LinkView:
    # raw pointers into a Links object's arrays, for nogil code (valid while it lives)
    int K                          # number of links
    const int* a
    const int* b
    const int* kind
    const int* la
    const int* lb
    const int* tied                # 1: no untied template (potential is the tied matrix)
    const long long* tied_off      # per link: start in the tied_* arrays
    const double* tied_log         # sum of the link's tied template matrices (La x Lb)
    const double* tied_exp         # exp(tied_log - tied_shift)
    const double* tied_expT        # its transpose (Lb x La), same offsets
    const double* tied_logT        # transpose of tied_log
    const double* tied_inv         # exp(tied_shift - tied_log) where tied_fast, else 0
    const double* tied_invT        # its transpose
    const double* tied_shift       # per link: max finite entry of tied_log (0 if none)
    const int* tied_fast           # per link: tied, all finite, span <= EXP_RANGE
    const int* unt_ptr             # per link: range into unt_off
    const long long* unt_off       # offset in pair of each untied template
    const double* pair             # the untied potentials (NULL if none were given)
    const int* tmpl_ptr            # per link: range into tmpl_* (templates of the link)
    const long long* tmpl_out_off  # edge_offset[e] (untied output goes there)
    const long long* tmpl_tacc_off  # offset in the tied accumulator, -1 for untied


cdef class Links:
    cdef readonly int n_chains, total_labels, n_links, max_labels, max_size
    cdef readonly Py_ssize_t tied_size, tacc_size
    cdef int[::1] n_labels, label_offset, inlink
    cdef int[::1] a, b, kind, la, lb, tied, tied_fast, unt_ptr, tmpl_ptr, tmpl_edge
    cdef long long[::1] tied_off, unt_off, tmpl_out_off, tmpl_tacc_off
    cdef double[::1] tied_log, tied_exp, tied_expT, tied_logT, tied_inv, tied_invT, tied_shift
    cdef const double[::1] pair
    cdef LinkView view(self) noexcept


cdef struct ProductView:
    int C
    Py_ssize_t S
    const int* nl          # labels per chain
    const int* loff        # label offsets (C + 1)
    const int* inlink      # in-chain link of each chain (always >= 0 here)
    const int* lab         # state_lab (S, C)
    const long long* stride  # per chain
    const int* cpl         # coupling link ids
    int n_cpl
    int maxsz              # max L_a * L_b over links


cdef class ProductSpace:
    cdef readonly Links links
    cdef readonly int n_chains
    cdef readonly Py_ssize_t n_states
    cdef int[::1] lab, cpl
    cdef long long[::1] stride
    cdef ProductView view(self) noexcept


cdef struct TrpView:
    int C
    int Ltot
    int K
    Py_ssize_t MS
    Py_ssize_t PS
    int maxL
    int maxsz
    const int* nl
    const int* loff
    const int* inlink       # in-chain link of each chain or -1
    const int* cpl_ptr      # per chain: range into cpl_k
    const int* cpl_k        # coupling links touching the chain
    const long long* moff   # per link: message offset inside a token block
    const long long* psi_off  # per untied link: offset inside a token psi block; -1 if tied
    int maxprod             # set by the entry point
    int max_iter            # the schedule's settings (TrpLayout's)
    double tol


cdef class TrpLayout:
    cdef readonly Links links
    cdef readonly Py_ssize_t message_size, potential_size
    cdef readonly int max_iter
    cdef readonly double tol
    cdef int[::1] cpl_ptr, cpl_k
    cdef long long[::1] moff, psi_off
    cdef TrpView view(self) noexcept


cdef struct ParameterView:
    # raw pointers into a ParameterTables object's arrays, for nogil code (valid while it lives)
    Py_ssize_t width               # columns of the per-token score matrix
    Py_ssize_t ltot                # unary columns (total labels)
    Py_ssize_t n_table             # feature-table entries (the first weights of theta)
    Py_ssize_t bias_unary          # offset of the unary biases in theta
    int n_chains
    int n_edges
    int max_labels
    const int* n_labels            # per chain
    const int* label_offset        # per chain (C + 1)
    const long long* chain_tied    # per chain: start of its L x L block in chain transitions
    const int* chain_untied_ptr    # per chain: range into chain_untied
    const int* chain_untied        # untied in-chain edge templates, chain by chain
    const int* e_kind              # per edge template: 0 in-chain, 1 coupling
    const int* e_a
    const int* e_b
    const int* e_tied
    const long long* e_col         # first score column of an untied edge, -1 when tied
    const long long* bias_edge     # offsets of each edge's L_a x L_b biases in theta (E + 1)
    const unsigned char* forbid    # 1: forbidden assignment, edge e's at forbid_offset[e]
    const long long* forbid_offset  # (E + 1)
    const long long* feat_ptr      # the feature table (n_features + 1)
    const int* ent_col


cdef class ParameterTables:
    cdef readonly object graph
    cdef readonly Py_ssize_t width, n_table, bias_unary, n_params
    cdef readonly int n_chains, n_edges, max_labels, total_labels
    cdef readonly int[::1] n_labels, label_offset, chain_untied_ptr, chain_untied
    cdef readonly int[::1] e_kind, e_a, e_b, e_tied, ent_col
    cdef readonly long long[::1] chain_tied, e_col, bias_edge, forbid_offset, feat_ptr
    cdef readonly unsigned char[::1] forbid
    cdef object _args
    cdef ParameterView view(self) noexcept
