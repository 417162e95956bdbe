// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl stats: per-link statistics (STATS_GET, STATS_RESET).
 *
 *	icfabctl [-f FABRIC] [-j] stats
 *	icfabctl [-f FABRIC] stats reset
 *
 * Counters run from the last reset, or the last commit of a new
 * configuration, whichever came later, and outlive the engine. With
 * ICFAB_F_LINK_ENERGY the module also reports each link's energy, which
 * is summed here per link class, per memory tier (ICFAB_F_MEMORY_TIERS:
 * a tier's port counts under its kind, sram, hbm or ddr) and in total.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/genl.h>

#include <icfab/names.h>

#include "icfabctl.h"

struct link_stats {
	uint32_t id;
	uint32_t class;			/* enum icfab_link_class */
	uint32_t tier;			/* enum icfab_tier: a tier's port */
	uint64_t bytes, segments, busy_ps, max_queued_ps;
	uint64_t energy_fj, static_fj;	/* fJ */
};

struct stats {
	struct link_stats *links;
	uint32_t nr, cap;
	uint64_t generation;
	bool incomplete;
	bool inconsistent;	/* replies from two generations */
	bool energy;		/* the module reports energy */
	uint64_t elapsed_ps;	/* ps of fabric time the counters cover */
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
	[ICFAB_A_LINK_CLASS]		= { .type = NLA_U32 },
	[ICFAB_A_STATS_ENERGY_FJ]	= { .type = NLA_U64 },
	[ICFAB_A_STATS_STATIC_FJ]	= { .type = NLA_U64 },
	[ICFAB_A_STATS_ELAPSED_PS]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_TIER]		= { .type = NLA_U8 },
};

/* "sram", "hbm", "ddr" for a tier's port (ICFAB_F_MEMORY_TIERS). */
static const char *tier_name(uint32_t tier)
{
	return tier < ICFAB_NAMES_LEN(icfab_tier_names) ?
	       icfab_tier_names[tier] : "?";
}

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
	l->class = tb[ICFAB_A_LINK_CLASS] ?
		   nla_get_u32(tb[ICFAB_A_LINK_CLASS]) : ICFAB_LINK_CLASS_OTHER;
	l->tier = tb[ICFAB_A_LINK_TIER] ? nla_get_u8(tb[ICFAB_A_LINK_TIER]) : 0;
	l->energy_fj = l->static_fj = 0;
	if (tb[ICFAB_A_STATS_ENERGY_FJ] && tb[ICFAB_A_STATS_STATIC_FJ] &&
	    tb[ICFAB_A_STATS_ELAPSED_PS]) {
		s->energy = true;
		l->energy_fj = nla_get_u64(tb[ICFAB_A_STATS_ENERGY_FJ]);
		l->static_fj = nla_get_u64(tb[ICFAB_A_STATS_STATIC_FJ]);
		s->elapsed_ps = nla_get_u64(tb[ICFAB_A_STATS_ELAPSED_PS]);
	}
	return 0;
}

static void stats_forget(void *arg)
{
	struct stats *s = arg;

	s->nr = 0;
	s->incomplete = s->inconsistent = s->energy = false;
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

/* Energy summed per group (icfabctl_energy_row()): E_ROWS of them. */
struct energy_sum {
	uint64_t bytes;
	uint64_t energy_fj, static_fj;	/* fJ, saturating */
	uint32_t links;
};

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void energy_sum(const struct stats *s, struct energy_sum *sum)
{
	uint32_t i;

	memset(sum, 0, sizeof(*sum) * E_ROWS);
	for (i = 0; i < s->nr; i++) {
		const struct link_stats *l = &s->links[i];
		struct energy_sum *e[2] = {
			&sum[icfabctl_energy_row(l->class, l->tier)],
			&sum[E_TOTAL] };
		int k;

		for (k = 0; k < 2; k++) {
			e[k]->bytes = add_sat(e[k]->bytes, l->bytes);
			e[k]->energy_fj = add_sat(e[k]->energy_fj, l->energy_fj);
			e[k]->static_fj = add_sat(e[k]->static_fj, l->static_fj);
			e[k]->links++;
		}
	}
}

/* Joules from femtojoules, as text: exact to the fJ, trailing zeros cut. */
static char *fmt_joules(char *buf, size_t len, uint64_t fj)
{
	const uint64_t fj_per_j = 1000000000000000ULL;
	char frac[16];
	size_t n;

	if (fj == UINT64_MAX) {
		snprintf(buf, len, "overflow");
		return buf;
	}
	snprintf(frac, sizeof(frac), "%015" PRIu64, fj % fj_per_j);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "%" PRIu64 ".%s", fj / fj_per_j, frac);
	return buf;
}

/* One group of energy_sum(), as an object of "classes" or "tiers". */
static void energy_row_json(struct icfab_json *j, const struct energy_sum *e,
			    const char *key, const char *name)
{
	json_begin_object(j, NULL);
	json_string(j, key, name);
	json_u64(j, "links", e->links);
	json_u64(j, "bytes", e->bytes);
	json_u64(j, "energy_fj", e->energy_fj);
	json_u64(j, "static_fj", e->static_fj);
	json_end_object(j);
}

static void energy_json(struct icfab_json *j, const struct stats *s)
{
	struct energy_sum sum[E_ROWS];
	const struct energy_sum *t = &sum[E_TOTAL];
	uint32_t r;

	energy_sum(s, sum);
	json_begin_object(j, "energy");
	json_u64(j, "elapsed_ps", s->elapsed_ps);
	json_begin_array(j, "classes");
	for (r = 0; r <= ICFAB_LINK_CLASS_MAX; r++)
		if (sum[r].links)
			energy_row_json(j, &sum[r], "class",
					icfabctl_energy_row_name(r, true));
	json_end_array(j);
	json_begin_array(j, "tiers");
	for (r = E_TIER(ICFAB_TIER_SRAM); r < E_TOTAL; r++)
		if (sum[r].links)
			energy_row_json(j, &sum[r], "tier",
					icfabctl_energy_row_name(r, true));
	json_end_array(j);
	json_u64(j, "energy_fj", t->energy_fj);
	json_u64(j, "static_fj", t->static_fj);
	json_u64(j, "total_fj", add_sat(t->energy_fj, t->static_fj));
	json_end_object(j);
}

static void energy_print(const struct stats *s)
{
	struct energy_sum sum[E_ROWS];
	char b1[32], b2[32], b3[32], b4[32];
	uint32_t c;

	energy_sum(s, sum);
	printf("energy over %s of fabric time (joules):\n",
	       icfabctl_fmt_latency(b1, sizeof(b1), s->elapsed_ps));
	printf("%-9s  %6s  %12s  %20s  %20s  %20s\n", "class", "links",
	       "bytes", "per-bit", "static", "total");
	for (c = 0; c < E_ROWS; c++) {
		const struct energy_sum *e = &sum[c];

		if (!e->links)
			continue;
		printf("%-9s  %6" PRIu32 "  %12s  %20s  %20s  %20s\n",
		       icfabctl_energy_row_name(c, false),
		       e->links, icfabctl_fmt_bytes(b1, sizeof(b1), e->bytes),
		       fmt_joules(b2, sizeof(b2), e->energy_fj),
		       fmt_joules(b3, sizeof(b3), e->static_fj),
		       fmt_joules(b4, sizeof(b4),
				  add_sat(e->energy_fj, e->static_fj)));
	}
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
			if (l->tier)
				json_string(&j, "tier", tier_name(l->tier));
			if (s->energy) {
				json_string(&j, "class",
					    l->class <= ICFAB_LINK_CLASS_MAX ?
					    icfab_class_names[l->class] : "?");
				json_u64(&j, "energy_fj", l->energy_fj);
				json_u64(&j, "static_fj", l->static_fj);
			}
			json_end_object(&j);
		}
		json_end_array(&j);
		if (s->energy)
			energy_json(&j, s);
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

		/* A tier's port says which tier after its figures. */
		printf("%6" PRIu32 "  %12s  %10" PRIu64 "  %12s  %12s%s%s\n",
		       l->id, icfabctl_fmt_bytes(b1, sizeof(b1), l->bytes),
		       l->segments,
		       icfabctl_fmt_latency(b2, sizeof(b2), l->busy_ps),
		       icfabctl_fmt_latency(b3, sizeof(b3), l->max_queued_ps),
		       l->tier ? "  tier " : "",
		       l->tier ? tier_name(l->tier) : "");
	}
	if (s->energy)
		energy_print(s);
}

static int stats_reset(struct icfab_nl *nl)
{
	struct nl_msg *msg = icfab_nl_msg(nl, ICFAB_CMD_STATS_RESET, 0, 0);

	if (!msg)
		return icfabctl_fail(ENOMEM, "stats reset");
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
	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;
	if (argc == 1) {
		ret = stats_reset(&nl);
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
		 "Show per-link bytes, busy time and longest queueing delay, "
		 "and the joules per link class, per memory tier and in total; "
		 "'reset' zeroes them (CAP_NET_ADMIN).");
