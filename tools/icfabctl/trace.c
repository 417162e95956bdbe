// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl trace: record the icfab tracepoints while a command runs and
 * write a Chrome/Perfetto trace-event JSON timeline (ui.perfetto.dev).
 *
 *	icfabctl [-f FABRIC] trace -o FILE.json [-b KB] -- CMD [ARGS...]
 *
 * It uses a tracefs instance of its own (instances/icfabctl-PID), so the
 * global trace buffer and other tracers are left alone: enables
 * events/icfab with a filter on the fabric, runs CMD, reads trace_pipe
 * while it runs and drains it after, and removes the instance.
 *
 * The timeline: process "links" has one track per link, a slice per
 * segment from its departure to its last byte out (link transmit
 * events; they never overlap, a link being a FIFO server); process
 * "queues" has one track per queue, a slice per transfer from its
 * submission to its completion. Transfers of one queue can overlap (a
 * queue holds many in flight), so a queue gets as many tracks as it had
 * transfers overlapping at once, named "... queue Q", "... queue Q #2".
 * Fabric time in ps becomes JSON microseconds, exact (six decimals).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "icfabctl.h"

struct xfer {
	uint64_t key, bytes, submit_ps, start_ps, finish_ps, queued_ps;
	uint32_t src, dst;
	int status;
	uint32_t tid;		/* assigned track */
};

struct recorder {
	FILE *out;
	uint32_t fabric;
	struct icfab_json j;
	/* links seen, for their track names */
	uint8_t *links_seen;
	uint32_t links_cap;
	struct xfer *xfers;
	size_t nr_xfers, xfers_cap;
	uint64_t nr_submit, nr_xmit, nr_lost;
	char line[4096];
	size_t line_len;
	int err;		/* first -errno */
};

/* Exact ps -> µs: "123.456789". */
static void put_us(FILE *f, uint64_t ps)
{
	fprintf(f, "%" PRIu64 ".%06" PRIu64, ps / 1000000, ps % 1000000);
}

/* Where the value of "name=" starts in @s (a tracepoint's line), or NULL. */
static const char *field_at(const char *s, const char *name)
{
	size_t n = strlen(name);
	const char *p = s;

	while ((p = strstr(p, name))) {
		if ((p == s || p[-1] == ' ') && p[n] == '=')
			return p + n + 1;
		p += n;
	}
	return NULL;
}

static int field(const char *s, const char *name, uint64_t *v)
{
	const char *p = field_at(s, name);
	char *end;

	if (!p || *p == '-')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 0);
	return errno || end == p ? -1 : 0;
}

static int field_int(const char *s, const char *name, int *v)
{
	const char *p = field_at(s, name);
	char *end;
	long l;

	if (!p)
		return -1;
	errno = 0;
	l = strtol(p, &end, 10);
	if (errno || end == p || l < -4096 || l > 0)
		return -1;
	*v = (int)l;
	return 0;
}

static void json_sep(struct recorder *r)
{
	/* The writer's comma bookkeeping for a raw object in the array. */
	if (r->j.need_comma[r->j.depth])
		fputc(',', r->out);
	r->j.need_comma[r->j.depth] = true;
	fputc('\n', r->out);
}

static void on_xmit(struct recorder *r, const char *s)
{
	uint64_t fab, link, key, seg, hop, bytes, ready, depart, done;

	if (field(s, "fabric", &fab) || field(s, "link", &link) ||
	    field(s, "key", &key) || field(s, "seg", &seg) ||
	    field(s, "hop", &hop) || field(s, "bytes", &bytes) ||
	    field(s, "ready_ps", &ready) || field(s, "depart_ps", &depart) ||
	    field(s, "done_ps", &done) || link > UINT32_MAX) {
		r->err = r->err ?: -EBADMSG;
		return;
	}
	if (fab != r->fabric)
		return;
	if (link >= r->links_cap) {
		uint32_t cap = (uint32_t)link + 64;
		uint8_t *p = realloc(r->links_seen, cap);

		if (!p) {
			r->err = r->err ?: -ENOMEM;
			return;
		}
		memset(p + r->links_cap, 0, cap - r->links_cap);
		r->links_seen = p;
		r->links_cap = cap;
	}
	r->links_seen[link] = 1;
	r->nr_xmit++;
	json_sep(r);
	fprintf(r->out, "{\"name\":\"seg\",\"cat\":\"link\",\"ph\":\"X\","
		"\"pid\":1,\"tid\":%" PRIu64 ",\"ts\":", link);
	put_us(r->out, depart);
	fputs(",\"dur\":", r->out);
	put_us(r->out, done - depart);
	fprintf(r->out, ",\"args\":{\"key\":\"0x%" PRIx64 "\",\"seg\":%" PRIu64
		",\"hop\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ready_ps\":%" PRIu64
		",\"depart_ps\":%" PRIu64 ",\"done_ps\":%" PRIu64
		",\"queued_ps\":%" PRIu64 "}}",
		key, seg, hop, bytes, ready, depart, done, depart - ready);
}

static void on_complete(struct recorder *r, const char *s)
{
	uint64_t fab, key, src, dst, bytes, sub, start, fin, queued;
	struct xfer *x;
	int status;

	if (field(s, "fabric", &fab) || field(s, "key", &key) ||
	    field(s, "src", &src) || field(s, "dst", &dst) ||
	    field(s, "bytes", &bytes) || field_int(s, "status", &status) ||
	    field(s, "submit_ps", &sub) || field(s, "start_ps", &start) ||
	    field(s, "finish_ps", &fin) || field(s, "queued_ps", &queued)) {
		r->err = r->err ?: -EBADMSG;
		return;
	}
	if (fab != r->fabric)
		return;
	if (r->nr_xfers == r->xfers_cap) {
		size_t cap = r->xfers_cap ? 2 * r->xfers_cap : 1024;
		void *p = realloc(r->xfers, cap * sizeof(*r->xfers));

		if (!p) {
			r->err = r->err ?: -ENOMEM;
			return;
		}
		r->xfers = p;
		r->xfers_cap = cap;
	}
	x = &r->xfers[r->nr_xfers++];
	*x = (struct xfer){
		.key = key, .bytes = bytes, .submit_ps = sub, .start_ps = start,
		.finish_ps = fin, .queued_ps = queued, .src = (uint32_t)src,
		.dst = (uint32_t)dst, .status = status,
	};
}

static void on_line(struct recorder *r, const char *s)
{
	const char *ev;

	if (strstr(s, "LOST") && strstr(s, "EVENTS]")) {
		const char *p = strstr(s, "[LOST ");

		r->nr_lost += p ? strtoull(p + 6, NULL, 10) : 1;
		return;
	}
	if ((ev = strstr(s, " icfab_link_xmit: ")))
		on_xmit(r, ev + 17);
	else if ((ev = strstr(s, " icfab_complete: ")))
		on_complete(r, ev + 16);
	else if (strstr(s, " icfab_submit: "))
		r->nr_submit++;
}

static void feed(struct recorder *r, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			r->line[r->line_len] = '\0';
			on_line(r, r->line);
			r->line_len = 0;
		} else if (r->line_len + 1 < sizeof(r->line)) {
			r->line[r->line_len++] = buf[i];
		}
	}
}

/* Read what trace_pipe holds now. 0, or -errno. */
static int drain(struct recorder *r, int fd)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			feed(r, buf, (size_t)n);
			continue;
		}
		if (n == 0 || errno == EAGAIN)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

static int cmp_submit(const void *a, const void *b)
{
	const struct xfer *x = a, *y = b;

	if (x->submit_ps != y->submit_ps)
		return x->submit_ps < y->submit_ps ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Queue tracks: per queue, lanes so that no two slices of one overlap. */
struct lane {
	uint64_t queue;		/* key >> 32 */
	uint32_t nth;		/* 1, 2, ... within the queue */
	uint64_t end_ps;
};

static int write_xfers(struct recorder *r)
{
	struct lane *lanes = NULL;
	size_t nr_lanes = 0, i, l;

	qsort(r->xfers, r->nr_xfers, sizeof(*r->xfers), cmp_submit);
	for (i = 0; i < r->nr_xfers; i++) {
		struct xfer *x = &r->xfers[i];
		uint64_t q = x->key >> 32;
		uint32_t nth = 0;

		for (l = 0; l < nr_lanes; l++) {
			if (lanes[l].queue != q)
				continue;
			nth = lanes[l].nth;
			if (lanes[l].end_ps <= x->submit_ps)
				break;
		}
		if (l == nr_lanes) {
			void *p = realloc(lanes, (nr_lanes + 1) * sizeof(*lanes));

			if (!p) {
				free(lanes);
				return -ENOMEM;
			}
			lanes = p;
			lanes[l] = (struct lane){ .queue = q, .nth = nth + 1 };
			nr_lanes++;
			json_sep(r);
			fprintf(r->out, "{\"name\":\"thread_name\",\"ph\":\"M\","
				"\"pid\":2,\"tid\":%zu,\"args\":{\"name\":"
				"\"ep %" PRIu64 " queue %" PRIu64, l,
				q >> 8, q & 0xff);
			if (nth)
				fprintf(r->out, " #%" PRIu32, nth + 1);
			fputs("\"}}", r->out);
			json_sep(r);
			fprintf(r->out, "{\"name\":\"thread_sort_index\","
				"\"ph\":\"M\",\"pid\":2,\"tid\":%zu,\"args\":"
				"{\"sort_index\":%" PRIu64 "}}", l,
				q << 12 | (nth & 0xfff));
		}
		lanes[l].end_ps = x->finish_ps > x->submit_ps ?
				  x->finish_ps : x->submit_ps;
		json_sep(r);
		fprintf(r->out, "{\"name\":\"%" PRIu32 "->%" PRIu32
			"\",\"cat\":\"xfer\",\"ph\":\"X\",\"pid\":2,"
			"\"tid\":%zu,\"ts\":", x->src, x->dst, l);
		put_us(r->out, x->submit_ps);
		fputs(",\"dur\":", r->out);
		put_us(r->out, x->finish_ps - x->submit_ps);
		fprintf(r->out, ",\"args\":{\"key\":\"0x%" PRIx64
			"\",\"bytes\":%" PRIu64 ",\"status\":%d,\"submit_ps\":%"
			PRIu64 ",\"start_ps\":%" PRIu64 ",\"finish_ps\":%" PRIu64
			",\"queued_ps\":%" PRIu64 "}}", x->key, x->bytes,
			x->status, x->submit_ps, x->start_ps, x->finish_ps,
			x->queued_ps);
	}
	free(lanes);
	return 0;
}

static void write_tail(struct recorder *r)
{
	uint32_t i;

	json_sep(r);
	fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
	      "\"args\":{\"name\":\"links\"}}", r->out);
	json_sep(r);
	fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,"
	      "\"args\":{\"name\":\"queues\"}}", r->out);
	for (i = 0; i < r->links_cap; i++) {
		if (!r->links_seen[i])
			continue;
		json_sep(r);
		fprintf(r->out, "{\"name\":\"thread_name\",\"ph\":\"M\","
			"\"pid\":1,\"tid\":%" PRIu32 ",\"args\":{\"name\":"
			"\"link %" PRIu32 "\"}}", i, i);
	}
	json_end_array(&r->j);
	json_begin_object(&r->j, "otherData");
	json_u64(&r->j, "fabric", r->fabric);
	json_u64(&r->j, "submits", r->nr_submit);
	json_u64(&r->j, "transfers", r->nr_xfers);
	json_u64(&r->j, "link_transmits", r->nr_xmit);
	json_u64(&r->j, "lost_events", r->nr_lost);
	json_end_object(&r->j);
	json_string(&r->j, "displayTimeUnit", "ns");
	json_end_object(&r->j);
	fputc('\n', r->out);
}

static const char *tracefs_root(void)
{
	static const char *const roots[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/instances", roots[i]);
		if (!access(path, F_OK))
			return roots[i];
	}
	return NULL;
}

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[512];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	else if ((size_t)n != strlen(val))
		err = -EIO;
	close(fd);
	return err;
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static int cmd_trace(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		     int argc, char **argv)
{
	struct recorder r = { .fabric = ctl->fabric };
	const char *out = NULL, *root;
	unsigned long buf_kb = 65536;
	char inst[320], val[64], path[352];
	int i, fd = -1, status = 0, ret = ICFABCTL_EXIT_ERROR, err;
	bool running = false;
	pid_t pid;

	for (i = 0; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
			char *end;

			buf_kb = strtoul(argv[++i], &end, 10);
			if (*end || !buf_kb || buf_kb > (1UL << 22))
				return icfabctl_usage_error(cmd,
					"invalid buffer size '%s' (KiB per CPU)",
					argv[i]);
		} else {
			return icfabctl_usage_error(cmd, "unknown argument '%s'",
						    argv[i]);
		}
	}
	if (!out)
		return icfabctl_usage_error(cmd, "-o FILE is required");
	if (i + 1 >= argc)
		return icfabctl_usage_error(cmd, "no command after '--'");
	argv += i + 1;

	root = tracefs_root();
	if (!root) {
		icfabctl_warn("trace: tracefs is not mounted (/sys/kernel/tracing)");
		return ICFABCTL_EXIT_ERROR;
	}
	snprintf(inst, sizeof(inst), "%s/instances/icfabctl-%d", root,
		 (int)getpid());
	if (mkdir(inst, 0700))
		return icfabctl_fail(errno, "trace: mkdir %s", inst);

	snprintf(val, sizeof(val), "%lu", buf_kb);
	err = write_file(inst, "buffer_size_kb", val);
	if (err) {
		icfabctl_fail(-err, "trace: buffer_size_kb %s", val);
		goto out_rmdir;
	}
	snprintf(val, sizeof(val), "fabric == %" PRIu32, ctl->fabric);
	err = write_file(inst, "events/icfab/filter", val);
	if (!err)
		err = write_file(inst, "events/icfab/enable", "1");
	if (err) {
		if (err == -ENOENT)
			icfabctl_warn("trace: no icfab trace events: is the module loaded?");
		else
			icfabctl_fail(-err, "trace: enabling events/icfab");
		goto out_rmdir;
	}
	snprintf(path, sizeof(path), "%s/trace_pipe", inst);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		icfabctl_fail(errno, "trace: %s", path);
		goto out_disable;
	}
	r.out = fopen(out, "w");
	if (!r.out) {
		icfabctl_fail(errno, "trace: %s", out);
		goto out_close;
	}
	json_init(&r.j, r.out);
	json_begin_object(&r.j, NULL);
	json_begin_array(&r.j, "traceEvents");

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		icfabctl_fail(errno, "trace: fork");
		goto out_fclose;
	}
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "icfabctl: trace: %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	running = true;
	while (running) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		pid_t w;

		/* trace_pipe wakes pollers late (buffer_percent): read anyway. */
		if (poll(&pfd, 1, 50) < 0 && errno != EINTR)
			break;
		err = drain(&r, fd);
		if (err)
			break;
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			running = false;
		else if (w < 0 && errno != EINTR)
			break;
	}
	if (running) {
		icfabctl_fail(errno, "trace: reading %s/trace_pipe", inst);
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		goto out_fclose;
	}
	/* Stop recording, then take what is left. */
	write_file(inst, "events/icfab/enable", "0");
	err = drain(&r, fd);
	if (!err)
		err = r.err ?: write_xfers(&r);
	if (err) {
		icfabctl_fail(-err, "trace: reading events");
		goto out_fclose;
	}
	write_tail(&r);
	if (fflush(r.out) || ferror(r.out)) {
		icfabctl_fail(errno, "trace: writing %s", out);
		goto out_fclose;
	}
	fprintf(stderr, "icfabctl: trace: %" PRIu64 " transfers, %" PRIu64
		" link transmits -> %s\n", (uint64_t)r.nr_xfers, r.nr_xmit, out);
	if (r.nr_lost) {
		icfabctl_warn("trace: %" PRIu64 " events were lost: the timeline "
			      "is incomplete (try a larger -b)", r.nr_lost);
		ret = ICFABCTL_EXIT_ERROR;
	} else if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
	} else {
		ret = 128 + WTERMSIG(status);
	}

out_fclose:
	if (fclose(r.out) && ret == ICFABCTL_EXIT_OK)
		ret = icfabctl_fail(errno, "trace: writing %s", out);
out_close:
	close(fd);
out_disable:
	write_file(inst, "events/icfab/enable", "0");
out_rmdir:
	if (rmdir(inst))
		icfabctl_warn("trace: could not remove %s: %s", inst,
			      strerror(errno));
	free(r.links_seen);
	free(r.xfers);
	return ret;
}

ICFABCTL_COMMAND(NULL, "trace", "-o FILE.json [-b KIB] -- CMD [ARGS...]",
		 cmd_trace,
		 "Run CMD, recording the icfab tracepoints of the fabric, and "
		 "write a Perfetto/Chrome JSON timeline (one track per link "
		 "and per queue).");
