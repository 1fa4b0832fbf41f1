# cython: language_level=3
"""Scratch memory of the kernels: one allocator, which raises MemoryError on failure.

Every kernel takes its work buffers (one slice per thread) from :func:`allocate`
*before* it releases the GIL, so an allocation failure is an ordinary
``MemoryError`` raised with the GIL held, never a sentinel value or a NULL
pointer dereferenced in a parallel loop.  A :class:`Block` frees its memory when
it is garbage collected, so an exception anywhere in the kernel leaks nothing.

Inside :func:`reusing_scratch` a freed block is kept (one at a time, the largest,
up to 1 GiB) and handed to the next allocation it is large enough for and at most
twice the size of.  A training loop calls the same kernels hundreds of times with
the same sizes; a fresh ``malloc`` of that size is an ``mmap`` whose pages the kernel
then faults in and zeroes one by one, 8% of a back-off likelihood evaluation on
the dictations (five folds, five blocks).  Outside the context nothing is kept.
Blocks are allocated and freed with the GIL held, so the one slot needs no lock.

:func:`set_limit` is a test hook: allocations larger than the limit fail as if
``malloc`` had returned NULL.
"""
from contextlib import contextmanager

from libc.stdint cimport SIZE_MAX
from libc.stdlib cimport free, malloc

cdef size_t _limit = SIZE_MAX

cdef size_t REUSE_MAX = 1 << 30        # the largest block kept for reuse (bytes)

cdef void* _kept = NULL          # the block kept for reuse, or NULL
cdef size_t _kept_bytes = 0
cdef int _reusing = 0            # depth of nested reusing_scratch contexts


def set_limit(limit):
    """Make every allocation of more than ``limit`` bytes fail (None: no limit).

    Returns the previous limit (None if there was none).  For tests only.
    """
    global _limit
    previous = None if _limit == SIZE_MAX else int(_limit)
    _limit = SIZE_MAX if limit is None else <size_t> limit
    return previous


cdef void _drop_kept():
    global _kept, _kept_bytes
    free(_kept)
    _kept, _kept_bytes = NULL, 0


cdef class Block:
    def __dealloc__(self):
        global _kept, _kept_bytes
        if (_reusing and self.ptr != NULL and self.nbytes > _kept_bytes
                and self.nbytes <= REUSE_MAX):
            _drop_kept()
            _kept, _kept_bytes = self.ptr, self.nbytes
        else:
            free(self.ptr)


@contextmanager
def reusing_scratch():
    """A context in which the kernels' freed scratch blocks are reused (module
    docstring); on leaving the outermost one the kept block is freed."""
    global _reusing
    _reusing += 1
    try:
        yield
    finally:
        _reusing -= 1
        if not _reusing:
            _drop_kept()


def kept_bytes():
    """The size of the block kept for reuse (0: none); for tests."""
    return int(_kept_bytes)


cdef Block allocate(Py_ssize_t n, size_t itemsize):
    """A block of ``n`` items of ``itemsize`` bytes (at least one item).

    Raises
    ------
    MemoryError
        When ``n * itemsize`` overflows, exceeds the limit, or ``malloc`` fails.
    """
    global _kept, _kept_bytes
    cdef Block block = Block.__new__(Block)
    if n < 1:
        n = 1
    if itemsize == 0 or <size_t> n > SIZE_MAX // itemsize or <size_t> n * itemsize > _limit:
        raise MemoryError(f"kernel scratch memory: cannot allocate {n} items of "
                          f"{itemsize} bytes")
    block.nbytes = <size_t> n * itemsize
    if _kept != NULL and block.nbytes <= _kept_bytes <= 2 * block.nbytes:
        # the kept block, unless it is more than twice the size (a small request
        # would take the block a large one is about to need)
        block.ptr, block.nbytes = _kept, _kept_bytes
        _kept, _kept_bytes = NULL, 0
        return block
    block.ptr = malloc(block.nbytes)
    if block.ptr == NULL:
        raise MemoryError(f"kernel scratch memory: cannot allocate {block.nbytes} bytes")
    return block


def allocate_for_test(Py_ssize_t n, size_t itemsize):
    """:func:`allocate` from Python (tests only); returns the block's size in bytes."""
    return allocate(n, itemsize).nbytes
