/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfabd's own files: reading the module's configuration back and
 * applying a topology as a difference (fabric.c), faults and OCS
 * reconfigurations (reconf.c), logging (log.c), systemd readiness
 * (notify.c), the requester socket (service.c) and the daemon proper
 * (daemon.c). They sit on lib/: the netlink client (<icfab/nl.h>) and
 * the topology library (<icfab/topo.h>), which know nothing of these.
 *
 * Errors come back as -errno.
 */
#ifndef ICFABD_H
#define ICFABD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include <icfab/nl.h>
#include <icfab/proto.h>
#include <icfab/readback.h>
#include <icfab/topo.h>

/* ---- fabric.c: difference, apply (the readback: <icfab/readback.h>) ---- */

/* What a difference consists of; counts only, the list goes to a FILE. */
struct fabric_diff {
	bool params;			/* segment size, time mode, dilation */
	uint32_t nodes_added, nodes_removed, nodes_replaced;
	uint32_t links_added, links_removed, links_replaced;
	uint32_t link_states;		/* LINK_SET only */
	uint32_t route_rows;		/* rows that ROUTE_SET rewrites */
	uint32_t route_entries;		/* entries that differ in them */
};

static inline bool fabric_diff_empty(const struct fabric_diff *d)
{
	return !d->params && !d->nodes_added && !d->nodes_removed &&
	       !d->nodes_replaced && !d->links_added && !d->links_removed &&
	       !d->links_replaced && !d->link_states && !d->route_rows;
}

/* Differences only in link states and routes (what faults change). */
static inline bool fabric_diff_runtime_only(const struct fabric_diff *d)
{
	return !d->params && !d->nodes_added && !d->nodes_removed &&
	       !d->nodes_replaced && !d->links_added && !d->links_removed &&
	       !d->links_replaced;
}

/*
 * Compare @want (routed) with @have. With @out, one line per difference
 * (at most @max_lines, then a count of the rest).
 */
int fabric_diff(const struct topo *want, const struct fabric_state *have,
		struct fabric_diff *d, FILE *out, unsigned int max_lines);

/*
 * Stage the difference between @want and @have on @nl and commit it,
 * expecting @have->generation. On failure the staging is aborted and the
 * committed configuration is unchanged; @why gets the reason.
 */
int fabric_apply(struct icfab_nl *nl, const struct topo *want,
		 const struct fabric_state *have, struct fabric_diff *d,
		 char *why, size_t why_len);

/* What the module's tables do, entry by entry (for --status and tests). */
struct fabric_route_check {
	uint32_t links_down, links_degraded;
	uint64_t pairs;			/* endpoint -> other endpoint */
	uint64_t unreachable;		/* pairs whose source has no entry */
	uint64_t via_down;		/* entries (any node) out by a DOWN link */
	uint64_t via_nothing;		/* entries out by a port without a link */
};

int fabric_route_check(const struct fabric_state *st,
		       struct fabric_route_check *rc);

/* Copy the module's link states into @t, which has the same links. */
uint32_t fabric_adopt_link_states(struct topo *t, const struct fabric_state *st);
/* The outcome of fabric_sync(). */
struct fabric_result {
	uint64_t gen_before, gen_after;	/* equal when nothing changed */
	struct fabric_diff diff;
	uint32_t nr_nodes, nr_links;	/* of the module afterwards */
	uint64_t commit_ps;		/* ps: when the commit took effect
					 * (FABRIC_COMMIT_PS read back) */
};

/*
 * Read the module, apply the difference to @want, commit; once more from
 * a fresh read when somebody else committed in between (-ESTALE).
 */
int fabric_sync(uint32_t fabric_id, const struct topo *want,
		struct fabric_result *res, char *why, size_t why_len);

/* ---- reconf.c: faults and OCS reconfigurations, as live commits ---- */

#define RECONF_MAX_LINKS	64	/* link ids kept for the reply */
#define RECONF_PAIRS_SHOWN	4	/* newly unreachable pairs named */

struct ocs;

struct reconf_result {
	bool committed;			/* false: nothing to change */
	uint64_t gen_before, gen_after;
	uint64_t commit_ps;		/* ps: T, FABRIC_COMMIT_PS after it */
	uint64_t delay_ps;		/* ps: OCS */
	uint64_t up_at_ps;		/* ps: OCS, T + delay */
	uint32_t nr_changes;		/* OCS: input ports whose circuit moved */
	uint32_t nr_links;		/* links changed (ids: the first ones) */
	uint32_t links[RECONF_MAX_LINKS];
	uint32_t route_rows;		/* rows rewritten */
	uint64_t unreachable;		/* endpoint pairs, afterwards */
	uint64_t newly_unreachable;	/* of those, reachable before */
	uint64_t reachable_again;	/* unreachable before, not now */
	char pairs[256];		/* "a->b,c->d": some newly unreachable */
};

const char *reconf_op_name(enum proto_fault_op op);
/*
 * Change @t, route it and commit the difference to fabric @fabric_id; on
 * failure @t is as before and @why says why (naming the link or node).
 */
int reconf_fault_link(struct topo *t, uint32_t fabric_id, uint32_t link,
		      enum proto_fault_op op, uint32_t permille,
		      struct reconf_result *res, char *why, size_t len);
int reconf_fault_node(struct topo *t, uint32_t fabric_id, uint32_t node,
		      enum proto_fault_op op, struct reconf_result *res,
		      char *why, size_t len);
int reconf_ocs_apply(struct topo *t, uint32_t fabric_id, struct ocs *o,
		     const uint32_t *perm, uint32_t nr,
		     struct reconf_result *res, char *why, size_t len);
/* The latest LINK_UP_AT_PS of o's circuits (0: none dark). */
uint64_t reconf_ocs_pending(const struct topo *t, const struct ocs *o);
/*
 * A restarted daemon: take the module's OCS permutations (the ends of
 * the circuits' links) and dark periods into @t, a routed configuration
 * whose link ids are the module's. Returns how many OCSes moved.
 */
int reconf_adopt_ocs(struct topo *t, const struct fabric_state *st);

/* ---- log.c ---- */

enum log_target { LOG_TO_STDERR, LOG_TO_SYSLOG };

void log_init(enum log_target target, int max_level);
void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/* ---- notify.c: sd_notify(3) without libsystemd ---- */

int notify_systemd(const char *state);

/* ---- daemon.c ---- */

struct daemon_opts {
	const char *file;		/* --config FILE */
	const char *preset;		/* or --preset NAME */
	uint32_t fabric_id;
	bool foreground;		/* log to stderr */
	bool fork;			/* --daemon: detach */
	bool verbose;
	const char *socket_path;	/* --socket PATH */
	bool has_admin_gid;		/* --admin-group was given */
	uint32_t admin_gid;
	struct proto_limits limits;	/* --max-clients, ... */
	uint32_t idle_timeout_ms;	/* --idle-timeout; 0: none */
	uint32_t line_timeout_ms;	/* --line-timeout; 0: none */
};

int daemon_run(const struct daemon_opts *o);

/* ---- service.c: the Unix socket (docs/SOCKET.md) ---- */

#define ICFABD_SOCKET_DEFAULT	ICFABD_SOCKET_PATH
#define ICFABD_IDLE_TIMEOUT_MS	60000	/* ms without a request */
#define ICFABD_LINE_TIMEOUT_MS	10000	/* ms to finish a request line */

struct svc_opts {
	const char *path;
	uint32_t fabric_id;
	bool has_admin_gid;
	uint32_t admin_gid;
	struct proto_limits limits;	/* checked by proto_limits_check() */
	uint32_t idle_timeout_ms;	/* close a connection idle this long */
	uint32_t line_timeout_ms;	/* or one whose line is unfinished */
	/* The service committed generation @gen (faults, OCS). */
	void (*committed)(void *arg, uint64_t gen);
	void *arg;
};

struct svc;
struct pollfd;

/*
 * Read the module's circuits, free those whose owner is gone, and
 * listen on o->path. @model must outlive the service or be replaced
 * with svc_set_model() before it is freed.
 */
int svc_open(const struct svc_opts *o, struct topo *model,
	     struct svc **sp);
void svc_close(struct svc *s);
void svc_set_model(struct svc *s, struct topo *model);
/* The service's file descriptors for poll(): svc_nfds() of them. */
unsigned int svc_nfds(const struct svc *s);
void svc_pollfds(const struct svc *s, struct pollfd *pfd);
/*
 * Handle what poll() reported on the svc_pollfds() array, and close the
 * connections whose timeout has passed.
 */
void svc_events(struct svc *s, const struct pollfd *pfd);
/* ms until the next connection times out, for poll(); -1: none does. */
int svc_timeout_ms(const struct svc *s);

#endif /* ICFABD_H */
