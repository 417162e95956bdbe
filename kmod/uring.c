// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: io_uring passthrough (IORING_OP_URING_CMD). ICFAB_UCMD_SUBMIT
 * carries one descriptor in the big SQE and completes when it does;
 * ICFAB_UCMD_WAIT is the io_uring form of ICFAB_IOC_WAIT. Completions go
 * through task work, so that the struct icfab_cqe is written to the
 * submitter's memory by the submitter's task. The data path is in
 * data.c; this file is the glue, and what differs between kernels.
 */
#include <linux/delay.h>
#include <linux/io_uring.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
#include <linux/io_uring/cmd.h>
#define ICFAB_URING_CANCELABLE	1
#else
#define ICFAB_URING_CANCELABLE	0
#endif

#include "icfab.h"

/* Ours in io_uring_cmd.pdu; under fabric->lock until posted. */
struct icfab_uring_pdu {
	struct icfab_req *req;		/* SUBMIT's request, or NULL */
	struct icfab_uring_result *ures;
	bool posted;			/* its result is on the way */
};

static struct icfab_uring_pdu *icfab_uring_pdu(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct icfab_uring_pdu) > sizeof(cmd->pdu));
	return (struct icfab_uring_pdu *)cmd->pdu;
}

static const void *icfab_uring_payload(struct io_uring_cmd *cmd)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

void icfab_uring_set_req(struct io_uring_cmd *cmd, struct icfab_req *req)
{
	icfab_uring_pdu(cmd)->req = req;
}

struct icfab_req *icfab_uring_get_req(struct io_uring_cmd *cmd)
{
	struct icfab_uring_pdu *pdu = icfab_uring_pdu(cmd);

	return pdu->posted ? NULL : pdu->req;
}

bool icfab_uring_posted(struct io_uring_cmd *cmd)
{
	return icfab_uring_pdu(cmd)->posted;
}

/* In the submitter's task: write the cqe, then post the CQE. */
static void icfab_uring_task_work(struct io_uring_cmd *cmd,
				  unsigned int issue_flags)
{
	struct icfab_uring_result *ures = icfab_uring_pdu(cmd)->ures;
	bool gone = current->flags & (PF_EXITING | PF_KTHREAD);
	ssize_t res = ures->res;
	u64 res2 = ures->res2;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	gone |= issue_flags & IO_URING_F_TASK_DEAD;
#endif
	/* An exiting task has no memory left to write to. */
	if (ures->cqe_addr && !gone &&
	    copy_to_user(u64_to_user_ptr(ures->cqe_addr), &ures->cqe,
			 sizeof(ures->cqe)))
		res = -EFAULT;
	/* Before the CQE: once it is posted the file may go. */
	atomic_dec(ures->holds);
	ures->release(ures);
	/*
	 * Until io_uring_cmd_done() drops it, the file has a reference the
	 * count no longer explains; a test widens that window (debugfs.c).
	 */
	if (unlikely(READ_ONCE(icfab_uring_done_delay_ms)))
		msleep(READ_ONCE(icfab_uring_done_delay_ms));
	io_uring_cmd_done(cmd, res, res2, issue_flags);
}

/* Called with the fabric lock held; takes @ures. */
void icfab_uring_post(struct io_uring_cmd *cmd,
		      struct icfab_uring_result *ures)
{
	struct icfab_uring_pdu *pdu = icfab_uring_pdu(cmd);

	pdu->posted = true;
	pdu->req = NULL;
	pdu->ures = ures;
	io_uring_cmd_complete_in_task(cmd, icfab_uring_task_work);
}

int icfab_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct icfab_ctx *ctx = cmd->file->private_data;
	struct icfab_uring_pdu *pdu = icfab_uring_pdu(cmd);
	atomic_t *holds = &ctx->uring_holds;
	/* Not zeroed on entry: the copy below writes all of it. */
	union {
		struct icfab_uring_submit s;
		struct icfab_uring_wait w;
		struct icfab_uring_batch b;
	} u __uninitialized;
	int err;

#if ICFAB_URING_CANCELABLE
	if (issue_flags & IO_URING_F_CANCEL) {
		icfab_uring_cancel(ctx, cmd);
		return 0;
	}
#endif
	if (!(issue_flags & IO_URING_F_SQE128) ||
	    !(issue_flags & IO_URING_F_CQE32))
		return -EINVAL;
	/* The SQE is shared with userspace: one copy, checked and used. */
	BUILD_BUG_ON(sizeof(u) != 80);
	memcpy(&u, icfab_uring_payload(cmd), sizeof(u));

	if (cmd->cmd_op == ICFAB_UCMD_SUBMIT_BATCH) {
		long ret;

		/*
		 * Done when submitted: its completions go to the ring, so
		 * nothing of it is left in flight for io_uring, and it
		 * needs no count, task work or cancellation.
		 */
		if (u.b.flags != ICFAB_SUBMIT_F_CQ ||
		    !icfab_reserved_zero(u.b.reserved,
					 ARRAY_SIZE(u.b.reserved)))
			return -EINVAL;
		ret = icfab_submit_descs(ctx, u64_to_user_ptr(u.b.descs),
					 u.b.nr, u.b.flags);
		if (ret < 0)
			return ret;
		/* A count is no error: posted here, not returned (6.1). */
		io_uring_cmd_done(cmd, ret, 0, issue_flags);
		return -EIOCBQUEUED;
	}

	pdu->req = NULL;
	pdu->ures = NULL;
	pdu->posted = false;
	/* Counted before it can complete; see icfab_ctx_flush(). */
	atomic_inc(holds);

	switch (cmd->cmd_op) {
	case ICFAB_UCMD_SUBMIT:
		if (u.s.reserved) {
			err = -EINVAL;
			break;
		}
		err = icfab_uring_submit(ctx, &u.s.desc, u.s.cqe_addr, cmd);
		break;
	case ICFAB_UCMD_WAIT:
		if (!u.w.min || u.w.flags ||
		    !icfab_reserved_zero(u.w.reserved,
					 ARRAY_SIZE(u.w.reserved))) {
			err = -EINVAL;
			break;
		}
		err = icfab_uring_wait(ctx, u.w.min, cmd);
		break;
	default:
		err = -ENOTTY;
	}
	if (err) {
		atomic_dec(holds);
		return err;
	}
#if ICFAB_URING_CANCELABLE
	/*
	 * Issued inline, its completion task work cannot run before we
	 * return (it runs in this task), so marking it now cannot race with
	 * io_uring_cmd_done(). From io-wq it could: such a command is
	 * cancelled by ->flush() instead.
	 */
	if (!(issue_flags & IO_URING_F_IOWQ))
		io_uring_cmd_mark_cancelable(cmd, issue_flags);
#endif
	return -EIOCBQUEUED;
}
