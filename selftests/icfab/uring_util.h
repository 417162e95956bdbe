/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ICFAB_UCMD_SUBMIT and ICFAB_UCMD_WAIT as io_uring SQEs, for the tests
 * that drive the data path through io_uring (liburing; SQE128 rings).
 */
#ifndef ICFAB_SELFTEST_URING_UTIL_H
#define ICFAB_SELFTEST_URING_UTIL_H

#include <stdint.h>
#include <liburing.h>

#include <linux/icfab.h>

/* An IORING_OP_URING_CMD SQE carrying @op and its 80-byte @payload. */
struct io_uring_sqe *ucmd(struct io_uring *ring, int fd, uint32_t op,
			  const void *payload, uint64_t user_data);
/* Queue one descriptor; its record goes to @rec too. 0, or -EBUSY. */
int usubmit(struct io_uring *ring, int fd, struct icfab_desc d,
	    struct icfab_cqe *rec, uint64_t user_data);
/* Queue a WAIT for @min completions. 0, or -EBUSY (the SQ is full). */
int uwait(struct io_uring *ring, int fd, uint32_t min, uint64_t user_data);

#endif
