/* SPDX-License-Identifier: GPL-2.0 */
/* What the topology library's host tests share, on top of tap.h. */
#ifndef ICFAB_TESTS_TOPO_TEST_H
#define ICFAB_TESTS_TOPO_TEST_H

#include <time.h>

#include <icfab/topo.h>

#include "tap.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

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

#endif /* ICFAB_TESTS_TOPO_TEST_H */
