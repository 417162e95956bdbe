#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""An all-to-all-v's bytes per pair as `a2a_bound -m FILE:dispatch` reads
them (moe_bench -M's JSON, the dispatch phase alone), for 64 ranks:

    a2av_matrix.py v BYTES    pair s, d: BYTES x ((3s + d) mod 5) / 2, the
                              matrix of a2a_interleave.sh -o alltoallv
    a2av_matrix.py m3 BYTES   BYTES x ((7s + d) mod 3)
    a2av_matrix.py u BYTES    BYTES every pair
    a2av_matrix.py rN [K]     random.seed(N), then row by row
                              randint(0, 32) x 4096 bytes per pair, times
                              K (1 by default)
    a2av_matrix.py hot        every 8th rank gets 64 x 4096 bytes from
                              each, the others 8 x 4096
    a2av_matrix.py pN         random.seed(N), then a Pareto(1.5) weight
                              per destination and per pair
                              min(64, round(8 x weight x U(0.5, 1.5)))
                              x 4096 bytes

The diagonal is 0 (a rank's bytes to itself cross no link).
"""
import json
import random
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    kind, n = sys.argv[1], 64
    b = int(sys.argv[2]) if len(sys.argv) == 3 else 0
    if kind == "v":
        m = [[b * ((3 * s + d) % 5) // 2 for d in range(n)] for s in range(n)]
    elif kind == "m3":
        m = [[b * ((7 * s + d) % 3) for d in range(n)] for s in range(n)]
    elif kind == "u":
        m = [[b] * n for _ in range(n)]
    elif kind.startswith("r") and kind[1:].isdigit():
        random.seed(int(kind[1:]))
        k = b if b else 1
        m = [[random.randint(0, 32) * 4096 * k for _ in range(n)]
             for _ in range(n)]
    elif kind == "hot":
        m = [[(64 if d % 8 == 0 else 8) * 4096 for d in range(n)]
             for _ in range(n)]
    elif kind.startswith("p") and kind[1:].isdigit():
        random.seed(int(kind[1:]))
        w = [random.paretovariate(1.5) for _ in range(n)]
        m = [[min(64, round(8 * w[d] * random.uniform(0.5, 1.5))) * 4096
              for d in range(n)] for _ in range(n)]
    else:
        sys.exit(__doc__)
    for s in range(n):
        m[s][s] = 0
    json.dump({"dispatch": m}, sys.stdout)
    sys.stdout.write("\n")


main()
