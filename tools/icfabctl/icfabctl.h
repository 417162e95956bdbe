/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfabctl: command-line client of the icfab module.
 *
 * Every command registers itself next to its handler
 * (ICFABCTL_COMMAND(), as iw's COMMAND() does); main.c finds them all.
 */
#ifndef ICFABCTL_H
#define ICFABCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <netlink/attr.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include <icfab/array.h>
#include <icfab/json.h>
#include <icfab/nl.h>

#define ICFABCTL_DEFAULT_DEVICE	"/dev/icfab0"

/* Exit codes. */
#define ICFABCTL_EXIT_OK	0
#define ICFABCTL_EXIT_ERROR	1
#define ICFABCTL_EXIT_USAGE	2

/* Global options, shared by all commands. */
struct icfabctl {
	const char *device;	/* -d: character device for "info" */
	bool json;		/* -j: JSON output */
	uint32_t fabric;	/* -f: fabric of topo, node, link, route */
	bool fabric_given;	/* -f was given */
};

struct icfabctl_cmd {
	const char *group;	/* "fabric", or NULL for a top-level command */
	const char *name;
	const char *args;	/* argument synopsis, or NULL */
	const char *help;
	/* argv holds only the command's arguments; returns an exit code. */
	int (*handler)(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		       int argc, char **argv);
};

/*
 * Register a command (GROUP may be NULL, ARGS too). The entries go to one
 * linker section, "icfabctl_cmds", which the linker lays out in the order
 * of the objects on its command line and the compiler in the order of the
 * source (-fno-toplevel-reorder, see the Makefile): that is the order of
 * "icfabctl help".
 */
#define ICFABCTL_COMMAND(_group, _name, _args, _handler, _help)	\
	static const struct icfabctl_cmd ICFABCTL_CMD_VAR(__LINE__)	\
	__attribute__((used, section("icfabctl_cmds"),			\
		       aligned(__alignof__(struct icfabctl_cmd)))) = {	\
		.group = _group,					\
		.name = _name,						\
		.args = _args,						\
		.handler = _handler,					\
		.help = _help,						\
	}

#define ICFABCTL_CMD_VAR(line)		ICFABCTL_CMD_VAR_(line)
#define ICFABCTL_CMD_VAR_(line)		icfabctl_cmd_at_line_##line

/* The linker's bounds of the section: every command. */
extern const struct icfabctl_cmd __start_icfabctl_cmds[];
extern const struct icfabctl_cmd __stop_icfabctl_cmds[];

#define icfabctl_for_each_cmd(c)					\
	for (c = __start_icfabctl_cmds; c < __stop_icfabctl_cmds; c++)

/* circuit.c: icfabd's socket (docs/SOCKET.md) */
struct sock_client {
	int fd;
	FILE *in;
};

/* -S PATH, else $ICFABD_SOCKET, else the default. */
const char *socket_path(const char *given);
int sock_connect(struct sock_client *sc, const char *path);
void sock_close(struct sock_client *sc);
/* One reply line, without its '\n'. */
int sock_line(struct sock_client *sc, char *line, size_t len);
/* Send @req, read the reply's first line; an err reply is printed. */
int sock_request(struct sock_client *sc, const char *req, char *line,
		 size_t len, char **rest, const char *what);
/* Leading "--pin" (when allowed) and "-S PATH" options. */
int sock_parse_opts(const struct icfabctl_cmd *cmd, int *argc, char ***argv,
		    bool allow_pin, bool *pin, const char **path);


/* util.c: messages */
void icfabctl_warn(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* "icfabctl: <what>: strerror(err)"; returns ICFABCTL_EXIT_ERROR. */
int icfabctl_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "icfabctl: <msg>" plus the command's synopsis; returns ICFABCTL_EXIT_USAGE. */
int icfabctl_usage_error(const struct icfabctl_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void icfabctl_print_synopsis(FILE *f, const struct icfabctl_cmd *cmd);
/* "[GROUP ]NAME[ ARGS]", for the synopsis and the help. */
void icfabctl_print_cmd_words(FILE *f, const struct icfabctl_cmd *cmd);

/* util.c: strict number parsing (decimal or 0x-hex, no sign) */
int icfabctl_parse_u32(const char *s, uint32_t *out);

/* util.c: names */
const char *icfabctl_time_mode_name(uint32_t mode);	/* NULL if unknown */
int icfabctl_time_mode_parse(const char *s, uint32_t *out);
/* "netlink (0x1)", "none (0x0)", unknown bits as "bitN". */
void icfabctl_print_features(FILE *f, uint64_t features);

/* util.c: quantities with a unit chosen for the size, e.g. "12.5 GB/s" */
/* bytes/s, decimal (kB/s, MB/s, GB/s, TB/s) */
const char *icfabctl_fmt_bandwidth(char *buf, size_t len, uint64_t bytes_per_s);
/* picoseconds as ps, ns, us, ms or s */
const char *icfabctl_fmt_latency(char *buf, size_t len, uint64_t ps);
/* bytes, binary (KiB, MiB, GiB, TiB, PiB) */
const char *icfabctl_fmt_bytes(char *buf, size_t len, uint64_t bytes);

/* util.c: topology names; "class-N" etc. (in buf) for unknown values */
const char *icfabctl_link_class_name(char *buf, size_t len, uint32_t cls);
const char *icfabctl_link_state_name(char *buf, size_t len, uint32_t state);
const char *icfabctl_node_kind_name(char *buf, size_t len, uint32_t kind);

/*
 * util.c: energy in groups (stats, trace): the link classes, then the
 * memory tiers by kind (a tier's port counts under its tier, not under
 * its class), then the total of every link and port.
 */
#define E_TIER(t)	(ICFAB_LINK_CLASS_MAX + (t))	/* t: SRAM..DDR */
#define E_TOTAL		(ICFAB_LINK_CLASS_MAX + ICFAB_TIER_MAX + 1)
#define E_ROWS		(E_TOTAL + 1)
/* The group of a link of class @cls, the port of tier @tier if not 0. */
uint32_t icfabctl_energy_row(uint32_t cls, uint32_t tier);
/* "nvlink", ..., a tier's "tier hbm" (@json: "hbm"), or "total". */
const char *icfabctl_energy_row_name(uint32_t row, bool json);

/* util.c: icfab values in JSON (lib/json.c) */
void json_features(struct icfab_json *j, uint64_t features);
void json_time_mode(struct icfab_json *j, uint32_t mode);

/*
 * nl.c: the netlink client of lib/, with messages for the user. Open it
 * on @fabric, the one the user named (-f), so that icfab_nl_msg() and
 * the readback ask about that one; prints, returns an exit code.
 */
int icfabctl_nl_open(struct icfab_nl *nl, uint32_t fabric);
/*
 * icfab_nl_exchange(); on an error prints the kernel's extack text
 * ("kernel reports: ...") and "icfabctl: <what>: <strerror>". Returns an
 * exit code.
 */
int icfabctl_nl_transact(struct icfab_nl *nl, struct nl_msg *msg,
			 int (*valid)(struct nl_msg *msg, void *arg),
			 void *arg, const char *what);
/*
 * Print nl->last as icfabctl_nl_transact() does; the place an icfab
 * cookie names is resolved over nl (names by NODE_GET).
 */
void icfabctl_nl_report(struct icfab_nl *nl, const char *what);

/* A dump for icfabctl_dump(): what to ask for, and how to read it. */
struct icfabctl_dump {
	uint8_t cmd;
	int node;			/* ICFAB_A_NODE_ID, or -1: none */
	/* Each reply's attributes, as icfab_nl_request() parses them; */
	icfab_nl_parse_fn parse;
	/* or, parse NULL, each reply as is, for a reader with a policy */
	int (*valid)(struct nl_msg *msg, void *arg);
	void *arg;
	void (*reset)(void *arg);	/* before each attempt, or NULL */
	/* Whether the replies just read came from two generations, or NULL */
	bool (*inconsistent)(void *arg);
	const char *what;		/* for the messages */
	const char *kept_changing;	/* "<what>: <this>" when it never settles */
};
/*
 * A dump of the fabric (-f), read again from the start under the one
 * dump-retry rule of icfab_nl_read_consistent() while it spans a change.
 * Prints what went wrong; returns an exit code.
 */
int icfabctl_dump(struct icfabctl *ctl, struct icfab_nl *nl,
		  const struct icfabctl_dump *d);

/* topo.c: "node 3 \"chip3\", destination 4 \"chip4\"" for an error cookie */
void icfabctl_err_location(struct icfab_nl *nl,
			   const struct icfab_err_cookie *c,
			   char *buf, size_t len);

/* fabric.c: fabric attributes, shared with monitor.c */
/*
 * Validate the attributes of a FABRIC_GET / FABRIC_NTF message into tb
 * (ICFAB_A_MAX + 1 entries). Returns 0 or -EINVAL (bad length).
 */
int icfabctl_fabric_parse(struct nl_msg *msg, struct nlattr **tb);
/* Every attribute as a JSON object's members (id, name, ...). */
void icfabctl_fabric_json(struct icfab_json *j, struct nl_msg *msg,
			  struct nlattr **tb);

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#endif /* ICFABCTL_H */
