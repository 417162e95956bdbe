// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Multicast circuits of a communicator, for FDEV_MOE_MULTICAST.
 *
 * Each local source rank gets one circuit from its endpoint to the
 * endpoints of every other rank (one per FDEV_MC_MAX_DSTS of them: a
 * circuit names at most ICFAB_CIRCUIT_MAX_DSTS destinations, so that its
 * netlink message fits a dump's skb), opened through icfabd's socket (text
 * protocol v1, docs/SOCKET.md; ICFABD_SOCKET or /run/icfabd.sock) by the
 * process that submits over it: the one holding the device context, i.e.
 * rank 0 of a proxy communicator, or the process driving local ranks
 * (timing-only independent processes: each its own rank's, moe_mc.c).
 * With device memory every destination's workspace is bound at offset 0
 * (ICFAB_IOC_CIRCUIT_RECV), so a WRITE at remote_off lands at remote_off
 * of every other rank's workspace. Opened on the first multicast plan
 * and kept while the following plans multicast from the same sources;
 * a plan from other sources (a wave, moe_mc.c, when the routers' colours
 * cannot hold every source's tree at once) closes the ones it does not
 * use first. Closed with the communicator (the daemon also frees them
 * when the process exits). On any failure everything opened so far is
 * closed again: nothing stays half-open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "internal.h"

#define SOCK_DEFAULT	"/run/icfabd.sock"
#define SOCK_TIMEOUT_S	30

static const struct {
	const char *name;
	int err;
} enames[] = {
	{ "ENOSPC", ENOSPC }, { "ENOENT", ENOENT }, { "EINVAL", EINVAL },
	{ "EHOSTUNREACH", EHOSTUNREACH }, { "ENETDOWN", ENETDOWN },
	{ "ELOOP", ELOOP }, { "EOPNOTSUPP", EOPNOTSUPP }, { "E2BIG", E2BIG },
	{ "EBADMSG", EBADMSG }, { "EACCES", EACCES }, { "EPERM", EPERM },
	{ "EBUSY", EBUSY }, { "ENOMEM", ENOMEM }, { "EDQUOT", EDQUOT },
	{ "EUSERS", EUSERS }, { "ETIMEDOUT", ETIMEDOUT }, { "EAGAIN", EAGAIN },
	{ "EMSGSIZE", EMSGSIZE }, { "ESTALE", ESTALE }, { "ERANGE", ERANGE },
	{ "EEXIST", EEXIST }, { "ENODEV", ENODEV }, { "EIO", EIO },
	{ "ESRCH", ESRCH }, { "EINTR", EINTR }, { "EPROTO", EPROTO },
};

/* One line, without its '\n'; -EPROTO when it does not fit or is cut. */
static int read_line(int s, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(s, buf + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPROTO;
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	return -EPROTO;
}

/*
 * Connect and check the greeting. -ENOTCONN when icfabd cannot be
 * reached (no socket, nobody listening): the caller's errno for "no
 * circuit service".
 */
static const char *sock_path(void)
{
	const char *path = getenv("ICFABD_SOCKET");

	return path && *path ? path : SOCK_DEFAULT;
}

static int sock_connect(void)
{
	const char *path = sock_path();
	struct timeval tv = { SOCK_TIMEOUT_S, 0 };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char line[128];
	int s, err;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -ENOTCONN;
	}
	err = read_line(s, line, sizeof(line));
	if (!err && strcmp(line, "icfabd 1"))
		err = -EPROTONOSUPPORT;
	if (err) {
		close(s);
		return err;
	}
	return s;
}

/* Send @req (with its '\n'), read the reply line into @reply. */
static int sock_request(int s, const char *req, char *reply, size_t len)
{
	size_t n = strlen(req), off = 0;

	while (off < n) {
		ssize_t w = write(s, req + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPROTO;
		off += (size_t)w;
	}
	if (read_line(s, reply, len))
		return -EPROTO;
	if (!strncmp(reply, "ok", 2) && (!reply[2] || reply[2] == ' '))
		return 0;
	if (!strncmp(reply, "err ", 4)) {
		for (size_t i = 0; i < sizeof(enames) / sizeof(enames[0]); i++) {
			size_t l = strlen(enames[i].name);

			if (!strncmp(reply + 4, enames[i].name, l) &&
			    (reply[4 + l] == ' ' || !reply[4 + l]))
				return -enames[i].err;
		}
	}
	return -EPROTO;
}

static int circuit_close_one(int s, uint32_t id)
{
	char req[64], reply[512];

	snprintf(req, sizeof(req), "circuit-close %u\n", id);
	return sock_request(s, req, reply, sizeof(reply));
}

/* Close source @src's circuits (over @s, when connected). */
static void source_close(struct fdev_comm *c, int s, unsigned int src)
{
	unsigned int parts = fdev_mc_parts(c->nranks);

	for (unsigned int j = 0; j < parts; j++) {
		uint32_t *id = &c->mc[(size_t)src * parts + j];

		if (*id && s >= 0)
			circuit_close_one(s, *id);
		*id = 0;
	}
}

void fdev_comm_circuits_close(struct fdev_comm *c)
{
	int s;

	if (!c->mc)
		return;
	s = sock_connect();
	for (unsigned int r = 0; r < c->nranks; r++)
		source_close(c, s, r);
	if (s >= 0)
		close(s);
	/*
	 * Without the daemon the circuits go when this process exits; the
	 * bindings went with each circuit.
	 */
	free(c->mc);
	c->mc = NULL;
}

/* Say a multicast failure once per process, not once per source. */
static int said_open;

/* The @k-th rank other than @src. */
static unsigned int other_rank(unsigned int src, unsigned int k)
{
	return k < src ? k : k + 1;
}

/*
 * Circuit @part from @src to the ranks of that part: its id, or -errno.
 * -ENOSPC (the colours are taken) and -EDQUOT (the requester's user
 * holds as many circuits as the module's max_uid_circuits allows) are
 * said only when @quiet is not set: the caller can still try fewer
 * sources at once.
 */
static int circuit_open_one(struct fdev_comm *c, int s, unsigned int src,
			    unsigned int part, int quiet, uint32_t *id)
{
	unsigned int k0 = part * FDEV_MC_MAX_DSTS, k1 = k0 + FDEV_MC_MAX_DSTS;
	size_t cap = 32 + 12ULL * FDEV_MC_MAX_DSTS, n;
	char *req = malloc(cap), reply[512];
	const char *p;
	int err;

	if (!req)
		return -ENOMEM;
	if (k1 > c->nranks - 1)
		k1 = c->nranks - 1;
	n = (size_t)snprintf(req, cap, "circuit-open %u", c->ep[src]);
	for (unsigned int k = k0; k < k1; k++)
		n += (size_t)snprintf(req + n, cap - n, " %u",
				      c->ep[other_rank(src, k)]);
	snprintf(req + n, cap - n, "\n");
	err = sock_request(s, req, reply, sizeof(reply));
	free(req);
	if (err) {
		if (!(quiet && (err == -ENOSPC || err == -EDQUOT)) &&
		    !said_open++)
			fprintf(stderr, "libfabricdev: multicast: icfabd refused the circuit from rank %u (endpoint %u) to %u of the other %u ranks: %s\n",
				src, c->ep[src], k1 - k0, c->nranks - 1,
				err == -EPROTO && strncmp(reply, "err ", 4) ?
				"no reply" : reply);
		return err;
	}
	p = strstr(reply, " id=");
	if (!p || !(*id = (uint32_t)strtoul(p + 4, NULL, 10)))
		return -EPROTO;
	return 0;
}

static int circuit_bind(struct fdev_comm *c, uint32_t id, unsigned int d)
{
	struct icfab_circuit_recv cr = {
		.circuit = id,
		.endpoint = c->ep[d],
		.region = c->ws[d - c->first].handle,
	};

	return ioctl(fdev_fd(c->dev), ICFAB_IOC_CIRCUIT_RECV, &cr) ? -errno : 0;
}

/* Open and bind every part of @src's circuits. */
static int source_open(struct fdev_comm *c, int s, unsigned int src,
		       int quiet)
{
	unsigned int parts = fdev_mc_parts(c->nranks);
	int timing = fdev_comm_timing_only(c), err = 0;

	for (unsigned int j = 0; j < parts && !err; j++) {
		uint32_t *id = &c->mc[(size_t)src * parts + j];

		err = circuit_open_one(c, s, src, j, quiet, id);
		for (unsigned int k = j * FDEV_MC_MAX_DSTS;
		     !err && !timing && k < (j + 1) * FDEV_MC_MAX_DSTS &&
		     k < c->nranks - 1; k++)
			err = circuit_bind(c, *id, other_rank(src, k));
	}
	return err;
}

/* May this communicator hold circuits at all? */
static int circuits_usable(struct fdev_comm *c)
{
	struct fdev_info info = { 0 };
	int err;

	if (!c->dev)
		return -EINVAL;
	/*
	 * Every destination must bind the source's circuit, and only the
	 * process holding both can: one process driving every rank (local,
	 * or the proxy's rank 0). Timing-only descriptors need no binding:
	 * there each process may open its own ranks' circuits.
	 */
	if (!fdev_comm_timing_only(c) && c->nlocal != c->nranks)
		return -EOPNOTSUPP;
	err = fdev_query(c->dev, &info);
	if (err)
		return err;
	if (!(info.features & FDEV_F_CIRCUITS))
		return -EOPNOTSUPP;
	return c->nranks < 2 ? -EINVAL : 0;
}

/* Which local sources multicast in @p: their count, marked in @need. */
static unsigned int plan_sources(const struct fdev_comm *c,
				 const struct fdev_plan *p, uint8_t *need)
{
	unsigned int n = 0;

	for (size_t i = 0; i < p->nx; i++) {
		uint32_t src = p->x[i].src;

		if (p->x[i].dst == FDEV_PLAN_MCAST && src >= c->first &&
		    src < c->first + c->nlocal && !need[src]) {
			need[src] = 1;
			n++;
		}
	}
	return n;
}

int fdev_comm_circuits_open(struct fdev_comm *c, const struct fdev_plan *p)
{
	unsigned int parts = fdev_mc_parts(c->nranks), nsrc, missing = 0;
	uint8_t *need;
	int s, err = 0;

	if (!c->mc) {
		err = circuits_usable(c);
		if (err)
			return err;
		c->mc = calloc((size_t)c->nranks * parts, sizeof(*c->mc));
	}
	need = calloc(c->nranks, 1);
	if (!c->mc || !need) {
		free(need);
		fdev_comm_circuits_close(c);
		return -ENOMEM;
	}
	nsrc = plan_sources(c, p, need);
	for (unsigned int r = 0; r < c->nranks; r++)
		missing += need[r] && !c->mc[(size_t)r * parts];
	if (!missing) {
		free(need);
		return 0;
	}
	s = sock_connect();
	if (s < 0) {
		if (!said_open++)
			fprintf(stderr, "libfabricdev: multicast: its circuits are opened through icfabd, not reachable at %s (ICFABD_SOCKET): %s\n",
				sock_path(), strerror(-s));
		free(need);
		fdev_comm_circuits_close(c);
		return s;
	}
	/* Other sources' colours first: the routers may not hold both. */
	for (unsigned int r = 0; r < c->nranks; r++)
		if (!need[r])
			source_close(c, s, r);
	for (unsigned int r = 0; r < c->nranks && !err; r++)
		if (need[r] && !c->mc[(size_t)r * parts])
			err = source_open(c, s, r, nsrc > 1 || c->multi);
	close(s);
	free(need);
	if (err)
		fdev_comm_circuits_close(c);
	return err;
}
