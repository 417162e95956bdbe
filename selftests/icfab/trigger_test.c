// SPDX-License-Identifier: GPL-2.0
/*
 * Triggered descriptors (ICFAB_F_TRIGGER): an ICFAB_OP_TRIGGER holds its
 * queue until the queue's endpoint has received a count of NOTIFY WRITEs
 * with one imm, and releases what follows it at the virtual time the last
 * of them landed. A forwarder posts its forwarding before the data comes;
 * the times must be those of the arrivals to the picosecond, the same in
 * every run and beside a CPU hog, across two processes. Then the errors,
 * and teardown with a TRIGGER that never fires.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define SEG		RING_SEG
#define RX_EP		0		/* the forwarder's endpoint */
#define TX_EP		4		/* the sender's, four hops away */
#define OUT_EP		7		/* where the forwarder forwards, 1 hop */
#define NCHUNK		3		/* chunks in the two-process run */
#define GAP_PS		5000000ULL	/* the sender computes between chunks */

static struct icfab_desc trigger(uint32_t q, uint32_t imm, uint64_t count,
				 uint64_t tag)
{
	return (struct icfab_desc){ .op = ICFAB_OP_TRIGGER, .queue = q,
				    .imm = imm, .len = count,
				    .user_tag = tag };
}

static bool has_trigger(int fd)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	return !ioctl(fd, ICFAB_IOC_INFO, &in) &&
	       in.features & ICFAB_F_TRIGGER;
}

/* Whether the loaded module has TRIGGERs: 1 or 0, -1 without the device. */
static int module_has_trigger(void)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = has_trigger(fd);
	close(fd);
	return ret;
}

/* The completion with @tag among @n, or NULL. */
static const struct icfab_cqe *by_tag(const struct icfab_cqe *c,
				      unsigned int n, uint64_t tag)
{
	for (unsigned int i = 0; i < n; i++)
		if (c[i].user_tag == tag)
			return &c[i];
	return NULL;
}

/* CTX_GET dump: the id of the context whose first endpoint is *@arg. */
struct ctx_find {
	uint32_t first, id;
};

static int ctx_find_cb(const struct genl_reply *rp, void *arg)
{
	struct ctx_find *f = arg;

	if (rp->tb[ICFAB_A_CTX_ID] && rp->tb[ICFAB_A_CTX_FIRST_ENDPOINT] &&
	    genl_u32(rp->tb[ICFAB_A_CTX_FIRST_ENDPOINT]) == f->first)
		f->id = genl_u32(rp->tb[ICFAB_A_CTX_ID]);
	return 0;
}

static int ctx_evict_at(struct genl_sock *gs, uint32_t first)
{
	struct ctx_find f = { .first = first };
	struct genl_msg m;
	int err;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CTX_GET, NLM_F_DUMP);
	err = genl_request(gs, &m, ctx_find_cb, &f);
	if (err || !f.id)
		return err ? err : -ENOENT;
	genl_msg_init(&m, gs->family, ICFAB_CMD_CTX_EVICT, 0);
	genl_put_u32(&m, ICFAB_A_CTX_ID, f.id);
	return genl_request(gs, &m, NULL, NULL);
}

FIXTURE(trig) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(trig)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	if (!has_trigger(self->fd))
		SKIP(return, "no ICFAB_F_TRIGGER");
}

FIXTURE_TEARDOWN(trig)
{
	close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(trig, info_announces_trigger)
{
	EXPECT_TRUE(ICFAB_F_ALL & ICFAB_F_TRIGGER);
	EXPECT_EQ(ICFAB_F_TRIGGER, 1ULL << 20);
}

TEST_F(trig, errors)
{
	struct icfab_desc d;
	int fd2, q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, RX_EP, 8);
	ASSERT_LE(0, q);

	/* Nothing counts at its endpoint for it. */
	d = trigger(q, 1, 1, 0);
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &d, 1));
	/* Another context's receive queue counts for that context only. */
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, RX_EP));
	rq = ctx_recv_queue(fd2, RX_EP, 4);
	ASSERT_LE(0, rq);
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &d, 1));
	close(fd2);
	rq = ctx_recv_queue(self->fd, RX_EP, 4);
	ASSERT_LE(0, rq);

	/* Malformed. */
	d = trigger(q, 1, 0, 0);
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, ICFAB_TRIGGER_COUNTERS, 1, 0);
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, 1, 1, 0);
	d.flags = ICFAB_DESC_F_TIMING_ONLY;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d.flags = ICFAB_DESC_F_NOTIFY;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, 1, 1, 0);
	d.peer = 3;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, 1, 1, 0);
	d.region = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, 1, 1, 0);
	d.remote_off = 8;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = trigger(q, 1, 1, 0);
	d.circuit = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	/* A receive queue takes none. */
	d = trigger(rq, 1, 1, 0);
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	/* Nothing was taken: the queues are idle. */
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, q));
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
}

/*
 * One context, both ends: the forwarder's queue holds a chain of two
 * TRIGGERs and a WRITE, posted before anything was sent; the sender's
 * NOTIFY WRITEs (imm 5, then two with imm 3) release them.
 */
TEST_F(trig, forward_starts_when_the_data_lands)
{
	const struct icfab_cqe *t3, *t5, *fw, *w5, *w3a, *w3b, *r, *after;
	struct icfab_cqe c[16];
	struct icfab_desc d[3];
	uint64_t clock, last;
	int qt, qf, rq, n;

	ASSERT_EQ(0, ctx_attach(self->fd, TX_EP));
	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	qt = ctx_queue(self->fd, TX_EP, 8);
	qf = ctx_queue(self->fd, RX_EP, 8);
	rq = ctx_recv_queue(self->fd, RX_EP, 8);
	ASSERT_LE(0, qt);
	ASSERT_LE(0, qf);
	ASSERT_LE(0, rq);

	d[0] = trigger(qf, 3, 2, 30);
	d[1] = trigger(qf, 5, 1, 50);
	d[2] = desc_put(qf, OUT_EP, 2 * SEG, 99);
	ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
	d[0] = desc_notify_put(qt, RX_EP, SEG, 5, 5);
	d[1] = desc_notify_put(qt, RX_EP, 4 * SEG, 31, 3);
	d[2] = desc_notify_put(qt, RX_EP, 2 * SEG, 32, 3);
	ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
	/* 3 TRIGGERs and WRITEs of its own, 3 sent, 3 received. */
	n = ctx_wait(self->fd, c, 9, 16, 5000, &clock);
	ASSERT_EQ(9, n);
	t3 = by_tag(c, n, 30);
	t5 = by_tag(c, n, 50);
	fw = by_tag(c, n, 99);
	w5 = by_tag(c, n, 5);
	w3a = by_tag(c, n, 31);
	w3b = by_tag(c, n, 32);
	ASSERT_TRUE(t3 && t5 && fw && w5 && w3a && w3b);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(0, c[i].status);
	last = w3a->finish_ps > w3b->finish_ps ? w3a->finish_ps :
						 w3b->finish_ps;
	/* The second imm-3 WRITE releases the chain, at its landing. */
	EXPECT_LT(w5->finish_ps, last);
	EXPECT_EQ(last, t3->start_ps);
	EXPECT_EQ(last, t3->finish_ps);
	EXPECT_EQ(last, t5->finish_ps);
	EXPECT_EQ(last, fw->start_ps);
	EXPECT_EQ(ring_uncontended(2 * SEG, 1), fw->finish_ps - fw->start_ps);
	EXPECT_EQ(fw->finish_ps, clock);
	/* Each WRITE's receive completion, imm in its tag. */
	r = by_tag(c, n, (uint64_t)TX_EP << 32 | 3);
	ASSERT_NE(NULL, r);
	EXPECT_EQ((uint32_t)rq, r->queue);

	/* Counts already there: at once, at the clock. */
	d[0] = trigger(qf, 3, 2, 33);
	d[1] = trigger(qf, 5, 1, 51);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 16, 5000, NULL));
	EXPECT_EQ(clock, c[0].finish_ps);
	EXPECT_EQ(clock, c[1].finish_ps);

	/*
	 * Counts only grow: a third imm-3 WRITE makes 3. A TRIGGER does
	 * not wait for its queue's earlier transfers (a FENCE does).
	 */
	d[0] = desc_put(qf, OUT_EP, 64 * SEG, 100);
	d[1] = trigger(qf, 3, 3, 34);
	d[2] = desc_put(qf, OUT_EP, SEG, 101);
	ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
	d[0] = desc_notify_put(qt, RX_EP, SEG, 35, 3);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	n = ctx_wait(self->fd, c, 5, 16, 5000, NULL);
	ASSERT_EQ(5, n);
	t3 = by_tag(c, n, 34);
	w3a = by_tag(c, n, 35);
	after = by_tag(c, n, 101);
	ASSERT_TRUE(t3 && w3a && after);
	EXPECT_EQ(w3a->finish_ps, t3->finish_ps);
	EXPECT_LE(t3->finish_ps, after->start_ps);
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
}

/*
 * A TRIGGER whose count never comes: its queue waits, a WAIT times out
 * (no -EDEADLK), its receive queue is busy, and closing the context with
 * it held returns and leaves the fabric free (fabric_close() commits,
 * which needs no context attached).
 */
TEST_F(trig, never_fired_goes_with_the_context)
{
	struct icfab_cqe c[4];
	struct icfab_desc d[2];
	int fd2, q, rq;

	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, RX_EP));
	q = ctx_queue(fd2, RX_EP, 4);
	rq = ctx_recv_queue(fd2, RX_EP, 4);
	ASSERT_LE(0, q);
	ASSERT_LE(0, rq);
	d[0] = trigger(q, 7, 1, 1);
	d[1] = desc_put(q, OUT_EP, SEG, 2);
	ASSERT_EQ(2, ctx_submit(fd2, d, 2));
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(fd2, c, 1, 4, 100, NULL));
	EXPECT_EQ(-EBUSY, ctx_queue_destroy(fd2, rq));
	EXPECT_EQ(-EBUSY, ctx_queue_destroy(fd2, q));
	/* The queue holds them: depth 4, 2 held, 2 more fit, not 3. */
	ASSERT_EQ(2, ctx_submit(fd2, d, 2));
	EXPECT_EQ(-EAGAIN, ctx_submit(fd2, d, 1));
	close(fd2);
	/* Another context may count there now. */
	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	EXPECT_LE(0, ctx_recv_queue(self->fd, RX_EP, 4));
}

/*
 * A context evicted with a TRIGGER held gets it and what waits behind it
 * back, -ECANCELED: no descriptor goes without a completion.
 */
TEST_F(trig, evicted_with_a_trigger_held)
{
	struct icfab_cqe c[4];
	struct icfab_desc d[2];
	int q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, RX_EP, 4);
	rq = ctx_recv_queue(self->fd, RX_EP, 4);
	ASSERT_LE(0, q);
	ASSERT_LE(0, rq);
	d[0] = trigger(q, 2, 1, 1);
	d[1] = desc_put(q, OUT_EP, SEG, 2);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	ASSERT_EQ(0, ctx_evict_at(&self->gs, RX_EP));
	ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 4, 5000, NULL));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(-ECANCELED, c[0].status);
	EXPECT_EQ(2, c[1].user_tag);
	EXPECT_EQ(-ECANCELED, c[1].status);
}

/*
 * Two processes: the forwarder posts, for each chunk, a TRIGGER on the
 * chunk's imm and the forwarding WRITE, then waits; the sender sends
 * the chunks with compute between them.
 */
static int pair_rank(int p, int ready, int go, struct icfab_cqe *out)
{
	struct icfab_desc d[2 * NCHUNK];
	unsigned int want;
	int fd, q, rq = 0;
	char byte;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, p ? TX_EP : RX_EP))
		return 1;
	q = ctx_queue(fd, p ? TX_EP : RX_EP, 2 * NCHUNK);
	if (!p)
		rq = ctx_recv_queue(fd, RX_EP, NCHUNK);
	if (q < 0 || rq < 0)
		return 2;
	if (!p) {
		for (unsigned int j = 0; j < NCHUNK; j++) {
			d[2 * j] = trigger(q, j + 1, 1, 200 + j);
			d[2 * j + 1] = desc_put(q, OUT_EP, 2 * SEG, 100 + j);
		}
		if (ctx_submit(fd, d, 2 * NCHUNK) != 2 * NCHUNK)
			return 3;
	}
	if (write(ready, "r", 1) != 1)
		return 4;
	while (read(go, &byte, 1) > 0)
		;
	if (p) {
		for (unsigned int j = 0; j < NCHUNK; j++) {
			d[0] = desc_notify_put(q, RX_EP, (4 - j) * SEG, j, j + 1);
			d[1] = (struct icfab_desc){ .op = ICFAB_OP_DELAY,
						    .queue = q,
						    .len = GAP_PS,
						    .user_tag = 1000 };
			if (ctx_submit(fd, d, 2) != 2)
				return 5;
		}
	}
	/* Forwarder: its own 2 per chunk and the chunks' receive ones. */
	want = p ? 2 * NCHUNK : 3 * NCHUNK;
	if (ctx_wait(fd, out, want, want, 20000, NULL) != (int)want)
		return 6;
	close(fd);
	return 0;
}

#define PER_RANK	(3 * NCHUNK)

static void pair_run(struct __test_metadata *_metadata,
		     struct icfab_cqe *out, int hog)
{
	const struct icfab_cqe *f = out, *s = out + PER_RANK;

	memset(out, 0, 2 * PER_RANK * sizeof(*out));
	run_rank_pair(pair_rank, out, PER_RANK, hog);
	ASSERT_EQ(0, f[0].status);
	ASSERT_EQ(0, s[0].status);
	for (unsigned int j = 0; j < NCHUNK; j++) {
		const struct icfab_cqe *t = by_tag(f, PER_RANK, 200 + j);
		const struct icfab_cqe *w = by_tag(f, PER_RANK, 100 + j);
		const struct icfab_cqe *x = by_tag(s, 2 * NCHUNK, j);

		ASSERT_TRUE(t && w && x);
		/*
		 * Released at the chunk's landing, forwarded then, at that
		 * very instant, though the forwarder's transfer key (its
		 * endpoint, 0) sorts before the sender's landing WRITE's (4),
		 * processed at that instant: a transfer submitted at an
		 * instant sorts after what is in flight then (docs/TIMING.md,
		 * "Order"). It started 1 ps later before.
		 */
		EXPECT_EQ(x->finish_ps, t->finish_ps);
		EXPECT_EQ(x->finish_ps, w->start_ps);
		EXPECT_EQ(ring_uncontended(2 * SEG, 1),
			  w->finish_ps - w->start_ps);
		/* Chunk j was sent after j computes. */
		EXPECT_LE(j * GAP_PS, x->start_ps);
	}
}

TEST(pair_is_deterministic)
{
	struct genl_sock gs;
	struct icfab_cqe *out;
	int trig;

	trig = module_has_trigger();
	ASSERT_LE(0, trig);
	if (!trig)
		SKIP(return, "no ICFAB_F_TRIGGER");
	ASSERT_EQ(0, ring_fabric_open(&gs, 8));
	out = mmap(NULL, 4 * PER_RANK * sizeof(*out), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, out);
	pair_run(_metadata, out, 0);
	pair_run(_metadata, out + 2 * PER_RANK, 1);
	EXPECT_EQ(0, memcmp(out, out + 2 * PER_RANK,
			    2 * PER_RANK * sizeof(*out)));
	munmap(out, 4 * PER_RANK * sizeof(*out));
	fabric_close(&gs);
}

/*
 * A count already there when the TRIGGER is submitted, brought by
 * arrivals in the submitter's future: one thread WAITs (so the context
 * holds nothing back and the engine runs through every arrival), another
 * submits the TRIGGER at the old clock. It completes at the landing of
 * the WRITE that made the count, not wherever the engine happened to
 * stop; the same with a CPU hog beside it.
 */
#define AHEAD_N		3	/* imm-6 WRITEs landing ahead */
#define AHEAD_WANT	(2 * AHEAD_N + 1)

struct ahead_wait {
	int fd, n;
	struct icfab_cqe c[16];
};

static void *ahead_waiter(void *arg)
{
	struct ahead_wait *w = arg;

	/* Their sends, their receive completions, and the TRIGGER. */
	w->n = ctx_wait(w->fd, w->c, AHEAD_WANT, 16, 10000, NULL);
	return NULL;
}

static void ahead_run(struct __test_metadata *_metadata, int fd,
		      struct icfab_cqe *out)
{
	const struct icfab_cqe *t, *w2, *w3;
	struct icfab_desc d[AHEAD_N];
	struct ahead_wait w = { .fd = fd };
	pthread_t th;
	int qt, qf, rq;

	ASSERT_EQ(0, ctx_attach(fd, TX_EP));
	ASSERT_EQ(0, ctx_attach(fd, RX_EP));
	qt = ctx_queue(fd, TX_EP, 8);
	qf = ctx_queue(fd, RX_EP, 8);
	rq = ctx_recv_queue(fd, RX_EP, 8);
	ASSERT_LE(0, qt);
	ASSERT_LE(0, qf);
	ASSERT_LE(0, rq);
	for (unsigned int j = 0; j < AHEAD_N; j++)
		d[j] = desc_notify_put(qt, RX_EP, (1 + 2 * j) * SEG, 60 + j, 6);
	ASSERT_EQ(AHEAD_N, ctx_submit(fd, d, AHEAD_N));
	ASSERT_EQ(0, pthread_create(&th, NULL, ahead_waiter, &w));
	/*
	 * Let the WAIT start and the engine count them all. Were the
	 * TRIGGER earlier, it would wait for the count: the same time.
	 */
	usleep(300 * 1000);
	d[0] = trigger(qf, 6, 2, 66);
	ASSERT_EQ(1, ctx_submit(fd, d, 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(AHEAD_WANT, w.n);
	t = by_tag(w.c, w.n, 66);
	w2 = by_tag(w.c, w.n, 61);
	w3 = by_tag(w.c, w.n, 62);
	ASSERT_TRUE(t && w2 && w3);
	EXPECT_EQ(0, t->status);
	/* The second landing made the count, the third came later. */
	EXPECT_LT(w2->finish_ps, w3->finish_ps);
	EXPECT_EQ(w2->finish_ps, t->start_ps);
	EXPECT_EQ(w2->finish_ps, t->finish_ps);
	EXPECT_EQ(0, t->submit_ps);
	memcpy(out, w.c, sizeof(w.c));
	EXPECT_EQ(0, ctx_queue_destroy(fd, qf));
	EXPECT_EQ(0, ctx_queue_destroy(fd, qt));
	EXPECT_EQ(0, ctx_queue_destroy(fd, rq));
}

TEST(count_reached_ahead_of_the_clock)
{
	struct icfab_cqe out[2][16];
	struct genl_sock gs;
	int fd, trig;

	trig = module_has_trigger();
	ASSERT_LE(0, trig);
	if (!trig)
		SKIP(return, "no ICFAB_F_TRIGGER");
	ASSERT_EQ(0, ring_fabric_open(&gs, 8));
	memset(out, 0, sizeof(out));
	for (int hog = 0; hog < 2; hog++) {
		pid_t pid = 0;

		if (hog) {
			pid = fork();
			if (pid == 0)
				for (;;)
					;
			ASSERT_LT(0, pid);
		}
		fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ahead_run(_metadata, fd, out[hog]);
		close(fd);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	EXPECT_EQ(0, memcmp(out[0], out[1], sizeof(out[0])));
	fabric_close(&gs);
}

TEST_HARNESS_MAIN
