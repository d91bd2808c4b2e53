#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank: enough non-white pixels, enough distinct colours,
and optionally colours that must appear (within a tolerance). Standard library only.

usage: png_check.py SHOT.png [--min-ink FRACTION] [--min-colours N] [--expect #rrggbb ...]
Exit 0 when it passes, 1 with one line saying why when it does not.
"""
import argparse
import struct
import sys
import zlib


def decode(path):
    """(width, height, rows): rows of (r, g, b) tuples; 8-bit greyscale, RGB, RGBA, palette."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, palette = 8, b"", None
    width = height = depth = ctype = interlace = None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if depth != 8 or interlace != 0 or ctype not in (0, 2, 3, 4, 6):
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {ctype}, interlace {interlace})")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(height):
        filt, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        # Undo the row's filter (PNG spec, section 9), one filter type per row.
        if filt == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif filt == 2:
            line = bytearray((x + y) & 255 for x, y in zip(line, prev))
        elif filt == 3:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + (a + prev[i]) // 2) & 255
        elif filt == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif filt != 0:
            raise ValueError(f"bad filter type {filt}")
        prev = line
        if ctype in (0, 4):
            pixels = [(v, v, v) for v in line[::channels]]
        elif ctype == 3:
            pixels = [palette[v] for v in line]
        else:
            pixels = [tuple(line[i:i + 3]) for i in range(0, stride, channels)]
        rows.append(pixels)
    return width, height, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("png")
    ap.add_argument("--min-ink", type=float, default=0.01, help="least fraction of non-white pixels")
    ap.add_argument("--min-colours", type=int, default=8, help="least number of distinct colours")
    ap.add_argument("--expect", nargs="*", default=[], help="colours (#rrggbb) that must appear")
    args = ap.parse_args()
    try:
        width, height, rows = decode(args.png)
    except (OSError, ValueError, zlib.error, struct.error) as e:
        print(f"{args.png}: cannot read: {e}")
        return 1
    counts = {}
    for row in rows:
        for px in row:
            counts[px] = counts.get(px, 0) + 1
    total = width * height
    ink = sum(n for px, n in counts.items() if min(px) < 245) / total
    print(f"{args.png}: {width}x{height}, {len(counts)} colours, {ink:.1%} not white")
    if ink < args.min_ink:
        print(f"{args.png}: blank: only {ink:.2%} of the pixels are not white (want {args.min_ink:.0%})")
        return 1
    if len(counts) < args.min_colours:
        print(f"{args.png}: blank: {len(counts)} colours (want at least {args.min_colours})")
        return 1
    for want in args.expect:
        rgb = tuple(int(want[i:i + 2], 16) for i in (1, 3, 5))
        near = sum(n for px, n in counts.items() if max(abs(p - q) for p, q in zip(px, rgb)) <= 6)
        if near < 20:
            print(f"{args.png}: colour {want} is missing (a picture did not render?)")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
