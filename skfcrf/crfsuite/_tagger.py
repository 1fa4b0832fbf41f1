"""``pycrfsuite.Tagger`` for :class:`skfcrf.crfsuite.CRF`: the object ``CRF.tagger_`` gives.

Its methods behave as python-crfsuite's: ``set`` stores a sequence, ``tag``
decodes the stored one (or sets a new one first), ``probability`` and
``marginal`` are computed on the stored sequence, a tagger with no sequence
set (or an empty one) tags ``[]`` and gives probabilities 0.0; a wrong
length or position raises ``ValueError``, an unknown label
:class:`UnknownLabelError` (a ``ValueError`` that is also the
``RuntimeError`` python-crfsuite raises), any call to a closed tagger
``ValueError("The tagger is not opened")``.
"""
import contextlib
import math
import os
import sys

import numpy as np

from skfcrf.crfsuite import _model_file

__all__ = ["ParsedDump", "Tagger", "UnknownLabelError"]


class UnknownLabelError(ValueError, RuntimeError):
    """A label the model does not know (python-crfsuite raises ``RuntimeError``)."""


class ParsedDump:
    """Model parameters as ``pycrfsuite.Tagger.info()`` gives them.

    Weights are rounded to 6 decimals, as CRFsuite's dump prints them;
    ``CRF.state_features_`` and ``CRF.transition_features_`` have them exact.

    Attributes
    ----------
    header : dict
        The model file header, str values as CRFsuite's dump prints them
        (offsets in hexadecimal, ``num_features`` 0 as CRFsuite writes it).
    labels : dict
        ``{name: id}``, ids as str.
    attributes : dict
        ``{name: id}``, ids as str: the attributes with a state feature.
    transitions : dict
        ``{(label_from, label_to): weight}``.
    state_features : dict
        ``{(attribute, label): weight}``.
    """

    def __init__(self, model=None):
        self.header, self.labels, self.attributes = {}, {}, {}
        self.transitions, self.state_features = {}, {}
        if model is None:
            return
        for key in _model_file.HEADER_FIELDS:
            value = model.header[key]
            self.header[key] = f"0x{value:X}" if key.startswith("off_") else str(value)
        self.labels = {name: str(i) for i, name in enumerate(model.labels)}
        self.attributes = {name: str(i) for i, name in enumerate(model.attributes)}
        labels, attributes = model.labels, model.attributes
        for i in np.argsort(model.trans_from, kind="stable").tolist():
            self.transitions[(labels[model.trans_from[i]], labels[model.trans_to[i]])] = \
                float(f"{model.trans_weight[i]:f}")
        for i in np.argsort(model.state_attr, kind="stable").tolist():
            self.state_features[(attributes[model.state_attr[i]],
                                 labels[model.state_label[i]])] = float(f"{model.state_weight[i]:f}")


class Tagger:
    """python-crfsuite's ``Tagger`` on a :class:`~skfcrf.crfsuite.CRF` model.

    ``CRF.tagger_`` is one, opened on the fitted (or loaded) model;
    ``Tagger().open(path)`` opens a CRFsuite model file, as
    ``pycrfsuite.Tagger().open(path)`` does.

    Parameters
    ----------
    crf : skfcrf.crfsuite.CRF, optional
        A fitted or loaded model; None: closed until :meth:`open`.
    """

    def __init__(self, crf=None):
        self._crf = crf
        self._reset()

    def _reset(self):
        self._xseq = []
        self._marginals = None
        self._best = None

    def _model(self):
        if self._crf is None:
            raise ValueError("The tagger is not opened")
        return self._crf

    # -------------------------------------------------------------- file handling
    def open(self, name):
        """Open a CRFsuite model file (``ValueError`` for one that is not valid).

        Returns
        -------
        contextlib.closing
            Closes the tagger at the end of a ``with`` block.
        """
        from skfcrf.crfsuite import CRF

        crf = CRF(model_filename=os.fspath(name))
        crf._fitted()       # reads the file now: OSError or ValueError here
        self._crf = crf
        self._reset()
        return contextlib.closing(self)

    def open_inmemory(self, value):
        """Open a model from the bytes of a CRFsuite model file."""
        from skfcrf.crfsuite import CRF

        if not isinstance(value, bytes):
            raise TypeError(f"value must be bytes, got {type(value).__name__}")
        crf = CRF()
        crf._load(_model_file.read(value), value)
        self._crf = crf
        self._reset()
        return contextlib.closing(self)

    def close(self):
        """Close the model."""
        self._crf = None
        self._reset()

    # -------------------------------------------------------------- tagging
    def labels(self):
        """The model's labels, in CRFsuite's id order (first appearance in training)."""
        return list(self._model()._classes)

    def set(self, xseq):
        """Store the sequence ``xseq`` (a list of token dicts or attribute-name
        lists) for :meth:`tag`, :meth:`probability` and :meth:`marginal`."""
        from skfcrf.crfsuite import _sequences

        self._model()
        if hasattr(xseq, "items") and callable(xseq.items) and not isinstance(xseq, dict):
            xseq = xseq.items()       # a pycrfsuite.ItemSequence
        seq = _sequences([xseq])[0]
        self._reset()
        self._xseq = seq

    def tag(self, xseq=None):
        """The most probable labelling (Viterbi) of ``xseq``, or of the stored
        sequence when ``xseq`` is None: a list of str (``[]`` for none)."""
        if xseq is not None:
            self.set(xseq)
        crf = self._model()
        if not self._xseq:
            return []
        if self._best is None:
            self._best = crf.crf_.predict([self._xseq])[0].tolist()
        return list(self._best)

    def _label_id(self, label):
        try:
            return self._model()._label_ids[label]
        except (KeyError, TypeError):
            raise UnknownLabelError(f"Failed to convert into label identifier: {label}") \
                from None

    def probability(self, yseq):
        """``P(yseq | x)`` of the stored sequence ``x`` (0.0 when there is none).

        Raises
        ------
        ValueError
            ``yseq`` and the sequence differ in length.
        UnknownLabelError
            A label the model does not know.
        """
        crf = self._model()
        T = len(self._xseq)
        if T == 0:
            return 0.0
        yseq = list(yseq)
        if len(yseq) != T:
            raise ValueError(f"The numbers of items and labels differ: |x| = {T}, "
                             f"|y| = {len(yseq)}")
        for label in yseq:
            self._label_id(label)
        return math.exp(float(crf.crf_.log_prob([self._xseq], [yseq])[0]))

    def marginal(self, y, pos):
        """The marginal probability of label ``y`` at position ``pos`` of the
        stored sequence (0.0 when there is none).

        Raises
        ------
        ValueError
            ``pos`` outside ``[0, len(sequence))``.
        UnknownLabelError
            A label the model does not know.
        """
        crf = self._model()
        T = len(self._xseq)
        if T == 0:
            return 0.0
        if not 0 <= pos < T:
            raise ValueError(f"The position, {pos} is out of range of {T}")
        label = self._label_id(y)
        if self._marginals is None:
            self._marginals = crf.crf_.predict_marginals([self._xseq])[0][0]
        return float(self._marginals[pos, crf._sorted_index[label]])

    # -------------------------------------------------------------- the model
    def info(self):
        """The model's parameters: a :class:`ParsedDump`, as ``pycrfsuite``'s."""
        return ParsedDump(self._model()._file_model())

    def dump(self, filename=None):
        """Write CRFsuite's text dump of the model to ``filename`` (stdout: None)."""
        text = _model_file.dump(self._model()._file_model())
        if filename is None:
            sys.stdout.write(text)
        else:
            with open(filename, "w", encoding="utf-8") as fh:
                fh.write(text)
