/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A deliberately small generic netlink client for the selftests. It is
 * written against the raw socket API rather than libnl so that the tests
 * can send malformed messages and see every byte of the kernel's answer,
 * including the extack message and the offset of the offending attribute.
 */
#ifndef ICFAB_SELFTEST_GENL_H
#define ICFAB_SELFTEST_GENL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#define GENL_BUF_SIZE	16384

struct genl_msg {
	union {
		struct nlmsghdr nlh;
		char buf[GENL_BUF_SIZE];
	};
};

struct genl_sock {
	int fd;
	uint32_t seq;
	uint16_t family;
	uint32_t mcgrp_events;
	/* From the last NLMSG_ERROR: extack text and bad attribute. */
	char extack[256];
	int bad_attr_type;		/* -1 when the kernel named none */
	int missing_attr_type;		/* -1 when none was reported missing */
	unsigned char cookie[20];
	int cookie_len;
	/* Set when a reply of the last request had NLM_F_DUMP_INTR. */
	int dump_intr;
	int cb_err;			/* first error a reply callback returned */
};

/* A parsed reply: attributes by type, valid until the next request. */
#define GENL_MAX_ATTR	128
struct genl_reply {
	uint8_t cmd;
	struct nlattr *tb[GENL_MAX_ATTR + 1];
};

typedef int (*genl_reply_cb)(const struct genl_reply *reply, void *arg);

int genl_open(struct genl_sock *gs);
void genl_close(struct genl_sock *gs);
/* Resolve @name (and its "events" group, if any). Returns 0 or -errno. */
int genl_resolve(struct genl_sock *gs, const char *name);

void genl_msg_init(struct genl_msg *m, uint16_t family, uint8_t cmd,
		   uint16_t flags);
void genl_put(struct genl_msg *m, uint16_t type, const void *data,
	      size_t len);
void genl_put_u32(struct genl_msg *m, uint16_t type, uint32_t v);
void genl_put_u64(struct genl_msg *m, uint16_t type, uint64_t v);

/*
 * Send @m and read until the final ACK, error or end of dump, calling @cb
 * for every data message. Returns 0, or the kernel's -errno (with
 * gs->extack and gs->bad_attr_type filled in).
 */
int genl_request(struct genl_sock *gs, struct genl_msg *m, genl_reply_cb cb,
		 void *arg);

/*
 * Split request, for tests that act in the middle of a dump: send @m, then
 * read one recv() worth of replies (genl_request_part returns 1 while the
 * dump goes on, 0 at its end, or -errno).
 */
int genl_send(struct genl_sock *gs, struct genl_msg *m);
int genl_request_part(struct genl_sock *gs, struct genl_msg *m,
		      genl_reply_cb cb, void *arg);

/* Join a multicast group; then genl_recv_one() reads one notification. */
int genl_join(struct genl_sock *gs, uint32_t group);
int genl_recv_one(struct genl_sock *gs, struct genl_reply *reply,
		  int timeout_ms);

uint32_t genl_u32(const struct nlattr *a);
uint64_t genl_u64(const struct nlattr *a);

#endif
