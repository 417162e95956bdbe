/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one assertion header of the host tests (lib/tests, kmod/model/tests):
 * TAP, as tools/check counts it. ok(cond, fmt, ...) prints "ok N - ..."
 * or "not ok N - ...", diag() a "# ..." line, done() the plan, and
 * returns the exit status (non-zero when anything failed).
 */
#ifndef ICFAB_TESTS_TAP_H
#define ICFAB_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static void __attribute__((format(printf, 2, 3), unused))
ok(int pass, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", pass ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!pass)
		tap_failed++;
	fflush(stdout);
}

static void __attribute__((format(printf, 1, 2), unused))
diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int __attribute__((unused)) done(void)
{
	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# %d of %d failed\n", tap_failed, tap_n);
	return tap_failed ? 1 : 0;
}

#endif /* ICFAB_TESTS_TAP_H */
