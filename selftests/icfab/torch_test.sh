#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The "icfab" torch.distributed backend (fabricdev.torch), in TAP: every
# op on every dtype, the init methods, bad input, and an expert-parallel
# MoE layer over gloo and over icfab. torch_test.py imports torch once
# (minutes in the TCG VM) and forks the ranks. Needs the extension
# (libtorch-dev) and a module with ICFAB_F_MEMORY.
#
#	tools/vm/run -k 6.12 -t 1800 -- build/selftests/icfab/run_tests.sh torch_test.sh

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
dir=$(dirname "$0")
py=/usr/bin/python3

if ! ls "$top"/build/python/fabricdev/_icfab_torch*.so > /dev/null 2>&1; then
	echo "1..0 # SKIP fabricdev.torch's extension is not built (libtorch-dev)"
	exit 0
fi
if ! "$top/build/bin/icfabd" --apply --preset dgx-h100 > /dev/null; then
	echo "1..1"
	echo "not ok 1 dgx-h100 applied"
	exit 1
fi
start=$(date +%s)
ICFAB_TOP=$top "$py" "$dir/torch_test.py" "$@"
rc=$?
echo "# torch_test.sh wall time $(($(date +%s) - start)) s on $(uname -r)"
exit $rc
