# cython: language_level=3
"""Scratch memory of the kernels: one allocator, which raises MemoryError on failure.

Every kernel takes its work buffers (one slice per thread) from :func:`allocate`
*before* it releases the GIL, so an allocation failure is an ordinary
``MemoryError`` raised with the GIL held, never a sentinel value or a NULL
pointer dereferenced in a parallel loop.  A :class:`Block` frees its memory when
it is garbage collected, so an exception anywhere in the kernel leaks nothing.

:func:`set_limit` is a test hook: allocations larger than the limit fail as if
``malloc`` had returned NULL.
"""
from libc.stdint cimport SIZE_MAX
from libc.stdlib cimport free, malloc

cdef size_t _limit = SIZE_MAX


def set_limit(limit):
    """Make every allocation of more than ``limit`` bytes fail (None: no limit).

    Returns the previous limit (None if there was none).  For tests only.
    """
    global _limit
    previous = None if _limit == SIZE_MAX else int(_limit)
    _limit = SIZE_MAX if limit is None else <size_t> limit
    return previous


cdef class Block:
    def __dealloc__(self):
        free(self.ptr)


cdef Block allocate(Py_ssize_t n, size_t itemsize):
    """A block of ``n`` items of ``itemsize`` bytes (at least one item).

    Raises
    ------
    MemoryError
        When ``n * itemsize`` overflows, exceeds the limit, or ``malloc`` fails.
    """
    cdef Block block = Block.__new__(Block)
    if n < 1:
        n = 1
    if itemsize == 0 or <size_t> n > SIZE_MAX // itemsize or <size_t> n * itemsize > _limit:
        raise MemoryError(f"kernel scratch memory: cannot allocate {n} items of "
                          f"{itemsize} bytes")
    block.nbytes = <size_t> n * itemsize
    block.ptr = malloc(block.nbytes)
    if block.ptr == NULL:
        raise MemoryError(f"kernel scratch memory: cannot allocate {block.nbytes} bytes")
    return block


def allocate_for_test(Py_ssize_t n, size_t itemsize):
    """:func:`allocate` from Python (tests only); returns the block's size in bytes."""
    return allocate(n, itemsize).nbytes
