"""Sequence and segmentation metrics for factorial (multi-chain) label sequences.

All metrics take ``(y_true, y_pred)`` as lists of sequences, each an array-like
``(n_tokens, n_chains)`` of labels, a list of per-token label tuples, or a 1-D
label sequence (one chain); ``chain=`` selects a chain (negative values count
from the top chain).

Token level
    :func:`chain_accuracy`, :func:`average_accuracy`, :func:`joint_accuracy`,
    :func:`label_counts`, :func:`precision_recall_fscore`,
    :func:`classification_report`, :func:`pooled_classification_report` (per-label
    table pooled over cross-validation folds), :func:`confusion_matrix`,
    :func:`plot_confusion_matrix` (needs matplotlib, ``skfcrf[plot]``).
Token level across chains
    :func:`token_f1`, :func:`cohen_kappa` (micro/macro over the tags of every
    chain), :func:`tag_counts`.
Segment level
    :func:`segment_f1` (conlleval-compatible), :func:`segment_counts`,
    :func:`segment_boundaries`, :func:`windowdiff`, :func:`pk`.
Evaluation helpers
    :func:`confidence_interval` (Student's t over folds),
    :func:`sequence_scores` and :func:`paired_test` (two systems' per-sequence
    scores), :func:`make_chain_scorer` (sklearn scorers).
"""
from skfcrf.metrics._accuracy import average_accuracy, chain_accuracy, joint_accuracy
from skfcrf.metrics._agreement import (
    PairedTest,
    TagCounts,
    cohen_kappa,
    paired_test,
    sequence_scores,
    tag_counts,
    token_f1,
)
from skfcrf.metrics._labels import (
    classification_report,
    confusion_matrix,
    label_counts,
    plot_confusion_matrix,
    pooled_classification_report,
    precision_recall_fscore,
)
from skfcrf.metrics._scorer import SCORER_METRICS, make_chain_scorer
from skfcrf.metrics._segments import (
    default_k,
    pk,
    segment_boundaries,
    segment_counts,
    segment_f1,
    windowdiff,
)
from skfcrf.metrics._stats import confidence_interval

__all__ = [
    "PairedTest",
    "SCORER_METRICS",
    "TagCounts",
    "average_accuracy",
    "chain_accuracy",
    "classification_report",
    "cohen_kappa",
    "confidence_interval",
    "confusion_matrix",
    "default_k",
    "joint_accuracy",
    "label_counts",
    "make_chain_scorer",
    "paired_test",
    "pk",
    "plot_confusion_matrix",
    "pooled_classification_report",
    "precision_recall_fscore",
    "segment_boundaries",
    "segment_counts",
    "segment_f1",
    "sequence_scores",
    "tag_counts",
    "token_f1",
    "windowdiff",
]
