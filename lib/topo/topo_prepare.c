// SPDX-License-Identifier: GPL-2.0
/*
 * Load, check, route, check the tables: how every user of a topology
 * file or preset starts. The structural check runs before routing so
 * that a broken file is reported for what it is, not as a routing
 * failure, and before spending time on large tables.
 */
#include <time.h>

#include "topo_priv.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int topo_prepare(const char *file, const char *preset,
		 const struct icfab_limits *lim, struct topo **tp,
		 struct topo_err *err, struct topo_prepare_ms *ms)
{
	struct topo *t = NULL;
	double t0 = now_ms(), t1, t2;
	int ret;

	if (preset)
		ret = topo_load_preset(preset, &t, err);
	else
		ret = topo_load_file(file, &t, err);
	if (!ret)
		ret = topo_check(t, lim, err);
	t1 = now_ms();
	if (!ret)
		ret = topo_route(t, err);
	t2 = now_ms();
	if (!ret)
		ret = topo_check(t, lim, err);
	if (ret) {
		topo_free(t);
		return ret;
	}
	if (ms) {
		ms->load_check = t1 - t0;
		ms->route = t2 - t1;
		ms->check_tables = now_ms() - t2;
	}
	*tp = t;
	return 0;
}
