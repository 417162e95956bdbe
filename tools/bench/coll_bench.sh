#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# coll_bench.sh: libfabricdev's collectives against the injection bound
# (coll_bench.c says which) on SuperMesh Bi and Alter and on the plain
# 4x4 mesh they extend (the same chiplets, routers, links and spraying,
# written here), timing only, 16 ranks. Run it in the test VM:
#
#	tools/vm/run -k 6.12 --no-debug -t 1800 -- tools/bench/coll_bench.sh \
#		[coll_bench options, default -S 1024,16384 -o ar,rs,ag]
#
# The injection bound is the chiplet's one port to its router, 64 GB/s
# in all three. One JSON line per run, then a table per topology
# (tools/bench/README.md has them).

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
[ $# -gt 0 ] || set -- -S 1024,16384 -o ar,rs,ag
mesh=$(mktemp --suffix=.yaml) || exit 1
trap 'rm -f "$mesh"' EXIT
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
	"$top/build/bin/coll_bench" -n 16 -b 64000000000 "$@" || rc=1
done
exit $rc
