# cython: language_level=3
"""Scratch memory of the kernels: one allocator, which raises MemoryError on failure,
and one way to carve it into per-thread buffers.

A kernel describes one thread's buffers once, as a function that takes them one
after another from a :c:type:`Carver` (:func:`take_doubles`, :func:`take_ints`).
Run over ``carver(NULL)`` it only measures (``used`` bytes, the pointers NULL);
the kernel then allocates ``n_threads * used`` bytes and runs it again per thread
over ``carver(base + tid * used)``.  Sizes and layout cannot disagree.
"""


cdef class Block:
    """``nbytes`` of uninitialised memory at ``ptr``, freed with the object."""
    cdef void* ptr
    cdef size_t nbytes


cdef Block allocate(Py_ssize_t n, size_t itemsize)


cdef struct Carver:
    char* at            # start of the memory carved, NULL while only measuring
    size_t used         # bytes taken so far


cdef inline Carver carver(void* base) noexcept nogil:
    """A carver over the memory at ``base`` (NULL: measure only)."""
    cdef Carver c
    c.at = <char*> base
    c.used = 0
    return c


cdef inline void* _take(Carver* c, Py_ssize_t n, size_t itemsize) noexcept nogil:
    cdef void* p = NULL if c.at == NULL else <void*> (c.at + c.used)
    c.used += <size_t> n * itemsize
    return p


cdef inline double* take_doubles(Carver* c, Py_ssize_t n) noexcept nogil:
    """The next ``n`` doubles of ``c``."""
    return <double*> _take(c, n, sizeof(double))


cdef inline float* take_floats(Carver* c, Py_ssize_t n) noexcept nogil:
    """The next ``n`` floats of ``c`` (take them after the doubles: alignment)."""
    return <float*> _take(c, n, sizeof(float))


cdef inline int* take_ints(Carver* c, Py_ssize_t n) noexcept nogil:
    """The next ``n`` ints of ``c`` (take them after the doubles: alignment)."""
    return <int*> _take(c, n, sizeof(int))


cdef inline const double** take_pointers(Carver* c, Py_ssize_t n) noexcept nogil:
    """The next ``n`` pointers to doubles of ``c`` (take them after the doubles)."""
    return <const double**> _take(c, n, sizeof(double*))
