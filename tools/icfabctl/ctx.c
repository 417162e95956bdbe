// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl ctx list|evict: who holds virtual time (CTX_GET, CTX_EVICT).
 *
 *	icfabctl [-f FABRIC] [-j] ctx list
 *	icfabctl [-f FABRIC] ctx evict ID
 *
 * Every attached context holds the engine back at its clock until it
 * waits; one that never waits stalls every other. The list says which
 * one holds it now and for how long in wall time; an admin may end it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/genl.h>

#include "icfabctl.h"

struct ctx_row {
	uint32_t id, pid, uid, nr_eps, first_ep, state;
	uint64_t clock_ps, held_ns;
};

struct ctxs {
	struct ctx_row *c;
	uint32_t n, cap;
};

static struct nla_policy ctx_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_PID]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_UID]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_ENDPOINTS]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_FIRST_ENDPOINT]	= { .type = NLA_U32 },
	[ICFAB_A_CTX_CLOCK_PS]		= { .type = NLA_U64 },
	[ICFAB_A_CTX_STATE]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_HELD_NS]		= { .type = NLA_U64 },
};

static int ctx_valid(struct nl_msg *msg, void *arg)
{
	static const int need[] = {
		ICFAB_A_CTX_ID, ICFAB_A_CTX_PID, ICFAB_A_CTX_UID,
		ICFAB_A_CTX_ENDPOINTS, ICFAB_A_CTX_FIRST_ENDPOINT,
		ICFAB_A_CTX_CLOCK_PS, ICFAB_A_CTX_STATE, ICFAB_A_CTX_HELD_NS,
	};
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gnlh = nlmsg_data(nlh);
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct ctxs *cs = arg;
	struct ctx_row *c;
	size_t i;

	if (!genlmsg_valid_hdr(nlh, 0) || gnlh->cmd != ICFAB_CMD_CTX_GET)
		return 0;
	if (genlmsg_parse(nlh, 0, tb, ICFAB_A_MAX, ctx_policy) < 0)
		return -EBADMSG;
	for (i = 0; i < ARRAY_SIZE(need); i++)
		if (!tb[need[i]])
			return -EBADMSG;
	if (icfab_array_grow((void **)&cs->c, &cs->cap, cs->n, sizeof(*cs->c),
			     16))
		return -ENOMEM;
	c = &cs->c[cs->n++];
	c->id = nla_get_u32(tb[ICFAB_A_CTX_ID]);
	c->pid = nla_get_u32(tb[ICFAB_A_CTX_PID]);
	c->uid = nla_get_u32(tb[ICFAB_A_CTX_UID]);
	c->nr_eps = nla_get_u32(tb[ICFAB_A_CTX_ENDPOINTS]);
	c->first_ep = nla_get_u32(tb[ICFAB_A_CTX_FIRST_ENDPOINT]);
	c->clock_ps = nla_get_u64(tb[ICFAB_A_CTX_CLOCK_PS]);
	c->state = nla_get_u32(tb[ICFAB_A_CTX_STATE]);
	c->held_ns = nla_get_u64(tb[ICFAB_A_CTX_HELD_NS]);
	return 0;
}

static void ctxs_forget(void *arg)
{
	((struct ctxs *)arg)->n = 0;
}

/* "holds", "waiting", "free-run", "receiver", "ended": the state bits. */
static const struct {
	uint32_t bit;
	const char *name;
} ctx_states[] = {
	{ ICFAB_CTX_HOLDS, "holds" },
	{ ICFAB_CTX_WAITING, "waiting" },
	{ ICFAB_CTX_FREE_RUN, "free-run" },
	{ ICFAB_CTX_RECEIVER, "receiver" },
	{ ICFAB_CTX_DEAD, "ended" },
};

static void ctx_print(struct icfabctl *ctl, const struct ctxs *cs)
{
	struct icfab_json j;
	char b1[32], b2[32];
	uint32_t i;
	size_t k;

	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_u64(&j, "fabric", ctl->fabric);
		json_begin_array(&j, "contexts");
		for (i = 0; i < cs->n; i++) {
			const struct ctx_row *c = &cs->c[i];

			json_begin_object(&j, NULL);
			json_u64(&j, "id", c->id);
			json_u64(&j, "pid", c->pid);
			json_u64(&j, "uid", c->uid);
			json_u64(&j, "endpoints", c->nr_eps);
			json_u64(&j, "first_endpoint", c->first_ep);
			json_u64(&j, "clock_ps", c->clock_ps);
			json_u64(&j, "held_ns", c->held_ns);
			json_begin_array(&j, "state");
			for (k = 0; k < ARRAY_SIZE(ctx_states); k++)
				if (c->state & ctx_states[k].bit)
					json_string(&j, NULL,
						    ctx_states[k].name);
			json_end_array(&j);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
		putchar('\n');
		return;
	}
	if (!cs->n) {
		printf("no contexts attached\n");
		return;
	}
	printf("%6s  %8s  %6s  %9s  %12s  %12s  %s\n", "id", "pid", "uid",
	       "endpoints", "clock", "held for", "state");
	for (i = 0; i < cs->n; i++) {
		const struct ctx_row *c = &cs->c[i];
		const char *sep = "";

		printf("%6" PRIu32 "  %8" PRIu32 "  %6" PRIu32 "  %4" PRIu32
		       " from %-3" PRIu32 "  %12s  %12s  ",
		       c->id, c->pid, c->uid, c->nr_eps, c->first_ep,
		       icfabctl_fmt_latency(b1, sizeof(b1), c->clock_ps),
		       c->state & ICFAB_CTX_HOLDS ?
		       icfabctl_fmt_latency(b2, sizeof(b2),
					    c->held_ns * 1000) : "-");
		for (k = 0; k < ARRAY_SIZE(ctx_states); k++) {
			if (!(c->state & ctx_states[k].bit))
				continue;
			printf("%s%s", sep, ctx_states[k].name);
			sep = ",";
		}
		printf("%s\n", *sep ? "" : "running");
	}
}

static int cmd_ctx_list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			int argc, char **argv)
{
	struct ctxs cs = { 0 };
	const struct icfabctl_dump d = {
		.cmd = ICFAB_CMD_CTX_GET, .node = -1, .valid = ctx_valid,
		.arg = &cs, .reset = ctxs_forget, .what = "ctx list",
	};
	struct icfab_nl nl;
	int ret;

	(void)argv;
	if (argc)
		return icfabctl_usage_error(cmd, "too many arguments");
	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;
	ret = icfabctl_dump(ctl, &nl, &d);
	if (!ret)
		ctx_print(ctl, &cs);
	free(cs.c);
	icfab_nl_close(&nl);
	return ret;
}

ICFABCTL_COMMAND("ctx", "list", NULL, cmd_ctx_list,
		 "The contexts attached to the fabric (CTX_GET): id, owner "
		 "pid and uid, endpoints, virtual clock, state, and how long "
		 "the one holding the engine back has held it, in wall time.");

static int cmd_ctx_evict(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	struct icfab_nl nl;
	struct nl_msg *msg;
	uint32_t id;
	int ret;

	if (argc != 1)
		return icfabctl_usage_error(cmd, "needs the context's ID");
	if (icfabctl_parse_u32(argv[0], &id) || !id)
		return icfabctl_usage_error(cmd, "bad context id '%s'",
					    argv[0]);
	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;
	msg = icfab_nl_msg(&nl, ICFAB_CMD_CTX_EVICT, 0, 0);
	if (!msg || nla_put_u32(msg, ICFAB_A_CTX_ID, id) < 0) {
		nlmsg_free(msg);
		icfab_nl_close(&nl);
		return icfabctl_fail(ENOMEM, "ctx evict");
	}
	ret = icfabctl_nl_transact(&nl, msg, NULL, NULL, "ctx evict");
	icfab_nl_close(&nl);
	return ret;
}

ICFABCTL_COMMAND("ctx", "evict", "ID", cmd_ctx_evict,
		 "End context ID as its owner's exit would (CTX_EVICT, "
		 "CAP_NET_ADMIN): its io_uring commands and queued "
		 "descriptors complete with -ECANCELED and it no longer "
		 "holds the engine back.");
