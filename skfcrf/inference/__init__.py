"""Inference methods: how a model's log-potentials become labellings, marginals and ``log Z``.

This package owns inference.  Every caller -- decoding (``predict``,
``decode``, ``predict_marginals``, ``log_prob``), the likelihood objective,
partial labels, active learning, the Dask estimator, ensembles -- asks one
:class:`InferenceMethod` object, chosen once per model by
:func:`resolve_method`, and never tests which method it is.  What a method
must answer, and the algorithms built once on top of those answers (n-best
ranking, fixed labels and their feasibility, log-probabilities,
max-marginals), are in :mod:`skfcrf.inference._method`.

=========  ==============================  ==========================================
name       class                           what it is
=========  ==============================  ==========================================
``exact``  :class:`ExactInference`         one chain, or the product label space
``joint``  :class:`JointStateInference`    exact over the joint label states seen
                                           in training
``trp``    :class:`TRPInference`           loopy BP, tree-based reparameterisation
=========  ==============================  ==========================================

Adding a method is one module with an :class:`InferenceMethod` subclass and
its line in :data:`METHODS`; the estimator's ``inference`` parameter and the
command line's ``--inference`` take their choices from :data:`METHODS`.  The
compiled kernels the methods run are in :mod:`skfcrf._kernels`.
"""
from skfcrf.inference._exact import ExactInference
from skfcrf.inference._joint import JointStateInference
from skfcrf.inference._method import STATUSES, InferenceMethod, SequenceDecoding
from skfcrf.inference._trp import TRPInference

__all__ = ["InferenceMethod", "ExactInference", "JointStateInference", "TRPInference",
           "METHODS", "resolve_method", "SequenceDecoding", "STATUSES"]

#: ``inference=`` name -> method class.
METHODS = {cls.name: cls for cls in (ExactInference, JointStateInference, TRPInference)}


def resolve_method(inference, graph, joint_states=None, **inputs):
    """The inference method an ``inference=`` setting means for a model.

    Parameters
    ----------
    inference : {"auto"} or a name in :data:`METHODS`
        ``"auto"``: exact for one chain; for several, ``"joint"`` (exact over
        the model's joint label states) when
        :func:`~skfcrf._kernels.joint.supports_joint` holds, else ``"trp"``.
    graph : skfcrf._kernels.graph.Graph
    joint_states : int32 ndarray of shape (S, C), optional
        The model's label combinations.
    **inputs
        Further inputs of :class:`InferenceMethod` (``n_threads``,
        ``max_iter``, ``tol``, ``seeds``, ``state_trans``).

    Returns
    -------
    InferenceMethod

    Raises
    ------
    ValueError
        For an unknown name, or ``"joint"`` on a model it does not apply to.
    """
    if inference == "auto":
        if graph.n_chains == 1:
            inference = "exact"
        elif JointStateInference.applies(graph, joint_states):
            inference = "joint"
        else:
            inference = "trp"
    elif inference not in METHODS:
        raise ValueError(f"unknown inference method {inference!r}; expected 'auto' or one of "
                         f"{sorted(METHODS)}")
    else:
        METHODS[inference].check_applies(graph, joint_states)
    return METHODS[inference](graph, joint_states=joint_states, **inputs)
