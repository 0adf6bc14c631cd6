"""Enough of PNG to tell a blank screenshot from a drawn one (stdlib only: zlib)."""

from __future__ import annotations

import struct
import zlib


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _unfilter(row: bytearray, previous: bytes, kind: int, bpp: int) -> None:
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        up = previous[i]
        corner = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + up) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            row[i] = (row[i] + _paeth(left, up, corner)) & 0xFF


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        data = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    width, height, depth, color, *_ = header
    assert depth == 8 and color in (2, 6), f"unexpected PNG format: depth {depth}, color {color}"
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, previous = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(row, previous, raw[start], bpp)
        rows.append(bytes(row))
        previous = row
    return width, height, rows


def share_not_background(png: bytes, step: int = 7) -> float:
    """Share of sampled pixels that differ from the top-left pixel (the page background)."""
    width, _, rows = pixels(png)
    bpp = len(rows[0]) // width
    background = rows[0][:3]
    sampled = [row[x * bpp : x * bpp + 3] for row in rows[::step] for x in range(0, width, step)]
    return sum(pixel != background for pixel in sampled) / len(sampled)
