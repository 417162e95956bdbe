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

#include "icfabctl.h"

int icfabctl_nl_open(struct icfab_nl *nl)
{
	int err = icfab_nl_open(nl, 0);

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
		name = icfabctl_fabric_attr_name(ne.bad_attr);
		if (name)
			icfabctl_warn("offending attribute: %s", name);
		else
			icfabctl_warn("offending attribute: %d", ne.bad_attr);
	}
	icfabctl_fail(ne.err < 0 ? -ne.err : EPROTO, "%s", what);
	if (ne.err == -EPERM)
		icfabctl_warn("this needs CAP_NET_ADMIN");
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
