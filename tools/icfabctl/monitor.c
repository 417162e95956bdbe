// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl monitor: print the notifications of the "events" group.
 */
#include <errno.h>
#include <inttypes.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "icfabctl.h"

static void print_u32(const char *key, struct nlattr *a)
{
	if (a)
		printf(" %s %" PRIu32, key, nla_get_u32(a));
}

/*
 * One line per FABRIC_NTF:
 *	fabric 0 (icfab0) generation 3: time-mode paced segment-size 4096
 *		dilation 10 endpoints 8 switches 0 links 16 clock 0ps (one line)
 */
static void print_fabric_ntf(struct nlattr **tb)
{
	struct nlattr *a;
	const char *mode;

	printf("fabric ");
	if (tb[ICFAB_A_FABRIC_ID])
		printf("%" PRIu32, nla_get_u32(tb[ICFAB_A_FABRIC_ID]));
	else
		printf("?");
	if (tb[ICFAB_A_FABRIC_NAME])
		printf(" (%s)", (char *)nla_data(tb[ICFAB_A_FABRIC_NAME]));
	if (tb[ICFAB_A_FABRIC_GENERATION])
		printf(" generation %" PRIu64,
		       (uint64_t)nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]));
	putchar(':');

	a = tb[ICFAB_A_FABRIC_TIME_MODE];
	if (a) {
		mode = icfabctl_time_mode_name(nla_get_u32(a));
		if (mode)
			printf(" time-mode %s", mode);
		else
			printf(" time-mode %" PRIu32, nla_get_u32(a));
	}
	print_u32("segment-size", tb[ICFAB_A_FABRIC_SEGMENT_SIZE]);
	print_u32("dilation", tb[ICFAB_A_FABRIC_DILATION]);
	print_u32("endpoints", tb[ICFAB_A_FABRIC_NR_ENDPOINTS]);
	print_u32("switches", tb[ICFAB_A_FABRIC_NR_SWITCHES]);
	print_u32("links", tb[ICFAB_A_FABRIC_NR_LINKS]);
	if (tb[ICFAB_A_FABRIC_NOW_PS])
		printf(" clock %" PRIu64 "ps",
		       (uint64_t)nla_get_u64(tb[ICFAB_A_FABRIC_NOW_PS]));
	putchar('\n');
}

static int event_cb(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gnlh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct icfabctl *ctl = arg;
	struct icfab_json j;

	if (icfabctl_fabric_parse(msg, tb)) {
		icfabctl_warn("monitor: malformed event (cmd %u) ignored",
			      gnlh->cmd);
		return NL_SKIP;
	}

	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		if (gnlh->cmd == ICFAB_CMD_FABRIC_NTF)
			json_string(&j, "event", "fabric");
		else
			json_u64(&j, "cmd", gnlh->cmd);
		icfabctl_fabric_json(&j, msg, tb);
		json_end_object(&j);
	} else if (gnlh->cmd == ICFAB_CMD_FABRIC_NTF) {
		print_fabric_ntf(tb);
	} else {
		printf("unknown event: cmd %u\n", gnlh->cmd);
	}
	fflush(stdout);
	return NL_OK;
}

static int cmd_monitor(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		       int argc, char **argv)
{
	struct icfab_nl nl;
	int grp, err, ret;

	(void)argv;
	if (argc)
		return icfabctl_usage_error(cmd, "monitor takes no arguments");

	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;

	grp = genl_ctrl_resolve_grp(nl.sk, ICFAB_GENL_NAME,
				    ICFAB_GENL_MCGRP_EVENTS);
	if (grp < 0) {
		icfabctl_warn("multicast group \"%s\": %s",
			      ICFAB_GENL_MCGRP_EVENTS, nl_geterror(grp));
		goto err;
	}
	err = nl_socket_add_membership(nl.sk, grp);
	if (err < 0) {
		icfabctl_warn("joining multicast group \"%s\": %s",
			      ICFAB_GENL_MCGRP_EVENTS, nl_geterror(err));
		goto err;
	}

	/* Notifications carry no sequence number of ours. */
	nl_socket_disable_seq_check(nl.sk);
	nl_socket_modify_cb(nl.sk, NL_CB_VALID, NL_CB_CUSTOM, event_cb, ctl);

	for (;;) {
		err = nl_recvmsgs_default(nl.sk);
		if (err == -NLE_NOMEM) {
			/* ENOBUFS: the socket's receive buffer overflowed. */
			icfabctl_warn("monitor: events were lost");
			continue;
		}
		if (err < 0 && err != -NLE_INTR && err != -NLE_AGAIN) {
			icfabctl_warn("monitor: %s", nl_geterror(err));
			goto err;
		}
	}

err:
	icfab_nl_close(&nl);
	return ICFABCTL_EXIT_ERROR;
}

ICFABCTL_COMMAND(NULL, "monitor", NULL, cmd_monitor,
		 "Print every event of the \"events\" multicast group "
		 "(one line per FABRIC_NTF) until interrupted.");
