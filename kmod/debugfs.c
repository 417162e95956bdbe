// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: fault injection for tests, in debugfs.
 *
 *	/sys/kernel/debug/icfab/icfabN/fault	(write, root)
 *
 * takes one command per write:
 *
 *	link ID down | link ID up | link ID degrade PERMILLE
 *	node ID down | node ID up	(every link from or to the node)
 *
 * and commits it at once, live if contexts are attached, as a commit
 * changing only those links would (ICFAB_F_LIVE_COMMIT): same
 * validation, same tracepoints, same notification. Routes are left as
 * they are, which is the point: traffic routed over a link taken down
 * here fails with -EHOSTUNREACH until icfabd (which recomputes routes
 * around faults, `icfabctl fault`) installs new ones. A malformed
 * command fails with -EINVAL, an unknown link or node with -ENOENT, a
 * configuration being staged over netlink with -EBUSY (it would undo
 * the fault at its commit); none of them changes anything.
 *
 *	/sys/kernel/debug/icfab/engine_events	(read, write, root)
 *
 * is the number of events an engine's table starts with when a fabric's
 * first context attaches (clamped to 2 .. ICFAB_ENGINE_EVENTS_MAX). The
 * table grows as submissions need; tests start it tiny to show that its
 * size never changes a timestamp (docs/TIMING.md, "Capacity").
 *
 *	/sys/kernel/debug/icfab/engine_xfers	(read, write, root)
 *
 * is the same for the transfer table (clamped to 1 ..
 * ICFAB_ENGINE_XFERS_MAX).
 *
 *	/sys/kernel/debug/icfab/icfabN/engine_events_cap, engine_xfers_cap,
 *	granted_events, granted_xfers	(read, root)
 *
 * are the sizes of the fabric's engine's tables, in entries, and the room
 * in them promised to the WRITE path's credit (kmod/data.c), 0 while no
 * context is attached: for tests and for the memory credit costs.
 *
 *	/sys/kernel/debug/icfab/uring_done_delay_ms	(read/write, root)
 *
 * makes every io_uring completion sleep this long between giving up the
 * context's count of its command and handing it back to io_uring, which
 * then drops its reference to the file: a window that a close landing
 * in must not turn into a context nobody can reach and nothing kills
 * (kmod/uring.c, icfab_ctx_flush()). 0, the default, for none.
 *
 *	/sys/kernel/debug/icfab/wait_wake_delay_ms	(read/write, root)
 *
 * makes every ICFAB_IOC_WAIT, once woken, sleep this long before it takes
 * the fabric lock back: the window in which no other WAIT of the context
 * may start (kmod/data.c, icfab_ioctl_wait()). 0, the default, for none.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "icfab.h"

static struct dentry *icfab_debugfs_root;

struct icfab_fault {
	bool node;			/* else a link */
	u32 id;
	u32 state;			/* ICFAB_LINK_* */
	u32 permille;			/* DEGRADED */
};

static int icfab_fault_parse(char *buf, struct icfab_fault *f)
{
	char *words[4];
	int n = 0;
	char *w;

	while ((w = strsep(&buf, " \t\n")) != NULL) {
		if (!*w)
			continue;
		if (n == ARRAY_SIZE(words))
			return -EINVAL;
		words[n++] = w;
	}
	if (n < 3)
		return -EINVAL;
	if (!strcmp(words[0], "node"))
		f->node = true;
	else if (strcmp(words[0], "link"))
		return -EINVAL;
	if (kstrtou32(words[1], 10, &f->id))
		return -EINVAL;
	f->permille = 1000;
	if (!strcmp(words[2], "down") && n == 3) {
		f->state = ICFAB_LINK_DOWN;
	} else if (!strcmp(words[2], "up") && n == 3) {
		f->state = ICFAB_LINK_UP;
	} else if (!strcmp(words[2], "degrade") && n == 4 && !f->node) {
		if (kstrtou32(words[3], 10, &f->permille) ||
		    !f->permille || f->permille > 999)
			return -EINVAL;
		f->state = ICFAB_LINK_DEGRADED;
	} else {
		return -EINVAL;
	}
	return 0;
}

static void icfab_fault_link(struct icfab_mlink *l, const struct icfab_fault *f)
{
	l->state = f->state;
	l->permille = f->permille;
}

/* Apply @f to a copy of the committed configuration, then commit it. */
static int icfab_fault_apply(struct icfab_fabric *fabric,
			     const struct icfab_fault *f)
{
	struct icfab_commit_err cerr = {};
	struct icfab_topo *t, *old;
	struct icfab_mlink *l;
	u32 i;
	int err = 0;

	mutex_lock(&fabric->lock);
	if (fabric->staged) {
		err = -EBUSY;
		goto out_unlock;
	}
	t = icfab_topo_clone(fabric->active);
	if (!t) {
		err = -ENOMEM;
		goto out_unlock;
	}
	if (f->node) {
		if (!icfab_topo_node(t, f->id))
			err = -ENOENT;
		for (i = 0; !err && i < t->m.links_cap; i++) {
			l = &t->m.links[i];
			if (l->present && (l->src == f->id || l->dst == f->id))
				icfab_fault_link(l, f);
		}
	} else {
		l = icfab_topo_link(t, f->id);
		if (l)
			icfab_fault_link(l, f);
		else
			err = -ENOENT;
	}
	if (err) {
		icfab_topo_destroy(t);
		goto out_unlock;
	}
	old = __icfab_fabric_commit(fabric, t, &cerr);
	if (IS_ERR(old)) {
		err = PTR_ERR(old);
		icfab_topo_destroy(t);
		goto out_unlock;
	}
	mutex_unlock(&fabric->lock);

	icfab_topo_destroy(old);
	icfab_genl_notify_fabric(fabric);
	return 0;

out_unlock:
	mutex_unlock(&fabric->lock);
	if (err && cerr.msg)
		pr_info_ratelimited("%s: fault refused: %s\n", fabric->name,
				    cerr.msg);
	return err;
}

static ssize_t icfab_fault_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	struct icfab_fabric *fabric = file->private_data;
	struct icfab_fault f = {};
	char buf[64];
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	err = icfab_fault_parse(buf, &f);
	if (!err)
		err = icfab_fault_apply(fabric, &f);
	return err ? err : len;
}

static const struct file_operations icfab_fault_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= icfab_fault_write,
};

/* engine_events_cap and the rest (above): 48 and 128 bytes an entry. */
#define ICFAB_ROOM_ATTR(name, stat)					\
static int icfab_##name##_get(void *data, u64 *val)			\
{									\
	*val = icfab_data_room_stat(data, stat);			\
	return 0;							\
}									\
DEFINE_DEBUGFS_ATTRIBUTE(icfab_##name##_fops, icfab_##name##_get, NULL, \
			 "%llu\n")

ICFAB_ROOM_ATTR(events_cap, ICFAB_ROOM_EVENTS_CAP);
ICFAB_ROOM_ATTR(xfers_cap, ICFAB_ROOM_XFERS_CAP);
ICFAB_ROOM_ATTR(granted_events, ICFAB_ROOM_GRANTED_EVENTS);
ICFAB_ROOM_ATTR(granted_xfers, ICFAB_ROOM_GRANTED_XFERS);

u32 icfab_uring_done_delay_ms;
u32 icfab_wait_wake_delay_ms;

void icfab_debugfs_init(struct icfab_fabric **fabrics, unsigned int n)
{
	unsigned int i;

	icfab_debugfs_root = debugfs_create_dir("icfab", NULL);
	debugfs_create_u32("engine_events", 0600, icfab_debugfs_root,
			   &icfab_engine_events_first);
	debugfs_create_u32("engine_xfers", 0600, icfab_debugfs_root,
			   &icfab_engine_xfers_first);
	debugfs_create_u32("uring_done_delay_ms", 0600, icfab_debugfs_root,
			   &icfab_uring_done_delay_ms);
	debugfs_create_u32("wait_wake_delay_ms", 0600, icfab_debugfs_root,
			   &icfab_wait_wake_delay_ms);
	for (i = 0; i < n; i++) {
		struct dentry *dir;

		dir = debugfs_create_dir(fabrics[i]->name, icfab_debugfs_root);
		debugfs_create_file("fault", 0200, dir, fabrics[i],
				    &icfab_fault_fops);
		debugfs_create_file("engine_check", 0600, dir, fabrics[i],
				    &icfab_check_fops);
		/* Counts, not time (struct icfab_fabric); written to reset. */
		debugfs_create_atomic_t("fast_delays", 0600, dir,
					&fabrics[i]->fast_delays);
		debugfs_create_atomic_t("submit_lock_waits", 0600, dir,
					&fabrics[i]->submit_lock_waits);
		debugfs_create_atomic_t("fast_writes", 0600, dir,
					&fabrics[i]->fast_writes);
		debugfs_create_atomic_t("fast_mem_writes", 0600, dir,
					&fabrics[i]->fast_mem_writes);
		debugfs_create_atomic_t("fast_mem_reads", 0600, dir,
					&fabrics[i]->fast_mem_reads);
		debugfs_create_atomic_t("fast_timed_reads", 0600, dir,
					&fabrics[i]->fast_timed_reads);
		debugfs_create_atomic_t("fast_notify_writes", 0600, dir,
					&fabrics[i]->fast_notify_writes);
		debugfs_create_atomic_t("copies_unlocked", 0600, dir,
					&fabrics[i]->copies_unlocked);
		debugfs_create_atomic_t("copies_by_wait", 0600, dir,
					&fabrics[i]->copies_by_wait);
		debugfs_create_file_unsafe("engine_events_cap", 0400, dir,
					   fabrics[i], &icfab_events_cap_fops);
		debugfs_create_file_unsafe("engine_xfers_cap", 0400, dir,
					   fabrics[i], &icfab_xfers_cap_fops);
		debugfs_create_file_unsafe("granted_events", 0400, dir,
					   fabrics[i],
					   &icfab_granted_events_fops);
		debugfs_create_file_unsafe("granted_xfers", 0400, dir,
					   fabrics[i], &icfab_granted_xfers_fops);
	}
}

void icfab_debugfs_exit(void)
{
	debugfs_remove_recursive(icfab_debugfs_root);
	icfab_debugfs_root = NULL;
}
