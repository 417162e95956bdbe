// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl circuit open|close|list, icfabctl colors.
 *
 * Opening and closing go through icfabd's socket (docs/SOCKET.md): the
 * daemon picks the path and the color and checks who may do what.
 * Listing reads the module itself (CIRCUIT_GET, COLOR_GET), which holds
 * the truth whether or not icfabd runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "icfabctl.h"
#include <icfab/proto.h>


/* ---- the daemon's socket ---- */

const char *socket_path(const char *given)
{
	const char *env = getenv("ICFABD_SOCKET");

	if (given)
		return given;
	return env && *env ? env : ICFABD_SOCKET_PATH;
}

/* Read one reply line, without its '\n'. */
int sock_line(struct sock_client *sc, char *line, size_t len)
{
	size_t n;

	if (!fgets(line, len, sc->in))
		return -ECONNRESET;
	n = strlen(line);
	if (!n || line[n - 1] != '\n')
		return -EPROTO;
	line[n - 1] = '\0';
	return 0;
}

int sock_connect(struct sock_client *sc, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	unsigned int version;
	char line[128];

	if (strlen(path) >= sizeof(sun.sun_path))
		return icfabctl_fail(ENAMETOOLONG, "%s", path);
	strcpy(sun.sun_path, path);
	sc->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sc->fd < 0)
		return icfabctl_fail(errno, "socket");
	if (connect(sc->fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int err = errno;

		close(sc->fd);
		icfabctl_warn("icfabd's socket %s: %s (is icfabd running? -S PATH or ICFABD_SOCKET name another)",
			      path, strerror(err));
		return ICFABCTL_EXIT_ERROR;
	}
	sc->in = fdopen(dup(sc->fd), "r");
	if (!sc->in) {
		close(sc->fd);
		return icfabctl_fail(errno, "%s", path);
	}
	if (sock_line(sc, line, sizeof(line)) ||
	    sscanf(line, "icfabd %u", &version) != 1 ||
	    version != PROTO_VERSION) {
		icfabctl_warn("%s: not icfabd protocol %u (greeting '%.64s')",
			      path, PROTO_VERSION, line);
		fclose(sc->in);
		close(sc->fd);
		return ICFABCTL_EXIT_ERROR;
	}
	return ICFABCTL_EXIT_OK;
}

void sock_close(struct sock_client *sc)
{
	fclose(sc->in);
	close(sc->fd);
}

/*
 * Send one request and read its reply line into @line; *rest points at
 * what follows "ok". On an error reply prints it and returns the exit
 * code.
 */
int sock_request(struct sock_client *sc, const char *req, char *line,
			size_t len, char **rest, const char *what)
{
	size_t n = strlen(req);
	int ret;

	if (write(sc->fd, req, n) != (ssize_t)n || write(sc->fd, "\n", 1) != 1)
		return icfabctl_fail(errno, "%s: sending to icfabd", what);
	ret = sock_line(sc, line, len);
	if (ret)
		return icfabctl_fail(-ret, "%s: reading icfabd's reply", what);
	ret = proto_reply(line, rest);
	if (ret == -EPROTO && strncmp(line, "err ", 4)) {
		icfabctl_warn("%s: icfabd replied '%.128s'", what, line);
		return ICFABCTL_EXIT_ERROR;
	}
	if (ret) {
		fprintf(stderr, "icfabd reports: %s\n", *rest);
		return icfabctl_fail(-ret, "%s", what);
	}
	return ICFABCTL_EXIT_OK;
}

/* Leading "--pin" and "-S PATH" / "--socket PATH" options of a command. */
int sock_parse_opts(const struct icfabctl_cmd *cmd, int *argc, char ***argv,
		      bool allow_pin, bool *pin, const char **path)
{
	while (*argc && (*argv)[0][0] == '-') {
		const char *o = (*argv)[0];

		if (allow_pin && !strcmp(o, "--pin")) {
			*pin = true;
		} else if (!strcmp(o, "-S") || !strcmp(o, "--socket")) {
			if (*argc < 2)
				return icfabctl_usage_error(cmd, "%s needs a path", o);
			*path = (*argv)[1];
			(*argc)--;
			(*argv)++;
		} else {
			return icfabctl_usage_error(cmd, "unknown option '%s'", o);
		}
		(*argc)--;
		(*argv)++;
	}
	return ICFABCTL_EXIT_OK;
}

static int cmd_circuit_open(struct icfabctl *ctl,
			    const struct icfabctl_cmd *cmd, int argc,
			    char **argv)
{
	char req[PROTO_LINE_MAX], line[512], *rest, id[16] = "?", color[16] = "?",
	     routers[16] = "?";
	const char *path = NULL;
	struct sock_client sc;
	bool pin = false;
	size_t off;
	sigset_t set;
	int i, sig, ret;

	ret = sock_parse_opts(cmd, &argc, &argv, true, &pin, &path);
	if (ret)
		return ret;
	if (argc < 2)
		return icfabctl_usage_error(cmd, "give a source and at least one destination");
	off = snprintf(req, sizeof(req), "%s", pin ? "circuit-pin" : "circuit-open");
	for (i = 0; i < argc; i++) {
		if (strpbrk(argv[i], " \t\n") || !*argv[i])
			return icfabctl_usage_error(cmd, "'%s' is not a node name or id",
						    argv[i]);
		off += snprintf(req + off, sizeof(req) - off, " %s", argv[i]);
		if (off >= sizeof(req) - 1)
			return icfabctl_usage_error(cmd, "the request is longer than %u bytes",
						    PROTO_LINE_MAX - 1);
	}

	/* Block the signals first: a kill between open and wait still frees. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (!pin)
		sigprocmask(SIG_BLOCK, &set, NULL);

	ret = sock_connect(&sc, socket_path(path));
	if (ret)
		return ret;
	ret = sock_request(&sc, req, line, sizeof(line), &rest, "circuit open");
	if (ret)
		goto out;
	proto_value(rest, "id", id, sizeof(id));
	proto_value(rest, "color", color, sizeof(color));
	proto_value(rest, "routers", routers, sizeof(routers));
	if (ctl->json)
		printf("{\"id\":%s,\"color\":%s,\"routers\":%s,\"pinned\":%s}\n",
		       id, color, routers, pin ? "true" : "false");
	else
		printf("circuit %s: color %s at %s routers%s\n", id, color,
		       routers, pin ? ", pinned" : "");
	fflush(stdout);
	if (pin)
		goto out;
	/* The circuit is this process's: it lives until we exit. */
	fprintf(stderr, "icfabctl: holding circuit %s until interrupted\n", id);
	sigwait(&set, &sig);
out:
	sock_close(&sc);
	return ret;
}

ICFABCTL_COMMAND("circuit", "open", "[--pin] [-S PATH] SRC DST [DST...]",
		 cmd_circuit_open,
		 "Ask icfabd for a circuit (one DST) or a multicast tree;\n"
		 "\tit is held until this command is interrupted, or with\n"
		 "\t--pin (administrators) until closed by id.");

static int cmd_circuit_close(struct icfabctl *ctl,
			     const struct icfabctl_cmd *cmd, int argc,
			     char **argv)
{
	char req[64], line[512], *rest;
	const char *path = NULL;
	struct sock_client sc;
	uint32_t id;
	int ret;

	(void)ctl;
	ret = sock_parse_opts(cmd, &argc, &argv, false, NULL, &path);
	if (ret)
		return ret;
	if (argc != 1)
		return icfabctl_usage_error(cmd, "give one circuit id");
	if (icfabctl_parse_u32(argv[0], &id))
		return icfabctl_usage_error(cmd, "'%s' is not a circuit id",
					    argv[0]);
	snprintf(req, sizeof(req), "circuit-close %" PRIu32, id);
	ret = sock_connect(&sc, socket_path(path));
	if (ret)
		return ret;
	ret = sock_request(&sc, req, line, sizeof(line), &rest, "circuit close");
	sock_close(&sc);
	return ret;
}

ICFABCTL_COMMAND("circuit", "close", "[-S PATH] ID", cmd_circuit_close,
		 "Ask icfabd to free a circuit (its owner's uid, or an "
		 "administrator).");

/* ---- reading the module ---- */

struct names {
	char (*name)[ICFAB_NAME_MAX];
	uint32_t cap;
};

static int names_cb(struct nlattr **tb, void *arg)
{
	struct names *n = arg;
	uint32_t id;

	if (!tb[ICFAB_A_NODE_ID] || !tb[ICFAB_A_NODE_NAME])
		return 0;
	id = nla_get_u32(tb[ICFAB_A_NODE_ID]);
	if (icfab_array_grow((void **)&n->name, &n->cap, id, sizeof(*n->name),
			     256))
		return -ENOMEM;
	snprintf(n->name[id], sizeof(n->name[id]), "%s",
		 (const char *)nla_data(tb[ICFAB_A_NODE_NAME]));
	return 0;
}

static const char *name_of(const struct names *n, uint32_t id, char *buf,
			   size_t len)
{
	if (id < n->cap && n->name[id][0])
		return n->name[id];
	snprintf(buf, len, "#%" PRIu32, id);
	return buf;
}

/* A dump of @cmd, under the one dump-retry rule. */
static int dump(struct icfabctl *ctl, struct icfab_nl *nl, uint8_t cmd,
		icfab_nl_parse_fn cb, void *arg, void (*reset)(void *),
		const char *what, int node)
{
	const struct icfabctl_dump d = {
		.cmd = cmd, .node = node, .parse = cb, .arg = arg,
		.reset = reset, .what = what,
		.kept_changing = "the module kept changing; try again",
	};

	return icfabctl_dump(ctl, nl, &d);
}

static int read_names(struct icfabctl *ctl, struct icfab_nl *nl,
		      struct names *n)
{
	return dump(ctl, nl, ICFAB_CMD_NODE_GET, names_cb, n, NULL,
		    "node names", -1);
}

struct circ {
	uint32_t id, color, pid, uid, src;
	uint32_t nr_dsts, nr_routers;
	uint32_t *dsts, *routers;
};

struct circs {
	struct circ *c;
	uint32_t n, cap;
};

static void circs_reset(void *arg)
{
	struct circs *cs = arg;
	uint32_t i;

	for (i = 0; i < cs->n; i++) {
		free(cs->c[i].dsts);
		free(cs->c[i].routers);
	}
	cs->n = 0;
}

static uint32_t *copy_ids(const struct nlattr *a, uint32_t *n)
{
	uint32_t *p;

	*n = nla_len(a) / sizeof(uint32_t);
	p = malloc((*n + 1) * sizeof(*p));
	if (p)
		memcpy(p, nla_data(a), *n * sizeof(*p));
	return p;
}

static int circs_cb(struct nlattr **tb, void *arg)
{
	struct circs *cs = arg;
	struct circ *c;

	if (!tb[ICFAB_A_CIRCUIT_ID] || !tb[ICFAB_A_CIRCUIT_DSTS] ||
	    !tb[ICFAB_A_CIRCUIT_ROUTERS])
		return -EPROTO;
	if (icfab_array_grow((void **)&cs->c, &cs->cap, cs->n, sizeof(*cs->c),
			     16))
		return -ENOMEM;
	c = &cs->c[cs->n];
	memset(c, 0, sizeof(*c));
	c->id = nla_get_u32(tb[ICFAB_A_CIRCUIT_ID]);
	c->color = tb[ICFAB_A_CIRCUIT_COLOR] ?
		   nla_get_u32(tb[ICFAB_A_CIRCUIT_COLOR]) : 0;
	c->pid = tb[ICFAB_A_CIRCUIT_OWNER_PID] ?
		 nla_get_u32(tb[ICFAB_A_CIRCUIT_OWNER_PID]) : 0;
	c->uid = tb[ICFAB_A_CIRCUIT_OWNER_UID] ?
		 nla_get_u32(tb[ICFAB_A_CIRCUIT_OWNER_UID]) : 0;
	c->src = tb[ICFAB_A_CIRCUIT_SRC] ?
		 nla_get_u32(tb[ICFAB_A_CIRCUIT_SRC]) : 0;
	c->dsts = copy_ids(tb[ICFAB_A_CIRCUIT_DSTS], &c->nr_dsts);
	c->routers = copy_ids(tb[ICFAB_A_CIRCUIT_ROUTERS], &c->nr_routers);
	if (!c->dsts || !c->routers) {
		free(c->dsts);
		free(c->routers);
		return -ENOMEM;
	}
	cs->n++;
	return 0;
}

static void print_ids_text(const struct names *n, const uint32_t *ids,
			   uint32_t nr)
{
	char buf[16];
	uint32_t i;

	for (i = 0; i < nr; i++)
		printf("%s%s", i ? "," : "", name_of(n, ids[i], buf, sizeof(buf)));
}

static void json_ids(struct icfab_json *j, const char *key,
		     const char *names_key, const struct names *n,
		     const uint32_t *ids, uint32_t nr)
{
	char buf[16];
	uint32_t i;

	json_begin_array(j, key);
	for (i = 0; i < nr; i++)
		json_u64(j, NULL, ids[i]);
	json_end_array(j);
	json_begin_array(j, names_key);
	for (i = 0; i < nr; i++)
		json_string(j, NULL, name_of(n, ids[i], buf, sizeof(buf)));
	json_end_array(j);
}

static int cmd_circuit_list(struct icfabctl *ctl,
			    const struct icfabctl_cmd *cmd, int argc,
			    char **argv)
{
	struct names names = { 0 };
	struct circs cs = { 0 };
	struct icfab_json j;
	struct icfab_nl nl;
	char buf[16];
	uint32_t i;
	int ret;

	(void)argv;
	if (argc)
		return icfabctl_usage_error(cmd, "too many arguments");
	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;
	ret = dump(ctl, &nl, ICFAB_CMD_CIRCUIT_GET, circs_cb, &cs, circs_reset,
		   "circuit list", -1);
	if (!ret)
		ret = read_names(ctl, &nl, &names);
	if (ret)
		goto out;
	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_u64(&j, "fabric", ctl->fabric);
		json_begin_array(&j, "circuits");
		for (i = 0; i < cs.n; i++) {
			const struct circ *c = &cs.c[i];

			json_begin_object(&j, NULL);
			json_u64(&j, "id", c->id);
			json_u64(&j, "color", c->color);
			json_u64(&j, "owner_pid", c->pid);
			json_u64(&j, "owner_uid", c->uid);
			json_bool(&j, "pinned", !c->pid);
			json_u64(&j, "src", c->src);
			json_string(&j, "src_name",
				    name_of(&names, c->src, buf, sizeof(buf)));
			json_ids(&j, "dsts", "dst_names", &names, c->dsts,
				 c->nr_dsts);
			json_ids(&j, "routers", "router_names", &names,
				 c->routers, c->nr_routers);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
		putchar('\n');
	} else if (!cs.n) {
		printf("no circuits\n");
	} else {
		for (i = 0; i < cs.n; i++) {
			const struct circ *c = &cs.c[i];

			printf("circuit %" PRIu32 ": %s -> ", c->id,
			       name_of(&names, c->src, buf, sizeof(buf)));
			print_ids_text(&names, c->dsts, c->nr_dsts);
			printf(", color %" PRIu32 ", ", c->color);
			if (c->pid)
				printf("owner pid %" PRIu32 " uid %" PRIu32,
				       c->pid, c->uid);
			else
				printf("pinned (uid %" PRIu32 ")", c->uid);
			printf(", %" PRIu32 " routers: ", c->nr_routers);
			print_ids_text(&names, c->routers, c->nr_routers);
			putchar('\n');
		}
	}
out:
	circs_reset(&cs);
	free(cs.c);
	free(names.name);
	icfab_nl_close(&nl);
	return ret;
}

ICFABCTL_COMMAND("circuit", "list", NULL, cmd_circuit_list,
		 "The module's circuits (CIRCUIT_GET dump).");

struct router {
	uint32_t node, colors, used;
	uint64_t mask;
	char name[ICFAB_NAME_MAX];
};

struct routers {
	struct router *r;
	uint32_t n, cap;
};

static void routers_reset(void *arg)
{
	((struct routers *)arg)->n = 0;
}

static int routers_cb(struct nlattr **tb, void *arg)
{
	struct routers *rs = arg;
	struct router *r;

	if (!tb[ICFAB_A_NODE_ID] || !tb[ICFAB_A_NODE_COLORS] ||
	    !tb[ICFAB_A_COLOR_USED] || !tb[ICFAB_A_COLOR_MASK])
		return -EPROTO;
	if (icfab_array_grow((void **)&rs->r, &rs->cap, rs->n, sizeof(*rs->r),
			     64))
		return -ENOMEM;
	r = &rs->r[rs->n++];
	memset(r, 0, sizeof(*r));
	r->node = nla_get_u32(tb[ICFAB_A_NODE_ID]);
	r->colors = nla_get_u32(tb[ICFAB_A_NODE_COLORS]);
	r->used = nla_get_u32(tb[ICFAB_A_COLOR_USED]);
	r->mask = nla_get_u64(tb[ICFAB_A_COLOR_MASK]);
	if (tb[ICFAB_A_NODE_NAME])
		snprintf(r->name, sizeof(r->name), "%s",
			 (const char *)nla_data(tb[ICFAB_A_NODE_NAME]));
	return 0;
}

static int cmd_colors(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		      int argc, char **argv)
{
	struct routers rs = { 0 };
	struct icfab_json j;
	struct icfab_nl nl;
	uint32_t i, node = 0, used = 0, total = 0;
	int ret, c;

	if (argc > 1)
		return icfabctl_usage_error(cmd, "too many arguments");
	if (argc && icfabctl_parse_u32(argv[0], &node))
		return icfabctl_usage_error(cmd, "'%s' is not a node id", argv[0]);
	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;
	ret = dump(ctl, &nl, ICFAB_CMD_COLOR_GET, routers_cb, &rs,
		   routers_reset, "colors", argc ? (int)node : -1);
	if (ret)
		goto out;
	for (i = 0; i < rs.n; i++) {
		used += rs.r[i].used;
		total += rs.r[i].colors;
	}
	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_u64(&j, "fabric", ctl->fabric);
		json_u64(&j, "used", used);
		json_u64(&j, "total", total);
		json_begin_array(&j, "routers");
		for (i = 0; i < rs.n; i++) {
			json_begin_object(&j, NULL);
			json_u64(&j, "node", rs.r[i].node);
			json_string(&j, "name", rs.r[i].name);
			json_u64(&j, "colors", rs.r[i].colors);
			json_u64(&j, "used", rs.r[i].used);
			json_u64(&j, "mask", rs.r[i].mask);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
		putchar('\n');
	} else if (!rs.n) {
		printf("no routers with a color table\n");
	} else {
		for (i = 0; i < rs.n; i++) {
			bool first = true;

			printf("%-16s node %-5" PRIu32 " %2" PRIu32 "/%" PRIu32
			       " colors in use", rs.r[i].name, rs.r[i].node,
			       rs.r[i].used, rs.r[i].colors);
			for (c = 0; c < 64; c++) {
				if (!(rs.r[i].mask >> c & 1))
					continue;
				printf("%s%d", first ? ": " : ",", c);
				first = false;
			}
			putchar('\n');
		}
		printf("%" PRIu32 " routers, %" PRIu32 "/%" PRIu32
		       " colors in use\n", rs.n, used, total);
	}
out:
	free(rs.r);
	icfab_nl_close(&nl);
	return ret;
}

ICFABCTL_COMMAND(NULL, "colors", "[NODE]", cmd_colors,
		 "Color use per router (COLOR_GET dump), or of one router.");
