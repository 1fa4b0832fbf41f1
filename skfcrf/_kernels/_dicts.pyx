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


cdef object _entry_arrays(list tokens):
    """Empty ``(columns, values, counts)`` arrays for every entry of ``tokens``, or None
    when a token is not a plain ``dict`` (the readers then return None)."""
    cdef Py_ssize_t n = 0
    cdef object tok
    for tok in tokens:
        if not PyDict_CheckExact(tok):
            return None
        n += PyDict_GET_SIZE(tok)
    return (np.empty(n, np.int64), np.empty(n, np.float64),
            np.empty(len(tokens), np.int64))


def read_dict_sequence(list tokens, dict vocabulary, bint grow):
    """``(columns, values, counts)`` of one sequence of plain dicts (module
    docstring), or None where the general path must read it."""
    cdef Py_ssize_t n_tokens = len(tokens), t, pos, k = 0, kept
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef object tok
    arrays = _entry_arrays(tokens)
    if arrays is None:
        return None
    columns_arr, values_arr, counts_arr = arrays
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


cdef extern from "Python.h":
    bint PyUnicode_CheckExact(object o)
    bint PyFloat_CheckExact(object o)
    bint PyLong_CheckExact(object o)
    bint PyBool_Check(object o)


def read_crfsuite_sequence(list tokens, dict vocabulary):
    """``(columns, values, counts)`` of one sequence of tokens in CRFsuite's format, as
    :func:`read_dict_sequence` reads their ``{name: value}`` form, or None.

    A token ``{"word": "walk", "upper": False, "len": 4}`` is ``{"word:walk": 1.0,
    "upper": 0.0, "len": 4.0}``: a str value joins the name as ``name:value`` with
    value 1, a bool, int or float value is the name's value.  Names outside
    ``vocabulary`` are dropped and so are zero values.  None -- for the general
    path to read the sequence and name any problem -- for a token that is not a
    plain ``dict``, a name that is not a ``str``, any other value (nested
    attributes, bytes, numpy numbers, an int beyond a double), a kept name twice
    in a token (the general path sums them) or a kept value that is not finite or
    beyond 1e100 in magnitude.
    """
    cdef Py_ssize_t n_tokens = len(tokens), t, pos, k = 0, kept, j
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef object tok, name
    cdef double v
    cdef long long column
    arrays = _entry_arrays(tokens)
    if arrays is None:
        return None
    columns_arr, values_arr, counts_arr = arrays
    cdef long long[::1] columns = columns_arr
    cdef double[::1] values = values_arr
    cdef long long[::1] counts = counts_arr
    try:
        for t in range(n_tokens):
            tok = tokens[t]
            pos = 0
            kept = 0
            while PyDict_Next(tok, &pos, &key, &value):
                if not PyUnicode_CheckExact(<object> key):
                    return None
                if PyUnicode_CheckExact(<object> value):
                    name = <object> key + ":" + <object> value
                    v = 1.0
                elif PyFloat_CheckExact(<object> value):
                    name = <object> key
                    v = PyFloat_AS_DOUBLE(<object> value)
                elif PyLong_CheckExact(<object> value) or PyBool_Check(<object> value):
                    name = <object> key
                    v = PyLong_AsDouble(<object> value)
                else:
                    return None
                found = PyDict_GetItemWithError(vocabulary, name)
                if found == NULL:
                    continue
                if not (-1e100 <= v <= 1e100):
                    return None
                column = PyLong_AsLongLong(<object> found)
                for j in range(k - kept, k):
                    if columns[j] == column:
                        return None
                columns[k] = column
                values[k] = v
                k += 1
                kept += 1
            # zero values dropped, once every kept name is known to be there once
            j = k - kept
            for pos in range(k - kept, k):
                if values[pos] != 0:
                    columns[j] = columns[pos]
                    values[j] = values[pos]
                    j += 1
            counts[t] = j - (k - kept)
            k = j
    except (TypeError, OverflowError):      # a name's comparison; an int beyond a double
        return None
    return columns_arr[:k], values_arr[:k], counts_arr
