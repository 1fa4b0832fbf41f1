"""Memory guard: the peak memory a fit will need, estimated before the big allocations.

The estimate is computed from the model's dimensions once the observations are
encoded and the graph is known, *before* the feature table is built:

weights
    Per template: ``"all"`` support gives every (observation, assignment)
    pair a weight (``n_observations x L_a x L_b`` for a pairwise template --
    the case that exhausts memory); ``"supported"`` at most one weight per
    assignment seen with an observation, so per observation column at most
    ``min(occurrences, assignments)`` (with the column counts; without them
    ``nnz(X)`` in all); ``"default"`` only the biases.
the feature table
    12 bytes per weight (it is built through three int64 arrays of the weights'
    size, but before the optimizer allocates anything, so that phase is never
    the peak when training needs more; it is reported, not added).
training
    Vectors of the weights' size (8 bytes per weight) alive at once, measured
    with ``benchmarks/bench_memory_estimate.py`` (peak RSS of fits against this
    model): ``2 * lbfgs_memory + 6`` for L-BFGS's correction pairs, its
    point, gradient, direction and trial point, the penalised gradient's temporaries and
    the monitor's copy of the last weights; plus the objective's gradient
    accumulators: one per block of sequences and the sum (chain-wise: up to 8
    blocks; pseudolikelihood: up to 16; both at least the 4 vectors of the
    likelihood fine-tuning stage), 4 for the likelihood, which also keeps its
    whole-batch score, potential and marginal arrays (``N x`` score width, five
    of them).

:func:`check_fit_memory` raises :class:`MemoryError` when the estimate exceeds
the limit (the ``max_memory`` parameter, else the memory the system reports
available), naming the number of weights, the template that dominates and what
to change.
"""
import os

import numpy as np

from skfcrf._kernels.graph import IN_CHAIN

__all__ = ["estimate_fit_memory", "available_memory", "check_fit_memory", "column_counts"]

#: Most gradient blocks of each objective (each a vector of the weights' size).
_BLOCKS = {"chainwise": 8, "pseudolikelihood": 16}
#: Gradient vectors of the likelihood (also the floor of the others: fine-tuning).
_LIKELIHOOD_VECTORS = 4
#: Weight-sized vectors of the optimizer besides its ``2 * lbfgs_memory`` history.
_OPTIMIZER_VECTORS = 6


def _supported(nnz, n_features, size, column_counts):
    """Upper bound on the supported weights of a template with ``size`` assignments."""
    if column_counts is None:
        return min(nnz, n_features * size)
    return int(np.minimum(column_counts, size).sum())


def _template_weights(graph, n_features, nnz, unary_features, transition_features,
                      coupling_features, column_counts=None, coupling_columns=None):
    """(name, number of weights) per template, from the support modes (the coupling
    templates' observations restricted to the mask ``coupling_columns``, if given)."""
    out = []
    coupling_counts = column_counts
    n_coupling = n_features
    if coupling_columns is not None:
        coupling_columns = np.asarray(coupling_columns, dtype=bool)
        n_coupling = int(coupling_columns.sum())
        if column_counts is not None:
            coupling_counts = np.asarray(column_counts)[coupling_columns]
    for c in range(graph.n_chains):
        L = int(graph.n_labels[c])
        n = {"all": n_features * L,
             "supported": _supported(nnz, n_features, L, column_counts)}.get(unary_features, 0)
        out.append((f"unary template of chain {c} (unary_features={unary_features!r})", n + L))
    for e in range(graph.n_edges):
        size = graph.edge_size(e)
        inchain = graph.edge_kind[e] == IN_CHAIN
        mode, param = ((transition_features, "transition_features") if inchain
                       else (coupling_features, "coupling_features"))
        name = (f"in-chain template of chain {graph.edge_a[e]}" if inchain else
                f"coupling template of chains ({graph.edge_a[e]}, {graph.edge_b[e]})")
        nf, counts = (n_features, column_counts) if inchain else (n_coupling, coupling_counts)
        n = {"all": nf * size,
             "supported": _supported(nnz, nf, size, counts)}.get(mode, 0)
        out.append((f"{name} ({param}={mode!r})", n + size))
    return out


def estimate_fit_memory(graph, n_tokens, n_features, nnz, *, unary_features,
                        transition_features, coupling_features, objective, lbfgs_memory,
                        column_counts=None, n_sequences=None, coupling_columns=None):
    """Estimated peak bytes of a fit by component (see the module docstring).

    ``column_counts`` (stored entries per observation column, :func:`column_counts`)
    tightens the bound on ``"supported"`` weights; ``n_sequences`` bounds the
    number of gradient blocks; ``coupling_columns`` (boolean mask, the
    ``coupling_observations`` parameter) the observations of the coupling
    templates.  Returns a dict of bytes per component plus
    ``n_weights``, ``dominant_template`` and ``feature_table_build`` (the set-up
    phase's peak, reported but not added: it ends before training starts).
    """
    templates = _template_weights(graph, n_features, nnz, unary_features,
                                  transition_features, coupling_features, column_counts,
                                  coupling_columns)
    n_weights = sum(n for _, n in templates)
    width = graph.total_labels + sum(
        graph.edge_size(e) for e in range(graph.n_edges) if not graph.edge_tied[e])
    if objective in _BLOCKS:
        blocks = _BLOCKS[objective] if n_sequences is None else min(_BLOCKS[objective],
                                                                    max(n_sequences, 1))
        gradient_vectors = max(blocks + 1, _LIKELIHOOD_VECTORS)
    else:
        gradient_vectors = _LIKELIHOOD_VECTORS
    est = dict(
        n_weights=n_weights,
        feature_table=12 * n_weights,
        optimizer=8 * n_weights * (2 * lbfgs_memory + _OPTIMIZER_VECTORS),
        gradient_blocks=8 * n_weights * gradient_vectors,
        batch_arrays=8 * n_tokens * width * (5 if objective == "likelihood" else 0),
        # direct and differenced rows: index and value per stored observation, and
        # the chain-wise kernel's resolved slot (``_contract.resolve_slots``)
        observations=(12 + 8) * nnz * 2,
    )
    est["dominant_template"] = max(templates, key=lambda t: t[1])[0] if templates else None
    est["feature_table_build"] = 3 * 8 * n_weights
    return est


def column_counts(X):
    """Stored entries per column of a sparse observation matrix (CSR or CSC)."""
    X = X.tocsr()
    return np.bincount(X.indices, minlength=X.shape[1])


def available_memory():
    """Bytes the system reports available (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


_NOT_ADDED = ("n_weights", "dominant_template", "feature_table_build")


def _gb(n):
    return f"{n / 2 ** 30:.2f} GB"


def check_fit_memory(est, max_memory=None, verbose=0):
    """Raise MemoryError when the estimate exceeds ``max_memory`` (bytes; None: available)."""
    parts = {k: v for k, v in est.items() if k not in _NOT_ADDED}
    # the set-up phase (building the feature table) ends before training begins
    total = int(max(sum(parts.values()),
                    est.get("feature_table_build", 0) + parts.get("observations", 0)))
    limit = max_memory if max_memory is not None else available_memory()
    if verbose:
        parts = ", ".join(f"{k} {_gb(v)}" for k, v in est.items()
                          if k not in ("n_weights", "dominant_template"))
        print(f"memory estimate: {_gb(total)} for {est['n_weights']:,} weights ({parts}); "
              f"limit {_gb(limit) if limit is not None else 'unknown'}", flush=True)
    if limit is not None and total > limit:
        raise MemoryError(
            f"this fit needs about {_gb(total)} (estimated; {est['n_weights']:,} weights, "
            f"most of them in the {est['dominant_template']}) but only {_gb(limit)} "
            f"{'are allowed (max_memory)' if max_memory is not None else 'are available'}. "
            "Use 'supported' or 'default' feature support for that template, or a larger "
            "min_instance_freq to keep fewer observations."
        )
    return total


def nnz_of(X):
    """Stored entries of a sparse observation matrix."""
    return int(X.nnz) if hasattr(X, "nnz") else int(np.count_nonzero(X))
