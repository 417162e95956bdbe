/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfabd's Unix socket protocol, version 1 (docs/SOCKET.md): the parts
 * without I/O, so that host tests can check them.
 *
 * A connection starts with the server's line "icfabd 1". Then each
 * request is one line of words; each reply starts with "ok ..." or
 * "err ENAME message". Replies of list requests carry count=N and then
 * N more lines.
 */
#ifndef ICFABD_PROTO_H
#define ICFABD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/icfab_genl.h>

#define PROTO_VERSION		1
#define ICFABD_SOCKET_PATH	"/run/icfabd.sock"	/* the default */
#define PROTO_LINE_MAX		4096	/* bytes of a request, with the '\n' */
#define PROTO_MAX_WORDS		(ICFAB_CIRCUIT_MAX_DSTS + 2)

enum proto_kind {
	PROTO_CIRCUIT_OPEN,		/* circuit-open SRC DST [DST...] */
	PROTO_CIRCUIT_PIN,		/* circuit-pin SRC DST [DST...]: no owner */
	PROTO_CIRCUIT_CLOSE,		/* circuit-close ID */
	PROTO_CIRCUIT_LIST,		/* circuit-list */
	PROTO_COLORS,			/* colors */
	PROTO_FAULT_LINK,		/* fault link ID down|up|degrade PERMILLE */
	PROTO_FAULT_NODE,		/* fault node NODE down|up */
	PROTO_OCS_LIST,			/* ocs list */
	PROTO_OCS_APPLY,		/* ocs apply NAME IN:OUT... | OUT... */
};

enum proto_fault_op {
	PROTO_FAULT_DOWN,
	PROTO_FAULT_UP,
	PROTO_FAULT_DEGRADE,
};

/* What a peer may do; each level includes the ones below. */
enum proto_perm {
	PROTO_PERM_NONE,		/* may connect, and is told no */
	PROTO_PERM_USER,		/* may open /dev/icfabN: circuits */
	PROTO_PERM_ADMIN,		/* root or --admin-group: everything */
};

struct proto_request {
	enum proto_kind kind;
	const char *verb;
	uint32_t nr_args;
	char *args[PROTO_MAX_WORDS];	/* point into the parsed line */
	uint32_t id;			/* circuit-close, fault link */
	enum proto_fault_op op;		/* fault */
	uint32_t permille;		/* fault link ID degrade: 1..999 */
	const char *name;		/* fault node, ocs apply */
	/*
	 * ocs apply: either pairs (every word IN:OUT, pairs_given) or a
	 * full permutation (no word has a colon): input i -> perm[i].
	 */
	bool pairs_given;
	uint32_t nr_ports;		/* entries in perm[] or pairs */
	uint32_t perm[PROTO_MAX_WORDS];	/* permutation, or pair outputs */
	uint32_t pair_in[PROTO_MAX_WORDS];	/* pair inputs */
};

/*
 * Parse one request line (without its '\n'; words are cut in place).
 * Returns 0, or -errno with why set: -EBADMSG for an unknown verb,
 * -EINVAL for wrong arguments, -E2BIG for too many.
 */
int proto_parse(char *line, struct proto_request *r, char *why, size_t len);

/* The level a request needs. */
enum proto_perm proto_needs(enum proto_kind kind);

/* Who is asking (SO_PEERCRED, SO_PEERGROUPS). */
struct proto_peer {
	uint32_t pid, uid, gid;
	uint32_t nr_groups;
	const uint32_t *groups;		/* supplementary groups */
};

/* The device file's owner and mode, from stat(2). */
struct proto_dev {
	uint32_t uid, gid, mode;
};

/*
 * What @p may do: ADMIN for uid 0 or a member of @admin_gid (when
 * @has_admin_gid); USER when @dev's mode lets @p open it read-write, as
 * the kernel's permission check would (owner, group, other); NONE else.
 */
enum proto_perm proto_peer_perm(const struct proto_peer *p,
				const struct proto_dev *dev,
				bool has_admin_gid, uint32_t admin_gid);
const char *proto_perm_name(enum proto_perm perm);

/*
 * How many connections the server takes (docs/SOCKET.md, "Limits"). The
 * last admin_slots of max_clients are for administrators only, and a uid
 * that is not an administrator's holds at most max_per_uid.
 */
struct proto_limits {
	uint32_t max_clients;
	uint32_t max_per_uid;
	uint32_t admin_slots;
};

#define PROTO_MAX_CLIENTS_DEFAULT	64
#define PROTO_MAX_CLIENTS_LIMIT		1024	/* all polled at once */
#define PROTO_MAX_PER_UID_DEFAULT	16
#define PROTO_ADMIN_SLOTS_DEFAULT	8

/* Limits that make sense together: 0, or -EINVAL with why set. */
int proto_limits_check(const struct proto_limits *l, char *why, size_t len);

/*
 * Whether a new connection of level @perm may be served while the server
 * holds @nr_clients connections, @nr_of_uid of them from the same uid.
 * Returns 0, or -errno with why set: -EBUSY when the server is full (for
 * a non-administrator: when only the reserved slots are left), -EUSERS
 * when the uid holds max_per_uid connections.
 */
int proto_admit(const struct proto_limits *l, enum proto_perm perm,
		uint32_t nr_clients, uint32_t nr_of_uid, char *why, size_t len);

/* Strict decimal u32. */
bool proto_parse_u32(const char *s, uint32_t *out);

/* "ENOSPC" for ENOSPC (positive); "E?" for one not in the table. */
const char *proto_errname(int err);
/* The errno of a name, or 0. */
int proto_errno(const char *name);

/*
 * A reply's first line: "ok ..." gives 0 and the rest in *rest; "err
 * ENAME message" gives -errno and the message in *rest; -EPROTO for
 * anything else.
 */
int proto_reply(char *line, char **rest);

/* Find "key=" in a reply line; its value, cut at the next space. */
bool proto_value(const char *line, const char *key, char *buf, size_t len);

#endif /* ICFABD_PROTO_H */
