// SPDX-License-Identifier: GPL-2.0
/*
 * A structured syscall fuzzer for the module, run in the test VM.
 *
 * Worker processes issue random sequences of the icfab ioctls (INFO,
 * ATTACH, QUEUE_CREATE/DESTROY, SUBMIT with random but well-formed or
 * nearly well-formed descriptors, WAIT with timeouts, REGION_ALLOC/FREE/
 * EXPORT/IMPORT, CIRCUIT_RECV), io_uring commands (UCMD_SUBMIT,
 * UCMD_WAIT), commands of the icfab generic netlink family (gets and
 * dumps, link state changes with commit or abort, circuits, statistics),
 * mmap/munmap of regions and writes through the mappings, open and close
 * of device files with commands in flight, forked children that share a
 * worker's files and exit, and workers that exit or SIGKILL themselves.
 * The parent SIGKILLs a random worker now and then and starts a new one.
 *
 * Every answer must be one the API documents: an errno outside the list
 * below (EFAULT for a valid buffer, ENOTTY, EIO...) fails the run, and so
 * does a device that no longer answers INFO or a fabric that cannot be
 * cleared at the end. The kernel's side (no warning, no taint, rmmod)
 * is checked by run_tests.sh and tools/vm/run.
 *
 * Seeded: the seed is printed first, and -s SEED repeats it. With -j 1
 * and -k 0 (one worker, no kills by the parent) the sequence of calls is
 * a function of the seed; with more workers each worker's sequence is,
 * but not how they interleave, nor when the parent's kills land.
 *
 * usage: syscall_fuzz [-s SEED] [-n OPS] [-t SECONDS] [-j WORKERS]
 *                     [-k KILL_MS] [-v]
 *   default: -t 60 -j 3 -k 2000 (the short run of the selftests);
 *   -n: stop after OPS operations in all (0: no bound), whichever of
 *   -n and -t comes first (-t 0: no time bound).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "genl.h"
#include "uring_util.h"

#define DEV		"/dev/icfab0"
#define MAX_WORKERS	16
#define NR_FDS		3
#define NR_QUEUES	8
#define NR_REGIONS	8
#define NR_MAPS		8
#define NR_KEYS		64
#define NR_RECS		64
#define MAX_DESCS	32

/* Shared by every process: counters, the keys regions were exported with. */
struct shared {
	atomic_ulong ops;
	atomic_ulong errors;		/* answers the API does not document */
	atomic_ulong ok_calls;
	atomic_ulong failed_calls;
	atomic_ulong stop;
	atomic_ullong keys[NR_KEYS];
	atomic_uint circuits[8];
	/* The undocumented answers, by call and errno. */
	struct { char what[24]; int err; atomic_ulong count; } bad[16];
	atomic_int bad_lock;
	/* Per call: how often it succeeded and was refused. */
	struct {
		const char *what;
		atomic_ulong ok, refused;
		atomic_ulong by_errno[134];	/* refusals by errno */
	} calls[32];
	atomic_int calls_lock;
};

static struct shared *sh;
static unsigned int nr_endpoints;
static int verbose;

/* xorshift64*: small, seedable, the same everywhere. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint32_t below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(uint32_t percent)
{
	return below(100) < percent;
}

static void seed_rng(uint64_t seed)
{
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
	if (!rng_state)
		rng_state = 1;
	rnd();
}

/* ---- what a call may answer ---- */

static const int documented[] = {
	EINVAL, ENOENT, EAGAIN, ENOSPC, EBUSY, EBADF, EACCES, ERANGE, ENXIO,
	ENOKEY, EDEADLK, ETIMEDOUT, EINTR, EOPNOTSUPP, EPERM, ENOTCONN, E2BIG,
	EDQUOT, EMFILE, ECANCELED, EEXIST, ENOMEM, ENODEV, EHOSTUNREACH,
	ENETDOWN, ESTALE, EMSGSIZE, ELOOP, EOVERFLOW,
	EALREADY,	/* ATTACH of an endpoint the context has already */
	ENOBUFS,	/* a completion: the engine had no room when it started */
};

/* @what is a string literal: the same pointer in every worker (fork). */
static void count_call(const char *what, int err)
{
	int i;

	for (i = 0; i < 32; i++) {
		if (!sh->calls[i].what) {
			while (atomic_exchange(&sh->calls_lock, 1))
				;
			if (!sh->calls[i].what)
				sh->calls[i].what = what;
			atomic_store(&sh->calls_lock, 0);
		}
		if (sh->calls[i].what == what) {
			atomic_fetch_add(err ? &sh->calls[i].refused :
					 &sh->calls[i].ok, 1);
			if (err > 0 && err < 134)
				atomic_fetch_add(&sh->calls[i].by_errno[err], 1);
			return;
		}
	}
}

static void record(const char *what, int err, bool bad_ptr)
{
	size_t i;

	atomic_fetch_add(&sh->ops, 1);
	count_call(what, err);
	if (!err) {
		atomic_fetch_add(&sh->ok_calls, 1);
		return;
	}
	atomic_fetch_add(&sh->failed_calls, 1);
	if (err < 0)
		err = -err;
	if (bad_ptr && err == EFAULT)
		return;
	for (i = 0; i < sizeof(documented) / sizeof(documented[0]); i++)
		if (documented[i] == err)
			return;
	atomic_fetch_add(&sh->errors, 1);
	while (atomic_exchange(&sh->bad_lock, 1))
		;
	for (i = 0; i < 16; i++) {
		if (!sh->bad[i].what[0]) {
			snprintf(sh->bad[i].what, sizeof(sh->bad[i].what), "%s",
				 what);
			sh->bad[i].err = err;
		}
		if (sh->bad[i].err == err && !strcmp(sh->bad[i].what, what)) {
			atomic_fetch_add(&sh->bad[i].count, 1);
			break;
		}
	}
	atomic_store(&sh->bad_lock, 0);
	if (verbose)
		fprintf(stderr, "# undocumented: %s: %s\n", what, strerror(err));
}

static int xioctl(int fd, unsigned long req, void *arg, const char *what,
		  bool bad_ptr)
{
	int ret = ioctl(fd, req, arg);
	int err = ret < 0 ? errno : 0;

	record(what, err, bad_ptr);
	return ret < 0 ? -err : ret;
}

/* ---- one worker's state ---- */

struct region {
	int fd;				/* -1: slot free */
	uint32_t handle, endpoint;
	uint64_t size, mmap_offset, key;
};

struct map {
	void *addr;			/* NULL: slot free */
	size_t len;
};

static struct worker {
	int fds[NR_FDS];
	uint32_t attached[NR_FDS];	/* bit per endpoint (up to 32) */
	struct { int fd; uint32_t id, ep; bool recv; } queues[NR_QUEUES];
	struct region regions[NR_REGIONS];
	struct map maps[NR_MAPS];
	struct io_uring ring;
	bool ring_ok;
	unsigned int ring_pending;	/* SQEs prepared, not submitted */
	struct icfab_cqe recs[NR_RECS];	/* written by UCMD_SUBMIT */
	struct genl_sock gs;
	bool gs_ok;
	pid_t children[4];
} W;

static int pick_fd(void)
{
	int i, start = below(NR_FDS);

	for (i = 0; i < NR_FDS; i++)
		if (W.fds[(start + i) % NR_FDS] >= 0)
			return W.fds[(start + i) % NR_FDS];
	return -1;
}

static int fd_slot(int fd)
{
	int i;

	for (i = 0; i < NR_FDS; i++)
		if (W.fds[i] == fd)
			return i;
	return -1;
}

static uint32_t pick_endpoint(void)
{
	/* now and then one that does not exist, or a huge id */
	if (chance(3))
		return chance(50) ? nr_endpoints + below(4) : (uint32_t)rnd();
	return below(nr_endpoints);
}

static uint64_t pick_len(void)
{
	static const uint64_t lens[] = {
		0, 1, 7, 4095, 4096, 4097, 65536, 1 << 20, 16 << 20,
		1ULL << 30, 1ULL << 40, ~0ULL, ~0ULL - 4095,
	};

	if (chance(50))
		return 1 + below(3 * 4096);
	return lens[below(sizeof(lens) / sizeof(lens[0]))];
}

static uint64_t pick_key(void)
{
	if (chance(10))
		return rnd();
	return atomic_load(&sh->keys[below(NR_KEYS)]);
}

static struct region *pick_region(void)
{
	struct region *r = &W.regions[below(NR_REGIONS)];

	return r->fd >= 0 ? r : NULL;
}

/* ---- the operations ---- */

static void op_open(void)
{
	int slot = below(NR_FDS), fd;

	if (W.fds[slot] >= 0)
		return;
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	record("open", fd < 0 ? errno : 0, false);
	if (fd < 0)
		return;
	W.fds[slot] = fd;
	W.attached[slot] = 0;
}

static void op_close(void)
{
	int slot = below(NR_FDS), fd = W.fds[slot], i;

	if (fd < 0)
		return;
	/* With whatever is in flight on it, io_uring commands included. */
	record("close", close(fd) ? errno : 0, false);
	W.fds[slot] = -1;
	for (i = 0; i < NR_QUEUES; i++)
		if (W.queues[i].fd == fd)
			W.queues[i].fd = -1;
	for (i = 0; i < NR_REGIONS; i++)
		if (W.regions[i].fd == fd)
			W.regions[i].fd = -1;
}

static void op_info(void)
{
	struct icfab_info info = { 0 };
	int fd = pick_fd();

	if (fd < 0)
		return;
	if (chance(5))
		info.flags = 1;
	if (chance(5))
		info.reserved[below(2)] = 1;
	xioctl(fd, ICFAB_IOC_INFO, &info, "INFO", false);
}

static void op_attach(void)
{
	struct icfab_attach a = { .endpoint = pick_endpoint() };
	int fd = pick_fd(), slot;

	if (fd < 0)
		return;
	if (chance(10))
		a.flags = chance(50) ? ICFAB_ATTACH_F_FREE_RUN : (uint32_t)rnd();
	if (chance(3))
		a.reserved[below(3)] = rnd();
	if (!xioctl(fd, ICFAB_IOC_ATTACH, &a, "ATTACH", false)) {
		slot = fd_slot(fd);
		if (slot >= 0 && a.endpoint < 32)
			W.attached[slot] |= 1U << a.endpoint;
	}
}

static void op_queue_create(void)
{
	struct icfab_queue_create q = { .endpoint = pick_endpoint() };
	int fd = pick_fd(), i;

	if (fd < 0)
		return;
	q.depth = chance(80) ? 1 + below(64) : (uint32_t)rnd();
	if (chance(15))
		q.flags = chance(80) ? ICFAB_QUEUE_F_RECV : (uint32_t)rnd();
	if (chance(3))
		q.reserved[below(2)] = 1;
	if (xioctl(fd, ICFAB_IOC_QUEUE_CREATE, &q, "QUEUE_CREATE", false))
		return;
	i = below(NR_QUEUES);
	W.queues[i].fd = fd;
	W.queues[i].id = q.queue;
	W.queues[i].ep = q.endpoint;
	W.queues[i].recv = q.flags & ICFAB_QUEUE_F_RECV;
}

static void op_queue_destroy(void)
{
	int i = below(NR_QUEUES), fd = W.queues[i].fd;
	struct icfab_queue_destroy d = { .queue = W.queues[i].id };

	if (fd < 0) {
		fd = pick_fd();
		d.queue = below(16);
	}
	if (fd < 0)
		return;
	if (chance(3))
		d.flags = 1;
	if (!xioctl(fd, ICFAB_IOC_QUEUE_DESTROY, &d, "QUEUE_DESTROY", false))
		W.queues[i].fd = -1;
}

/* A descriptor as a program would write one, with now and then a flaw. */
static void make_desc(struct icfab_desc *d, int *fdp)
{
	int qi = below(NR_QUEUES), i;
	struct region *r;

	/* mostly a queue that exists */
	for (i = 0; i < NR_QUEUES && chance(90); i++)
		if (W.queues[(qi + i) % NR_QUEUES].fd >= 0) {
			qi = (qi + i) % NR_QUEUES;
			break;
		}

	memset(d, 0, sizeof(*d));
	if (W.queues[qi].fd >= 0) {
		*fdp = W.queues[qi].fd;
		d->queue = W.queues[qi].id;
	} else {
		*fdp = pick_fd();
		d->queue = below(16);
	}
	d->user_tag = rnd();
	if (W.queues[qi].fd >= 0 && !W.queues[qi].recv && chance(50)) {
		/* a clean one: timing-only WRITE or READ, or a DELAY */
		if (chance(20))
			d->op = ICFAB_OP_DELAY;
		else
			d->op = chance(70) ? ICFAB_OP_WRITE : ICFAB_OP_READ;
		if (d->op == ICFAB_OP_DELAY) {
			d->len = below(100000);
			return;
		}
		d->flags = ICFAB_DESC_F_TIMING_ONLY;
		d->peer = below(nr_endpoints);
		d->len = 1 + below(64 * 1024);
		return;
	}
	switch (below(10)) {
	case 0: case 1: case 2: case 3:
		d->op = ICFAB_OP_WRITE;
		break;
	case 4: case 5:
		d->op = ICFAB_OP_READ;
		break;
	case 6: case 7:
		d->op = ICFAB_OP_DELAY;
		break;
	case 8:
		/* TRIGGER: held until NOTIFY WRITEs land, or the end */
		d->op = chance(50) ? ICFAB_OP_FENCE : ICFAB_OP_TRIGGER;
		break;
	default:
		d->op = below(8);
	}
	d->user_tag = rnd();
	if (d->op == ICFAB_OP_DELAY) {
		d->len = chance(90) ? below(1000000) : rnd();
	} else if (d->op == ICFAB_OP_TRIGGER) {
		d->imm = below(ICFAB_TRIGGER_COUNTERS + 2);
		d->len = below(4);
	} else if (d->op == ICFAB_OP_WRITE || d->op == ICFAB_OP_READ) {
		d->len = pick_len();
		if (chance(60)) {
			d->flags = ICFAB_DESC_F_TIMING_ONLY;
			d->peer = pick_endpoint();
		} else {
			r = pick_region();
			d->region = r ? r->handle : below(8);
			d->local_off = chance(80) ? 0 : pick_len();
			d->rkey = pick_key();
			d->remote_off = chance(80) ? 0 : pick_len();
			if (r && chance(70) && d->len > r->size)
				d->len = 1 + below(r->size);
		}
		if (d->op == ICFAB_OP_WRITE && chance(10)) {
			d->flags |= ICFAB_DESC_F_NOTIFY;
			/* counted by TRIGGERs below ICFAB_TRIGGER_COUNTERS */
			d->imm = chance(50) ? below(8) : rnd();
		}
		if (chance(5))
			d->circuit = chance(50) ?
				atomic_load(&sh->circuits[below(8)]) : rnd();
	}
	/* flaws */
	if (chance(3))
		d->pad = 1;
	if (chance(3))
		d->flags |= 1U << below(16);
	if (chance(2))
		d->imm = rnd();
}

static void op_submit(void)
{
	struct icfab_desc d[MAX_DESCS];
	struct icfab_submit s = { 0 };
	uint32_t n = chance(70) ? 1 : 1 + below(MAX_DESCS), i;
	int fd = -1, fd2;
	bool bad = false;

	for (i = 0; i < n; i++) {
		make_desc(&d[i], i ? &fd2 : &fd);
		/* one batch goes to one file: later ones use its queues */
	}
	if (fd < 0)
		return;
	s.descs = (uintptr_t)d;
	s.nr = n;
	if (chance(2)) {
		s.descs = chance(50) ? 0 : (uintptr_t)16;
		bad = true;
	}
	if (chance(2))
		s.flags = 1;
	if (chance(1))
		s.nr = 0;
	xioctl(fd, ICFAB_IOC_SUBMIT, &s, "SUBMIT", bad);
}

static void op_wait(void)
{
	struct icfab_cqe c[16];
	struct icfab_wait w = { 0 };
	int fd = pick_fd();
	bool bad = false;

	if (fd < 0)
		return;
	w.cqes = (uintptr_t)c;
	w.max = 1 + below(16);
	w.min = chance(40) ? 0 : below(w.max + 1);
	/* Always bounded: other contexts may hold virtual time back. */
	w.timeout_ms = 1 + below(30);
	if (chance(3)) {
		w.min = w.max + 1;
	}
	if (chance(2)) {
		w.cqes = 8;
		bad = true;
	}
	if (chance(2))
		w.reserved[below(2)] = 1;
	xioctl(fd, ICFAB_IOC_WAIT, &w, "WAIT", bad);
}

static void op_region_alloc(void)
{
	struct icfab_region_alloc a = { 0 };
	int fd = pick_fd(), slot;
	struct region *r;
	uint32_t ep;

	if (fd < 0)
		return;
	slot = fd_slot(fd);
	/* mostly an attached endpoint */
	ep = pick_endpoint();
	if (slot >= 0 && W.attached[slot] && chance(80))
		while (!(W.attached[slot] & (1U << (ep % 32))))
			ep = below(nr_endpoints);
	a.endpoint = ep;
	a.size = chance(90) ? 1 + below(64 * 1024) : pick_len();
	if (chance(3))
		a.flags = 1;
	if (chance(2))
		a.reserved[below(4)] = 1;
	if (xioctl(fd, ICFAB_IOC_REGION_ALLOC, &a, "REGION_ALLOC", false))
		return;
	r = &W.regions[below(NR_REGIONS)];
	r->fd = fd;
	r->handle = a.region;
	r->endpoint = a.endpoint;
	r->size = a.size;
	r->mmap_offset = a.mmap_offset;
	r->key = 0;
}

static void op_region_free(void)
{
	struct region *r = pick_region();
	struct icfab_region_free f = { 0 };
	int fd = r ? r->fd : pick_fd();

	if (fd < 0)
		return;
	f.region = r ? r->handle : below(64);
	if (chance(3))
		f.flags = 1;
	if (!xioctl(fd, ICFAB_IOC_REGION_FREE, &f, "REGION_FREE", false) && r)
		r->fd = -1;
}

static void op_region_export(void)
{
	struct region *r = pick_region();
	struct icfab_region_export x = { 0 };
	int fd = r ? r->fd : pick_fd();

	if (fd < 0)
		return;
	x.region = r ? r->handle : below(64);
	x.access = chance(90) ? 1 + below(3) : (uint32_t)rnd();
	if (chance(3))
		x.reserved[below(2)] = 1;
	if (!xioctl(fd, ICFAB_IOC_REGION_EXPORT, &x, "REGION_EXPORT", false)) {
		if (r)
			r->key = x.key;
		atomic_store(&sh->keys[below(NR_KEYS)], x.key);
	}
}

static void op_region_import(void)
{
	struct icfab_region_import im = { .key = pick_key() };
	int fd = pick_fd();

	if (fd < 0)
		return;
	if (chance(3))
		im.flags = 1;
	if (chance(3))
		im.size = 1;
	xioctl(fd, ICFAB_IOC_REGION_IMPORT, &im, "REGION_IMPORT", false);
}

static void op_circuit_recv(void)
{
	struct icfab_circuit_recv cr = { 0 };
	struct region *r = pick_region();
	int fd = r && chance(70) ? r->fd : pick_fd();

	if (fd < 0)
		return;
	cr.circuit = chance(70) ? atomic_load(&sh->circuits[below(8)]) :
		     below(16);
	cr.endpoint = r && chance(70) ? r->endpoint : pick_endpoint();
	cr.region = r && chance(80) ? r->handle : below(4);
	cr.offset = chance(80) ? below(8192) : pick_len();
	if (chance(3))
		cr.flags = 1;
	xioctl(fd, ICFAB_IOC_CIRCUIT_RECV, &cr, "CIRCUIT_RECV", false);
}

static void op_mmap(void)
{
	struct region *r = pick_region();
	struct map *m = &W.maps[below(NR_MAPS)];
	uint64_t off, len;
	void *p;
	int fd = r ? r->fd : pick_fd();

	if (fd < 0)
		return;
	if (m->addr) {
		/* munmap it, or part of it */
		size_t cut = m->len > 4096 && chance(30) ? 4096 : m->len;

		record("munmap", munmap(m->addr, cut) ? errno : 0, false);
		if (cut == m->len) {
			m->addr = NULL;
		} else {
			m->addr = (char *)m->addr + cut;
			m->len -= cut;
		}
		return;
	}
	off = r ? r->mmap_offset : (uint64_t)below(1024) << 12;
	len = r ? r->size : 4096;
	if (r && chance(20) && len > 4096) {
		off += 4096;
		len -= 4096;
	}
	if (chance(5))
		len += 4096;		/* past the end: -ENXIO */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 chance(95) ? MAP_SHARED : MAP_PRIVATE, fd, off);
	record("mmap", p == MAP_FAILED ? errno : 0, false);
	if (p == MAP_FAILED)
		return;
	m->addr = p;
	m->len = len;
	/* touch every page: written here, read by transfers */
	for (off = 0; off < len; off += 4096)
		((volatile char *)p)[off] = (char)rnd();
}

static void op_touch(void)
{
	struct map *m = &W.maps[below(NR_MAPS)];

	if (m->addr)
		((volatile char *)m->addr)[below(m->len)] ^= 1;
}

static void ring_flush(void)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	int ret;

	if (W.ring_pending) {
		ret = io_uring_submit(&W.ring);
		record("io_uring_submit", ret < 0 ? -ret : 0, false);
		W.ring_pending = 0;
	}
	io_uring_for_each_cqe(&W.ring, head, cqe) {
		/* cqe->res is the command's status: any documented errno */
		record("uring cqe", cqe->res < 0 ? -cqe->res : 0, false);
		n++;
	}
	io_uring_cq_advance(&W.ring, n);
}

static void op_uring(void)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 1000000 * (1 + below(20)) };
	struct icfab_desc d;
	int fd, ret;

	if (!W.ring_ok)
		return;
	switch (below(4)) {
	case 0: case 1:
		make_desc(&d, &fd);
		if (fd < 0)
			return;
		if (!usubmit(&W.ring, fd, d,
			     chance(50) ? &W.recs[below(NR_RECS)] : NULL, rnd()))
			W.ring_pending++;
		break;
	case 2:
		fd = pick_fd();
		if (fd < 0)
			return;
		if (!uwait(&W.ring, fd, chance(90) ? 1 + below(4) : 0, rnd()))
			W.ring_pending++;
		break;
	default:
		ring_flush();
		ret = io_uring_wait_cqe_timeout(&W.ring, &cqe, &ts);
		if (!ret)
			ring_flush();
		break;
	}
	if (W.ring_pending > 8 || chance(20))
		ring_flush();
}

static int circuit_cb(const struct genl_reply *r, void *arg);

static void op_genl(void)
{
	struct genl_msg m;
	uint32_t link;
	int ret = 0;
	uint8_t c;

	if (!W.gs_ok)
		return;
	switch (below(12)) {
	case 0:
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_FABRIC_GET, 0);
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	case 1:
		c = (uint8_t[]){ ICFAB_CMD_NODE_GET, ICFAB_CMD_LINK_GET,
				 ICFAB_CMD_ROUTE_GET, ICFAB_CMD_CIRCUIT_GET,
				 ICFAB_CMD_COLOR_GET, ICFAB_CMD_STATS_GET }[below(6)];
		genl_msg_init(&m, W.gs.family, c, NLM_F_DUMP);
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	case 2:
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_STATS_RESET, 0);
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	case 3: case 4:
		/* a link changes state; committed or not */
		link = below(2 * nr_endpoints + 2);
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_LINK_SET, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, link);
		genl_put_u32(&m, ICFAB_A_LINK_STATE, below(4));
		if (chance(50))
			genl_put_u32(&m, ICFAB_A_LINK_BW_PERMILLE, below(1100));
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	case 5:
		ret = cmd(&W.gs, chance(60) ? ICFAB_CMD_FABRIC_COMMIT :
					      ICFAB_CMD_FABRIC_ABORT);
		break;
	case 6: {
		/* a unicast or multicast circuit between ring neighbours */
		uint32_t src = below(nr_endpoints), dsts[2];

		dsts[0] = (src + 1) % nr_endpoints;
		dsts[1] = (src + nr_endpoints - 1) % nr_endpoints;
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_CIRCUIT_NEW, 0);
		genl_put_u32(&m, ICFAB_A_CIRCUIT_COLOR, below(4));
		genl_put_u32(&m, ICFAB_A_CIRCUIT_SRC, src);
		genl_put(&m, ICFAB_A_CIRCUIT_DSTS, dsts,
			 sizeof(uint32_t) * (1 + below(2)));
		if (chance(50))
			genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_PID, getpid());
		ret = genl_request(&W.gs, &m, circuit_cb, NULL);
		break;
	}
	case 7: {
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_CIRCUIT_DEL, 0);
		genl_put_u32(&m, ICFAB_A_CIRCUIT_ID,
			     chance(70) ? atomic_load(&sh->circuits[below(8)]) :
			     below(8));
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	}
	case 8:
		/* an attribute of the wrong size, or an unknown command */
		genl_msg_init(&m, W.gs.family, chance(50) ?
			      ICFAB_CMD_LINK_GET : 200 + below(50), 0);
		genl_put(&m, ICFAB_A_LINK_ID, "x", 1);
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	default:
		genl_msg_init(&m, W.gs.family, ICFAB_CMD_LINK_GET, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, below(2 * nr_endpoints + 2));
		ret = genl_request(&W.gs, &m, NULL, NULL);
		break;
	}
	record("genl", ret < 0 ? -ret : 0, false);
}

static int circuit_cb(const struct genl_reply *r, void *arg)
{
	(void)arg;
	if (r->tb[ICFAB_A_CIRCUIT_ID])
		atomic_store(&sh->circuits[below(8)],
			     genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]));
	return 0;
}

static void op_circuit_list(void)
{
	struct genl_msg m;

	if (!W.gs_ok)
		return;
	genl_msg_init(&m, W.gs.family, ICFAB_CMD_CIRCUIT_GET, NLM_F_DUMP);
	record("genl circuits",
	       -genl_request(&W.gs, &m, circuit_cb, NULL), false);
}

static void worker_ops(unsigned long max_ops);

/* A child that shares this worker's files for a while, then exits. */
static void op_fork(void)
{
	int i = below(4);
	pid_t pid;

	if (W.children[i] > 0) {
		if (waitpid(W.children[i], NULL, WNOHANG) > 0)
			W.children[i] = 0;
		return;
	}
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		rnd();
		/* the ring and the netlink socket are the parent's */
		W.ring_ok = false;
		W.gs_ok = false;
		memset(W.children, 0, sizeof(W.children));
		worker_ops(1 + below(50));
		_exit(0);
	}
	W.children[i] = pid;
}

static void worker_ops(unsigned long max_ops)
{
	unsigned long n;

	for (n = 0; n < max_ops && !atomic_load(&sh->stop); n++) {
		switch (below(100)) {
		case 0 ... 2:	op_open(); break;
		case 3:		op_close(); break;
		case 4:		op_wait(); break;
		case 5 ... 7:	op_info(); break;
		case 8 ... 12:	op_attach(); break;
		case 13 ... 18:	op_queue_create(); break;
		case 19 ... 21:	op_queue_destroy(); break;
		case 22 ... 41:	op_submit(); break;
		case 42 ... 50:	op_wait(); break;
		case 51 ... 55:	op_region_alloc(); break;
		case 56 ... 58:	op_region_free(); break;
		case 59 ... 61:	op_region_export(); break;
		case 62 ... 63:	op_region_import(); break;
		case 64 ... 65:	op_circuit_recv(); break;
		case 66 ... 70:	op_mmap(); break;
		case 71 ... 72:	op_touch(); break;
		case 73 ... 84:	op_uring(); break;
		case 85 ... 92:	op_genl(); break;
		case 93:	op_circuit_list(); break;
		case 94:	op_fork(); break;
		case 95:
			/* leave at once, with everything open and in flight */
			if (chance(10)) {
				if (W.ring_ok)
					ring_flush();
				if (chance(50))
					raise(SIGKILL);
				_exit(0);
			}
			break;
		default:
			op_submit();
			break;
		}
	}
}

static void worker_main(uint64_t seed)
{
	int i;

	seed_rng(seed);
	memset(&W, 0, sizeof(W));
	for (i = 0; i < NR_FDS; i++)
		W.fds[i] = -1;
	for (i = 0; i < NR_QUEUES; i++)
		W.queues[i].fd = -1;
	for (i = 0; i < NR_REGIONS; i++)
		W.regions[i].fd = -1;
	W.fds[0] = open(DEV, O_RDWR | O_CLOEXEC);
	W.ring_ok = !io_uring_queue_init(32, &W.ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32);
	W.gs_ok = !genl_open(&W.gs) && !genl_resolve(&W.gs, ICFAB_GENL_NAME);
	worker_ops(~0UL);
	_exit(0);
}

/* ---- the parent ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static pid_t spawn(uint64_t seed)
{
	pid_t pid = fork();

	if (!pid)
		worker_main(seed);
	return pid;
}

static int setup_fabric(struct genl_sock *gs)
{
	int err;

	err = clear_fabric(gs);
	if (!err)
		err = stage_ring(gs, nr_endpoints);
	if (!err)
		err = cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
	return err;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-s SEED] [-n OPS] [-t SECONDS] [-j WORKERS] [-k KILL_MS] [-v]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, spawned = 0;
	unsigned long max_ops = 0, kills = 0;
	double secs = 60, start, next_kill, kill_ms = 2000;
	unsigned int workers = 3, i;
	pid_t pids[MAX_WORKERS];
	struct icfab_info info;
	struct genl_sock gs;
	bool seeded = false, fail = false;
	int opt, fd, status, err;

	while ((opt = getopt(argc, argv, "s:n:t:j:k:v")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); seeded = true; break;
		case 'n': max_ops = strtoul(optarg, NULL, 0); break;
		case 't': secs = atof(optarg); break;
		case 'j': workers = atoi(optarg); break;
		case 'k': kill_ms = atof(optarg); break;
		case 'v': verbose = 1; break;
		default: usage(argv[0]);
		}
	}
	if (!workers || workers > MAX_WORKERS || optind != argc)
		usage(argv[0]);
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ ts.tv_nsec ^
		       (uint64_t)getpid() << 32;
	}
	seed_rng(seed);
	nr_endpoints = 4 + below(5);
	printf("# syscall_fuzz: seed %" PRIu64 " (repeat: -s %" PRIu64
	       "), %u workers, ring of %u endpoints, ", seed, seed, workers,
	       nr_endpoints);
	if (max_ops)
		printf("%lu ops", max_ops);
	else
		printf("no op bound");
	if (secs > 0)
		printf(", at most %.0f s\n", secs);
	else
		printf(", no time bound\n");
	printf("1..2\n");
	fflush(stdout);

	/* Workers' forked children come back to us when a worker dies. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(sh, 0, sizeof(*sh));
	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME)) {
		printf("not ok 1 - the icfab netlink family is there\n");
		return 1;
	}
	err = setup_fabric(&gs);
	if (err) {
		printf("not ok 1 - a ring of %u endpoints commits: %s\n",
		       nr_endpoints, strerror(-err));
		return 1;
	}

	start = now_s();
	next_kill = start + (kill_ms > 0 ? kill_ms * (0.5 + below(100) / 100.0) / 1000 : 1e18);
	for (i = 0; i < workers; i++)
		pids[i] = spawn(seed + 1 + spawned++);
	for (;;) {
		double t = now_s();
		unsigned long ops = atomic_load(&sh->ops);

		if ((max_ops && ops >= max_ops) || (secs > 0 && t - start >= secs))
			break;
		if (t >= next_kill) {
			i = below(workers);
			kill(pids[i], SIGKILL);
			kills++;
			next_kill = t + kill_ms * (0.5 + below(100) / 100.0) / 1000;
		}
		/* reap and replace workers that ended */
		for (i = 0; i < workers; i++) {
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				if (WIFEXITED(status) && WEXITSTATUS(status))
					fail = true;
				pids[i] = spawn(seed + 1 + spawned++);
			}
		}
		if (verbose && (unsigned long)(t - start) % 10 == 0)
			fprintf(stderr, "# %.0f s: %lu ops\n", t - start, ops);
		usleep(20000);
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < workers; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	/* forked children of workers, reparented to us: they stop too */
	while (waitpid(-1, NULL, 0) > 0)
		;

	printf("# %lu ops in %.1f s (%.0f ops/s): %lu succeeded, %lu refused, "
	       "%lu workers started, %lu killed by the parent\n",
	       atomic_load(&sh->ops), now_s() - start,
	       atomic_load(&sh->ops) / (now_s() - start),
	       atomic_load(&sh->ok_calls), atomic_load(&sh->failed_calls),
	       (unsigned long)spawned, kills);
	for (i = 0; i < 32 && sh->calls[i].what; i++) {
		int e;

		printf("#   %-16s %8lu ok %8lu refused:", sh->calls[i].what,
		       atomic_load(&sh->calls[i].ok),
		       atomic_load(&sh->calls[i].refused));
		for (e = 1; e < 134; e++)
			if (atomic_load(&sh->calls[i].by_errno[e]))
				printf(" %s %lu", strerrorname_np(e) ?: "?",
				       atomic_load(&sh->calls[i].by_errno[e]));
		printf("\n");
	}
	if (atomic_load(&sh->errors) || fail) {
		for (i = 0; i < 16 && sh->bad[i].what[0]; i++)
			printf("# undocumented: %s: %s (%d): %lu times\n",
			       sh->bad[i].what, strerror(sh->bad[i].err),
			       sh->bad[i].err, atomic_load(&sh->bad[i].count));
		printf("not ok 1 - every answer is a documented one (seed %" PRIu64
		       "): %lu undocumented%s\n", seed, atomic_load(&sh->errors),
		       fail ? ", and a worker failed" : "");
		fail = true;
	} else {
		printf("ok 1 - every answer is a documented one (seed %" PRIu64 ")\n",
		       seed);
	}

	/*
	 * The device still works once every process is gone: INFO answers
	 * and the fabric can be torn down (no context left attached).
	 */
	memset(&info, 0, sizeof(info));
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	err = fd < 0 ? -errno : ioctl(fd, ICFAB_IOC_INFO, &info) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (!err) {
		/* contexts of killed processes go as their files close */
		for (i = 0; i < 100 && (err = clear_fabric(&gs)) == -EBUSY; i++)
			usleep(100000);
	}
	if (err) {
		printf("not ok 2 - the device answers and the fabric clears after: %s\n",
		       strerror(-err));
		fail = true;
	} else {
		printf("ok 2 - the device answers and the fabric clears after\n");
	}
	genl_close(&gs);
	return fail ? 1 : 0;
}
