// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Operations by name in the trace.
 *
 * With FDEV_TRACE_MARKER naming a tracefs trace_marker (icfabctl trace
 * sets it to its own instance's for the command it runs), every
 * collective, dispatch, combine and shift that ran on the fabric writes
 * one line there when it returns:
 *
 *	icfab_op ep=E ranks=N name=NAME op=OP start_ps=S end_ps=T status=ERR
 *
 * E is the context's first rank's endpoint, N the ranks it drove, OP the
 * library's call (all_to_all_v, moe_dispatch, ...), NAME the label the
 * caller gave (fdev_comm_set_label(), e.g. the torch backend's
 * "all_to_all_single") or else OP, and S..T the fabric time from the
 * start of the call's first plan to the end of its last, in the
 * context's clock: the emulated times, not wall time. A call nested in
 * another is part of the outer one. Without the variable, or when the
 * file cannot be opened for writing (tracefs is root's), nothing is
 * written and nothing else changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int marker_fd = -1;
static pthread_once_t marker_once = PTHREAD_ONCE_INIT;

static void marker_open(void)
{
	const char *path = getenv("FDEV_TRACE_MARKER");

	if (path && *path)
		marker_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
}

void fdev_op_begin(struct fdev_comm *c, const char *op)
{
	if (c->op_depth++)
		return;
	c->op = op;
	c->op_ran = 0;
}

void fdev_op_span(struct fdev_comm *c, uint64_t t0, uint64_t t1)
{
	if (!c->op_ran)
		c->op_t0 = t0;
	c->op_ran = 1;
	c->op_t1 = t1;
}

int fdev_op_end(struct fdev_comm *c, int err)
{
	char line[192];
	int n;

	if (--c->op_depth || !c->op_ran)
		return err;
	pthread_once(&marker_once, marker_open);
	if (marker_fd < 0)
		return err;
	n = snprintf(line, sizeof(line),
		     "icfab_op ep=%" PRIu32 " ranks=%u name=%s op=%s start_ps=%"
		     PRIu64 " end_ps=%" PRIu64 " status=%d\n",
		     c->ep[c->proxy && c->px ? 0 : c->first],
		     c->proxy && c->px ? c->px->nlocal : c->nlocal,
		     c->label[0] ? c->label : c->op, c->op, c->op_t0, c->op_t1,
		     err);
	/* One write: tracefs keeps it as one event. Tracing never fails a call. */
	if (n > 0 && (size_t)n < sizeof(line)) {
		ssize_t w = write(marker_fd, line, (size_t)n);

		(void)w;
	}
	return err;
}

int fdev_comm_set_label(struct fdev_comm *c, const char *label)
{
	size_t i;

	if (!c)
		return -EINVAL;
	if (!label)
		label = "";
	if (strlen(label) >= sizeof(c->label))
		return -ENAMETOOLONG;
	/* A name is one field of the line: no blanks, no '='. */
	for (i = 0; label[i]; i++)
		if (label[i] <= ' ' || label[i] == '=' || label[i] > '~')
			return -EINVAL;
	memcpy(c->label, label, i + 1);
	return 0;
}
