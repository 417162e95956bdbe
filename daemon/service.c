// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd's Unix socket: runtimes and icfabctl ask for circuits here
 * (docs/SOCKET.md has the protocol and the permission policy).
 *
 * The module holds the truth. Every circuit is installed with
 * CIRCUIT_NEW, which gives its id and re-checks its color; the daemon's
 * allocator (circuit.c) is a cache of the module's circuits, rebuilt from
 * a CIRCUIT_GET dump when it starts, when the model changes, before every
 * answer that reports state, and when the module refuses a color the
 * cache thought free (somebody else installed a circuit): then the
 * request is planned once more.
 *
 * A circuit belongs to the process that asked for it (SO_PEERCRED pid
 * and uid, stored in the module) and is freed when that process exits:
 * the daemon holds a pidfd per owner and polls it. A restarted daemon
 * finds the owners in the module's circuits and frees those whose
 * process is gone (or whose pid now belongs to another uid). Pinned
 * circuits (circuit-pin, administrators only) have no owner process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include <icfab/array.h>
#include <icfab/circuit.h>
#include <icfab/ocs.h>
#include "icfabd.h"
#include <icfab/proto.h>

#define SVC_MAX_GROUPS		256
#define SVC_SEND_TIMEOUT_S	2	/* a client that does not read is dropped */
#define SVC_SYNC_RETRIES	5	/* dumps that spanned a change, in a row */

struct client {
	int fd;
	uint64_t idle_since;		/* ms: accepted, or the last request */
	uint64_t partial_since;		/* ms: the first byte of a line; 0: none */
	uint32_t groups[SVC_MAX_GROUPS];
	struct proto_peer peer;
	enum proto_perm perm;
	size_t len;
	char buf[PROTO_LINE_MAX + 1];
};

struct owner {
	uint32_t pid, uid;
	int pidfd;
	bool used;			/* scratch of owners_update() */
};

struct svc {
	struct svc_opts o;
	int lfd;
	bool bound;			/* we made o.path */
	struct icfab_nl nl;
	struct topo *model;		/* the daemon's; faults and OCS change it */
	struct circuit_table *ct;
	struct client **clients;	/* o.limits.max_clients */
	uint32_t nr_clients;
	struct owner *owners;
	uint32_t nr_owners, cap_owners;
};

/* ---- the module's circuits ---- */

static int nl_circuit(struct nlattr **tb, struct circuit *c)
{
	memset(c, 0, sizeof(*c));
	if (!tb[ICFAB_A_CIRCUIT_ID] || !tb[ICFAB_A_CIRCUIT_COLOR] ||
	    !tb[ICFAB_A_CIRCUIT_SRC] || !tb[ICFAB_A_CIRCUIT_DSTS] ||
	    !tb[ICFAB_A_CIRCUIT_ROUTERS])
		return -EPROTO;
	c->id = nla_get_u32(tb[ICFAB_A_CIRCUIT_ID]);
	c->color = nla_get_u32(tb[ICFAB_A_CIRCUIT_COLOR]);
	c->src = nla_get_u32(tb[ICFAB_A_CIRCUIT_SRC]);
	if (tb[ICFAB_A_CIRCUIT_OWNER_PID])
		c->owner = nla_get_u32(tb[ICFAB_A_CIRCUIT_OWNER_PID]);
	if (tb[ICFAB_A_CIRCUIT_OWNER_UID])
		c->owner_uid = nla_get_u32(tb[ICFAB_A_CIRCUIT_OWNER_UID]);
	c->nr_dsts = nla_len(tb[ICFAB_A_CIRCUIT_DSTS]) / sizeof(uint32_t);
	c->dsts = nla_data(tb[ICFAB_A_CIRCUIT_DSTS]);
	c->nr_routers = nla_len(tb[ICFAB_A_CIRCUIT_ROUTERS]) / sizeof(uint32_t);
	c->routers = nla_data(tb[ICFAB_A_CIRCUIT_ROUTERS]);
	return 0;
}

static int adopt_one(struct nlattr **tb, void *arg)
{
	struct circuit_table *ct = arg;
	struct topo_err err = { "" };
	struct circuit c;
	int ret;

	ret = nl_circuit(tb, &c);
	if (ret)
		return ret;
	ret = circuit_adopt(ct, &c, &err);
	if (ret)
		log_warn("the module's circuit %u does not fit the model: %s",
			 c.id, err.msg[0] ? err.msg : strerror(-ret));
	return ret == -ENOMEM ? ret : 0;
}

/* Rebuild the allocator from the module's circuits. */
static int svc_sync(struct svc *s)
{
	struct circuit_table *ct = NULL;
	struct topo_err err = { "" };
	char why[384];
	int ret, tries;

	for (tries = 0; tries < SVC_SYNC_RETRIES; tries++) {
		struct nl_msg *msg;

		ret = circuit_table_new(s->model, &ct, &err);
		if (ret) {
			log_err("circuit table: %s",
				err.msg[0] ? err.msg : strerror(-ret));
			return ret;
		}
		msg = icfab_nl_msg(&s->nl, ICFAB_CMD_CIRCUIT_GET, NLM_F_DUMP, 0);
		ret = msg ? icfab_nl_dump(&s->nl, msg, adopt_one, ct) : -ENOMEM;
		if (ret != -EINTR)
			break;
		circuit_table_free(ct);
		ct = NULL;
	}
	if (ret) {
		log_err("reading the module's circuits: %s",
			icfab_nl_strerror(&s->nl, ret, why, sizeof(why)));
		circuit_table_free(ct);
		return ret;
	}
	circuit_table_free(s->ct);
	s->ct = ct;
	return 0;
}

static int nl_circuit_del(struct svc *s, uint32_t id)
{
	struct nl_msg *msg = icfab_nl_msg(&s->nl, ICFAB_CMD_CIRCUIT_DEL, 0, 0);

	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, ICFAB_A_CIRCUIT_ID, id)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	return icfab_nl_request(&s->nl, msg, NULL, NULL);
}

/* Free one circuit in the module and in the cache. */
static int circuit_free(struct svc *s, uint32_t id)
{
	char why[384];
	int ret;

	ret = nl_circuit_del(s, id);
	if (ret && ret != -ENOENT) {
		log_err("freeing circuit %u: %s", id,
			icfab_nl_strerror(&s->nl, ret, why, sizeof(why)));
		return ret;
	}
	circuit_close(s->ct, id, &(struct topo_err){ "" });
	return 0;
}

/* ---- owners ---- */

/* A pidfd of @pid if it runs as @uid; -ESRCH when it is gone. */
static int owner_pidfd(uint32_t pid, uint32_t uid)
{
	char path[32];
	struct stat st;
	int fd;

	fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd < 0)
		return -errno;
	/* A pid reused by another user's process is not the owner. */
	snprintf(path, sizeof(path), "/proc/%u", pid);
	if (stat(path, &st) || st.st_uid != uid) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* Free every circuit of owner @pid. Returns how many. */
static uint32_t owner_release(struct svc *s, uint32_t pid)
{
	const struct circuit *c;
	uint32_t *ids, n = 0, i, freed = 0;

	ids = malloc((circuit_count(s->ct) + 1) * sizeof(*ids));
	if (!ids)
		return 0;
	circuit_for_each(c, s->ct)
		if (c->owner == pid)
			ids[n++] = c->id;
	for (i = 0; i < n; i++)
		freed += !circuit_free(s, ids[i]);
	free(ids);
	return freed;
}

static struct owner *owner_find(struct svc *s, uint32_t pid)
{
	uint32_t i;

	for (i = 0; i < s->nr_owners; i++)
		if (s->owners[i].pid == pid)
			return &s->owners[i];
	return NULL;
}

static void owner_drop(struct svc *s, struct owner *o)
{
	close(o->pidfd);
	*o = s->owners[--s->nr_owners];
}

/*
 * Watch every owner of a circuit, stop watching owners without one, and
 * free the circuits of owners that are gone.
 */
static void owners_update(struct svc *s)
{
	const struct circuit *c;
	uint32_t i;

	if (!s->ct)
		return;
	for (i = 0; i < s->nr_owners; i++)
		s->owners[i].used = false;
again:
	circuit_for_each(c, s->ct) {
		struct owner *o;
		uint32_t pid = c->owner, uid = c->owner_uid, n;
		int fd;

		if (!pid)
			continue;		/* pinned */
		o = owner_find(s, pid);
		if (o) {
			o->used = true;
			continue;
		}
		fd = owner_pidfd(pid, uid);
		if (fd < 0 && fd != -ESRCH) {
			/* Not known to be gone: keep, and try next time. */
			log_warn("cannot watch owner pid %u: %s", pid,
				 strerror(-fd));
			continue;
		}
		if (fd < 0) {
			n = owner_release(s, pid);
			log_notice("owner pid %u (uid %u) is gone: freed its %u circuit(s)",
				   pid, uid, n);
			/*
			 * The table changed under c. Every pass frees at
			 * least one circuit, so this ends; what the module
			 * refused to free stays for the next update.
			 */
			if (n)
				goto again;
			continue;
		}
		if (icfab_array_grow((void **)&s->owners, &s->cap_owners,
				     s->nr_owners, sizeof(*s->owners), 16)) {
			close(fd);
			log_err("no memory to watch owner pid %u", pid);
			continue;
		}
		s->owners[s->nr_owners++] = (struct owner){
			.pid = pid, .uid = uid, .pidfd = fd, .used = true,
		};
	}
	for (i = 0; i < s->nr_owners;) {
		if (!s->owners[i].used)
			owner_drop(s, &s->owners[i]);
		else
			i++;
	}
}

/* ---- replies ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void client_drop(struct svc *s, uint32_t idx)
{
	close(s->clients[idx]->fd);
	free(s->clients[idx]);
	s->clients[idx] = s->clients[--s->nr_clients];
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* Replies are built in a memstream and sent whole. */
struct reply {
	char *buf;
	size_t len;
	FILE *f;
};

static int reply_open(struct reply *r)
{
	r->buf = NULL;
	r->len = 0;
	r->f = open_memstream(&r->buf, &r->len);
	return r->f ? 0 : -ENOMEM;
}

static int reply_send(struct client *c, struct reply *r)
{
	int ret;

	if (fclose(r->f)) {
		free(r->buf);
		return -ENOMEM;
	}
	ret = send_all(c->fd, r->buf, r->len);
	free(r->buf);
	return ret;
}

static int reply_err(struct client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply_err(struct client *c, int err, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "err %s ", proto_errname(-err));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	/* One line, whatever the message held. */
	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	strcat(line, "\n");
	return send_all(c->fd, line, strlen(line));
}

static const char *node_name(const struct svc *s, uint32_t node)
{
	return node < s->model->nr_nodes ? s->model->nodes[node].name : "?";
}

static void put_nodes(struct svc *s, FILE *f, const uint32_t *ids,
		      uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? "," : "", node_name(s, ids[i]));
	if (!n)
		fputc('-', f);
}

/* ---- requests ---- */

static int svc_node(const struct topo *t, const char *arg, uint32_t *id,
		    char *why, size_t len)
{
	uint32_t v;
	int n;

	if (proto_parse_u32(arg, &v)) {
		if (v >= t->nr_nodes) {
			snprintf(why, len, "no node %u (the fabric has %u)", v,
				 t->nr_nodes);
			return -ENOENT;
		}
		*id = v;
		return 0;
	}
	n = topo_find_node(t, arg);
	if (n < 0) {
		snprintf(why, len, "no node named '%.64s'", arg);
		return -ENOENT;
	}
	*id = n;
	return 0;
}

/* The reply to CIRCUIT_NEW carries the id. */
static int new_reply(struct nlattr **tb, void *arg)
{
	uint32_t *id = arg;

	if (!tb[ICFAB_A_CIRCUIT_ID])
		return -EPROTO;
	*id = nla_get_u32(tb[ICFAB_A_CIRCUIT_ID]);
	return 0;
}

static int install(struct svc *s, const struct circuit_plan *p, uint32_t src,
		   const uint32_t *dsts, uint32_t nr_dsts, uint32_t pid,
		   uint32_t uid, uint32_t *id)
{
	struct nl_msg *msg;

	msg = icfab_nl_msg(&s->nl, ICFAB_CMD_CIRCUIT_NEW, 0,
			   4 * (nr_dsts + p->nr_routers));
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, ICFAB_A_CIRCUIT_COLOR, p->color) ||
	    nla_put_u32(msg, ICFAB_A_CIRCUIT_SRC, src) ||
	    nla_put_u32(msg, ICFAB_A_CIRCUIT_OWNER_PID, pid) ||
	    nla_put_u32(msg, ICFAB_A_CIRCUIT_OWNER_UID, uid) ||
	    nla_put(msg, ICFAB_A_CIRCUIT_DSTS, 4 * nr_dsts, dsts) ||
	    nla_put(msg, ICFAB_A_CIRCUIT_ROUTERS, 4 * p->nr_routers,
		    p->routers)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	*id = UINT32_MAX;
	return icfab_nl_request(&s->nl, msg, new_reply, id);
}

static int do_open(struct svc *s, struct client *c,
		   const struct proto_request *r, bool pin)
{
	uint32_t dsts[ICFAB_CIRCUIT_MAX_DSTS], nr = r->nr_args - 1;
	uint32_t src, pid = pin ? 0 : c->peer.pid, id, i;
	struct topo_err err = { "" };
	struct circuit_plan p;
	struct circuit rec;
	char why[512];
	int ret, tries;

	if (svc_node(s->model, r->args[0], &src, why, sizeof(why)))
		return reply_err(c, -ENOENT, "source: %s", why);
	for (i = 0; i < nr; i++)
		if (svc_node(s->model, r->args[i + 1], &dsts[i], why,
			     sizeof(why)))
			return reply_err(c, -ENOENT, "destination %u: %s",
					 i + 1, why);

	for (tries = 0;; tries++) {
		ret = svc_sync(s);
		if (ret)
			return reply_err(c, ret,
					 "cannot read the module's circuits");
		ret = circuit_plan(s->ct, src, dsts, nr, nr > 1, &p, &err);
		if (ret)
			return reply_err(c, ret, "%s", err.msg);
		if (p.nr_routers > ICFAB_CIRCUIT_MAX_ROUTERS) {
			circuit_plan_free(&p);
			return reply_err(c, -E2BIG,
					 "the %s crosses %u routers, the module takes %u",
					 nr > 1 ? "tree" : "path", p.nr_routers,
					 ICFAB_CIRCUIT_MAX_ROUTERS);
		}
		ret = install(s, &p, src, dsts, nr, pid, c->peer.uid, &id);
		if (!ret)
			break;
		circuit_plan_free(&p);
		/*
		 * -ENOSPC from the module: somebody else holds a color the
		 * cache thought free. Read the module and plan once more.
		 */
		if (ret != -ENOSPC || tries)
			return reply_err(c, ret, "%s",
					 icfab_nl_strerror(&s->nl, ret, why,
							   sizeof(why)));
	}

	rec = (struct circuit){
		.id = id, .owner = pid, .owner_uid = c->peer.uid,
		.color = p.color, .src = src, .multicast = nr > 1,
		.nr_dsts = nr, .dsts = dsts, .nr_links = p.nr_links,
		.links = p.links, .nr_routers = p.nr_routers,
		.routers = p.routers,
	};
	ret = circuit_adopt(s->ct, &rec, &err);
	if (ret)	/* the cache is off: the next request reads it again */
		log_warn("circuit %u: %s", id, err.msg);
	log_info("circuit %u: %s -> %u destination(s), color %u, %u routers, owner pid %u uid %u",
		 id, node_name(s, src), nr, p.color, p.nr_routers, pid,
		 c->peer.uid);
	circuit_plan_free(&p);
	owners_update(s);
	snprintf(why, sizeof(why), "ok id=%u color=%u routers=%u\n", id,
		 rec.color, rec.nr_routers);
	return send_all(c->fd, why, strlen(why));
}

static int do_close(struct svc *s, struct client *c,
		    const struct proto_request *r)
{
	const struct circuit *ci;
	char why[384];
	int ret;

	ret = svc_sync(s);
	if (ret)
		return reply_err(c, ret, "cannot read the module's circuits");
	ci = circuit_get(s->ct, r->id);
	if (!ci)
		return reply_err(c, -ENOENT, "no circuit %u", r->id);
	if (c->perm < PROTO_PERM_ADMIN && ci->owner_uid != c->peer.uid)
		return reply_err(c, -EPERM,
				 "circuit %u belongs to uid %u: only its owner or an administrator may close it",
				 r->id, ci->owner_uid);
	ret = nl_circuit_del(s, r->id);
	if (ret)
		return reply_err(c, ret, "%s",
				 icfab_nl_strerror(&s->nl, ret, why, sizeof(why)));
	circuit_close(s->ct, r->id, &(struct topo_err){ "" });
	owners_update(s);
	log_info("circuit %u closed by pid %u uid %u", r->id, c->peer.pid,
		 c->peer.uid);
	return send_all(c->fd, "ok\n", 3);
}

static int do_list(struct svc *s, struct client *c)
{
	const struct circuit *ci;
	struct reply rp;
	int ret;

	ret = svc_sync(s);
	if (ret)
		return reply_err(c, ret, "cannot read the module's circuits");
	if (reply_open(&rp))
		return reply_err(c, -ENOMEM, "no memory");
	fprintf(rp.f, "ok count=%u\n", circuit_count(s->ct));
	circuit_for_each(ci, s->ct) {
		fprintf(rp.f, "circuit id=%u color=%u owner_pid=%u owner_uid=%u src=%s dsts=",
			ci->id, ci->color, ci->owner, ci->owner_uid,
			node_name(s, ci->src));
		put_nodes(s, rp.f, ci->dsts, ci->nr_dsts);
		fputs(" routers=", rp.f);
		put_nodes(s, rp.f, ci->routers, ci->nr_routers);
		fputc('\n', rp.f);
	}
	return reply_send(c, &rp);
}

static int do_colors(struct svc *s, struct client *c)
{
	uint32_t i, n = 0, used, total;
	struct reply rp;
	char label[64];
	int ret;

	ret = svc_sync(s);
	if (ret)
		return reply_err(c, ret, "cannot read the module's circuits");
	for (i = 0; i < s->model->nr_nodes; i++)
		n += circuit_is_router(s->model, i);
	if (reply_open(&rp))
		return reply_err(c, -ENOMEM, "no memory");
	fprintf(rp.f, "ok count=%u\n", n);
	for (i = 0; i < s->model->nr_nodes; i++) {
		if (circuit_router_usage(s->ct, i, &used, &total))
			continue;
		fprintf(rp.f, "router id=%u name=%s label=%s used=%u total=%u\n",
			i, node_name(s, i),
			circuit_router_label(s->model, i, label, sizeof(label)),
			used, total);
	}
	return reply_send(c, &rp);
}

/* ---- faults and the OCS (administrators) ---- */

static void put_links(FILE *f, const struct reconf_result *res)
{
	uint32_t i, n = res->nr_links < RECONF_MAX_LINKS ? res->nr_links :
			RECONF_MAX_LINKS;

	for (i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", res->links[i]);
	if (!n)
		fputc('-', f);
	if (res->nr_links > n)
		fprintf(f, ",...");
}

/* After a change: the daemon follows the generation, circuits the model. */
static void changed(struct svc *s, const struct reconf_result *res)
{
	if (res->committed && s->o.committed)
		s->o.committed(s->o.arg, res->gen_after);
	svc_set_model(s, s->model);
}

static int reach_reply(struct client *c, struct reply *rp,
		       const struct reconf_result *res)
{
	fprintf(rp->f, " generation=%llu commit_ps=%llu route_rows=%u unreachable=%llu newly_unreachable=%llu reachable_again=%llu pairs=%s\n",
		(unsigned long long)res->gen_after,
		(unsigned long long)res->commit_ps, res->route_rows,
		(unsigned long long)res->unreachable,
		(unsigned long long)res->newly_unreachable,
		(unsigned long long)res->reachable_again,
		res->pairs[0] ? res->pairs : "-");
	return reply_send(c, rp);
}

static int do_fault(struct svc *s, struct client *c,
		    const struct proto_request *r)
{
	struct reconf_result res;
	struct reply rp;
	char why[512], what[96];
	uint32_t node = 0;
	int ret;

	if (r->kind == PROTO_FAULT_NODE) {
		ret = svc_node(s->model, r->name, &node, why, sizeof(why));
		if (ret)
			return reply_err(c, ret, "fault node: %s", why);
		ret = reconf_fault_node(s->model, s->o.fabric_id, node, r->op,
					&res, why, sizeof(why));
		snprintf(what, sizeof(what), "node %u '%s'", node,
			 node_name(s, node));
	} else {
		ret = reconf_fault_link(s->model, s->o.fabric_id, r->id, r->op,
					r->permille, &res, why, sizeof(why));
		snprintf(what, sizeof(what), "link %u", r->id);
	}
	if (ret) {
		log_warn("fault %s %s by uid %u refused: %s", what,
			 reconf_op_name(r->op), c->peer.uid, why);
		return reply_err(c, ret, "%s", why);
	}
	changed(s, &res);
	log_notice("fault: %s %s%s by uid %u: %u links changed, generation %llu, commit at %llu ps, %u route rows; %llu endpoint pairs unreachable (%llu new%s%s)",
		   what, reconf_op_name(r->op),
		   r->op == PROTO_FAULT_DEGRADE ? " (permille)" : "",
		   c->peer.uid, res.nr_links,
		   (unsigned long long)res.gen_after,
		   (unsigned long long)res.commit_ps, res.route_rows,
		   (unsigned long long)res.unreachable,
		   (unsigned long long)res.newly_unreachable,
		   res.pairs[0] ? ": " : "", res.pairs);
	if (reply_open(&rp))
		return reply_err(c, -ENOMEM, "no memory");
	fprintf(rp.f, "ok changed=%u links=", res.nr_links);
	put_links(rp.f, &res);
	fprintf(rp.f, " state=%s", reconf_op_name(r->op));
	if (r->op == PROTO_FAULT_DEGRADE)
		fprintf(rp.f, " permille=%u", r->permille);
	return reach_reply(c, &rp, &res);
}

static void put_perm(FILE *f, const uint32_t *perm, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", perm[i]);
}

static int do_ocs_list(struct svc *s, struct client *c)
{
	const struct topo *t = s->model;
	struct reply rp;
	uint32_t k, i;
	int ret;

	/* Which circuits are still dark: the module knows. */
	ret = t->nr_ocs ? fabric_read_holds(&s->nl, s->model) : 0;
	if (ret) {
		char why[384];

		return reply_err(c, ret, "reading the module's links: %s",
				 icfab_nl_strerror(&s->nl, ret, why, sizeof(why)));
	}
	if (reply_open(&rp))
		return reply_err(c, -ENOMEM, "no memory");
	fprintf(rp.f, "ok count=%u\n", t->nr_ocs);
	for (k = 0; k < t->nr_ocs; k++) {
		const struct ocs *o = t->ocs[k];

		fprintf(rp.f, "ocs name=%s ports=%u delay_ps=%llu policy=%s perm=",
			o->name, o->nr_ports,
			(unsigned long long)o->reconfig_delay_ps,
			ocs_policy_name(o->policy));
		put_perm(rp.f, o->perm, o->nr_ports);
		fprintf(rp.f, " dark_until_ps=%llu circuits=",
			(unsigned long long)reconf_ocs_pending(t, o));
		for (i = 0; o->in && i < o->nr_ports; i++) {
			const struct ocs_end *a = &o->in[i];
			const struct ocs_end *b = &o->out[o->perm[i]];

			fprintf(rp.f, "%s%s:%u-%s:%u", i ? "," : "",
				node_name(s, a->node), a->port,
				node_name(s, b->node), b->port);
		}
		fputc('\n', rp.f);
	}
	return reply_send(c, &rp);
}

static int do_ocs_apply(struct svc *s, struct client *c,
			const struct proto_request *r)
{
	struct topo_err err = { "" };
	struct reconf_result res;
	struct ocs_pair *pairs;
	uint32_t *perm, i;
	struct reply rp;
	struct ocs *o;
	char why[512];
	int ret;

	o = topo_find_ocs(s->model, r->name);
	if (!o)
		return reply_err(c, -ENOENT, "ocs %.32s: no such OCS (%u in the topology)",
				 r->name, s->model->nr_ocs);
	perm = calloc(o->nr_ports + r->nr_ports + 1, sizeof(*perm));
	pairs = calloc(r->nr_ports + 1, sizeof(*pairs));
	if (!perm || !pairs) {
		free(perm);
		free(pairs);
		return reply_err(c, -ENOMEM, "no memory");
	}
	if (r->pairs_given) {
		for (i = 0; i < r->nr_ports; i++)
			pairs[i] = (struct ocs_pair){ r->pair_in[i], r->perm[i] };
		ret = ocs_perm_from_pairs(o, pairs, r->nr_ports, perm, &err);
		if (ret) {
			free(perm);
			free(pairs);
			return reply_err(c, ret, "%s", err.msg);
		}
		ret = reconf_ocs_apply(s->model, s->o.fabric_id, o, perm,
				       o->nr_ports, &res, why, sizeof(why));
	} else {
		ret = reconf_ocs_apply(s->model, s->o.fabric_id, o, r->perm,
				       r->nr_ports, &res, why, sizeof(why));
	}
	free(perm);
	free(pairs);
	if (ret) {
		log_warn("ocs %s: reconfiguration by uid %u refused: %s",
			 o->name, c->peer.uid, why);
		return reply_err(c, ret, "%s", why);
	}
	changed(s, &res);
	if (reply_open(&rp))
		return reply_err(c, -ENOMEM, "no memory");
	if (!res.committed) {
		log_info("ocs %s: the permutation is already in place", o->name);
		fprintf(rp.f, "ok ocs=%s changes=0 count=0\n", o->name);
		return reply_send(c, &rp);
	}
	/* The phases, in fabric time; the log is the daemon's event record. */
	log_notice("ocs %s: begin T=%llu ps (generation %llu, by uid %u): %u circuits change, policy %s",
		   o->name, (unsigned long long)res.commit_ps,
		   (unsigned long long)res.gen_after, c->peer.uid,
		   res.nr_changes, ocs_policy_name(o->policy));
	log_notice("ocs %s: %u links down at %llu ps", o->name, res.nr_links,
		   (unsigned long long)res.commit_ps);
	log_notice("ocs %s: routes recomputed at %llu ps (%u rows)", o->name,
		   (unsigned long long)res.commit_ps, res.route_rows);
	log_notice("ocs %s: circuits up at T+%llu ps = %llu ps", o->name,
		   (unsigned long long)res.delay_ps,
		   (unsigned long long)res.up_at_ps);
	fprintf(rp.f, "ok ocs=%s changes=%u generation=%llu begin_ps=%llu delay_ps=%llu up_at_ps=%llu policy=%s perm=",
		o->name, res.nr_changes, (unsigned long long)res.gen_after,
		(unsigned long long)res.commit_ps,
		(unsigned long long)res.delay_ps,
		(unsigned long long)res.up_at_ps, ocs_policy_name(o->policy));
	put_perm(rp.f, o->perm, o->nr_ports);
	fprintf(rp.f, " unreachable=%llu count=4\n",
		(unsigned long long)res.unreachable);
	fprintf(rp.f, "phase name=begin t_ps=%llu\n",
		(unsigned long long)res.commit_ps);
	fprintf(rp.f, "phase name=links-down t_ps=%llu links=",
		(unsigned long long)res.commit_ps);
	put_links(rp.f, &res);
	fprintf(rp.f, "\nphase name=routes t_ps=%llu rows=%u\n",
		(unsigned long long)res.commit_ps, res.route_rows);
	fprintf(rp.f, "phase name=circuits-up t_ps=%llu links=",
		(unsigned long long)res.up_at_ps);
	put_links(rp.f, &res);
	fputc('\n', rp.f);
	return reply_send(c, &rp);
}

static int handle_line(struct svc *s, struct client *c, char *line)
{
	struct proto_request r;
	enum proto_perm need;
	char why[256];
	int ret;

	ret = proto_parse(line, &r, why, sizeof(why));
	if (ret)
		return reply_err(c, ret, "%s", why);
	need = proto_needs(r.kind);
	if (c->perm < need) {
		if (c->perm == PROTO_PERM_NONE)
			return reply_err(c, -EACCES,
					 "%s: uid %u may not open /dev/" ICFAB_DEV_NAME_PREFIX "%u, so it may not use circuits",
					 r.verb, c->peer.uid, s->o.fabric_id);
		return reply_err(c, -EPERM,
				 "%s needs an administrator (uid 0%s); uid %u is a user",
				 r.verb, s->o.has_admin_gid ?
				 " or the admin group" : "", c->peer.uid);
	}
	switch (r.kind) {
	case PROTO_CIRCUIT_OPEN:
		return do_open(s, c, &r, false);
	case PROTO_CIRCUIT_PIN:
		return do_open(s, c, &r, true);
	case PROTO_CIRCUIT_CLOSE:
		return do_close(s, c, &r);
	case PROTO_CIRCUIT_LIST:
		return do_list(s, c);
	case PROTO_COLORS:
		return do_colors(s, c);
	case PROTO_FAULT_LINK:
	case PROTO_FAULT_NODE:
		return do_fault(s, c, &r);
	case PROTO_OCS_LIST:
		return do_ocs_list(s, c);
	case PROTO_OCS_APPLY:
		return do_ocs_apply(s, c, &r);
	}
	return reply_err(c, -EBADMSG, "unknown request");
}

/* Read what the client sent; false when it must be dropped. */
static bool client_read(struct svc *s, struct client *c)
{
	char *nl;
	ssize_t n;

	n = recv(c->fd, c->buf + c->len, PROTO_LINE_MAX - c->len,
		 MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (!c->len)
		c->partial_since = now_ms();
	c->len += n;
	c->buf[c->len] = '\0';
	while ((nl = memchr(c->buf, '\n', c->len))) {
		size_t used = nl - c->buf + 1;

		*nl = '\0';
		if (nl > c->buf && nl[-1] == '\r')
			nl[-1] = '\0';
		if (handle_line(s, c, c->buf))
			return false;
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->buf[c->len] = '\0';
		/* What is left starts a new line, and its clock. */
		c->idle_since = now_ms();
		c->partial_since = c->len ? c->idle_since : 0;
	}
	if (c->len == PROTO_LINE_MAX) {
		reply_err(c, -E2BIG, "a request is at most %u bytes",
			  PROTO_LINE_MAX - 1);
		return false;
	}
	return true;
}

static enum proto_perm client_perm(struct svc *s, struct client *c)
{
	struct proto_dev dev;
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/" ICFAB_DEV_NAME_PREFIX "%u",
		 s->o.fabric_id);
	if (stat(path, &st))
		memset(&dev, 0, sizeof(dev));	/* nobody but admins */
	else
		dev = (struct proto_dev){ st.st_uid, st.st_gid, st.st_mode };
	return proto_peer_perm(&c->peer, &dev, s->o.has_admin_gid,
			       s->o.admin_gid);
}

/* Within the limits (docs/SOCKET.md); else it is told why, and false. */
static bool client_admit(struct svc *s, const struct client *c)
{
	char why[128], line[160];
	uint32_t i, of_uid = 0;
	int ret;

	for (i = 0; i < s->nr_clients; i++)
		of_uid += s->clients[i]->peer.uid == c->peer.uid;
	ret = proto_admit(&s->o.limits, c->perm, s->nr_clients, of_uid,
			  why, sizeof(why));
	if (!ret)
		return true;
	log_debug("connection from pid %u uid %u refused: %s", c->peer.pid,
		  c->peer.uid, why);
	snprintf(line, sizeof(line), "err %s %s\n", proto_errname(-ret), why);
	/* Best effort: a refused peer gets no time of ours. */
	send(c->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	return false;
}

/* ms: when @c is closed for idling or for a line left unfinished; 0: never */
static uint64_t client_deadline(const struct svc *s, const struct client *c)
{
	if (c->partial_since)
		return s->o.line_timeout_ms ?
		       c->partial_since + s->o.line_timeout_ms : 0;
	return s->o.idle_timeout_ms ? c->idle_since + s->o.idle_timeout_ms : 0;
}

/* Close the connections past their deadline. */
static void clients_expire(struct svc *s)
{
	uint64_t now = now_ms(), deadline;
	char line[128];
	uint32_t i = 0;

	while (i < s->nr_clients) {
		struct client *c = s->clients[i];

		deadline = client_deadline(s, c);
		if (!deadline || deadline > now) {
			i++;
			continue;
		}
		if (c->partial_since)
			snprintf(line, sizeof(line),
				 "err ETIMEDOUT a request line must end within %u ms\n",
				 s->o.line_timeout_ms);
		else
			snprintf(line, sizeof(line),
				 "err ETIMEDOUT idle for %u ms\n",
				 s->o.idle_timeout_ms);
		send(c->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
		log_debug("connection from pid %u uid %u closed: %s",
			  c->peer.pid, c->peer.uid,
			  c->partial_since ? "unfinished line" : "idle");
		client_drop(s, i);
	}
}

int svc_timeout_ms(const struct svc *s)
{
	uint64_t now = now_ms(), first = 0, d;
	uint32_t i;

	for (i = 0; i < s->nr_clients; i++) {
		d = client_deadline(s, s->clients[i]);
		if (d && (!first || d < first))
			first = d;
	}
	if (!first)
		return -1;
	return first <= now ? 0 : (int)(first - now < INT32_MAX ?
					 first - now : INT32_MAX);
}

static void client_accept(struct svc *s)
{
	struct timeval tv = { .tv_sec = SVC_SEND_TIMEOUT_S };
	gid_t groups[SVC_MAX_GROUPS];
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	struct client *c;
	char hello[32];
	uint32_t i;
	int fd;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    !(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->idle_since = now_ms();
	c->peer.pid = cred.pid;
	c->peer.uid = cred.uid;
	c->peer.gid = cred.gid;
	len = sizeof(groups);
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
		c->peer.nr_groups = len / sizeof(gid_t);
		for (i = 0; i < c->peer.nr_groups; i++)
			c->groups[i] = groups[i];
	}
	/* More groups than we take: those are not counted. */
	c->peer.groups = c->groups;
	c->perm = client_perm(s, c);
	if (!client_admit(s, c)) {
		close(fd);
		free(c);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(hello, sizeof(hello), "icfabd %u\n", PROTO_VERSION);
	if (send_all(fd, hello, strlen(hello))) {
		close(fd);
		free(c);
		return;
	}
	log_debug("connection from pid %u uid %u: %s", c->peer.pid,
		  c->peer.uid, proto_perm_name(c->perm));
	s->clients[s->nr_clients++] = c;
}

/* ---- the service ---- */

static int listen_on(struct svc *s)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = s->o.path;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_err("socket %s: the path is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("socket %s: exists and is not a socket", path);
			close(fd);
			return -EEXIST;
		}
		/* A socket somebody answers on is another icfabd's. */
		if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			log_err("socket %s: another icfabd serves it", path);
			close(fd);
			return -EADDRINUSE;
		}
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd < 0)
			return -errno;
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    chmod(path, 0666) || listen(fd, 16)) {
		int ret = -errno;

		log_err("socket %s: %s", path, strerror(-ret));
		close(fd);
		return ret;
	}
	s->lfd = fd;
	s->bound = true;
	return 0;
}

int svc_open(const struct svc_opts *o, struct topo *model,
	     struct svc **sp)
{
	struct svc *s;
	int ret;

	*sp = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->lfd = -1;
	s->model = model;
	s->clients = calloc(o->limits.max_clients, sizeof(*s->clients));
	if (!s->clients) {
		free(s);
		return -ENOMEM;
	}
	ret = icfab_nl_open(&s->nl, o->fabric_id);
	if (ret) {
		log_err("netlink family '%s': %s", ICFAB_GENL_NAME,
			strerror(-ret));
		free(s->clients);
		free(s);
		return ret;
	}
	ret = svc_sync(s);
	if (!ret) {
		log_notice("circuits: %u in the module", circuit_count(s->ct));
		owners_update(s);
		ret = listen_on(s);
	}
	if (ret) {
		svc_close(s);
		return ret;
	}
	*sp = s;
	return 0;
}

void svc_close(struct svc *s)
{
	uint32_t i;

	if (!s)
		return;
	while (s->nr_clients)
		client_drop(s, 0);
	for (i = 0; i < s->nr_owners; i++)
		close(s->owners[i].pidfd);
	free(s->owners);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->bound)
		unlink(s->o.path);
	circuit_table_free(s->ct);
	icfab_nl_close(&s->nl);
	free(s->clients);
	free(s);
}

void svc_set_model(struct svc *s, struct topo *model)
{
	s->model = model;
	if (svc_sync(s)) {
		/* The old table points at the old model: never use it. */
		struct topo_err err = { "" };

		circuit_table_free(s->ct);
		s->ct = NULL;
		if (circuit_table_new(model, &s->ct, &err))
			log_err("circuit table: %s", err.msg);
		return;
	}
	owners_update(s);
}

unsigned int svc_nfds(const struct svc *s)
{
	return 1 + s->nr_clients + s->nr_owners;
}

void svc_pollfds(const struct svc *s, struct pollfd *pfd)
{
	uint32_t i, n = 0;

	pfd[n++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
	for (i = 0; i < s->nr_clients; i++)
		pfd[n++] = (struct pollfd){ .fd = s->clients[i]->fd,
					    .events = POLLIN };
	for (i = 0; i < s->nr_owners; i++)
		pfd[n++] = (struct pollfd){ .fd = s->owners[i].pidfd,
					    .events = POLLIN };
}

void svc_events(struct svc *s, const struct pollfd *pfd)
{
	uint32_t i, nc = s->nr_clients, no = s->nr_owners;
	int *gone = calloc(no + 1, sizeof(*gone)), ng = 0;
	int *cfds = calloc(nc + 1, sizeof(*cfds));

	if (!gone || !cfds)
		goto out;
	/*
	 * Note what happened first, by file descriptor: handling it
	 * reorders the arrays (and the model may have changed them since
	 * the poll set was made).
	 */
	for (i = 0; i < no; i++)
		if (pfd[1 + nc + i].revents)
			gone[ng++] = pfd[1 + nc + i].fd;
	for (i = 0; i < nc; i++)
		cfds[i] = pfd[1 + i].revents ? pfd[1 + i].fd : -1;

	for (i = 0; i < nc; i++) {
		uint32_t j;

		if (cfds[i] < 0)
			continue;
		for (j = 0; j < s->nr_clients; j++)
			if (s->clients[j]->fd == cfds[i])
				break;
		if (j < s->nr_clients && !client_read(s, s->clients[j]))
			client_drop(s, j);
	}
	for (i = 0; i < (uint32_t)ng; i++) {
		struct pollfd exited = { .fd = gone[i], .events = POLLIN };
		struct owner *o = NULL;
		uint32_t j, n;

		for (j = 0; j < s->nr_owners; j++)
			if (s->owners[j].pidfd == gone[i])
				o = &s->owners[j];
		/* Only a readable pidfd says that its process exited. */
		if (!o || poll(&exited, 1, 0) != 1)
			continue;
		n = s->ct ? owner_release(s, o->pid) : 0;
		log_notice("owner pid %u exited: freed its %u circuit(s)",
			   o->pid, n);
		owner_drop(s, o);
	}
	if (ng)
		owners_update(s);
	clients_expire(s);
	if (pfd[0].revents & POLLIN)
		client_accept(s);
out:
	free(gone);
	free(cfds);
}
