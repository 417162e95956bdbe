// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the character device /dev/icfabN and its ioctls.
 */
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "icfab.h"

static int icfab_open(struct inode *inode, struct file *file)
{
	/* misc_open() left the miscdevice in private_data. */
	struct miscdevice *misc = file->private_data;
	struct icfab_fabric *fabric = container_of(misc, struct icfab_fabric,
						   misc);
	bool exempt = file_ns_capable(file, &init_user_ns, CAP_SYS_RESOURCE);
	u32 uid = from_kuid_munged(&init_user_ns, file->f_cred->euid);
	struct icfab_ctx *ctx;
	int err;

	err = icfab_quota_charge(uid, ICFAB_QUOTA_CONTEXTS, 1, exempt);
	if (err)
		return err;
	ctx = icfab_ctx_create(fabric);
	if (!ctx) {
		icfab_quota_uncharge(uid, ICFAB_QUOTA_CONTEXTS, 1);
		return -ENOMEM;
	}
	ctx->uid = uid;
	ctx->quota_exempt = exempt;
	ctx->net_admin = file_ns_capable(file, &init_user_ns, CAP_NET_ADMIN);

	atomic_inc(&fabric->nr_contexts);
	file->private_data = ctx;
	return 0;
}

static int icfab_release(struct inode *inode, struct file *file)
{
	struct icfab_ctx *ctx = file->private_data;
	struct icfab_fabric *fabric = ctx->fabric;
	u32 uid = ctx->uid;

	icfab_circuit_recv_ctx_gone(ctx);
	icfab_ctx_destroy(ctx);
	atomic_dec(&fabric->nr_contexts);
	icfab_quota_uncharge(uid, ICFAB_QUOTA_CONTEXTS, 1);
	return 0;
}

/*
 * Every close of a descriptor: the context may have become one that
 * nobody can submit to (see icfab_ctx_flush()).
 */
static int icfab_flush(struct file *file, fl_owner_t id)
{
	icfab_ctx_flush(file->private_data, file);
	return 0;
}

static int icfab_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct icfab_ctx *ctx = file->private_data;

	/* Offset 0 is no region's (handles start at 1): the ring's. */
	if (vma->vm_pgoff < (1UL << (ICFAB_REGION_MMAP_SHIFT - PAGE_SHIFT)))
		return icfab_cq_mmap(smp_load_acquire(&ctx->cq), ctx, vma);
	return icfab_region_mmap(ctx, vma);
}

static long icfab_ioctl_info(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric_state st;
	struct icfab_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags || !icfab_reserved_zero(info.reserved,
					       ARRAY_SIZE(info.reserved)))
		return -EINVAL;

	icfab_fabric_snapshot(ctx->fabric, &st, false);

	memset(&info, 0, sizeof(info));
	info.abi_version = ICFAB_ABI_VERSION;
	info.features = ICFAB_F_SUPPORTED;
	info.fabric_id = st.id;
	info.time_mode = st.time_mode;
	info.segment_size = st.segment_size;
	info.dilation = st.dilation;
	info.now_ps = st.now_ps;
	info.generation = st.generation;
	icfab_fill_limits(&info.limits, st.segment_size);

	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long icfab_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct icfab_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case ICFAB_IOC_INFO:
		return icfab_ioctl_info(ctx, uarg);
	case ICFAB_IOC_ATTACH:
		return icfab_ioctl_attach(ctx, uarg);
	case ICFAB_IOC_QUEUE_CREATE:
		return icfab_ioctl_queue_create(ctx, uarg);
	case ICFAB_IOC_QUEUE_DESTROY:
		return icfab_ioctl_queue_destroy(ctx, uarg);
	case ICFAB_IOC_SUBMIT:
		return icfab_ioctl_submit(ctx, uarg);
	case ICFAB_IOC_WAIT:
		return icfab_ioctl_wait(ctx, uarg);
	case ICFAB_IOC_CQ_SETUP:
		return icfab_ioctl_cq_setup(ctx, uarg);
	case ICFAB_IOC_CQ_WAIT:
		return icfab_ioctl_cq_wait(ctx, uarg);
	case ICFAB_IOC_WAIT_END:
		return icfab_ioctl_wait_end(ctx);
	case ICFAB_IOC_REGION_ALLOC:
		return icfab_ioctl_region_alloc(ctx, uarg);
	case ICFAB_IOC_REGION_FREE: {
		long ret = icfab_ioctl_region_free(ctx, uarg);

		if (!ret)
			icfab_circuit_recv_prune(ctx);
		return ret;
	}
	case ICFAB_IOC_REGION_EXPORT:
		return icfab_ioctl_region_export(ctx, uarg);
	case ICFAB_IOC_REGION_IMPORT:
		return icfab_ioctl_region_import(ctx, uarg);
	case ICFAB_IOC_CIRCUIT_RECV:
		return icfab_ioctl_circuit_recv(ctx, uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations icfab_fops = {
	.owner		= THIS_MODULE,
	.open		= icfab_open,
	.release	= icfab_release,
	.flush		= icfab_flush,
	.mmap		= icfab_mmap,
	.uring_cmd	= icfab_uring_cmd,
	.unlocked_ioctl	= icfab_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

int icfab_chardev_init(struct icfab_fabric *fabric)
{
	int err;

	err = icfab_region_init(fabric);
	if (err)
		return err;
	fabric->misc.minor = MISC_DYNAMIC_MINOR;
	fabric->misc.name = fabric->name;
	fabric->misc.fops = &icfab_fops;
	/*
	 * Root and the group udev gives the node (packaging/60-icfab.rules:
	 * root:icfab): a fabric user can stall everyone's virtual time
	 * (docs/SECURITY.md), so not every local user is one.
	 */
	fabric->misc.mode = 0660;

	err = misc_register(&fabric->misc);
	if (err)
		goto err_region_exit;
	return 0;

err_region_exit:
	icfab_region_exit(fabric);
	return err;
}

void icfab_chardev_exit(struct icfab_fabric *fabric)
{
	misc_deregister(&fabric->misc);
	icfab_region_exit(fabric);
}
