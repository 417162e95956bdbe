#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# coll_bench.sh: libfabricdev's collectives against each rank's bound
# (coll_bench.c says which) on SuperMesh Bi and Alter and on the plain
# 4x4 mesh they extend (the same chiplets, routers, links, ports and
# spraying, written here), timing only, 16 ranks, every algorithm
# including rings (FDEV_ALGO_RINGS) over each topology's own cables
# between chiplets, which the communicator is given
# (fdev_comm_set_links()). Run it in the test VM:
#
#	tools/vm/run -k 6.12 --no-debug -t 1800 -- tools/bench/coll_bench.sh \
#		[coll_bench options, default -S 1024,16384 -o ar,rs,ag]
#
# A rank's bound B is what it can move at once: its port to its router
# (256 GB/s, four 64 GB/s die-to-die links, lib/topo/topo_presets.c) or
# its router's links to other routers together, the smaller: 128 GB/s
# for the mesh (a corner has two), 256 GB/s for Bi and Alter. One JSON
# line per run, a table per topology, then SuperMesh against the mesh
# side by side (tools/bench/README.md has them).

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
[ $# -gt 0 ] || set -- -S 1024,16384 -o ar,rs,ag
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mesh=$tmp/mesh.yaml
cat > "$mesh" <<'YAML'
fabric:
  name: mesh-4x4
defaults:
  endpoint: {memory: 16GiB, dma_engines: 4}
topology:
  mesh:
    dims: [4, 4]
    name: chiplet
    routers: true
    bandwidth: 64GB/s
    latency: 20ns
    class: mesh
    multipath: spray
    local: {bandwidth: 256GB/s}
YAML
rc=0
for topo in "$mesh" --preset=supermesh-bi --preset=supermesh-alter; do
	case $topo in
	--preset=*) name=${topo#--preset=}; set_topo="--preset $name" ;;
	*) name=mesh-4x4; set_topo=$topo ;;
	esac
	echo "== $name"
	# shellcheck disable=SC2086
	"$icfabd" --apply $set_topo > /dev/null || { rc=1; continue; }
	# shellcheck disable=SC2086
	"$icfabd" --dump --json $set_topo > "$tmp/$name.json" || { rc=1; continue; }
	# the cables between chiplets (router to router, once each) as
	# ranks, and the ranks' bound
	bw=$(python3 - "$tmp/$name.json" "$tmp/$name.links" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
kind = {n["id"]: n["kind"] for n in t["nodes"]}
ep_of, port, out = {}, {}, {}
for l in t["links"]:
    if kind[l["src"]] == "endpoint":
        ep_of[l["dst"]] = l["src"]
        port[l["src"]] = l["bandwidth"]
with open(sys.argv[2], "w") as f:
    for l in t["links"]:
        if kind[l["src"]] == "switch" and kind[l["dst"]] == "switch":
            out[l["src"]] = out.get(l["src"], 0) + l["bandwidth"]
            if l["src"] < l["dst"]:
                f.write("%d %d\n" % (ep_of[l["src"]], ep_of[l["dst"]]))
print(min(min(port[e], out[r]) for r, e in ep_of.items()))
PY
) || { rc=1; continue; }
	echo "# $name: bound per rank $bw B/s"
	"$top/build/bin/coll_bench" -n 16 -b "$bw" -L "$tmp/$name.links" "$@" |
		tee "$tmp/$name.out" || rc=1
done
# SuperMesh against the mesh, side by side: the mesh's auto and its best
# algorithm, each SuperMesh's auto, and the time ratios.
python3 - "$tmp" <<'PY'
import json, os, sys
runs = {}
for name in ("mesh-4x4", "supermesh-bi", "supermesh-alter"):
    p = os.path.join(sys.argv[1], name + ".out")
    if not os.path.exists(p):
        sys.exit(0)
    for line in open(p):
        if line.startswith("{") and '"time_ps"' in line:
            r = json.loads(line)
            runs.setdefault((r["op"], r["bytes_per_rank"]), {}).setdefault(name, {})[r["algo"]] = r
print("\nSuperMesh against the plain mesh (times in us; ratio = mesh / SuperMesh)")
print("%-4s %8s %12s %18s %12s %12s %9s %9s %9s %9s" % (
    "op", "S/rank", "mesh auto", "mesh best", "Bi auto", "Alter auto",
    "Bi/auto", "Bi/best", "Alt/auto", "Alt/best"))
for (op, S), by in sorted(runs.items()):
    m = by.get("mesh-4x4", {})
    if "auto" not in m or "auto" not in by.get("supermesh-bi", {}) or \
       "auto" not in by.get("supermesh-alter", {}):
        continue
    ma = m["auto"]["time_ps"]
    ba, best = min((r["time_ps"], a) for a, r in m.items())
    bi = by["supermesh-bi"]["auto"]["time_ps"]
    al = by["supermesh-alter"]["auto"]["time_ps"]
    print("%-4s %4d KiB %12.3f %18s %12.3f %12.3f %9.3f %9.3f %9.3f %9.3f" % (
        op, S // 1024, ma / 1e6, "%.3f (%s)" % (ba / 1e6, best), bi / 1e6,
        al / 1e6, ma / bi, ba / bi, ma / al, ba / al))
PY
exit $rc
