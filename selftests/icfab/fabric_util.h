/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Building small topologies over netlink, for the selftests.
 */
#ifndef ICFAB_SELFTEST_FABRIC_UTIL_H
#define ICFAB_SELFTEST_FABRIC_UTIL_H

#include <stdint.h>

#include "genl.h"

int node_new(struct genl_sock *gs, uint32_t id, uint32_t kind,
	     uint32_t ports, const char *name);
int link_new(struct genl_sock *gs, uint32_t id, uint32_t src,
	     uint32_t sport, uint32_t dst, uint32_t dport, uint64_t bw);
int route_set(struct genl_sock *gs, uint32_t node, uint32_t first,
	      const uint16_t *ports, unsigned int n);
int cmd(struct genl_sock *gs, uint8_t c);
/*
 * A bidirectional ring of @n endpoints (n <= 64): port 0 to the next node,
 * port 1 to the previous; link 2i is i -> i+1, link 2i+1 is i+1 -> i;
 * 50 GB/s, 500 ns, routes the short way round (clockwise on ties).
 */
int stage_ring(struct genl_sock *gs, unsigned int n);
/*
 * @n endpoints under leaf switches of @per_leaf ports down, under one
 * spine: endpoints of different leaves are four hops apart. Ids and
 * links as described in fabric_util.c.
 */
int stage_leaf_spine(struct genl_sock *gs, unsigned int n,
		     unsigned int per_leaf);
/* Delete every link and node, and commit; 0 when it was empty already. */
int clear_fabric(struct genl_sock *gs);
/*
 * The selftests' fixture: open @gs on the icfab family and empty the
 * fabric, whatever ran before; 0 or -errno (@gs is closed then).
 * ring_fabric_open() then commits a ring of @n endpoints (stage_ring()).
 * fabric_close() empties the fabric again and closes @gs.
 */
int fabric_open_clear(struct genl_sock *gs);
int ring_fabric_open(struct genl_sock *gs, unsigned int n);
void fabric_close(struct genl_sock *gs);

/* stage_ring()'s links, and the fabric's default segment size. */
#define RING_BW		50000000000ULL	/* bytes/s */
#define RING_LAT	500000ULL	/* ps */
#define RING_SEG	4096ULL		/* bytes */

/*
 * A LINK_NEW of link @id from @src port 0 to @dst port 0 at stage_ring()'s
 * bandwidth and latency, in @m, for the caller to add to and send.
 */
void ring_link_msg(struct genl_sock *gs, struct genl_msg *m, uint32_t id,
		   uint32_t src, uint32_t dst);
/* LINK_GET of committed link @id, its reply to @cb; 0 or -errno. */
int link_get_reply(struct genl_sock *gs, uint32_t id, genl_reply_cb cb,
		   void *arg);

/* ps to serialise @bytes on a ring link, rounded up as the engine does. */
uint64_t ring_ser(uint64_t bytes);
/*
 * The timing model's closed form for an uncontended transfer of whole
 * segments over @hops ring links: hops * (L + S/B) + (n - 1) * S/B.
 */
uint64_t ring_uncontended(uint64_t bytes, unsigned int hops);

struct icfab_desc;
struct icfab_cqe;
/* A timing-only WRITE of @len bytes from queue @q to endpoint @peer. */
struct icfab_desc desc_put(uint32_t q, uint32_t peer, uint64_t len,
			   uint64_t tag);
/* desc_put() with ICFAB_DESC_F_NOTIFY and @imm. */
struct icfab_desc desc_notify_put(uint32_t q, uint32_t peer, uint64_t len,
				  uint64_t tag, uint32_t imm);
/*
 * ICFAB_IOC_WAIT for @min..@max completions (@timeout_ms 0: none). The
 * number written to @c, or -errno; the context's clock after it in
 * *@clock when @clock is not NULL.
 */
int ctx_wait(int fd, struct icfab_cqe *c, unsigned int min, unsigned int max,
	     unsigned int timeout_ms, uint64_t *clock);
/* The data-path ioctls of a context; each returns -errno on failure. */
int ctx_attach(int fd, uint32_t ep);
/* The new queue's id. */
int ctx_queue(int fd, uint32_t ep, uint32_t depth);
/* The new receive queue's id (ICFAB_QUEUE_F_RECV). */
int ctx_recv_queue(int fd, uint32_t ep, uint32_t depth);
int ctx_queue_destroy(int fd, uint32_t q);
/* The number of descriptors accepted. */
int ctx_submit(int fd, struct icfab_desc *d, unsigned int n);
/* ctx_submit() with ICFAB_SUBMIT_F_* @flags. */
int ctx_submit_flags(int fd, struct icfab_desc *d, unsigned int n,
		     uint32_t flags);
int ctx_region_free(int fd, uint32_t region);
/*
 * A region of @size bytes on endpoint @ep, mapped at *@map, then
 * exported with @access, its key in *@key (@access 0: not exported).
 */
int region_map(int fd, uint32_t ep, uint64_t size, uint32_t access,
	       uint32_t *handle, uint64_t *key, unsigned char **map);
/* A READ or WRITE of @len bytes between @region and the key @rkey. */
struct icfab_desc mv(uint8_t op, uint32_t q, uint32_t region, uint64_t loff,
		     uint64_t rkey, uint64_t roff, uint64_t len, uint64_t tag);
/* @n bytes at @p of a sequence that @seed decides. */
void fill(unsigned char *p, uint64_t n, unsigned int seed);
/* Module parameter @name of icfab: its value, or -1 when unreadable. */
long param_get(const char *name);
/* Set module parameter @name of icfab to @v: 0 or -errno. */
int param_set(const char *name, long v);

#include <sys/types.h>
/*
 * Run @fn(@arg) in a child as user and group @uid, with the group icfab
 * as its only supplementary group. The child's exit status (what @fn
 * returned), or 200+ when it could not be started, could not become
 * @uid, or did not exit.
 */
int as_user(uid_t uid, int (*fn)(void *), void *arg);

/*
 * Two processes in lockstep: @rank(p, ready, go, out + p * @per_rank)
 * runs in a child for ranks p = 0 and 1. A rank writes a byte to @ready
 * once it is set up, then reads @go, which ends (EOF) when both are:
 * then they start together. With @hog, a third child spins beside them.
 * A rank that does not return 0 leaves -1000 - its return in
 * out[p * @per_rank].status. A rank that exits before it is ready fails
 * the pair: the other is killed (-1000 in its first status) instead of
 * waiting for go for ever.
 */
typedef int (*pair_rank_fn)(int p, int ready, int go, struct icfab_cqe *out);
void run_rank_pair(pair_rank_fn rank, struct icfab_cqe *out,
		   unsigned int per_rank, int hog);
/*
 * The usual start of a @rank of run_rank_pair(): a context on
 * /dev/icfab0 attached to endpoint @p, then ready, then wait for go.
 * The context's fd, or -1 (open or attach failed) or -4 (the pipes).
 */
int pair_rank_attach(int p, int ready, int go);

/* debugfs: a count of icfab0 (fast_delays, fast_writes, ...), or -1. */
long long fab_count(const char *name);
/* Write @cmd to icfab0's debugfs fault file ("link 2 down"): 0 or -errno. */
int fabric_fault(const char *cmd);
/*
 * CTX_GET: the id of the latest context of process @pid that has not
 * ended, in *@id; 0, -ENOENT when it has none, or -errno.
 */
int ctx_id_of_pid(struct genl_sock *gs, uint32_t pid, uint32_t *id);
/* CTX_EVICT of context @id (0: without ICFAB_A_CTX_ID): 0 or -errno. */
int ctx_evict(struct genl_sock *gs, uint32_t id);

#include <stddef.h>
/* A context's completion ring, mapped (ICFAB_IOC_CQ_SETUP). */
struct icfab_cq_ring;
struct cq_map {
	struct icfab_cq_ring *r;
	struct icfab_cqe *cqes;
	size_t size;
};
/* Set up @fd's ring of @entries and map it into *@m: its entries, or -errno. */
int cq_setup(int fd, uint32_t entries, struct cq_map *m);

#endif
