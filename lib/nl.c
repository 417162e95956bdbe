// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd's generic netlink layer, on libnl-genl-3.
 *
 * One struct icfab_nl is one socket. The module gives the staged
 * configuration to the socket that made the first change, so a whole
 * staging sequence and its commit must go through the same one; closing
 * it drops whatever it left staged.
 *
 * Every request asks for an acknowledgement and waits for it, so a
 * rejection is tied to the request that caused it; the kernel's extack
 * message and cookie are kept for the caller to show.
 */
#include <errno.h>
#include <fcntl.h>
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
	icfab_nl_parse_fn fn;
	void *arg;
	int err;			/* -errno from the kernel or fn */
	bool done;
	bool intr;			/* a message had NLM_F_DUMP_INTR */
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
		ret = -ENOTCONN;
		goto err_free;
	}
	fd = nl_socket_get_fd(nl->sk);
	/* The kernel's reasons, and no echo of our (large) requests. */
	set_sockopt(fd, NETLINK_EXT_ACK);
	set_sockopt(fd, NETLINK_CAP_ACK);
	nl_socket_set_buffer_size(nl->sk, ICFAB_NL_SOCK_BUF, ICFAB_NL_SOCK_BUF);
	nl_socket_set_msg_buf_size(nl->sk, ICFAB_NL_RECV_BUF);
	nl_socket_enable_msg_peek(nl->sk);

	nl->family = genl_ctrl_resolve(nl->sk, ICFAB_GENL_NAME);
	if (nl->family < 0) {
		/* The module is not loaded, or is too old. */
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

/*
 * A message for @cmd on our fabric, with room for @payload bytes of
 * attributes besides the fabric id.
 */
struct nl_msg *icfab_nl_msg(struct icfab_nl *nl, uint8_t cmd, int flags,
			    size_t payload)
{
	size_t size = payload + 1024;
	struct nl_msg *msg;

	if (size < ICFAB_NL_MSG_MIN)
		size = ICFAB_NL_MSG_MIN;
	msg = nlmsg_alloc_size(size);
	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags,
			 cmd, ICFAB_GENL_VERSION) ||
	    nla_put_u32(msg, ICFAB_A_FABRIC_ID, nl->fabric_id)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The extended ack: NLMSGERR_ATTR_MSG and _COOKIE, after the echoed request. */
static void parse_extack(struct icfab_nl *nl, struct nlmsghdr *hdr,
			 struct nlmsgerr *e)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);
	int len;

	if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	len = (int)hdr->nlmsg_len - NLMSG_HDRLEN - (int)off;
	if (len <= 0)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)e + off), len, NULL))
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(nl->err_msg, sizeof(nl->err_msg), "%.*s",
			 nla_len(tb[NLMSGERR_ATTR_MSG]),
			 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
	if (tb[NLMSGERR_ATTR_COOKIE] &&
	    nla_len(tb[NLMSGERR_ATTR_COOKIE]) >= (int)sizeof(nl->err_cookie)) {
		memcpy(&nl->err_cookie, nla_data(tb[NLMSGERR_ATTR_COOKIE]),
		       sizeof(nl->err_cookie));
		nl->has_cookie = true;
	}
}

static int cb_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct nl_req *r = arg;
	struct nlmsghdr *hdr = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);

	(void)who;
	r->err = e->error;
	if (e->error)
		parse_extack(r->nl, hdr, e);
	r->done = true;
	return NL_STOP;
}

static int cb_ack(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;

	(void)msg;
	r->done = true;
	return NL_STOP;
}

static int cb_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nl_req *r = arg;
	int ret;

	if (hdr->nlmsg_flags & NLM_F_DUMP_INTR)
		r->intr = true;
	if (!r->fn || r->err)
		return NL_OK;
	ret = genlmsg_parse(hdr, 0, tb, ICFAB_A_MAX, NULL);
	if (ret) {
		r->err = -EPROTO;
		return NL_OK;
	}
	ret = r->fn(tb, r->arg);
	if (ret)
		r->err = ret;	/* keep reading to the end of the dump */
	return NL_OK;
}

static int cb_dump_intr(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;

	(void)msg;
	r->intr = true;
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

static int run(struct icfab_nl *nl, struct nl_msg *msg, icfab_nl_parse_fn fn,
	       void *arg, bool dump)
{
	struct nl_req r = { .nl = nl, .fn = fn, .arg = arg };
	struct nl_cb *cb;
	int ret;

	nl->last_err = 0;
	nl->err_msg[0] = '\0';
	nl->has_cookie = false;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, cb_error, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, cb_ack, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, cb_ack, &r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_valid, &r);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, cb_dump_intr, &r);

	ret = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		ret = nle_to_errno(ret);
		goto out;
	}
	while (!r.done) {
		ret = nl_recvmsgs(nl->sk, cb);
		if (ret < 0 && ret != -NLE_DUMP_INTR) {
			/* libnl maps the kernel's errno when not custom. */
			ret = r.err ? r.err : nle_to_errno(ret);
			goto out;
		}
		if (ret == -NLE_DUMP_INTR)
			r.intr = true;
	}
	ret = r.err;
	if (!ret && dump && r.intr)
		ret = -EINTR;
out:
	nl_cb_put(cb);
	nl->last_err = ret;
	return ret;
}

/* A request that changes or reads one object; waits for its ack. */
int icfab_nl_request(struct icfab_nl *nl, struct nl_msg *msg,
		     icfab_nl_parse_fn fn, void *arg)
{
	return run(nl, msg, fn, arg, false);
}

/*
 * A dump. -EINTR when it spanned a change (NLM_F_DUMP_INTR): the caller
 * reads again.
 */
int icfab_nl_dump(struct icfab_nl *nl, struct nl_msg *msg,
		  icfab_nl_parse_fn fn, void *arg)
{
	return run(nl, msg, fn, arg, true);
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
	struct nl_req r = { .nl = nl, .fn = fn, .arg = arg };
	struct nl_cb *cb;
	int ret;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_valid, &r);
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
	return ret ? ret : r.err;
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
	char where[64] = "";

	if (err == -EPERM) {
		snprintf(buf, len, "%s: changing the fabric needs CAP_NET_ADMIN (run as root)",
			 strerror(EPERM));
		return buf;
	}
	if (nl->has_cookie && nl->err_cookie.obj == ICFAB_ERR_OBJ_ROUTER_COLOR)
		snprintf(where, sizeof(where), " (router %u, color %u)",
			 nl->err_cookie.id, nl->err_cookie.id2);
	else if (nl->has_cookie && nl->err_cookie.obj == ICFAB_ERR_OBJ_CIRCUIT)
		snprintf(where, sizeof(where), " (circuit %u, node %u)",
			 nl->err_cookie.id, nl->err_cookie.id2);
	else if (nl->has_cookie && nl->err_cookie.obj > ICFAB_ERR_OBJ_NONE &&
		 nl->err_cookie.obj <= ICFAB_ERR_OBJ_ROUTE) {
		if (nl->err_cookie.obj == ICFAB_ERR_OBJ_ROUTE)
			snprintf(where, sizeof(where), " (%s %u to %u)",
				 objs[nl->err_cookie.obj], nl->err_cookie.id,
				 nl->err_cookie.id2);
		else
			snprintf(where, sizeof(where), " (%s %u)",
				 objs[nl->err_cookie.obj], nl->err_cookie.id);
	}
	if (nl->err_msg[0] && err == nl->last_err)
		snprintf(buf, len, "kernel reports: %s%s (%s)", nl->err_msg,
			 where, strerror(-err));
	else
		snprintf(buf, len, "%s%s", strerror(-err), where);
	return buf;
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
