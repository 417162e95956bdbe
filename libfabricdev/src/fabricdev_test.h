/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libfabricdev's test hooks: exported (in the version script, for the
 * project's tests and the Python binding's host mode), but not part of
 * the public header. Tests build with -Isrc and include this after
 * <fabricdev.h>.
 */
#ifndef FABRICDEV_TEST_H
#define FABRICDEV_TEST_H

#include "fabricdev.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * @nranks ranks in host memory, plans run as memcpy; no module, no fabric
 * time. For checking numerics without a fabric.
 */
int __fdev_comm_init_host(unsigned int nranks, uint64_t ws_bytes,
			  struct fdev_comm **out);

/* 1 if the last all-to-all-v went in fixed slots (coll.c), 0 in two rounds. */
int __fdev_comm_a2av_slots(const struct fdev_comm *c);

/*
 * Post without ever blocking. Stops before the first descriptor whose
 * queue is full (depth descriptors not yet reaped by poll/wait); that one
 * and the rest are not posted, and nothing posted is lost. Returns the
 * number posted, -EAGAIN when the first could not be (poll or wait, then
 * post it again), or -errno for a bad descriptor.
 */
int __fdev_post_nowait(struct fdev *dev, const struct fdev_desc *d,
		       unsigned int nr);

#ifdef __cplusplus
}
#endif
#endif /* FABRICDEV_TEST_H */
