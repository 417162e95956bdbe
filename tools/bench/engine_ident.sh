#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# engine_ident.sh [-q]: the identity check of the freestanding engine, on
# the host. For each workload, engine_rate -H -I prints one hash of every
# departure, completion and link counter of two passes of an all-to-all
# (tools/bench/engine_rate.c); a change to the engine that keeps the
# order of events and every decision prints the same lines. Run it
# before and after such a change and diff the outputs. -q: the smaller
# set only (no 1024-endpoint rows).
#
# Workloads: the ualink-pod preset cut to 64 endpoints (one switch) and
# to 128 (leaves and spines, 16 parallel uplinks per leaf and spine,
# also with every link hashed per flow and sprayed), the presets
# dgx-h100, tpu-v4-cube, h800-pod, h800-pod-cal (calibrated links),
# ipu-pod4 and supermesh-bi (parallel cables), each at several sizes
# per pair, stored and forwarded and cut-through (-C); and ualink-pod
# cut to 1024 endpoints at 4 KiB, 5000 B and 64 KiB.
#   build/bench/engine_ident.sh > before.txt   # ... change, rebuild ...
#   build/bench/engine_ident.sh > after.txt && cmp before.txt after.txt

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
rate=${ICFAB_ENGINE_RATE:-$top/build/bench/engine_rate}
quick=0
[ "$1" = -q ] && quick=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in ualink-pod dgx-h100 tpu-v4-cube h800-pod h800-pod-cal ipu-pod4 \
	 supermesh-bi; do
	"$icfabd" --dump --yaml --preset $p > "$tmp/$p.yaml" || exit 1
done
for n in 64 128 1024; do
	sed "s/endpoints: 1024/endpoints: $n/; s/name: ualink-pod/name: a2a-$n/" \
		"$tmp/ualink-pod.yaml" > "$tmp/a2a-$n.yaml"
done
for m in flow spray; do
	sed "s/    switching: cut-through/&\n    multipath: $m/" \
		"$tmp/a2a-128.yaml" > "$tmp/a2a-128-$m.yaml"
done

status=0
run() {
	out=$("$rate" -H -I "$@" 2>&1) || status=1
	echo "$* | $out" | sed "s|$tmp/||"
}

for f in a2a-64 dgx-h100 tpu-v4-cube h800-pod h800-pod-cal ipu-pod4 \
	 supermesh-bi; do
	for b in 1 1000 4096 6000 65536 100000 1048576; do
		run -b $b "$tmp/$f.yaml"
		run -C -b $b "$tmp/$f.yaml"
	done
done
for f in a2a-128 a2a-128-flow a2a-128-spray; do
	for b in 4096 16384 100000; do
		run -b $b "$tmp/$f.yaml"
		run -C -b $b "$tmp/$f.yaml"
	done
done
if [ $quick = 0 ]; then
	for b in 4096 5000 65536; do
		run -b $b "$tmp/a2a-1024.yaml"
	done
	run -C -b 4096 "$tmp/a2a-1024.yaml"
fi
exit $status
