// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Communicators: ranks, their endpoints, workspaces and keys.
 *
 * Local: one process drives every rank from one context (one clock), so a
 * step boundary is one WAIT for everything the step posted.
 *
 * Independent processes: a per-job file in /dev/shm (FDEV_RUNDIR
 * overrides), "fdev-<uid>-<job>", holds one slot per rank (pid, endpoint,
 * workspace key, barrier sequence and value). It starts zero-filled, so
 * whoever comes first needs no initialisation; a barrier bumps the
 * rank's sequence and sleeps on a futex until every live rank has; a rank
 * whose pid is gone is excluded and the barrier returns -EPIPE once. The
 * rank that makes every rank have mapped it removes the name at once
 * (the mappings stay), or, if the job never forms, the first rank to
 * leave: a killed rank leaves nothing behind.
 *
 * Independent processes with device memory in virtual time: a context
 * that waits in a host barrier holds the engine back, so a rank that
 * waits there for a peer which still needs the engine deadlocks. With
 * receive completions (ICFAB_F_RECV_NOTIFY), unless FDEV_PROXY=1, each
 * rank drives its own context: within an operation it meets the others
 * only through the fabric, with NOTIFY WRITEs and exact-count WAITs
 * (coll.c), and between operations it is idle (fdev_notify_idle()), so
 * whatever the process waits for on the host holds nobody back.
 * Otherwise a proxy: rank 0 attaches every rank's endpoint in one
 * context, allocates every workspace, and passes its device file
 * (SCM_RIGHTS, abstract socket "fdev-<uid>-<job>") so each process maps
 * its own workspace. A collective stages in, meets, rank 0 runs the
 * whole schedule (as one process driving every rank: deterministic),
 * meets again, and each copies out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "cost.h"
#include "internal.h"
#include "rings.h"


struct shm_slot {
	_Atomic uint64_t seq;
	uint64_t val[2];		/* barrier value, by seq parity */
	uint64_t key;
	uint32_t ep;
	_Atomic int32_t pid;
	uint64_t mmap_off, size;	/* proxy: the rank's workspace */
	uint64_t pad;
	struct fdev_zc_area zc;		/* notify: the running collective's */
	/*
	 * Notify: whether the rank's context holds the engine (in an
	 * operation), and its clock when it last went idle; read by the
	 * sub-communicators of this one (fdev_comm_init_sub()).
	 */
	_Atomic uint64_t idle_ps;
	_Atomic uint32_t busy;
	uint32_t pad2;
};

struct shm_hdr {
	_Atomic uint64_t magic;
	_Atomic uint32_t nranks;
	_Atomic uint32_t bump;		/* futex word */
	_Atomic uint32_t opened;	/* ranks that mapped it, each once */
	_Atomic int32_t px_err;		/* proxy: rank 0's result of a run */
	_Atomic uint32_t unlinked;	/* its name is gone (or going) */
	/*
	 * Futex word: a rank went idle (publish_idle()), for sub_floor().
	 * Not bump, which every rank in a barrier sleeps on: each rank of
	 * a large job going idle woke all of those, and each of them read
	 * every slot again.
	 */
	_Atomic uint32_t idle_bump;
	/* mono_ms() of the job's last look for dead ranks (dead_look_turn()) */
	_Atomic uint64_t dead_look_ms;
	_Atomic uint64_t failed[FDEV_FAILED_WORDS];
	_Atomic uint64_t mapped[FDEV_FAILED_WORDS];	/* by rank */
	/* By rank: it destroyed its communicator, it comes to no barrier. */
	_Atomic uint64_t left[FDEV_FAILED_WORDS];
	/*
	 * What fdev_endpoints() gave the first rank here (its count, the
	 * first 1024 ids), for the ranks that come later (0: not yet).
	 */
	_Atomic uint32_t eps_n;
	uint32_t eps_pad;
	uint32_t eps[1024];
	/*
	 * The fabric's routes as routes.c shares them (fdev_job_fabric()):
	 * FABRIC_NONE until a rank claims the reading, then FABRIC_READING
	 * by rank fab_reader, then FABRIC_READY with fab_len bytes in the
	 * fabric area, or FABRIC_OWN (every rank reads its own). Futex word.
	 */
	_Atomic uint32_t fab_state;
	_Atomic uint32_t fab_reader;
	_Atomic uint64_t fab_len;
	struct shm_slot slot[];
};

enum { FABRIC_NONE, FABRIC_READING, FABRIC_READY, FABRIC_OWN };

struct fdev_shm {
	struct shm_hdr *h;
	size_t len;
	char name[256];
	uint64_t seq;
	int rank;
	/* Timing only: the host exchange area after the slots (xrow_of()). */
	uint8_t *xarea;
	size_t xrow;
	uint64_t xseq;			/* exchanges so far, the same everywhere */
	/* The fabric area after it (fdev_job_fabric()), bytes; sparse. */
	uint8_t *fab;
	size_t fab_cap;
};

/*
 * Timing only, no bytes move, yet a rank must learn what the others'
 * ranks would have sent it (the MoE counts): each rank's row of an
 * exchange goes through the job's file, two areas by parity, @xrow
 * bytes per rank each. Sparse: only the rows written take memory.
 */
static size_t xrow_of(unsigned int nranks)
{
	size_t r = (size_t)nranks * 32;

	return r > 65536 ? r : 65536;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t v,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, v, ts, NULL, 0);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int env_int(const char *const *names, int *out)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		char *end;
		long x;

		if (!v || !*v)
			continue;
		x = strtol(v, &end, 10);
		if (*end || x < 0 || x > 1 << 20)
			return -EINVAL;
		*out = (int)x;
		return 0;
	}
	return -ENOENT;
}

static const char *const rank_vars[] = {
	"FDEV_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
	"SLURM_PROCID", NULL,
};
static const char *const size_vars[] = {
	"FDEV_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL,
};

static const char *job_name(char *buf, size_t len)
{
	static const char *const vars[] = {
		"FDEV_JOB", "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid",
		"PMIX_NAMESPACE", "PMI_JOBID", "SLURM_JOB_ID", NULL,
	};

	for (const char *const *v = vars; *v; v++) {
		const char *s = getenv(*v);

		if (s && *s) {
			snprintf(buf, len, "%s", s);
			return buf;
		}
	}
	return NULL;
}

/* Remove the job's name once, while it is still this job's file. */
static void shm_unlink_once(struct fdev_shm *s)
{
	uint32_t zero = 0;

	if (atomic_compare_exchange_strong(&s->h->unlinked, &zero, 1))
		unlink(s->name);
}

static void shm_name(char *buf, size_t len, const char *job)
{
	const char *dir = getenv("FDEV_RUNDIR");

	snprintf(buf, len, "%s/fdev-%u-%s", dir && *dir ? dir : "/dev/shm",
		 (unsigned int)getuid(), job);
}

/*
 * The endpoints an earlier rank of job @job of @nranks found, into @eps
 * [1024], and their count; 0 if none yet. Finding them takes an ATTACH
 * per node id of the fabric (fdev_endpoints()): on ualink-pod over a
 * thousand ioctls in each of 1024 processes.
 */
static int shm_peek_endpoints(const char *job, unsigned int nranks,
			      uint32_t *eps)
{
	char name[256];
	struct shm_hdr *h;
	struct stat st;
	uint32_t n = 0;
	int fd;

	if (strchr(job, '/'))
		return 0;
	shm_name(name, sizeof(name), job);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*h)) {
		close(fd);
		return 0;
	}
	h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return 0;
	if (atomic_load(&h->nranks) == nranks) {
		n = atomic_load(&h->eps_n);
		memcpy(eps, h->eps, (n < 1024 ? n : 1024) * sizeof(*eps));
	}
	munmap(h, sizeof(*h));
	return n > INT32_MAX ? 0 : (int)n;
}

/* For the ranks that come later: what this one found. */
static void shm_publish_endpoints(struct fdev_shm *s, const uint32_t *eps,
				  int n)
{
	if (n <= 0 || atomic_load(&s->h->eps_n))
		return;
	memcpy(s->h->eps, eps, (n < 1024 ? n : 1024) * sizeof(*eps));
	atomic_store(&s->h->eps_n, (uint32_t)n);
}

static int shm_open_job(struct fdev_comm *c, const char *job, int rank)
{
	struct fdev_shm *s;
	uint32_t zero = 0;
	int fd;

	for (const char *p = job; *p; p++)
		if (*p == '/')
			return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	shm_name(s->name, sizeof(s->name), job);
	s->len = sizeof(struct shm_hdr) + c->nranks * sizeof(struct shm_slot);
	s->len = (s->len + 4095) & ~(size_t)4095;
	if (c->flags & FDEV_COMM_TIMING_ONLY) {
		s->xrow = xrow_of(c->nranks);
		s->len += 2 * (size_t)c->nranks * s->xrow;
	}
	s->fab_cap = fdev_fabric_share_bytes(c->nranks);
	s->len += s->fab_cap;
	s->rank = rank;
	fd = open(s->name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)s->len)) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		free(s);
		return err;
	}
	s->h = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->h == MAP_FAILED) {
		int err = -errno;

		free(s);
		return err;
	}
	if (!atomic_compare_exchange_strong(&s->h->nranks, &zero, c->nranks) &&
	    zero != c->nranks) {
		fprintf(stderr, "libfabricdev: job %s has %u ranks, not %u\n",
			job, zero, c->nranks);
		munmap(s->h, s->len);
		free(s);
		return -EINVAL;
	}
	{
		int32_t old = atomic_load(&s->h->slot[rank].pid);

		if (old && old != getpid() && !kill(old, 0)) {
			fprintf(stderr, "libfabricdev: job %s: rank %d is taken by pid %d\n",
				job, rank, old);
			munmap(s->h, s->len);
			free(s);
			return -EADDRINUSE;
		}
	}
	/* A restarted rank has not left. */
	atomic_fetch_and(&s->h->left[rank / 64], ~(1ULL << (rank % 64)));
	if (s->xrow)
		s->xarea = (uint8_t *)s->h + s->len - s->fab_cap -
			   2 * (size_t)c->nranks * s->xrow;
	if (s->fab_cap)
		s->fab = (uint8_t *)s->h + s->len - s->fab_cap;
	c->shm = s;
	/*
	 * The last rank to map it removes the name: everyone who will ever
	 * use it has it mapped. A rank mapped again (its process restarted)
	 * counts once.
	 */
	if (!(atomic_fetch_or(&s->h->mapped[rank / 64], 1ULL << (rank % 64)) >>
	      (rank % 64) & 1) &&
	    atomic_fetch_add(&s->h->opened, 1) + 1 == c->nranks)
		shm_unlink_once(s);
	return 0;
}

/* Gone, or a zombie nobody reaped yet: either way it will never come. */
static int pid_dead(int32_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int dead = 0;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		dead = p && (p[2] == 'Z' || p[2] == 'X');
	}
	fclose(f);
	return dead;
}

/* The job looks for dead ranks at most once per this many ms. */
#define DEAD_LOOK_MS	800

/*
 * Whether the caller is the one to look for dead ranks now: the first
 * to ask once DEAD_LOOK_MS have passed since the job's last look.
 */
static int dead_look_turn(struct shm_hdr *h)
{
	uint64_t now = mono_ms(), last = atomic_load(&h->dead_look_ms);

	return now - last >= DEAD_LOOK_MS &&
	       atomic_compare_exchange_strong(&h->dead_look_ms, &last, now);
}

/*
 * Every live rank's value, the largest into *@val. A rank posts its
 * sequence and scans the slots once; whoever finds everyone there on
 * that first scan (the last to come always does) wakes the rest, who
 * scan once more. Dead ranks (a kill() and a /proc read per missing
 * live rank) are looked for only by a waiter whose wait timed out after
 * 750 ms of waiting in all (50, 100, 200, 400 ms first, then 800 ms at
 * a time), and only if the job has not looked in the last DEAD_LOOK_MS
 * (dead_look_turn()): at 1024 ranks, a wake per arrival with everyone
 * rescanning, and asking after every missing pid each time, was n^3
 * work per barrier, and a look per waiter every 800 ms was still n^2
 * kill()s and /proc reads per 800 ms of a slow meeting; now it is n. A
 * rank found dead is marked failed for all, and whoever then finds
 * nobody else missing wakes the rest. A rank that left (destroyed its
 * communicator) is seen at once.
 */
static int shm_barrier(struct fdev_comm *c, uint64_t *val)
{
	struct fdev_shm *s = c->shm;
	struct shm_hdr *h = s->h;
	uint64_t seq = ++s->seq, out = 0, deadline;
	const char *t = getenv("FDEV_TIMEOUT_MS");
	int newly_failed = 0, may_wake = 1, look_dead = 0;
	long wait_ms = 50;

	deadline = mono_ms() + (t && *t ? strtoull(t, NULL, 10) : 300000);
	h->slot[s->rank].val[seq & 1] = *val;
	atomic_store(&h->slot[s->rank].seq, seq);
	for (;;) {
		uint32_t b = atomic_load(&h->bump);
		struct timespec ts = { wait_ms / 1000, wait_ms % 1000 * 1000000 };
		unsigned int missing = 0;

		out = 0;
		for (unsigned int r = 0; r < c->nranks; r++) {
			struct shm_slot *sl = &h->slot[r];

			if ((atomic_load(&h->failed[r / 64]) >> (r % 64)) & 1)
				continue;
			if (atomic_load(&sl->seq) < seq) {
				int32_t pid = atomic_load(&sl->pid);

				/*
				 * Gone before or after it joined: excluded.
				 * So is a rank that left (its seq loaded
				 * again: it may have come just before).
				 */
				if ((atomic_load(&h->left[r / 64]) >> (r % 64) & 1 &&
				     atomic_load(&sl->seq) < seq) ||
				    (look_dead && pid && pid_dead(pid))) {
					atomic_fetch_or(&h->failed[r / 64],
							1ULL << (r % 64));
					fprintf(stderr, "libfabricdev: rank %u (pid %d) %s; excluded\n",
						r, pid, pid ? "died" : "left before this barrier");
					newly_failed = 1;
					continue;
				}
				missing++;
				continue;
			}
			if (sl->val[seq & 1] > out)
				out = sl->val[seq & 1];
		}
		if (!missing) {
			if (may_wake) {
				atomic_fetch_add(&h->bump, 1);
				futex(&h->bump, FUTEX_WAKE, INT32_MAX, NULL);
			}
			break;
		}
		if (mono_ms() > deadline)
			return -ETIMEDOUT;
		if (futex(&h->bump, FUTEX_WAIT, b, &ts) && errno == ETIMEDOUT) {
			/* A dead rank is looked for after 750 ms of waiting. */
			may_wake = 1;
			look_dead = wait_ms >= 400 && dead_look_turn(h);
			wait_ms = wait_ms < 800 ? wait_ms * 2 : wait_ms;
		} else {
			may_wake = look_dead = 0;
		}
	}
	for (int w = 0; w < FDEV_FAILED_WORDS; w++) {
		uint64_t f = atomic_load(&h->failed[w]);

		if (f & ~c->failed[w])
			newly_failed = 1;
		c->failed[w] |= f;
	}
	*val = out;
	return newly_failed ? -EPIPE : 0;
}

int fdev_comm_timing_only(const struct fdev_comm *c)
{
	return !!(c->flags & FDEV_COMM_TIMING_ONLY);
}

void fdev_comm_timing_at(const struct fdev_comm *c, struct fdev_desc *d,
			 uint64_t dst_off)
{
	if (c->dev->features & ICFAB_F_TIMING_OFFSETS)
		d->remote_off = dst_off;
}

void *fdev_ws_addr(struct fdev_comm *c, unsigned int l, uint64_t off)
{
	return (uint8_t *)c->ws[l].addr + off;
}

static unsigned int comm_open_flags(const struct fdev_comm *c)
{
	return c->flags & FDEV_COMM_FREE_RUN ? FDEV_OPEN_FREE_RUN : 0;
}

static int comm_alloc(unsigned int nranks, unsigned int nlocal,
		      struct fdev_comm **out)
{
	struct fdev_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->nranks = nranks;
	c->nlocal = nlocal;
	c->node_size = nranks;
	c->ep = calloc(nranks, sizeof(*c->ep));
	c->rkey = calloc(nranks, sizeof(*c->rkey));
	c->queue = calloc(nlocal, sizeof(*c->queue));
	c->ws = calloc(nlocal, sizeof(*c->ws));
	if (!c->ep || !c->rkey || !c->queue || !c->ws) {
		fdev_comm_destroy(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

/* Attach the local ranks, make their queues, learn the clock. */
static int comm_attach(struct fdev_comm *c)
{
	int err;

	for (unsigned int l = 0; l < c->nlocal; l++) {
		uint32_t ep = c->ep[c->first + l];

		err = fdev_attach(c->dev, ep);
		if (err && err != -EEXIST && err != -EBUSY)
			return err;
		err = fdev_queue_create(c->dev, ep, 4096, &c->queue[l]);
		if (err)
			return err;
	}
	{
		struct fdev_info info;

		if (!fdev_query(c->dev, &info))
			c->seg = info.segment_size;
	}
	/* A zero DELAY returns the clock, which attach started. */
	return fdev_compute(c->dev, c->queue[0], 0);
}

static int comm_regions(struct fdev_comm *c)
{
	int err;

	if (c->flags & FDEV_COMM_TIMING_ONLY || !c->ws_bytes)
		return 0;
	for (unsigned int l = 0; l < c->nlocal; l++) {
		err = fdev_region_alloc(c->dev, c->ep[c->first + l], c->ws_bytes,
					&c->ws[l]);
		if (err)
			return err;
		err = fdev_region_export(c->dev, &c->ws[l],
					 FDEV_ACCESS_REMOTE_READ |
					 FDEV_ACCESS_REMOTE_WRITE);
		if (err)
			return err;
		c->rkey[c->first + l] = c->ws[l].key;
	}
	return 0;
}

int fdev_comm_init_local(const char *path, unsigned int nranks,
			 const uint32_t *endpoints, uint64_t ws_bytes,
			 unsigned int flags, struct fdev_comm **out)
{
	struct fdev_comm *c;
	int err;

	if (!out || !nranks || nranks > FDEV_MAX_RANKS ||
	    flags & ~(FDEV_COMM_TIMING_ONLY | FDEV_COMM_FREE_RUN))
		return -EINVAL;
	err = comm_alloc(nranks, nranks, &c);
	if (err)
		return err;
	c->flags = flags;
	c->ws_bytes = ws_bytes;
	if (endpoints) {
		memcpy(c->ep, endpoints, nranks * sizeof(*c->ep));
	} else {
		err = fdev_endpoints(path, c->ep, nranks);
		if (err >= 0 && (unsigned int)err < nranks)
			err = -ENODEV;
		if (err < 0)
			goto err_destroy;
	}
	err = fdev_open(path, comm_open_flags(c), &c->dev);
	if (err)
		goto err_destroy;
	err = comm_attach(c);
	if (!err)
		err = comm_regions(c);
	if (err)
		goto err_destroy;
	*out = c;
	return 0;

err_destroy:
	fdev_comm_destroy(c);
	return err;
}

/*
 * A host communicator: @nranks ranks whose workspaces are plain memory
 * and whose plans run as memcpy. No fabric, no time; for checking a
 * runtime's numerics (and this library's) without the module.
 */
int __fdev_comm_init_host(unsigned int nranks, uint64_t ws_bytes,
			  struct fdev_comm **out)
{
	struct fdev_comm *c;
	int err;

	if (!out || !nranks || nranks > FDEV_MAX_RANKS || !ws_bytes)
		return -EINVAL;
	err = comm_alloc(nranks, nranks, &c);
	if (err)
		return err;
	c->ws_bytes = ws_bytes;
	for (unsigned int l = 0; l < nranks; l++) {
		c->ep[l] = l;
		c->ws[l].size = ws_bytes;
		c->ws[l].addr = calloc(1, ws_bytes);
		if (!c->ws[l].addr) {
			fdev_comm_destroy(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

static void sock_name(struct sockaddr_un *a, socklen_t *len, const char *job)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "fdev-%u-%s",
		     (unsigned int)getuid(), job);
	if (n > (int)sizeof(a->sun_path) - 2)
		n = (int)sizeof(a->sun_path) - 2;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'f';
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -EPROTO;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Rank 0 of a proxy communicator: every rank in one context. */
static int proxy_init_leader(struct fdev_comm *c, const char *path,
			     const char *job, const uint32_t *eps, int *lsock)
{
	struct sockaddr_un a;
	socklen_t len;
	int err, s;

	err = fdev_comm_init_local(path, c->nranks, eps, c->ws_bytes, 0, &c->px);
	if (err)
		return err;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	sock_name(&a, &len, job);
	if (bind(s, (struct sockaddr *)&a, len) || listen(s, (int)c->nranks)) {
		err = -errno;
		close(s);
		return err;
	}
	*lsock = s;
	c->ws[0] = c->px->ws[0];
	for (unsigned int r = 0; r < c->nranks; r++) {
		c->ep[r] = c->px->ep[r];
		c->rkey[r] = c->px->rkey[r];
	}
	return 0;
}

static int proxy_serve(struct fdev_comm *c, int lsock)
{
	uint64_t deadline = mono_ms() + 60000;

	for (unsigned int i = 1; i < c->nranks; i++) {
		struct pollfd pfd = { lsock, POLLIN, 0 };
		int s, err;

		if (poll(&pfd, 1, (int)(deadline - mono_ms())) <= 0)
			return -ETIMEDOUT;
		s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			return -errno;
		err = send_fd(s, fdev_fd(c->px->dev));
		close(s);
		if (err)
			return err;
	}
	return 0;
}

static int proxy_join(struct fdev_comm *c, const char *job)
{
	struct shm_slot *sl = &c->shm->h->slot[c->first];
	struct sockaddr_un a;
	socklen_t len;
	int s, fd;
	void *p;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	sock_name(&a, &len, job);
	if (connect(s, (struct sockaddr *)&a, len)) {
		int err = -errno;

		close(s);
		return err;
	}
	fd = recv_fd(s);
	close(s);
	if (fd < 0)
		return fd;
	c->px_fd = fd;
	p = mmap(NULL, sl->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)sl->mmap_off);
	if (p == MAP_FAILED)
		return -errno;
	c->ws[0].addr = p;
	c->ws[0].size = sl->size;
	for (unsigned int r = 0; r < c->nranks; r++) {
		c->ep[r] = c->shm->h->slot[r].ep;
		c->rkey[r] = c->shm->h->slot[r].key;
	}
	return 0;
}

int fdev_proxy_run(struct fdev_comm *c, const struct fdev_plan *p)
{
	uint64_t v = 0;
	int err, e2;

	/* Everyone staged its inputs. */
	err = shm_barrier(c, &v);
	if (err && err != -EPIPE)
		return err;
	if (c->px) {
		c->px->op_ran = 0;
		e2 = fdev_plan_run(c->px, p);
		atomic_store(&c->shm->h->px_err, e2);
		v = c->px->last_ps;
		if (c->px->op_ran)
			fdev_op_span(c, c->px->op_t0, c->px->op_t1);
	}
	e2 = shm_barrier(c, &v);
	if (!err)
		err = e2;
	c->last_ps = v;
	return err ? err : atomic_load(&c->shm->h->px_err);
}

enum { DATA_PLAIN, DATA_PROXY, DATA_NOTIFY, DATA_IDLE_MEET };

/*
 * Device memory, not free-running, virtual time: a rank must learn when
 * others' WRITEs have landed in its workspace. With receive-side
 * completions in the module, each rank's own context waits for them
 * (DATA_NOTIFY), and its barriers are NOTIFY WRITEs. Without them, or
 * with FDEV_PROXY=1, rank 0's proxy runs everything (DATA_PROXY).
 *
 * Timing only, virtual time: between steps the ranks meet on the host
 * (fdev_shm_barrier()). With receive queues and ICFAB_IOC_WAIT_END the
 * context stays, idle in a receiver's WAIT across the meeting
 * (DATA_IDLE_MEET); otherwise it leaves the fabric and attaches again.
 */
static int data_mode(const char *path, unsigned int flags)
{
	struct icfab_info info = { 0 };
	const char *px = getenv("FDEV_PROXY");
	int fd, virt;

	if (flags & FDEV_COMM_FREE_RUN)
		return DATA_PLAIN;
	if (!path)
		path = getenv("FDEV_DEVICE");
	fd = open(path ? path : "/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return DATA_PLAIN;
	virt = !ioctl(fd, ICFAB_IOC_INFO, &info) &&
	       info.time_mode == ICFAB_TIME_VIRTUAL;
	close(fd);
	if (virt && flags & FDEV_COMM_TIMING_ONLY)
		return (info.features & ICFAB_F_RECV_NOTIFY) &&
		       (info.features & ICFAB_F_WAIT_END) ?
		       DATA_IDLE_MEET : DATA_PLAIN;
	if (!virt || flags & FDEV_COMM_TIMING_ONLY ||
	    !(info.features & ICFAB_F_MEMORY))
		return DATA_PLAIN;
	if ((px && !strcmp(px, "1")) || !(info.features & ICFAB_F_RECV_NOTIFY))
		return DATA_PROXY;
	return DATA_NOTIFY;
}

/*
 * A notify rank between operations. Its process may wait on the host
 * for anything (a c10d store, an MPI barrier, a peer that is still in
 * the last operation): its context must not hold the engine back
 * meanwhile, or a peer that still needs the engine past its clock never
 * gets there. So a thread of its own sits in a receiver's WAIT, which
 * does not hold it, until fdev_notify_resume() ends it with
 * ICFAB_IOC_WAIT_END (the module then moves the clock to the engine's,
 * never past the latest clock of any rank: every transfer has finished
 * by its sender's and its receiver's clock). An older module has no
 * WAIT_END: the WAIT then ends every FDEV_IDLE_POLL_MS and starts again
 * until the thread is told to stop, and resuming waits for that end
 * (every operation waited for it, up to a timer tick or two).
 */
#define FDEV_IDLE_POLL_MS	5

/* The communicator whose context (and idle thread) @c uses. */
static struct fdev_comm *ctx_owner(struct fdev_comm *c)
{
	return c->parent ? c->parent : c;
}

/*
 * Tell the owner's job whether this rank's context holds the engine
 * (@busy), and when idle since which clock; wake whoever waits for it.
 */
static void publish_idle(struct fdev_comm *o, int busy)
{
	struct shm_slot *sl;

	if (!o->shm)
		return;
	sl = &o->shm->h->slot[o->first];
	if (!busy)
		atomic_store(&sl->idle_ps, o->idle_ps);
	atomic_store(&sl->busy, (uint32_t)busy);
	if (!busy) {
		atomic_fetch_add(&o->shm->h->idle_bump, 1);
		futex(&o->shm->h->idle_bump, FUTEX_WAKE, INT32_MAX, NULL);
	}
}

static void *idle_main(void *arg)
{
	struct fdev_comm *c = arg;

	for (;;) {
		int end = __atomic_load_n(&c->idle_end, __ATOMIC_ACQUIRE), err;

		if (!end && __atomic_load_n(&c->idle_stop, __ATOMIC_ACQUIRE))
			break;
		/* Ended by fdev_idle_end(); the bound is only a fallback. */
		err = fdev_idle_wait(c->dev, end ? 1000 : FDEV_IDLE_POLL_MS);
		if (err == -ECANCELED) {
			c->idle_ended = 1;
			break;
		}
		if (err && err != -ETIMEDOUT && err != -EINTR) {
			c->idle_err = err;
			break;
		}
	}
	return NULL;
}

/*
 * The idle thread's stack, the communicator's from its first meeting to
 * fdev_comm_destroy(): a thread is made and joined at every meeting (a
 * timing-only rank of independent processes meets once per step), and
 * glibc hands a stack of its own cache back to the kernel
 * (MADV_DONTNEED) when the thread ends, all but the top, so every
 * meeting faulted the WAIT's 16 KiB of completions in again, each page
 * zeroed, and flushed the TLBs of the process's CPUs. A stack we give
 * (pthread_attr_setstack()) is left as it is. The lowest page is a
 * guard.
 */
#define FDEV_IDLE_STACK		(1UL << 20)

static int idle_attr(struct fdev_comm *o, pthread_attr_t *attr)
{
	long pg = sysconf(_SC_PAGESIZE);
	int err;

	if (!o->idle_stack) {
		void *p = mmap(NULL, FDEV_IDLE_STACK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

		if (p == MAP_FAILED)
			return -errno;
		if (mprotect(p, (size_t)pg, PROT_NONE)) {
			err = -errno;
			munmap(p, FDEV_IDLE_STACK);
			return err;
		}
		o->idle_stack = p;
	}
	err = -pthread_attr_init(attr);
	if (!err)
		err = -pthread_attr_setstack(attr, (char *)o->idle_stack + pg,
					     FDEV_IDLE_STACK - (size_t)pg);
	return err;
}

/* @o's context goes idle: its idle thread sits in a receiver's WAIT. */
static int idle_start(struct fdev_comm *o)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int err;

	o->idle_ps = fdev_clock(o->dev);
	o->idle_stop = 0;
	o->idle_err = 0;
	o->idle_end = !!(o->dev->features & ICFAB_F_WAIT_END);
	o->idle_ended = 0;
	err = idle_attr(o, &attr);
	if (err)
		return err;
	/* Signals are the caller's threads' business, not the idler's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&o->idle_thread, &attr, idle_main, o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (!err) {
		o->idle_on = 1;
		publish_idle(o, 0);
	}
	return err;
}

int fdev_notify_idle(struct fdev_comm *c)
{
	struct fdev_comm *o = ctx_owner(c);

	if (!c->notify || o->idle_on || !o->dev)
		return 0;
	return idle_start(o);
}

static void idle_stop(struct fdev_comm *c)
{
	if (!c->idle_on)
		return;
	__atomic_store_n(&c->idle_stop, 1, __ATOMIC_RELEASE);
	if (c->idle_end && fdev_idle_end(c->dev))
		/* It polls idle_stop again. */
		__atomic_store_n(&c->idle_end, 0, __ATOMIC_RELEASE);
	pthread_join(c->idle_thread, NULL);
	/* A thread that left on an error left the end to our next WAIT. */
	if (c->idle_end && !c->idle_ended)
		fdev_sync_clock(c->dev);
	c->idle_on = 0;
}

/*
 * The end of a meeting of idle ranks (fdev_notify_resume(), idle_meet()):
 * @err is the meeting's result, @v the latest clock it found. The
 * context of @o (which @c uses) holds the engine again: its idle thread
 * stops (ending its WAIT moves the clock to the engine's, never past
 * the latest rank's), the clock moves on to @v, and the ranks meet
 * again, so that nobody submits before every rank holds the engine back
 * at that time. -EPIPE when either meeting found a rank dead (it is
 * excluded; the rest went on), another error as it came.
 */
static int idle_rejoin(struct fdev_comm *c, struct fdev_comm *o, int err,
		       uint64_t v)
{
	uint64_t dummy = 0;
	int err2;

	publish_idle(o, 1);
	idle_stop(o);
	if (err && err != -EPIPE)
		return err;
	if (o->idle_err)
		return o->idle_err;
	err2 = fdev_sync_clock(c->dev);
	if (!err2)
		err2 = fdev_advance_to(c->dev, c->queue[0], v);
	if (!err2) {
		err2 = shm_barrier(c, &dummy);
		if (err2 == -EPIPE)
			err = -EPIPE, err2 = 0;
	}
	return err2 ? err2 : err;
}

/*
 * The start of an operation of a sub-communicator: its ranks' clocks may
 * be behind others of the parent's job, and while they were idle the
 * engine may have run on to those others' clocks (an idle context's
 * clock moves with it), by an amount that depends on the host's
 * scheduling. So wait until no rank of the parent's job holds the
 * engine (every one idle: everything it sent has finished by its idle
 * clock) and start no earlier than the latest idle clock there. Where
 * the program orders its groups' operations (every rank of an earlier
 * one has finished it, or waits for this group), that is a function of
 * the workload. Ops of groups that run at the same time, sharing no
 * rank, may wait for each other here and start at clocks that depend
 * on which went first.
 */
static int sub_floor(struct fdev_comm *c, uint64_t *v)
{
	struct fdev_comm *o = c->parent;
	struct shm_hdr *h = o->shm->h;
	uint64_t deadline = mono_ms() + c->timeout_ms;

	for (;;) {
		uint32_t b = atomic_load(&h->idle_bump);
		struct timespec ts = { 0, 50 * 1000000 };
		uint64_t floor = *v;
		int busy = 0;

		for (unsigned int r = 0; r < o->nranks && !busy; r++) {
			struct shm_slot *sl = &h->slot[r];
			int32_t pid = atomic_load(&sl->pid);

			if (r == o->first || !pid ||
			    (atomic_load(&h->failed[r / 64]) >> (r % 64)) & 1)
				continue;
			if (atomic_load(&sl->busy)) {
				busy = !pid_dead(pid);
				continue;
			}
			if (atomic_load(&sl->idle_ps) > floor)
				floor = atomic_load(&sl->idle_ps);
		}
		if (!busy) {
			*v = floor;
			return 0;
		}
		if (mono_ms() > deadline)
			return -ETIMEDOUT;
		futex(&h->idle_bump, FUTEX_WAIT, b, &ts);
	}
}

/*
 * The start of an operation of every rank of a notify communicator:
 * meet on the host (nobody holds the engine: everyone is idle), stop
 * idling, move the clock to the latest of the clocks the ranks went
 * idle at, and meet again, so that nobody submits before every rank
 * holds the engine back at that time. Every clock move is the
 * workload's: the times repeat to the picosecond however the host
 * schedules the processes. A rank found dead is excluded (-EPIPE from
 * the meeting), as with the proxy.
 */
int fdev_notify_resume(struct fdev_comm *c)
{
	struct fdev_comm *o = ctx_owner(c);
	struct shm_slot *slot;
	uint64_t v;
	int err;

	if (!c->notify || !o->idle_on)
		return 0;
	slot = c->shm->h->slot;
	v = o->idle_ps;
	if (c->parent) {
		err = sub_floor(c, &v);
		if (err)
			return err;
	}
	/*
	 * A collective on callers' buffers (zc.c): where this rank's are
	 * goes out before the meeting, the others' come in after it. None
	 * of them writes its slot again before the second meeting.
	 */
	if (c->zc_lo)
		slot[c->first].zc = c->zc[c->first];
	err = shm_barrier(c, &v);
	if (c->zc_lo)
		for (unsigned int r = 0; r < c->nranks; r++)
			c->zc[r] = slot[r].zc;
	err = idle_rejoin(c, o, err, v);
	return err == -EPIPE ? 0 : err;
}

/*
 * Receive completions a rank can hold: every rank may write to it in a
 * step, a few pieces each (the module's queue depth caps it).
 */
#define NOTIFY_RECV_DEPTH	4096

/*
 * A timing-only rank's receive queue: no WRITE notifies it, its idle
 * thread only waits there.
 */
#define IDLE_MEET_RECV_DEPTH	1

/*
 * The endpoint rank @rank drives: the @rank-th of the fabric's @n
 * endpoints @eps (at most 1024 of them listed), or FDEV_ENDPOINT's
 * node id, which must be a whole number naming one of them.
 */
static int comm_endpoint(int rank, const uint32_t *eps, int n, uint32_t *ep)
{
	const char *e = getenv("FDEV_ENDPOINT");
	unsigned long long v;
	char *end;

	if (!e || !*e) {
		if (rank >= n)
			return -ENODEV;
		*ep = eps[rank];
		return 0;
	}
	errno = 0;
	v = strtoull(e, &end, 0);
	if (errno || *end || *e == '-' || v > UINT32_MAX) {
		fprintf(stderr, "libfabricdev: FDEV_ENDPOINT='%s': not a node id\n", e);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		if (eps[i] == v) {
			*ep = (uint32_t)v;
			return 0;
		}
	if (n >= 1024) {
		/* Only the first 1024 were listed: let attach decide. */
		*ep = (uint32_t)v;
		return 0;
	}
	fprintf(stderr, "libfabricdev: FDEV_ENDPOINT=%s: node %llu is not one of the fabric's %d endpoints\n",
		e, v, n);
	return -ENODEV;
}

/* The rank's context as a receiver: the ioctl path, a receive queue. */
static int notify_open(struct fdev_comm *c, const char *path)
{
	const char *t = getenv("FDEV_TIMEOUT_MS");
	int err;

	c->notify = 1;
	c->timeout_ms = t && *t ? (uint32_t)strtoul(t, NULL, 10) : 300000;
	err = fdev_open(path, comm_open_flags(c) | FDEV_OPEN_NO_URING, &c->dev);
	if (err)
		return err;
	err = comm_attach(c);
	if (!err) {
		err = fdev_recv_queue_create(c->dev, c->ep[c->first],
					     NOTIFY_RECV_DEPTH);
		if (err == -EBUSY)
			fprintf(stderr, "libfabricdev: endpoint %u already has a receiver: another rank or process drives it (FDEV_ENDPOINT)\n",
				c->ep[c->first]);
	}
	return err;
}

static int proxy_init(struct fdev_comm *c, const char *path, const char *job,
		      const uint32_t *eps, int n)
{
	unsigned int rank = c->first;
	int lsock = -1, err;
	uint64_t v = 0;

	if ((unsigned int)n < c->nranks)
		return -ENODEV;
	c->proxy = 1;
	c->px_fd = -1;
	if (!rank) {
		err = proxy_init_leader(c, path, job, eps, &lsock);
		if (err)
			return err;
	}
	err = shm_open_job(c, job, (int)rank);
	if (err)
		goto out;
	if (!rank)
		for (unsigned int r = 0; r < c->nranks; r++) {
			c->shm->h->slot[r].mmap_off = c->px->ws[r].mmap_offset;
			c->shm->h->slot[r].size = c->px->ws[r].size;
			c->shm->h->slot[r].ep = c->px->ep[r];
			c->shm->h->slot[r].key = c->px->rkey[r];
		}
	atomic_store(&c->shm->h->slot[rank].pid, getpid());
	/* The leader's socket and slots are ready. */
	err = shm_barrier(c, &v);
	if (err)
		goto out;
	err = rank ? proxy_join(c, job) : proxy_serve(c, lsock);
	if (err)
		goto out;
	err = shm_barrier(c, &v);
out:
	if (lsock >= 0)
		close(lsock);
	return err;
}

/*
 * After the rendezvous: every rank's endpoint and workspace key, and
 * the smallest workspace of the job (each rank wrote its own in the
 * slot's size, which only a proxy uses otherwise).
 */
static void shm_read_ranks(struct fdev_comm *c)
{
	c->ws_min = c->ws_bytes;
	for (unsigned int r = 0; r < c->nranks; r++) {
		const struct shm_slot *sl = &c->shm->h->slot[r];

		c->ep[r] = sl->ep;
		c->rkey[r] = sl->key;
		if (sl->size < c->ws_min)
			c->ws_min = sl->size;
	}
}

int fdev_comm_init(const char *path, const char *job, int rank, int size,
		   uint64_t ws_bytes, unsigned int flags,
		   struct fdev_comm **out)
{
	char jb[128];
	uint32_t *eps = NULL;
	struct fdev_comm *c;
	uint64_t v = 0;
	int err, n, mode;

	if (!out || flags & ~(FDEV_COMM_TIMING_ONLY | FDEV_COMM_FREE_RUN))
		return -EINVAL;
	if (rank < 0 && env_int(rank_vars, &rank))
		return -EINVAL;
	if (size < 0 && env_int(size_vars, &size))
		return -EINVAL;
	if (size < 1 || size > FDEV_MAX_RANKS || rank >= size)
		return -EINVAL;
	if (!job)
		job = job_name(jb, sizeof(jb));
	if (!job || !*job)
		return -EINVAL;
	err = comm_alloc((unsigned int)size, 1, &c);
	if (err)
		return err;
	c->first = (unsigned int)rank;
	c->multi = 1;
	c->flags = flags;
	c->ws_bytes = ws_bytes;
	snprintf(c->path, sizeof(c->path), "%s", path ? path : "");

	/* Rank r is the r-th endpoint, unless FDEV_ENDPOINT says. */
	eps = calloc((size_t)size > 1024 ? (size_t)size : 1024, sizeof(*eps));
	if (!eps) {
		err = -ENOMEM;
		goto err_destroy;
	}
	n = shm_peek_endpoints(job, (unsigned int)size, eps);
	if (!n)
		n = fdev_endpoints(path, eps, 1024);
	if (n < 0) {
		err = n;
		fprintf(stderr, "libfabricdev: %s: %s%s\n",
			path ? path : getenv("FDEV_DEVICE") ? getenv("FDEV_DEVICE") :
			"/dev/icfab0", strerror(-n),
			n == -ENOENT ? " (is the icfab module loaded?)" : "");
		goto err_destroy;
	}
	if (!n || (n < size && !getenv("FDEV_ENDPOINT"))) {
		err = -ENODEV;
		if (!n)
			fprintf(stderr, "libfabricdev: no committed topology (icfabd --apply)\n");
		else
			fprintf(stderr, "libfabricdev: the fabric has %d endpoints, fewer than the %d ranks\n",
				n, size);
		goto err_destroy;
	}
	mode = data_mode(path, flags);
	if (mode == DATA_PROXY) {
		err = proxy_init(c, path, job, eps, n);
		if (err)
			goto err_destroy;
		free(eps);
		*out = c;
		return 0;
	}
	err = comm_endpoint(rank, eps, n, &c->ep[rank]);
	if (err)
		goto err_destroy;
	/* Attach before the rendezvous: nobody starts before all hold time. */
	if (mode == DATA_NOTIFY) {
		err = notify_open(c, path);
	} else if (mode == DATA_IDLE_MEET) {
		c->idle_meet = 1;
		err = fdev_open(path, comm_open_flags(c) | FDEV_OPEN_NO_URING,
				&c->dev);
		if (!err)
			err = comm_attach(c);
		if (!err)
			err = fdev_recv_queue_create(c->dev, c->ep[c->first],
						     IDLE_MEET_RECV_DEPTH);
		/* Another receiver there (FDEV_ENDPOINT): leave and attach again. */
		if (err == -EBUSY) {
			c->idle_meet = 0;
			err = 0;
		}
	} else {
		err = fdev_open(path, comm_open_flags(c), &c->dev);
		if (!err)
			err = comm_attach(c);
	}
	if (!err)
		err = comm_regions(c);
	if (!err)
		err = shm_open_job(c, job, rank);
	if (err)
		goto err_destroy;
	shm_publish_endpoints(c->shm, eps, n);
	{
		struct shm_slot *sl = &c->shm->h->slot[rank];

		sl->ep = c->ep[rank];
		sl->key = c->rkey[rank];
		sl->size = c->ws_bytes;	/* the proxy's field, unused here */
		atomic_store(&sl->pid, getpid());
	}
	v = fdev_clock(c->dev);
	err = shm_barrier(c, &v);
	if (err)
		goto err_destroy;
	shm_read_ranks(c);
	/*
	 * Nobody needs the engine yet, so the host barrier held no one
	 * back; from here on a notify rank is idle between operations.
	 */
	err = fdev_advance_to(c->dev, c->queue[0], v);
	if (!err)
		err = fdev_notify_idle(c);
	if (err)
		goto err_destroy;
	free(eps);
	*out = c;
	return 0;

err_destroy:
	free(eps);
	fdev_comm_destroy(c);
	return err;
}

/*
 * A communicator of @size ranks of this job, this process's being @rank,
 * on the endpoint @parent gives this process, in @parent's context: one
 * endpoint has one receive queue per fabric, so a second context there
 * could not be notified. It has its own workspace, rendezvous (@job)
 * and barriers; it shares the context's clock, queue and idle thread,
 * so this process runs one operation at a time on either, and it goes
 * before @parent.
 */
int fdev_comm_init_sub(struct fdev_comm *parent, const char *job, int rank,
		       int size, uint64_t ws_bytes, struct fdev_comm **out)
{
	struct fdev_comm *c;
	uint64_t v = 0;
	int err;

	if (!parent || !out || !job || !*job || size < 1 ||
	    size > FDEV_MAX_RANKS || rank < 0 || rank >= size)
		return -EINVAL;
	while (parent->parent)
		parent = parent->parent;
	/* A proxy's context is rank 0's; a timing-only one is reopened. */
	if (!parent->multi || parent->proxy || !parent->dev ||
	    fdev_comm_timing_only(parent))
		return -EOPNOTSUPP;
	err = comm_alloc((unsigned int)size, 1, &c);
	if (err)
		return err;
	c->first = (unsigned int)rank;
	c->multi = 1;
	c->flags = parent->flags;
	c->ws_bytes = ws_bytes;
	c->parent = parent;
	c->dev = parent->dev;
	c->notify = parent->notify;
	c->timeout_ms = parent->timeout_ms;
	c->seg = parent->seg;
	memcpy(c->path, parent->path, sizeof(c->path));
	c->queue[0] = parent->queue[0];
	c->ep[rank] = parent->ep[parent->first];
	err = comm_regions(c);
	if (!err)
		err = shm_open_job(c, job, rank);
	if (err)
		goto err_destroy;
	{
		struct shm_slot *sl = &c->shm->h->slot[rank];

		sl->ep = c->ep[rank];
		sl->key = c->rkey[rank];
		sl->size = c->ws_bytes;
		atomic_store(&sl->pid, getpid());
	}
	/* A host meeting: the context stays idle, its clock untouched. */
	err = shm_barrier(c, &v);
	if (err)
		goto err_destroy;
	shm_read_ranks(c);
	/* A receive completion names its sender by endpoint. */
	for (int r = 0; r < size; r++)
		for (int q = 0; q < r; q++)
			if (c->ep[q] == c->ep[r]) {
				err = -EINVAL;
				goto err_destroy;
			}
	*out = c;
	return 0;

err_destroy:
	fdev_comm_destroy(c);
	return err;
}

void fdev_comm_destroy(struct fdev_comm *c)
{
	if (!c)
		return;
	idle_stop(c);
	if (c->idle_stack)
		munmap(c->idle_stack, FDEV_IDLE_STACK);
	if (c->proxy) {
		/* Nobody may use rank 0's context after it is gone. */
		if (c->shm) {
			uint64_t v = 0;

			shm_barrier(c, &v);
		}
		if (c->px_fd >= 0) {
			if (c->ws[0].addr)
				munmap(c->ws[0].addr, c->ws[0].size);
			close(c->px_fd);
		}
		memset(&c->ws[0], 0, sizeof(c->ws[0]));
		fdev_comm_destroy(c->px);
		c->px = NULL;
	}
	/* Before the regions their bindings hold. */
	fdev_comm_circuits_close(c);
	if (c->shm) {
		struct fdev_shm *s = c->shm;

		atomic_store(&s->h->slot[s->rank].pid, 0);
		/*
		 * Anyone still waiting for this rank in a barrier it never
		 * came to (the ranks called different collectives) fails at
		 * once, not at its timeout: its pid, now 0, says nothing.
		 */
		atomic_fetch_or(&s->h->left[s->rank / 64], 1ULL << (s->rank % 64));
		atomic_fetch_add(&s->h->bump, 1);
		futex(&s->h->bump, FUTEX_WAKE, INT32_MAX, NULL);
		/* A job that never formed: nobody else will remove it. */
		shm_unlink_once(s);
		munmap(s->h, s->len);
		free(s);
	}
	for (unsigned int l = 0; c->ws && l < c->nlocal; l++) {
		if (c->dev && c->ws[l].handle)
			fdev_region_free(c->dev, &c->ws[l]);
		else if (!c->dev)
			free(c->ws[l].addr);
	}
	if (!c->parent)
		fdev_close(c->dev);
	fdev_zc_free(c);
	free(c->early);
	free(c->cycles);
	fdev_comm_fabric_free(c);
	free(c->ep);
	free(c->rkey);
	free(c->queue);
	free(c->ws);
	free(c);
}

int fdev_comm_size(const struct fdev_comm *c)
{
	return c ? (int)c->nranks : -EINVAL;
}

int fdev_comm_local(const struct fdev_comm *c, int *first, int *count)
{
	if (!c)
		return -EINVAL;
	if (first)
		*first = (int)c->first;
	if (count)
		*count = (int)c->nlocal;
	return 0;
}

uint32_t fdev_comm_endpoint(const struct fdev_comm *c, int rank)
{
	if (!c || rank < 0 || (unsigned int)rank >= c->nranks)
		return UINT32_MAX;
	return c->ep[rank];
}

struct fdev *fdev_comm_dev(struct fdev_comm *c)
{
	return c ? c->dev : NULL;
}

int fdev_comm_set_node_size(struct fdev_comm *c, int ranks_per_node)
{
	if (!c || ranks_per_node < 1 || c->nranks % (unsigned int)ranks_per_node)
		return -EINVAL;
	c->node_size = (unsigned int)ranks_per_node;
	return 0;
}

/* At most this many cycles (twice as many rings) are looked for. */
#define FDEV_MAX_CYCLES	4

int fdev_comm_set_links(struct fdev_comm *c, unsigned int nlinks,
			const uint32_t *ends)
{
	uint32_t *cyc;
	int k;

	if (!c || (nlinks && !ends))
		return -EINVAL;
	cyc = calloc((size_t)FDEV_MAX_CYCLES * c->nranks, sizeof(*cyc));
	if (!cyc)
		return -ENOMEM;
	k = fdev_rings_find(c->nranks, nlinks, ends, FDEV_MAX_CYCLES, cyc);
	if (k < 0) {
		free(cyc);
		return k;
	}
	free(c->cycles);
	c->cycles = k ? cyc : NULL;
	c->nrings = 2 * (unsigned int)k;
	if (!k)
		free(cyc);
	return (int)c->nrings;
}

int fdev_comm_exclude(struct fdev_comm *c, int rank)
{
	if (!c || rank < 0 || (unsigned int)rank >= c->nranks)
		return -EINVAL;
	c->failed[rank / 64] |= 1ULL << (rank % 64);
	if (c->shm)
		atomic_fetch_or(&c->shm->h->failed[rank / 64],
				1ULL << (rank % 64));
	return 0;
}

uint64_t fdev_comm_failed(const struct fdev_comm *c, int word)
{
	if (!c || word < 0 || word >= FDEV_FAILED_WORDS)
		return 0;
	return c->failed[word];
}

uint64_t fdev_comm_last_ps(const struct fdev_comm *c)
{
	return c ? c->last_ps : 0;
}

/*
 * The barrier of independent processes. In virtual time a context that
 * sits in a barrier with nothing in flight holds the engine back, so a
 * peer still waiting for its transfers would never see them finish.
 * A timing-only communicator with a receive queue (DATA_IDLE_MEET)
 * stays on the fabric: its idle thread sits in a receiver's WAIT, which
 * does not hold the engine back, while it meets the others; then, as
 * fdev_notify_resume() does, it ends the WAIT (its clock goes to the
 * engine's, never past the latest rank's), moves its clock to the
 * latest one (*val) and meets them again, so that nobody submits before
 * every rank holds the engine back at that time. Without receive queues
 * it leaves the fabric across the barrier: it closes its context, meets
 * the others, opens and attaches again, meets them again (so nobody runs
 * ahead of a late attacher) and moves its clock to the latest one. Data
 * communicators cannot (their regions live in the context); see
 * fdev_comm(3).
 */
static int idle_meet(struct fdev_comm *c, uint64_t *val)
{
	int err;

	err = idle_start(c);
	if (err)
		return err;
	err = shm_barrier(c, val);
	return idle_rejoin(c, c, err, *val);
}

int fdev_shm_barrier(struct fdev_comm *c, uint64_t *val)
{
	int err, err2;

	if (!c->multi)
		return 0;
	if (!fdev_comm_timing_only(c) || c->flags & FDEV_COMM_FREE_RUN)
		return shm_barrier(c, val);
	if (c->idle_meet)
		return idle_meet(c, val);
	fdev_close(c->dev);
	c->dev = NULL;
	err = shm_barrier(c, val);
	if (err && err != -EPIPE)
		return err;
	err2 = fdev_open(c->path[0] ? c->path : NULL, comm_open_flags(c), &c->dev);
	if (!err2)
		err2 = comm_attach(c);
	if (!err2) {
		uint64_t dummy = 0;

		err2 = shm_barrier(c, &dummy);
		if (err2 == -EPIPE)
			err = -EPIPE, err2 = 0;
	}
	if (!err2)
		err2 = fdev_advance_to(c->dev, c->queue[0], *val);
	return err2 ? err2 : err;
}

void *fdev_host_row(struct fdev_comm *c, unsigned int rank, size_t bytes)
{
	struct fdev_shm *s = c->shm;

	if (!c->multi || !s || !s->xarea || bytes > s->xrow ||
	    rank >= c->nranks)
		return NULL;
	return s->xarea + ((s->xseq & 1) * c->nranks + rank) * s->xrow;
}

void fdev_host_rows_done(struct fdev_comm *c)
{
	if (c->shm)
		c->shm->xseq++;
}

/* The file of the job's table of the current host exchange. */
static void job_table_name(const struct fdev_comm *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s.x%llu", c->shm->name,
		 (unsigned long long)c->shm->xseq);
}

void *fdev_job_table(struct fdev_comm *c, size_t bytes)
{
	char name[300];
	void *p;
	int fd;

	if (!c->multi || !c->shm || !c->shm->xarea || !bytes)
		return NULL;
	job_table_name(c, name, sizeof(name));
	fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)bytes)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

void fdev_job_table_unlink(struct fdev_comm *c)
{
	char name[300];

	if (!c->multi || !c->shm)
		return;
	job_table_name(c, name, sizeof(name));
	unlink(name);
}

/*
 * Wait while rank fab_reader reads the fabric; FABRIC_OWN if it died or
 * left meanwhile, or after FDEV_TIMEOUT_MS (it may be waiting for us).
 */
static uint32_t fabric_wait(struct fdev_comm *c)
{
	struct shm_hdr *h = c->shm->h;
	const char *t = getenv("FDEV_TIMEOUT_MS");
	uint64_t deadline = mono_ms() + (t && *t ? strtoull(t, NULL, 10) : 300000);
	uint32_t st;

	while ((st = atomic_load(&h->fab_state)) == FABRIC_READING) {
		struct timespec ts = { 0, 200 * 1000000 };
		uint32_t r = atomic_load(&h->fab_reader);
		int32_t pid = atomic_load(&h->slot[r].pid);

		if ((futex(&h->fab_state, FUTEX_WAIT, FABRIC_READING, &ts) &&
		     errno == ETIMEDOUT &&
		     ((atomic_load(&h->left[r / 64]) >> (r % 64) & 1) ||
		      !pid || pid_dead(pid))) || mono_ms() > deadline) {
			st = FABRIC_READING;
			atomic_compare_exchange_strong(&h->fab_state, &st, FABRIC_OWN);
			futex(&h->fab_state, FUTEX_WAKE, INT32_MAX, NULL);
		}
	}
	return st;
}

int fdev_job_fabric(struct fdev_comm *c, void **area, size_t *len)
{
	struct fdev_shm *s = c->multi ? c->shm : NULL;
	uint32_t st = FABRIC_NONE;

	if (!s || !s->fab)
		return -ENOENT;
	if (atomic_compare_exchange_strong(&s->h->fab_state, &st,
					   FABRIC_READING)) {
		atomic_store(&s->h->fab_reader, (uint32_t)s->rank);
		*area = s->fab;
		*len = s->fab_cap;
		return 1;
	}
	if (st == FABRIC_READING)
		st = fabric_wait(c);
	if (st != FABRIC_READY)
		return -ENOENT;
	*area = s->fab;
	*len = atomic_load(&s->h->fab_len);
	return 0;
}

void fdev_job_fabric_done(struct fdev_comm *c, size_t len)
{
	struct shm_hdr *h = c->shm->h;

	atomic_store(&h->fab_len, len);
	atomic_store(&h->fab_state, len ? FABRIC_READY : FABRIC_OWN);
	futex(&h->fab_state, FUTEX_WAKE, INT32_MAX, NULL);
}

int fdev_comm_barrier(struct fdev_comm *c)
{
	uint64_t v;
	int err;

	if (!c)
		return -EINVAL;
	if (c->proxy) {
		v = 0;
		return shm_barrier(c, &v);
	}
	if (!c->multi || !c->dev)
		return 0;
	if (c->notify) {
		int e2;

		err = fdev_notify_resume(c);
		if (!err)
			err = fdev_notify_barrier(c);
		e2 = fdev_notify_idle(c);
		return err ? err : e2;
	}
	v = fdev_clock(c->dev);
	err = fdev_shm_barrier(c, &v);
	if (err)
		return err;
	return fdev_advance_to(c->dev, c->queue[0], v);
}
