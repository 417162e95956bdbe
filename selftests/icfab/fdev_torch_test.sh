#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The PyTorch expert-parallel MoE example over icfab (TAP): one process
# driving 4 ranks, then 4 independently started processes, each rank
# owning 2 of 8 experts; the output must be allclose to a dense
# single-process reference. Not in the default list: importing torch
# takes minutes in the TCG test VM. Needs a module with ICFAB_F_MEMORY.
#
#	tools/vm/run -k 6.12 -t 1800 -- build/selftests/icfab/run_tests.sh fdev_torch_test.sh

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
py=/usr/bin/python3
ex=$top/libfabricdev/python/moe_example.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

echo "TAP version 13"
if ! "$py" -c 'import torch' 2> /dev/null; then
	echo "1..0 # SKIP no python3-torch"
	exit 0
fi
check "dgx-h100 applied" sh -c "'$top/build/bin/icfabd' --apply --preset dgx-h100 > /dev/null"
check "one process driving 4 ranks: allclose to the dense reference" \
	sh -c "'$py' '$ex' --ranks 4 > '$tmp/a' 2>&1; rc=\$?; sed 's/^/# /' '$tmp/a'; exit \$rc"
check "4 independent processes, one rank each: allclose" \
	sh -c "'$py' '$ex' --ranks 4 --procs > '$tmp/b' 2>&1; rc=\$?; sed 's/^/# /' '$tmp/b'; exit \$rc"
check "the emulated times are the same both ways (rank 0 drives the fabric)" sh -c "
	a=\$(grep -h 'emulated dispatch' '$tmp/a' | sed 's/.*emulated //')
	b=\$(grep -h 'emulated dispatch' '$tmp/b' | sed 's/.*emulated //' | sort -u)
	echo \"# \$a | \$b\"; [ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"
echo "1..$n"
exit $failed
