/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP for lib/'s host tests: ok(cond, fmt, ...) prints
 * "ok N - ..." or "not ok N - ...", done() prints the plan and returns
 * the exit status (non-zero when anything failed).
 */
#ifndef ICFABD_TESTS_TAP_H
#define ICFABD_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <icfab/topo.h>

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

static double __attribute__((unused)) now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Parse a YAML string; NULL (with a diagnostic) when it does not load. */
static __attribute__((unused)) struct topo *load(const char *yaml)
{
	struct topo_err err = { "" };
	struct topo *t = NULL;

	if (topo_load_string(yaml, strlen(yaml), "<test>", &t, &err)) {
		diag("load failed: %s", err.msg);
		return NULL;
	}
	return t;
}

/* Load, check, route, check; NULL (with a diagnostic) on any failure. */
static __attribute__((unused)) struct topo *load_routed(const char *yaml)
{
	struct topo_err err = { "" };
	struct icfab_limits lim;
	struct topo *t = load(yaml);

	topo_default_limits(&lim);
	if (t && (topo_check(t, &lim, &err) || topo_route(t, &err) ||
		  topo_check(t, &lim, &err))) {
		diag("check/route failed: %s", err.msg);
		topo_free(t);
		return NULL;
	}
	return t;
}

/* Distinct neighbours of a node over its outgoing links. */
static unsigned int __attribute__((unused))
neighbours(const struct topo *t, uint32_t node)
{
	unsigned int n = 0;
	uint32_t i, j;

	for (i = 0; i < t->nr_links; i++) {
		if (t->links[i].src_node != node)
			continue;
		for (j = 0; j < i; j++)
			if (t->links[j].src_node == node &&
			    t->links[j].dst_node == t->links[i].dst_node)
				break;
		n += j == i;
	}
	return n;
}

/* Outgoing links of a node (parallel cables counted). */
static unsigned int __attribute__((unused))
out_links(const struct topo *t, uint32_t node)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		n += t->links[i].src_node == node;
	return n;
}

static int __attribute__((unused)) node_id(const struct topo *t, const char *name)
{
	return topo_find_node(t, name);
}

#endif /* ICFABD_TESTS_TAP_H */
