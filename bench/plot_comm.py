#!/usr/bin/env python3
"""Plots `paisoar bench comm` JSON as an SVG: time per call against tensor size,
log-log, one line per side (paisoar, Open MPI, Gloo) and the memcpy limit, one
panel per op; and prints the table docs/BENCHMARKS.md shows (paisoar's time
and the peer's over paisoar's, per size and op). Standard library only (no
plotting package), so it runs anywhere the JSON is:

    python3 bench/plot_comm.py docs/bench/comm_mpi_2ranks.json docs/bench/comm_mpi_2ranks.svg
"""
import json
import math
import sys

COLOURS = {"paisoar": "#d62728", "open mpi": "#1f77b4", "gloo": "#7f7f7f", "memcpy limit": "#2ca02c"}
PANEL_W, PANEL_H, MARGIN_L, MARGIN_B, MARGIN_T = 360, 260, 60, 40, 30


def series(rows, op):
    """{name: [(bytes, seconds)]} for one op, the memcpy limit included."""
    out = {}
    for row in rows:
        if row["op"] != op:
            continue
        for name, seconds in row["seconds"].items():
            out.setdefault(name, []).append((row["bytes"], seconds))
        if "memcpy_limit_s" in row:
            out.setdefault("memcpy limit", []).append((row["bytes"], row["memcpy_limit_s"]))
    return out


def panel(op, lines, x0, y0, x_range, y_range):
    (xl, xh), (yl, yh) = x_range, y_range
    w, h = PANEL_W - MARGIN_L - 10, PANEL_H - MARGIN_B - MARGIN_T

    def px(b):
        return x0 + MARGIN_L + (math.log10(b) - xl) / (xh - xl) * w

    def py(s):
        return y0 + MARGIN_T + h - (math.log10(s) - yl) / (yh - yl) * h

    parts = [f'<text x="{x0 + MARGIN_L}" y="{y0 + 18}" font-size="13" font-weight="bold">{op}</text>',
             f'<rect x="{x0 + MARGIN_L}" y="{y0 + MARGIN_T}" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    for e in range(math.ceil(yl), math.floor(yh) + 1):
        y = py(10 ** e)
        label = {-9: "1 ns", -8: "10 ns", -7: "100 ns", -6: "1 us", -5: "10 us", -4: "100 us", -3: "1 ms", -2: "10 ms", -1: "100 ms", 0: "1 s"}.get(e, f"1e{e}")
        parts.append(f'<line x1="{x0 + MARGIN_L}" x2="{x0 + MARGIN_L + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{x0 + MARGIN_L - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{label}</text>')
    sizes = sorted({b for points in lines.values() for b, _ in points})
    for i, b in enumerate(sizes):
        x = px(b)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0 + MARGIN_T}" y2="{y0 + MARGIN_T + h}" stroke="#eee"/>')
        if i % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{y0 + MARGIN_T + h + 14}" font-size="10" text-anchor="middle">'
                         f'{size_label(b)}</text>')
    for name, points in lines.items():
        points = sorted(points)
        path = " ".join(f"{px(b):.1f},{py(s):.1f}" for b, s in points)
        dash = ' stroke-dasharray="4,3"' if name == "memcpy limit" else ""
        parts.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS.get(name, "#000")}" '
                     f'stroke-width="2"{dash}/>')
    return parts


def size_label(b):
    return f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 2**10:g} KiB" if b >= 2**10 else f"{b} B"


def markdown(rows, peer):
    """paisoar us (peer / paisoar) per size and op, with the memcpy limit ratio of allreduce."""
    ops = [op for op in dict.fromkeys(r["op"] for r in rows)]
    cells = {(r["bytes"], r["op"]): r for r in rows}
    lines = ["| bytes | " + " | ".join(ops) + " | allreduce / limit |", "|---:|" + "---:|" * (len(ops) + 1)]
    for b in sorted({r["bytes"] for r in rows}):
        out = []
        for op in ops:
            r = cells.get((b, op))
            if r is None:
                out.append("")
                continue
            ours = r["seconds"]["paisoar"] * 1e6
            theirs = r["seconds"].get(peer)
            ratio = f" ({theirs * 1e6 / ours:.2f})" if theirs else ""
            out.append(f"{ours:,.1f}{ratio}")
        ar = cells.get((b, "allreduce"))
        limit = f'{ar["seconds"]["paisoar"] / ar["memcpy_limit_s"]:.2f}' if ar and "memcpy_limit_s" in ar else ""
        lines.append(f"| {size_label(b)} | " + " | ".join(out) + f" | {limit} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_comm.py COMM_BENCH.json OUT.svg")
    data = json.load(open(sys.argv[1]))
    rows = data["rows"]
    ops = [op for op in dict.fromkeys(r["op"] for r in rows)]
    sizes = [r["bytes"] for r in rows]
    times = [s for r in rows for s in r["seconds"].values()] + [r["memcpy_limit_s"] for r in rows if "memcpy_limit_s" in r]
    x_range = (math.log10(min(sizes)) - 0.1, math.log10(max(sizes)) + 0.1)
    y_range = (math.floor(math.log10(min(times))), math.ceil(math.log10(max(times))))
    cols = 2
    rows_n = (len(ops) + cols - 1) // cols
    width, height = cols * PANEL_W, rows_n * PANEL_H + 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="10" y="{height - 28}" font-size="11">{data.get("title", "")[:150]}</text>']
    legend_x = 10
    for name, colour in COLOURS.items():
        parts.append(f'<line x1="{legend_x}" x2="{legend_x + 20}" y1="{height - 10}" y2="{height - 10}" '
                     f'stroke="{colour}" stroke-width="3"/>')
        parts.append(f'<text x="{legend_x + 24}" y="{height - 6}" font-size="11">{name}</text>')
        legend_x += 120
    for i, op in enumerate(ops):
        parts += panel(op, series(rows, op), (i % cols) * PANEL_W, (i // cols) * PANEL_H, x_range, y_range)
    parts.append("</svg>")
    with open(sys.argv[2], "w") as out:
        out.write("\n".join(parts) + "\n")
    print(f"wrote {sys.argv[2]}")
    peer = "open mpi" if "open mpi" in data.get("sides", []) else "gloo"
    print(f"paisoar us ({peer} / paisoar):")
    print(markdown(rows, peer))


if __name__ == "__main__":
    main()
