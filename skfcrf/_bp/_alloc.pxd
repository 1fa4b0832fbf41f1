# cython: language_level=3
"""Scratch memory of the kernels: one allocator, which raises MemoryError on failure."""


cdef class Block:
    """``nbytes`` of uninitialised memory at ``ptr``, freed with the object."""
    cdef void* ptr
    cdef size_t nbytes


cdef Block allocate(Py_ssize_t n, size_t itemsize)
