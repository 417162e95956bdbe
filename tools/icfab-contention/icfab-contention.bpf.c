// SPDX-License-Identifier: GPL-2.0
/*
 * icfab-contention: per-link load and queueing delay from the icfab
 * tracepoints.
 *
 * Raw tracepoints, not tp_btf or classic tracepoints with
 * trace_event_raw_<name>: those need the module's BTF, and Debian's 6.1
 * headers have no vmlinux to build it against (6.12's do), so the module
 * has BTF on one test kernel and not the other. A raw tracepoint's
 * arguments are the TP_PROTO arguments, each widened to 64 bits, in the
 * order kmod/trace.h declares and docs/TRACING.md documents; that works
 * the same on both kernels and needs no layout of the event record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "icfab-contention.h"

char LICENSE[] SEC("license") = "GPL";

/* Count only this fabric, unless all_fabrics. */
const volatile __u32 target_fabric = 0;
const volatile bool all_fabrics = false;

/*
 * Not preallocated: a fabric uses a few hundred of these 600-byte entries
 * and a preallocated map would zero all 131072 (80 MB) at every start,
 * which cost more than the MoE step the demo traces (--icount). Both
 * test kernels allow a tracing program a map that allocates (6.1's BPF
 * memory allocator).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536 * 2);
	__type(key, struct icfab_ct_key);
	__type(value, struct icfab_ct_link);
} links SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct icfab_ct_total);
} totals SEC(".maps");

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0;

	if (!v)
		return 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r + 1;		/* [2^r, 2^(r+1)) -> slot r + 1 */
}

static __always_inline bool wanted(__u32 fabric)
{
	return all_fabrics || fabric == target_fabric;
}

static __always_inline void *lookup_or_init(void *map, const void *key,
					    const void *zero)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	/* Lost a race with another CPU: its entry is as good. */
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

static const struct icfab_ct_link zero_link;
static const struct icfab_ct_total zero_total;

SEC("raw_tp/icfab_link_xmit")
int BPF_PROG(on_link_xmit, __u32 fabric, __u32 link, __u64 key, __u32 seg,
	     __u32 hop, __u64 bytes, __u64 ready_ps, __u64 depart_ps,
	     __u64 done_ps)
{
	struct icfab_ct_key k = { .fabric = fabric, .link = link };
	struct icfab_ct_link *v;
	__u64 q = depart_ps - ready_ps;
	__u32 slot;

	if (!wanted(fabric))
		return 0;
	v = lookup_or_init(&links, &k, &zero_link);
	if (!v)
		return 0;
	__sync_fetch_and_add(&v->bytes, bytes);
	__sync_fetch_and_add(&v->segments, 1);
	__sync_fetch_and_add(&v->busy_ps, done_ps - depart_ps);
	__sync_fetch_and_add(&v->queued_ps, q);
	/* A fabric's engine runs under its lock: no lost maximum. */
	if (q > v->max_queued_ps)
		v->max_queued_ps = q;
	slot = log2_slot(q);
	if (slot < ICFAB_CT_SLOTS)
		__sync_fetch_and_add(&v->hist[slot], 1);
	/* A fabric's transmits are the sum of its links' segments. */
	return 0;
}

SEC("raw_tp/icfab_complete")
int BPF_PROG(on_complete, __u32 fabric, __u64 key, __u32 src, __u32 dst,
	     __u64 bytes, int status)
{
	struct icfab_ct_total *t;

	if (!wanted(fabric))
		return 0;
	t = lookup_or_init(&totals, &fabric, &zero_total);
	if (!t)
		return 0;
	__sync_fetch_and_add(&t->transfers, 1);
	if (status)
		__sync_fetch_and_add(&t->failed, 1);
	else
		__sync_fetch_and_add(&t->bytes, bytes);
	return 0;
}
