// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl: generic netlink plumbing (libnl-genl-3).
 *
 * Extended ACKs: libnl 3.7 has no helper for them, so NETLINK_EXT_ACK is
 * set on the socket directly and the error callback digs the kernel's
 * message (NLMSGERR_ATTR_MSG), the attribute it names and icfab's cookie
 * (struct icfab_err_cookie) out of the NLMSG_ERROR message itself. A dump
 * that fails reports it in its NLMSG_DONE (an errno, then the same
 * attributes), which libnl does not look at either; and a dump that spans
 * a change is noted (NLM_F_DUMP_INTR) for the caller to retry.
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

	memset(nl, 0, sizeof(*nl));
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
	struct icfabctl_nl *nl;
	int ret;		/* 1: in progress, 0: done, <0: -errno */
	int cb_err;		/* the first error valid() returned */
	int (*valid)(struct nl_msg *msg, void *arg);
	void *arg;
};

/* The extended ACK attributes (NLMSGERR_ATTR_*) at @attrs, @len bytes. */
static void parse_ack_tlvs(struct icfabctl_nl_err *ne, const struct nlmsghdr *nlh,
			   const struct nlmsgerr *e, struct nlattr *attrs,
			   int len)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	const struct nlattr *a;
	bool capped = nlh->nlmsg_flags & NLM_F_CAPPED;
	size_t n;

	if (len <= 0 || nla_parse(tb, NLMSGERR_ATTR_MAX, attrs, len, NULL))
		return;

	if (tb[NLMSGERR_ATTR_MSG]) {
		n = nla_len(tb[NLMSGERR_ATTR_MSG]);
		if (n >= sizeof(ne->msg))
			n = sizeof(ne->msg) - 1;
		memcpy(ne->msg, nla_data(tb[NLMSGERR_ATTR_MSG]), n);
		ne->msg[n] = '\0';
		/* Some kernels include the NUL, some a trailing newline. */
		n = strlen(ne->msg);
		while (n && ne->msg[n - 1] == '\n')
			ne->msg[--n] = '\0';
	}

	/* icfab's cookie: where a rejected commit went wrong. */
	if (tb[NLMSGERR_ATTR_COOKIE] &&
	    nla_len(tb[NLMSGERR_ATTR_COOKIE]) >= (int)sizeof(ne->cookie)) {
		memcpy(&ne->cookie, nla_data(tb[NLMSGERR_ATTR_COOKIE]),
		       sizeof(ne->cookie));
		ne->has_cookie = true;
	}

	/* The offset points into our request, echoed after nlmsgerr. */
	if (e && tb[NLMSGERR_ATTR_OFFS] && !capped &&
	    nla_len(tb[NLMSGERR_ATTR_OFFS]) >= 4) {
		uint32_t offs = nla_get_u32(tb[NLMSGERR_ATTR_OFFS]);

		/* Within the request, and within what was echoed of it. */
		if (offs >= NLMSG_HDRLEN + GENL_HDRLEN &&
		    offs + NLA_HDRLEN <= e->msg.nlmsg_len &&
		    NLMSG_HDRLEN + offsetof(struct nlmsgerr, msg) + offs +
		    NLA_HDRLEN <= nlh->nlmsg_len) {
			a = (const struct nlattr *)((const char *)&e->msg + offs);
			ne->bad_attr = a->nla_type & NLA_TYPE_MASK;
		}
	}
}

/*
 * An NLMSG_ERROR with NLM_F_ACK_TLVS looks like this:
 *
 *	struct nlmsghdr		(of the error message)
 *	struct nlmsgerr		error, then the request's nlmsghdr
 *	request payload		unless NLM_F_CAPPED
 *	NLMSGERR_ATTR_*		the extended ACK
 */
static void parse_ext_ack(struct icfabctl_nl_err *ne, const struct nlmsgerr *e)
{
	const struct nlmsghdr *nlh =
		(const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);
	size_t len = nlh->nlmsg_len;
	size_t off = NLMSG_HDRLEN + sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < sizeof(e->msg))
			return;
		off += NLMSG_ALIGN(e->msg.nlmsg_len - sizeof(e->msg));
	}
	if (len <= off)
		return;
	parse_ack_tlvs(ne, nlh, e, (struct nlattr *)((char *)nlh + off),
		       len - off);
}

static int error_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct transact *t = arg;

	(void)nla;
	t->ret = e->error < 0 ? e->error : -EPROTO;
	parse_ext_ack(&t->nl->last, e);
	return NL_STOP;
}

static int ack_cb(struct nl_msg *msg, void *arg)
{
	struct transact *t = arg;

	(void)msg;
	t->ret = 0;
	return NL_STOP;
}

/*
 * NLMSG_DONE ends a dump. A dump that failed says so here: a negative
 * errno as the payload, then (NLM_F_ACK_TLVS) the extended ACK.
 */
static int done_cb(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct transact *t = arg;
	int err = 0, off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(int));

	t->ret = 0;
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int))
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
	if (err < 0) {
		t->ret = err;
		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) &&
		    (int)nlh->nlmsg_len > off)
			parse_ack_tlvs(&t->nl->last, nlh, NULL,
				       (struct nlattr *)((char *)nlh + off),
				       nlh->nlmsg_len - off);
	}
	return NL_STOP;
}

/* A part of a dump that spans a change (the DONE message may carry it too). */
static int dump_intr_cb(struct nl_msg *msg, void *arg)
{
	struct transact *t = arg;

	(void)msg;
	t->nl->dump_intr = true;
	return NL_OK;
}

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct transact *t = arg;
	int err;

	if (nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP_INTR)
		t->nl->dump_intr = true;
	if (!t->valid || t->cb_err)
		return NL_OK;	/* drain the rest of a dump after an error */
	err = t->valid(msg, t->arg);
	if (err < 0)
		t->cb_err = err;
	return NL_OK;
}

int icfabctl_nl_request(struct icfabctl_nl *nl, struct nl_msg *msg,
			int (*valid)(struct nl_msg *msg, void *arg), void *arg)
{
	struct transact t = { .nl = nl, .ret = 1, .valid = valid, .arg = arg };
	struct nl_cb *cb;
	int err;

	memset(&nl->last, 0, sizeof(nl->last));
	nl->dump_intr = false;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		nl->last.err = -ENOMEM;
		return -ENOMEM;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, error_cb, &t);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_cb, &t);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, done_cb, &t);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &t);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, dump_intr_cb, &t);

	err = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (err < 0) {
		nl_cb_put(cb);
		nl->last.transport = "sending the request";
		nl->last.nl_err = err;
		nl->last.err = -EIO;
		return -EIO;
	}

	/*
	 * A valid() failure is remembered but the replies are read to the
	 * end, so that the socket is clean for the next request.
	 */
	while (t.ret > 0) {
		err = nl_recvmsgs(nl->sk, cb);
		if (err < 0 && t.ret > 0) {
			nl_cb_put(cb);
			nl->last.transport = "receiving the reply";
			nl->last.nl_err = err;
			nl->last.err = -EIO;
			return -EIO;
		}
	}
	nl_cb_put(cb);
	/* A reply this tool could not take (malformed, no memory). */
	if (!t.ret && t.cb_err)
		t.ret = t.cb_err;
	nl->last.err = t.ret;
	return t.ret;
}

void icfabctl_nl_report(struct icfabctl_nl *nl, const char *what)
{
	struct icfabctl_nl_err ne = nl->last;	/* locating overwrites it */
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

int icfabctl_nl_transact(struct icfabctl_nl *nl, struct nl_msg *msg,
			 int (*valid)(struct nl_msg *msg, void *arg),
			 void *arg, const char *what)
{
	if (!icfabctl_nl_request(nl, msg, valid, arg))
		return ICFABCTL_EXIT_OK;
	icfabctl_nl_report(nl, what);
	return ICFABCTL_EXIT_ERROR;
}
