"""Memory guard: the peak memory a fit will need, estimated before the big allocations.

The estimate is computed from the model's dimensions once the observations are
encoded and the graph is known, *before* the feature table is built:

weights
    Per template: ``"all"`` support gives every (observation, assignment)
    pair a weight (``n_observations x L_a x L_b`` for a pairwise template --
    the case that exhausts memory); ``"supported"`` at most one weight per
    observation occurrence (``nnz(X)``) and assignment seen; ``"default"`` only
    the biases.
building the feature table
    Three int64 arrays of the weights' size (keys, their sort, the unique keys).
training
    Weights, gradient, start point and scipy L-BFGS-B's workspace
    (``(2 * lbfgs_memory + 5)`` vectors), plus the objective's per-block
    gradient accumulators (8 blocks for chain-wise, 16 for pseudolikelihood, 1
    for likelihood) and, for the likelihood objective, its whole-batch score,
    potential and marginal arrays (``N x`` score width, five of them).

:func:`check_fit_memory` raises :class:`MemoryError` when the estimate exceeds
the limit (the ``max_memory`` parameter, else the memory the system reports
available), naming the number of weights, the template that dominates and what
to change.
"""
import os

import numpy as np

from skfcrf._bp.graph import IN_CHAIN

__all__ = ["estimate_fit_memory", "available_memory", "check_fit_memory"]

_BLOCKS = {"chainwise": 8, "pseudolikelihood": 16, "likelihood": 1}


def _template_weights(graph, n_features, nnz, unary_features, transition_features,
                      coupling_features):
    """(name, number of weights) per template, from the support modes."""
    out = []
    for c in range(graph.n_chains):
        L = int(graph.n_labels[c])
        n = {"all": n_features * L, "supported": min(nnz, n_features * L)}.get(unary_features, 0)
        out.append((f"unary template of chain {c} (unary_features={unary_features!r})", n + L))
    for e in range(graph.n_edges):
        size = graph.edge_size(e)
        inchain = graph.edge_kind[e] == IN_CHAIN
        mode, param = ((transition_features, "transition_features") if inchain
                       else (coupling_features, "coupling_features"))
        name = (f"in-chain template of chain {graph.edge_a[e]}" if inchain else
                f"coupling template of chains ({graph.edge_a[e]}, {graph.edge_b[e]})")
        n = {"all": n_features * size, "supported": min(nnz, n_features * size)}.get(mode, 0)
        out.append((f"{name} ({param}={mode!r})", n + size))
    return out


def estimate_fit_memory(graph, n_tokens, n_features, nnz, *, unary_features,
                        transition_features, coupling_features, objective, lbfgs_memory):
    """Estimated peak bytes of a fit by component (see the module docstring).

    Returns a dict of bytes per component plus ``n_weights`` and
    ``dominant_template`` (the template with the most weights).
    """
    templates = _template_weights(graph, n_features, nnz, unary_features,
                                  transition_features, coupling_features)
    n_weights = sum(n for _, n in templates)
    width = graph.total_labels + sum(
        graph.edge_size(e) for e in range(graph.n_edges) if not graph.edge_tied[e])
    est = dict(
        n_weights=n_weights,
        feature_table_build=3 * 8 * n_weights,
        feature_table=12 * n_weights,
        optimizer=8 * n_weights * (3 + 2 * lbfgs_memory + 5),
        gradient_blocks=8 * n_weights * _BLOCKS.get(objective, 1),
        batch_arrays=8 * n_tokens * width * (5 if objective == "likelihood" else 0),
        observations=12 * nnz * 2,
    )
    est["dominant_template"] = max(templates, key=lambda t: t[1])[0] if templates else None
    return est


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


def _gb(n):
    return f"{n / 2 ** 30:.2f} GB"


def check_fit_memory(est, max_memory=None, verbose=0):
    """Raise MemoryError when the estimate exceeds ``max_memory`` (bytes; None: available)."""
    total = int(sum(v for k, v in est.items()
                    if k not in ("n_weights", "dominant_template")))
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
