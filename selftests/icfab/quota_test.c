// SPDX-License-Identifier: GPL-2.0
/*
 * Caps on what one context and one user may hold (docs/SECURITY.md): the
 * module parameters max_ctx_descs, max_ctx_queues, max_uid_contexts,
 * max_uid_mem_mb and max_uid_circuits, reported by INFO; past a cap a
 * clear errno and nothing half done; and request memory charged to the
 * caller's memory cgroup. Run as root: the per-uid caps are tried in
 * children that become user 65534 in the group icfab (root, with
 * CAP_SYS_RESOURCE, is not held to them). Each test sets the caps it
 * tries low and puts them back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define DEV		"/dev/icfab0"
#define NOBODY		65534

static const char *const params[] = {
	"max_ctx_descs", "max_ctx_queues", "max_uid_contexts",
	"max_uid_mem_mb", "max_uid_circuits",
};
#define NR_PARAMS	(sizeof(params) / sizeof(params[0]))

FIXTURE(quota) {
	struct genl_sock gs;
	long saved[NR_PARAMS];
};

FIXTURE_SETUP(quota)
{
	for (unsigned int i = 0; i < NR_PARAMS; i++) {
		self->saved[i] = param_get(params[i]);
		ASSERT_LE(0, self->saved[i]) TH_LOG("%s", params[i]);
	}
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 2));
}

FIXTURE_TEARDOWN(quota)
{
	for (unsigned int i = 0; i < NR_PARAMS; i++)
		param_set(params[i], self->saved[i]);
	fabric_close(&self->gs);
}

static int info(int fd, struct icfab_info *in)
{
	memset(in, 0, sizeof(*in));
	return ioctl(fd, ICFAB_IOC_INFO, in) ? -errno : 0;
}

TEST_F(quota, info_reports_the_parameters)
{
	struct icfab_info in;
	int fd;

	ASSERT_EQ(0, param_set("max_ctx_descs", 1234));
	ASSERT_EQ(0, param_set("max_ctx_queues", 7));
	ASSERT_EQ(0, param_set("max_uid_contexts", 11));
	ASSERT_EQ(0, param_set("max_uid_mem_mb", 13));
	ASSERT_EQ(0, param_set("max_uid_circuits", 17));
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, info(fd, &in));
	EXPECT_EQ(1234, in.limits.max_ctx_descs);
	EXPECT_EQ(7, in.limits.max_queues);
	EXPECT_EQ(11, in.limits.max_uid_contexts);
	EXPECT_EQ(13, in.limits.max_uid_mem_mb);
	EXPECT_EQ(17, in.limits.max_uid_circuits);
	close(fd);
}

/* Exit 0 when the caps on contexts behave; the step that failed else. */
static int contexts_child(void *arg)
{
	int fds[4], fd;

	(void)arg;
	for (int i = 0; i < 3; i++) {
		fds[i] = open(DEV, O_RDWR | O_CLOEXEC);
		if (fds[i] < 0)
			return 10 + i;
	}
	/* The fourth is one too many for uid 65534, on any fabric. */
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd >= 0 || errno != EMFILE)
		return 20;
	/* A closed one makes room at once. */
	close(fds[0]);
	fds[0] = open(DEV, O_RDWR | O_CLOEXEC);
	if (fds[0] < 0)
		return 21;
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	return 0;
}

TEST_F(quota, contexts_per_uid_emfile)
{
	int fds[4];

	ASSERT_EQ(0, param_set("max_uid_contexts", 3));
	EXPECT_EQ(0, as_user(NOBODY, contexts_child, NULL));
	/* Root, with CAP_SYS_RESOURCE, is not held to it. */
	for (int i = 0; i < 4; i++) {
		fds[i] = open(DEV, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, fds[i]);
	}
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	/* Everything was given back: nobody may have three again. */
	EXPECT_EQ(0, as_user(NOBODY, contexts_child, NULL));
}

static int region_alloc(int fd, uint64_t size, uint32_t *handle)
{
	struct icfab_region_alloc ra = { .endpoint = 0, .size = size };

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	*handle = ra.region;
	return 0;
}

static int memory_child(void *arg)
{
	uint32_t a = 0, b = 0, c = 0;
	int fd1, fd2;

	(void)arg;
	fd1 = open(DEV, O_RDWR | O_CLOEXEC);
	fd2 = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd1 < 0 || fd2 < 0 || ctx_attach(fd1, 0) || ctx_attach(fd2, 0))
		return 10;
	/* 1 MiB is the uid's: half here, half in its other context. */
	if (region_alloc(fd1, 512 << 10, &a) || region_alloc(fd2, 512 << 10, &b))
		return 11;
	if (region_alloc(fd1, 4096, &c) != -EDQUOT)
		return 12;
	if (region_alloc(fd2, 4096, &c) != -EDQUOT)
		return 13;
	/* More than the cap in one go: the same, and nothing is kept. */
	if (region_alloc(fd1, 2 << 20, &c) != -EDQUOT)
		return 14;
	if (ctx_region_free(fd1, a) || region_alloc(fd1, 512 << 10, &a))
		return 15;
	close(fd1);
	/* The closed context's region went with it. */
	if (region_alloc(fd2, 512 << 10, &c))
		return 16;
	close(fd2);
	return 0;
}

TEST_F(quota, device_memory_per_uid_edquot)
{
	uint32_t h;
	int fd;

	ASSERT_EQ(0, param_set("max_uid_mem_mb", 1));
	EXPECT_EQ(0, as_user(NOBODY, memory_child, NULL));
	/* And again: every page came back to the uid. */
	EXPECT_EQ(0, as_user(NOBODY, memory_child, NULL));
	/* Root is not held to it. */
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 0));
	EXPECT_EQ(0, region_alloc(fd, 2 << 20, &h));
	close(fd);
}

static int reap(int fd, unsigned int n)
{
	struct icfab_cqe c[64];
	int got, total = 0;

	while (total < (int)n) {
		got = ctx_wait(fd, c, 1, 64, 1000, NULL);
		if (got <= 0)
			return got;
		total += got;
	}
	return total;
}

TEST_F(quota, descriptors_per_context_eagain)
{
	struct icfab_desc d[150];
	int fd, q;

	ASSERT_EQ(0, param_set("max_ctx_descs", 100));
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 0));
	q = ctx_queue(fd, 0, 4096);
	ASSERT_LE(0, q);
	for (int i = 0; i < 150; i++)
		d[i] = (struct icfab_desc){ .op = ICFAB_OP_DELAY, .queue = q,
					    .len = 1, .user_tag = i };
	/* Submitted and not reaped count, whether complete or not. */
	EXPECT_EQ(100, ctx_submit(fd, d, 150));
	EXPECT_EQ(-EAGAIN, ctx_submit(fd, &d[100], 50));
	/* Reaping makes room again. */
	EXPECT_EQ(100, reap(fd, 100));
	EXPECT_EQ(50, ctx_submit(fd, &d[100], 50));
	EXPECT_EQ(50, reap(fd, 50));
	close(fd);
}

TEST_F(quota, queues_per_context_enospc)
{
	int fd, q[3];

	ASSERT_EQ(0, param_set("max_ctx_queues", 2));
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 0));
	q[0] = ctx_queue(fd, 0, 16);
	q[1] = ctx_queue(fd, 0, 16);
	EXPECT_EQ(0, q[0]);
	EXPECT_EQ(1, q[1]);
	EXPECT_EQ(-ENOSPC, ctx_queue(fd, 0, 16));
	close(fd);
}

static int circuit_id_cb(const struct genl_reply *r, void *arg)
{
	*(uint32_t *)arg = genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]);
	return 0;
}

/* A circuit from endpoint 0 to 1 through switch 2 (its color table). */
static int circuit_new(struct genl_sock *gs, uint32_t color, uint32_t uid,
		       uint32_t *id)
{
	uint32_t dst = 1, router = 2;
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_NEW, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_COLOR, color);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_SRC, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_UID, uid);
	genl_put(&m, ICFAB_A_CIRCUIT_DSTS, &dst, sizeof(dst));
	genl_put(&m, ICFAB_A_CIRCUIT_ROUTERS, &router, sizeof(router));
	return genl_request(gs, &m, circuit_id_cb, id);
}

static int circuit_del(struct genl_sock *gs, uint32_t id)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_DEL, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_ID, id);
	return genl_request(gs, &m, NULL, NULL);
}

TEST_F(quota, circuits_per_owner_uid_edquot)
{
	uint32_t id[4] = { 0 }, spare;
	struct genl_msg m;

	/* A switch with 4 colors next to the ring's two endpoints. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, 2);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_SWITCH);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, 2);
	genl_put_u32(&m, ICFAB_A_NODE_COLORS, 4);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));

	ASSERT_EQ(0, param_set("max_uid_circuits", 2));
	ASSERT_EQ(0, circuit_new(&self->gs, 0, 1000, &id[0]));
	ASSERT_EQ(0, circuit_new(&self->gs, 1, 1000, &id[1]));
	/* The third of uid 1000 is refused, with its color free. */
	EXPECT_EQ(-EDQUOT, circuit_new(&self->gs, 2, 1000, &spare));
	/* Another uid, and uid 0 (the administrator's), are not. */
	EXPECT_EQ(0, circuit_new(&self->gs, 2, 1001, &id[2]));
	EXPECT_EQ(0, circuit_new(&self->gs, 3, 0, &id[3]));
	/* A deleted circuit is given back to its owner. */
	EXPECT_EQ(0, circuit_del(&self->gs, id[1]));
	EXPECT_EQ(0, circuit_new(&self->gs, 1, 1000, &id[1]));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, circuit_del(&self->gs, id[i]));
}

/*
 * The memory cgroup's counter, bytes; -1 when there is no cgroup2 with
 * the memory controller to try.
 */
#define CG	"/sys/fs/cgroup/icfab_quota"

static long long cg_current(void)
{
	char buf[32];
	ssize_t n;
	int fd = open(CG "/memory.current", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoll(buf);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

#define CG_DESCS	8192

/* In the cgroup: submit CG_DESCS DELAYs, report the growth on a pipe. */
static int cg_child(void *arg)
{
	static struct icfab_desc d[CG_DESCS];
	int *pfd = arg, fd, q[2];
	long long before, after, grew;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, 0))
		return 10;
	q[0] = ctx_queue(fd, 0, 4096);
	q[1] = ctx_queue(fd, 0, 4096);
	if (q[0] < 0 || q[1] < 0)
		return 11;
	for (int i = 0; i < CG_DESCS; i++)
		d[i] = (struct icfab_desc){ .op = ICFAB_OP_DELAY,
					    .queue = q[i & 1], .len = 1 };
	before = cg_current();
	if (ctx_submit(fd, d, CG_DESCS) != CG_DESCS)
		return 12;
	after = cg_current();
	grew = after - before;
	if (write(pfd[1], &grew, sizeof(grew)) != sizeof(grew))
		return 13;
	close(fd);
	return 0;
}

TEST_F(quota, requests_are_charged_to_the_memcg)
{
	char pidbuf[16];
	long long grew = 0;
	int pfd[2], status;
	pid_t pid;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL);
	write_str("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	mkdir(CG, 0755);
	if (cg_current() < 0) {
		rmdir(CG);
		SKIP(return, "no cgroup2 memory controller");
	}
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		snprintf(pidbuf, sizeof(pidbuf), "%d", getpid());
		if (write_str(CG "/cgroup.procs", pidbuf))
			_exit(20);
		_exit(cg_child(pfd));
	}
	close(pfd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(grew), read(pfd[0], &grew, sizeof(grew)));
	close(pfd[0]);
	TH_LOG("%d DELAYs unreaped: the cgroup grew by %lld bytes",
	       CG_DESCS, grew);
	/* A request is far more than 128 bytes: nothing else is that big. */
	EXPECT_LE(CG_DESCS * 128LL, grew);
	rmdir(CG);
}

TEST_HARNESS_MAIN
