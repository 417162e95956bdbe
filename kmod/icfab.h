/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab: private header of the kernel module.
 *
 * Lock order (outermost first):
 *	genl_mutex (netlink core) -> icfab_fabric.lock
 */
#ifndef _ICFAB_H
#define _ICFAB_H

#include <linux/atomic.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include <linux/icfab.h>

#define ICFAB_MAX_FABRICS		8

/* Limits of one fabric; reported through ICFAB_IOC_INFO. */
#define ICFAB_MAX_ENDPOINTS		4096
#define ICFAB_MAX_SWITCHES		4096
#define ICFAB_MAX_LINKS			65536
#define ICFAB_MAX_PORTS			64
#define ICFAB_MAX_COLORS		64
#define ICFAB_MAX_QUEUES		256
#define ICFAB_MAX_QUEUE_DEPTH		4096
#define ICFAB_MIN_SEGMENT_SIZE		64		/* bytes */
#define ICFAB_MAX_SEGMENT_SIZE		(1U << 20)	/* bytes */
#define ICFAB_DEFAULT_SEGMENT_SIZE	4096		/* bytes */
#define ICFAB_MAX_DILATION		1000000

struct icfab_fabric {
	u32 id;				/* N of /dev/icfabN */
	char name[16];			/* "icfabN" */
	struct miscdevice misc;

	struct mutex lock;		/* protects the fields below */
	u32 time_mode;			/* enum icfab_time_mode */
	u32 segment_size;		/* bytes */
	u32 dilation;			/* wall ns per fabric ns, paced mode */
	u64 now_ps;			/* fabric clock, ps */
	u64 generation;			/* bumped by every configuration change */
	u32 nr_endpoints;
	u32 nr_switches;
	u32 nr_links;

	atomic_t nr_contexts;		/* open files */
};

/* A snapshot of a fabric's state, taken under fabric->lock. */
struct icfab_fabric_state {
	u32 id;
	u32 time_mode;
	u32 segment_size;		/* bytes */
	u32 dilation;
	u64 now_ps;			/* ps */
	u64 generation;
	u32 nr_endpoints;
	u32 nr_switches;
	u32 nr_links;
	u32 nr_contexts;
};

/* main.c */
extern unsigned int icfab_nr_fabrics;
struct icfab_fabric *icfab_fabric_get_by_id(u32 id);
void icfab_fabric_snapshot(struct icfab_fabric *fabric,
			   struct icfab_fabric_state *st);
void icfab_fill_limits(struct icfab_limits *limits);

/* chardev.c */
int icfab_chardev_init(struct icfab_fabric *fabric);
void icfab_chardev_exit(struct icfab_fabric *fabric);

/* genl.c */
int icfab_genl_init(void);
void icfab_genl_exit(void);
void icfab_genl_notify_fabric(struct icfab_fabric *fabric);

#endif /* _ICFAB_H */
