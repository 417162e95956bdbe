// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

#include "uring_util.h"

struct io_uring_sqe *ucmd(struct io_uring *ring, int fd, uint32_t op,
			  const void *payload, uint64_t user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return NULL;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	memcpy(sqe->cmd, payload, 80);
	sqe->user_data = user_data;
	return sqe;
}

int usubmit(struct io_uring *ring, int fd, struct icfab_desc d,
	    struct icfab_cqe *rec, uint64_t user_data)
{
	struct icfab_uring_submit us = { .desc = d, .cqe_addr = (uintptr_t)rec };

	return ucmd(ring, fd, ICFAB_UCMD_SUBMIT, &us, user_data) ? 0 : -EBUSY;
}

int uwait(struct io_uring *ring, int fd, uint32_t min, uint64_t user_data)
{
	struct icfab_uring_wait w = { .min = min };

	return ucmd(ring, fd, ICFAB_UCMD_WAIT, &w, user_data) ? 0 : -EBUSY;
}
