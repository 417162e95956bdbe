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

/* How the last request failed. */
struct icfab_nl_err {
	int err;			/* 0 or -errno */
	char msg[256];			/* NLMSGERR_ATTR_MSG, or "" */
	int bad_attr;			/* attribute NLMSGERR_ATTR_OFFS names */
	bool has_cookie;		/* NLMSGERR_ATTR_COOKIE was icfab's */
	struct icfab_err_cookie cookie;
	const char *transport;		/* not the kernel: "sending ..." */
	int nl_err;			/* then: the libnl error (-NLE_*) */
};

struct icfab_nl {
	struct nl_sock *sk;
	int family;			/* resolved "icfab" family id */
	int events_grp;			/* multicast group id of "events" */
	uint32_t fabric_id;		/* N of /dev/icfabN */
	struct icfab_nl_err last;	/* of the last request */
	bool dump_intr;			/* the last dump spanned a change */
};

/* Called for each message of a reply or dump, with the message. */
typedef int (*icfab_nl_valid_fn)(struct nl_msg *msg, void *arg);
/* Called for each message of a reply or dump with its parsed attributes. */
typedef int (*icfab_nl_parse_fn)(struct nlattr **tb, void *arg);

/*
 * -ENOENT when the family is not there (the module is not loaded); the
 * libnl error of a failed step is in nl->last.nl_err.
 */
int icfab_nl_open(struct icfab_nl *nl, uint32_t fabric_id);
void icfab_nl_close(struct icfab_nl *nl);
/* A request for @cmd, @size bytes (0: libnl's default), no attributes. */
struct nl_msg *icfab_nl_genlmsg(struct icfab_nl *nl, uint8_t cmd, int flags,
				size_t size);
/*
 * A request for @cmd on nl->fabric_id, with room for @payload bytes of
 * attributes besides the fabric id.
 */
struct nl_msg *icfab_nl_msg(struct icfab_nl *nl, uint8_t cmd, int flags,
			    size_t payload);
/*
 * Send @msg (consumed) and read the replies to the ACK, DONE or error,
 * calling @valid for each. Returns 0 or -errno, with the details in
 * nl->last (and nl->dump_intr for a dump). A valid() error is returned
 * once the replies have been read to their end.
 */
int icfab_nl_exchange(struct icfab_nl *nl, struct nl_msg *msg,
		      icfab_nl_valid_fn valid, void *arg);
/* The same, @fn called with the attributes (-EPROTO if they do not parse). */
int icfab_nl_request(struct icfab_nl *nl, struct nl_msg *msg,
		     icfab_nl_parse_fn fn, void *arg);
/* A dump: -EINTR when it spanned a change; the caller reads again. */
int icfab_nl_dump(struct icfab_nl *nl, struct nl_msg *msg,
		  icfab_nl_parse_fn fn, void *arg);
int icfab_nl_subscribe(struct icfab_nl *nl);
int icfab_nl_fd(const struct icfab_nl *nl);
int icfab_nl_recv_events(struct icfab_nl *nl, icfab_nl_parse_fn fn, void *arg);
/*
 * "kernel reports: MESSAGE (node 5) (strerror)" when the kernel said why,
 * else the errno's text; EPERM gets the reason people hit it for.
 */
const char *icfab_nl_strerror(const struct icfab_nl *nl, int err,
			      char *buf, size_t len);

/*
 * The dump-retry rule of every reader of the module's configuration: a
 * read whose replies span a change (a dump flagged NLM_F_DUMP_INTR, or
 * replies of two generations), for which @read_once returns -EINTR, is
 * done again from the start, up to @attempts times in all, with a pause
 * of 10 ms times the attempt before each new one so that a configurator
 * in the middle of its staging can finish. Returns what the last
 * @read_once returned: -EINTR when the reads never settled.
 */
int icfab_nl_read_consistent(int (*read_once)(void *arg), void *arg,
			     unsigned int attempts);

/* ICFAB_IOC_INFO on /dev/icfabN. */
int icfab_dev_info(uint32_t fabric_id, struct icfab_info *info);

#endif /* ICFAB_NL_H */
