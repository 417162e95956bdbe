// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE		/* setresuid(), setresgid() */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"

int node_new(struct genl_sock *gs, uint32_t id, uint32_t kind,
		    uint32_t ports, const char *name)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, kind);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, ports);
	if (name)
		genl_put(&m, ICFAB_A_NODE_NAME, name, strlen(name) + 1);
	if (kind == ICFAB_NODE_ENDPOINT)
		genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, 1ULL << 30);
	return genl_request(gs, &m, NULL, NULL);
}

int link_new(struct genl_sock *gs, uint32_t id, uint32_t src,
		    uint32_t sport, uint32_t dst, uint32_t dport, uint64_t bw)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_NEW, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_NODE, src);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_PORT, sport);
	genl_put_u32(&m, ICFAB_A_LINK_DST_NODE, dst);
	genl_put_u32(&m, ICFAB_A_LINK_DST_PORT, dport);
	genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, bw);
	genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, 500000);
	genl_put_u32(&m, ICFAB_A_LINK_CLASS, ICFAB_LINK_CLASS_ICI);
	return genl_request(gs, &m, NULL, NULL);
}

void ring_link_msg(struct genl_sock *gs, struct genl_msg *m, uint32_t id,
		   uint32_t src, uint32_t dst)
{
	genl_msg_init(m, gs->family, ICFAB_CMD_LINK_NEW, 0);
	genl_put_u32(m, ICFAB_A_LINK_ID, id);
	genl_put_u32(m, ICFAB_A_LINK_SRC_NODE, src);
	genl_put_u32(m, ICFAB_A_LINK_SRC_PORT, 0);
	genl_put_u32(m, ICFAB_A_LINK_DST_NODE, dst);
	genl_put_u32(m, ICFAB_A_LINK_DST_PORT, 0);
	genl_put_u64(m, ICFAB_A_LINK_BANDWIDTH, RING_BW);
	genl_put_u64(m, ICFAB_A_LINK_LATENCY_PS, RING_LAT);
}

int link_get_reply(struct genl_sock *gs, uint32_t id, genl_reply_cb cb,
		   void *arg)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	return genl_request(gs, &m, cb, arg);
}

int route_set(struct genl_sock *gs, uint32_t node, uint32_t first,
		     const uint16_t *ports, unsigned int n)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, node);
	genl_put_u32(&m, ICFAB_A_ROUTE_DST_FIRST, first);
	genl_put(&m, ICFAB_A_ROUTE_PORTS, ports, n * sizeof(*ports));
	return genl_request(gs, &m, NULL, NULL);
}

int cmd(struct genl_sock *gs, uint8_t c)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, c, 0);
	return genl_request(gs, &m, NULL, NULL);
}

/*
 * Stage a bidirectional ring of @n endpoints: port 0 to the next node,
 * port 1 to the previous; link 2i is i -> i+1, link 2i+1 is i+1 -> i.
 * Routes go the short way round (clockwise on ties).
 */
int stage_ring(struct genl_sock *gs, unsigned int n)
{
	uint16_t ports[64];
	char name[16];
	int err;

	for (unsigned int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "chip%u", i);
		err = node_new(gs, i, ICFAB_NODE_ENDPOINT, 2, name);
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < n; i++) {
		err = link_new(gs, 2 * i, i, 0, (i + 1) % n, 1, 50000000000ULL);
		if (!err)
			err = link_new(gs, 2 * i + 1, (i + 1) % n, 1, i, 0,
				       50000000000ULL);
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int d = 0; d < n; d++) {
			unsigned int cw = (d + n - i) % n;

			ports[d] = d == i ? ICFAB_ROUTE_NONE :
				   cw <= n - cw ? 0 : 1;
		}
		err = route_set(gs, i, 0, ports, n);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Stage @n endpoints (ids 0..n-1, one port each) under leaf switches of
 * @per_leaf (ids n, n+1, ...; ports 0..per_leaf-1 down, per_leaf up) under
 * one spine (the last id; port l down to leaf l). Links at stage_ring()'s
 * bandwidth and latency: 2e and 2e+1 between endpoint e and its leaf
 * (up, down), then 2n+2l and 2n+2l+1 between leaf l and the spine.
 */
int stage_leaf_spine(struct genl_sock *gs, unsigned int n,
		     unsigned int per_leaf)
{
	unsigned int leaves = (n + per_leaf - 1) / per_leaf;
	unsigned int spine = n + leaves;
	uint16_t *ports;
	int err = 0;

	ports = calloc(n, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	for (unsigned int e = 0; e < n && !err; e++)
		err = node_new(gs, e, ICFAB_NODE_ENDPOINT, 1, NULL);
	for (unsigned int l = 0; l < leaves && !err; l++)
		err = node_new(gs, n + l, ICFAB_NODE_SWITCH, per_leaf + 1,
			       NULL);
	if (!err)
		err = node_new(gs, spine, ICFAB_NODE_SWITCH, leaves, NULL);
	for (unsigned int e = 0; e < n && !err; e++) {
		unsigned int leaf = n + e / per_leaf, port = e % per_leaf;

		err = link_new(gs, 2 * e, e, 0, leaf, port, RING_BW);
		if (!err)
			err = link_new(gs, 2 * e + 1, leaf, port, e, 0,
				       RING_BW);
	}
	for (unsigned int l = 0; l < leaves && !err; l++) {
		err = link_new(gs, 2 * n + 2 * l, n + l, per_leaf, spine, l,
			       RING_BW);
		if (!err)
			err = link_new(gs, 2 * n + 2 * l + 1, spine, l, n + l,
				       per_leaf, RING_BW);
	}
	for (unsigned int e = 0; e < n && !err; e++) {
		for (unsigned int d = 0; d < n; d++)
			ports[d] = d == e ? ICFAB_ROUTE_NONE : 0;
		err = route_set(gs, e, 0, ports, n);
	}
	for (unsigned int l = 0; l < leaves && !err; l++) {
		for (unsigned int d = 0; d < n; d++)
			ports[d] = d / per_leaf == l ? d % per_leaf : per_leaf;
		err = route_set(gs, n + l, 0, ports, n);
	}
	if (!err) {
		for (unsigned int d = 0; d < n; d++)
			ports[d] = d / per_leaf;
		err = route_set(gs, spine, 0, ports, n);
	}
	free(ports);
	return err;
}

struct ids {
	uint32_t *id;
	unsigned int n, cap;
	int attr;
};

static int ids_cb(const struct genl_reply *r, void *arg)
{
	struct ids *x = arg;

	if (x->n == x->cap) {
		unsigned int cap = x->cap ? 2 * x->cap : 1024;
		uint32_t *p = realloc(x->id, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		x->id = p;
		x->cap = cap;
	}
	x->id[x->n++] = genl_u32(r->tb[x->attr]);
	return 0;
}

/* Delete every object of a dump of @get (ids in @attr) with @del. */
static int delete_every(struct genl_sock *gs, uint8_t get, uint8_t del,
			int attr)
{
	struct ids x = { .attr = attr };
	struct genl_msg m;
	unsigned int i;
	int err;

	genl_msg_init(&m, gs->family, get, NLM_F_DUMP);
	err = genl_request(gs, &m, ids_cb, &x);
	for (i = 0; !err && i < x.n; i++) {
		genl_msg_init(&m, gs->family, del, 0);
		genl_put_u32(&m, attr, x.id[i]);
		err = genl_request(gs, &m, NULL, NULL);
	}
	free(x.id);
	return err;
}

/*
 * An empty fabric, whatever ran before: every link and node the module
 * lists is deleted (icfabd_test leaves thousands), then committed.
 */
int clear_fabric(struct genl_sock *gs)
{
	int err;

	cmd(gs, ICFAB_CMD_FABRIC_ABORT);
	err = delete_every(gs, ICFAB_CMD_LINK_GET, ICFAB_CMD_LINK_DEL,
			   ICFAB_A_LINK_ID);
	if (!err)
		err = delete_every(gs, ICFAB_CMD_NODE_GET, ICFAB_CMD_NODE_DEL,
				   ICFAB_A_NODE_ID);
	if (!err)
		err = cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
	return err == -ENOENT ? 0 : err;	/* it was empty: nothing staged */
}

int fabric_open_clear(struct genl_sock *gs)
{
	int err = genl_open(gs);

	if (err)
		return err;
	err = genl_resolve(gs, ICFAB_GENL_NAME);
	if (!err)
		err = clear_fabric(gs);
	if (err)
		genl_close(gs);
	return err;
}

int ring_fabric_open(struct genl_sock *gs, unsigned int n)
{
	int err = fabric_open_clear(gs);

	if (err)
		return err;
	err = stage_ring(gs, n);
	if (!err)
		err = cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
	if (err)
		genl_close(gs);
	return err;
}

void fabric_close(struct genl_sock *gs)
{
	clear_fabric(gs);
	genl_close(gs);
}

int ctx_attach(int fd, uint32_t ep)
{
	struct icfab_attach a = { .endpoint = ep };

	return ioctl(fd, ICFAB_IOC_ATTACH, &a) ? -errno : 0;
}

int ctx_queue(int fd, uint32_t ep, uint32_t depth)
{
	struct icfab_queue_create qc = { .endpoint = ep, .depth = depth };

	return ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc) ? -errno : (int)qc.queue;
}

int ctx_recv_queue(int fd, uint32_t ep, uint32_t depth)
{
	struct icfab_queue_create qc = { .endpoint = ep, .depth = depth,
					 .flags = ICFAB_QUEUE_F_RECV };

	return ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc) ? -errno : (int)qc.queue;
}

int ctx_queue_destroy(int fd, uint32_t q)
{
	struct icfab_queue_destroy qd = { .queue = q };

	return ioctl(fd, ICFAB_IOC_QUEUE_DESTROY, &qd) ? -errno : 0;
}

int ctx_submit_flags(int fd, struct icfab_desc *d, unsigned int n,
		     uint32_t flags)
{
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = n,
				  .flags = flags };
	int ret = ioctl(fd, ICFAB_IOC_SUBMIT, &s);

	return ret < 0 ? -errno : ret;
}

int ctx_submit(int fd, struct icfab_desc *d, unsigned int n)
{
	return ctx_submit_flags(fd, d, n, 0);
}

int ctx_region_free(int fd, uint32_t region)
{
	struct icfab_region_free rf = { .region = region };

	return ioctl(fd, ICFAB_IOC_REGION_FREE, &rf) ? -errno : 0;
}

int region_map(int fd, uint32_t ep, uint64_t size, uint32_t access,
	       uint32_t *handle, uint64_t *key, unsigned char **map)
{
	struct icfab_region_alloc ra = { .endpoint = ep, .size = size };
	struct icfab_region_export re = { .access = access };

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	*handle = ra.region;
	*map = mmap(NULL, ra.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    ra.mmap_offset);
	if (*map == MAP_FAILED)
		return -errno;
	if (!access)
		return 0;
	re.region = ra.region;
	if (ioctl(fd, ICFAB_IOC_REGION_EXPORT, &re))
		return -errno;
	*key = re.key;
	return 0;
}

struct icfab_desc mv(uint8_t op, uint32_t q, uint32_t region, uint64_t loff,
		     uint64_t rkey, uint64_t roff, uint64_t len, uint64_t tag)
{
	return (struct icfab_desc){ .op = op, .queue = q, .region = region,
		.local_off = loff, .rkey = rkey, .remote_off = roff,
		.len = len, .user_tag = tag };
}

void fill(unsigned char *p, uint64_t n, unsigned int seed)
{
	for (uint64_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 16;
	}
}

#define PARAM_DIR	"/sys/module/icfab/parameters/"

long param_get(const char *name)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

int param_set(const char *name, long v)
{
	char path[128], buf[32];
	int fd, n, ok;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%ld", v);
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -EIO;
}

uint64_t ring_ser(uint64_t bytes)
{
	return (bytes * 1000000000000ULL + RING_BW - 1) / RING_BW;
}

uint64_t ring_uncontended(uint64_t bytes, unsigned int hops)
{
	return hops * (RING_LAT + ring_ser(RING_SEG)) +
	       (bytes / RING_SEG - 1) * ring_ser(RING_SEG);
}

struct icfab_desc desc_put(uint32_t q, uint32_t peer, uint64_t len,
			   uint64_t tag)
{
	return (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
		.peer = peer, .len = len, .user_tag = tag,
		.flags = ICFAB_DESC_F_TIMING_ONLY };
}

struct icfab_desc desc_notify_put(uint32_t q, uint32_t peer, uint64_t len,
				  uint64_t tag, uint32_t imm)
{
	struct icfab_desc d = desc_put(q, peer, len, tag);

	d.flags |= ICFAB_DESC_F_NOTIFY;
	d.imm = imm;
	return d;
}

int ctx_wait(int fd, struct icfab_cqe *c, unsigned int min, unsigned int max,
	     unsigned int timeout_ms, uint64_t *clock)
{
	struct icfab_wait w = { .cqes = (uintptr_t)c, .min = min, .max = max,
				.timeout_ms = timeout_ms };

	if (ioctl(fd, ICFAB_IOC_WAIT, &w))
		return -errno;
	if (clock)
		*clock = w.clock_ps;
	return w.nr;
}

int as_user(uid_t uid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 200;
	if (!pid) {
		struct group *g = getgrnam("icfab");
		gid_t gid = g ? g->gr_gid : 0;

		if (!g || setgroups(1, &gid) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(201);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 202;
	return WEXITSTATUS(status);
}

int pair_rank_attach(int p, int ready, int go)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	char byte;

	if (fd < 0 || ctx_attach(fd, p)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (write(ready, "r", 1) != 1 || read(go, &byte, 1) != 0) {
		close(fd);
		return -4;
	}
	return fd;
}

/*
 * Wait until both ranks of run_rank_pair() have written to @ready (0),
 * or one has exited before it did (-1; reaped, its status in @status[p],
 * @done[p] set). A plain read would wait for ever then: the other rank,
 * ready, holds the write end open while it waits for go.
 */
static int pair_wait_ready(int ready, const pid_t *pids, int *status,
			   int *done)
{
	unsigned int nready = 0;
	char byte;

	while (nready < 2) {
		struct pollfd pfd = { .fd = ready, .events = POLLIN };
		int n = poll(&pfd, 1, 100);

		if (n > 0) {
			if (read(ready, &byte, 1) != 1)
				return -1;
			nready++;
			continue;
		}
		if (n < 0 && errno != EINTR)
			return -1;
		for (int p = 0; p < 2; p++)
			if (waitpid(pids[p], &status[p], WNOHANG) == pids[p]) {
				done[p] = 1;
				return -1;
			}
	}
	return 0;
}

void run_rank_pair(pair_rank_fn rank, struct icfab_cqe *out,
		   unsigned int per_rank, int hog)
{
	pid_t pids[3] = { 0, 0, 0 };
	int ready[2], go[2], status[2] = { 0, 0 }, done[2] = { 0, 0 };

	/*
	 * Both attach before either starts: a context that has not attached
	 * cannot hold the engine back, so determinism needs every
	 * participant on board first (as ranks of a job rendezvous).
	 */
	if (pipe(ready) || pipe(go))
		return;
	if (hog) {
		pids[2] = fork();
		if (pids[2] == 0) {
			close(ready[0]);
			close(ready[1]);
			close(go[0]);
			close(go[1]);
			for (;;)
				;
		}
	}
	for (int p = 0; p < 2; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			close(go[1]);
			close(ready[0]);
			_exit(rank(p, ready[1], go[0], &out[p * per_rank]));
		}
	}
	close(ready[1]);
	close(go[0]);
	/* A rank that failed before it was ready: the other does not start. */
	if (pair_wait_ready(ready[0], pids, status, done))
		for (int p = 0; p < 2; p++)
			if (!done[p])
				kill(pids[p], SIGKILL);
	close(go[1]);		/* everyone reads EOF: go */
	close(ready[0]);
	for (int p = 0; p < 2; p++) {
		if (!done[p])
			waitpid(pids[p], &status[p], 0);
		if (!WIFEXITED(status[p]) || WEXITSTATUS(status[p]))
			out[p * per_rank].status = -1000 - WEXITSTATUS(status[p]);
	}
	if (hog) {
		kill(pids[2], SIGKILL);
		waitpid(pids[2], NULL, 0);
	}
}

long long fab_count(const char *name)
{
	char path[128];
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/icfab/icfab0/%s",
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

int fabric_fault(const char *cmd)
{
	int fd = open("/sys/kernel/debug/icfab/icfab0/fault",
		      O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, cmd, strlen(cmd));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

int cq_setup(int fd, uint32_t entries, struct cq_map *m)
{
	struct icfab_cq_setup cs = { .entries = entries };
	void *p;

	if (ioctl(fd, ICFAB_IOC_CQ_SETUP, &cs))
		return -errno;
	p = mmap(NULL, cs.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 cs.mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	m->r = p;
	m->cqes = (struct icfab_cqe *)((char *)p + cs.cqes_off);
	m->size = cs.mmap_size;
	return cs.entries;
}

struct ctx_of_pid {
	uint32_t pid, id;
};

static int ctx_of_pid_cb(const struct genl_reply *rp, void *arg)
{
	struct ctx_of_pid *c = arg;

	if (!rp->tb[ICFAB_A_CTX_ID] || !rp->tb[ICFAB_A_CTX_PID] ||
	    !rp->tb[ICFAB_A_CTX_STATE])
		return -EBADMSG;
	/* The last attached one that has not ended: ids only grow. */
	if (genl_u32(rp->tb[ICFAB_A_CTX_PID]) == c->pid &&
	    !(genl_u32(rp->tb[ICFAB_A_CTX_STATE]) & ICFAB_CTX_DEAD) &&
	    genl_u32(rp->tb[ICFAB_A_CTX_ID]) > c->id)
		c->id = genl_u32(rp->tb[ICFAB_A_CTX_ID]);
	return 0;
}

int ctx_id_of_pid(struct genl_sock *gs, uint32_t pid, uint32_t *id)
{
	struct ctx_of_pid c = { .pid = pid };
	struct genl_msg m;
	int err;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CTX_GET, NLM_F_DUMP);
	err = genl_request(gs, &m, ctx_of_pid_cb, &c);
	if (err)
		return err;
	if (!c.id)
		return -ENOENT;
	*id = c.id;
	return 0;
}

int ctx_evict(struct genl_sock *gs, uint32_t id)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CTX_EVICT, 0);
	if (id)
		genl_put_u32(&m, ICFAB_A_CTX_ID, id);
	return genl_request(gs, &m, NULL, NULL);
}
