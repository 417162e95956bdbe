// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd: the icfab control-plane daemon.
 *
 *	icfabd --check FILE | --check --preset NAME
 *	icfabd --dump [--routes] [--json] FILE | --preset NAME
 *	icfabd --dump --yaml --preset NAME
 *	icfabd --list-presets
 *	icfabd --apply FILE | --apply --preset NAME
 *	icfabd --diff FILE | --diff --preset NAME
 *	icfabd --link-state ID STATE
 *	icfabd --status
 *	icfabd [--foreground | --daemon] [--config FILE | --preset NAME]
 *
 * Every mode that has a topology starts the same way: load it (file or
 * preset), validate it against the module's limits, compute its routes,
 * validate the tables (topo_prepare()). --apply and --diff then compare
 * it with what the module runs (fabric.c); without a mode icfabd is the
 * daemon (daemon.c).
 *
 * Exit status: 0 valid/applied/identical, 1 invalid or failed (--diff:
 * different), 2 usage, 3 --diff could not compare.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "icfabd.h"

enum { EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_DIFF_TROUBLE = 3 };

enum icfabd_mode {
	MODE_NONE,			/* the daemon */
	MODE_CHECK,
	MODE_DUMP,
	MODE_LIST_PRESETS,
	MODE_APPLY,
	MODE_DIFF,
	MODE_LINK_STATE,
	MODE_STATUS,
};

struct icfabd_opts {
	enum icfabd_mode mode;
	const char *file;
	const char *preset;
	const char *config;		/* daemon: --config FILE */
	const char *link;		/* --link-state ID */
	unsigned int dump_flags;	/* TOPO_DUMP_* */
	uint32_t fabric_id;		/* --fabric N: /dev/icfabN */
	bool yaml;			/* --dump the preset's file itself */
	bool verbose;			/* phase timings on stderr */
	bool foreground;		/* daemon: log to stderr */
	bool fork;			/* daemon: --daemon */
	const char *socket;		/* daemon: --socket PATH */
	const char *admin_group;	/* daemon: --admin-group GROUP */
	bool socket_opts;		/* daemon: a limit or timeout given */
	struct proto_limits limits;	/* daemon: --max-clients, ... */
	uint32_t idle_timeout_ms;	/* daemon: --idle-timeout */
	uint32_t line_timeout_ms;	/* daemon: --line-timeout */
};

/* Long options without a letter. */
enum {
	OPT_MAX_CLIENTS = 256,
	OPT_MAX_PER_UID,
	OPT_ADMIN_SLOTS,
	OPT_IDLE_TIMEOUT,
	OPT_LINE_TIMEOUT,
};

static void usage(FILE *f)
{
	fputs("Usage: icfabd --check FILE | --check --preset NAME\n"
	      "       icfabd --dump [--routes] [--json] FILE | --preset NAME\n"
	      "       icfabd --dump --yaml --preset NAME\n"
	      "       icfabd --list-presets\n"
	      "       icfabd --apply FILE | --apply --preset NAME\n"
	      "       icfabd --diff FILE | --diff --preset NAME\n"
	      "       icfabd --link-state ID up|down|degraded:PERMILLE\n"
	      "       icfabd --status\n"
	      "       icfabd [--foreground | --daemon] [--config FILE | --preset NAME]\n"
	      "\n"
	      "  -c, --check         validate a topology and its routes, touch nothing\n"
	      "                      (against the module's limits when it is loaded)\n"
	      "  -a, --apply         make the module run the topology, changing only\n"
	      "                      what differs, in one commit\n"
	      "  -D, --diff          compare the module's configuration with the topology\n"
	      "                      (the first 50 differences; -v: all)\n"
	      "  -L, --link-state ID set one link's state and commit (routes are the\n"
	      "                      daemon's business)\n"
	      "  -s, --status        what the module runs: counts, link states, table\n"
	      "                      memory, and whether any route leaves by a DOWN link\n"
	      "  -C, --config FILE   daemon: the topology to run\n"
	      "  -f, --foreground    daemon: log to stderr, not syslog\n"
	      "  -b, --daemon        daemon: fork into the background (not for systemd)\n"
	      "  -S, --socket PATH   daemon: the requests' Unix socket (default\n"
	      "                      " ICFABD_SOCKET_DEFAULT "; see docs/SOCKET.md)\n"
	      "  -G, --admin-group G daemon: members of group G (name or gid) may make\n"
	      "                      privileged requests, as root may\n"
	      "      --max-clients N daemon: connections to the socket at once (default\n"
	      "                      64, at most 1024)\n"
	      "      --admin-slots N daemon: the last N of them are for administrators\n"
	      "                      (default 8)\n"
	      "      --max-per-uid N daemon: connections of one uid that is not an\n"
	      "                      administrator's (default 16)\n"
	      "      --idle-timeout S  daemon: close a connection without a request for\n"
	      "                      S seconds (default 60; 0: never; e.g. 0.5)\n"
	      "      --line-timeout S  daemon: close one that leaves a request line\n"
	      "                      unfinished for S seconds (default 10; 0: never)\n"
	      "  -F, --fabric N      /dev/icfabN (default 0)\n"
	      "  -d, --dump          print the expanded topology (nodes, links)\n"
	      "  -p, --preset NAME   a built-in topology instead of FILE\n"
	      "  -r, --routes        --dump: also the route tables\n"
	      "  -j, --json          --dump: JSON (units: bytes, bytes/s, ps)\n"
	      "  -y, --yaml          --dump --preset: the preset's topology file\n"
	      "  -l, --list-presets  list the built-in presets\n"
	      "  -v, --verbose       timings on stderr; the daemon logs debug messages\n"
	      "  -h, --help          this help\n"
	      "\n"
	      "Without a mode icfabd is the daemon: it reads the module's configuration,\n"
	      "adopts it when it is the topology's (or applies the topology to an empty\n"
	      "module; a different one is kept and reported), tells systemd it is ready,\n"
	      "and recomputes routes when link states change. SIGHUP applies the\n"
	      "topology again; SIGTERM leaves the module running as it is.\n"
	      "\n"
	      "Exit status: 0 valid/applied/identical, 1 invalid or failed (--diff:\n"
	      "different), 2 usage, 3 --diff could not compare.\n", f);
}

static int report(int ret, const struct topo_err *err)
{
	if (err->msg[0])
		fprintf(stderr, "%s\n", err->msg);
	else
		fprintf(stderr, "icfabd: %s\n", strerror(-ret));
	return EXIT_INVALID;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The module's limits from ICFAB_IOC_INFO; the built-in ones only where
 * the caller may do without a module (--check on a build host).
 */
static int get_limits(const struct icfabd_opts *o, struct icfab_limits *lim,
		      bool fallback)
{
	struct icfab_info info;
	int ret;

	ret = icfab_dev_info(o->fabric_id, &info);
	if (!ret) {
		*lim = info.limits;
		return 0;
	}
	if (fallback) {
		topo_default_limits(lim);
		return 0;
	}
	if (ret == -EACCES) {
		/* Not ours to read; the kernel checks again at commit. */
		fprintf(stderr, "icfabd: warning: /dev/" ICFAB_DEV_NAME_PREFIX "%u: %s: checking against the built-in limits\n",
			o->fabric_id, strerror(-ret));
		topo_default_limits(lim);
		return 0;
	}
	fprintf(stderr, "icfabd: /dev/" ICFAB_DEV_NAME_PREFIX "%u: %s%s\n",
		o->fabric_id, strerror(-ret),
		ret == -ENOENT ? " (is the icfab module loaded?)" : "");
	return ret;
}

static int prepare_topology(const struct icfabd_opts *o, struct topo **tp)
{
	struct topo_prepare_ms ms;
	struct topo_err err = { "" };
	struct icfab_limits lim;
	int ret;

	ret = get_limits(o, &lim, o->mode == MODE_CHECK || o->mode == MODE_DUMP);
	if (ret)
		return EXIT_INVALID;
	ret = topo_prepare(o->file, o->preset, &lim, tp, &err, &ms);
	if (ret)
		return report(ret, &err);
	if (o->verbose)
		fprintf(stderr, "icfabd: load+check %.1f ms, route %.1f ms, check tables %.1f ms\n",
			ms.load_check, ms.route, ms.check_tables);
	return 0;
}

static int cmd_check(const struct icfabd_opts *o)
{
	struct topo_mem m;
	struct topo *t;
	int ret;

	ret = prepare_topology(o, &t);
	if (ret)
		return ret;
	topo_mem(t, &m);
	printf("ok: %s: %u endpoints, %u switches, %u links, route tables %.1f MiB\n",
	       o->preset ? o->preset : o->file, t->nr_endpoints,
	       t->nr_switches, t->nr_links, m.route_bytes / 1048576.0);
	topo_free(t);
	return 0;
}

static int cmd_dump(const struct icfabd_opts *o)
{
	struct topo *t;
	int ret;

	if (o->yaml) {
		fputs(topo_preset_find(o->preset)->yaml, stdout);
		return 0;
	}
	ret = prepare_topology(o, &t);
	if (ret)
		return ret;
	ret = topo_dump(t, stdout, o->dump_flags);
	topo_free(t);
	if (ret) {
		fprintf(stderr, "icfabd: writing the dump: %s\n", strerror(-ret));
		return EXIT_INVALID;
	}
	return 0;
}

static int cmd_list_presets(void)
{
	const struct topo_preset *p;
	size_t n, i;

	p = topo_presets(&n);
	for (i = 0; i < n; i++)
		printf("%-16s %s\n", p[i].name, p[i].summary);
	return 0;
}

static const char *topo_label(const struct icfabd_opts *o)
{
	return o->preset ? o->preset : o->file;
}

static int cmd_apply(const struct icfabd_opts *o)
{
	struct fabric_result res;
	char why[512], sum[256];
	double t0 = now_ms();
	struct topo *t;
	int ret;

	ret = prepare_topology(o, &t);
	if (ret)
		return ret;
	ret = fabric_sync(o->fabric_id, t, &res, why, sizeof(why));
	topo_free(t);
	if (ret) {
		fprintf(stderr, "icfabd: applying %s failed, the module is unchanged: %s\n",
			topo_label(o), why);
		return EXIT_INVALID;
	}
	if (res.gen_after == res.gen_before) {
		printf("unchanged: the module runs %s already (generation %llu, %u nodes, %u links)\n",
		       topo_label(o), (unsigned long long)res.gen_after,
		       res.nr_nodes, res.nr_links);
		return 0;
	}
	snprintf(sum, sizeof(sum),
		 "nodes +%u -%u ~%u, links +%u -%u ~%u, %u link states%s",
		 res.diff.nodes_added, res.diff.nodes_removed,
		 res.diff.nodes_replaced, res.diff.links_added,
		 res.diff.links_removed, res.diff.links_replaced,
		 res.diff.link_states, res.diff.params ? ", parameters" : "");
	printf("applied %s: generation %llu -> %llu (%u nodes, %u links, %u route rows changed; %s) in %.2f s\n",
	       topo_label(o), (unsigned long long)res.gen_before,
	       (unsigned long long)res.gen_after, res.nr_nodes, res.nr_links,
	       res.diff.route_rows, sum, (now_ms() - t0) / 1e3);
	return 0;
}

/* The module's family, for --fabric; says why not on stderr. */
static int open_family(const struct icfabd_opts *o, struct icfab_nl *nl)
{
	int ret = icfab_nl_open(nl, o->fabric_id);

	if (ret)
		fprintf(stderr, "icfabd: netlink family '%s': %s\n",
			ICFAB_GENL_NAME, strerror(-ret));
	return ret;
}

/*
 * The module's committed configuration in @st, read through @nl (left
 * open); on failure says why on stderr, and @nl is closed.
 */
static int read_module(const struct icfabd_opts *o, struct icfab_nl *nl,
		       struct fabric_state *st)
{
	char err[384];
	int ret;

	ret = open_family(o, nl);
	if (ret)
		return ret;
	ret = fabric_read(nl, false, st);
	if (ret) {
		fprintf(stderr, "icfabd: reading the module's configuration: %s\n",
			icfab_nl_strerror(nl, ret, err, sizeof(err)));
		icfab_nl_close(nl);
	}
	return ret;
}

static int cmd_diff(const struct icfabd_opts *o)
{
	struct fabric_state st;
	struct fabric_diff df;
	struct icfab_nl nl;
	struct topo *t;
	int ret;

	ret = prepare_topology(o, &t);
	if (ret)
		return EXIT_DIFF_TROUBLE;
	if (read_module(o, &nl, &st)) {
		topo_free(t);
		return EXIT_DIFF_TROUBLE;
	}
	ret = fabric_diff(t, &st, &df, stdout, o->verbose ? ~0U : 50);
	if (ret) {
		fprintf(stderr, "icfabd: %s\n", strerror(-ret));
	} else if (fabric_diff_empty(&df)) {
		printf("identical: the module runs %s (generation %llu, %u nodes, %u links)\n",
		       topo_label(o), (unsigned long long)st.generation,
		       st.topo->nr_nodes, st.topo->nr_links);
	} else {
		printf("different: the module (generation %llu, %u nodes, %u links) and %s (%u nodes, %u links): "
		       "nodes +%u -%u ~%u, links +%u -%u ~%u, %u link states, %u route rows (%u entries)%s\n",
		       (unsigned long long)st.generation, st.topo->nr_nodes,
		       st.topo->nr_links, topo_label(o), t->nr_nodes,
		       t->nr_links, df.nodes_added, df.nodes_removed,
		       df.nodes_replaced, df.links_added, df.links_removed,
		       df.links_replaced, df.link_states, df.route_rows,
		       df.route_entries, df.params ? ", parameters" : "");
	}
	fabric_state_free(&st);
	icfab_nl_close(&nl);
	topo_free(t);
	if (ret)
		return EXIT_DIFF_TROUBLE;
	return fabric_diff_empty(&df) ? 0 : EXIT_INVALID;
}

static int parse_generation(struct nlattr **tb, void *arg)
{
	if (tb[ICFAB_A_FABRIC_GENERATION])
		*(uint64_t *)arg = nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]);
	return 0;
}

/* One LINK_SET and its commit, on one socket, like an operator's tool. */
static int cmd_link_state(const struct icfabd_opts *o)
{
	uint32_t id, permille = 0;
	const char *why = NULL;
	struct icfab_nl nl;
	struct nl_msg *m;
	uint64_t gen = 0;
	char state[16], err[384], *colon;
	int st, ret;

	if (topo_parse_u32(o->link, &id, &why)) {
		fprintf(stderr, "icfabd: link id '%s': %s\n", o->link, why);
		return EXIT_USAGE;
	}
	snprintf(state, sizeof(state), "%s", o->file);
	colon = strchr(state, ':');
	if (colon) {
		*colon++ = '\0';
		if (topo_parse_u32(colon, &permille, &why)) {
			fprintf(stderr, "icfabd: permille '%s': %s\n", colon, why);
			return EXIT_USAGE;
		}
	}
	st = topo_state_parse(state);
	if (st < 0 || (st == ICFAB_LINK_DEGRADED) != !!colon) {
		fprintf(stderr, "icfabd: state '%s': up, down or degraded:PERMILLE\n",
			o->file);
		return EXIT_USAGE;
	}
	if (open_family(o, &nl))
		return EXIT_INVALID;
	ret = icfab_nl_request(&nl, icfab_nl_msg(&nl, ICFAB_CMD_FABRIC_GET, 0, 0),
			       parse_generation, &gen);
	m = icfab_nl_msg(&nl, ICFAB_CMD_LINK_SET, 0, 0);
	if (!ret && m && !nla_put_u32(m, ICFAB_A_LINK_ID, id) &&
	    !nla_put_u32(m, ICFAB_A_LINK_STATE, st) &&
	    (!colon || !nla_put_u32(m, ICFAB_A_LINK_BW_PERMILLE, permille))) {
		ret = icfab_nl_request(&nl, m, NULL, NULL);
		m = NULL;
		if (!ret) {
			struct nl_msg *c = icfab_nl_msg(&nl, ICFAB_CMD_FABRIC_COMMIT,
							0, 0);

			if (c && nla_put_u64(c, ICFAB_A_FABRIC_GENERATION, gen)) {
				nlmsg_free(c);
				c = NULL;
			}
			ret = c ? icfab_nl_request(&nl, c, NULL, NULL) : -ENOMEM;
		}
	} else if (!ret) {
		ret = -ENOMEM;
	}
	if (m)
		nlmsg_free(m);
	if (ret) {
		fprintf(stderr, "icfabd: link %u %s: %s\n", id, o->file,
			icfab_nl_strerror(&nl, ret, err, sizeof(err)));
		/* Drops what we staged; harmless when it was somebody else's. */
		icfab_nl_close(&nl);
		return EXIT_INVALID;
	}
	printf("link %u %s: generation %llu -> %llu\n", id, o->file,
	       (unsigned long long)gen, (unsigned long long)gen + 1);
	icfab_nl_close(&nl);
	return 0;
}

static int cmd_status(const struct icfabd_opts *o)
{
	struct fabric_route_check rc;
	struct fabric_state st;
	struct icfab_nl nl;
	char mem[32];
	int ret;

	if (read_module(o, &nl, &st))
		return EXIT_INVALID;
	icfab_nl_close(&nl);
	ret = fabric_route_check(&st, &rc);
	if (!ret) {
		printf("generation %llu: %u endpoints, %u switches, %u links (%u down, %u degraded), segment size %u, table memory %s (%llu bytes)%s\n",
		       (unsigned long long)st.generation,
		       st.topo->nr_endpoints, st.topo->nr_switches,
		       st.topo->nr_links, rc.links_down, rc.links_degraded,
		       st.topo->segment_size,
		       topo_fmt_size(mem, sizeof(mem), st.mem_bytes),
		       (unsigned long long)st.mem_bytes,
		       st.has_staged ? ", a configuration is being staged" : "");
		printf("routes: %llu endpoint pairs, %llu unreachable, %llu entries leave by a down link, %llu by a port without a link\n",
		       (unsigned long long)rc.pairs,
		       (unsigned long long)rc.unreachable,
		       (unsigned long long)rc.via_down,
		       (unsigned long long)rc.via_nothing);
	}
	fabric_state_free(&st);
	return ret ? EXIT_INVALID : 0;
}

static int set_mode(struct icfabd_opts *o, enum icfabd_mode m)
{
	if (o->mode != MODE_NONE && o->mode != m) {
		fputs("icfabd: --check, --dump, --list-presets, --apply, --diff and --link-state exclude each other\n",
		      stderr);
		return -1;
	}
	o->mode = m;
	return 0;
}

/* The options that choose a mode; two different ones exclude each other. */
static const struct {
	int opt;
	enum icfabd_mode mode;
} mode_options[] = {
	{ 'c', MODE_CHECK },
	{ 'd', MODE_DUMP },
	{ 'l', MODE_LIST_PRESETS },
	{ 'a', MODE_APPLY },
	{ 'D', MODE_DIFF },
	{ 'L', MODE_LINK_STATE },
	{ 's', MODE_STATUS },
};

/* 1 if option @c chose a mode, 0 if it is no mode option, -1 if it conflicts. */
static int mode_option(struct icfabd_opts *o, int c)
{
	for (size_t i = 0; i < sizeof(mode_options) / sizeof(mode_options[0]); i++)
		if (mode_options[i].opt == c)
			return set_mode(o, mode_options[i].mode) ? -1 : 1;
	return 0;
}

/* Seconds with up to three decimals ("0.5"), as ms; 0 .. one day. */
static int parse_seconds_ms(const char *s, uint32_t *ms)
{
	uint32_t whole = 0, frac = 0, scale = 1000;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 86400)
			return -ERANGE;
	}
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			if (scale == 1)
				return -EINVAL;		/* finer than a ms */
			scale /= 10;
			frac += (*p - '0') * scale;
		}
	}
	if (*p)
		return -EINVAL;
	*ms = whole * 1000 + frac;
	return *ms > 86400000 ? -ERANGE : 0;
}

/* --max-clients, --max-per-uid, --admin-slots, --idle-timeout, --line-timeout */
static int parse_socket_opt(struct icfabd_opts *o, int c,
			    const struct option *longopts, const char *arg)
{
	const char *name = "", *why = NULL;
	uint32_t *u32 = NULL, *ms = NULL;
	int ret;

	for (; longopts->name; longopts++)
		if (longopts->val == c)
			name = longopts->name;
	switch (c) {
	case OPT_MAX_CLIENTS:
		u32 = &o->limits.max_clients;
		break;
	case OPT_MAX_PER_UID:
		u32 = &o->limits.max_per_uid;
		break;
	case OPT_ADMIN_SLOTS:
		u32 = &o->limits.admin_slots;
		break;
	case OPT_IDLE_TIMEOUT:
		ms = &o->idle_timeout_ms;
		break;
	default:
		ms = &o->line_timeout_ms;
		break;
	}
	o->socket_opts = true;
	if (u32 && topo_parse_u32(arg, u32, &why)) {
		fprintf(stderr, "icfabd: --%s %s: %s\n", name, arg, why);
		return -1;
	}
	if (ms && (ret = parse_seconds_ms(arg, ms))) {
		fprintf(stderr, "icfabd: --%s %s: %s\n", name, arg,
			ret == -ERANGE ? "at most 86400 seconds" :
			"expected seconds, e.g. 30 or 0.5 (at most 3 decimals)");
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct icfabd_opts *o)
{
	static const struct option longopts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "dump", no_argument, NULL, 'd' },
		{ "preset", required_argument, NULL, 'p' },
		{ "routes", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "yaml", no_argument, NULL, 'y' },
		{ "list-presets", no_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "apply", no_argument, NULL, 'a' },
		{ "diff", no_argument, NULL, 'D' },
		{ "link-state", required_argument, NULL, 'L' },
		{ "config", required_argument, NULL, 'C' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "daemon", no_argument, NULL, 'b' },
		{ "fabric", required_argument, NULL, 'F' },
		{ "status", no_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "admin-group", required_argument, NULL, 'G' },
		{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
		{ "max-per-uid", required_argument, NULL, OPT_MAX_PER_UID },
		{ "admin-slots", required_argument, NULL, OPT_ADMIN_SLOTS },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ "line-timeout", required_argument, NULL, OPT_LINE_TIMEOUT },
		{ NULL, 0, NULL, 0 }
	};
	const char *why;
	int c;

	while ((c = getopt_long(argc, argv, "cdp:rjylvhaDL:C:fbF:sS:G:", longopts,
				NULL)) != -1) {
		int mode = mode_option(o, c);

		if (mode < 0)
			return -1;
		if (mode && c != 'L')
			continue;
		switch (c) {
		case 'L':
			o->link = optarg;
			break;
		case 'C':
			o->config = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'S':
			o->socket = optarg;
			break;
		case 'G':
			o->admin_group = optarg;
			break;
		case OPT_MAX_CLIENTS:
		case OPT_MAX_PER_UID:
		case OPT_ADMIN_SLOTS:
		case OPT_IDLE_TIMEOUT:
		case OPT_LINE_TIMEOUT:
			if (parse_socket_opt(o, c, longopts, optarg))
				return -1;
			break;
		case 'b':
			o->fork = true;
			break;
		case 'F':
			if (topo_parse_u32(optarg, &o->fabric_id, &why)) {
				fprintf(stderr, "icfabd: --fabric %s: %s\n",
					optarg, why);
				return -1;
			}
			break;
		case 'p':
			o->preset = optarg;
			break;
		case 'r':
			o->dump_flags |= TOPO_DUMP_ROUTES;
			break;
		case 'j':
			o->dump_flags |= TOPO_DUMP_JSON;
			break;
		case 'y':
			o->yaml = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind < argc)
		o->file = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "icfabd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* Which mode needs what; the answer to "is this command line sensible". */
static int validate_args(const struct icfabd_opts *o)
{
	bool daemon = o->mode == MODE_NONE;
	bool no_topo = o->mode == MODE_LIST_PRESETS ||
		       o->mode == MODE_LINK_STATE || o->mode == MODE_STATUS;
	char limits_why[128];
	const char *why = NULL;

	if (daemon && o->file)
		why = "the daemon takes its topology with --config FILE";
	else if (daemon && o->config && o->preset)
		why = "give one of --config FILE or --preset NAME";
	else if (!daemon && (o->config || o->foreground || o->fork ||
			     o->socket || o->admin_group || o->socket_opts))
		why = "--config, --foreground, --daemon, --socket, --admin-group and the socket's limits and timeouts are for the daemon (no mode)";
	else if (o->foreground && o->fork)
		why = "--foreground and --daemon exclude each other";
	else if (o->mode == MODE_LINK_STATE && (!o->file || o->preset))
		why = "--link-state ID up|down|degraded:PERMILLE";
	else if ((o->mode == MODE_LIST_PRESETS || o->mode == MODE_STATUS) &&
		 (o->file || o->preset))
		why = "--list-presets and --status take no topology";
	else if (!daemon && !no_topo && !o->file == !o->preset)
		why = "give exactly one of FILE or --preset NAME";
	else if (o->yaml && (o->mode != MODE_DUMP || !o->preset))
		why = "--yaml prints a preset's file: --dump --yaml --preset NAME";
	else if (o->dump_flags && o->mode != MODE_DUMP)
		why = "--routes and --json go with --dump";
	else if (o->preset && !topo_preset_find(o->preset))
		why = "unknown preset (see --list-presets)";
	if (why) {
		fprintf(stderr, "icfabd: %s\n", why);
		return -1;
	}
	if (proto_limits_check(&o->limits, limits_why, sizeof(limits_why))) {
		fprintf(stderr, "icfabd: %s\n", limits_why);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct icfabd_opts o = {
		.mode = MODE_NONE,
		.limits = {
			.max_clients = PROTO_MAX_CLIENTS_DEFAULT,
			.max_per_uid = PROTO_MAX_PER_UID_DEFAULT,
			.admin_slots = PROTO_ADMIN_SLOTS_DEFAULT,
		},
		.idle_timeout_ms = ICFABD_IDLE_TIMEOUT_MS,
		.line_timeout_ms = ICFABD_LINE_TIMEOUT_MS,
	};

	if (parse_args(argc, argv, &o) || validate_args(&o)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	switch (o.mode) {
	case MODE_NONE: {
		struct daemon_opts d = {
			.file = o.config, .preset = o.preset,
			.fabric_id = o.fabric_id, .foreground = o.foreground,
			.fork = o.fork, .verbose = o.verbose,
			.socket_path = o.socket,
			.limits = o.limits,
			.idle_timeout_ms = o.idle_timeout_ms,
			.line_timeout_ms = o.line_timeout_ms,
		};

		if (o.admin_group) {
			struct group *g = getgrnam(o.admin_group);
			uint32_t gid;
			const char *why;

			if (g)
				gid = g->gr_gid;
			else if (topo_parse_u32(o.admin_group, &gid, &why)) {
				fprintf(stderr, "icfabd: --admin-group %s: no such group\n",
					o.admin_group);
				return EXIT_USAGE;
			}
			d.has_admin_gid = true;
			d.admin_gid = gid;
		}

		return daemon_run(&d);
	}
	case MODE_APPLY:
		return cmd_apply(&o);
	case MODE_DIFF:
		return cmd_diff(&o);
	case MODE_LINK_STATE:
		return cmd_link_state(&o);
	case MODE_STATUS:
		return cmd_status(&o);
	case MODE_CHECK:
		return cmd_check(&o);
	case MODE_DUMP:
		return cmd_dump(&o);
	case MODE_LIST_PRESETS:
		return cmd_list_presets();
	default:
		return EXIT_USAGE;
	}
}
