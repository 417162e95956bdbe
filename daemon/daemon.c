// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd as a daemon: reconcile with the module on start, tell systemd it
 * is ready, then follow the module's commits.
 *
 * The module keeps running on its last configuration whatever happens to
 * the daemon, so a start is never "load the file": it reads the running
 * configuration first and
 *  - adopts it when it is the file's (link states may differ: faults are
 *    runtime state; routes are recomputed for them and only pushed if the
 *    module's differ),
 *  - applies the file when the module is empty,
 *  - keeps a different running configuration, says so, and adopts it as
 *    its model: replacing it is an explicit `icfabd --apply`.
 *
 * Afterwards every FABRIC_NTF from somebody else's commit is checked:
 * when link states changed, routes are recomputed around them and the
 * rows that differ are committed. Its own commits are recognised by their
 * generation and ignored. SIGHUP applies the configuration file again;
 * SIGTERM and SIGINT leave, and the module keeps its configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <netlink/attr.h>

#include "icfabd.h"

#define EVENT_RETRIES	5	/* commits that raced with ours, in a row */

struct daemon {
	const struct daemon_opts *o;
	struct icfab_limits lim;
	struct topo *model;		/* what the module runs, routed */
	uint64_t generation;		/* the module's, as last seen or made */
	struct icfab_nl ev;		/* subscribed to "events" */
	uint64_t ntf_gen;		/* highest generation notified */
	bool ntf_seen;
	struct svc *svc;		/* the socket; its circuits use model */
};

static const char *config_name(const struct daemon_opts *o)
{
	return o->preset ? o->preset : o->file ? o->file : "(none)";
}

static void set_model(struct daemon *d, struct topo *t)
{
	struct topo *old = d->model;

	d->model = t;
	/* The circuit cache moves to the new model before the old goes. */
	if (d->svc && old != t)
		svc_set_model(d->svc, t);
	if (old != t)
		topo_free(old);
}

static void diff_summary(const struct fabric_diff *df, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s%u nodes added, %u removed, %u replaced; %u links added, %u removed, %u replaced, %u in another state; %u route rows",
		 df->params ? "parameters; " : "", df->nodes_added,
		 df->nodes_removed, df->nodes_replaced, df->links_added,
		 df->links_removed, df->links_replaced, df->link_states,
		 df->route_rows);
}

/* Push the model's routes (and anything else that differs) to the module. */
static int push_model(struct daemon *d, const char *why_push)
{
	struct fabric_result res;
	char why[512];
	int ret;

	ret = fabric_sync(d->o->fabric_id, d->model, &res, why, sizeof(why));
	if (ret) {
		log_err("%s: not applied, the module is unchanged: %s",
			why_push, why);
		return ret;
	}
	d->generation = res.gen_after;
	if (res.gen_after == res.gen_before)
		log_info("%s: the module already has it (generation %llu)",
			 why_push, (unsigned long long)res.gen_after);
	else
		log_notice("%s: generation %llu -> %llu (%u route rows, %u link states changed)",
			   why_push, (unsigned long long)res.gen_before,
			   (unsigned long long)res.gen_after,
			   res.diff.route_rows, res.diff.link_states);
	return 0;
}

/* The socket's faults and OCS changes are our own commits. */
static void svc_committed(void *arg, uint64_t gen)
{
	struct daemon *d = arg;

	if (gen > d->generation)
		d->generation = gen;
}

static int read_state(struct daemon *d, struct fabric_state *st)
{
	struct icfab_nl nl;
	char err[384];
	int ret;

	ret = icfab_nl_open(&nl, d->o->fabric_id);
	if (ret) {
		log_err("netlink family '%s': %s", ICFAB_GENL_NAME,
			strerror(-ret));
		return ret;
	}
	ret = fabric_read(&nl, false, st);
	if (ret)
		log_err("reading the module's configuration: %s",
			icfab_nl_strerror(&nl, ret, err, sizeof(err)));
	icfab_nl_close(&nl);
	return ret;
}

/*
 * A model for a running configuration that is not the file's. Its link
 * ids must be the module's for later diffs to be minimal: they are, when
 * an icfabd made it (dense ids).
 */
static int adopt_running(struct daemon *d, struct fabric_state *st)
{
	struct topo *t = fabric_take_topo(st);

	d->generation = st->generation;
	set_model(d, t);
	return 0;
}

static int reconcile(struct daemon *d, struct topo *config)
{
	struct fabric_state st;
	struct fabric_diff df;
	char sum[256];
	int ret;

	ret = read_state(d, &st);
	if (ret)
		goto err_free_config;
	d->generation = st.generation;

	if (!config) {
		log_notice("no configuration given: following the module's (generation %llu, %u nodes, %u links)",
			   (unsigned long long)st.generation,
			   st.topo->nr_nodes, st.topo->nr_links);
		ret = adopt_running(d, &st);
		goto out;
	}
	if (!st.topo->nr_nodes) {
		fabric_state_free(&st);
		set_model(d, config);
		return push_model(d, "the module was empty: applied the configuration");
	}
	/* Reconfigured OCSes and their dark circuits: the module's truth. */
	if (config->nr_ocs) {
		ret = reconf_adopt_ocs(config, &st);
		if (ret < 0) {
			log_err("ocs: cannot adopt the module's permutations: %s",
				strerror(-ret));
			goto err_free_config;
		}
	}
	ret = fabric_diff(config, &st, &df, NULL, 0);
	if (ret)
		goto err_free_config;
	if (fabric_diff_empty(&df)) {
		log_notice("the module runs %s already (generation %llu, %u nodes, %u links): adopted without changes",
			   config_name(d->o), (unsigned long long)st.generation,
			   config->nr_nodes, config->nr_links);
		set_model(d, config);
		goto out;
	}
	if (fabric_diff_runtime_only(&df)) {
		uint32_t n = fabric_adopt_link_states(config, &st);
		struct topo_err err = { "" };

		log_notice("the module runs %s (generation %llu) with %u links in another state: kept, routes recomputed for them",
			   config_name(d->o), (unsigned long long)st.generation,
			   n);
		ret = topo_route(config, &err);
		if (ret) {
			log_err("routing around the module's link states: %s",
				err.msg[0] ? err.msg : strerror(-ret));
			goto err_free_config;
		}
		fabric_state_free(&st);
		set_model(d, config);
		return push_model(d, "routes for the module's link states");
	}
	diff_summary(&df, sum, sizeof(sum));
	log_warn("the module runs a DIFFERENT configuration than %s (generation %llu, %u nodes, %u links; %s): keeping it running and following it; 'icfabd --apply %s%s' replaces it",
		 config_name(d->o), (unsigned long long)st.generation,
		 st.topo->nr_nodes, st.topo->nr_links, sum,
		 d->o->preset ? "--preset " : "", config_name(d->o));
	topo_free(config);
	ret = adopt_running(d, &st);
out:
	fabric_state_free(&st);
	return ret;

err_free_config:
	if (config != d->model)
		topo_free(config);
	fabric_state_free(&st);
	return ret;
}

/* Somebody else committed: follow link-state changes with new routes. */
static int follow_commit(struct daemon *d)
{
	struct fabric_state st;
	struct fabric_diff df;
	struct topo_err err = { "" };
	uint32_t n;
	int ret, tries;

	for (tries = 0; tries < EVENT_RETRIES; tries++) {
		ret = read_state(d, &st);
		if (ret)
			return ret;
		if (st.generation == d->generation) {
			fabric_state_free(&st);
			return 0;
		}
		ret = fabric_diff(d->model, &st, &df, NULL, 0);
		if (ret)
			break;
		if (!fabric_diff_runtime_only(&df)) {
			log_notice("generation %llu: the module was reconfigured by somebody else (%u nodes, %u links): following it",
				   (unsigned long long)st.generation,
				   st.topo->nr_nodes, st.topo->nr_links);
			adopt_running(d, &st);
			fabric_state_free(&st);
			return 0;
		}
		n = fabric_adopt_link_states(d->model, &st);
		if (!n) {
			log_info("generation %llu: no link changed state, routes kept",
				 (unsigned long long)st.generation);
			d->generation = st.generation;
			fabric_state_free(&st);
			return 0;
		}
		log_notice("generation %llu: %u links changed state: recomputing routes",
			   (unsigned long long)st.generation, n);
		ret = topo_route(d->model, &err);
		fabric_state_free(&st);
		if (ret) {
			log_err("recomputing routes: %s",
				err.msg[0] ? err.msg : strerror(-ret));
			return ret;
		}
		ret = push_model(d, "routes around the new link states");
		if (ret != -ESTALE)
			return ret;
	}
	fabric_state_free(&st);
	return ret;
}

static int on_notification(struct nlattr **tb, void *arg)
{
	struct daemon *d = arg;
	uint64_t g;

	if (!tb[ICFAB_A_FABRIC_GENERATION])
		return 0;
	if (tb[ICFAB_A_FABRIC_ID] &&
	    nla_get_u32(tb[ICFAB_A_FABRIC_ID]) != d->o->fabric_id)
		return 0;
	g = nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]);
	if (!d->ntf_seen || g > d->ntf_gen)
		d->ntf_gen = g;
	d->ntf_seen = true;
	return 0;
}

/* topo_prepare(), its reason in @why. */
static int load_topology(const char *file, const char *preset,
			 const struct icfab_limits *lim, struct topo **tp,
			 char *why, size_t why_len)
{
	struct topo_err err = { "" };
	int ret;

	ret = topo_prepare(file, preset, lim, tp, &err, NULL);
	if (ret && err.msg[0])
		snprintf(why, why_len, "%s", err.msg);
	else if (ret)
		snprintf(why, why_len, "icfabd: %s", strerror(-ret));
	return ret;
}

static int reload(struct daemon *d)
{
	struct topo *t;
	char why[512];

	if (load_topology(d->o->file, d->o->preset, &d->lim, &t, why,
			  sizeof(why))) {
		log_err("SIGHUP: %s: the configuration is kept", why);
		return -EINVAL;
	}
	log_notice("SIGHUP: %s reloaded", config_name(d->o));
	set_model(d, t);
	return push_model(d, "SIGHUP: applied the configuration");
}

static int event_loop(struct daemon *d, int sfd)
{
	struct pollfd *pfd = NULL;
	struct signalfd_siginfo si;
	unsigned int n;
	int ret;

	for (;;) {
		struct pollfd *np;

		/* The socket's clients and owners come and go. */
		n = 2 + svc_nfds(d->svc);
		np = realloc(pfd, n * sizeof(*pfd));
		if (!np) {
			free(pfd);
			log_err("poll: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
		pfd = np;
		pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = icfab_nl_fd(&d->ev),
					  .events = POLLIN };
		svc_pollfds(d->svc, pfd + 2);
		if (poll(pfd, n, svc_timeout_ms(d->svc)) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			log_err("poll: %s", strerror(errno));
			free(pfd);
			return ret;
		}
		if (pfd[0].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo == SIGHUP) {
				reload(d);
				continue;
			}
			log_notice("%s: exiting; the module keeps generation %llu",
				   strsignal(si.ssi_signo),
				   (unsigned long long)d->generation);
			free(pfd);
			return 0;
		}
		if (pfd[1].revents & POLLIN) {
			d->ntf_seen = false;
			ret = icfab_nl_recv_events(&d->ev, on_notification, d);
			if (ret == -ENOBUFS) {
				log_warn("events were lost: reading the module again");
				follow_commit(d);
			} else if (ret) {
				log_err("reading events: %s: reading the module again",
					strerror(-ret));
				sleep(1);	/* not a busy loop if it persists */
				follow_commit(d);
			} else if (d->ntf_seen && d->ntf_gen > d->generation) {
				follow_commit(d);
			}
		}
		/* follow_commit() may have changed the model, not the fds. */
		svc_events(d->svc, pfd + 2);
	}
}

static int detach(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -errno;
	if (chdir("/"))
		return -errno;
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

int daemon_run(const struct daemon_opts *o)
{
	struct daemon d = { .o = o };
	struct icfab_info info;
	struct topo *config = NULL;
	sigset_t mask;
	char why[512];
	int sfd, ret;

	log_init(o->foreground ? LOG_TO_STDERR : LOG_TO_SYSLOG,
		 o->verbose ? LOG_DEBUG : LOG_INFO);

	ret = icfab_dev_info(o->fabric_id, &info);
	if (ret) {
		log_err("/dev/" ICFAB_DEV_NAME_PREFIX "%u: %s", o->fabric_id,
			strerror(-ret));
		return 1;
	}
	d.lim = info.limits;
	if ((o->file || o->preset) &&
	    load_topology(o->file, o->preset, &d.lim, &config, why,
			  sizeof(why))) {
		log_err("%s", why);
		return 1;
	}
	if (o->fork && detach()) {
		log_err("cannot detach: %s", strerror(errno));
		topo_free(config);
		return 1;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		log_err("signalfd: %s", strerror(errno));
		topo_free(config);
		return 1;
	}

	/* Subscribe first: no commit can fall between the read and the loop. */
	ret = icfab_nl_open(&d.ev, o->fabric_id);
	if (!ret)
		ret = icfab_nl_subscribe(&d.ev);
	if (ret) {
		log_err("netlink events: %s", strerror(-ret));
		topo_free(config);
		goto out_close;
	}

	ret = reconcile(&d, config);
	if (ret)
		goto out_close;

	{
		struct svc_opts so = {
			.path = o->socket_path ? o->socket_path :
				ICFABD_SOCKET_DEFAULT,
			.fabric_id = o->fabric_id,
			.has_admin_gid = o->has_admin_gid,
			.admin_gid = o->admin_gid,
			.limits = o->limits,
			.idle_timeout_ms = o->idle_timeout_ms,
			.line_timeout_ms = o->line_timeout_ms,
			.committed = svc_committed,
			.arg = &d,
		};

		ret = svc_open(&so, d.model, &d.svc);
		if (ret) {
			log_err("socket %s: not serving: %s", so.path,
				strerror(-ret));
			goto out_close;
		}
		log_notice("serving %s", so.path);
	}

	notify_systemd("READY=1");
	log_notice("ready: %s, generation %llu, %u nodes, %u links",
		   config_name(o), (unsigned long long)d.generation,
		   d.model->nr_nodes, d.model->nr_links);
	ret = event_loop(&d, sfd);
	notify_systemd("STOPPING=1");

out_close:
	svc_close(d.svc);
	icfab_nl_close(&d.ev);
	close(sfd);
	topo_free(d.model);
	return ret ? 1 : 0;
}
