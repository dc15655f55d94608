#!/usr/bin/env python3
"""Draws Codewright's icon (a rounded indigo tile with a white `</>`-style quill mark) as RGBA PNGs
into icons/. Pure standard library, so it runs anywhere: python3 scripts/make-icons.py"""
import math, os, struct, zlib

def png(path, size, pixel):
    rows = bytearray()
    for y in range(size):
        rows.append(0)
        for x in range(size):
            rows.extend(pixel(x + 0.5, y + 0.5, size))
    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)

def seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))

def pixel(x, y, size):
    u, v = x / size, y / size
    # Rounded square tile with a soft edge.
    r, m = 0.22, 0.06
    qx, qy = max(abs(u - 0.5) - (0.5 - m - r), 0), max(abs(v - 0.5) - (0.5 - m - r), 0)
    d = math.hypot(qx, qy) - r
    alpha = max(0.0, min(1.0, 0.5 - d * size))
    if alpha == 0:
        return (0, 0, 0, 0)
    t = (u + v) / 2  # diagonal gradient indigo → violet
    base = (int(79 + (124 - 79) * t), int(70 + (58 - 70) * t), int(229 + (237 - 229) * t))
    # The mark: "<" and ">" chevrons with a slash between them.
    w = 0.045
    strokes = [
        (0.36, 0.34, 0.22, 0.5), (0.22, 0.5, 0.36, 0.66),
        (0.64, 0.34, 0.78, 0.5), (0.78, 0.5, 0.64, 0.66),
        (0.555, 0.28, 0.445, 0.72),
    ]
    sd = min(seg_dist(u, v, *s) for s in strokes) - w
    ink = max(0.0, min(1.0, 0.5 - sd * size))
    rgb = tuple(int(c * (1 - ink) + 255 * ink) for c in base)
    return (*rgb, int(255 * alpha))

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "icons")
os.makedirs(here, exist_ok=True)
for name, size in [("icon.png", 512), ("128x128.png", 128), ("32x32.png", 32)]:
    png(os.path.join(here, name), size, pixel)
