"""Bounded reading and atomic writing of ``.npz`` archives (used by :mod:`._persistence`).

An ``.npz`` archive is a zip file whose members ``<key>.npy`` each hold one
array in numpy's ``.npy`` format: a magic string and version, a short Python
literal header ``{'descr': ..., 'fortran_order': ..., 'shape': ...}``, then the
raw array bytes.  :class:`NpzReader` reads such an archive without trusting it:

* the whole file is read into memory first (so no later read can ask the
  operating system for more than the file holds);
* the zip directory must list distinct members, unencrypted, stored or
  deflated, whose compressed data lies inside the file, and whose declared
  uncompressed size is possible for their compressed size (deflate expands at
  most :data:`MAX_DEFLATE_RATIO` times) -- a "zip bomb" member declaring more is
  refused before anything is decompressed;
* an array's ``.npy`` header is read and checked (dtype kind and item size,
  shape) *before* its data, and its declared size must match the member's
  uncompressed size exactly, so no allocation exceeds what the member declares;
* the data is decoded with ``np.frombuffer`` from plain bytes: no pickle, no
  object arrays, no structured dtypes -- nothing in a file can run code.

Every problem raises :class:`ValueError` naming the archive and the member.
"""
import io
import os
import secrets
import stat
import zipfile
import zlib

import numpy as np

#: The largest expansion of a deflate stream (a 258-byte match per 2 bits, plus block overhead).
MAX_DEFLATE_RATIO = 1032

#: The exceptions the zip and zlib modules raise on damaged data.
DAMAGE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError,
                 NotImplementedError, RuntimeError, OverflowError)


class NpzReader:
    """The members of an ``.npz`` archive, checked before they are read.

    Parameters
    ----------
    source : str, path-like or binary file object
        The archive; a file object is read from its current position to its end.
    name : str
        How error messages call the archive.
    allowed : callable
        ``allowed(key) -> bool``: which member keys (names without ``.npy``)
        may occur; any other member is an error.
    """

    def __init__(self, source, name, allowed):
        self.name = name
        if hasattr(source, "read"):
            data = source.read()
            if not isinstance(data, bytes):
                raise ValueError(f"{name}: the file object must be opened in binary mode")
        else:
            with open(os.fspath(source), "rb") as fh:
                data = fh.read()
        self.file_size = len(data)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except DAMAGE_ERRORS + (ValueError, OSError) as exc:
            raise ValueError(f"{name}: not an skfcrf model file (not a readable .npz "
                             f"archive: {exc})") from None
        self.members = {}
        for info in infos:
            self._check_member(info, allowed)

    def _check_member(self, info, allowed):
        fname = info.filename
        if not fname.endswith(".npy"):
            raise ValueError(f"{self.name}: unexpected member {fname!r} (not an .npy array)")
        key = fname[:-4]
        if not allowed(key):
            raise ValueError(f"{self.name}: unexpected member {fname!r}")
        if key in self.members:
            raise ValueError(f"{self.name}: member {fname!r} occurs twice")
        if info.flag_bits & 0x1:
            raise ValueError(f"{self.name}: member {fname!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ValueError(f"{self.name}: member {fname!r} uses an unsupported compression "
                             f"method ({info.compress_type})")
        if info.header_offset + info.compress_size > self.file_size:
            raise ValueError(f"{self.name}: member {fname!r} declares {info.compress_size} "
                             f"compressed bytes beyond the end of the {self.file_size}-byte "
                             "file (truncated?)")
        if info.compress_type == zipfile.ZIP_STORED:
            possible = info.compress_size
        else:
            possible = MAX_DEFLATE_RATIO * info.compress_size + 1024
        if info.file_size > possible:
            raise ValueError(f"{self.name}: member {fname!r} declares {info.file_size} bytes "
                             f"from {info.compress_size} compressed bytes, more than "
                             "compression can produce (a zip bomb or a damaged file)")
        self.members[key] = info

    def __contains__(self, key):
        return key in self.members

    def member_size(self, key):
        """Declared uncompressed size of member ``key`` in bytes."""
        return self.members[key].file_size

    def read(self, key, kinds, shape, max_itemsize=8):
        """The array of member ``key``, checked before its data is read.

        Parameters
        ----------
        key : str
            Member name without ``.npy``.
        kinds : str
            Accepted dtype kinds (``"iu"``, ``"f"``, ``"b"``, ``"U"``).
        shape : tuple
            Expected shape; ``None`` entries match any length.
        max_itemsize : int or None
            Largest accepted item size in bytes (None: any, for strings).

        Returns
        -------
        ndarray
            A writable array in native byte order.
        """
        what = f"{self.name}: array {key!r}"
        if key not in self.members:
            raise ValueError(f"{what} is missing")
        info = self.members[key]
        try:
            with self._zip.open(info) as fp:
                dtype, fortran, file_shape = self._read_npy_header(fp, what)
                self._check_layout(what, dtype, file_shape, kinds, shape, max_itemsize)
                nbytes = int(np.prod(file_shape, dtype=object)) * dtype.itemsize
                if fp.tell() + nbytes != info.file_size:
                    raise ValueError(
                        f"{what}: shape {file_shape} of {dtype} needs {nbytes} bytes but the "
                        f"member holds {info.file_size - fp.tell()}")
                raw = fp.read(nbytes)
                if len(raw) != nbytes or fp.read(1):
                    raise ValueError(f"{what}: truncated data")
        except DAMAGE_ERRORS as exc:
            raise ValueError(f"{what} is damaged ({type(exc).__name__}: {exc})") from None
        arr = np.frombuffer(raw, dtype=dtype)
        arr = arr.reshape(file_shape, order="F" if fortran else "C")
        return arr.astype(dtype.newbyteorder("="), order="C", copy=True)

    @staticmethod
    def _read_npy_header(fp, what):
        try:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                return _header_tuple(np.lib.format.read_array_header_1_0(fp), what)
            if version == (2, 0):
                return _header_tuple(np.lib.format.read_array_header_2_0(fp), what)
        except (ValueError, SyntaxError, TypeError) as exc:
            raise ValueError(f"{what}: bad .npy header ({exc})") from None
        raise ValueError(f"{what}: unsupported .npy format version {version}")

    @staticmethod
    def _check_layout(what, dtype, file_shape, kinds, shape, max_itemsize):
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None \
                or dtype.kind not in kinds or dtype.itemsize == 0 \
                or (max_itemsize is not None and dtype.itemsize > max_itemsize):
            raise ValueError(f"{what} has dtype {dtype}, expected kind {kinds!r}"
                             + (f" of at most {max_itemsize} bytes" if max_itemsize else ""))
        if len(file_shape) != len(shape) or any(
                want is not None and got != want for got, want in zip(file_shape, shape)):
            expected = tuple("any" if s is None else s for s in shape)
            raise ValueError(f"{what} has shape {file_shape}, expected {expected}")


def _header_tuple(header, what):
    shape, fortran, dtype = header
    if not isinstance(shape, tuple) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"{what}: bad shape {shape!r} in its .npy header")
    return np.dtype(dtype), bool(fortran), shape


def atomic_write(path, write):
    """Write a file through ``write(fh)`` so that ``path`` is either untouched or complete.

    The data goes to a new temporary file in the same directory, is flushed to
    disk, and replaces ``path`` with ``os.replace`` (atomic on POSIX and
    Windows); the directory is then flushed too where the system allows.  On
    any exception -- including ``KeyboardInterrupt`` -- the temporary file is
    removed and ``path`` keeps its previous content.  A
    symbolic link at ``path`` keeps pointing to the (replaced) target; an
    existing file keeps its permission bits, a new one gets the default
    permissions (``0o666`` less the umask), as ``open(path, "wb")`` would.
    """
    target = os.path.realpath(os.fspath(path))
    directory, base = os.path.split(target)
    while True:
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    """Flush the rename to disk where the system allows it (POSIX; best effort)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
