// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: the topology library (lib/topo) as topo_prepare()
 * drives it: parse the input as a YAML topology file, check it against
 * the default limits, route it, check the tables, and dump it. Any of
 * these may refuse the input, but only with an error that names the
 * file and a line ("fuzz.yaml:LINE: ..."), and never by crashing. A
 * topology that routes must have a consistent table: every route of an
 * endpoint to another leads there in at most nr_nodes hops.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/topo.h>

#include "fuzz.h"

#define FILE_NAME	"fuzz.yaml"

/* "fuzz.yaml:N: something", N > 0. */
static void check_err(const char *step, const struct topo_err *err)
{
	const char *p = err->msg;
	size_t n = strlen(FILE_NAME);
	unsigned long line;
	char *end;

	CHECK(memchr(err->msg, '\0', sizeof(err->msg)), "%s: unterminated", step);
	CHECK(!strncmp(p, FILE_NAME ":", n + 1), "%s: '%s'", step, p);
	p += n + 1;
	CHECK(isdigit((unsigned char)*p), "%s: no line: '%s'", step, err->msg);
	line = strtoul(p, &end, 10);
	CHECK(line > 0 && end[0] == ':' && end[1] == ' ' && end[2],
	      "%s: '%s'", step, err->msg);
}

static void check_routes(const struct topo *t)
{
	uint32_t s, d, hops;

	for (s = 0; s < t->nr_nodes; s++) {
		if (t->nodes[s].kind != ICFAB_NODE_ENDPOINT)
			continue;
		for (d = 0; d < t->nr_nodes; d++) {
			if (d == s || t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
				continue;
			hops = (uint32_t)topo_route_hops(t, s, d);
			/* Unreachable (down links) is allowed, loops are not. */
			CHECK((int)hops < 0 || (hops >= 1 && hops <= t->nr_nodes),
			      "%s -> %s: %d hops", t->nodes[s].name,
			      t->nodes[d].name, (int)hops);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct icfab_limits lim;
	struct topo_err err;
	struct topo *t = NULL;
	FILE *null;
	int ret;

	memset(&err, 0, sizeof(err));
	ret = topo_load_string((const char *)data, size, FILE_NAME, &t, &err);
	if (ret) {
		CHECK(ret < 0 && !t, "load: %d", ret);
		check_err("load", &err);
		return 0;
	}
	CHECK(t, "load: no topology and no error");
	/*
	 * The module's limits allow fabrics that take seconds to route
	 * under ASan (a 9x4x53 torus did); this harness looks for crashes
	 * and wrong errors, not for speed, so larger ones are refused by
	 * the checker, which is part of what is fuzzed.
	 */
	topo_default_limits(&lim);
	lim.max_endpoints = 256;
	lim.max_switches = 256;
	lim.max_links = 4096;
	ret = topo_check(t, &lim, &err);
	if (ret) {
		check_err("check", &err);
		goto out;
	}
	ret = topo_route(t, &err);
	if (ret) {
		check_err("route", &err);
		goto out;
	}
	ret = topo_check(t, &lim, &err);
	if (ret) {
		check_err("check tables", &err);
		goto out;
	}
	check_routes(t);
	null = fopen("/dev/null", "w");
	if (null) {
		CHECK(!topo_dump(t, null, TOPO_DUMP_ROUTES | TOPO_DUMP_JSON),
		      "dump failed");
		fclose(null);
	}
out:
	topo_free(t);
	return 0;
}
