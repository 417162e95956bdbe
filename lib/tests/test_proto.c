// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd's socket protocol (proto.c) and the allocator glue the service
 * uses: plan a request, let "the module" choose the id, adopt it; a
 * restarted daemon adopts the module's circuits and gets the same
 * colors back; bad input changes nothing.
 */
#include <errno.h>

#include <icfab/circuit.h>
#include <icfab/proto.h>
#include "topo_test.h"

/* Lines refused with an errno and a message that contains @why. */
static const struct refused_case {
	const char *line;
	int err;
	const char *why;	/* "" when only the errno matters */
	const char *what;
} refused_cases[] = {
	{ "circuit-open pe0_0", -EINVAL, "usage: circuit-open SRC DST",
	  "circuit-open without a destination" },
	{ "circuit-close 12x", -EINVAL, "'12x' is not a circuit id",
	  "circuit-close 12x" },
	{ "circuit-close -1", -EINVAL, "", "circuit-close -1 is refused" },
	{ "circuit-close 4294967296", -EINVAL, "",
	  "circuit-close 2^32 is refused" },
	{ "circuit-list extra", -E2BIG, "", "circuit-list takes no argument" },
	{ "reconfigure-ocs now", -EBADMSG, "unknown request 'reconfigure-ocs'",
	  "unknown verb" },
	{ "   ", -EINVAL, "", "an empty line is refused" },
	{ "fault link 3 degrade 0", -EINVAL,
	  "degrade: permille 0 out of 1..999", "degrade 0" },
	{ "fault link 3 degrade 1000", -EINVAL, "permille 1000 out of 1..999",
	  "degrade 1000" },
	{ "fault link 3 degrade", -EINVAL, "degrade needs PERMILLE",
	  "degrade without permille" },
	{ "fault link 3 down 5", -EINVAL, "down takes no more arguments",
	  "down with a permille" },
	{ "fault link x3 down", -EINVAL, "'x3' is not a link id",
	  "fault link x3" },
	{ "fault link 3 sideways", -EINVAL,
	  "'sideways': expected down, up or degrade", "fault link 3 sideways" },
	{ "fault node 4 degrade 5", -EINVAL, "expected down or up",
	  "a node is not degraded" },
	{ "fault switch 4 down", -EINVAL, "expected link or node",
	  "fault switch" },
	{ "fault link 3", -EINVAL, "usage: fault link ID",
	  "fault link 3 (no op)" },
	{ "ocs list all", -EINVAL, "", "ocs list takes no arguments" },
	{ "ocs apply ocs0 0:1 0", -EINVAL, "not both",
	  "pairs and a permutation mixed" },
	{ "ocs apply ocs0 0:x", -EINVAL, "'0:x' is not IN:OUT",
	  "ocs apply 0:x" },
	{ "ocs apply ocs0", -EINVAL, "usage: ocs apply NAME",
	  "ocs apply without ports" },
	{ "ocs reset ocs0", -EINVAL, "expected list or apply", "ocs reset" },
};

static void test_refused(void)
{
	struct proto_request r;
	char why[256], line[512];
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(refused_cases); i++) {
		const struct refused_case *c = &refused_cases[i];

		snprintf(line, sizeof(line), "%s", c->line);
		why[0] = '\0';
		ret = proto_parse(line, &r, why, sizeof(why));
		ok(ret == c->err && strstr(why, c->why), "%s: %d '%s'",
		   c->what, ret, why);
	}
}

static void test_parse(void)
{
	struct proto_request r;
	char why[256], line[8192];
	int ret, i, off;

	strcpy(line, "circuit-open pe0_0 pe1_0");
	ret = proto_parse(line, &r, why, sizeof(why));
	ok(!ret && r.kind == PROTO_CIRCUIT_OPEN && r.nr_args == 2 &&
	   !strcmp(r.args[0], "pe0_0") && !strcmp(r.args[1], "pe1_0"),
	   "circuit-open SRC DST parses");

	strcpy(line, "  circuit-open\tpe0_0  pe1_0 pe2_0  ");
	ret = proto_parse(line, &r, why, sizeof(why));
	ok(!ret && r.nr_args == 3 && !strcmp(r.args[2], "pe2_0"),
	   "tabs and runs of spaces separate words; a tree has 3 args");

	strcpy(line, "circuit-close 12");
	ret = proto_parse(line, &r, why, sizeof(why));
	ok(!ret && r.kind == PROTO_CIRCUIT_CLOSE && r.id == 12,
	   "circuit-close 12");
	off = sprintf(line, "circuit-open s");
	for (i = 0; i < ICFAB_CIRCUIT_MAX_DSTS + 1; i++)
		off += sprintf(line + off, " d");
	ret = proto_parse(line, &r, why, sizeof(why));
	ok(ret == -E2BIG, "%d destinations: -E2BIG", ICFAB_CIRCUIT_MAX_DSTS + 1);
	off = sprintf(line, "circuit-open s");
	for (i = 0; i < ICFAB_CIRCUIT_MAX_DSTS; i++)
		off += sprintf(line + off, " d");
	ok(!proto_parse(line, &r, why, sizeof(why)) &&
	   r.nr_args == ICFAB_CIRCUIT_MAX_DSTS + 1,
	   "%d destinations parse", ICFAB_CIRCUIT_MAX_DSTS);

	ok(proto_needs(PROTO_CIRCUIT_PIN) == PROTO_PERM_ADMIN &&
	   proto_needs(PROTO_CIRCUIT_OPEN) == PROTO_PERM_USER &&
	   proto_needs(PROTO_COLORS) == PROTO_PERM_USER,
	   "pinning needs an administrator; open and colors a user");
}

static void test_perm(void)
{
	uint32_t groups[] = { 10, 44 };
	struct proto_peer root = { .pid = 1, .uid = 0, .gid = 0 };
	struct proto_peer user = { .pid = 2, .uid = 1000, .gid = 1000,
				   .nr_groups = 2, .groups = groups };
	struct proto_peer nobody = { .pid = 3, .uid = 65534, .gid = 65534 };
	struct proto_dev dev666 = { 0, 0, 020666 }, dev660 = { 0, 44, 020660 };
	struct proto_dev dev600 = { 0, 0, 020600 }, dev_own = { 1000, 0, 020066 };

	ok(proto_peer_perm(&root, &dev600, false, 0) == PROTO_PERM_ADMIN,
	   "root is an administrator");
	ok(proto_peer_perm(&nobody, &dev666, false, 0) == PROTO_PERM_USER,
	   "anyone may use circuits when the device is 0666");
	ok(proto_peer_perm(&nobody, &dev600, false, 0) == PROTO_PERM_NONE,
	   "nobody may not when it is 0600");
	ok(proto_peer_perm(&user, &dev660, false, 0) == PROTO_PERM_USER &&
	   proto_peer_perm(&nobody, &dev660, false, 0) == PROTO_PERM_NONE,
	   "0660 group 44: a supplementary member may, others not");
	ok(proto_peer_perm(&user, &dev_own, false, 0) == PROTO_PERM_NONE,
	   "the owner class decides first (owner 1000, mode 0066)");
	ok(proto_peer_perm(&user, &dev600, true, 10) == PROTO_PERM_ADMIN &&
	   proto_peer_perm(&user, &dev600, true, 11) == PROTO_PERM_NONE,
	   "--admin-group: members are administrators");
}

static void test_replies(void)
{
	char line[256], *rest, buf[32];

	strcpy(line, "ok id=3 color=5 routers=4");
	ok(proto_reply(line, &rest) == 0 && proto_value(rest, "id", buf, sizeof(buf)) &&
	   !strcmp(buf, "3") && proto_value(rest, "routers", buf, sizeof(buf)) &&
	   !strcmp(buf, "4"), "ok reply with values");
	ok(!proto_value("ok xid=3", "id", buf, sizeof(buf)),
	   "a key matches whole words only");
	strcpy(line, "err ENOSPC router (1,0): 4/4 colors in use");
	ok(proto_reply(line, &rest) == -ENOSPC &&
	   !strcmp(rest, "router (1,0): 4/4 colors in use"),
	   "err reply: -ENOSPC and the message");
	strcpy(line, "err EWHAT x");
	ok(proto_reply(line, &rest) == -EPROTO, "an unknown errno name: -EPROTO");
	strcpy(line, "hello");
	ok(proto_reply(line, &rest) == -EPROTO, "garbage: -EPROTO");
	ok(!strcmp(proto_errname(EHOSTUNREACH), "EHOSTUNREACH") &&
	   proto_errno("EACCES") == EACCES && !proto_errno("ENOTHING"),
	   "errno names both ways");
}

/* The service's path: plan, "the module" gives the id, adopt. */
static void test_glue(void)
{
	const char *yaml =
		"defaults:\n"
		"  switch: {colors: 2}\n"
		"topology:\n"
		"  mesh: {dims: [3, 1], routers: true, bandwidth: 1GB/s, latency: 1ns}\n";
	struct topo_err err = { "" };
	struct circuit_table *ct = NULL, *ct2 = NULL;
	struct circuit_plan p;
	struct topo *t = NULL;
	uint32_t a, b, c, dsts[2];
	struct circuit rec;
	const struct circuit *got;
	int ret;

	if (topo_load_string(yaml, strlen(yaml), "glue.yaml", &t, &err) ||
	    topo_route(t, &err) || circuit_table_new(t, &ct, &err)) {
		ok(0, "a 3x1 mesh with 2-color routers: %s", err.msg);
		topo_free(t);
		return;
	}
	a = topo_find_node(t, "pe0_0");
	b = topo_find_node(t, "pe1_0");
	c = topo_find_node(t, "pe2_0");

	ret = circuit_plan(ct, a, &c, 1, false, &p, &err);
	ok(!ret && p.color == 0 && p.nr_routers == 3,
	   "plan pe0_0 -> pe2_0: color 0 at 3 routers (%d: %s)", ret, err.msg);
	ok(circuit_count(ct) == 0 && !circuit_router_mask(ct, p.routers[1]),
	   "a plan marks nothing");
	rec = (struct circuit){ .id = 7, .owner = 1234, .owner_uid = 1000,
		.color = p.color, .src = a, .nr_dsts = 1, .dsts = &c,
		.nr_links = p.nr_links, .links = p.links,
		.nr_routers = p.nr_routers, .routers = p.routers };
	ok(!circuit_adopt(ct, &rec, &err), "adopted under the module's id 7");
	got = circuit_get(ct, 7);
	ok(got && got->owner == 1234 && got->owner_uid == 1000 &&
	   got->nr_routers == 3 && circuit_count(ct) == 1,
	   "circuit 7 records owner pid/uid and its routers");
	ok(circuit_adopt(ct, &rec, &err) == -EEXIST && circuit_count(ct) == 1,
	   "adopting id 7 again: -EEXIST, nothing changed");
	circuit_plan_free(&p);

	/* A restarted daemon: a fresh table adopts what the module holds. */
	ok(!circuit_table_new(t, &ct2, &err), "a second table (restart)");
	rec = *circuit_get(ct, 7);
	rec.nr_links = 0;	/* the module keeps routers, not links */
	rec.links = NULL;
	ok(!circuit_adopt(ct2, &rec, &err) &&
	   circuit_router_mask(ct2, rec.routers[0]) == 1,
	   "the restarted table holds color 0 where the module does");
	ok(!circuit_plan(ct2, a, &b, 1, false, &p, &err) && p.color == 1,
	   "the next plan gets color 1, as in the first table");
	circuit_plan_free(&p);
	ok(!circuit_close(ct2, 7, &err) && !circuit_router_mask(ct2, rec.routers[0]),
	   "closing an adopted circuit frees its color at its routers");

	/* Bad adoptions change nothing. */
	rec.id = 3;
	rec.color = 2;
	ok(circuit_adopt(ct2, &rec, &err) < 0 && strstr(err.msg, "not a router with color 2") &&
	   circuit_count(ct2) == 0, "color beyond the table: refused (%s)", err.msg);
	rec.color = 0;
	dsts[0] = t->nr_nodes;
	rec.dsts = dsts;
	ok(circuit_adopt(ct2, &rec, &err) < 0 && strstr(err.msg, "no destination node") &&
	   circuit_count(ct2) == 0, "missing destination: refused (%s)", err.msg);

	/* Budget: 2 colors; the third plan names the full router. */
	ok(circuit_open(ct2, 1, a, c, &err) >= 0 && circuit_open(ct2, 1, a, c, &err) >= 0,
	   "two circuits use both colors");
	ret = circuit_plan(ct2, b, &c, 1, false, &p, &err);
	ok(ret == -ENOSPC && strstr(err.msg, "router (1,0): 2/2 colors in use"),
	   "the third plan: -ENOSPC '%s'", err.msg);

	circuit_table_free(ct2);
	circuit_table_free(ct);
	topo_free(t);
}

/* fault and ocs: parsing, the messages, and who may ask. */
static void test_fault_ocs(void)
{
	struct proto_request r;
	char why[256], line[512];
	int ret;

#define PARSE(text) (strcpy(line, text), proto_parse(line, &r, why, sizeof(why)))
	ret = PARSE("fault link 17 down");
	ok(!ret && r.kind == PROTO_FAULT_LINK && r.id == 17 &&
	   r.op == PROTO_FAULT_DOWN, "fault link 17 down");
	ret = PARSE("fault link 3 up");
	ok(!ret && r.kind == PROTO_FAULT_LINK && r.op == PROTO_FAULT_UP,
	   "fault link 3 up");
	ret = PARSE("fault link 3 degrade 250");
	ok(!ret && r.op == PROTO_FAULT_DEGRADE && r.permille == 250,
	   "fault link 3 degrade 250");
	ret = PARSE("fault node chip12 down");
	ok(!ret && r.kind == PROTO_FAULT_NODE && !strcmp(r.name, "chip12") &&
	   r.op == PROTO_FAULT_DOWN, "fault node chip12 down");

	ret = PARSE("ocs list");
	ok(!ret && r.kind == PROTO_OCS_LIST, "ocs list");
	ret = PARSE("ocs apply ocs0 1 0 3 2");
	ok(!ret && r.kind == PROTO_OCS_APPLY && !strcmp(r.name, "ocs0") &&
	   !r.pairs_given && r.nr_ports == 4 && r.perm[0] == 1 &&
	   r.perm[3] == 2, "ocs apply NAME with a full permutation");
	ret = PARSE("ocs apply ocs0 0:1 1:0");
	ok(!ret && r.pairs_given && r.nr_ports == 2 && r.pair_in[0] == 0 &&
	   r.perm[0] == 1 && r.pair_in[1] == 1 && r.perm[1] == 0,
	   "ocs apply NAME with IN:OUT pairs");
#undef PARSE

	ok(proto_needs(PROTO_FAULT_LINK) == PROTO_PERM_ADMIN &&
	   proto_needs(PROTO_FAULT_NODE) == PROTO_PERM_ADMIN &&
	   proto_needs(PROTO_OCS_LIST) == PROTO_PERM_ADMIN &&
	   proto_needs(PROTO_OCS_APPLY) == PROTO_PERM_ADMIN,
	   "faults and the OCS are for administrators only");
	{
		struct proto_dev dev = { 0, 0, 0666 };
		struct proto_peer user = { .pid = 9, .uid = 1000, .gid = 1000 };

		ok(proto_peer_perm(&user, &dev, false, 0) < proto_needs(PROTO_FAULT_LINK),
		   "a user of a 0666 device may not inject faults");
		ok(proto_peer_perm(&user, &dev, true, 1000) >= proto_needs(PROTO_OCS_APPLY),
		   "a member of the admin group may reconfigure the OCS");
	}
}

/* Connection limits: 64 in all, 8 for admins, 16 per uid. */
static void test_admit(void)
{
	static const struct proto_limits def = {
		PROTO_MAX_CLIENTS_DEFAULT, PROTO_MAX_PER_UID_DEFAULT,
		PROTO_ADMIN_SLOTS_DEFAULT,
	};
	static const struct admit_case {
		enum proto_perm perm;
		uint32_t nr_clients, nr_of_uid;
		int ret;
		const char *what;
	} cases[] = {
		{ PROTO_PERM_USER, 0, 0, 0, "the first connection" },
		{ PROTO_PERM_USER, 40, 15, 0, "a uid's 16th connection" },
		{ PROTO_PERM_USER, 40, 16, -EUSERS, "a uid's 17th connection" },
		{ PROTO_PERM_NONE, 40, 16, -EUSERS,
		  "a peer without rights counts against its uid too" },
		{ PROTO_PERM_USER, 55, 0, 0, "a user takes slot 56 of 64" },
		{ PROTO_PERM_USER, 56, 0, -EBUSY,
		  "slots 57..64 are not for users" },
		{ PROTO_PERM_ADMIN, 56, 40, 0,
		  "an admin gets a reserved slot, whatever its uid holds" },
		{ PROTO_PERM_ADMIN, 63, 0, 0, "an admin takes the last slot" },
		{ PROTO_PERM_ADMIN, 64, 0, -EBUSY, "nobody gets slot 65" },
	};
	struct proto_limits bad;
	char why[128];
	size_t i;
	int ret;

	ok(!proto_limits_check(&def, why, sizeof(why)),
	   "the default limits are consistent");
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct admit_case *c = &cases[i];

		why[0] = '\0';
		ret = proto_admit(&def, c->perm, c->nr_clients, c->nr_of_uid,
				  why, sizeof(why));
		ok(ret == c->ret && (!ret || why[0]), "%s: %d '%s'", c->what,
		   ret, why);
	}
	bad = def;
	bad.admin_slots = 64;
	ret = proto_limits_check(&bad, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "admin-slots 64"),
	   "all slots reserved: refused '%s'", why);
	bad = def;
	bad.max_clients = 0;
	ret = proto_limits_check(&bad, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "max-clients 0 out of 1..1024"),
	   "no slots at all: refused '%s'", why);
	bad = def;
	bad.max_per_uid = 0;
	ret = proto_limits_check(&bad, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "max-per-uid 0"),
	   "no connection per uid: refused '%s'", why);
	ok(!strcmp(proto_errname(EUSERS), "EUSERS") &&
	   proto_errno("ETIMEDOUT") == ETIMEDOUT,
	   "EUSERS and ETIMEDOUT have names on the wire");
}

int main(void)
{
	test_parse();
	test_refused();
	test_admit();
	test_fault_ocs();
	test_perm();
	test_replies();
	test_glue();
	return done();
}
