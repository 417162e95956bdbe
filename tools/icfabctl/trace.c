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
 * Process "ops" has one track per context (named by its first rank's
 * endpoint), a slice per library call, named by the call or the
 * caller's label, from the fabric time its first plan started to the
 * end of its last: CMD gets FDEV_TRACE_MARKER, the instance's
 * trace_marker, where libfabricdev writes one "icfab_op" line per call
 * (libfabricdev/src/trace.c).
 * Process "energy" has counters of the joules spent so far, per link
 * class, per memory tier and in total: each segment out on a link or a
 * tier's port costs bytes x 8 x its energy per bit (LINK_GET, read when
 * CMD has ended), counted at its last byte out; the final values are
 * what "icfabctl stats" sums per group (energy per bit, not static
 * power).
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

#include <icfab/readback.h>

#include "icfabctl.h"

struct xfer {
	uint64_t key, bytes, submit_ps, start_ps, finish_ps, queued_ps;
	uint32_t src, dst;
	int status;
	uint32_t tid;		/* assigned track */
};

struct op {
	uint64_t ep, ranks, start_ps, end_ps;
	int status;
	char name[32], op[32];
};

/* A segment out on a link, for the energy counters. */
struct seg_out {
	uint64_t done_ps, bytes;
	uint32_t link;
};

/* Its cost, in the order the counters take them. */
struct joules {
	uint64_t done_ps, fj;
	uint32_t row;		/* icfabctl_energy_row() */
};

struct recorder {
	FILE *out;
	uint32_t fabric;
	struct icfab_json j;
	/* links seen, for their track names */
	uint8_t *links_seen;
	uint32_t links_cap;
	struct xfer *xfers;
	uint32_t nr_xfers, xfers_cap;
	struct op *ops;
	uint32_t nr_ops, ops_cap;
	struct seg_out *segs;
	uint32_t nr_segs, segs_cap;
	uint64_t energy_fj;	/* the counters' total */
	uint64_t nr_submit, nr_xmit, nr_lost;
	char line[4096];
	size_t line_len;
	int err;		/* first -errno */
};

/*
 * One trace event, opened on a line of its own: @name, @ph(ase), pid
 * and, unless @tid is NO_TID, tid. The caller adds the rest and closes
 * it with json_end_object().
 */
#define NO_TID	UINT64_MAX

static void event_begin(struct recorder *r, const char *name, const char *cat,
			const char *ph, uint64_t pid, uint64_t tid)
{
	json_break(&r->j);
	json_begin_object(&r->j, NULL);
	json_string(&r->j, "name", name);
	if (cat)
		json_string(&r->j, "cat", cat);
	json_string(&r->j, "ph", ph);
	json_u64(&r->j, "pid", pid);
	if (tid != NO_TID)
		json_u64(&r->j, "tid", tid);
}

/* A slice's time and length: fabric ps as JSON µs, exact (six decimals). */
static void event_span(struct recorder *r, uint64_t from_ps, uint64_t to_ps)
{
	json_fixed(&r->j, "ts", from_ps, 6);
	json_fixed(&r->j, "dur", to_ps - from_ps, 6);
}

static void json_key(struct recorder *r, uint64_t key)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, key);
	json_string(&r->j, "key", buf);
}

/* A metadata event: names or orders process @pid's track @tid. */
static void event_meta(struct recorder *r, const char *what, uint64_t pid,
		       uint64_t tid, const char *name)
{
	event_begin(r, what, NULL, "M", pid, tid);
	json_begin_object(&r->j, "args");
	json_string(&r->j, "name", name);
	json_end_object(&r->j);
	json_end_object(&r->j);
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
	if (icfab_array_grow((void **)&r->links_seen, &r->links_cap,
			     (uint32_t)link, 1, 64)) {
		r->err = r->err ?: -ENOMEM;
		return;
	}
	r->links_seen[link] = 1;
	r->nr_xmit++;
	if (icfab_array_grow((void **)&r->segs, &r->segs_cap, r->nr_segs,
			     sizeof(*r->segs), 4096)) {
		r->err = r->err ?: -ENOMEM;
		return;
	}
	r->segs[r->nr_segs++] = (struct seg_out){
		.done_ps = done, .bytes = bytes, .link = (uint32_t)link,
	};
	event_begin(r, "seg", "link", "X", 1, link);
	event_span(r, depart, done);
	json_begin_object(&r->j, "args");
	json_key(r, key);
	json_u64(&r->j, "seg", seg);
	json_u64(&r->j, "hop", hop);
	json_u64(&r->j, "bytes", bytes);
	json_u64(&r->j, "ready_ps", ready);
	json_u64(&r->j, "depart_ps", depart);
	json_u64(&r->j, "done_ps", done);
	json_u64(&r->j, "queued_ps", depart - ready);
	json_end_object(&r->j);
	json_end_object(&r->j);
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
	if (icfab_array_grow((void **)&r->xfers, &r->xfers_cap, r->nr_xfers,
			     sizeof(*r->xfers), 1024)) {
		r->err = r->err ?: -ENOMEM;
		return;
	}
	x = &r->xfers[r->nr_xfers++];
	*x = (struct xfer){
		.key = key, .bytes = bytes, .submit_ps = sub, .start_ps = start,
		.finish_ps = fin, .queued_ps = queued, .src = (uint32_t)src,
		.dst = (uint32_t)dst, .status = status,
	};
}

/* A name= field: up to the next blank, at most @len - 1 characters. */
static int field_str(const char *s, const char *name, char *buf, size_t len)
{
	const char *p = field_at(s, name);
	size_t n;

	if (!p)
		return -1;
	n = strcspn(p, " \n");
	if (!n || n >= len)
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

/* libfabricdev's line for one call; a line it did not write is skipped. */
static void on_op(struct recorder *r, const char *s)
{
	struct op o = { 0 };

	if (field(s, "ep", &o.ep) || field(s, "ranks", &o.ranks) ||
	    field_str(s, "name", o.name, sizeof(o.name)) ||
	    field_str(s, "op", o.op, sizeof(o.op)) ||
	    field(s, "start_ps", &o.start_ps) ||
	    field(s, "end_ps", &o.end_ps) ||
	    field_int(s, "status", &o.status) || o.end_ps < o.start_ps)
		return;
	if (icfab_array_grow((void **)&r->ops, &r->ops_cap, r->nr_ops,
			     sizeof(*r->ops), 64)) {
		r->err = r->err ?: -ENOMEM;
		return;
	}
	r->ops[r->nr_ops++] = o;
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
	else if ((ev = strstr(s, " tracing_mark_write: icfab_op ")))
		on_op(r, ev + 29);
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
	char name[64];

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
			snprintf(name, sizeof(name), "ep %" PRIu64 " queue %" PRIu64,
				 q >> 8, q & 0xff);
			if (nth)
				snprintf(name + strlen(name),
					 sizeof(name) - strlen(name), " #%" PRIu32,
					 nth + 1);
			event_meta(r, "thread_name", 2, l, name);
			event_begin(r, "thread_sort_index", NULL, "M", 2, l);
			json_begin_object(&r->j, "args");
			json_u64(&r->j, "sort_index", q << 12 | (nth & 0xfff));
			json_end_object(&r->j);
			json_end_object(&r->j);
		}
		lanes[l].end_ps = x->finish_ps > x->submit_ps ?
				  x->finish_ps : x->submit_ps;
		snprintf(name, sizeof(name), "%" PRIu32 "->%" PRIu32, x->src,
			 x->dst);
		event_begin(r, name, "xfer", "X", 2, l);
		event_span(r, x->submit_ps, x->finish_ps);
		json_begin_object(&r->j, "args");
		json_key(r, x->key);
		json_u64(&r->j, "bytes", x->bytes);
		json_s64(&r->j, "status", x->status);
		json_u64(&r->j, "submit_ps", x->submit_ps);
		json_u64(&r->j, "start_ps", x->start_ps);
		json_u64(&r->j, "finish_ps", x->finish_ps);
		json_u64(&r->j, "queued_ps", x->queued_ps);
		json_end_object(&r->j);
		json_end_object(&r->j);
	}
	free(lanes);
	return 0;
}

static int cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->ep != y->ep)
		return x->ep < y->ep ? -1 : 1;
	return x->start_ps < y->start_ps ? -1 : x->start_ps > y->start_ps;
}

/* Process 3, "ops": a track per context, a slice per library call. */
static void write_ops(struct recorder *r)
{
	char name[48];
	size_t i;

	qsort(r->ops, r->nr_ops, sizeof(*r->ops), cmp_op);
	for (i = 0; i < r->nr_ops; i++) {
		const struct op *o = &r->ops[i];

		if (!i || r->ops[i - 1].ep != o->ep) {
			snprintf(name, sizeof(name), "ep %" PRIu64, o->ep);
			if (o->ranks > 1)
				snprintf(name + strlen(name),
					 sizeof(name) - strlen(name),
					 " (%" PRIu64 " ranks)", o->ranks);
			event_meta(r, "thread_name", 3, o->ep, name);
		}
		event_begin(r, o->name, "op", "X", 3, o->ep);
		event_span(r, o->start_ps, o->end_ps);
		json_begin_object(&r->j, "args");
		json_string(&r->j, "op", o->op);
		json_u64(&r->j, "ep", o->ep);
		json_u64(&r->j, "ranks", o->ranks);
		json_u64(&r->j, "start_ps", o->start_ps);
		json_u64(&r->j, "end_ps", o->end_ps);
		json_s64(&r->j, "status", o->status);
		json_end_object(&r->j);
		json_end_object(&r->j);
	}
}

/* Each link's and tier port's energy per bit and group, by link id. */
struct link_energy {
	uint32_t fj_per_bit, row;
};

struct energy_read {
	struct icfab_nl nl;
	struct fabric_state st;
};

static int energy_read_once(void *arg)
{
	struct energy_read *e = arg;

	fabric_state_free(&e->st);
	return fabric_read_once(&e->nl, false,
				FABRIC_READ_NODES | FABRIC_READ_LINKS, &e->st);
}

/*
 * The committed links' figures, into *@out (@n entries, by link id):
 * 0, or a message and -errno.
 */
static int energy_figures(struct recorder *r, struct link_energy **out,
			  uint32_t *n)
{
	struct energy_read e = { 0 };
	const struct topo *t;
	struct link_energy *le;
	uint32_t i, max = 0;
	int ret;

	if (icfabctl_nl_open(&e.nl, r->fabric))
		return -ENOTCONN;
	ret = icfab_nl_read_consistent(energy_read_once, &e, 20);
	if (ret == -EINTR)
		icfabctl_warn("trace: the configuration kept changing while "
			      "its links' energy was read");
	else if (ret)
		icfabctl_nl_report(&e.nl, "trace: reading the links' energy");
	if (ret)
		goto out;
	t = e.st.topo;
	for (i = 0; i < t->nr_links; i++)
		max = e.st.link_id[i] + 1 > max ? e.st.link_id[i] + 1 : max;
	for (i = 0; i < t->nr_tiers; i++)
		max = t->tiers[i].link_id + 1 > max ? t->tiers[i].link_id + 1 : max;
	le = calloc(max ? max : 1, sizeof(*le));
	if (!le) {
		ret = -ENOMEM;
		icfabctl_fail(ENOMEM, "trace: reading the links' energy");
		goto out;
	}
	for (i = 0; i < t->nr_links; i++)
		le[e.st.link_id[i]] = (struct link_energy){
			.fj_per_bit = t->links[i].fj_per_bit,
			.row = icfabctl_energy_row(t->links[i].class, 0),
		};
	for (i = 0; i < t->nr_tiers; i++)
		le[t->tiers[i].link_id] = (struct link_energy){
			.fj_per_bit = t->tiers[i].fj_per_bit,
			.row = icfabctl_energy_row(ICFAB_LINK_CLASS_OTHER,
						   t->tiers[i].kind),
		};
	*out = le;
	*n = max;
out:
	fabric_state_free(&e.st);
	icfab_nl_close(&e.nl);
	return ret;
}

static int cmp_joules(const void *a, const void *b)
{
	const struct joules *x = a, *y = b;

	if (x->done_ps != y->done_ps)
		return x->done_ps < y->done_ps ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static void energy_sample(struct recorder *r, uint32_t row, uint64_t ps,
			  uint64_t fj)
{
	event_begin(r, icfabctl_energy_row_name(row, false), "energy", "C", 4,
		    NO_TID);
	json_fixed(&r->j, "ts", ps, 6);
	json_begin_object(&r->j, "args");
	json_fixed(&r->j, "J", fj, 15);
	json_end_object(&r->j);
	json_end_object(&r->j);
}

/*
 * Process 4, "energy": a counter per group, sampled at each instant a
 * segment of that group's links is out, and the total; nothing when no
 * link the run crossed costs energy.
 */
static int write_energy(struct recorder *r)
{
	uint64_t cum[E_ROWS] = { 0 };
	bool changed[E_ROWS] = { false };
	struct link_energy *le = NULL;
	struct joules *jl;
	size_t i, n = 0;
	uint32_t nle = 0, row;
	int ret;

	if (!r->nr_segs)
		return 0;
	ret = energy_figures(r, &le, &nle);
	if (ret)
		return ret;
	jl = malloc(r->nr_segs * sizeof(*jl));
	if (!jl) {
		free(le);
		icfabctl_fail(ENOMEM, "trace: energy");
		return -ENOMEM;
	}
	for (i = 0; i < r->nr_segs; i++) {
		const struct seg_out *g = &r->segs[i];

		if (g->link >= nle || !le[g->link].fj_per_bit)
			continue;
		jl[n++] = (struct joules){
			.done_ps = g->done_ps, .row = le[g->link].row,
			.fj = g->bytes * 8 * le[g->link].fj_per_bit,
		};
	}
	free(le);
	qsort(jl, n, sizeof(*jl), cmp_joules);
	for (i = 0; i < n; i++) {
		cum[jl[i].row] += jl[i].fj;
		cum[E_TOTAL] += jl[i].fj;
		changed[jl[i].row] = true;
		if (i + 1 < n && jl[i + 1].done_ps == jl[i].done_ps)
			continue;
		/* The instant's last segment: its samples. */
		for (row = 0; row < E_TOTAL; row++) {
			if (!changed[row])
				continue;
			energy_sample(r, row, jl[i].done_ps, cum[row]);
			changed[row] = false;
		}
		energy_sample(r, E_TOTAL, jl[i].done_ps, cum[E_TOTAL]);
	}
	r->energy_fj = cum[E_TOTAL];
	free(jl);
	return 0;
}

static void write_tail(struct recorder *r)
{
	const struct {
		const char *key;
		uint64_t n;
	} counts[] = {
		{ "fabric", r->fabric },
		{ "submits", r->nr_submit },
		{ "transfers", r->nr_xfers },
		{ "link_transmits", r->nr_xmit },
		{ "ops", r->nr_ops },
		{ "energy_fj", r->energy_fj },
		{ "lost_events", r->nr_lost },
	};
	char name[32];
	uint32_t i;

	event_meta(r, "process_name", 1, NO_TID, "links");
	event_meta(r, "process_name", 2, NO_TID, "queues");
	if (r->nr_ops)
		event_meta(r, "process_name", 3, NO_TID, "ops");
	if (r->energy_fj)
		event_meta(r, "process_name", 4, NO_TID, "energy");
	for (i = 0; i < r->links_cap; i++) {
		if (!r->links_seen[i])
			continue;
		snprintf(name, sizeof(name), "link %" PRIu32, i);
		event_meta(r, "thread_name", 1, i, name);
	}
	json_end_array(&r->j);
	json_begin_object(&r->j, "otherData");
	for (i = 0; i < ARRAY_SIZE(counts); i++)
		json_u64(&r->j, counts[i].key, counts[i].n);
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
		snprintf(path, sizeof(path), "%s/trace_marker", inst);
		setenv("FDEV_TRACE_MARKER", path, 1);
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
	write_ops(&r);
	if (write_energy(&r))
		goto out_fclose;
	write_tail(&r);
	if (fflush(r.out) || ferror(r.out)) {
		icfabctl_fail(errno, "trace: writing %s", out);
		goto out_fclose;
	}
	fprintf(stderr, "icfabctl: trace: %" PRIu64 " transfers, %" PRIu64
		" link transmits, %" PRIu64 " ops -> %s\n", (uint64_t)r.nr_xfers,
		r.nr_xmit, (uint64_t)r.nr_ops, out);
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
	free(r.ops);
	free(r.segs);
	return ret;
}

ICFABCTL_COMMAND(NULL, "trace", "-o FILE.json [-b KIB] -- CMD [ARGS...]",
		 cmd_trace,
		 "Run CMD, recording the icfab tracepoints of the fabric, and "
		 "write a Perfetto/Chrome JSON timeline (one track per link "
		 "and per queue, counters of the joules spent).");
