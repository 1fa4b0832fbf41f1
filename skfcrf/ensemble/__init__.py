"""Combining sequence labellers: averaged marginals and two-stage models.

:class:`MarginalAveraging` is the confidence-weighted ensemble of Marcheggiani
(2014, section 2.2.4, eq. 2.4/2.5): the members' token marginals are averaged and
the average decoded token by token.  :class:`TwoStage` is the thesis's cascade
(section 2.2.3): a first model's predictions of some chains become observations of
a second model of all the chains, trained on cross-fitted first-stage outputs.
The thesis's best system is the ensemble of a single-stage and a two-stage model::

    MarginalAveraging([FactorialCRF(), TwoStage(FactorialCRF(), FactorialCRF(),
                                                first_chains=0)])

Members and stages may be :class:`~sklearn.pipeline.Pipeline` objects with their
own feature transformers over the same raw tokens.
"""
from skfcrf.ensemble._averaging import MarginalAveraging, average_marginals
from skfcrf.ensemble._two_stage import TwoStage

__all__ = ["MarginalAveraging", "TwoStage", "average_marginals"]
