# cython: language_level=3
"""Reading one sequence of observation dicts into CSR arrays, at C speed.

A sequence is a list of per-token dicts ``{name: value}``.  :func:`read_dict_sequence`
walks the dicts with ``PyDict_Next`` (insertion order), looks every name up in the
``vocabulary`` (name -> column; the name's hash is the one its dict cached) and
writes three arrays:

- ``columns`` (int64): the kept names' columns, token after token;
- ``values`` (float64): their values;
- ``counts`` (int64, one per token): how many of the token's names were kept.

Names not in the vocabulary are dropped, values and all; with ``grow`` they are
added instead, column ``len(vocabulary)``, in order of first occurrence.

The reader takes only what it reads exactly as the general path would, and returns
None for anything else, for that path (:mod:`skfcrf.estimators._observations`) to
read again and name the problem: a token that is not a plain ``dict``; a new name
(with ``grow``) that is not a ``str``; a kept name's value that is not a Python
``float`` (or subclass: ``numpy.float64``) or ``int`` (``bool`` included) that
converts to a double; or a name whose comparison raises ``TypeError``.  This loop
holds the GIL: it reads Python objects, which is all it does.
"""
from cpython.dict cimport PyDict_GetItemWithError, PyDict_Next
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from cpython.long cimport PyLong_AsDouble, PyLong_AsLongLong, PyLong_Check
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_Check

import numpy as np


cdef extern from "Python.h":
    bint PyDict_CheckExact(object o)
    Py_ssize_t PyDict_GET_SIZE(object o)


def read_dict_sequence(list tokens, dict vocabulary, bint grow):
    """``(columns, values, counts)`` of one sequence of plain dicts (module
    docstring), or None where the general path must read it."""
    cdef Py_ssize_t n_tokens = len(tokens), n = 0, t, pos, k = 0, kept
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef object tok
    for tok in tokens:
        if not PyDict_CheckExact(tok):
            return None
        n += PyDict_GET_SIZE(tok)
    columns_arr = np.empty(n, np.int64)
    values_arr = np.empty(n, np.float64)
    counts_arr = np.empty(n_tokens, np.int64)
    cdef long long[::1] columns = columns_arr
    cdef double[::1] values = values_arr
    cdef long long[::1] counts = counts_arr
    try:
        for t in range(n_tokens):
            tok = tokens[t]
            pos = 0
            kept = 0
            while PyDict_Next(tok, &pos, &key, &value):
                found = PyDict_GetItemWithError(vocabulary, <object> key)
                if found == NULL:
                    if not grow:
                        continue
                    if not PyUnicode_Check(<object> key):
                        return None
                    vocabulary[<object> key] = len(vocabulary)
                    found = PyDict_GetItemWithError(vocabulary, <object> key)
                if PyFloat_Check(<object> value):
                    values[k] = PyFloat_AS_DOUBLE(<object> value)
                elif PyLong_Check(<object> value):
                    values[k] = PyLong_AsDouble(<object> value)
                else:
                    return None
                columns[k] = PyLong_AsLongLong(<object> found)
                k += 1
                kept += 1
            counts[t] = kept
    except (TypeError, OverflowError):      # a name's comparison; an int beyond a double
        return None
    return columns_arr[:k], values_arr[:k], counts_arr
