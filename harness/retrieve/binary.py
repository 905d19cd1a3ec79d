"""Sign binarisation, bit packing and Hamming distances: the numeric kernels of the ``vector`` system.

Binarisation (one bit per dimension)
------------------------------------
For an embedding ``x`` of dimension ``D`` (a multiple of 8), bit ``j`` is ``1`` if ``x[j] > 0`` and ``0``
otherwise (zero and negative values give ``0``; NaN is refused). Because only signs are kept, any positive
rescaling of ``x`` (e.g. L2 normalisation) gives the same bits. This is the binarisation of sentence-transformers'
``quantize_embeddings`` and of sqlite-vec's ``vec_quantize_binary`` (Shakir, Aarsen & Lee, "Binary and Scalar
Embedding Quantization", Hugging Face blog, 2024).

Mean-centred binarisation (opt-in, ``binarize="centered"``)
---------------------------------------------------------
Given a centring vector ``m`` (float32, shape ``(D,)``), bit ``j`` is ``1`` if ``x[j] > m[j]`` and ``0`` otherwise,
with both sides compared as float32 (``x`` is cast to float32 first). This equals ``sign(x - m) > 0``: for finite
IEEE floats ``x - m`` is zero only when ``x == m`` (gradual underflow), so no subtraction is needed and none of its
rounding enters. With ``m`` = the mean of the indexed documents' embeddings, every dimension splits the collection
near its middle instead of at zero, which matters for models whose dimensions are skewed (the default static model
has dimensions positive for 0.25 % to 99.4 % of the real corpus' chunks, so most sign bits are nearly constant).
This is the mean-centring step of ITQ (Gong & Lazebnik, "Iterative Quantization: A Procrustean Approach to Learning
Binary Codes", CVPR 2011, section 2: "we first center the data"), without its rotation.

Packing (the project's one bit order, used for documents and queries alike)
---------------------------------------------------------------------------
Bits are packed row by row into ``D / 8`` bytes, **least-significant bit first** within each byte: bit ``j`` goes
to byte ``j // 8``, bit position ``j % 8`` (value ``1 << (j % 8)``). This is sqlite-vec's ``vec_quantize_binary``
and ``vec_bit`` layout and ``numpy.packbits(..., bitorder="little")``. Other conventions, for reference:

* ``numpy.packbits`` default and sentence-transformers ``precision="ubinary"``: most-significant bit first
  (bit ``j`` has value ``1 << (7 - j % 8)``), ``uint8``.
* sentence-transformers ``precision="binary"``: the ``ubinary`` byte minus 128, as ``int8``.

Both sides of a comparison must use the same convention; the Hamming distance is then the same under every
convention, because each is a fixed permutation (or, for ``binary``, a bijective relabelling) of the bits of a
byte. :func:`convert_packed` translates between them.

Hamming distance
----------------
``hamming(a, b) = popcount(a XOR b)`` summed over the bytes, an integer in ``[0, D]``. :func:`hamming_distances`
computes it with ``numpy.bitwise_count`` (numpy >= 2.0) over 64-bit words.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from harness.errors import HarnessInputError

__all__ = [
    "BIT_ORDER",
    "BINARISATION",
    "BINARIZE_MODES",
    "CENTERED_BINARISATION",
    "binarisation_rule",
    "check_dim",
    "sign_bits",
    "pack_signs",
    "centered_bits",
    "centring_mean",
    "pack_centered",
    "unpack_bits",
    "convert_packed",
    "hamming_distances",
]

BIT_ORDER = "lsb-first"
"""The project's packing order (sqlite-vec ``vec_quantize_binary`` / ``vec_bit``)."""

BINARISATION = "sign: bit j = 1 iff x[j] > 0"

CENTERED_BINARISATION = (
    "centered: bit j = 1 iff float32(x[j]) > m[j], m = float32 mean of the indexed chunks' passage embeddings"
)

BINARIZE_MODES = ("sign", "centered")
"""The binarisations a vector index can use (``"sign"`` is the default)."""


def binarisation_rule(mode: str) -> str:
    """The recorded rule of a binarisation mode (:data:`BINARISATION` or :data:`CENTERED_BINARISATION`).

    Raises:
        HarnessInputError: ``mode`` is not one of :data:`BINARIZE_MODES`.
    """
    if mode == "sign":
        return BINARISATION
    if mode == "centered":
        return CENTERED_BINARISATION
    raise HarnessInputError(f"binarize: {mode!r} is not one of {', '.join(BINARIZE_MODES)}")


Convention = Literal["lsb", "msb", "ubinary", "binary"]

# _REVERSE[b] is b with its 8 bits in reverse order (LSB-first <-> MSB-first).
_REVERSE = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


def check_dim(dim: int) -> int:
    """Return ``dim // 8`` (bytes per packed vector).

    Raises:
        HarnessInputError: ``dim`` is not a positive multiple of 8.
    """
    if not isinstance(dim, int | np.integer) or dim <= 0 or dim % 8:
        raise HarnessInputError(f"embedding dimension {dim} is not a positive multiple of 8 (1 bit per dimension)")
    return int(dim) // 8


def sign_bits(x: np.ndarray) -> np.ndarray:
    """Boolean bits ``x > 0`` with the shape of ``x``.

    Raises:
        HarnessInputError: ``x`` holds NaN or infinite values.
    """
    x = np.asarray(x)
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise HarnessInputError("embedding holds NaN or infinite values; cannot binarise")
    return x > 0


def pack_signs(x: np.ndarray, *, bitorder: Literal["little", "big"] = "little") -> np.ndarray:
    """Binarise (``x > 0``) and pack float embeddings, one bit per dimension.

    Args:
        x: shape ``(n, D)`` or ``(D,)``, float; ``D`` a multiple of 8.
        bitorder: ``"little"`` (default, the project's LSB-first order, = sqlite-vec) or ``"big"``
            (MSB-first, = numpy ``packbits`` default and sentence-transformers ``ubinary``).

    Returns:
        ``uint8`` array of shape ``(n, D // 8)`` (or ``(D // 8,)``), C-contiguous.

    Raises:
        HarnessInputError: ``D`` is not a multiple of 8; NaN or infinite values.
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise HarnessInputError(f"embeddings must be 1-D or 2-D, got shape {x.shape}")
    check_dim(int(x.shape[-1]))
    return np.ascontiguousarray(np.packbits(sign_bits(x), axis=-1, bitorder=bitorder))


def _center(center: np.ndarray, dim: int) -> np.ndarray:
    c = np.asarray(center)
    if c.shape != (dim,):
        raise HarnessInputError(f"centring vector of shape {c.shape}; expected ({dim},)")
    if c.dtype.kind != "f" or not np.isfinite(c).all():
        raise HarnessInputError("centring vector must be finite floats")
    return c.astype(np.float32, copy=False)


MEAN_BLOCK = 4096
"""Rows per float64 partial sum of a centring mean (fixed, so the mean never depends on how a build was batched)."""


def centring_mean(x: np.ndarray) -> np.ndarray:
    """The centring vector of embeddings ``x`` (``(n, D)``): float64 partial sums over consecutive blocks of
    :data:`MEAN_BLOCK` rows, added in block order, divided by ``n`` and rounded once to float32 (the rule of
    :mod:`harness.retrieve.vector.store`); zeros for ``n = 0``.

    Raises:
        HarnessInputError: ``x`` is not 2-D or holds NaN / infinite values.
    """
    a = np.asarray(x)
    if a.ndim != 2:
        raise HarnessInputError(f"embeddings must be 2-D, got shape {a.shape}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise HarnessInputError("embedding holds NaN or infinite values; cannot centre")
    total = np.zeros(a.shape[1], dtype=np.float64)
    for start in range(0, a.shape[0], MEAN_BLOCK):
        total += a[start : start + MEAN_BLOCK].astype(np.float64).sum(axis=0)
    if a.shape[0] == 0:
        return np.zeros(a.shape[1], dtype=np.float32)
    return (total / a.shape[0]).astype(np.float32)


def centered_bits(x: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Boolean bits ``float32(x) > float32(center)`` with the shape of ``x`` (``center`` broadcast over rows).

    Args:
        x: shape ``(n, D)`` or ``(D,)``, float.
        center: shape ``(D,)``, finite float (stored as float32; anything else is cast).

    Raises:
        HarnessInputError: NaN or infinite values in ``x`` or ``center``; ``center`` of another width.
    """
    x = np.asarray(x)
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise HarnessInputError("embedding holds NaN or infinite values; cannot binarise")
    c = _center(center, int(x.shape[-1]))
    return x.astype(np.float32, copy=False) > c


def pack_centered(x: np.ndarray, center: np.ndarray, *, bitorder: Literal["little", "big"] = "little") -> np.ndarray:
    """Mean-centred binarisation (``float32(x) > center``) packed like :func:`pack_signs`.

    Args:
        x: shape ``(n, D)`` or ``(D,)``, float; ``D`` a multiple of 8.
        center: shape ``(D,)``, the centring vector (float32 mean of the indexed documents' embeddings).
        bitorder: as in :func:`pack_signs`.

    Returns:
        ``uint8`` array of shape ``(n, D // 8)`` (or ``(D // 8,)``), C-contiguous. With ``center = 0`` it equals
        :func:`pack_signs`.

    Raises:
        HarnessInputError: ``D`` is not a multiple of 8; NaN or infinite values; a centring vector of another width.
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise HarnessInputError(f"embeddings must be 1-D or 2-D, got shape {x.shape}")
    check_dim(int(x.shape[-1]))
    return np.ascontiguousarray(np.packbits(centered_bits(x, center), axis=-1, bitorder=bitorder))


def unpack_bits(packed: np.ndarray, *, bitorder: Literal["little", "big"] = "little") -> np.ndarray:
    """Inverse of :func:`pack_signs` on the bits: ``uint8`` 0/1 array of shape ``(..., 8 * nbytes)``."""
    return np.unpackbits(np.asarray(packed, dtype=np.uint8), axis=-1, bitorder=bitorder)


def convert_packed(packed: np.ndarray, src: Convention, dst: Convention) -> np.ndarray:
    """Translate packed bits between conventions.

    Conventions: ``"lsb"`` (project / sqlite-vec, ``uint8``), ``"msb"`` (numpy ``packbits``, ``uint8``),
    ``"ubinary"`` (= ``"msb"``, sentence-transformers), ``"binary"`` (sentence-transformers: ``ubinary - 128``
    as ``int8``).

    Returns:
        A new array (``int8`` for ``"binary"``, else ``uint8``).
    """
    a = np.asarray(packed)
    if src == "binary":
        msb = (a.astype(np.int16) + 128).astype(np.uint8)
    elif src in ("msb", "ubinary"):
        msb = a.astype(np.uint8, copy=True)
    elif src == "lsb":
        msb = _REVERSE[a.astype(np.uint8)]
    else:
        raise ValueError(f"unknown bit convention {src!r}")
    if dst in ("msb", "ubinary"):
        return msb
    if dst == "lsb":
        return _REVERSE[msb]
    if dst == "binary":
        return (msb.astype(np.int16) - 128).astype(np.int8)
    raise ValueError(f"unknown bit convention {dst!r}")


def _as_words(packed: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(packed)
    if a.dtype != np.uint8:
        a = a.view(np.uint8) if a.dtype == np.int8 else a.astype(np.uint8)
    if a.shape[-1] % 8 == 0:
        return a.view(np.uint64)
    return a


def hamming_distances(queries: np.ndarray, base: np.ndarray, *, block_rows: int | None = None) -> np.ndarray:
    """Hamming distances between packed query vectors and packed base vectors.

    Args:
        queries: ``(m, W)`` or ``(W,)`` packed bytes (``uint8``; any one convention shared with ``base``).
        base: ``(n, W)`` packed bytes.
        block_rows: base rows per block; each query's temporary XOR is ``block_rows * W`` bytes. Default: as many
            rows as keep it near 4 MiB (at least 1,024), so a block stays in cache across the queries.

    Returns:
        ``int32`` array ``(m, n)`` (or ``(n,)`` for a 1-D query), values in ``[0, 8 W]``.

    Source: popcount of XOR (Hamming 1950); ``numpy.bitwise_count`` over 64-bit words when ``W % 8 == 0``.
    """
    q = np.asarray(queries)
    single = q.ndim == 1
    q2 = q[None, :] if single else q
    b = np.asarray(base)
    if q2.shape[-1] != b.shape[-1]:
        raise HarnessInputError(f"packed widths differ: queries {q2.shape[-1]} bytes, base {b.shape[-1]} bytes")
    qw = _as_words(q2)
    bw = _as_words(b)
    out = np.empty((qw.shape[0], bw.shape[0]), dtype=np.int32)
    if bw.shape[1] == 0:  # zero-width vectors: every distance is 0
        out[:] = 0
        return out[0] if single else out
    if block_rows is None:
        block_rows = max(1024, (4 << 20) // max(1, q2.shape[-1]))
    for start in range(0, bw.shape[0], block_rows):
        blk = bw[start : start + block_rows]
        for i in range(qw.shape[0]):  # one query at a time over a cached block; words summed column by column
            counts = np.bitwise_count(np.bitwise_xor(blk, qw[i]))
            acc = out[i, start : start + blk.shape[0]]
            np.copyto(acc, counts[:, 0], casting="unsafe")
            for j in range(1, counts.shape[1]):
                acc += counts[:, j]
    return out[0] if single else out
