// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: an emulated inter-core-connected accelerator fabric.
 *
 * Module init and exit, and the fabric objects both interfaces share.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

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

struct icfab_fabric *icfab_fabric_get_by_id(u32 id)
{
	if (id >= icfab_nr_fabrics)
		return NULL;
	return icfab_fabrics[id];
}

void icfab_fabric_snapshot(struct icfab_fabric *fabric,
			   struct icfab_fabric_state *st)
{
	mutex_lock(&fabric->lock);
	st->id = fabric->id;
	st->time_mode = fabric->time_mode;
	st->segment_size = fabric->segment_size;
	st->dilation = fabric->dilation;
	st->now_ps = fabric->now_ps;
	st->generation = fabric->generation;
	st->nr_endpoints = fabric->nr_endpoints;
	st->nr_switches = fabric->nr_switches;
	st->nr_links = fabric->nr_links;
	mutex_unlock(&fabric->lock);
	st->nr_contexts = atomic_read(&fabric->nr_contexts);
}

void icfab_fill_limits(struct icfab_limits *limits)
{
	memset(limits, 0, sizeof(*limits));
	limits->max_endpoints = ICFAB_MAX_ENDPOINTS;
	limits->max_switches = ICFAB_MAX_SWITCHES;
	limits->max_links = ICFAB_MAX_LINKS;
	limits->max_ports = ICFAB_MAX_PORTS;
	limits->max_colors = ICFAB_MAX_COLORS;
	limits->max_queues = ICFAB_MAX_QUEUES;
	limits->max_queue_depth = ICFAB_MAX_QUEUE_DEPTH;
	limits->min_segment_size = ICFAB_MIN_SEGMENT_SIZE;
	limits->max_segment_size = ICFAB_MAX_SEGMENT_SIZE;
	limits->max_dilation = ICFAB_MAX_DILATION;
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
	fabric->time_mode = ICFAB_TIME_VIRTUAL;
	fabric->segment_size = ICFAB_DEFAULT_SEGMENT_SIZE;
	fabric->dilation = 1;
	atomic_set(&fabric->nr_contexts, 0);
	return fabric;
}

static void icfab_fabric_destroy(struct icfab_fabric *fabric)
{
	mutex_destroy(&fabric->lock);
	kfree(fabric);
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

	err = fail_init == 1 ? -EIO : icfab_genl_init();
	if (err)
		goto err_destroy_fabrics;

	/* The devices come last: once they exist, userspace can use them. */
	err = fail_init == 2 ? -EIO : icfab_chardevs_init();
	if (err)
		goto err_genl_exit;

	pr_info("%u fabric(s), ABI %u, features %#llx\n", icfab_nr_fabrics,
		ICFAB_ABI_VERSION, (unsigned long long)ICFAB_F_ALL);
	return 0;

err_genl_exit:
	icfab_genl_exit();
err_destroy_fabrics:
	icfab_fabrics_destroy();
	return err;
}

static void __exit icfab_exit(void)
{
	icfab_chardevs_exit();
	icfab_genl_exit();
	icfab_fabrics_destroy();
}

module_init(icfab_init);
module_exit(icfab_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("icfab: emulated inter-core-connected accelerator fabric");
MODULE_AUTHOR("icfab developers");
