"""CRFsuite model files: reading and writing CRFsuite's binary ``crf1d`` format.

A CRFsuite model is a first-order linear-chain CRF given by its labels, its
attributes, state features (an (attribute, label) pair with a weight) and
transition features (a (label, label) pair with a weight).  This module reads
and writes the files ``crfsuite learn`` and ``pycrfsuite.Trainer.train`` write
(``crf1d_model.c`` with the string databases of ``cqdb.c``), with numpy and
:mod:`struct` only.  :func:`read` never executes anything from the file and
refuses a damaged one with ``ValueError``; :func:`to_bytes` writes the file
CRFsuite writes for the same model, byte for byte.

Byte layout
-----------
Every integer is an unsigned 32-bit little-endian number (``u32``); a weight is
a little-endian IEEE-754 double (``f64``); an offset is counted in bytes from
the start of the file, except inside a CQDB chunk (below).  The file is, in
this order:

``header`` (48 bytes, at 0)
    ``magic`` ``b"lCRF"``, ``size`` (the file's length), ``type`` ``b"FOMC"``,
    ``version`` (100), ``num_features`` (CRFsuite never fills it in: 0),
    ``num_labels`` (``L``), ``num_attrs`` (``A``), ``off_features``,
    ``off_labels``, ``off_attrs``, ``off_labelrefs``, ``off_attrrefs``.
``FEAT`` chunk (at ``off_features``, 48)
    ``b"FEAT"``, chunk size (``12 + 20 * K``), ``K``; then ``K`` features of
    20 bytes: ``type`` (0: state, 1: transition), ``src`` (state: the
    attribute id; transition: the label it leaves), ``dst`` (the label id),
    ``weight`` (``f64``).  CRFsuite stores only non-zero weights, sorted by
    ``(type, src, dst)``.
Label CQDB (at ``off_labels``) and attribute CQDB (at ``off_attrs``)
    String databases mapping ids to names and back; ids are ``0 .. L - 1``
    (labels, in order of first appearance in the training labels) and
    ``0 .. A - 1`` (the attributes that have a state feature, numbered in
    feature order).  Offsets inside a CQDB are counted from the chunk's first
    byte.  A chunk is: a 24-byte header ``b"CQDB"``, chunk size, flag (0),
    byte-order mark ``0x62445371``, ``bwd_size`` (number of ids),
    ``bwd_offset`` (of the backward array; 0 when empty); 256 table references
    (``offset``, ``n_slots``; ``0, 0`` for an empty table); from byte 2072 the
    records in id order: ``id``, ``ksize``, ``ksize`` bytes of the UTF-8 name
    and a NUL byte; the hash tables: table ``t`` holds the names whose hash
    ``h`` has ``h % 256 == t`` in ``n_slots`` = twice their number slots of
    (``hash``, ``record offset``), a name put at slot ``(h >> 8) % n_slots``
    or the next free one (open addressing, names in id order; a free slot has
    offset 0); the backward array: per id its record's offset.  The hash is
    Bob Jenkins' ``hashlittle`` (lookup3, initial value 0) of the name's bytes
    including the trailing NUL (:func:`lookup3`).
``LFRF`` chunk (at ``off_labelrefs``, padded with zero bytes to a multiple of 4)
    ``b"LFRF"``, chunk size, ``L + 2``, then ``L + 2`` offsets (the last two 0,
    a CRFsuite quirk); at label ``i``'s offset ``n`` and the ``n`` feature
    indices of the transitions leaving ``i``.
``AFRF`` chunk (at ``off_attrrefs``, padded likewise)
    ``b"AFRF"``, chunk size, ``A``, ``A`` offsets; at attribute ``a``'s offset
    ``n`` and the ``n`` feature indices of its state features.

A tagger scores label ``y`` at a token ``sum_a value_a * w(a, y)`` over the
token's attributes known to the model (unknown ones are ignored) and a label
pair ``w(y, y')``; a pair or attribute without a feature has weight 0.
"""
import os
import struct
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CRFsuiteModel", "dump", "lookup3", "read", "to_bytes", "write"]

MAGIC = b"lCRF"
MODEL_TYPE = b"FOMC"
VERSION = 100
HEADER_SIZE = 48
CHUNK_SIZE = 12
FEATURE_SIZE = 20
CQDB_HEADER_SIZE = 24
CQDB_TABLES = 256
CQDB_DATA = CQDB_HEADER_SIZE + 8 * CQDB_TABLES
CQDB_BYTEORDER = 0x62445371
HEADER_FIELDS = ("magic", "size", "type", "version", "num_features", "num_labels",
                 "num_attrs", "off_features", "off_labels", "off_attrs", "off_labelrefs",
                 "off_attrrefs")
_HEADER = struct.Struct("<4sI4s9I")
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])


@dataclass
class CRFsuiteModel:
    """A CRFsuite model: names and non-zero weights, with ids as in the file.

    Attributes
    ----------
    labels : list of str
        Label ``i`` is ``labels[i]``.
    attributes : list of str
        Attribute ``a`` is ``attributes[a]`` (only attributes with a state
        feature are stored in a file: :func:`to_bytes` drops the others).
    state_attr, state_label : int ndarray of shape (n_state,)
        The state features' attribute and label ids.
    state_weight : float ndarray of shape (n_state,)
    trans_from, trans_to : int ndarray of shape (n_trans,)
        The transition features' label ids.
    trans_weight : float ndarray of shape (n_trans,)
    header : dict
        The file header read (:data:`HEADER_FIELDS`; ``magic`` and ``type`` as
        str, the others int); empty for a model not read from a file.
    """

    labels: list
    attributes: list
    state_attr: np.ndarray
    state_label: np.ndarray
    state_weight: np.ndarray
    trans_from: np.ndarray
    trans_to: np.ndarray
    trans_weight: np.ndarray
    header: dict = field(default_factory=dict)

    def state_matrix(self):
        """Dense ``(n_attributes, n_labels)`` state weights (zero where no feature)."""
        out = np.zeros((len(self.attributes), len(self.labels)))
        out[self.state_attr, self.state_label] = self.state_weight
        return out

    def transition_matrix(self):
        """Dense ``(n_labels, n_labels)`` transition weights, ``[from, to]``."""
        out = np.zeros((len(self.labels), len(self.labels)))
        out[self.trans_from, self.trans_to] = self.trans_weight
        return out


# ---------------------------------------------------------------------- hash
def _rot(x, k):
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def lookup3(keys):
    """Bob Jenkins' ``hashlittle`` (lookup3, initial value 0) of each byte string.

    CQDB hashes a name's UTF-8 bytes followed by one NUL byte.  The key is read
    as 12-byte blocks of three little-endian 32-bit words ``(a, b, c)`` (the
    last block padded with zero bytes); the state starts at ``0xdeadbeef +
    length`` in all three; every block but the last is added and mixed, the
    last one is added and the state finalised; the hash is ``c``.  An empty key
    hashes to the initial state.

    Parameters
    ----------
    keys : sequence of bytes

    Returns
    -------
    ndarray of uint32, shape (len(keys),)
    """
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(keys))
    out = ((0xDEADBEEF + lengths) & 0xFFFFFFFF).astype(np.uint32)
    blocks = (lengths + 11) // 12
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    with np.errstate(over="ignore"):
        for m in np.unique(blocks[blocks > 0]).tolist():    # keys of m blocks together
            rows = np.flatnonzero(blocks == m)
            buf = np.zeros((len(rows), 12 * m), dtype=np.uint8)
            sub_len = lengths[rows]
            row_of = np.repeat(np.arange(len(rows)), sub_len)
            col = np.arange(len(row_of)) - np.repeat(np.cumsum(sub_len) - sub_len, sub_len)
            buf[row_of, col] = data[np.repeat(starts[rows], sub_len) + col]
            words = buf.view("<u4").reshape(len(rows), m, 3).astype(np.uint32)
            a = out[rows].copy()
            b, c = a.copy(), a.copy()
            for i in range(m - 1):
                a += words[:, i, 0]
                b += words[:, i, 1]
                c += words[:, i, 2]
                a -= c; a ^= _rot(c, 4); c += b          # noqa: E702 -- lookup3's mix()
                b -= a; b ^= _rot(a, 6); a += c          # noqa: E702
                c -= b; c ^= _rot(b, 8); b += a          # noqa: E702
                a -= c; a ^= _rot(c, 16); c += b         # noqa: E702
                b -= a; b ^= _rot(a, 19); a += c         # noqa: E702
                c -= b; c ^= _rot(b, 4); b += a          # noqa: E702
            a += words[:, m - 1, 0]
            b += words[:, m - 1, 1]
            c += words[:, m - 1, 2]
            c ^= b; c -= _rot(b, 14)                     # noqa: E702 -- lookup3's final()
            a ^= c; a -= _rot(c, 11)                     # noqa: E702
            b ^= a; b -= _rot(a, 25)                     # noqa: E702
            c ^= b; c -= _rot(b, 16)                     # noqa: E702
            a ^= c; a -= _rot(c, 4)                      # noqa: E702
            b ^= a; b -= _rot(a, 14)                     # noqa: E702
            c ^= b; c -= _rot(b, 24)                     # noqa: E702
            out[rows] = c
    return out


# ---------------------------------------------------------------------- writing
def _u32(values):
    return np.asarray(values, dtype="<u4").tobytes()


def _cqdb(names):
    """The CQDB chunk of ``names`` (id ``i`` is ``names[i]``), as CRFsuite writes it."""
    keys = [name.encode("utf-8") + b"\0" for name in names]
    n = len(keys)
    hashes = lookup3(keys)
    ksize = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    record_offset = CQDB_DATA + np.concatenate([[0], np.cumsum(8 + ksize)[:-1]]).astype(np.int64)
    records = bytearray()
    for i, key in enumerate(keys):
        records += struct.pack("<II", i, len(key)) + key
    cur = CQDB_DATA + len(records)
    table = hashes % CQDB_TABLES
    refs = np.zeros((CQDB_TABLES, 2), dtype=np.int64)
    tables = bytearray()
    order = np.argsort(table, kind="stable")           # within a table: in id order
    bounds = np.searchsorted(table[order], np.arange(CQDB_TABLES + 1))
    for t in range(CQDB_TABLES):
        members = order[bounds[t]:bounds[t + 1]]
        size = 2 * len(members)
        if size:
            refs[t] = cur + len(tables), size
            slots = np.zeros((size, 2), dtype=np.int64)
            for i in members.tolist():
                k = (int(hashes[i]) >> 8) % size
                while slots[k, 1]:
                    k = (k + 1) % size
                slots[k] = hashes[i], record_offset[i]
            tables += _u32(slots.ravel())
    bwd_offset = cur + len(tables) if n else 0
    body = bytes(records) + bytes(tables) + (_u32(record_offset) if n else b"")
    head = b"CQDB" + _u32([CQDB_DATA + len(body), 0, CQDB_BYTEORDER, n, bwd_offset])
    return head + _u32(refs.ravel()) + body


def _refs_chunk(chunk_id, begin, n_slots, groups):
    """A feature-reference chunk at file offset ``begin`` (a multiple of 4): per
    group (the first ``len(groups)`` of ``n_slots``) its feature indices."""
    at = begin + CHUNK_SIZE + 4 * n_slots
    offsets = np.zeros(n_slots, dtype=np.int64)
    parts = []
    for i, fids in enumerate(groups):
        offsets[i] = at
        parts.append(_u32(np.concatenate([[len(fids)], fids])))
        at += 4 * (len(fids) + 1)
    body = b"".join(parts)
    return chunk_id + _u32([CHUNK_SIZE + 4 * n_slots + len(body), n_slots]) + _u32(offsets) \
        + body


def _pad(buf):
    buf += b"\0" * (-len(buf) % 4)


def _groups(keys, n):
    """Indices ``0..len(keys)-1`` grouped by ``keys`` (sorted), one group per ``0..n-1``."""
    bounds = np.searchsorted(keys, np.arange(n + 1))
    return [np.arange(bounds[i], bounds[i + 1]) for i in range(n)]


def to_bytes(model):
    """The CRFsuite model file of ``model``, as CRFsuite writes it.

    Features of weight 0 are left out and the attributes without a state
    feature dropped, the others renumbered in order (CRFsuite's pruning);
    features are stored sorted by ``(type, src, dst)``.

    Parameters
    ----------
    model : CRFsuiteModel

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        Names that are not distinct str, ids out of range, repeated features or
        non-finite weights.
    """
    labels, attributes = list(model.labels), list(model.attributes)
    for what, names in (("label", labels), ("attribute", attributes)):
        if not all(isinstance(s, str) for s in names):
            raise ValueError(f"every {what} name must be a str")
        if len(set(names)) != len(names):
            raise ValueError(f"{what} names must be distinct")
        if any("\0" in s for s in names):
            raise ValueError(f"a {what} name contains a NUL character, which CRFsuite "
                             "model files cannot store")
    L, A = len(labels), len(attributes)
    sa, sl, sw = (np.asarray(v).ravel() for v in (model.state_attr, model.state_label,
                                                  model.state_weight))
    tf, tt, tw = (np.asarray(v).ravel() for v in (model.trans_from, model.trans_to,
                                                  model.trans_weight))
    sa, sl, tf, tt = (v.astype(np.int64) for v in (sa, sl, tf, tt))
    sw, tw = sw.astype(np.float64), tw.astype(np.float64)
    if not (len(sa) == len(sl) == len(sw) and len(tf) == len(tt) == len(tw)):
        raise ValueError("the state (or transition) feature arrays differ in length")
    for what, ids, n in (("state feature attribute", sa, A), ("state feature label", sl, L),
                         ("transition label", tf, L), ("transition label", tt, L)):
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise ValueError(f"a {what} id is out of range [0, {n})")
    if not (np.all(np.isfinite(sw)) and np.all(np.isfinite(tw))):
        raise ValueError("feature weights must be finite")
    keep = sw != 0
    sa, sl, sw = sa[keep], sl[keep], sw[keep]
    keep = tw != 0
    tf, tt, tw = tf[keep], tt[keep], tw[keep]
    order = np.lexsort((sl, sa))
    sa, sl, sw = sa[order], sl[order], sw[order]
    order = np.lexsort((tt, tf))
    tf, tt, tw = tf[order], tt[order], tw[order]
    if np.any((np.diff(sa) == 0) & (np.diff(sl) == 0)) or np.any(
            (np.diff(tf) == 0) & (np.diff(tt) == 0)):
        raise ValueError("a feature is given twice")
    active, new_attr = np.unique(sa, return_inverse=True)    # CRFsuite's attribute pruning
    n_state, n_attrs = len(sa), len(active)

    features = np.zeros(n_state + len(tf), dtype=_FEATURE)
    features["type"][n_state:] = 1
    features["src"] = np.concatenate([new_attr, tf])
    features["dst"] = np.concatenate([sl, tt])
    features["weight"] = np.concatenate([sw, tw])

    buf = bytearray(HEADER_SIZE)
    off_features = len(buf)
    buf += b"FEAT" + _u32([CHUNK_SIZE + FEATURE_SIZE * len(features), len(features)])
    buf += features.tobytes()
    off_labels = len(buf)
    buf += _cqdb(labels)
    off_attrs = len(buf)
    buf += _cqdb([attributes[a] for a in active.tolist()])
    _pad(buf)
    off_labelrefs = len(buf)
    buf += _refs_chunk(b"LFRF", off_labelrefs, L + 2, [n_state + g for g in _groups(tf, L)])
    _pad(buf)
    off_attrrefs = len(buf)
    buf += _refs_chunk(b"AFRF", off_attrrefs, n_attrs, _groups(new_attr, n_attrs))
    buf[:HEADER_SIZE] = _HEADER.pack(MAGIC, len(buf), MODEL_TYPE, VERSION, 0, L, n_attrs,
                                     off_features, off_labels, off_attrs, off_labelrefs,
                                     off_attrrefs)
    return bytes(buf)


def write(model, path):
    """Write ``model`` to ``path`` as a CRFsuite model file.

    The file is replaced atomically: a failed write leaves ``path`` as it was.

    Parameters
    ----------
    model : CRFsuiteModel or bytes
        The model (:func:`to_bytes`), or a model file's bytes.
    path : str or path-like
    """
    from skfcrf.estimators._npz_io import atomic_write

    data = model if isinstance(model, bytes) else to_bytes(model)
    atomic_write(path, lambda fh: fh.write(data))


# ---------------------------------------------------------------------- reading
class _Corrupt(ValueError):
    pass


def _need(condition, message):
    if not condition:
        raise _Corrupt(message)


def _words(buf, begin, count, what):
    """``count`` u32 at byte ``begin`` of ``buf``, as int64."""
    _need(begin >= 0 and begin + 4 * count <= len(buf),
          f"{what} at byte {begin} runs past the end of the file")
    return np.frombuffer(buf, dtype="<u4", count=count, offset=begin).astype(np.int64)


def _chunk(buf, begin, chunk_id, what):
    """``(size, num)`` of the chunk ``chunk_id`` at byte ``begin``."""
    _need(begin + CHUNK_SIZE <= len(buf), f"the {what} chunk at byte {begin} runs past "
          "the end of the file")
    _need(buf[begin:begin + 4] == chunk_id, f"no {chunk_id.decode()} chunk ({what}) at byte "
          f"{begin}: found {bytes(buf[begin:begin + 4])!r}")
    size, num = _words(buf, begin + 4, 2, what)
    _need(begin + size <= len(buf), f"the {what} chunk at byte {begin} declares {size} "
          f"bytes, past the end of the file ({len(buf)} bytes)")
    return int(size), int(num)


def _gather(u32, starts, counts):
    """Concatenated ``u32[s:s + n]`` for every ``(s, n)``."""
    total = int(counts.sum())
    index = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) \
        + np.arange(total)
    return u32[index]


def _read_cqdb(buf, begin, n_expected, what):
    """The names of the CQDB chunk at byte ``begin`` (id order), checked."""
    _need(begin + CQDB_DATA <= len(buf), f"the {what} database at byte {begin} runs past "
          "the end of the file")
    _need(buf[begin:begin + 4] == b"CQDB", f"no CQDB chunk ({what}) at byte {begin}: "
          f"found {bytes(buf[begin:begin + 4])!r}")
    size, flag, byteorder, bwd_size, bwd_offset = _words(buf, begin + 4, 5, what)
    _need(byteorder == CQDB_BYTEORDER, f"the {what} database has a wrong byte-order mark")
    _need(size >= CQDB_DATA and begin + size <= len(buf),
          f"the {what} database declares {size} bytes, past the end of the file")
    _need(bwd_size == n_expected, f"the {what} database has {bwd_size} names, the header "
          f"says {n_expected}")
    chunk = bytes(buf[begin:begin + size])
    refs = _words(chunk, CQDB_HEADER_SIZE, 2 * CQDB_TABLES, what).reshape(-1, 2)
    _need(int(refs[:, 1].sum()) == 2 * n_expected,
          f"the {what} database's hash tables hold {int(refs[:, 1].sum()) // 2} names, "
          f"not {n_expected}")
    if n_expected == 0:
        return []
    _need(bwd_offset >= CQDB_DATA and bwd_offset + 4 * n_expected <= size,
          f"the {what} database's id array lies outside it")
    offsets = _words(chunk, int(bwd_offset), n_expected, what)
    _need(bool(np.all((offsets >= CQDB_DATA) & (offsets + 8 < size))),
          f"a {what} record lies outside its database")
    names, keys = [], []
    for i, at in enumerate(offsets.tolist()):
        rid, ksize = struct.unpack_from("<II", chunk, at)
        _need(rid == i, f"{what} record {i} carries the id {rid}")
        _need(1 <= ksize and at + 8 + ksize <= size and chunk[at + 8 + ksize - 1] == 0,
              f"{what} {i}: its name is not NUL-terminated inside the database")
        key = chunk[at + 8:at + 8 + ksize]
        _need(b"\0" not in key[:-1], f"{what} {i}: its name contains a NUL byte")
        try:
            names.append(key[:-1].decode("utf-8"))
        except UnicodeDecodeError:
            raise _Corrupt(f"{what} {i}: its name is not UTF-8") from None
        keys.append(key)
    _need(len(set(names)) == len(names), f"the {what} names are not distinct")
    # the hash tables must hold exactly (hash, record) of every name: CRFsuite finds
    # names through them
    hashes = lookup3(keys)
    present = refs[:, 1] > 0
    _need(bool(np.all(refs[present, 0] >= CQDB_DATA) and np.all(
        refs[present, 0] + 8 * refs[present, 1] <= size)),
        f"a hash table of the {what} database lies outside it")
    slots = np.concatenate([np.zeros(0, np.int64)] + [   # tables need not be aligned
        np.frombuffer(chunk, dtype="<u4", count=2 * int(n), offset=int(at)).astype(np.int64)
        for at, n in refs[present].tolist()]).reshape(-1, 2)
    table_of = np.repeat(np.flatnonzero(present), refs[present, 1])
    used = slots[:, 1] != 0
    got = np.stack([table_of[used], slots[used, 0], slots[used, 1]], axis=1)
    want = np.stack([hashes.astype(np.int64) % CQDB_TABLES, hashes.astype(np.int64),
                     offsets], axis=1)
    got, want = (v[np.lexsort(v.T[::-1])] for v in (got, want))
    _need(got.shape == want.shape and bool(np.all(got == want)),
          f"the {what} database's hash tables do not match its names")
    return names


def _read_refs(buf, begin, chunk_id, n_used, what, features, kind):
    """Check the reference chunk: group ``g < n_used`` lists exactly the features of
    type ``kind`` with ``src == g``."""
    size, num = _chunk(buf, begin, chunk_id, what)
    _need(num >= n_used, f"the {what} chunk has {num} entries, fewer than {n_used}")
    _need(begin % 4 == 0, f"the {what} chunk at byte {begin} is misaligned")
    offsets = _words(buf, begin + CHUNK_SIZE, n_used, what)
    _need(bool(np.all((offsets % 4 == 0) & (offsets >= begin) & (offsets + 4 <= begin + size))),
          f"a reference of the {what} chunk lies outside it")
    u32 = np.frombuffer(buf, dtype="<u4", count=len(buf) // 4).astype(np.int64)
    counts = u32[offsets // 4]
    _need(bool(np.all(offsets + 4 + 4 * counts <= begin + size)),
          f"a reference list of the {what} chunk runs past its end")
    fids = _gather(u32, offsets // 4 + 1, counts)
    _need(bool(np.all(fids < len(features))), f"the {what} chunk refers to a missing feature")
    group = np.repeat(np.arange(n_used), counts)
    ok = (features["type"][fids] == kind) & (features["src"][fids] == group)
    mine = np.flatnonzero((features["type"] == kind) & (features["src"] < n_used))
    _need(bool(np.all(ok)) and len(fids) == len(mine) and len(np.unique(fids)) == len(fids),
          f"the {what} chunk does not list each feature under its "
          f"{'label' if kind else 'attribute'}")


def read(source, name=None):
    """Read a CRFsuite model file.

    Parameters
    ----------
    source : str, path-like or bytes
        A file name, or the file's content.
    name : str, optional
        The name error messages give the data (default: the file name, or
        ``"<bytes>"``).

    Returns
    -------
    CRFsuiteModel

    Raises
    ------
    ValueError
        The data are not a complete, consistent CRFsuite model file (the
        message names the file and what is wrong).
    OSError
        The file cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        buf = bytes(source)
        name = "<bytes>" if name is None else name
    else:
        path = os.fspath(source)
        name = path if name is None else name
        with open(path, "rb") as fh:
            buf = fh.read()
    try:
        return _parse(buf)
    except _Corrupt as exc:
        raise ValueError(f"{name!r} is not a valid CRFsuite model file: {exc}") from None


def _parse(buf):
    _need(len(buf) >= 4 and buf[:4] == MAGIC,
          f"it does not start with {MAGIC!r} (found {bytes(buf[:4])!r})")
    _need(len(buf) > HEADER_SIZE, f"{len(buf)} bytes do not hold the {HEADER_SIZE}-byte "
          "header and the model")
    values = _HEADER.unpack_from(buf, 0)
    header = dict(zip(HEADER_FIELDS, values))
    header["magic"] = header["magic"].decode("latin-1")
    _need(header["type"] == MODEL_TYPE, f"model type {header['type']!r} is not CRFsuite's "
          f"first-order CRF {MODEL_TYPE!r}")
    header["type"] = header["type"].decode("latin-1")
    _need(header["version"] == VERSION, f"format version {header['version']} is not "
          f"{VERSION}, the only one CRFsuite writes")
    _need(header["size"] == len(buf), f"the header says {header['size']} bytes, the file "
          f"has {len(buf)} (truncated or extended)")
    L, A = header["num_labels"], header["num_attrs"]
    size, num = _chunk(buf, header["off_features"], b"FEAT", "features")
    _need(size == CHUNK_SIZE + FEATURE_SIZE * num, f"the features chunk declares {size} "
          f"bytes for {num} features")
    features = np.frombuffer(buf, dtype=_FEATURE, count=num,
                             offset=header["off_features"] + CHUNK_SIZE)
    kind, src, dst = (features[k].astype(np.int64) for k in ("type", "src", "dst"))
    weight = features["weight"].astype(np.float64)
    _need(bool(np.all(kind <= 1)), "a feature has a type other than 0 (state) and 1 "
          "(transition)")
    state = kind == 0
    _need(bool(np.all(src[state] < A) and np.all(dst < L) and np.all(src[~state] < L)),
          "a feature refers to a label or attribute id out of range")
    _need(bool(np.all(np.isfinite(weight))), "a feature weight is not finite")
    _need(len(np.unique(np.stack([kind, src, dst], axis=1), axis=0)) == num,
          "a feature is stored twice")
    labels = _read_cqdb(buf, header["off_labels"], L, "label")
    attributes = _read_cqdb(buf, header["off_attrs"], A, "attribute")
    _read_refs(buf, header["off_labelrefs"], b"LFRF", L, "label references", features, 1)
    _read_refs(buf, header["off_attrrefs"], b"AFRF", A, "attribute references", features, 0)
    return CRFsuiteModel(labels, attributes, src[state], dst[state], weight[state],
                         src[~state], dst[~state], weight[~state], header)


def dump(model):
    """CRFsuite's text dump of a model read from a file (``crfsuite dump``,
    ``pycrfsuite.Tagger.dump``): header, labels, attributes, then the
    transitions per source label and the state features per attribute, in
    file order, weights with 6 decimals."""
    h = model.header
    lines = ["FILEHEADER = {", f"  magic: {h['magic']}", f"  size: {h['size']}",
             f"  type: {h['type']}"]
    lines += [f"  {k}: {h[k]}" for k in ("version", "num_features", "num_labels", "num_attrs")]
    lines += [f"  {k}: 0x{h[k]:X}" for k in HEADER_FIELDS[7:]]
    lines += ["}", "", "LABELS = {"]
    lines += [f"  {i:5d}: {s}" for i, s in enumerate(model.labels)]
    lines += ["}", "", "ATTRIBUTES = {"]
    lines += [f"  {i:5d}: {s}" for i, s in enumerate(model.attributes)]
    lines += ["}", "", "TRANSITIONS = {"]
    order = np.argsort(model.trans_from, kind="stable")
    lines += [f"  (1) {model.labels[model.trans_from[i]]} --> {model.labels[model.trans_to[i]]}"
              f": {model.trans_weight[i]:f}" for i in order.tolist()]
    lines += ["}", "", "STATE_FEATURES = {"]
    order = np.argsort(model.state_attr, kind="stable")
    lines += [f"  (0) {model.attributes[model.state_attr[i]]} --> "
              f"{model.labels[model.state_label[i]]}: {model.state_weight[i]:f}"
              for i in order.tolist()]
    lines += ["}", "", ""]
    return "\n".join(lines)
