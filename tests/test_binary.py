"""Sign binarisation, bit-order conventions and Hamming distances (numpy, sqlite-vec, sentence-transformers)."""

from __future__ import annotations

import apsw
import numpy as np
import pytest
import sqlite_vec
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.retrieve.binary import (
    BINARISATION,
    CENTERED_BINARISATION,
    binarisation_rule,
    centered_bits,
    check_dim,
    convert_packed,
    hamming_distances,
    pack_centered,
    pack_signs,
    sign_bits,
    unpack_bits,
)

# bits j0..j7 = 1,0,0,1,0,1,1,0 (0 and -0.0 are not > 0; 1e-9 is); j8..j15 = 0,...,0,1
GOLDEN_X = np.array(
    [0.5, -1.0, 0.0, 2.0, -0.1, 3.0, 1e-9, -0.0, -1, -1, -1, -1, -1, -1, -1, 7.0],
    dtype=np.float32,
)
GOLDEN_LSB = bytes([1 + 8 + 32 + 64, 1 << 7])  # 0x69 0x80 (sqlite-vec vec_quantize_binary)
GOLDEN_MSB = bytes([0b10010110, 0b00000001])  # 0x96 0x01 (numpy packbits default, ST "ubinary")
GOLDEN_ST_BINARY = [0b10010110 - 128, 1 - 128]  # 22, -127 (ST "binary")


def _sqlite() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def test_golden_bytes_project_order_is_sqlite_vec():
    assert pack_signs(GOLDEN_X).tobytes() == GOLDEN_LSB
    assert pack_signs(GOLDEN_X[None, :]).shape == (1, 2)
    conn = _sqlite()
    got = conn.execute("SELECT vec_quantize_binary(vec_f32(?))", (GOLDEN_X.tobytes(),)).fetchone()[0]
    assert bytes(got) == GOLDEN_LSB


def test_golden_bytes_numpy_and_sentence_transformers():
    from sentence_transformers.util import quantize_embeddings

    assert np.packbits(GOLDEN_X > 0).tobytes() == GOLDEN_MSB
    assert pack_signs(GOLDEN_X, bitorder="big").tobytes() == GOLDEN_MSB
    ub = quantize_embeddings(GOLDEN_X[None, :], precision="ubinary")
    assert ub.dtype == np.uint8 and ub.tobytes() == GOLDEN_MSB
    b = quantize_embeddings(GOLDEN_X[None, :], precision="binary")
    assert b.dtype == np.int8 and b[0].tolist() == GOLDEN_ST_BINARY
    lsb = np.frombuffer(GOLDEN_LSB, dtype=np.uint8)
    assert convert_packed(lsb, "lsb", "ubinary").tobytes() == GOLDEN_MSB
    assert convert_packed(lsb, "lsb", "binary").tolist() == GOLDEN_ST_BINARY
    assert convert_packed(b[0], "binary", "lsb").tobytes() == GOLDEN_LSB
    assert convert_packed(ub[0], "ubinary", "lsb").tobytes() == GOLDEN_LSB


def test_unpack_roundtrip_and_bit_positions():
    bits = unpack_bits(pack_signs(GOLDEN_X))
    assert bits.tolist() == [1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert bits.tolist() == (GOLDEN_X > 0).astype(int).tolist()


def test_hamming_agrees_across_conventions_and_sqlite_vec():
    from sentence_transformers.util import quantize_embeddings

    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 64)).astype(np.float32)
    b = rng.standard_normal((9, 64)).astype(np.float32)
    b[0] = a[0]  # distance 0
    b[1] = -a[1]  # distance 64
    ref = np.array([[sum((x > 0) != (y > 0) for x, y in zip(ra, rb, strict=True)) for rb in b] for ra in a])
    lsb = hamming_distances(pack_signs(a), pack_signs(b))
    msb = hamming_distances(np.packbits(a > 0, axis=1), np.packbits(b > 0, axis=1))
    ub = hamming_distances(quantize_embeddings(a, "ubinary"), quantize_embeddings(b, "ubinary"))
    sb = hamming_distances(quantize_embeddings(a, "binary"), quantize_embeddings(b, "binary"))
    assert ref[0, 0] == 0 and ref[1, 1] == 64
    for got in (lsb, msb, ub, sb):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref)
    conn = _sqlite()
    pa, pb = pack_signs(a), pack_signs(b)
    sql = "SELECT vec_distance_hamming(vec_bit(?), vec_bit(?))"
    sq = np.array([[conn.execute(sql, (x.tobytes(), y.tobytes())).fetchone()[0] for y in pb] for x in pa])
    np.testing.assert_array_equal(sq, ref)
    # a 1-D query and a width that is not a multiple of 8 bytes take the same path
    np.testing.assert_array_equal(hamming_distances(pa[2], pb), ref[2])
    ref24 = np.array([[int(((ra[:24] > 0) != (rb[:24] > 0)).sum()) for rb in b] for ra in a])
    np.testing.assert_array_equal(hamming_distances(pa[:, :3], pb[:, :3]), ref24)
    np.testing.assert_array_equal(hamming_distances(pa, pb, block_rows=2), ref)


@pytest.mark.parametrize("dim", [0, 4, 12, 250, 257])
def test_dimension_not_multiple_of_8_is_an_error(dim):
    with pytest.raises(HarnessInputError, match="multiple of 8"):
        check_dim(dim)
    if dim:
        with pytest.raises(HarnessInputError, match="multiple of 8"):
            pack_signs(np.ones((2, dim), dtype=np.float32))


def test_nan_is_refused():
    x = np.ones((1, 8), dtype=np.float32)
    x[0, 3] = np.nan
    with pytest.raises(HarnessInputError, match="NaN"):
        sign_bits(x)
    with pytest.raises(HarnessInputError, match="NaN"):
        pack_signs(x)


def test_positive_scaling_does_not_change_bits():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    norm = x / np.linalg.norm(x, axis=1, keepdims=True) * 3.7
    np.testing.assert_array_equal(pack_signs(x), pack_signs(norm))


# ------------------------------------------------------------------------------------------------------------------
# mean-centred binarisation
# ------------------------------------------------------------------------------------------------------------------

# Three 8-d documents; mean by hand: (1+3+5)/3 = 3, (0+0+3)/3 = 1, (-3-6-9)/3 = -6, 1, 0.5, 0, -2, 10.
CENTER_DOCS = np.array(
    [
        [1, 0, -3, 2, 0.5, -1, -2, 10],
        [3, 0, -6, 1, 0.0, 0.5, -1, 11],
        [5, 3, -9, 0, 1.0, 0.5, -3, 9],
    ],
    dtype=np.float32,
)
CENTER_MEAN = np.array([3, 1, -6, 1, 0.5, 0, -2, 10], dtype=np.float32)
# bit j = x[j] > mean[j] (equal values give 0):
#   doc0: 0 0 1 1 0 0 0 0 -> 4 + 8 = 12       (sign bits: 1 0 0 1 1 0 0 1 -> 1+8+16+128 = 153)
#   doc1: 0 0 0 0 0 1 1 1 -> 32 + 64 + 128 = 224
#   doc2: 1 1 0 0 1 1 0 0 -> 1 + 2 + 16 + 32 = 51
CENTER_GOLDEN_LSB = [12, 224, 51]


def test_centered_golden_bits_by_hand():
    assert CENTER_DOCS.mean(axis=0).tolist() == CENTER_MEAN.tolist()
    got = pack_centered(CENTER_DOCS, CENTER_MEAN)
    assert got.dtype == np.uint8 and got.shape == (3, 1) and got[:, 0].tolist() == CENTER_GOLDEN_LSB
    assert pack_signs(CENTER_DOCS)[0, 0] == 153  # the sign bits of the same vectors differ
    assert pack_centered(CENTER_DOCS[1], CENTER_MEAN).tobytes() == bytes([224])  # 1-D
    # MSB-first packing of the same bits: reverse each byte
    assert pack_centered(CENTER_DOCS, CENTER_MEAN, bitorder="big")[:, 0].tolist() == [
        int(f"{b:08b}"[::-1], 2) for b in CENTER_GOLDEN_LSB
    ]
    # a zero centre is sign binarisation; a float64 input is compared as float32
    assert np.array_equal(pack_centered(GOLDEN_X, np.zeros(16, np.float32)), pack_signs(GOLDEN_X))
    assert np.array_equal(
        pack_centered(CENTER_DOCS.astype(np.float64), CENTER_MEAN), pack_centered(CENTER_DOCS, CENTER_MEAN)
    )
    # Hamming distances of centred bits (query = doc1): by hand 12^224 = 236 (5 bits), 0, 224^51 = 211 (5 bits)
    q = pack_centered(CENTER_DOCS[1], CENTER_MEAN)
    assert hamming_distances(q, pack_centered(CENTER_DOCS, CENTER_MEAN)).tolist() == [5, 0, 5]


def test_centered_bits_refuse_bad_inputs():
    with pytest.raises(HarnessInputError, match="NaN"):
        pack_centered(np.array([np.nan] + [0.0] * 7), np.zeros(8))
    with pytest.raises(HarnessInputError, match="centring vector"):
        pack_centered(np.zeros(8), np.zeros(16))
    with pytest.raises(HarnessInputError, match="centring vector"):
        pack_centered(np.zeros(8), np.full(8, np.inf))
    with pytest.raises(HarnessInputError, match="multiple of 8"):
        pack_centered(np.zeros(12), np.zeros(12))
    with pytest.raises(HarnessInputError, match="binarize"):
        binarisation_rule("median")
    assert binarisation_rule("sign") == BINARISATION == "sign: bit j = 1 iff x[j] > 0"
    assert binarisation_rule("centered") == CENTERED_BINARISATION


F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(x=st.lists(F32, min_size=8, max_size=8), m=st.lists(F32, min_size=8, max_size=8))
def test_centered_bits_are_signs_of_the_difference(x, m):
    xa, ma = np.array(x, np.float32), np.array(m, np.float32)
    with np.errstate(over="ignore"):
        diff = xa - ma  # float32, round to nearest: zero only for equal values (gradual underflow); may overflow
    got = centered_bits(xa, ma)
    assert got.tolist() == (diff > 0).tolist()
    assert got.tolist() == (xa.astype(np.float64) > ma.astype(np.float64)).tolist()
    assert np.array_equal(pack_centered(xa, ma), np.packbits(got, bitorder="little"))
