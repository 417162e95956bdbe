// SPDX-License-Identifier: GPL-2.0
/*
 * Link statistics over netlink (STATS_GET, STATS_RESET): exact counts of
 * known timing-only transfers, read while the engine lives and after it
 * is gone, accumulation across engines, reset, restart at a commit,
 * CAP_NET_ADMIN, and extack errors for bad requests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define BW	50000000000ULL		/* bytes/s, stage_ring's links */
#define SEG	4096ULL			/* bytes, the default segment size */
#define SER	81920ULL		/* ps, SEG at BW */
#define NLINKS	16			/* stage_ring(8) */

struct lstats {
	int seen;
	uint64_t bytes, segments, busy_ps, max_queued_ps, generation;
	uint8_t incomplete;
};

struct all_stats {
	unsigned int n;
	struct lstats l[NLINKS];
	int bad;
};

static int stats_fill(const struct genl_reply *r, struct lstats *s)
{
	if (r->cmd != ICFAB_CMD_STATS_GET || !r->tb[ICFAB_A_LINK_ID] ||
	    !r->tb[ICFAB_A_FABRIC_GENERATION] || !r->tb[ICFAB_A_STATS_BYTES] ||
	    !r->tb[ICFAB_A_STATS_SEGMENTS] || !r->tb[ICFAB_A_STATS_BUSY_PS] ||
	    !r->tb[ICFAB_A_STATS_MAX_QUEUED_PS] ||
	    !r->tb[ICFAB_A_STATS_INCOMPLETE])
		return -EPROTO;
	s->seen++;
	s->generation = genl_u64(r->tb[ICFAB_A_FABRIC_GENERATION]);
	s->bytes = genl_u64(r->tb[ICFAB_A_STATS_BYTES]);
	s->segments = genl_u64(r->tb[ICFAB_A_STATS_SEGMENTS]);
	s->busy_ps = genl_u64(r->tb[ICFAB_A_STATS_BUSY_PS]);
	s->max_queued_ps = genl_u64(r->tb[ICFAB_A_STATS_MAX_QUEUED_PS]);
	s->incomplete = *((uint8_t *)r->tb[ICFAB_A_STATS_INCOMPLETE] +
			  NLA_HDRLEN);
	return 0;
}

static int dump_cb(const struct genl_reply *r, void *arg)
{
	struct all_stats *a = arg;
	uint32_t id;

	if (!r->tb[ICFAB_A_LINK_ID])
		return -EPROTO;
	id = genl_u32(r->tb[ICFAB_A_LINK_ID]);
	a->n++;
	if (id >= NLINKS || a->l[id].seen) {
		a->bad++;
		return 0;
	}
	return stats_fill(r, &a->l[id]);
}

static int one_cb(const struct genl_reply *r, void *arg)
{
	return stats_fill(r, arg);
}

static int stats_dump(struct genl_sock *gs, struct all_stats *a)
{
	struct genl_msg m;

	memset(a, 0, sizeof(*a));
	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, NLM_F_DUMP);
	return genl_request(gs, &m, dump_cb, a);
}

static int stats_get(struct genl_sock *gs, uint32_t link, struct lstats *s)
{
	struct genl_msg m;

	memset(s, 0, sizeof(*s));
	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, link);
	return genl_request(gs, &m, one_cb, s);
}

static int stats_reset(struct genl_sock *gs)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_RESET, 0);
	return genl_request(gs, &m, NULL, NULL);
}


static int queue(int fd, uint32_t ep)
{
	struct icfab_queue_create qc = { .endpoint = ep, .depth = 16 };

	return ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc) ? -errno : (int)qc.queue;
}

/*
 * On a fresh context: each of @n endpoints @src[i] sends @segs[i]
 * segments to @dst, all at time 0, and waits for all. Leaves the
 * context open (the engine alive) in *@fdp.
 */
static int run(uint32_t dst, const uint32_t *src, const uint64_t *segs,
	       unsigned int n, int *fdp)
{
	struct icfab_desc d[8] = {};
	struct icfab_cqe c[8];
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = n };
	struct icfab_wait w = { .cqes = (uintptr_t)c, .min = n, .max = 8 };
	int fd, q;
	unsigned int i;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*fdp = fd;
	for (i = 0; i < n; i++) {
		if (ctx_attach(fd, src[i]))
			return -errno;
		q = queue(fd, src[i]);
		if (q < 0)
			return q;
		d[i] = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
			.peer = dst, .len = segs[i] * SEG, .user_tag = i,
			.flags = ICFAB_DESC_F_TIMING_ONLY };
	}
	if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != (int)n)
		return -EIO;
	if (ioctl(fd, ICFAB_IOC_WAIT, &w) || w.nr != n)
		return -EIO;
	for (i = 0; i < n; i++)
		if (c[i].status)
			return -EIO;
	return 0;
}

static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

FIXTURE(st) {
	struct genl_sock gs;
};

FIXTURE_SETUP(st)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
}

FIXTURE_TEARDOWN(st)
{
	fabric_close(&self->gs);
}

TEST_F(st, a_new_configuration_starts_at_zero)
{
	struct all_stats a;
	unsigned int i;

	ASSERT_EQ(0, stats_dump(&self->gs, &a));
	EXPECT_EQ(NLINKS, a.n);
	EXPECT_EQ(0, a.bad);
	for (i = 0; i < NLINKS; i++) {
		EXPECT_EQ(1, a.l[i].seen);
		EXPECT_EQ(0, a.l[i].bytes | a.l[i].segments | a.l[i].busy_ps |
			     a.l[i].max_queued_ps | a.l[i].incomplete);
	}
}

TEST_F(st, counts_are_exact_and_outlive_the_engine)
{
	static const uint32_t src[] = { 0 };
	static const uint64_t segs[] = { 64 };
	struct all_stats live, after;
	int fd = -1;
	unsigned int i;

	/* 0 -> 2 crosses link 0 (0 -> 1) and link 2 (1 -> 2), uncontended. */
	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	ASSERT_EQ(0, stats_dump(&self->gs, &live));
	close(fd);	/* the last context: the engine is freed */
	ASSERT_EQ(0, stats_dump(&self->gs, &after));
	for (i = 0; i < NLINKS; i++) {
		int used = i == 0 || i == 2;

		EXPECT_EQ(used ? 64 * SEG : 0, live.l[i].bytes);
		EXPECT_EQ(used ? 64 : 0, live.l[i].segments);
		EXPECT_EQ(used ? 64 * SER : 0, live.l[i].busy_ps);
		EXPECT_EQ(0, live.l[i].max_queued_ps);
		EXPECT_EQ(live.l[i].bytes, after.l[i].bytes);
		EXPECT_EQ(live.l[i].segments, after.l[i].segments);
		EXPECT_EQ(live.l[i].busy_ps, after.l[i].busy_ps);
		EXPECT_EQ(live.l[i].max_queued_ps, after.l[i].max_queued_ps);
		EXPECT_EQ(0, after.l[i].incomplete);
	}
}

TEST_F(st, shared_link_queues_and_engines_accumulate)
{
	static const uint32_t src[] = { 0, 1 };
	static const uint64_t segs[] = { 32, 32 };
	struct lstats one, two;
	int fd = -1;

	/* Both cross link 2 (1 -> 2): it carries 64 segments and queues. */
	ASSERT_EQ(0, run(2, src, segs, 2, &fd));
	close(fd);
	ASSERT_EQ(0, stats_get(&self->gs, 2, &one));
	EXPECT_EQ(64 * SEG, one.bytes);
	EXPECT_EQ(64, one.segments);
	EXPECT_EQ(64 * SER, one.busy_ps);
	EXPECT_LT(0, one.max_queued_ps);
	EXPECT_GT(64 * SER, one.max_queued_ps);

	/* A second engine on the same configuration adds to the counts. */
	ASSERT_EQ(0, run(2, src, segs, 2, &fd));
	close(fd);
	ASSERT_EQ(0, stats_get(&self->gs, 2, &two));
	EXPECT_EQ(2 * one.bytes, two.bytes);
	EXPECT_EQ(2 * one.segments, two.segments);
	EXPECT_EQ(2 * one.busy_ps, two.busy_ps);
	EXPECT_EQ(one.max_queued_ps, two.max_queued_ps);
}

TEST_F(st, reset_zeroes_live_and_folded_counts)
{
	static const uint32_t src[] = { 0 };
	static const uint64_t segs[] = { 8 };
	struct all_stats a;
	struct lstats s;
	int fd = -1, fd2 = -1;
	unsigned int i;

	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	close(fd);
	/* Folded counts, and a live engine with counts of its own. */
	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(16 * SEG, s.bytes);
	ASSERT_EQ(0, stats_reset(&self->gs));
	ASSERT_EQ(0, stats_dump(&self->gs, &a));
	for (i = 0; i < NLINKS; i++)
		EXPECT_EQ(0, a.l[i].bytes | a.l[i].segments | a.l[i].busy_ps |
			     a.l[i].max_queued_ps);
	close(fd);
	/* Counting goes on after a reset. */
	ASSERT_EQ(0, run(2, src, segs, 1, &fd2));
	close(fd2);
	ASSERT_EQ(0, stats_get(&self->gs, 2, &s));
	EXPECT_EQ(8 * SEG, s.bytes);
	EXPECT_EQ(8 * SER, s.busy_ps);
}

TEST_F(st, a_commit_starts_counting_again)
{
	static const uint32_t src[] = { 0 };
	static const uint64_t segs[] = { 8 };
	struct lstats before, after;
	int fd = -1;

	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	close(fd);
	ASSERT_EQ(0, stats_get(&self->gs, 0, &before));
	EXPECT_EQ(8 * SEG, before.bytes);
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_ring(&self->gs, 8));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, stats_get(&self->gs, 0, &after));
	EXPECT_LT(before.generation, after.generation);
	EXPECT_EQ(0, after.bytes | after.segments | after.busy_ps |
		     after.max_queued_ps);
}

TEST_F(st, reset_needs_cap_net_admin)
{
	static const uint32_t src[] = { 0 };
	static const uint64_t segs[] = { 4 };
	struct lstats s;
	int fd = -1, status;
	pid_t pid;

	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	close(fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct genl_sock gs;
		struct lstats t;

		/* Losing uid 0 drops every capability. */
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
			_exit(11);
		if (stats_get(&gs, 0, &t) || t.bytes != 4 * SEG)
			_exit(12);	/* reading is allowed */
		_exit(stats_reset(&gs) == -EPERM ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(4 * SEG, s.bytes);
}

/* FABRIC_GET's HELD_PID and HELD_PS. */
struct held {
	int seen;
	uint32_t pid;
	uint64_t ps;
};

static int held_cb(const struct genl_reply *r, void *arg)
{
	struct held *h = arg;

	if (!r->tb[ICFAB_A_FABRIC_HELD_PID] || !r->tb[ICFAB_A_FABRIC_HELD_PS])
		return -EPROTO;
	h->seen++;
	h->pid = genl_u32(r->tb[ICFAB_A_FABRIC_HELD_PID]);
	h->ps = genl_u64(r->tb[ICFAB_A_FABRIC_HELD_PS]);
	return 0;
}

static int held_get(struct genl_sock *gs, struct held *h)
{
	struct genl_msg m;

	memset(h, 0, sizeof(*h));
	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_GET, 0);
	return genl_request(gs, &m, held_cb, h);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

#define INST	"/sys/kernel/tracing/instances/icfab-stats-test"

/*
 * One context sends 1 and 3 segments and waits for one completion: it
 * holds the engine at the first one's finish, with the second pending.
 * FABRIC_GET names it, and icfab_engine_held fired for it.
 */
TEST_F(st, the_context_holding_the_engine_is_named)
{
	struct icfab_desc d[2] = {};
	struct icfab_cqe c[2];
	struct icfab_submit sub = { .descs = (uintptr_t)d, .nr = 2 };
	struct icfab_wait w = { .cqes = (uintptr_t)c, .min = 1, .max = 1 };
	char buf[65536], want[64];
	struct held h;
	ssize_t n;
	int fd, q, tfd, traced;

	traced = !mkdir(INST, 0700);
	if (traced)
		traced = !write_file(INST "/events/icfab/icfab_engine_held/enable",
				     "1");
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 0));
	q = queue(fd, 0);
	ASSERT_LE(0, q);
	d[0] = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
		.peer = 1, .len = SEG, .flags = ICFAB_DESC_F_TIMING_ONLY };
	d[1] = d[0];
	d[1].len = 3 * SEG;
	d[1].user_tag = 1;
	ASSERT_EQ(2, ioctl(fd, ICFAB_IOC_SUBMIT, &sub));
	ASSERT_EQ(0, ioctl(fd, ICFAB_IOC_WAIT, &w));
	ASSERT_EQ(1, w.nr);
	EXPECT_EQ(0, c[0].user_tag);
	ASSERT_EQ(0, held_get(&self->gs, &h));
	EXPECT_EQ(1, h.seen);
	EXPECT_EQ((uint32_t)getpid(), h.pid);
	EXPECT_EQ(c[0].finish_ps, h.ps);
	EXPECT_EQ(w.clock_ps, h.ps);
	close(fd);
	ASSERT_EQ(0, held_get(&self->gs, &h));
	EXPECT_EQ(0, h.pid);
	EXPECT_EQ(0, h.ps);

	if (!traced) {
		rmdir(INST);
		SKIP(return, "no tracefs instance for icfab_engine_held");
	}
	write_file(INST "/events/icfab/icfab_engine_held/enable", "0");
	tfd = open(INST "/trace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, tfd);
	n = read(tfd, buf, sizeof(buf) - 1);
	close(tfd);
	rmdir(INST);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "pid=%d held_ps=%llu ", (int)getpid(),
		 (unsigned long long)c[0].finish_ps);
	EXPECT_NE(NULL, strstr(buf, want))
		TH_LOG("no \"%s\" in:\n%s", want, buf);
}

/*
 * Bad requests: an errno, an extack that names the attribute (or, for a
 * missing one, names it as missing), and nothing changed.
 */
FIXTURE(bad) {
	struct genl_sock gs;
};

FIXTURE_VARIANT(bad) {
	uint8_t cmd;
	uint16_t flags;
	uint16_t type;			/* 0: no attribute */
	unsigned int len;
	uint32_t value;
	int err;
	int names_attr;			/* the extack names @type */
};

FIXTURE_VARIANT_ADD(bad, get_without_link) {
	.cmd = ICFAB_CMD_STATS_GET, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(bad, get_unknown_link) {
	.cmd = ICFAB_CMD_STATS_GET, .type = ICFAB_A_LINK_ID, .len = 4,
	.value = 99, .err = -ENOENT, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, get_link_out_of_range) {
	.cmd = ICFAB_CMD_STATS_GET, .type = ICFAB_A_LINK_ID, .len = 4,
	.value = 1 << 20, .err = -ERANGE, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, get_short_link) {
	.cmd = ICFAB_CMD_STATS_GET, .type = ICFAB_A_LINK_ID, .len = 2,
	.err = -EINVAL, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, get_output_only_attribute) {
	.cmd = ICFAB_CMD_STATS_GET, .type = ICFAB_A_STATS_BYTES, .len = 8,
	.err = -EINVAL, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, get_unknown_fabric) {
	.cmd = ICFAB_CMD_STATS_GET, .type = ICFAB_A_FABRIC_ID, .len = 4,
	.value = 99, .err = -ENODEV, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, dump_with_link) {
	.cmd = ICFAB_CMD_STATS_GET, .flags = NLM_F_DUMP,
	.type = ICFAB_A_LINK_ID, .len = 4, .err = -EINVAL, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, dump_unknown_fabric) {
	.cmd = ICFAB_CMD_STATS_GET, .flags = NLM_F_DUMP,
	.type = ICFAB_A_FABRIC_ID, .len = 4, .value = 99, .err = -ENODEV,
	.names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, reset_takes_no_link) {
	.cmd = ICFAB_CMD_STATS_RESET, .type = ICFAB_A_LINK_ID, .len = 4,
	.err = -EINVAL, .names_attr = 1,
};
FIXTURE_VARIANT_ADD(bad, reset_unknown_fabric) {
	.cmd = ICFAB_CMD_STATS_RESET, .type = ICFAB_A_FABRIC_ID, .len = 4,
	.value = 99, .err = -ENODEV, .names_attr = 1,
};

FIXTURE_SETUP(bad)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
}

FIXTURE_TEARDOWN(bad)
{
	fabric_close(&self->gs);
}

TEST_F(bad, is_refused_with_extack_and_changes_nothing)
{
	static const uint32_t src[] = { 0 };
	static const uint64_t segs[] = { 4 };
	unsigned char payload[8] = {};
	struct genl_msg m;
	struct lstats s;
	int fd = -1;

	ASSERT_EQ(0, run(2, src, segs, 1, &fd));
	close(fd);
	genl_msg_init(&m, self->gs.family, variant->cmd, variant->flags);
	if (variant->type) {
		memcpy(payload, &variant->value, sizeof(variant->value));
		genl_put(&m, variant->type, payload, variant->len);
	}
	EXPECT_EQ(variant->err, genl_request(&self->gs, &m, NULL, NULL));
	/*
	 * A dump's request is refused by its .start callback, which gets
	 * the extack from newer netlink cores (6.12's) but not from 6.1's.
	 */
	if (variant->flags & NLM_F_DUMP && !kernel_at_least(6, 12)) {
		TH_LOG("no extack for a refused dump on this kernel");
	} else if (variant->names_attr) {
		EXPECT_NE(0, self->gs.extack[0]);
		EXPECT_EQ(variant->type, self->gs.bad_attr_type)
			TH_LOG("extack: %s", self->gs.extack);
	} else {
		EXPECT_EQ(ICFAB_A_LINK_ID, self->gs.missing_attr_type)
			TH_LOG("extack: %s", self->gs.extack);
	}
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(4 * SEG, s.bytes);
}

TEST_HARNESS_MAIN
