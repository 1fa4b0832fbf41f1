"""The standard feature union of the dictation benchmarks (as in `skfcrf demo`)."""
from skfcrf.transformers import BagOfConcepts, NGramWindow, RelativePosition, make_sequence_union


def standard_features():
    """Word n-gram window, bag of concepts in a +-10 window, relative position in 8 bins."""
    return make_sequence_union(NGramWindow(lowercase=True), BagOfConcepts(window=10),
                               RelativePosition(n_bins=8))
