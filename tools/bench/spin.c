// SPDX-License-Identifier: GPL-2.0
/*
 * spin [N]: N million rounds of four independent multiply-add chains held
 * in registers (enough to keep a core's multiplier busy every cycle, so a
 * second thread on the same core would show), then the result (so the
 * compiler keeps the loop). No memory traffic
 * past the stack: what two copies at once cost beyond one alone is what
 * the host's cores share (an SMT sibling, a clock lowered when both run),
 * not caches. pair_bound.py runs it alone and in pairs.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 500;
	const unsigned long long m = 6364136223846793005ULL;
	const unsigned long long c = 1442695040888963407ULL;
	unsigned long long a = 1, b = 2, x = 3, y = 4;
	unsigned long i;

	for (i = 0; i < n * 1000000UL; i++) {
		a = a * m + c;
		b = b * m + (c ^ 1);
		x = x * m + (c ^ 2);
		y = y * m + (c ^ 3);
	}
	printf("%llu\n", a ^ b ^ x ^ y);
	return 0;
}
