// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: icfabd's socket protocol (lib/proto.c), both ways.
 * The input is one request line as a client may send it (NUL bytes and
 * all, cut at PROTO_LINE_MAX as the daemon does). It must parse or be
 * refused with a reason, and a parsed request must be consistent: its
 * words point into the line, its counts are within the verb's bounds.
 * The same bytes are then read as a reply line, as icfabctl reads one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/proto.h>

#include "fuzz.h"


static bool inside(const char *p, const char *buf, size_t len)
{
	return p >= buf && p < buf + len;
}

static void check_request(const struct proto_request *r, const char *line,
			  size_t len)
{
	uint32_t i;

	CHECK(r->verb && r->nr_args <= PROTO_MAX_WORDS);
	for (i = 0; i < r->nr_args; i++)
		CHECK(inside(r->args[i], line, len) && r->args[i][0]);
	switch (r->kind) {
	case PROTO_CIRCUIT_OPEN:
	case PROTO_CIRCUIT_PIN:
		CHECK(r->nr_args >= 2 && r->nr_args <= ICFAB_CIRCUIT_MAX_DSTS + 1);
		break;
	case PROTO_CIRCUIT_CLOSE:
		CHECK(r->nr_args == 1);
		break;
	case PROTO_CIRCUIT_LIST:
	case PROTO_COLORS:
		CHECK(r->nr_args == 0);
		break;
	case PROTO_FAULT_LINK:
		CHECK(r->nr_args == (r->op == PROTO_FAULT_DEGRADE ? 4u : 3u));
		CHECK(r->op != PROTO_FAULT_DEGRADE ||
		      (r->permille >= 1 && r->permille <= 999));
		break;
	case PROTO_FAULT_NODE:
		CHECK(r->nr_args == 3 && r->op != PROTO_FAULT_DEGRADE);
		CHECK(r->name && inside(r->name, line, len));
		break;
	case PROTO_OCS_LIST:
		CHECK(r->nr_args == 1);
		break;
	case PROTO_OCS_APPLY:
		CHECK(r->nr_args >= 3 && r->nr_ports == r->nr_args - 2);
		CHECK(r->nr_ports <= PROTO_MAX_WORDS);
		CHECK(r->name && inside(r->name, line, len));
		break;
	default:
		CHECK(!"unknown request kind");
	}
	CHECK(proto_needs(r->kind) == PROTO_PERM_USER ||
	      proto_needs(r->kind) == PROTO_PERM_ADMIN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_request r;
	char why[256], *line, *rest, val[64];
	size_t len = size < PROTO_LINE_MAX - 1 ? size : PROTO_LINE_MAX - 1;
	int ret, err;

	/* The daemon hands proto_parse() a NUL-terminated line. */
	line = malloc(len + 1);
	if (!line)
		return 0;
	memcpy(line, data, len);
	line[len] = '\0';

	why[0] = '\0';
	ret = proto_parse(line, &r, why, sizeof(why));
	if (ret) {
		CHECK(ret == -EINVAL || ret == -E2BIG || ret == -EBADMSG);
		CHECK(why[0] && memchr(why, '\0', sizeof(why)));
		err = proto_errno(proto_errname(-ret));
		CHECK(err == -ret);
	} else {
		check_request(&r, line, len + 1);
	}

	/* The same bytes as a reply. */
	memcpy(line, data, len);
	line[len] = '\0';
	rest = NULL;
	ret = proto_reply(line, &rest);
	CHECK(ret <= 0);
	if (ret != -EPROTO || rest)
		CHECK(rest && inside(rest, line, len + 1));
	if (!ret || ret != -EPROTO)
		CHECK(rest != NULL);
	memcpy(line, data, len);
	line[len] = '\0';
	if (proto_value(line, "id", val, sizeof(val)))
		CHECK(strlen(val) < sizeof(val) && !strchr(val, ' '));
	free(line);
	return 0;
}
