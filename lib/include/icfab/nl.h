/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink client of the "icfab" family (lib/nl.c), shared by
 * icfabd and the tools.
 *
 * Errors come back as -errno; the client keeps the kernel's extack text
 * ("kernel reports: ...") and cookie of the last failed request.
 */
#ifndef ICFAB_NL_H
#define ICFAB_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

struct nl_sock;
struct nl_msg;
struct nlattr;

struct icfab_nl {
	struct nl_sock *sk;
	int family;			/* resolved "icfab" family id */
	int events_grp;			/* multicast group id of "events" */
	uint32_t fabric_id;		/* N of /dev/icfabN */
	int last_err;			/* -errno of the last failed request */
	char err_msg[256];		/* the kernel's extack text, or "" */
	bool has_cookie;		/* err_cookie is valid */
	struct icfab_err_cookie err_cookie;
};

/* Called for each message of a reply or dump with its parsed attributes. */
typedef int (*icfab_nl_parse_fn)(struct nlattr **tb, void *arg);

int icfab_nl_open(struct icfab_nl *nl, uint32_t fabric_id);
void icfab_nl_close(struct icfab_nl *nl);
struct nl_msg *icfab_nl_msg(struct icfab_nl *nl, uint8_t cmd, int flags,
			    size_t payload);
int icfab_nl_request(struct icfab_nl *nl, struct nl_msg *msg,
		     icfab_nl_parse_fn fn, void *arg);
int icfab_nl_dump(struct icfab_nl *nl, struct nl_msg *msg,
		  icfab_nl_parse_fn fn, void *arg);
int icfab_nl_subscribe(struct icfab_nl *nl);
int icfab_nl_fd(const struct icfab_nl *nl);
int icfab_nl_recv_events(struct icfab_nl *nl, icfab_nl_parse_fn fn, void *arg);
const char *icfab_nl_strerror(const struct icfab_nl *nl, int err,
			      char *buf, size_t len);

/* ICFAB_IOC_INFO on /dev/icfabN. */
int icfab_dev_info(uint32_t fabric_id, struct icfab_info *info);

#endif /* ICFAB_NL_H */
