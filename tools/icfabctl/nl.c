// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl: generic netlink plumbing (libnl-genl-3).
 *
 * Extended ACKs: libnl 3.7 has no helper for them, so NETLINK_EXT_ACK is
 * set on the socket directly and the error callback digs the kernel's
 * message (NLMSGERR_ATTR_MSG) out of the NLMSG_ERROR message itself.
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

int icfabctl_nl_open(struct icfabctl_nl *nl)
{
	int one = 1;
	int err;

	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		return icfabctl_fail(ENOMEM, "netlink socket");

	err = genl_connect(nl->sk);
	if (err < 0) {
		icfabctl_warn("generic netlink: %s", nl_geterror(err));
		goto err_free;
	}

	/* Best effort: kernels before 4.12 have no extended ACKs. */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));

	nl->family = genl_ctrl_resolve(nl->sk, ICFAB_GENL_NAME);
	if (nl->family < 0) {
		if (nl->family == -NLE_OBJ_NOTFOUND)
			icfabctl_warn("generic netlink family \"%s\": not found (icfab module not loaded?)",
				      ICFAB_GENL_NAME);
		else
			icfabctl_warn("generic netlink family \"%s\": %s",
				      ICFAB_GENL_NAME, nl_geterror(nl->family));
		goto err_free;
	}
	return ICFABCTL_EXIT_OK;

err_free:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return ICFABCTL_EXIT_ERROR;
}

void icfabctl_nl_close(struct icfabctl_nl *nl)
{
	nl_socket_free(nl->sk);
	nl->sk = NULL;
}

struct nl_msg *icfabctl_nl_msg(struct icfabctl_nl *nl, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags,
			 cmd, ICFAB_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct transact {
	int ret;		/* 1: in progress, 0: done, <0: -errno */
	int (*valid)(struct nl_msg *msg, void *arg);
	void *arg;
	char ext_msg[256];	/* NLMSGERR_ATTR_MSG */
	int bad_attr;		/* type of the attribute NLMSGERR_ATTR_OFFS names */
};

/*
 * An NLMSG_ERROR with NLM_F_ACK_TLVS looks like this:
 *
 *	struct nlmsghdr		(of the error message)
 *	struct nlmsgerr		error, then the request's nlmsghdr
 *	request payload		unless NLM_F_CAPPED
 *	NLMSGERR_ATTR_*		the extended ACK
 */
static void parse_ext_ack(struct transact *t, const struct nlmsgerr *e)
{
	const struct nlmsghdr *nlh =
		(const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	const struct nlattr *a;
	size_t len = nlh->nlmsg_len;
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	bool capped = nlh->nlmsg_flags & NLM_F_CAPPED;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!capped) {
		if (e->msg.nlmsg_len < sizeof(e->msg))
			return;
		off += NLMSG_ALIGN(e->msg.nlmsg_len - sizeof(e->msg));
	}
	if (len <= off)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)nlh + off), len - off, NULL))
		return;

	if (tb[NLMSGERR_ATTR_MSG]) {
		size_t n = nla_len(tb[NLMSGERR_ATTR_MSG]);

		if (n >= sizeof(t->ext_msg))
			n = sizeof(t->ext_msg) - 1;
		memcpy(t->ext_msg, nla_data(tb[NLMSGERR_ATTR_MSG]), n);
		t->ext_msg[n] = '\0';
		/* Some kernels include the NUL, some a trailing newline. */
		n = strlen(t->ext_msg);
		while (n && t->ext_msg[n - 1] == '\n')
			t->ext_msg[--n] = '\0';
	}

	/* The offset points into our request, echoed after nlmsgerr. */
	if (tb[NLMSGERR_ATTR_OFFS] && !capped &&
	    nla_len(tb[NLMSGERR_ATTR_OFFS]) >= 4) {
		uint32_t offs = nla_get_u32(tb[NLMSGERR_ATTR_OFFS]);

		/* Within the request, and within what was echoed of it. */
		if (offs >= NLMSG_HDRLEN + GENL_HDRLEN &&
		    offs + NLA_HDRLEN <= e->msg.nlmsg_len &&
		    NLMSG_HDRLEN + offsetof(struct nlmsgerr, msg) + offs +
		    NLA_HDRLEN <= len) {
			a = (const struct nlattr *)((const char *)&e->msg + offs);
			t->bad_attr = a->nla_type & NLA_TYPE_MASK;
		}
	}
}

static int error_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct transact *t = arg;

	(void)nla;
	t->ret = e->error < 0 ? e->error : -EPROTO;
	parse_ext_ack(t, e);
	return NL_STOP;
}

static int ack_cb(struct nl_msg *msg, void *arg)
{
	struct transact *t = arg;

	(void)msg;
	t->ret = 0;
	return NL_STOP;
}

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct transact *t = arg;
	int err;

	if (!t->valid)
		return NL_OK;
	err = t->valid(msg, t->arg);
	if (err < 0) {
		t->ret = err;
		return NL_STOP;
	}
	return NL_OK;
}

int icfabctl_nl_transact(struct icfabctl_nl *nl, struct nl_msg *msg,
			 int (*valid)(struct nl_msg *msg, void *arg),
			 void *arg, const char *what)
{
	struct transact t = { .ret = 1, .valid = valid, .arg = arg };
	struct nl_cb *cb;
	const char *name;
	int err;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return icfabctl_fail(ENOMEM, "%s", what);
	}
	nl_cb_err(cb, NL_CB_CUSTOM, error_cb, &t);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_cb, &t);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, ack_cb, &t);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &t);

	err = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (err < 0) {
		nl_cb_put(cb);
		icfabctl_warn("%s: sending the request: %s", what,
			      nl_geterror(err));
		return ICFABCTL_EXIT_ERROR;
	}

	while (t.ret > 0) {
		err = nl_recvmsgs(nl->sk, cb);
		if (err < 0 && t.ret > 0) {
			nl_cb_put(cb);
			icfabctl_warn("%s: receiving the reply: %s", what,
				      nl_geterror(err));
			return ICFABCTL_EXIT_ERROR;
		}
	}
	nl_cb_put(cb);

	if (!t.ret)
		return ICFABCTL_EXIT_OK;

	if (t.ext_msg[0])
		icfabctl_warn("kernel reports: %s", t.ext_msg);
	if (t.bad_attr) {
		name = icfabctl_fabric_attr_name(t.bad_attr);
		if (name)
			icfabctl_warn("offending attribute: %s", name);
		else
			icfabctl_warn("offending attribute: %d", t.bad_attr);
	}
	icfabctl_fail(-t.ret, "%s", what);
	if (t.ret == -EPERM)
		icfabctl_warn("this needs CAP_NET_ADMIN");
	return ICFABCTL_EXIT_ERROR;
}
