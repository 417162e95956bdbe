#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host test of moe_bench's routing draws (-R: draw, check, count; no
# device). -G GROUPS is DeepEP's group-limited routing: a token's
# experts must lie in at most GROUPS nodes, and with every node a group
# it is uniform top-k again, so the mean number of distinct nodes per
# token must be uniform top-k's, nodes x (1 - C(E - E/nodes, k) / C(E, k)).
# The same seed must give the same draw. TAP output.

top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/bin/moe_bench
n=0

echo "TAP version 13"
if [ ! -x "$bench" ]; then
	echo "1..0 # SKIP build/bin/moe_bench not built"
	exit 0
fi

# ok COND DESC
ok() {
	n=$((n + 1))
	if [ "$1" = 1 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}
# field JSON KEY
field() {
	echo "$1" | sed "s/.*\"$2\":\([0-9.]*\).*/\1/"
}
# uniform NODES: the mean distinct nodes per token of uniform top-8 of 256
uniform() {
	awk -v N="$1" 'BEGIN { p = 1; per = 256 / N
		for (i = 0; i < 8; i++) p *= (256 - per - i) / (256 - i)
		printf "%.4f\n", N * (1 - p) }'
}
# near A B TOL: |A - B| <= TOL
near() {
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { print (a - b <= t && b - a <= t) ? 1 : 0 }'
}

for shape in "16 2 2" "32 4 4" "64 8 4" "64 8 1" "64 8 8"; do
	set -- $shape
	r=$("$bench" -R -n "$1" -g 8 -t 2048 -e 256 -k 8 -G "$3")
	rc=$?
	ok $([ $rc = 0 ] && [ "$(field "$r" bad)" = 0 ] && echo 1) \
		"EP$1 -G $3: k distinct experts per token in at most $3 of $2 nodes"
	most=$(field "$r" max_nodes_per_token)
	ok $([ "$most" = "$3" ] && echo 1) \
		"EP$1 -G $3: some token uses all $3 groups ($most)"
	mean=$(field "$r" nodes_per_token)
	if [ "$3" = "$2" ]; then
		want=$(uniform "$2")
		ok "$(near "$mean" "$want" 0.02)" \
			"EP$1 -G $3: $mean nodes per token, uniform top-8's $want"
	elif [ "$3" = 1 ]; then
		ok "$(near "$mean" 1 0)" "EP$1 -G 1: one node per token ($mean)"
	else
		# each kept node's best expert is nearly always in the top 8
		ok "$(near "$mean" 3.95 0.05)" \
			"EP$1 -G $3: $mean nodes per token, nearly all $3"
	fi
	# the experts are drawn evenly: none more than 15% off the mean
	lo=$(field "$r" expert_min) hi=$(field "$r" expert_max)
	mean=$(( $1 * 2048 * 8 / 256 ))
	ok $([ $((lo * 100)) -ge $((mean * 85)) ] && [ $((hi * 100)) -le $((mean * 115)) ] && echo 1) \
		"EP$1 -G $3: tokens per expert $lo..$hi around $mean"
done
a=$("$bench" -R -n 64 -g 8 -t 512 -G 4 -s 7)
b=$("$bench" -R -n 64 -g 8 -t 512 -G 4 -s 7)
c=$("$bench" -R -n 64 -g 8 -t 512 -G 4 -s 9)
ok $([ "$a" = "$b" ] && [ "$a" != "$c" ] && echo 1) "-G: the same seed draws the same routing, another seed another"
r=$("$bench" -R -n 64 -g 8 -t 2048)
ok $([ $? = 0 ] && [ "$(near "$(field "$r" nodes_per_token)" "$(uniform 8)" 0.02)" = 1 ] && echo 1) \
	"uniform top-8 (no -G): $(field "$r" nodes_per_token) nodes per token, $(uniform 8) expected"
"$bench" -R -n 64 -t 64 -G 4 2> /dev/null
ok $([ $? = 2 ] && echo 1) "-G without -g (one node) is refused"
echo "1..$n"
