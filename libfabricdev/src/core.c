// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Device, endpoints, regions, queues: the thin layer over /dev/icfabN.
 *
 * Descriptors go in batches to the module's completion ring
 * (ICFAB_F_CQ_RING: ICFAB_IOC_SUBMIT with ICFAB_SUBMIT_F_CQ, completions
 * polled from shared memory, ICFAB_IOC_CQ_WAIT only to sleep) when it has
 * one and neither FDEV_NO_CQ nor the io_uring switches below ask for the
 * plain ioctl path; else through io_uring
 * (ICFAB_UCMD_SUBMIT/WAIT) when the module has ICFAB_F_URING_CMD and
 * io_uring is allowed, else through the SUBMIT and WAIT ioctls; the
 * fallback is announced once per process on stderr (when the caller asked
 * for it, only with FDEV_DEBUG).
 * Either way every blocking call tells the module that this context waits,
 * so the engine can advance virtual time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/icfab.h>

#include "internal.h"

_Static_assert(sizeof(struct fdev_desc) == sizeof(struct icfab_desc), "desc");
_Static_assert(sizeof(struct fdev_cqe) == sizeof(struct icfab_cqe), "cqe");
_Static_assert(FDEV_F_URING_CMD == ICFAB_F_URING_CMD, "features");
_Static_assert(FDEV_F_MEMORY_TIERS == ICFAB_F_MEMORY_TIERS, "features");
_Static_assert((int)FDEV_TIER_DDR == (int)ICFAB_TIER_DDR, "tiers");

#define FDEV_URING_ENTRIES	256
#define SLOTS_PER_BLOCK		256

static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;
static const char *fallback_reason;

static void say_fallback(void)
{
	fprintf(stderr, "libfabricdev: %s; using the ioctl path\n",
		fallback_reason);
}

static void fallback(const char *why)
{
	fallback_reason = why;
	pthread_once(&fallback_once, say_fallback);
}

/* FDEV_DEBUG set and not "0" */
static int fdev_debug(void)
{
	const char *v = getenv("FDEV_DEBUG");

	return v && *v && strcmp(v, "0");
}

/*
 * The stash is a FIFO in stash[stash_head, stash_head + stash_nr): a
 * WAIT that lets the engine run may bring a whole step's completions at
 * once (a million for an all-to-all of 1024 ranks), which are then taken
 * 256 at a time, so taking must not move the rest.
 */
static int stash_push(struct fdev *dev, const struct fdev_cqe *c)
{
	if (dev->stash_head + dev->stash_nr == dev->stash_cap) {
		if (dev->stash_head && dev->stash_head >= dev->stash_nr) {
			/* Half of it or more taken: as many moves as takes. */
			memmove(dev->stash, dev->stash + dev->stash_head,
				dev->stash_nr * sizeof(*c));
			dev->stash_head = 0;
		} else if (fdev_array_grow((void **)&dev->stash,
					   &dev->stash_cap,
					   dev->stash_head + dev->stash_nr,
					   sizeof(*c), 256)) {
			return -ENOMEM;
		}
	}
	dev->stash[dev->stash_head + dev->stash_nr++] = *c;
	if (c->queue < dev->nq && dev->qinfl[c->queue])
		dev->qinfl[c->queue]--;
	return 0;
}

static unsigned int stash_take(struct fdev *dev, struct fdev_cqe *out,
			       unsigned int max)
{
	unsigned int n = dev->stash_nr < max ? dev->stash_nr : max;

	memcpy(out, dev->stash + dev->stash_head, n * sizeof(*out));
	dev->stash_nr -= n;
	dev->stash_head = dev->stash_nr ? dev->stash_head + n : 0;
	return n;
}

static int uring_disabled_by_sysctl(void)
{
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
	int v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

#define FDEV_CQ_ENTRIES		4096

static int env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v && *v != '0';
}

/*
 * The completion ring, when the module has one and it is not refused:
 * FDEV_NO_CQ=1, or FDEV_NO_URING / FDEV_OPEN_NO_URING, which ask for the
 * plain ioctl path.
 */
static int cq_setup(struct fdev *dev, unsigned int flags)
{
	struct icfab_cq_setup cs = { .entries = FDEV_CQ_ENTRIES };
	void *p;

	if (!(dev->features & ICFAB_F_CQ_RING) || env_set("FDEV_NO_CQ") ||
	    flags & FDEV_OPEN_NO_URING || env_set("FDEV_NO_URING"))
		return 0;
	if (ioctl(dev->fd, ICFAB_IOC_CQ_SETUP, &cs))
		return 0;
	p = mmap(NULL, cs.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 dev->fd, (off_t)cs.mmap_offset);
	if (p == MAP_FAILED)
		return 0;
	dev->cq = p;
	dev->cq_cqes = (struct icfab_cqe *)((char *)p + cs.cqes_off);
	dev->cq_size = cs.mmap_size;
	return 1;
}

static void uring_setup(struct fdev *dev, unsigned int flags)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 |
						IORING_SETUP_CQE32 };
	const char *env = getenv("FDEV_NO_URING");

	if (flags & FDEV_OPEN_NO_URING || (env && *env && *env != '0')) {
		/* asked for: said only with FDEV_DEBUG */
		if (fdev_debug())
			fallback("io_uring disabled by the caller");
		return;
	}
	if (!(dev->features & ICFAB_F_URING_CMD)) {
		fallback("the module lacks ICFAB_F_URING_CMD");
		return;
	}
	if (uring_disabled_by_sysctl()) {
		fallback("io_uring is disabled (kernel.io_uring_disabled)");
		return;
	}
	if (io_uring_queue_init_params(FDEV_URING_ENTRIES, &dev->ring, &p)) {
		fallback("io_uring setup failed");
		return;
	}
	dev->uring = 1;
}

int fdev_open(const char *path, unsigned int flags, struct fdev **out)
{
	struct icfab_info info = { 0 };
	struct fdev *dev;

	if (!out || flags & ~(FDEV_OPEN_NO_URING | FDEV_OPEN_FREE_RUN))
		return -EINVAL;
	if (!path)
		path = getenv("FDEV_DEVICE");
	if (!path)
		path = "/dev/icfab0";
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		int err = -errno;

		free(dev);
		return err;
	}
	if (ioctl(dev->fd, ICFAB_IOC_INFO, &info)) {
		int err = -errno;

		close(dev->fd);
		free(dev);
		return err;
	}
	dev->features = info.features;
	dev->max_descs = info.limits.max_ctx_descs;
	dev->flags = flags;
	dev->free_slot = -1;
	snprintf(dev->path, sizeof(dev->path), "%s", path);
	/* A batch per SUBMIT and a shared ring beat an SQE per descriptor. */
	if (!cq_setup(dev, flags))
		uring_setup(dev, flags);
	*out = dev;
	return 0;
}

void fdev_close(struct fdev *dev)
{
	if (!dev)
		return;
	if (dev->uring)
		io_uring_queue_exit(&dev->ring);
	if (dev->cq)
		munmap(dev->cq, dev->cq_size);
	close(dev->fd);
	for (unsigned int b = 0; b < dev->nr_slots / SLOTS_PER_BLOCK; b++)
		free(dev->slot_blocks[b]);
	free(dev->slot_blocks);
	free(dev->qdepth);
	free(dev->qinfl);
	free(dev->stash);
	free(dev);
}

int fdev_fd(const struct fdev *dev)
{
	return dev ? dev->fd : -EINVAL;
}

int fdev_query(struct fdev *dev, struct fdev_info *out)
{
	struct icfab_info info = { 0 };

	if (!dev || !out)
		return -EINVAL;
	if (ioctl(dev->fd, ICFAB_IOC_INFO, &info))
		return -errno;
	memset(out, 0, sizeof(*out));
	out->features = info.features;
	out->fabric_id = info.fabric_id;
	out->time_mode = info.time_mode;
	out->segment_size = info.segment_size;
	out->uring = dev->uring;
	out->now_ps = info.now_ps;
	return 0;
}

/*
 * Endpoints are the node ids ATTACH accepts (switches come after them or
 * between). A throw-away context probes them, so the caller's own
 * context attaches only where it means to.
 */
int fdev_endpoints(const char *path, uint32_t *eps, unsigned int max)
{
	struct icfab_info info = { 0 };
	unsigned int n = 0, limit;
	int fd, misses = 0;

	if (!eps && max)
		return -EINVAL;
	if (!path)
		path = getenv("FDEV_DEVICE");
	if (!path)
		path = "/dev/icfab0";
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, ICFAB_IOC_INFO, &info)) {
		int err = -errno;

		close(fd);
		return err;
	}
	limit = info.limits.max_endpoints + info.limits.max_switches;
	for (uint32_t id = 0; id < limit; id++) {
		struct icfab_attach a = { .endpoint = id };

		if (ioctl(fd, ICFAB_IOC_ATTACH, &a)) {
			if (errno == ENOSPC) {
				/* This probe is full: go on with a fresh one. */
				close(fd);
				fd = open(path, O_RDWR | O_CLOEXEC);
				if (fd < 0)
					return -errno;
				id--;
				continue;
			}
			if (errno != ENOENT)
				break;
			/* A long run of non-endpoints: past the last node. */
			if (++misses > 4096)
				break;
			continue;
		}
		misses = 0;
		if (n < max)
			eps[n] = id;
		n++;
	}
	close(fd);
	return (int)n;
}

int fdev_attach(struct fdev *dev, uint32_t endpoint)
{
	struct icfab_attach a = { .endpoint = endpoint };

	if (!dev)
		return -EINVAL;
	if (dev->flags & FDEV_OPEN_FREE_RUN)
		a.flags = ICFAB_ATTACH_F_FREE_RUN;
	if (ioctl(dev->fd, ICFAB_IOC_ATTACH, &a))
		return -errno;
	return 0;
}

/* ---- regions ---- */

int fdev_region_alloc(struct fdev *dev, uint32_t endpoint, uint64_t size,
		      struct fdev_region *r)
{
	return fdev_region_alloc_tier(dev, endpoint, FDEV_TIER_NONE, size, r);
}

int fdev_region_alloc_tier(struct fdev *dev, uint32_t endpoint, uint32_t tier,
			   uint64_t size, struct fdev_region *r)
{
	struct icfab_region_alloc ra = { .endpoint = endpoint, .size = size,
					 .tier = tier };
	int err;

	if (!dev || !r || !size || tier > ICFAB_TIER_MAX)
		return -EINVAL;
	if (!(dev->features & ICFAB_F_MEMORY) ||
	    (tier && !(dev->features & ICFAB_F_MEMORY_TIERS)))
		return -EOPNOTSUPP;
	if (ioctl(dev->fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	memset(r, 0, sizeof(*r));
	r->handle = ra.region;
	r->endpoint = endpoint;
	r->size = ra.size;
	r->mmap_offset = ra.mmap_offset;
	err = fdev_region_map(dev, r);
	if (err) {
		struct icfab_region_free rf = { .region = ra.region };

		ioctl(dev->fd, ICFAB_IOC_REGION_FREE, &rf);
		return err;
	}
	return 0;
}

int fdev_region_map(struct fdev *dev, struct fdev_region *r)
{
	void *p;

	if (!dev || !r || !r->handle)
		return -EINVAL;
	if (r->addr)
		return 0;
	p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		 (off_t)r->mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	r->addr = p;
	return 0;
}

int fdev_region_export(struct fdev *dev, struct fdev_region *r,
		       uint32_t access)
{
	struct icfab_region_export re;

	if (!dev || !r || !access || access & ~ICFAB_ACCESS_ALL)
		return -EINVAL;
	re = (struct icfab_region_export){ .region = r->handle,
					   .access = access };
	if (ioctl(dev->fd, ICFAB_IOC_REGION_EXPORT, &re))
		return -errno;
	r->key = re.key;
	return 0;
}

int fdev_region_import(struct fdev *dev, uint64_t key, struct fdev_remote *out)
{
	struct icfab_region_import ri = { .key = key };

	if (!dev || !out || !key)
		return -EINVAL;
	if (ioctl(dev->fd, ICFAB_IOC_REGION_IMPORT, &ri))
		return -errno;
	out->key = key;
	out->endpoint = ri.endpoint;
	out->access = ri.access;
	out->size = ri.size;
	return 0;
}

int fdev_region_free(struct fdev *dev, struct fdev_region *r)
{
	struct icfab_region_free rf;

	if (!dev || !r || !r->handle)
		return -EINVAL;
	rf = (struct icfab_region_free){ .region = r->handle };
	if (ioctl(dev->fd, ICFAB_IOC_REGION_FREE, &rf))
		return -errno;
	if (r->addr)
		munmap(r->addr, r->size);
	memset(r, 0, sizeof(*r));
	return 0;
}

/* ---- queues ---- */

int fdev_queue_create(struct fdev *dev, uint32_t endpoint, uint32_t depth,
		      uint32_t *queue)
{
	struct icfab_queue_create qc = { .endpoint = endpoint, .depth = depth };

	if (!dev || !queue || !depth)
		return -EINVAL;
	if (ioctl(dev->fd, ICFAB_IOC_QUEUE_CREATE, &qc))
		return -errno;
	if (qc.queue >= dev->nq) {
		unsigned int nq = qc.queue + 16;
		uint32_t *d = realloc(dev->qdepth, nq * sizeof(*d));
		uint32_t *f = d ? realloc(dev->qinfl, nq * sizeof(*f)) : NULL;

		if (d)
			dev->qdepth = d;
		if (!d || !f) {
			struct icfab_queue_destroy qd = { .queue = qc.queue };

			ioctl(dev->fd, ICFAB_IOC_QUEUE_DESTROY, &qd);
			return -ENOMEM;
		}
		dev->qinfl = f;
		memset(d + dev->nq, 0, (nq - dev->nq) * sizeof(*d));
		memset(f + dev->nq, 0, (nq - dev->nq) * sizeof(*f));
		dev->nq = nq;
	}
	dev->qdepth[qc.queue] = depth;
	dev->qinfl[qc.queue] = 0;
	*queue = qc.queue;
	return 0;
}

static int ioctl_wait(struct fdev *dev, unsigned int min,
		      unsigned int timeout_ms);

int fdev_recv_queue_create(struct fdev *dev, uint32_t endpoint,
			   uint32_t depth)
{
	struct icfab_queue_create qc = {
		.endpoint = endpoint, .depth = depth, .flags = ICFAB_QUEUE_F_RECV,
	};

	if (!dev || !depth || dev->recv_queue)
		return -EINVAL;
	/* Its completions are reaped by ICFAB_IOC_WAIT: no io_uring. */
	if (!(dev->features & ICFAB_F_RECV_NOTIFY) || dev->uring)
		return -EOPNOTSUPP;
	if (ioctl(dev->fd, ICFAB_IOC_QUEUE_CREATE, &qc))
		return -errno;
	dev->recv_queue = qc.queue + 1;
	return 0;
}

int fdev_queue_destroy(struct fdev *dev, uint32_t queue)
{
	struct icfab_queue_destroy qd = { .queue = queue };

	if (!dev)
		return -EINVAL;
	if (ioctl(dev->fd, ICFAB_IOC_QUEUE_DESTROY, &qd))
		return -errno;
	if (queue < dev->nq)
		dev->qdepth[queue] = 0;
	return 0;
}

static void prep(struct fdev_desc *d, int op, uint32_t queue, uint64_t len,
		 uint64_t tag)
{
	memset(d, 0, sizeof(*d));
	d->op = (uint8_t)op;
	d->queue = queue;
	d->len = len;
	d->user_tag = tag;
}

void fdev_prep_write(struct fdev_desc *d, uint32_t queue, uint32_t region,
		     uint64_t local_off, uint64_t rkey, uint64_t remote_off,
		     uint64_t len, uint64_t tag)
{
	prep(d, FDEV_OP_WRITE, queue, len, tag);
	d->region = region;
	d->local_off = local_off;
	d->rkey = rkey;
	d->remote_off = remote_off;
}

void fdev_prep_read(struct fdev_desc *d, uint32_t queue, uint32_t region,
		    uint64_t local_off, uint64_t rkey, uint64_t remote_off,
		    uint64_t len, uint64_t tag)
{
	fdev_prep_write(d, queue, region, local_off, rkey, remote_off, len, tag);
	d->op = FDEV_OP_READ;
}

void fdev_prep_timing(struct fdev_desc *d, int op, uint32_t queue,
		      uint32_t peer, uint64_t len, uint64_t tag)
{
	prep(d, op, queue, len, tag);
	d->flags = FDEV_DESC_TIMING_ONLY;
	d->peer = peer;
}

void fdev_prep_delay(struct fdev_desc *d, uint32_t queue, uint64_t ps,
		     uint64_t tag)
{
	prep(d, FDEV_OP_DELAY, queue, ps, tag);
}

void fdev_prep_fence(struct fdev_desc *d, uint32_t queue, uint64_t tag)
{
	prep(d, FDEV_OP_FENCE, queue, 0, tag);
}

/* ---- the ioctl path ---- */

/* One completion reaped by the ioctl path or from the ring: stash it. */
static int ioctl_reaped(struct fdev *dev, const struct icfab_cqe *c)
{
	int err = stash_push(dev, (const struct fdev_cqe *)c);

	if (err)
		return err;
	if (c->finish_ps > dev->clock_ps)
		dev->clock_ps = c->finish_ps;
	/* Received ones were never in flight here. */
	if (!fdev_cqe_received(dev, (const struct fdev_cqe *)c))
		dev->inflight--;
	return 0;
}

/*
 * Everything the ring holds into the stash, then what the WAIT list has
 * (completions that found the ring full, receive completions) when
 * there may be any. The number stashed, or -errno.
 */
static int cq_drain(struct fdev *dev)
{
	struct icfab_cq_ring *r = dev->cq;
	uint32_t head = r->head;
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint32_t ovf = __atomic_load_n(&r->overflow, __ATOMIC_RELAXED);
	int n = 0, err = 0;

	for (; head != tail; head++, n++) {
		err = ioctl_reaped(dev, &dev->cq_cqes[head & r->mask]);
		if (err)
			break;
	}
	__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
	if (head != tail)
		return err;
	if (ovf != dev->cq_overflow || dev->recv_queue) {
		struct icfab_cqe cqes[256];
		struct icfab_wait w;

		dev->cq_overflow = ovf;
		do {
			w = (struct icfab_wait){ .cqes = (uintptr_t)cqes,
						 .max = 256 };
			if (ioctl(dev->fd, ICFAB_IOC_WAIT, &w))
				return -errno;
			for (unsigned int i = 0; i < w.nr; i++) {
				err = ioctl_reaped(dev, &cqes[i]);
				if (err)
					return err;
			}
			n += w.nr;
		} while (w.nr == 256);
	}
	return n;
}

/* ioctl_wait() with the ring: poll it, sleep in CQ_WAIT while short. */
static int cq_wait(struct fdev *dev, unsigned int min, unsigned int timeout_ms)
{
	unsigned int got = 0;

	for (;;) {
		struct icfab_cq_wait w = { .timeout_ms = timeout_ms };
		int n = cq_drain(dev);

		if (n < 0)
			return n;
		got += n;
		if (got >= min)
			return 0;
		w.min = min - got;
		if (ioctl(dev->fd, ICFAB_IOC_CQ_WAIT, &w))
			return -errno;
		if (w.clock_ps > dev->clock_ps)
			dev->clock_ps = w.clock_ps;
	}
}

static int ioctl_wait(struct fdev *dev, unsigned int min, unsigned int timeout_ms)
{
	struct icfab_cqe few[256], *cqes = few;
	unsigned int cap = 256, got = 0;
	int err = 0;

	if (dev->cq)
		return cq_wait(dev, min, timeout_ms);
	/*
	 * All of @min in one WAIT where memory allows: the module runs a
	 * step on its parallel engine only for a WAIT that cannot end
	 * before the step's last completion (cq_wait() asks so anyway).
	 */
	if (min > cap) {
		struct icfab_cqe *all = calloc(min, sizeof(*all));

		if (all) {
			cqes = all;
			cap = min;
		}
	}
	do {
		unsigned int want = min - got;
		struct icfab_wait w = {
			.cqes = (uintptr_t)cqes, .max = cap,
			.min = want > cap ? cap : want,
			.timeout_ms = timeout_ms,
		};

		if (ioctl(dev->fd, ICFAB_IOC_WAIT, &w)) {
			err = -errno;
			break;
		}
		dev->clock_ps = w.clock_ps > dev->clock_ps ? w.clock_ps :
							     dev->clock_ps;
		for (unsigned int i = 0; i < w.nr && !err; i++) {
			err = stash_push(dev, (struct fdev_cqe *)&cqes[i]);
			if (err)
				break;
			if (cqes[i].finish_ps > dev->clock_ps)
				dev->clock_ps = cqes[i].finish_ps;
			/* Received ones were never in flight here. */
			if (!fdev_cqe_received(dev, (struct fdev_cqe *)&cqes[i]))
				dev->inflight--;
		}
		got += w.nr;
	} while (!err && got < min);
	if (cqes != few)
		free(cqes);
	return err;
}

/*
 * A notify communicator's rank between operations (comm.c): one WAIT of
 * a receiver for its next completion, for at most @timeout_ms. While it
 * sleeps the context does not hold the engine back; what comes goes to
 * the stash. -ETIMEDOUT when nothing came (the module then moved the
 * context's clock to the engine's, which fdev_sync_clock() reads).
 */
int fdev_idle_wait(struct fdev *dev, unsigned int timeout_ms)
{
	if (!dev->recv_queue || dev->uring)
		return -EINVAL;
	return ioctl_wait(dev, 1, timeout_ms);
}

/*
 * Make the fdev_idle_wait() under way in another thread return
 * -ECANCELED at once (ICFAB_IOC_WAIT_END), or the next one if none is.
 */
int fdev_idle_end(struct fdev *dev)
{
	if (!(dev->features & ICFAB_F_WAIT_END))
		return -EOPNOTSUPP;
	return ioctl(dev->fd, ICFAB_IOC_WAIT_END) ? -errno : 0;
}

/* Read the context's clock from the module (a WAIT for nothing). */
int fdev_sync_clock(struct fdev *dev)
{
	struct icfab_wait w = { 0 };

	if (dev->uring)
		return -EINVAL;
	if (ioctl(dev->fd, ICFAB_IOC_WAIT, &w))
		return -errno;
	dev->clock_ps = w.clock_ps;
	return 0;
}

/* ---- the io_uring path ---- */

/*
 * The module writes each completion's struct icfab_cqe to the address
 * the SQE gave, so slots never move: they come in blocks that are only
 * ever added.
 */
static struct fdev_slot *slot_at(struct fdev *dev, unsigned int i)
{
	return &dev->slot_blocks[i / SLOTS_PER_BLOCK][i % SLOTS_PER_BLOCK];
}

static int slot_get(struct fdev *dev)
{
	if (dev->free_slot < 0) {
		unsigned int nb = dev->nr_slots / SLOTS_PER_BLOCK;
		struct fdev_slot **blocks, *b;

		blocks = realloc(dev->slot_blocks, (nb + 1) * sizeof(*blocks));
		if (!blocks)
			return -ENOMEM;
		dev->slot_blocks = blocks;
		b = calloc(SLOTS_PER_BLOCK, sizeof(*b));
		if (!b)
			return -ENOMEM;
		blocks[nb] = b;
		for (unsigned int i = 0; i < SLOTS_PER_BLOCK; i++)
			b[i].next = i + 1 < SLOTS_PER_BLOCK ?
				    (int)(dev->nr_slots + i + 1) : -1;
		dev->free_slot = (int)dev->nr_slots;
		dev->nr_slots += SLOTS_PER_BLOCK;
	}
	{
		int s = dev->free_slot;

		dev->free_slot = slot_at(dev, (unsigned int)s)->next;
		return s;
	}
}

#define FDEV_WAIT_TAG	(~0ULL)

/* Reap one CQE already in the ring; returns 1 if it was a WAIT's. */
static int uring_reap_one(struct fdev *dev, struct io_uring_cqe *cqe,
			  int *wait_res)
{
	uint64_t ud = cqe->user_data;
	int is_wait = ud == FDEV_WAIT_TAG;

	if (is_wait) {
		*wait_res = cqe->res;
		if (cqe->res >= 0 && cqe->big_cqe[0] > dev->clock_ps)
			dev->clock_ps = cqe->big_cqe[0];
		dev->waits_inflight--;
	} else {
		struct fdev_slot *s = slot_at(dev, (unsigned int)ud);
		struct fdev_cqe c = s->cqe;

		if (cqe->res < 0) {
			/* Rejected at once: report it as its completion. */
			memset(&c, 0, sizeof(c));
			c.user_tag = s->tag;
			c.queue = s->queue;
		}
		c.status = cqe->res;
		/* Only a cap lowered since it was read gets here. */
		if (cqe->res == -EAGAIN)
			dev->cap_stale = 1;
		stash_push(dev, &c);
		s->next = dev->free_slot;
		dev->free_slot = (int)ud;
		dev->inflight--;
		if (cqe->res < 0)
			dev->rejected++;
		else if (dev->counted_unreaped)
			dev->counted_unreaped--;
		else
			dev->uncounted_reaped++;
	}
	io_uring_cqe_seen(&dev->ring, cqe);
	return is_wait;
}

static void uring_drain(struct fdev *dev, int *wait_res)
{
	struct io_uring_cqe *cqe;

	while (!io_uring_peek_cqe(&dev->ring, &cqe))
		uring_reap_one(dev, cqe, wait_res);
}

static int uring_post_one(struct fdev *dev, const struct fdev_desc *d)
{
	struct icfab_uring_submit *cmd;
	struct io_uring_sqe *sqe;
	int s, wait_res = 0;

	sqe = io_uring_get_sqe(&dev->ring);
	if (!sqe) {
		int ret = io_uring_submit(&dev->ring);

		if (ret < 0)
			return ret;
		uring_drain(dev, &wait_res);
		sqe = io_uring_get_sqe(&dev->ring);
		if (!sqe)
			return -EAGAIN;
	}
	s = slot_get(dev);
	if (s < 0)
		return s;
	memset(&slot_at(dev, (unsigned int)s)->cqe, 0, sizeof(struct fdev_cqe));
	slot_at(dev, (unsigned int)s)->tag = d->user_tag;
	slot_at(dev, (unsigned int)s)->queue = d->queue;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, dev->fd, NULL, 0, 0);
	sqe->cmd_op = ICFAB_UCMD_SUBMIT;
	sqe->user_data = (uint64_t)s;
	cmd = (struct icfab_uring_submit *)sqe->cmd;
	memset(cmd, 0, sizeof(*cmd));
	memcpy(&cmd->desc, d, sizeof(cmd->desc));
	cmd->cqe_addr = (uintptr_t)&slot_at(dev, (unsigned int)s)->cqe;
	dev->inflight++;
	return 0;
}

/*
 * ICFAB_UCMD_WAIT counts io_uring completions that no earlier WAIT
 * counted, reaped or not; ask for those already reaped and uncounted
 * plus @need new ones, so at least @need land in the stash.
 */
static int uring_wait(struct fdev *dev, unsigned int need)
{
	struct icfab_uring_wait *cmd;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int have = dev->stash_nr + need;
	int wait_res = -EINPROGRESS, ret;

	sqe = io_uring_get_sqe(&dev->ring);
	if (!sqe) {
		io_uring_submit(&dev->ring);
		sqe = io_uring_get_sqe(&dev->ring);
		if (!sqe)
			return -EBUSY;
	}
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, dev->fd, NULL, 0, 0);
	sqe->cmd_op = ICFAB_UCMD_WAIT;
	sqe->user_data = FDEV_WAIT_TAG;
	cmd = (struct icfab_uring_wait *)sqe->cmd;
	memset(cmd, 0, sizeof(*cmd));
	cmd->min = dev->uncounted_reaped + need;
	dev->waits_inflight++;
	ret = io_uring_submit(&dev->ring);
	if (ret < 0)
		return ret;
	while (wait_res == -EINPROGRESS) {
		ret = io_uring_wait_cqe(&dev->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		uring_reap_one(dev, cqe, &wait_res);
	}
	if (wait_res < 0)
		return wait_res;
	/* It counted the reaped ones first, then ones still in the ring. */
	if ((unsigned int)wait_res >= dev->uncounted_reaped) {
		dev->counted_unreaped += wait_res - dev->uncounted_reaped;
		dev->uncounted_reaped = 0;
	} else {
		dev->uncounted_reaped -= wait_res;
	}
	while (dev->counted_unreaped && dev->stash_nr < have) {
		ret = io_uring_wait_cqe(&dev->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		uring_reap_one(dev, cqe, &wait_res);
	}
	uring_drain(dev, &wait_res);
	return 0;
}

/* ---- post, poll, wait ---- */

/*
 * What the module would refuse at once, refused here too, so that both
 * paths stop at the first bad descriptor with its errno (io_uring would
 * otherwise report it as a completion). Keys and ranges are the module's
 * to check: with io_uring those come back as a completion's status.
 */
static int desc_check(const struct fdev *dev, const struct fdev_desc *d)
{
	int notify = d->flags & ICFAB_DESC_F_NOTIFY;

	if (notify && (!(dev->features & ICFAB_F_RECV_NOTIFY) ||
		       d->op != ICFAB_OP_WRITE || d->circuit))
		return -EINVAL;
	if (d->pad || (d->imm && !notify) ||
	    (d->circuit && (!(dev->features & ICFAB_F_CIRCUITS) ||
			    d->op != ICFAB_OP_WRITE)) ||
	    d->flags & ~(ICFAB_DESC_F_ALL | ICFAB_DESC_F_NOTIFY) ||
	    d->op < ICFAB_OP_WRITE ||
	    d->op > ICFAB_OP_FENCE)
		return -EINVAL;
	if (d->queue >= dev->nq || !dev->qdepth[d->queue])
		return -ENOENT;
	return 0;
}

/*
 * The module's max_ctx_descs, read again after a SUBMIT came back
 * -EAGAIN: someone changed the parameter while this context ran.
 */
static void cap_refresh(struct fdev *dev)
{
	struct icfab_info info = { 0 };

	if (!ioctl(dev->fd, ICFAB_IOC_INFO, &info))
		dev->max_descs = info.limits.max_ctx_descs;
	dev->cap_stale = 0;
}

/*
 * Room for one more descriptor on @queue: the queue's depth counts
 * descriptors until their completion is reaped, and the module refuses a
 * SUBMIT (-EAGAIN) while the context holds max_ctx_descs it has not
 * finished (io_uring's leave its count when they complete, so counting
 * until they are reaped stays within it). Blocking, reap into the stash
 * until there is room; with @nowait, -EAGAIN.
 */
static int uring_room(struct fdev *dev, uint32_t queue, int nowait)
{
	while (dev->qinfl[queue] >= dev->qdepth[queue] ||
	       (dev->max_descs && dev->inflight >= dev->max_descs)) {
		int err;

		if (nowait)
			return -EAGAIN;
		err = uring_wait(dev, 1);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Post @nr descriptors in order, stopping at the first the module would
 * refuse at once. Blocking (fdev_post), back-pressure (a full queue, the
 * context at max_ctx_descs) is met by reaping completions into the stash
 * and going on. @nowait (__fdev_post_nowait) never blocks: a queue
 * holding depth descriptors not yet reaped is full, and so is the
 * context at the module's cap; the batch stops before the first
 * descriptor that meets one, which is neither posted nor lost.
 * Completions already in the io_uring ring are reaped (without
 * blocking) first, so they make room.
 */
static int post(struct fdev *dev, const struct fdev_desc *d, unsigned int nr,
		int nowait)
{
	unsigned int done = 0;
	int err = 0;

	if (!dev || (!d && nr))
		return -EINVAL;
	if (dev->uring) {
		int wait_res = 0;

		if (nowait)
			uring_drain(dev, &wait_res);
		if (dev->cap_stale)
			cap_refresh(dev);
		for (; done < nr; done++) {
			err = desc_check(dev, &d[done]);
			if (!err)
				err = uring_room(dev, d[done].queue, nowait);
			if (!err)
				err = uring_post_one(dev, &d[done]);
			if (err)
				break;
			dev->qinfl[d[done].queue]++;
			if (d[done].op == FDEV_OP_DELAY)
				dev->clock_ps += d[done].len;
		}
		if (done) {
			int ret = io_uring_submit(&dev->ring);

			if (ret < 0)
				return ret;
		}
		return done ? (int)done : err;
	}
	while (done < nr) {
		struct icfab_submit sub = {
			.descs = (uintptr_t)&d[done], .nr = nowait ? 1 : nr - done,
			.flags = dev->cq ? ICFAB_SUBMIT_F_CQ : 0,
		};
		int ret;

		err = desc_check(dev, &d[done]);
		if (!err && nowait &&
		    dev->qinfl[d[done].queue] >= dev->qdepth[d[done].queue])
			err = -EAGAIN;
		if (err)
			break;
		ret = ioctl(dev->fd, ICFAB_IOC_SUBMIT, &sub);
		if (ret > 0) {
			for (int i = 0; i < ret; i++) {
				if (d[done + i].op == FDEV_OP_DELAY)
					dev->clock_ps += d[done + i].len;
				if (d[done + i].queue < dev->nq)
					dev->qinfl[d[done + i].queue]++;
			}
			done += ret;
			dev->inflight += ret;
			continue;
		}
		if (ret == 0) {
			err = nowait ? -EAGAIN : 0;	/* the module took none */
			break;
		}
		err = -errno;
		if (nowait || err != -EAGAIN || !dev->inflight)
			break;
		/* Back-pressure: reap into the stash, then go on. */
		err = ioctl_wait(dev, 1, 0);
		if (err)
			break;
	}
	return done ? (int)done : err;
}

int fdev_post(struct fdev *dev, const struct fdev_desc *d, unsigned int nr)
{
	return post(dev, d, nr, 0);
}

/* Raw post: never blocks, never reaps by waiting (post() above). */
int __fdev_post_nowait(struct fdev *dev, const struct fdev_desc *d,
		       unsigned int nr)
{
	return post(dev, d, nr, 1);
}

int fdev_poll(struct fdev *dev, struct fdev_cqe *cqes, unsigned int max)
{
	if (!dev || (!cqes && max))
		return -EINVAL;
	if (dev->uring) {
		int wait_res = 0;

		uring_drain(dev, &wait_res);
	} else if (dev->cq) {
		int n = cq_drain(dev);

		if (n < 0)
			return n;
	} else if ((dev->inflight || dev->recv_queue) && dev->stash_nr < max) {
		struct icfab_cqe tmp[64];
		struct icfab_wait w = {
			.cqes = (uintptr_t)tmp, .max = 64, .min = 0,
		};

		if (ioctl(dev->fd, ICFAB_IOC_WAIT, &w))
			return -errno;
		for (unsigned int i = 0; i < w.nr; i++) {
			stash_push(dev, (struct fdev_cqe *)&tmp[i]);
			if (!fdev_cqe_received(dev, (struct fdev_cqe *)&tmp[i]))
				dev->inflight--;
		}
	}
	return (int)stash_take(dev, cqes, max);
}

int fdev_wait_stash(struct fdev *dev, unsigned int min,
		    unsigned int timeout_ms)
{
	unsigned int need;

	if (dev->stash_nr >= min)
		return 0;
	need = min - dev->stash_nr;
	/* A receiver may wait for what others send it. */
	if (need > dev->inflight && !dev->recv_queue)
		return -EDEADLK;
	if (dev->uring)
		return uring_wait(dev, need);
	return ioctl_wait(dev, need, timeout_ms);
}

int fdev_wait(struct fdev *dev, struct fdev_cqe *cqes, unsigned int min,
	      unsigned int max, unsigned int timeout_ms)
{
	int err;

	if (!dev || min > max || (!cqes && max))
		return -EINVAL;
	err = fdev_wait_stash(dev, min, timeout_ms);
	if (err)
		return err;
	return (int)stash_take(dev, cqes, max);
}

unsigned int fdev_inflight(const struct fdev *dev)
{
	return dev ? dev->inflight + dev->stash_nr : 0;
}

uint64_t fdev_clock(const struct fdev *dev)
{
	return dev ? dev->clock_ps : 0;
}

int fdev_compute(struct fdev *dev, uint32_t queue, uint64_t ps)
{
	struct fdev_desc d;
	struct fdev_cqe c;
	int ret;

	if (!dev)
		return -EINVAL;
	fdev_prep_delay(&d, queue, ps, FDEV_TAG_INTERNAL);
	ret = fdev_post(dev, &d, 1);
	if (ret < 0)
		return ret;
	/* Reap it (and keep whatever else came) so the queue slot frees. */
	return fdev_reap_tag(dev, FDEV_TAG_INTERNAL, &c);
}

int fdev_advance_to(struct fdev *dev, uint32_t queue, uint64_t ps)
{
	if (!dev)
		return -EINVAL;
	if (ps <= dev->clock_ps)
		return 0;
	return fdev_compute(dev, queue, ps - dev->clock_ps);
}

/* Wait until the completion tagged @tag is in the stash; take it out. */
int fdev_reap_tag(struct fdev *dev, uint64_t tag, struct fdev_cqe *out)
{
	for (;;) {
		struct fdev_cqe *st = dev->stash + dev->stash_head;

		for (unsigned int i = 0; i < dev->stash_nr; i++) {
			if (st[i].user_tag != tag)
				continue;
			*out = st[i];
			memmove(&st[i], &st[i + 1],
				(dev->stash_nr - i - 1) * sizeof(*out));
			if (!--dev->stash_nr)
				dev->stash_head = 0;
			return out->status;
		}
		if (!dev->inflight)
			return -EDEADLK;
		{
			int err = dev->uring ? uring_wait(dev, 1) :
					       ioctl_wait(dev, 1, 0);
			if (err)
				return err;
		}
	}
}
