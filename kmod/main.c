// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: an emulated inter-core-connected accelerator fabric.
 *
 * Module init and exit, and the fabric objects both interfaces share.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "icfab.h"

unsigned int icfab_nr_fabrics = 1;
module_param_named(nr_fabrics, icfab_nr_fabrics, uint, 0444);
MODULE_PARM_DESC(nr_fabrics, "number of fabrics (/dev/icfab0..N-1), 1-8");

/*
 * Test-only: fail module init at step N (1: netlink family, 2: character
 * devices), to prove that every init step unwinds what came before it.
 */
static unsigned int fail_init;
module_param(fail_init, uint, 0444);
MODULE_PARM_DESC(fail_init, "test only: fail init at step N (0: never)");

static struct icfab_fabric *icfab_fabrics[ICFAB_MAX_FABRICS];

/*
 * Caps on what one context or one user may hold (docs/SECURITY.md),
 * reported by ICFAB_IOC_INFO. Read where they are checked, so that a
 * change applies from the next request on; what is held already stays.
 */
unsigned int icfab_max_ctx_descs = ICFAB_ENGINE_XFERS_MAX;
module_param_named(max_ctx_descs, icfab_max_ctx_descs, uint, 0644);
MODULE_PARM_DESC(max_ctx_descs,
		 "descriptors a context may have submitted and not reaped (0: no cap)");
unsigned int icfab_max_ctx_queues = ICFAB_MAX_QUEUES;
module_param_named(max_ctx_queues, icfab_max_ctx_queues, uint, 0644);
MODULE_PARM_DESC(max_ctx_queues, "queues per context, at most 4096");
static unsigned int max_uid_contexts = 256;
module_param(max_uid_contexts, uint, 0644);
MODULE_PARM_DESC(max_uid_contexts,
		 "open contexts per uid, all fabrics (0: no cap)");
static unsigned int max_uid_mem_mb = 128;
module_param(max_uid_mem_mb, uint, 0644);
MODULE_PARM_DESC(max_uid_mem_mb,
		 "device memory per uid, all fabrics, in MiB (0: no cap)");
static unsigned int max_uid_circuits = 256;
module_param(max_uid_circuits, uint, 0644);
MODULE_PARM_DESC(max_uid_circuits,
		 "circuits owned by one uid other than 0, all fabrics (0: no cap)");

/*
 * What each uid holds, over every fabric: an entry exists while it holds
 * anything. A spinlock, taken with nothing else inside it, so that a
 * charge can be made under fabric->lock and an uncharge wherever the
 * last reference to a region goes.
 */
struct icfab_user {
	struct hlist_node node;
	u32 uid;
	u64 held[ICFAB_QUOTA_NR];
};

#define ICFAB_USER_HASH_BITS	6
static DEFINE_HASHTABLE(icfab_users, ICFAB_USER_HASH_BITS);
static DEFINE_SPINLOCK(icfab_users_lock);

static struct icfab_user *__icfab_user_find(u32 uid)
{
	struct icfab_user *u;

	lockdep_assert_held(&icfab_users_lock);
	hash_for_each_possible(icfab_users, u, node, uid)
		if (u->uid == uid)
			return u;
	return NULL;
}

/* The cap on @what, in its unit (pages for memory); 0: none. */
static u64 icfab_quota_cap(enum icfab_quota what)
{
	switch (what) {
	case ICFAB_QUOTA_CONTEXTS:
		return READ_ONCE(max_uid_contexts);
	case ICFAB_QUOTA_PAGES:
		return (u64)READ_ONCE(max_uid_mem_mb) << (20 - PAGE_SHIFT);
	case ICFAB_QUOTA_CIRCUITS:
		return READ_ONCE(max_uid_circuits);
	default:
		return 0;
	}
}

/*
 * Charge @n of @what to @uid: -EMFILE (contexts) or -EDQUOT (memory,
 * circuits) past its cap unless @exempt, -ENOMEM; nothing is charged
 * then. Each charge is undone by icfab_quota_uncharge() with the same
 * arguments.
 */
int icfab_quota_charge(u32 uid, enum icfab_quota what, u64 n, bool exempt)
{
	struct icfab_user *u, *fresh = NULL;
	u64 cap = exempt ? 0 : icfab_quota_cap(what);
	int err = 0;

	might_sleep();
	for (;;) {
		spin_lock(&icfab_users_lock);
		u = __icfab_user_find(uid);
		if (u || fresh)
			break;
		spin_unlock(&icfab_users_lock);
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
		if (!fresh)
			return -ENOMEM;
		fresh->uid = uid;
	}
	if (!u) {
		u = fresh;
		fresh = NULL;
		hash_add(icfab_users, &u->node, uid);
	}
	if (cap && (n > cap || u->held[what] > cap - n))
		err = what == ICFAB_QUOTA_CONTEXTS ? -EMFILE : -EDQUOT;
	else
		u->held[what] += n;
	if (err && !memchr_inv(u->held, 0, sizeof(u->held))) {
		hash_del(&u->node);
		fresh = u;
	}
	spin_unlock(&icfab_users_lock);
	kfree(fresh);
	return err;
}

void icfab_quota_uncharge(u32 uid, enum icfab_quota what, u64 n)
{
	struct icfab_user *u;

	if (!n)
		return;
	spin_lock(&icfab_users_lock);
	u = __icfab_user_find(uid);
	if (WARN_ON_ONCE(!u || u->held[what] < n)) {
		spin_unlock(&icfab_users_lock);
		return;
	}
	u->held[what] -= n;
	if (memchr_inv(u->held, 0, sizeof(u->held)))
		u = NULL;
	else
		hash_del(&u->node);
	spin_unlock(&icfab_users_lock);
	kfree(u);
}

struct icfab_fabric *icfab_fabric_get_by_id(u32 id)
{
	if (id >= icfab_nr_fabrics)
		return NULL;
	return icfab_fabrics[id];
}

/*
 * Read a fabric's state: its committed configuration, or the staged one
 * when @staged is set and there is one.
 */
void icfab_fabric_snapshot(struct icfab_fabric *fabric,
			   struct icfab_fabric_state *st, bool staged)
{
	const struct icfab_topo *t;

	mutex_lock(&fabric->lock);
	t = staged && fabric->staged ? fabric->staged : fabric->active;
	st->id = fabric->id;
	st->time_mode = t->time_mode;
	st->segment_size = t->segment_size;
	st->dilation = t->dilation;
	st->now_ps = icfab_data_now(fabric);
	st->generation = fabric->generation;
	st->nr_endpoints = t->m.nr_endpoints;
	st->nr_switches = t->m.nr_switches;
	st->nr_links = t->m.nr_links;
	st->has_staged = fabric->staged;
	st->mem_bytes = icfab_topo_mem_bytes(t);
	mutex_unlock(&fabric->lock);
	st->nr_contexts = atomic_read(&fabric->nr_contexts);
}

/* The fabric's limits, at its committed segment size (bytes). */
void icfab_fill_limits(struct icfab_limits *limits, u32 segment_size)
{
	memset(limits, 0, sizeof(*limits));
	limits->max_endpoints = ICFAB_MAX_ENDPOINTS;
	limits->max_switches = ICFAB_MAX_SWITCHES;
	limits->max_links = ICFAB_MAX_LINKS;
	limits->max_ports = ICFAB_MAX_PORTS;
	limits->max_colors = ICFAB_MAX_COLORS;
	limits->max_queues = icfab_ctx_queues_cap();
	limits->max_attach = ICFAB_MAX_ATTACH;
	limits->max_queue_depth = ICFAB_MAX_QUEUE_DEPTH;
	limits->min_segment_size = ICFAB_MIN_SEGMENT_SIZE;
	limits->max_segment_size = ICFAB_MAX_SEGMENT_SIZE;
	limits->max_dilation = ICFAB_MAX_DILATION;
	limits->max_xfer_segments = ICFAB_MAX_XFER_SEGMENTS;
	limits->max_xfer_bytes = (u64)ICFAB_MAX_XFER_SEGMENTS * segment_size;
	limits->max_ctx_descs = READ_ONCE(icfab_max_ctx_descs);
	limits->max_uid_contexts = READ_ONCE(max_uid_contexts);
	limits->max_uid_mem_mb = READ_ONCE(max_uid_mem_mb);
	limits->max_uid_circuits = READ_ONCE(max_uid_circuits);
}

static struct icfab_fabric *icfab_fabric_create(u32 id)
{
	struct icfab_fabric *fabric;

	fabric = kzalloc(sizeof(*fabric), GFP_KERNEL);
	if (!fabric)
		return NULL;

	fabric->id = id;
	snprintf(fabric->name, sizeof(fabric->name), ICFAB_DEV_NAME_PREFIX "%u",
		 id);
	mutex_init(&fabric->lock);
	atomic_set(&fabric->nr_contexts, 0);
	atomic_set(&fabric->fast_delays, 0);
	atomic_set(&fabric->submit_lock_waits, 0);
	atomic_set(&fabric->fast_writes, 0);
	atomic_set(&fabric->fast_mem_writes, 0);
	atomic_set(&fabric->fast_notify_writes, 0);
	INIT_LIST_HEAD(&fabric->attached);
	icfab_circuits_init(fabric);
	fabric->active = icfab_topo_create();
	if (!fabric->active) {
		kfree(fabric);
		return NULL;
	}
	return fabric;
}

static void icfab_fabric_destroy(struct icfab_fabric *fabric)
{
	icfab_circuits_exit(fabric);
	icfab_topo_destroy(fabric->staged);
	icfab_topo_destroy(fabric->active);
	mutex_destroy(&fabric->lock);
	kfree(fabric);
}

/*
 * The staged configuration, created on first use as a copy of the
 * committed one and owned by the netlink socket @portid until it commits
 * or aborts, or closes. Another socket gets -EBUSY, so two configurators
 * never commit each other's half-made changes. Called with the lock held.
 */
struct icfab_topo *icfab_fabric_staged(struct icfab_fabric *fabric,
				       u32 portid)
{
	lockdep_assert_held(&fabric->lock);

	if (fabric->staged) {
		if (fabric->staged_portid != portid)
			return ERR_PTR(-EBUSY);
		return fabric->staged;
	}
	fabric->staged = icfab_topo_clone(fabric->active);
	if (!fabric->staged)
		return ERR_PTR(-ENOMEM);
	fabric->staged_portid = portid;
	fabric->change_seq++;
	return fabric->staged;
}

/* Detach the staged configuration; the caller destroys it unlocked. */
struct icfab_topo *icfab_fabric_unstage(struct icfab_fabric *fabric)
{
	struct icfab_topo *staged = fabric->staged;

	lockdep_assert_held(&fabric->lock);
	fabric->staged = NULL;
	fabric->staged_portid = 0;
	if (staged)
		fabric->change_seq++;
	return staged;
}

/* A netlink socket closed: drop whatever it had staged. */
void icfab_fabrics_release_portid(u32 portid)
{
	unsigned int i;

	for (i = 0; i < icfab_nr_fabrics; i++) {
		struct icfab_fabric *fabric = icfab_fabrics[i];
		struct icfab_topo *staged = NULL;

		mutex_lock(&fabric->lock);
		if (fabric->staged && fabric->staged_portid == portid)
			staged = icfab_fabric_unstage(fabric);
		mutex_unlock(&fabric->lock);
		icfab_topo_destroy(staged);
	}
}

static void icfab_fabrics_destroy(void)
{
	unsigned int i;

	for (i = 0; i < ICFAB_MAX_FABRICS; i++) {
		if (icfab_fabrics[i])
			icfab_fabric_destroy(icfab_fabrics[i]);
		icfab_fabrics[i] = NULL;
	}
}

static void icfab_chardevs_exit(void)
{
	unsigned int i;

	for (i = icfab_nr_fabrics; i-- > 0;)
		icfab_chardev_exit(icfab_fabrics[i]);
}

static int icfab_chardevs_init(void)
{
	unsigned int i;
	int err;

	for (i = 0; i < icfab_nr_fabrics; i++) {
		err = icfab_chardev_init(icfab_fabrics[i]);
		if (err)
			goto err_exit_created;
	}
	return 0;

err_exit_created:
	while (i-- > 0)
		icfab_chardev_exit(icfab_fabrics[i]);
	return err;
}

static int __init icfab_init(void)
{
	unsigned int i;
	int err;

	if (icfab_nr_fabrics < 1 || icfab_nr_fabrics > ICFAB_MAX_FABRICS) {
		pr_err("nr_fabrics=%u is out of range 1-%d\n",
		       icfab_nr_fabrics, ICFAB_MAX_FABRICS);
		return -EINVAL;
	}

	for (i = 0; i < icfab_nr_fabrics; i++) {
		icfab_fabrics[i] = icfab_fabric_create(i);
		if (!icfab_fabrics[i]) {
			err = -ENOMEM;
			goto err_destroy_fabrics;
		}
	}

	err = icfab_data_init();
	if (err)
		goto err_destroy_fabrics;

	err = fail_init == 1 ? -EIO : icfab_genl_init();
	if (err)
		goto err_data_exit;

	/* The devices come last: once they exist, userspace can use them. */
	err = fail_init == 2 ? -EIO : icfab_chardevs_init();
	if (err)
		goto err_genl_exit;

	icfab_debugfs_init(icfab_fabrics, icfab_nr_fabrics);
	pr_info("%u fabric(s), ABI %u, features %#llx\n", icfab_nr_fabrics,
		ICFAB_ABI_VERSION, (unsigned long long)ICFAB_F_SUPPORTED);
	return 0;

err_genl_exit:
	icfab_genl_exit();
err_data_exit:
	icfab_data_exit();
err_destroy_fabrics:
	icfab_fabrics_destroy();
	return err;
}

static void __exit icfab_exit(void)
{
	icfab_debugfs_exit();
	icfab_chardevs_exit();
	icfab_genl_exit();
	icfab_data_exit();
	icfab_fabrics_destroy();
}

module_init(icfab_init);
module_exit(icfab_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("icfab: emulated inter-core-connected accelerator fabric");
MODULE_AUTHOR("icfab developers");
