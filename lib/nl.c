// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink client of the "icfab" family, on libnl-genl-3, for
 * icfabd and the tools.
 *
 * One struct icfab_nl is one socket. The module gives the staged
 * configuration to the socket that made the first change, so a whole
 * staging sequence and its commit must go through the same one; closing
 * it drops whatever it left staged.
 *
 * Every request asks for an acknowledgement and waits for it, so a
 * rejection is tied to the request that caused it. Extended ACKs: libnl
 * 3.7 has no helper for them, so NETLINK_EXT_ACK is set on the socket
 * directly and the error callback digs the kernel's message
 * (NLMSGERR_ATTR_MSG), the attribute it names (NLMSGERR_ATTR_OFFS) and
 * icfab's cookie (struct icfab_err_cookie) out of the NLMSG_ERROR message
 * itself. A dump that fails reports it in its NLMSG_DONE (an errno, then
 * the same attributes), which libnl does not look at either; and a dump
 * that spans a change is noted (NLM_F_DUMP_INTR) for the caller to retry.
 * All of it is kept in nl->last for the caller to show.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <icfab/nl.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* Big enough for a whole route row of the largest fabric (8 KiB + headers). */
#define ICFAB_NL_MSG_MIN	(16 * 1024)
/* What one recvmsg() may return: a dump skb holds several messages. */
#define ICFAB_NL_RECV_BUF	(64 * 1024)
/* Socket buffers: a dump is flow-controlled, but events are not. */
#define ICFAB_NL_SOCK_BUF	(4 * 1024 * 1024)

struct nl_req {
	struct icfab_nl *nl;
	icfab_nl_valid_fn valid;
	void *arg;
	int ret;			/* 1: in progress, 0: done, <0: -errno */
	int cb_err;			/* the first error valid() returned */
};

static int set_sockopt(int fd, int opt)
{
	int one = 1;

	return setsockopt(fd, SOL_NETLINK, opt, &one, sizeof(one));
}

int icfab_nl_open(struct icfab_nl *nl, uint32_t fabric_id)
{
	int fd, ret;

	memset(nl, 0, sizeof(*nl));
	nl->fabric_id = fabric_id;
	nl->family = -1;
	nl->events_grp = -1;
	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		return -ENOMEM;
	ret = genl_connect(nl->sk);
	if (ret) {
		nl->last.transport = "connecting";
		nl->last.nl_err = ret;
		ret = -ENOTCONN;
		goto err_free;
	}
	fd = nl_socket_get_fd(nl->sk);
	/*
	 * The kernel's reasons (best effort: kernels before 4.12 have no
	 * extended ACKs). The request is echoed with an error, not capped,
	 * so that the attribute an offset names can be found in it.
	 */
	set_sockopt(fd, NETLINK_EXT_ACK);
	nl_socket_set_buffer_size(nl->sk, ICFAB_NL_SOCK_BUF, ICFAB_NL_SOCK_BUF);
	nl_socket_set_msg_buf_size(nl->sk, ICFAB_NL_RECV_BUF);
	nl_socket_enable_msg_peek(nl->sk);

	nl->family = genl_ctrl_resolve(nl->sk, ICFAB_GENL_NAME);
	if (nl->family < 0) {
		/* The module is not loaded (NLE_OBJ_NOTFOUND), or is too old. */
		nl->last.transport = "resolving the family";
		nl->last.nl_err = nl->family;
		ret = -ENOENT;
		goto err_free;
	}
	return 0;

err_free:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return ret;
}

void icfab_nl_close(struct icfab_nl *nl)
{
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

int icfab_nl_fd(const struct icfab_nl *nl)
{
	return nl_socket_get_fd(nl->sk);
}

struct nl_msg *icfab_nl_genlmsg(struct icfab_nl *nl, uint8_t cmd, int flags,
				size_t size)
{
	struct nl_msg *msg = size ? nlmsg_alloc_size(size) : nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags,
			 cmd, ICFAB_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nl_msg *icfab_nl_msg(struct icfab_nl *nl, uint8_t cmd, int flags,
			    size_t payload)
{
	size_t size = payload + 1024;
	struct nl_msg *msg;

	if (size < ICFAB_NL_MSG_MIN)
		size = ICFAB_NL_MSG_MIN;
	msg = icfab_nl_genlmsg(nl, cmd, flags, size);
	if (msg && nla_put_u32(msg, ICFAB_A_FABRIC_ID, nl->fabric_id)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The extended ACK attributes (NLMSGERR_ATTR_*) at @attrs, @len bytes. */
static void parse_ack_tlvs(struct icfab_nl_err *ne, const struct nlmsghdr *nlh,
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

	/* icfab's cookie: where a rejected request went wrong. */
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
static void parse_ext_ack(struct icfab_nl_err *ne, const struct nlmsgerr *e)
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

static int error_cb(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct nl_req *r = arg;

	(void)who;
	r->ret = e->error < 0 ? e->error : -EPROTO;
	parse_ext_ack(&r->nl->last, e);
	return NL_STOP;
}

static int ack_cb(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;

	(void)msg;
	r->ret = 0;
	return NL_STOP;
}

/*
 * NLMSG_DONE ends a dump. A dump that failed says so here: a negative
 * errno as the payload, then (NLM_F_ACK_TLVS) the extended ACK.
 */
static int done_cb(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nl_req *r = arg;
	int err = 0, off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(int));

	r->ret = 0;
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int))
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
	if (err < 0) {
		r->ret = err;
		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) &&
		    (int)nlh->nlmsg_len > off)
			parse_ack_tlvs(&r->nl->last, nlh, NULL,
				       (struct nlattr *)((char *)nlh + off),
				       nlh->nlmsg_len - off);
	}
	return NL_STOP;
}

/* A part of a dump that spans a change (the DONE message may carry it too). */
static int dump_intr_cb(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;

	(void)msg;
	r->nl->dump_intr = true;
	return NL_OK;
}

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;
	int err;

	if (nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP_INTR)
		r->nl->dump_intr = true;
	if (!r->valid || r->cb_err)
		return NL_OK;	/* drain the rest of a dump after an error */
	err = r->valid(msg, r->arg);
	if (err < 0)
		r->cb_err = err;
	return NL_OK;
}

/* libnl's errors, for what does not come from the kernel's ack. */
static int nle_to_errno(int nle)
{
	switch (-nle) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_DUMP_INTR:
		return -EINTR;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	default:
		return -EIO;
	}
}

int icfab_nl_exchange(struct icfab_nl *nl, struct nl_msg *msg,
		      icfab_nl_valid_fn valid, void *arg)
{
	struct nl_req r = { .nl = nl, .ret = 1, .valid = valid, .arg = arg };
	struct nl_cb *cb;
	int err;

	memset(&nl->last, 0, sizeof(nl->last));
	nl->dump_intr = false;

	cb = msg ? nl_cb_alloc(NL_CB_DEFAULT) : NULL;
	if (!cb) {		/* no memory for the message or this */
		nlmsg_free(msg);
		nl->last.err = -ENOMEM;
		return -ENOMEM;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, error_cb, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_cb, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, done_cb, &r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &r);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, dump_intr_cb, &r);

	err = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (err < 0) {
		nl->last.transport = "sending the request";
		goto transport;
	}
	/*
	 * A valid() failure is remembered but the replies are read to the
	 * end, so that the socket is clean for the next request.
	 */
	while (r.ret > 0) {
		err = nl_recvmsgs(nl->sk, cb);
		if (err < 0 && r.ret > 0) {
			nl->last.transport = "receiving the reply";
			goto transport;
		}
	}
	nl_cb_put(cb);
	/* A reply the caller could not take (malformed, no memory). */
	if (!r.ret && r.cb_err)
		r.ret = r.cb_err;
	nl->last.err = r.ret;
	return r.ret;

transport:
	nl_cb_put(cb);
	nl->last.nl_err = err;
	nl->last.err = nle_to_errno(err);
	return nl->last.err;
}

/* Parse a reply's attributes for an icfab_nl_parse_fn. */
struct parse_req {
	icfab_nl_parse_fn fn;
	void *arg;
};

static int parse_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct parse_req *p = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, ICFAB_A_MAX, NULL))
		return -EPROTO;
	return p->fn(tb, p->arg);
}

/* A request that changes or reads one object; waits for its ack. */
int icfab_nl_request(struct icfab_nl *nl, struct nl_msg *msg,
		     icfab_nl_parse_fn fn, void *arg)
{
	struct parse_req p = { .fn = fn, .arg = arg };

	return icfab_nl_exchange(nl, msg, fn ? parse_valid : NULL, &p);
}

/*
 * A dump. -EINTR when it spanned a change (NLM_F_DUMP_INTR): the caller
 * reads again.
 */
int icfab_nl_dump(struct icfab_nl *nl, struct nl_msg *msg,
		  icfab_nl_parse_fn fn, void *arg)
{
	int ret = icfab_nl_request(nl, msg, fn, arg);

	if (!ret && nl->dump_intr)
		ret = nl->last.err = -EINTR;
	return ret;
}

/* The "events" group's id, from the controller, and join it. */
int icfab_nl_subscribe(struct icfab_nl *nl)
{
	int grp, ret;

	grp = genl_ctrl_resolve_grp(nl->sk, ICFAB_GENL_NAME,
				    ICFAB_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return -ENOENT;
	ret = nl_socket_add_membership(nl->sk, grp);
	if (ret)
		return nle_to_errno(ret);
	nl->events_grp = grp;
	/* Notifications are unsolicited: no sequence numbers to check. */
	nl_socket_disable_seq_check(nl->sk);
	return 0;
}

static int cb_no_seq_check(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

/*
 * Read what the event socket has (non-blocking); @fn sees every
 * notification. -ENOBUFS when the socket overflowed: the caller must
 * resynchronise by reading the state.
 */
int icfab_nl_recv_events(struct icfab_nl *nl, icfab_nl_parse_fn fn, void *arg)
{
	struct parse_req p = { .fn = fn, .arg = arg };
	struct nl_req r = { .nl = nl, .valid = parse_valid, .arg = &p };
	struct nl_cb *cb;
	int ret;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &r);
	/* Notifications carry sequence number 0: nothing to match. */
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, cb_no_seq_check, NULL);
	nl_socket_set_nonblocking(nl->sk);
	ret = nl_recvmsgs(nl->sk, cb);
	nl_cb_put(cb);
	if (ret == -NLE_AGAIN)
		ret = 0;
	else if (ret == -NLE_NOMEM)
		ret = -ENOBUFS;
	else if (ret < 0)
		ret = nle_to_errno(ret);
	return ret ? ret : r.cb_err;
}

/*
 * "kernel reports: MESSAGE (node 5)" when the kernel said why, else the
 * errno's text; EPERM gets the reason people hit it for.
 */
const char *icfab_nl_strerror(const struct icfab_nl *nl, int err,
			      char *buf, size_t len)
{
	static const char *const objs[] = {
		[ICFAB_ERR_OBJ_NODE] = "node",
		[ICFAB_ERR_OBJ_LINK] = "link",
		[ICFAB_ERR_OBJ_ROUTE] = "route of node",
	};
	const struct icfab_nl_err *ne = &nl->last;
	char where[64] = "";

	if (err == -EPERM) {
		snprintf(buf, len, "%s: changing the fabric needs CAP_NET_ADMIN (run as root)",
			 strerror(EPERM));
		return buf;
	}
	if (ne->has_cookie && ne->cookie.obj == ICFAB_ERR_OBJ_ROUTER_COLOR)
		snprintf(where, sizeof(where), " (router %u, color %u)",
			 ne->cookie.id, ne->cookie.id2);
	else if (ne->has_cookie && ne->cookie.obj == ICFAB_ERR_OBJ_CIRCUIT)
		snprintf(where, sizeof(where), " (circuit %u, node %u)",
			 ne->cookie.id, ne->cookie.id2);
	else if (ne->has_cookie && ne->cookie.obj == ICFAB_ERR_OBJ_ROUTE_SET)
		snprintf(where, sizeof(where), " (node %u, next-hop set %u)",
			 ne->cookie.id, ne->cookie.id2);
	else if (ne->has_cookie && ne->cookie.obj == ICFAB_ERR_OBJ_ROUTE_PORT)
		snprintf(where, sizeof(where),
			 " (route of node %u to %u, port %u)",
			 ne->cookie.id, ne->cookie.id2, ne->cookie.id3);
	else if (ne->has_cookie && ne->cookie.obj > ICFAB_ERR_OBJ_NONE &&
		 ne->cookie.obj <= ICFAB_ERR_OBJ_ROUTE) {
		if (ne->cookie.obj == ICFAB_ERR_OBJ_ROUTE)
			snprintf(where, sizeof(where), " (%s %u to %u)",
				 objs[ne->cookie.obj], ne->cookie.id,
				 ne->cookie.id2);
		else
			snprintf(where, sizeof(where), " (%s %u)",
				 objs[ne->cookie.obj], ne->cookie.id);
	}
	if (ne->msg[0] && err == ne->err)
		snprintf(buf, len, "kernel reports: %s%s (%s)", ne->msg,
			 where, strerror(-err));
	else
		snprintf(buf, len, "%s%s", strerror(-err), where);
	return buf;
}

int icfab_nl_read_consistent(int (*read_once)(void *arg), void *arg,
			     unsigned int attempts)
{
	unsigned int attempt;
	int ret = -EINTR;

	for (attempt = 1; attempt <= attempts; attempt++) {
		if (attempt > 1)
			usleep(10000 * (attempt - 1));
		ret = read_once(arg);
		if (ret != -EINTR)
			break;
	}
	return ret;
}

int icfab_dev_info(uint32_t fabric_id, struct icfab_info *info)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/dev/" ICFAB_DEV_NAME_PREFIX "%u",
		 fabric_id);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, ICFAB_IOC_INFO, info))
		ret = -errno;
	close(fd);
	return ret;
}
