"""The standard feature union of the dictation benchmarks (as in `skfcrf demo`)."""
from skfcrf.transformers import make_dictation_features


def standard_features():
    """Word n-gram window, bag of concepts in a +-10 window, relative position in 8 bins."""
    return make_dictation_features()
