// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl fault link|node, icfabctl ocs list|apply: requests to icfabd's
 * socket (docs/SOCKET.md), administrators only; the daemon changes its
 * model, reroutes and commits. icfabctl probe: one timed transfer on the
 * device, to see what traffic meets (a wait on a dark circuit, or the
 * errno of a failed path).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "icfabctl.h"
#include <icfab/proto.h>

/* Build "verb arg..." from argv; every word one token. */
static int build_req(const struct icfabctl_cmd *cmd, char *req, size_t len,
		     const char *verb, int argc, char **argv)
{
	size_t off = snprintf(req, len, "%s", verb);
	int i;

	for (i = 0; i < argc; i++) {
		if (!*argv[i] || strpbrk(argv[i], " \t\n"))
			return icfabctl_usage_error(cmd, "'%s' is not one word",
						    argv[i]);
		off += snprintf(req + off, len - off, " %s", argv[i]);
		if (off >= len - 1)
			return icfabctl_usage_error(cmd, "the request is longer than %u bytes",
						    PROTO_LINE_MAX - 1);
	}
	return ICFABCTL_EXIT_OK;
}

/*
 * One request, "verb word...": print its first line, and with @lines the
 * count=N more.
 */
static int ask(const struct icfabctl_cmd *cmd, const char *path,
	       const char *verb, int argc, char **argv, const char *what,
	       bool lines)
{
	char req[PROTO_LINE_MAX], line[PROTO_LINE_MAX], *rest, count[16];
	struct sock_client sc;
	uint32_t n = 0, i;
	int ret;

	ret = build_req(cmd, req, sizeof(req), verb, argc, argv);
	if (ret)
		return ret;
	ret = sock_connect(&sc, socket_path(path));
	if (ret)
		return ret;
	ret = sock_request(&sc, req, line, sizeof(line), &rest, what);
	if (ret)
		goto out;
	if (lines && proto_value(rest, "count", count, sizeof(count)) &&
	    icfabctl_parse_u32(count, &n)) {
		icfabctl_warn("%s: bad count '%s' from icfabd", what, count);
		ret = ICFABCTL_EXIT_ERROR;
		goto out;
	}
	printf("%s: %s\n", what, *rest ? rest : "ok");
	for (i = 0; i < n; i++) {
		if (sock_line(&sc, line, sizeof(line))) {
			icfabctl_warn("%s: icfabd's reply ended early", what);
			ret = ICFABCTL_EXIT_ERROR;
			break;
		}
		printf("  %s\n", line);
	}
out:
	sock_close(&sc);
	return ret;
}

/*
 * The socket options (-S PATH), then @min .. @max arguments; fewer is
 * "<missing>", more "too many arguments". Returns an exit code.
 */
static int sock_args(const struct icfabctl_cmd *cmd, int *argc, char ***argv,
		     const char **path, int min, int max, const char *missing)
{
	int ret = sock_parse_opts(cmd, argc, argv, false, NULL, path);

	if (ret)
		return ret;
	if (*argc < min)
		return icfabctl_usage_error(cmd, "%s", missing);
	if (*argc > max)
		return icfabctl_usage_error(cmd, "too many arguments");
	return 0;
}

/* fault link, fault node: the command's name is the request's kind. */
static int cmd_fault(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		     int argc, char **argv)
{
	const char *kind = cmd->name;
	const char *path = NULL;
	char what[96];
	int ret;

	(void)ctl;
	snprintf(what, sizeof(what), "give the %s and down or up%s", kind,
		 strcmp(kind, "link") ? "" : " (or degrade PERMILLE)");
	ret = sock_args(cmd, &argc, &argv, &path, 2, 3, what);
	if (ret)
		return ret;
	snprintf(what, sizeof(what), "%s %s %s", kind, argv[0], argv[1]);
	{
		char *words[4] = { (char *)kind, argv[0], argv[1],
				   argc > 2 ? argv[2] : NULL };

		return ask(cmd, path, "fault", argc + 1, words, what, false);
	}
}

ICFABCTL_COMMAND("fault", "link", "[-S PATH] ID down|up|degrade PERMILLE",
		 cmd_fault,
		 "Ask icfabd to fail, restore or degrade a cable (link ID and\n"
		 "\tits other direction); routes are recomputed around it and\n"
		 "\tcommitted live. Administrators only.");

ICFABCTL_COMMAND("fault", "node", "[-S PATH] NODE down|up", cmd_fault,
		 "Ask icfabd to fail or restore every link of a node.\n"
		 "\tAdministrators only.");

static int cmd_ocs_list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			int argc, char **argv)
{
	const char *path = NULL;
	int ret;

	(void)ctl;
	ret = sock_args(cmd, &argc, &argv, &path, 0, 0, "");
	if (ret)
		return ret;
	return ask(cmd, path, "ocs list", 0, NULL, "ocs list", true);
}

ICFABCTL_COMMAND("ocs", "list", "[-S PATH]", cmd_ocs_list,
		 "The topology's optical circuit switches: permutation,\n"
		 "\tdelay, policy, circuits, and until when they are dark.");

static int cmd_ocs_apply(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	const char *path = NULL;
	char what[64];
	int ret;

	(void)ctl;
	ret = sock_args(cmd, &argc, &argv, &path, 2, INT_MAX,
			"give the OCS and IN:OUT pairs or a full permutation");
	if (ret)
		return ret;
	snprintf(what, sizeof(what), "ocs %s", argv[0]);
	return ask(cmd, path, "ocs apply", argc, argv, what, true);
}

ICFABCTL_COMMAND("ocs", "apply", "[-S PATH] NAME IN:OUT...|OUT...",
		 cmd_ocs_apply,
		 "Reconfigure an OCS (pairs, or a full permutation): the\n"
		 "\tchanged circuits go dark for its delay, then come up;\n"
		 "\tprints the phases in fabric time. Administrators only.");

/*
 * One timing-only WRITE from SRC to DST, after holding the context
 * attached for SECONDS (so that commits meanwhile are live ones).
 */
static int cmd_probe(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		     int argc, char **argv)
{
	const char *dev = ctl->device ? ctl->device : "/dev/icfab0";
	uint32_t src, dst, wait_s = 0;
	uint64_t bytes = 65536;
	struct icfab_cqe cqe;
	struct icfab_desc d;
	int fd, ret = ICFABCTL_EXIT_OK;

	if (argc >= 2 && !strcmp(argv[0], "-w")) {
		if (icfabctl_parse_u32(argv[1], &wait_s))
			return icfabctl_usage_error(cmd, "-w: '%s' is not a number of seconds",
						    argv[1]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || argc > 3)
		return icfabctl_usage_error(cmd, "give SRC and DST endpoint ids");
	if (icfabctl_parse_u32(argv[0], &src) || icfabctl_parse_u32(argv[1], &dst))
		return icfabctl_usage_error(cmd, "SRC and DST are endpoint ids");
	if (argc == 3) {
		char *end;

		errno = 0;
		bytes = strtoull(argv[2], &end, 10);
		if (errno || *end || !bytes)
			return icfabctl_usage_error(cmd, "'%s' is not a byte count",
						    argv[2]);
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return icfabctl_fail(errno, "%s", dev);
	{
		struct icfab_attach a = { .endpoint = src };
		struct icfab_queue_create qc = { .endpoint = src, .depth = 4 };
		struct icfab_submit sub = { .descs = (uintptr_t)&d, .nr = 1 };
		struct icfab_wait w = { .cqes = (uintptr_t)&cqe, .max = 1, .min = 1 };

		if (ioctl(fd, ICFAB_IOC_ATTACH, &a)) {
			ret = icfabctl_fail(errno, "attaching to endpoint %u", src);
			goto out;
		}
		if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc)) {
			ret = icfabctl_fail(errno, "a queue on endpoint %u", src);
			goto out;
		}
		if (wait_s) {
			fprintf(stderr, "icfabctl: probe: attached to %u, waiting %u s\n",
				src, wait_s);
			sleep(wait_s);
		}
		memset(&d, 0, sizeof(d));
		d.op = ICFAB_OP_WRITE;
		d.flags = ICFAB_DESC_F_TIMING_ONLY;
		d.queue = qc.queue;
		d.peer = dst;
		d.len = bytes;
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &sub) != 1) {
			int err = errno;

			/* Refused before it started: a status all the same. */
			printf("probe %u -> %u bytes=%" PRIu64 " status=%s at submit (%s)\n",
			       src, dst, bytes, proto_errname(err), strerror(err));
			ret = ICFABCTL_EXIT_ERROR;
			goto out;
		}
		if (ioctl(fd, ICFAB_IOC_WAIT, &w) || w.nr != 1) {
			ret = icfabctl_fail(errno, "waiting for %u -> %u", src, dst);
			goto out;
		}
	}
	{
		int st = cqe.status < 0 ? -cqe.status : cqe.status;

		if (ctl->json)
			printf("{\"src\":%u,\"dst\":%u,\"bytes\":%" PRIu64 ",\"status\":%d,\"error\":\"%s\",\"start_ps\":%llu,\"finish_ps\":%llu,\"queued_ps\":%llu}\n",
			       src, dst, bytes, (int)cqe.status,
			       st ? proto_errname(st) : "",
			       (unsigned long long)cqe.start_ps,
			       (unsigned long long)cqe.finish_ps,
			       (unsigned long long)cqe.queued_ps);
		else
			printf("probe %u -> %u bytes=%" PRIu64 " status=%s start_ps=%llu finish_ps=%llu queued_ps=%llu\n",
			       src, dst, bytes, st ? proto_errname(st) : "ok",
			       (unsigned long long)cqe.start_ps,
			       (unsigned long long)cqe.finish_ps,
			       (unsigned long long)cqe.queued_ps);
		ret = st ? ICFABCTL_EXIT_ERROR : ICFABCTL_EXIT_OK;
	}
out:
	close(fd);
	return ret;
}

ICFABCTL_COMMAND(NULL, "probe", "[-w SECONDS] SRC DST [BYTES]", cmd_probe,
		 "One timing-only transfer between endpoint ids on -d DEV;\n"
		 "\tprints its status (errno name), start, finish and queued\n"
		 "\tps. Exits 1 when the transfer failed.");
