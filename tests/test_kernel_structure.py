"""The typed structure the kernels read (skfcrf._kernels._contract): links, product, TRP tables."""
import numpy as np
import pytest

from skfcrf._kernels._contract import EXP_RANGE, ProductSpace, TrpLayout, inference_links, template_links
from skfcrf._kernels.graph import Graph, pair_layout

# chain 0 has a tied and an untied in-chain template; chains 0-1 a tied coupling template
GRAPH = Graph.build([3, 2], [(0, 0, 0, 1), (1, 1, 0, 1), (0, 1, 1, 1), (0, 0, 0, 0)])
N = 4


def potentials():
    eo = pair_layout(GRAPH, N)
    pair = np.random.default_rng(0).normal(size=int(eo[-1]))
    pair[eo[2] + 1] = -np.inf                    # a forbidden coupling
    return pair, eo


def test_inference_links_merge_templates():
    pair, eo = potentials()
    got = inference_links(GRAPH, pair, eo).arrays()
    # in-chain links first (chain order), then couplings; templates 0 and 3 merged
    np.testing.assert_array_equal(got["kind"], [0, 0, 1])
    np.testing.assert_array_equal(got["a"], [0, 1, 0])
    np.testing.assert_array_equal(got["b"], [0, 1, 1])
    np.testing.assert_array_equal(got["inlink"], [0, 1])
    np.testing.assert_array_equal(got["tmpl_ptr"], [0, 2, 3, 4])
    np.testing.assert_array_equal(got["tmpl_edge"], [0, 3, 1, 2])
    np.testing.assert_array_equal(got["tied"], [0, 1, 1])
    np.testing.assert_array_equal(got["unt_ptr"], [0, 1, 1, 1])
    np.testing.assert_array_equal(got["unt_off"], [eo[3]])
    np.testing.assert_array_equal(got["tmpl_tacc_off"], [0, -1, 9, 13])
    # the tied sum of link 0 is template 0's matrix; shifted exponentials and transposes
    np.testing.assert_array_equal(got["tied_log"][:9], pair[eo[0]:eo[0] + 9])
    np.testing.assert_array_equal(got["tied_shift"], [pair[eo[0]:eo[0] + 9].max(),
                                                      pair[eo[1]:eo[1] + 4].max(),
                                                      np.nanmax(pair[eo[2]:eo[2] + 6])])
    for k, (la, lb) in enumerate(zip(got["la"], got["lb"])):
        o = got["tied_off"][k]
        log = got["tied_log"][o:o + la * lb].reshape(la, lb)
        np.testing.assert_array_equal(got["tied_exp"][o:o + la * lb],
                                      np.exp(log - got["tied_shift"][k]).ravel())
        np.testing.assert_array_equal(got["tied_expT"][o:o + la * lb],
                                      np.exp(log - got["tied_shift"][k]).T.ravel())
        np.testing.assert_array_equal(got["tied_logT"][o:o + la * lb], log.T.ravel())
    # the forbidden entry keeps the coupling off the cached-exponential path
    np.testing.assert_array_equal(got["tied_fast"], [0, 1, 0])


def test_virtual_inchain_links():
    graph = Graph.build([2, 3], [(0, 1, 1, 1)])
    pair = np.zeros(6)
    links = inference_links(graph, pair, pair_layout(graph, 2), virtual_inchain=True)
    got = links.arrays()
    np.testing.assert_array_equal(got["inlink"], [0, 1])
    np.testing.assert_array_equal(got["tmpl_ptr"], [0, 0, 0, 1])
    np.testing.assert_array_equal(got["tied_exp"][:4], np.ones(4))
    assert np.asarray(inference_links(graph, pair, pair_layout(graph, 2)).arrays()["inlink"]
                      ).tolist() == [-1, -1]


def test_template_links_keep_template_order():
    pair, eo = potentials()
    tied = [pair[eo[e]:eo[e + 1]] if GRAPH.edge_tied[e] else None for e in range(4)]
    got = template_links(GRAPH, tied).arrays()
    np.testing.assert_array_equal(got["a"], GRAPH.edge_a)
    np.testing.assert_array_equal(got["kind"], GRAPH.edge_kind)
    np.testing.assert_array_equal(got["tied"], GRAPH.edge_tied)
    np.testing.assert_array_equal(got["tmpl_edge"], [0, 1, 2, 3])


@pytest.mark.parametrize("span, fast", [(EXP_RANGE - 1, 1), (EXP_RANGE + 1, 0)])
def test_fast_path_needs_a_small_span(span, fast):
    graph = Graph.build([2], [(0, 0, 0, 1)])
    m = np.array([0.0, -span, 1.0, 0.5])
    got = template_links(graph, [m]).arrays()
    assert got["tied_fast"][0] == fast
    if fast:
        np.testing.assert_allclose(got["tied_inv"] * got["tied_exp"], 1.0)


def test_product_and_trp_tables():
    pair, eo = potentials()
    links = inference_links(GRAPH, pair, eo, virtual_inchain=True)
    space = ProductSpace(links)
    assert (space.n_chains, space.n_states) == (2, 6)
    layout = TrpLayout(links)
    # messages: per link la + lb entries; potentials: matrix and transpose of untied link 0
    assert layout.message_size == (3 + 3) + (2 + 2) + (3 + 2)
    assert layout.potential_size == 2 * 9
