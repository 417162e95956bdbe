// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl's side of the netlink client (lib/nl.c): opening it with
 * messages for the user, and showing how a request failed, with the
 * place an icfab cookie names resolved to node names.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <linux/icfab_genl.h>

#include <icfab/names.h>

#include "icfabctl.h"

int icfabctl_nl_open(struct icfab_nl *nl, uint32_t fabric)
{
	int err = icfab_nl_open(nl, fabric);

	if (err == -ENOMEM)
		return icfabctl_fail(ENOMEM, "netlink socket");
	if (err == -ENOENT && nl->last.nl_err == -NLE_OBJ_NOTFOUND)
		icfabctl_warn("generic netlink family \"%s\": not found (icfab module not loaded?)",
			      ICFAB_GENL_NAME);
	else if (err == -ENOENT)
		icfabctl_warn("generic netlink family \"%s\": %s",
			      ICFAB_GENL_NAME, nl_geterror(nl->last.nl_err));
	else if (err)
		icfabctl_warn("generic netlink: %s", nl_geterror(nl->last.nl_err));
	return err ? ICFABCTL_EXIT_ERROR : ICFABCTL_EXIT_OK;
}

void icfabctl_nl_report(struct icfab_nl *nl, const char *what)
{
	struct icfab_nl_err ne = nl->last;	/* locating overwrites it */
	char where[256] = "";
	const char *name;

	if (ne.transport) {
		icfabctl_warn("%s: %s: %s", what, ne.transport,
			      nl_geterror(ne.nl_err));
		return;
	}
	if (ne.has_cookie && ne.cookie.obj != ICFAB_ERR_OBJ_NONE)
		icfabctl_err_location(nl, &ne.cookie, where, sizeof(where));
	if (ne.msg[0])
		icfabctl_warn("kernel reports: %s%s%s%s", ne.msg,
			      where[0] ? " (" : "", where, where[0] ? ")" : "");
	else if (where[0])
		icfabctl_warn("kernel reports a problem with %s", where);
	if (ne.bad_attr) {
		name = icfab_attr_name(ne.bad_attr);
		if (name)
			icfabctl_warn("offending attribute: %s", name);
		else
			icfabctl_warn("offending attribute: %d", ne.bad_attr);
	}
	icfabctl_fail(ne.err < 0 ? -ne.err : EPROTO, "%s", what);
	if (ne.err == -EPERM)
		icfabctl_warn("this needs CAP_NET_ADMIN");
}

#define DUMP_ATTEMPTS	5	/* dumps that spanned a change, in a row */

struct dump_run {
	struct icfabctl *ctl;
	struct icfab_nl *nl;
	const struct icfabctl_dump *d;
	bool nomem;			/* the request could not be built */
};

/* One attempt for icfab_nl_read_consistent(): -EINTR when inconsistent. */
static int dump_attempt(void *arg)
{
	struct dump_run *r = arg;
	const struct icfabctl_dump *d = r->d;
	struct nl_msg *msg = icfab_nl_genlmsg(r->nl, d->cmd, NLM_F_DUMP, 0);
	int ret;

	if (!msg || nla_put_u32(msg, ICFAB_A_FABRIC_ID, r->ctl->fabric) ||
	    (d->node >= 0 && nla_put_u32(msg, ICFAB_A_NODE_ID, d->node))) {
		nlmsg_free(msg);
		r->nomem = true;
		return -ENOMEM;
	}
	if (d->reset)
		d->reset(d->arg);
	if (d->parse)
		ret = icfab_nl_request(r->nl, msg, d->parse, d->arg);
	else
		ret = icfab_nl_exchange(r->nl, msg, d->valid, d->arg);
	if (!ret && (r->nl->dump_intr ||
		     (d->inconsistent && d->inconsistent(d->arg))))
		return -EINTR;
	return ret;
}

int icfabctl_dump(struct icfabctl *ctl, struct icfab_nl *nl,
		  const struct icfabctl_dump *d)
{
	struct dump_run r = { .ctl = ctl, .nl = nl, .d = d };
	int ret;

	ret = icfab_nl_read_consistent(dump_attempt, &r, DUMP_ATTEMPTS);
	if (!ret)
		return ICFABCTL_EXIT_OK;
	if (r.nomem)
		return icfabctl_fail(ENOMEM, "%s", d->what);
	if (ret == -EINTR) {
		icfabctl_warn("%s: %s", d->what, d->kept_changing);
		return ICFABCTL_EXIT_ERROR;
	}
	icfabctl_nl_report(nl, d->what);
	return ICFABCTL_EXIT_ERROR;
}

int icfabctl_nl_transact(struct icfab_nl *nl, struct nl_msg *msg,
			 int (*valid)(struct nl_msg *msg, void *arg),
			 void *arg, const char *what)
{
	if (!icfab_nl_exchange(nl, msg, valid, arg))
		return ICFABCTL_EXIT_OK;
	icfabctl_nl_report(nl, what);
	return ICFABCTL_EXIT_ERROR;
}
