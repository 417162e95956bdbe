#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
bounds.py: lower bounds on the emulated time of a collective or a MoE
exchange among ranks 0..N-1 (endpoints 0..N-1) of a topology, from the
topology alone (icfabd --dump --routes --json). No algorithm can beat
them; each is bytes that must cross somewhere over the bandwidth there,
and the bound is the largest of these terms:

  inj     per rank: what the rank must send (receive) over the most its
          side of the fabric can carry out of (into) it, a max-flow from
          the rank to every other rank (so a mesh chiplet's port to its
          router, or the router's links on, whichever is less);
  agg     all ranks together: the bytes all ranks must send in total
          over the sum of their out (in) capacities (the all-reduce's
          2 (n-1) S: 2 (n-1)/n S per rank where the ranks are alike);
  cut     a set A of ranks against the rest B: what must cross from A
          to B over the minimum cut between them (a max-flow, switches
          and ranks outside N placed wherever the cut is smallest). The
          sets: the ranks on one switch (a node, a leaf), and for every
          stride s and period d, {r : (r // s) mod d < d/2} (the halves
          of each dimension of a torus or a mesh numbered first dimension
          fastest, and coarser or finer ones);
  route   the busiest link when every pair's bytes follow the fabric's
          own routes (parallel cables that spray or hash share evenly):
          only where the bytes per pair are fixed (the all-to-all that
          sends each pair's bytes straight, not hier's; a MoE exchange's
          matrix), for the routing the fabric has.

What must cross, for S bytes per rank (coll_bench's S: the all-reduce's
and broadcast's vector, the reduce-scatter's input, the all-gather's
output, the all-to-all's send buffer) and |A| = a, |B| = b:

  all-reduce      S (B needs A's inputs, reduced: at least S)
  reduce-scatter  b S/n (B's blocks, A's partial sums)
  all-gather      a S/n (A's blocks, once)
  all-to-all      a b S/n
  broadcast       S if the root is in A
  MoE             the sum of the matrix over A x B (moe_bench -M: the
                  bytes the mode moves; so a bound on the mode, not on
                  every way of moving the tokens)

and in total (agg): 2 (n-1) S for the all-reduce, (n-1) S for the others.
Latency is not counted: small transfers sit below the bound by it.

  bounds.py coll TOPO.json N RESULTS      coll_bench's JSON lines, each
                                          with its bound terms added
  bounds.py moe TOPO.json N MATRIX.json   dispatch and combine bounds
  bounds.py rankbw TOPO.json N            the smallest rank capacity, GB/s
  bounds.py selftest                      checks on made-up fabrics

Prints JSON lines.
"""
import json
import sys

INF = float("inf")


class Fabric:
    def __init__(self, topo, n):
        self.n = n
        self.names = {x["id"]: x["name"] for x in topo["nodes"]}
        self.kinds = {x["id"]: x["kind"] for x in topo["nodes"]}
        self.V = len(topo["nodes"])
        self.links = []
        for l in topo["links"]:
            if l.get("state", "up") == "down":
                continue
            cap = float(l["bandwidth"])
            if l.get("state") == "degraded" and l.get("bw_permille"):
                cap *= l["bw_permille"] / 1000.0
            cap *= (l.get("efficiency_permille") or 1000) / 1000.0
            self.links.append(dict(l, cap=cap))
        self.routes = topo.get("routes")
        ecmp = topo.get("fabric", {}).get("ecmp", "none")
        if ecmp not in (None, "none"):
            self.routes = None      # one port per destination is not all
        # merged directed capacities for the flows
        merged = {}
        for l in self.links:
            k = (l["src"], l["dst"])
            merged[k] = merged.get(k, 0.0) + l["cap"]
        self.edges = merged
        if n > self.V or any(self.kinds[r] != "endpoint" for r in range(n)):
            raise SystemExit("bounds.py: ranks 0..%d are not all endpoints" % (n - 1))
        self.adj_ranks = {}
        for (s, d) in merged:
            if d < n and s >= n:
                self.adj_ranks.setdefault(s, set()).add(d)
        self._out = {}
        self._in = {}

    # -- max-flow (Dinic) from the set A to the set B of nodes --
    def flow(self, A, B):
        V = self.V + 2
        src, snk = self.V, self.V + 1
        head = [[] for _ in range(V)]
        to, cap = [], []

        def add(u, v, c):
            head[u].append(len(to)); to.append(v); cap.append(c)
            head[v].append(len(to)); to.append(u); cap.append(0.0)

        for (u, v), c in self.edges.items():
            add(u, v, c)
        for a in A:
            add(src, a, INF)
        for b in B:
            add(b, snk, INF)
        total = 0.0
        eps = 1e-3
        while True:
            level = [-1] * V
            level[src] = 0
            q = [src]
            for u in q:
                for e in head[u]:
                    if cap[e] > eps and level[to[e]] < 0:
                        level[to[e]] = level[u] + 1
                        q.append(to[e])
            if level[snk] < 0:
                return total
            it = [0] * V
            # iterative DFS for blocking flow
            while True:
                path = []
                u = src
                while u != snk:
                    h = head[u]
                    while it[u] < len(h):
                        e = h[it[u]]
                        if cap[e] > eps and level[to[e]] == level[u] + 1:
                            break
                        it[u] += 1
                    if it[u] == len(h):
                        if u == src:
                            break
                        level[u] = -1       # dead end
                        e = path.pop()
                        u = to[e ^ 1]
                        it[u] += 1
                        continue
                    e = h[it[u]]
                    path.append(e)
                    u = to[e]
                if u != snk:
                    break
                f = min(cap[e] for e in path)
                for e in path:
                    cap[e] -= f
                    cap[e ^ 1] += f
                total += f

    def out_cap(self, r):
        if r not in self._out:
            self._out[r] = self.flow([r], [x for x in range(self.n) if x != r])
        return self._out[r]

    def in_cap(self, r):
        if r not in self._in:
            self._in[r] = self.flow([x for x in range(self.n) if x != r], [r])
        return self._in[r]

    def cut_sets(self):
        """(name, A) for the multi-rank cuts; B is the rest."""
        n, seen, out = self.n, set(), []

        def put(name, A):
            A = frozenset(A)
            if 1 < len(A) < n and A not in seen and frozenset(range(n)) - A not in seen:
                seen.add(A)
                out.append((name, sorted(A)))

        for x in sorted(self.adj_ranks):
            put("ranks on " + self.names[x], self.adj_ranks[x])
        for s in range(1, n + 1):
            if n % s:
                continue
            for d in range(2, n // s + 1, 2):
                if (n // s) % d:
                    continue
                put("(r/%d)%%%d<%d" % (s, d, d // 2),
                    [r for r in range(n) if (r // s) % d < d // 2])
        return out

    # -- routed loads --
    def link_loads(self, M):
        """Bytes on each link when M[s][d] follows the routes."""
        if not self.routes:
            return None
        by_port, par = {}, {}
        for i, l in enumerate(self.links):
            by_port[(l["src"], l["src_port"])] = i
            k = (l["src"], l["dst"], l["bandwidth"], l.get("latency_ps"),
                 l.get("class"), l.get("switching"), l.get("multipath"))
            par.setdefault(k, []).append(i)
        share = {}
        for k, ids in par.items():
            for i in ids:
                share[i] = ids if self.links[i].get("multipath", "none") != "none" else [i]
        load = [0.0] * len(self.links)
        for s in range(self.n):
            for d in range(self.n):
                b = M[s][d]
                if s == d or not b:
                    continue
                x, hops = s, 0
                while x != d:
                    port = self.routes[x][d]
                    i = by_port.get((x, port))
                    if i is None or hops > self.V:
                        return None     # no route: no routed bound
                    for j in share[i]:
                        load[j] += b / len(share[i])
                    x = self.links[i]["dst"]
                    hops += 1
        return load

    def routed(self, M):
        load = self.link_loads(M)
        if load is None:
            return None
        best = (0.0, None)
        for i, b in enumerate(load):
            if b:
                t = b / self.links[i]["cap"]
                if t > best[0]:
                    l = self.links[i]
                    best = (t, "route: link %s->%s" % (self.names[l["src"]],
                                                       self.names[l["dst"]]))
        return best


def load(path, n):
    return Fabric(json.load(open(path)), n)


def need(op, A, n, S, root=0):
    """Bytes that must cross from the ranks A to the others."""
    a, b = len(A), n - len(A)
    if not a or not b:
        return 0.0
    return {"ar": S, "rs": b * S / n, "ag": a * S / n,
            "a2a": a * b * S / n,
            "bc": S if root in A else 0.0}[op]


def best(terms):
    """The largest (seconds, name) of @terms, the first of equals."""
    terms = [t for t in terms if t and t[1]]
    top = max((t[0] for t in terms), default=0.0)
    return next((t for t in terms if t[0] >= top * (1 - 1e-9)), (0.0, "none"))


def coll_terms(f, op, S, cuts, algo=None):
    n = f.n
    ranks = list(range(n))
    terms = []
    for r in ranks:
        others = [x for x in ranks if x != r]
        terms.append((need(op, [r], n, S) / f.out_cap(r), "inj: rank %d out" % r))
        terms.append((need(op, others, n, S) / f.in_cap(r), "inj: rank %d in" % r))
    total = (2 if op == "ar" else 1) * (n - 1) * S
    terms.append((total / sum(f.out_cap(r) for r in ranks), "agg: out"))
    terms.append((total / sum(f.in_cap(r) for r in ranks), "agg: in"))
    for name, A, ab, ba in cuts:
        B = [r for r in ranks if r not in A]
        terms.append((need(op, A, n, S) / ab, "cut: %s, out" % name))
        terms.append((need(op, B, n, S) / ba, "cut: %s, in" % name))
    # the routes only for the all-to-alls that send every pair's bytes
    # straight to their destination (hier forwards them)
    if op == "a2a" and algo in (None, "auto", "direct", "ring"):
        M = [[S / n] * n for _ in ranks]
        terms.append(f.routed(M))
    return terms


def matrix_terms(f, M, cuts):
    n = f.n
    terms = []
    for r in range(n):
        terms.append((sum(M[r][d] for d in range(n) if d != r) / f.out_cap(r),
                      "inj: rank %d out" % r))
        terms.append((sum(M[s][r] for s in range(n) if s != r) / f.in_cap(r),
                      "inj: rank %d in" % r))
    for name, A, ab, ba in cuts:
        As = set(A)
        B = [r for r in range(n) if r not in As]
        x = sum(M[s][d] for s in A for d in B)
        y = sum(M[s][d] for s in B for d in A)
        terms.append((x / ab, "cut: %s, out" % name))
        terms.append((y / ba, "cut: %s, in" % name))
    terms.append(f.routed(M))
    return terms


def cuts_of(f):
    out = []
    for name, A in f.cut_sets():
        B = [r for r in range(f.n) if r not in set(A)]
        out.append((name, A, f.flow(A, B), f.flow(B, A)))
    return out


def main_coll(path, n, results):
    f = load(path, n)
    cuts = cuts_of(f)
    for line in open(results):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "time_ps" in r:
            t, by = best(coll_terms(f, r["op"], r["bytes_per_rank"], cuts))
            r["graph_bound_ps"] = round(t * 1e12)
            r["graph_bound_by"] = by
        print(json.dumps(r))


def main_moe(path, n, mpath):
    f = load(path, n)
    cuts = cuts_of(f)
    m = json.load(open(mpath))
    out = {}
    for ph in ("dispatch", "combine"):
        t, by = best(matrix_terms(f, m[ph], cuts))
        out[ph + "_graph_bound_ps"] = round(t * 1e12)
        out[ph + "_graph_bound_by"] = by
    print(json.dumps(out))


def selftest():
    fails = 0

    def check(what, got, want):
        nonlocal fails
        good = abs(got - want) <= 1e-6 * max(abs(want), 1)
        fails += not good
        print("%s - %s: %g (want %g)" % ("ok" if good else "not ok", what, got, want))

    def fabric(nodes, cables, n, routes=None, **extra):
        links, port = [], {}
        for a, b, bw in cables:
            for s, d in ((a, b), (b, a)):
                p = port.get(s, 0)
                port[s] = p + 1
                links.append(dict({"id": len(links), "src": s, "src_port": p, "dst": d,
                                   "bandwidth": bw, "state": "up", "multipath": "none"},
                                  **extra))
        topo = {"nodes": [{"id": i, "name": "x%d" % i, "kind": k}
                          for i, k in enumerate(nodes)], "links": links}
        f = Fabric(topo, n)
        f.routes = routes
        return f

    # four endpoints on one switch, 10 B/s each way
    f = fabric(["endpoint"] * 4 + ["switch"], [(i, 4, 10) for i in range(4)], 4)
    cuts = cuts_of(f)
    S = 400.0
    check("switch: all-reduce 2 (n-1)/n S / B", best(coll_terms(f, "ar", S, cuts))[0],
          2 * 3 / 4 * S / 10)
    check("switch: all-to-all (n-1)/n S / B", best(coll_terms(f, "a2a", S, cuts))[0],
          3 / 4 * S / 10)
    check("switch: broadcast S / B", best(coll_terms(f, "bc", S, cuts))[0], S / 10)
    # a ring of 8 endpoints, 10 B/s per cable per way: the halves
    # {0..3} and {4..7} are cut by 2 cables each way
    f = fabric(["endpoint"] * 8, [(i, (i + 1) % 8, 10) for i in range(8)], 8)
    cuts = cuts_of(f)
    check("ring of 8: a2a bisection 4 x 4 x S/8 over 2 cables",
          best(coll_terms(f, "a2a", 800.0, cuts))[0], 16 * 100 / 20)
    check("ring of 8: rank out capacity 2 cables", f.out_cap(3), 20)
    check("ring of 8: all-reduce S / bisection < 2 (n-1)/n S / 20",
          best(coll_terms(f, "ar", 800.0, cuts))[0], 2 * 7 / 8 * 800 / 20)
    # a corner with less: endpoint 0 reaches 1..3 only through switch 4,
    # whose one cable on carries 5 B/s
    f = fabric(["endpoint"] * 4 + ["switch", "switch"],
               [(0, 4, 100), (4, 5, 5), (1, 5, 10), (2, 5, 10), (3, 5, 10)], 4)
    check("slow router: rank 0 out capacity", f.out_cap(0), 5)
    cuts = cuts_of(f)
    t, by = best(coll_terms(f, "ag", 400.0, cuts))
    check("slow router: all-gather, rank 0 takes 3/4 S at 5 B/s", t, 300 / 5)
    # routed: a line 0 - 1 - 2 with routes through 1
    rt = [[65535, 0, 0], [0, 65535, 1], [0, 0, 65535]]
    f = fabric(["endpoint"] * 3, [(0, 1, 10), (1, 2, 10)], 3, rt)
    M = [[0, 0, 30], [0, 0, 0], [0, 0, 0]]
    check("line: 30 B from 0 to 2 over 10 B/s links", best(matrix_terms(f, M, cuts_of(f)))[0], 3)
    # two parallel cables that spray carry one pair's bytes together; at
    # 50% efficiency each carries half its bandwidth
    rt = [[65535, 0], [0, 65535]]
    f = fabric(["endpoint"] * 2, [(0, 1, 10), (0, 1, 10)], 2, rt, multipath="spray")
    M = [[0, 40], [0, 0]]
    check("spray: 40 B over two 10 B/s cables", f.routed(M)[0], 2)
    f = fabric(["endpoint"] * 2, [(0, 1, 10), (0, 1, 10)], 2, rt, multipath="spray",
               efficiency_permille=500)
    check("efficiency 50%: rank out capacity", f.out_cap(0), 10)
    f = fabric(["endpoint"] * 2, [(0, 1, 10), (0, 1, 10)], 2, rt)
    check("multipath none: the route's one cable", f.routed(M)[0], 4)
    print("1..%d" % 12)
    return 1 if fails else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    if len(argv) == 5 and argv[1] == "coll":
        main_coll(argv[2], int(argv[3]), argv[4])
        return 0
    if len(argv) == 5 and argv[1] == "moe":
        main_moe(argv[2], int(argv[3]), argv[4])
        return 0
    if len(argv) == 4 and argv[1] == "rankbw":
        f = load(argv[2], int(argv[3]))
        print("%g" % (min(min(f.out_cap(r), f.in_cap(r)) for r in range(f.n)) / 1e9))
        return 0
    print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
