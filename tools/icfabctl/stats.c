// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl stats: per-link statistics (STATS_GET, STATS_RESET).
 *
 *	icfabctl [-f FABRIC] [-j] stats
 *	icfabctl [-f FABRIC] stats reset
 *
 * Counters run from the last reset, or the last commit of a new
 * configuration, whichever came later, and outlive the engine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/genl.h>

#include "icfabctl.h"

struct link_stats {
	uint32_t id;
	uint64_t bytes, segments, busy_ps, max_queued_ps;
};

struct stats {
	struct link_stats *links;
	uint32_t nr, cap;
	uint64_t generation;
	bool incomplete;
	bool inconsistent;	/* replies from two generations */
};

static struct nla_policy stats_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_GENERATION]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_ID]		= { .type = NLA_U32 },
	[ICFAB_A_STATS_BYTES]		= { .type = NLA_U64 },
	[ICFAB_A_STATS_SEGMENTS]	= { .type = NLA_U64 },
	[ICFAB_A_STATS_BUSY_PS]		= { .type = NLA_U64 },
	[ICFAB_A_STATS_MAX_QUEUED_PS]	= { .type = NLA_U64 },
	[ICFAB_A_STATS_INCOMPLETE]	= { .type = NLA_U8 },
};

static int stats_valid(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gnlh = nlmsg_data(nlh);
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct stats *s = arg;
	struct link_stats *l;
	uint64_t gen;

	if (!genlmsg_valid_hdr(nlh, 0) || gnlh->cmd != ICFAB_CMD_STATS_GET)
		return 0;
	if (genlmsg_parse(nlh, 0, tb, ICFAB_A_MAX, stats_policy) < 0 ||
	    !tb[ICFAB_A_FABRIC_GENERATION] || !tb[ICFAB_A_LINK_ID] ||
	    !tb[ICFAB_A_STATS_BYTES] || !tb[ICFAB_A_STATS_SEGMENTS] ||
	    !tb[ICFAB_A_STATS_BUSY_PS] || !tb[ICFAB_A_STATS_MAX_QUEUED_PS])
		return -EBADMSG;
	gen = nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]);
	if (s->nr && gen != s->generation)
		s->inconsistent = true;
	s->generation = gen;
	if (tb[ICFAB_A_STATS_INCOMPLETE] &&
	    nla_get_u8(tb[ICFAB_A_STATS_INCOMPLETE]))
		s->incomplete = true;
	if (icfab_array_grow((void **)&s->links, &s->cap, s->nr,
			     sizeof(*s->links), 64))
		return -ENOMEM;
	l = &s->links[s->nr++];
	l->id = nla_get_u32(tb[ICFAB_A_LINK_ID]);
	l->bytes = nla_get_u64(tb[ICFAB_A_STATS_BYTES]);
	l->segments = nla_get_u64(tb[ICFAB_A_STATS_SEGMENTS]);
	l->busy_ps = nla_get_u64(tb[ICFAB_A_STATS_BUSY_PS]);
	l->max_queued_ps = nla_get_u64(tb[ICFAB_A_STATS_MAX_QUEUED_PS]);
	return 0;
}

static void stats_forget(void *arg)
{
	struct stats *s = arg;

	s->nr = 0;
	s->incomplete = s->inconsistent = false;
}

static bool stats_inconsistent(void *arg)
{
	return ((struct stats *)arg)->inconsistent;
}

/* A dump read from one generation, or a message and an exit code. */
static int stats_read(struct icfabctl *ctl, struct icfab_nl *nl,
		      struct stats *s)
{
	const struct icfabctl_dump d = {
		.cmd = ICFAB_CMD_STATS_GET, .node = -1, .valid = stats_valid,
		.arg = s, .reset = stats_forget,
		.inconsistent = stats_inconsistent, .what = "stats",
		.kept_changing = "the configuration kept changing while it was read; try again",
	};

	return icfabctl_dump(ctl, nl, &d);
}

static void stats_print(struct icfabctl *ctl, const struct stats *s)
{
	struct icfab_json j;
	char b1[32], b2[32], b3[32];
	uint32_t i;

	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_u64(&j, "fabric", ctl->fabric);
		json_u64(&j, "generation", s->generation);
		json_bool(&j, "incomplete", s->incomplete);
		json_begin_array(&j, "links");
		for (i = 0; i < s->nr; i++) {
			const struct link_stats *l = &s->links[i];

			json_begin_object(&j, NULL);
			json_u64(&j, "id", l->id);
			json_u64(&j, "bytes", l->bytes);
			json_u64(&j, "segments", l->segments);
			json_u64(&j, "busy_ps", l->busy_ps);
			json_u64(&j, "max_queued_ps", l->max_queued_ps);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
		return;
	}
	printf("fabric %" PRIu32 " generation %" PRIu64 "%s\n", ctl->fabric,
	       s->generation,
	       s->incomplete ? " (incomplete: out of memory, some traffic went uncounted)" : "");
	printf("%6s  %12s  %10s  %12s  %12s\n", "link", "bytes", "segments",
	       "busy", "max-queue");
	for (i = 0; i < s->nr; i++) {
		const struct link_stats *l = &s->links[i];

		printf("%6" PRIu32 "  %12s  %10" PRIu64 "  %12s  %12s\n",
		       l->id, icfabctl_fmt_bytes(b1, sizeof(b1), l->bytes),
		       l->segments,
		       icfabctl_fmt_latency(b2, sizeof(b2), l->busy_ps),
		       icfabctl_fmt_latency(b3, sizeof(b3), l->max_queued_ps));
	}
}

static int stats_reset(struct icfabctl *ctl, struct icfab_nl *nl)
{
	struct nl_msg *msg;

	msg = icfab_nl_genlmsg(nl, ICFAB_CMD_STATS_RESET, 0, 0);
	if (!msg || nla_put_u32(msg, ICFAB_A_FABRIC_ID, ctl->fabric) < 0) {
		nlmsg_free(msg);
		return icfabctl_fail(ENOMEM, "stats reset");
	}
	return icfabctl_nl_transact(nl, msg, NULL, NULL, "stats reset");
}

static int cmd_stats(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		     int argc, char **argv)
{
	struct stats s = { 0 };
	struct icfab_nl nl;
	int ret;

	if (argc > 1 || (argc == 1 && strcmp(argv[0], "reset")))
		return icfabctl_usage_error(cmd, "unknown argument '%s'",
					    argv[argc > 1]);
	ret = icfabctl_nl_open(&nl);
	if (ret)
		return ret;
	nl.fabric_id = ctl->fabric;
	if (argc == 1) {
		ret = stats_reset(ctl, &nl);
	} else {
		ret = stats_read(ctl, &nl, &s);
		if (!ret)
			stats_print(ctl, &s);
	}
	free(s.links);
	icfab_nl_close(&nl);
	return ret;
}

ICFABCTL_COMMAND(NULL, "stats", "[reset]", cmd_stats,
		 "Show per-link bytes, busy time and longest queueing delay; "
		 "'reset' zeroes them (CAP_NET_ADMIN).");
