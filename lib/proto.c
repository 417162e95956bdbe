// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd's socket protocol without I/O: request parsing, permissions,
 * error names and reply parsing (shared with icfabctl).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/proto.h>

static const struct {
	const char *verb;
	enum proto_kind kind;
	uint32_t min_args, max_args;
	const char *synopsis;
} verbs[] = {
	{ "circuit-open", PROTO_CIRCUIT_OPEN, 2, ICFAB_CIRCUIT_MAX_DSTS + 1,
	  "circuit-open SRC DST [DST...]" },
	{ "circuit-pin", PROTO_CIRCUIT_PIN, 2, ICFAB_CIRCUIT_MAX_DSTS + 1,
	  "circuit-pin SRC DST [DST...]" },
	{ "circuit-close", PROTO_CIRCUIT_CLOSE, 1, 1, "circuit-close ID" },
	{ "circuit-list", PROTO_CIRCUIT_LIST, 0, 0, "circuit-list" },
	{ "colors", PROTO_COLORS, 0, 0, "colors" },
	/* Two-word verbs: the second word is the first argument. */
	{ "fault", PROTO_FAULT_LINK, 3, 4,
	  "fault link ID down|up|degrade PERMILLE, fault node NODE down|up" },
	{ "ocs", PROTO_OCS_LIST, 1, PROTO_MAX_WORDS,
	  "ocs list, ocs apply NAME IN:OUT... or ocs apply NAME OUT..." },
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

bool proto_parse_u32(const char *s, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*out = v;
	return true;
}

static int parse_fault(struct proto_request *r, char *why, size_t len)
{
	const char *what = r->args[0], *op = r->args[2];
	bool link = !strcmp(what, "link");

	if (!link && strcmp(what, "node")) {
		snprintf(why, len, "fault: '%.32s': expected link or node; usage: fault link ID down|up|degrade PERMILLE, fault node NODE down|up",
			 what);
		return -EINVAL;
	}
	r->kind = link ? PROTO_FAULT_LINK : PROTO_FAULT_NODE;
	if (!strcmp(op, "down")) {
		r->op = PROTO_FAULT_DOWN;
	} else if (!strcmp(op, "up")) {
		r->op = PROTO_FAULT_UP;
	} else if (link && !strcmp(op, "degrade")) {
		r->op = PROTO_FAULT_DEGRADE;
	} else {
		snprintf(why, len, "fault %s: '%.32s': expected %s", what, op,
			 link ? "down, up or degrade PERMILLE" : "down or up");
		return -EINVAL;
	}
	if ((r->op == PROTO_FAULT_DEGRADE) != (r->nr_args == 4)) {
		snprintf(why, len, r->op == PROTO_FAULT_DEGRADE ?
			 "fault link: degrade needs PERMILLE (1..999)" :
			 "fault %s: %s takes no more arguments", what, op);
		return -EINVAL;
	}
	if (link && !proto_parse_u32(r->args[1], &r->id)) {
		snprintf(why, len, "fault link: '%.64s' is not a link id",
			 r->args[1]);
		return -EINVAL;
	}
	if (!link)
		r->name = r->args[1];
	if (r->op == PROTO_FAULT_DEGRADE &&
	    (!proto_parse_u32(r->args[3], &r->permille) || !r->permille ||
	     r->permille > 999)) {
		snprintf(why, len, "degrade: permille %.32s out of 1..999",
			 r->args[3]);
		return -EINVAL;
	}
	return 0;
}

static int parse_ocs(struct proto_request *r, char *why, size_t len)
{
	uint32_t i, colons = 0;

	if (!strcmp(r->args[0], "list")) {
		if (r->nr_args != 1) {
			snprintf(why, len, "ocs list takes no arguments");
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(r->args[0], "apply")) {
		snprintf(why, len, "ocs: '%.32s': expected list or apply",
			 r->args[0]);
		return -EINVAL;
	}
	r->kind = PROTO_OCS_APPLY;
	if (r->nr_args < 3) {
		snprintf(why, len, "ocs apply: usage: ocs apply NAME IN:OUT... or ocs apply NAME OUT... (a full permutation)");
		return -EINVAL;
	}
	r->name = r->args[1];
	r->nr_ports = r->nr_args - 2;
	for (i = 0; i < r->nr_ports; i++)
		colons += !!strchr(r->args[i + 2], ':');
	if (colons && colons != r->nr_ports) {
		snprintf(why, len, "ocs apply %.32s: give IN:OUT pairs or a full permutation, not both",
			 r->name);
		return -EINVAL;
	}
	r->pairs_given = colons;
	for (i = 0; i < r->nr_ports; i++) {
		char *w = r->args[i + 2], *colon = strchr(w, ':');
		bool good;

		if (colon) {
			*colon = '\0';
			good = proto_parse_u32(w, &r->pair_in[i]) &&
			       proto_parse_u32(colon + 1, &r->perm[i]);
			*colon = ':';
		} else {
			good = proto_parse_u32(w, &r->perm[i]);
		}
		if (!good) {
			snprintf(why, len, "ocs apply %.32s: '%.32s' is not %s",
				 r->name, w, colon ? "IN:OUT (port numbers)" :
				 "an output port number");
			return -EINVAL;
		}
	}
	return 0;
}

int proto_parse(char *line, struct proto_request *r, char *why, size_t len)
{
	char *words[PROTO_MAX_WORDS + 1];
	uint32_t n = 0, i;
	char *save, *w;

	memset(r, 0, sizeof(*r));
	for (w = strtok_r(line, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		if (n == PROTO_MAX_WORDS + 1) {
			snprintf(why, len, "%s: more than %u words", words[0],
				 PROTO_MAX_WORDS);
			return -E2BIG;
		}
		words[n++] = w;
	}
	if (!n) {
		snprintf(why, len, "empty request");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_LEN(verbs); i++)
		if (!strcmp(words[0], verbs[i].verb))
			break;
	if (i == ARRAY_LEN(verbs)) {
		snprintf(why, len, "unknown request '%.64s'", words[0]);
		return -EBADMSG;
	}
	r->kind = verbs[i].kind;
	r->verb = verbs[i].verb;
	r->nr_args = n - 1;
	if (r->nr_args < verbs[i].min_args || r->nr_args > verbs[i].max_args) {
		snprintf(why, len, "%s: %u arguments; usage: %s", r->verb,
			 r->nr_args, verbs[i].synopsis);
		return r->nr_args > verbs[i].max_args ? -E2BIG : -EINVAL;
	}
	memcpy(r->args, words + 1, r->nr_args * sizeof(*r->args));
	if (r->kind == PROTO_FAULT_LINK)
		return parse_fault(r, why, len);
	if (r->kind == PROTO_OCS_LIST)
		return parse_ocs(r, why, len);
	if (r->kind == PROTO_CIRCUIT_CLOSE && !proto_parse_u32(r->args[0], &r->id)) {
		snprintf(why, len, "%s: '%.64s' is not a circuit id", r->verb,
			 r->args[0]);
		return -EINVAL;
	}
	return 0;
}

enum proto_perm proto_needs(enum proto_kind kind)
{
	switch (kind) {
	case PROTO_CIRCUIT_PIN:
	case PROTO_FAULT_LINK:
	case PROTO_FAULT_NODE:
	case PROTO_OCS_LIST:
	case PROTO_OCS_APPLY:
		return PROTO_PERM_ADMIN;
	case PROTO_CIRCUIT_OPEN:
	case PROTO_CIRCUIT_CLOSE:	/* someone else's: ADMIN, checked later */
	case PROTO_CIRCUIT_LIST:
	case PROTO_COLORS:
	default:
		return PROTO_PERM_USER;
	}
}

static bool in_groups(const struct proto_peer *p, uint32_t gid)
{
	uint32_t i;

	if (p->gid == gid)
		return true;
	for (i = 0; i < p->nr_groups; i++)
		if (p->groups[i] == gid)
			return true;
	return false;
}

enum proto_perm proto_peer_perm(const struct proto_peer *p,
				const struct proto_dev *dev,
				bool has_admin_gid, uint32_t admin_gid)
{
	uint32_t rw;

	if (p->uid == 0 || (has_admin_gid && in_groups(p, admin_gid)))
		return PROTO_PERM_ADMIN;
	/* As the kernel checks: the first class that matches decides. */
	if (p->uid == dev->uid)
		rw = (dev->mode >> 6) & 06;
	else if (in_groups(p, dev->gid))
		rw = (dev->mode >> 3) & 06;
	else
		rw = dev->mode & 06;
	return rw == 06 ? PROTO_PERM_USER : PROTO_PERM_NONE;
}

const char *proto_perm_name(enum proto_perm perm)
{
	switch (perm) {
	case PROTO_PERM_ADMIN:
		return "admin";
	case PROTO_PERM_USER:
		return "user";
	default:
		return "none";
	}
}

int proto_limits_check(const struct proto_limits *l, char *why, size_t len)
{
	if (!l->max_clients || l->max_clients > PROTO_MAX_CLIENTS_LIMIT)
		snprintf(why, len, "max-clients %u out of 1..%u",
			 l->max_clients, PROTO_MAX_CLIENTS_LIMIT);
	else if (l->admin_slots >= l->max_clients)
		snprintf(why, len,
			 "admin-slots %u leaves no slot of max-clients %u to users",
			 l->admin_slots, l->max_clients);
	else if (!l->max_per_uid || l->max_per_uid > l->max_clients)
		snprintf(why, len, "max-per-uid %u out of 1..%u (max-clients)",
			 l->max_per_uid, l->max_clients);
	else
		return 0;
	return -EINVAL;
}

int proto_admit(const struct proto_limits *l, enum proto_perm perm,
		uint32_t nr_clients, uint32_t nr_of_uid, char *why, size_t len)
{
	bool admin = perm >= PROTO_PERM_ADMIN;

	if (nr_clients >= l->max_clients) {
		snprintf(why, len, "too many connections (%u)", nr_clients);
		return -EBUSY;
	}
	if (!admin && nr_clients >= l->max_clients - l->admin_slots) {
		snprintf(why, len,
			 "too many connections: the last %u of %u are for administrators",
			 l->admin_slots, l->max_clients);
		return -EBUSY;
	}
	if (!admin && nr_of_uid >= l->max_per_uid) {
		snprintf(why, len, "too many connections from this uid (%u)",
			 nr_of_uid);
		return -EUSERS;
	}
	return 0;
}

static const struct {
	int err;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
	{ EIO, "EIO" }, { E2BIG, "E2BIG" }, { ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
	{ ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" },
	{ ERANGE, "ERANGE" }, { ELOOP, "ELOOP" }, { EBADMSG, "EBADMSG" },
	{ EPROTO, "EPROTO" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	{ ENETDOWN, "ENETDOWN" }, { EHOSTUNREACH, "EHOSTUNREACH" },
	{ ESTALE, "ESTALE" }, { EINTR, "EINTR" }, { EAGAIN, "EAGAIN" },
	{ EMSGSIZE, "EMSGSIZE" }, { EUSERS, "EUSERS" },
	{ ETIMEDOUT, "ETIMEDOUT" }, { EDQUOT, "EDQUOT" },
};

const char *proto_errname(int err)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(errnames); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	return "E?";
}

int proto_errno(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(errnames); i++)
		if (!strcmp(errnames[i].name, name))
			return errnames[i].err;
	return 0;
}

int proto_reply(char *line, char **rest)
{
	char *sp;
	int e;

	if (!strcmp(line, "ok") || !strncmp(line, "ok ", 3)) {
		*rest = line + (line[2] ? 3 : 2);
		return 0;
	}
	if (strncmp(line, "err ", 4))
		return -EPROTO;
	sp = strchr(line + 4, ' ');
	if (sp)
		*sp = '\0';
	e = proto_errno(line + 4);
	*rest = sp ? sp + 1 : line + strlen(line);
	return e ? -e : -EPROTO;
}

bool proto_value(const char *line, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=') {
			size_t n = strcspn(p + klen + 1, " ");

			if (n >= len)
				return false;
			memcpy(buf, p + klen + 1, n);
			buf[n] = '\0';
			return true;
		}
		p += klen;
	}
	return false;
}
