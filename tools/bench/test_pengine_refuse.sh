#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host test of the parallel engine's admission of a batch
# (kmod/model/pengine.c, icfab_pengine_submit_batch()): on h800-pod, with
# few slots and events, random batches must be taken and refused as the
# sequential engine takes and refuses them one by one, with the same ids
# and completions (build/bench/pengine_refuse). TAP output.

top=$(cd "$(dirname "$0")/../.." && pwd)
refuse=$top/build/bench/pengine_refuse
icfabd=$top/build/bin/icfabd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$refuse" ] || [ ! -x "$icfabd" ]; then
	echo "TAP version 13"
	echo "1..0 # SKIP build/bench/pengine_refuse or build/bin/icfabd not built"
	exit 0
fi
"$icfabd" --dump --yaml --preset h800-pod > "$tmp/h800-pod.yaml" || exit 1
exec "$refuse" "$tmp/h800-pod.yaml"
