// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "genl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* The last reply received; attributes in genl_reply point into it. */
static struct genl_msg rx;

int genl_open(struct genl_sock *gs)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1;

	memset(gs, 0, sizeof(*gs));
	gs->bad_attr_type = -1;
	gs->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (gs->fd < 0)
		return -errno;
	if (bind(gs->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(gs->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one,
		       sizeof(one)) < 0) {
		int err = -errno;

		close(gs->fd);
		return err;
	}
	return 0;
}

void genl_close(struct genl_sock *gs)
{
	if (gs->fd >= 0)
		close(gs->fd);
	gs->fd = -1;
}

void genl_msg_init(struct genl_msg *m, uint16_t family, uint8_t cmd,
		   uint16_t flags)
{
	struct genlmsghdr *g;

	memset(m, 0, sizeof(*m));
	m->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->nlh.nlmsg_type = family;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	g = NLMSG_DATA(&m->nlh);
	g->cmd = cmd;
	g->version = 1;
}

void genl_put(struct genl_msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->buf +
					     NLMSG_ALIGN(m->nlh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nlh.nlmsg_len = NLMSG_ALIGN(m->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

void genl_put_u32(struct genl_msg *m, uint16_t type, uint32_t v)
{
	genl_put(m, type, &v, sizeof(v));
}

void genl_put_u64(struct genl_msg *m, uint16_t type, uint64_t v)
{
	genl_put(m, type, &v, sizeof(v));
}

uint32_t genl_u32(const struct nlattr *a)
{
	uint32_t v;

	memcpy(&v, (const char *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

uint64_t genl_u64(const struct nlattr *a)
{
	uint64_t v;

	memcpy(&v, (const char *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

static void genl_parse_attrs(struct nlattr **tb, int max, void *data,
			     int len)
{
	struct nlattr *a = data;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (len >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		len -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
}

static void genl_parse_reply(struct nlmsghdr *nlh, struct genl_reply *r)
{
	struct genlmsghdr *g = NLMSG_DATA(nlh);

	r->cmd = g->cmd;
	genl_parse_attrs(r->tb, GENL_MAX_ATTR, (char *)g + GENL_HDRLEN,
			 nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
}

/* Which attribute of the request starts at byte @offs of the message. */
static int genl_attr_at(const struct genl_msg *req, uint32_t offs)
{
	const struct nlattr *a;

	if (offs < NLMSG_LENGTH(GENL_HDRLEN) || offs >= req->nlh.nlmsg_len)
		return -1;
	a = (const struct nlattr *)(req->buf + offs);
	return a->nla_type & NLA_TYPE_MASK;
}

static int genl_parse_error(struct genl_sock *gs, struct nlmsghdr *nlh,
			    const struct genl_msg *req)
{
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);

	gs->extack[0] = '\0';
	gs->bad_attr_type = -1;
	gs->missing_attr_type = -1;
	gs->cookie_len = 0;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return e->error;

	/* Without NETLINK_CAP_ACK the request is echoed back first. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	if (NLMSG_LENGTH(off) > nlh->nlmsg_len)
		return e->error;

	genl_parse_attrs(tb, NLMSGERR_ATTR_MAX, (char *)e + off,
			 nlh->nlmsg_len - NLMSG_LENGTH(off));
	if (tb[NLMSGERR_ATTR_MSG]) {
		size_t n = tb[NLMSGERR_ATTR_MSG]->nla_len - NLA_HDRLEN;

		if (n >= sizeof(gs->extack))
			n = sizeof(gs->extack) - 1;
		memcpy(gs->extack, (char *)tb[NLMSGERR_ATTR_MSG] + NLA_HDRLEN,
		       n);
		gs->extack[n] = '\0';
	}
	if (tb[NLMSGERR_ATTR_OFFS] && req)
		gs->bad_attr_type = genl_attr_at(req,
					genl_u32(tb[NLMSGERR_ATTR_OFFS]));
	if (tb[NLMSGERR_ATTR_MISS_TYPE])
		gs->missing_attr_type = genl_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
	if (tb[NLMSGERR_ATTR_COOKIE]) {
		size_t n = tb[NLMSGERR_ATTR_COOKIE]->nla_len - NLA_HDRLEN;

		if (n > sizeof(gs->cookie))
			n = sizeof(gs->cookie);
		memcpy(gs->cookie, (char *)tb[NLMSGERR_ATTR_COOKIE] + NLA_HDRLEN,
		       n);
		gs->cookie_len = n;
	}
	return e->error;
}

int genl_send(struct genl_sock *gs, struct genl_msg *m)
{
	m->nlh.nlmsg_seq = ++gs->seq;
	gs->dump_intr = 0;
	gs->cb_err = 0;
	if (send(gs->fd, m->buf, m->nlh.nlmsg_len, 0) < 0)
		return -errno;
	return 0;
}

int genl_request_part(struct genl_sock *gs, struct genl_msg *m,
		      genl_reply_cb cb, void *arg)
{
	struct nlmsghdr *nlh;
	ssize_t n;

	n = recv(gs->fd, rx.buf, sizeof(rx.buf), 0);
	if (n < 0)
		return -errno;

	for (nlh = &rx.nlh; NLMSG_OK(nlh, n); nlh = NLMSG_NEXT(nlh, n)) {
		struct genl_reply reply;

		if (nlh->nlmsg_seq != gs->seq)
			continue;
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			gs->dump_intr = 1;
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			int err = genl_parse_error(gs, nlh, m);

			return err ? err : gs->cb_err;
		}
		if (nlh->nlmsg_type == NLMSG_DONE)
			return gs->cb_err;
		genl_parse_reply(nlh, &reply);
		if (cb && !gs->cb_err)
			gs->cb_err = cb(&reply, arg);
	}
	return 1;
}

int genl_request(struct genl_sock *gs, struct genl_msg *m, genl_reply_cb cb,
		 void *arg)
{
	int ret = genl_send(gs, m);

	while (ret == 0 || ret == 1)
		if ((ret = genl_request_part(gs, m, cb, arg)) <= 0)
			break;
	return ret;
}

static int genl_resolve_cb(const struct genl_reply *r, void *arg)
{
	struct genl_sock *gs = arg;
	struct nlattr *grp;
	int rem;

	if (!r->tb[CTRL_ATTR_FAMILY_ID])
		return -EPROTO;
	gs->family = *(uint16_t *)((char *)r->tb[CTRL_ATTR_FAMILY_ID] +
				   NLA_HDRLEN);
	if (!r->tb[CTRL_ATTR_MCAST_GROUPS])
		return 0;

	grp = (struct nlattr *)((char *)r->tb[CTRL_ATTR_MCAST_GROUPS] +
				NLA_HDRLEN);
	rem = r->tb[CTRL_ATTR_MCAST_GROUPS]->nla_len - NLA_HDRLEN;
	while (rem >= (int)NLA_HDRLEN && grp->nla_len <= rem) {
		struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1];

		genl_parse_attrs(tb, CTRL_ATTR_MCAST_GRP_MAX,
				 (char *)grp + NLA_HDRLEN,
				 grp->nla_len - NLA_HDRLEN);
		if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
		    !strcmp((char *)tb[CTRL_ATTR_MCAST_GRP_NAME] + NLA_HDRLEN,
			    "events"))
			gs->mcgrp_events = genl_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
		rem -= NLA_ALIGN(grp->nla_len);
		grp = (struct nlattr *)((char *)grp + NLA_ALIGN(grp->nla_len));
	}
	return 0;
}

int genl_resolve(struct genl_sock *gs, const char *name)
{
	struct genl_msg m;

	gs->family = 0;
	gs->mcgrp_events = 0;
	genl_msg_init(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	genl_put(&m, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	return genl_request(gs, &m, genl_resolve_cb, gs);
}

int genl_join(struct genl_sock *gs, uint32_t group)
{
	if (setsockopt(gs->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group,
		       sizeof(group)) < 0)
		return -errno;
	return 0;
}

int genl_recv_one(struct genl_sock *gs, struct genl_reply *reply,
		  int timeout_ms)
{
	struct pollfd pfd = { .fd = gs->fd, .events = POLLIN };
	ssize_t n;
	int ret;

	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return -ETIMEDOUT;
	n = recv(gs->fd, rx.buf, sizeof(rx.buf), 0);
	if (n < 0)
		return -errno;
	if (!NLMSG_OK(&rx.nlh, n) || rx.nlh.nlmsg_type != gs->family)
		return -EPROTO;
	genl_parse_reply(&rx.nlh, reply);
	return 0;
}
