"""Brute-force references on tiny FCRFs: full labelling scores and enumeration."""
import itertools

import numpy as np
from scipy.special import logsumexp

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, pair_layout


def make_problem(rng, n_labels, lengths, couplings, tied, forbid=False):
    edges = [(c, c, IN_CHAIN, tied) for c in range(len(n_labels))]
    edges += [(a, b, COUPLING, tied) for a, b in couplings]
    graph = Graph.build(n_labels, edges)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    unary = rng.normal(size=(n, graph.total_labels))
    edge_offset = pair_layout(graph, n)
    pair = rng.normal(size=int(edge_offset[-1]))
    gold = np.stack([rng.integers(0, L, size=n) for L in n_labels], axis=1).astype(np.int32)
    if forbid:
        # forbid one non-gold transition per in-chain matrix
        for e in range(graph.n_edges):
            if graph.edge_kind[e] != IN_CHAIN:
                continue
            L = graph.n_labels[graph.edge_a[e]]
            used = set()
            for s in range(len(lengths)):
                for g in range(seq_ptr[s] + 1, seq_ptr[s + 1]):
                    c = graph.edge_a[e]
                    used.add((gold[g - 1, c], gold[g, c]))
            for a, b in itertools.product(range(L), range(L)):
                if (a, b) not in used:
                    if graph.edge_tied[e]:
                        pair[edge_offset[e] + a * L + b] = -np.inf
                    else:
                        for g in range(n):
                            pair[edge_offset[e] + g * L * L + a * L + b] = -np.inf
                    break
    return graph, seq_ptr, unary, pair, edge_offset, gold


def pot(graph, pair, edge_offset, e, g, la, lb):
    k = graph.edge_size(e)
    nb = graph.n_labels[graph.edge_b[e]]
    base = edge_offset[e] if graph.edge_tied[e] else edge_offset[e] + g * k
    return pair[base + la * nb + lb]


def full_score(graph, unary, pair, edge_offset, start, y):
    """Score of a whole labelling y (T, C) of the sequence starting at ``start``."""
    T, C = y.shape
    s = 0.0
    for t in range(T):
        for c in range(C):
            s += unary[start + t, graph.label_offset[c] + y[t, c]]
    for e in range(graph.n_edges):
        a, b = graph.edge_a[e], graph.edge_b[e]
        for t in range(T):
            if graph.edge_kind[e] == IN_CHAIN:
                if t > 0:
                    s += pot(graph, pair, edge_offset, e, start + t, y[t - 1, a], y[t, a])
            else:
                s += pot(graph, pair, edge_offset, e, start + t, y[t, a], y[t, b])
    return s


def brute_pl(graph, seq_ptr, unary, pair, edge_offset, gold):
    losses = []
    for s in range(len(seq_ptr) - 1):
        start, stop = seq_ptr[s], seq_ptr[s + 1]
        y = gold[start:stop].copy()
        T = stop - start
        factors = []
        for t in range(T):
            for c in range(graph.n_chains):
                factors.append([(t, c)])
            for e in range(graph.n_edges):
                a, b = graph.edge_a[e], graph.edge_b[e]
                if graph.edge_kind[e] == IN_CHAIN:
                    if t > 0:
                        factors.append([(t - 1, a), (t, a)])
                else:
                    factors.append([(t, a), (t, b)])
        loss = 0.0
        for vars_ in factors:
            scores = []
            gold_score = full_score(graph, unary, pair, edge_offset, start, y)
            for assign in itertools.product(*[range(graph.n_labels[c]) for _, c in vars_]):
                yy = y.copy()
                for (t, c), lab in zip(vars_, assign):
                    yy[t, c] = lab
                scores.append(full_score(graph, unary, pair, edge_offset, start, yy))
            loss += logsumexp(scores) - gold_score
        losses.append(loss)
    return np.array(losses)


def all_labellings(graph, T):
    """Every labelling (T, C) of a sequence of length T."""
    C = graph.n_chains
    for flat in itertools.product(*[range(graph.n_labels[c]) for _ in range(T) for c in range(C)]):
        yield np.array(flat, dtype=np.int64).reshape(T, C)


def brute_log_z(graph, unary, pair, edge_offset, start, T):
    return logsumexp([full_score(graph, unary, pair, edge_offset, start, y)
                      for y in all_labellings(graph, T)])
