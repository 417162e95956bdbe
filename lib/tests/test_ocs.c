// SPDX-License-Identifier: GPL-2.0
/*
 * OCS reconfiguration planning: permutation validation, plans that list
 * only the changed ports, phase times (a 5-minute delay in ps), no-op
 * detection, the hold/fail policy, and the mapping onto topology links.
 */
#include <errno.h>

#include <icfab/ocs.h>
#include "topo_test.h"

#define PS_PER_S	1000000000000ULL

static struct ocs *make(uint32_t n, const uint32_t *perm, uint64_t delay_ps,
			enum ocs_policy policy)
{
	struct ocs_desc d = {
		.name = "ocs0", .nr_ports = n, .perm = perm,
		.reconfig_delay_ps = delay_ps, .policy = policy,
	};
	struct topo_err err = { "" };
	struct ocs *o;

	if (ocs_new(&d, &o, &err)) {
		diag("ocs_new: %s", err.msg);
		return NULL;
	}
	return o;
}

static void refused(int ret, int want, const struct topo_err *err, const char *msg)
{
	ok(ret == want && !strcmp(err->msg, msg), "refused (%d): '%s'", ret, err->msg);
	if (strcmp(err->msg, msg))
		diag("expected '%s'", msg);
}

static void test_validation(void)
{
	static const uint32_t good[8] = { 1, 0, 2, 3, 4, 5, 7, 6 };
	static const uint32_t dup[8] = { 1, 1, 2, 3, 4, 5, 6, 7 };
	static const uint32_t range[8] = { 0, 1, 2, 9, 4, 5, 6, 7 };
	struct ocs *o = make(8, NULL, 1000, OCS_POLICY_HOLD);
	struct topo_err err = { "" };
	struct ocs_desc d = { .name = "ocs1", .nr_ports = 8, .perm = dup };
	struct ocs_pair pairs[3];
	uint32_t out[8], i, same = 1;
	struct ocs *bad = NULL;

	if (!o) {
		ok(0, "ocs_new");
		return;
	}
	for (i = 0; i < 8; i++)
		same &= o->perm[i] == i;
	ok(same, "no permutation given: identity");
	ok(!ocs_perm_check(o, good, 8, &err), "a permutation is accepted");
	refused(ocs_perm_check(o, dup, 8, &err), -EINVAL, &err,
		"ocs ocs0: port 1 -> 1: output 1 is already the target of port 0");
	refused(ocs_perm_check(o, range, 8, &err), -EINVAL, &err,
		"ocs ocs0: port 3 -> 9: no output port 9 (ports 0..7)");
	refused(ocs_perm_check(o, good, 7, &err), -EINVAL, &err,
		"ocs ocs0: the permutation has 7 entries, the OCS has 8 ports");
	refused(ocs_new(&d, &bad, &err), -EINVAL, &err,
		"ocs ocs1: port 1 -> 1: output 1 is already the target of port 0");
	ok(!bad, "no OCS made from a bad permutation");
	d.perm = NULL;
	d.nr_ports = 0;
	refused(ocs_new(&d, &bad, &err), -EINVAL, &err, "ocs ocs1: 0 ports, must be 1..65536");
	d.nr_ports = 8;
	d.policy = 7;
	refused(ocs_new(&d, &bad, &err), -EINVAL, &err, "ocs ocs1: unknown policy 7");

	/* partial requests */
	pairs[0] = (struct ocs_pair){ 0, 1 };
	pairs[1] = (struct ocs_pair){ 1, 0 };
	ok(!ocs_perm_from_pairs(o, pairs, 2, out, &err) && out[0] == 1 && out[1] == 0 &&
	   out[2] == 2 && out[7] == 7, "pairs 0->1, 1->0 make a swap, the rest unchanged");
	refused(ocs_perm_from_pairs(o, pairs, 1, out, &err), -EINVAL, &err,
		"ocs ocs0: port 1 -> 1: output 1 is already the target of port 0");
	pairs[2] = (struct ocs_pair){ 9, 0 };
	refused(ocs_perm_from_pairs(o, pairs, 3, out, &err), -EINVAL, &err,
		"ocs ocs0: pairs[2]: no input port 9 (ports 0..7)");
	pairs[2] = (struct ocs_pair){ 0, 2 };
	refused(ocs_perm_from_pairs(o, pairs, 3, out, &err), -EINVAL, &err,
		"ocs ocs0: pairs[2]: input port 0 is also in pairs[0]");
	ok(ocs_policy_parse("hold") == OCS_POLICY_HOLD &&
	   ocs_policy_parse("fail") == OCS_POLICY_FAIL &&
	   ocs_policy_parse("drop") == -EINVAL &&
	   !strcmp(ocs_policy_name(OCS_POLICY_FAIL), "fail"),
	   "policy names parse and print");
	ocs_free(o);
}

static void test_plan(void)
{
	static const uint32_t next[8] = { 1, 0, 2, 3, 4, 5, 7, 6 };
	struct topo_err err = { "" };
	uint64_t five_min = 0, t0 = 1000000000000000000ULL;	/* 1e18 ps: 11.6 days */
	struct ocs_plan p;
	const char *why;
	struct ocs *o;
	uint32_t i, unchanged = 1;
	int ret;

	ret = topo_parse_time("300s", &five_min, &why);
	ok(!ret && five_min == 300 * PS_PER_S, "5 minutes = %llu ps", (unsigned long long)five_min);
	o = make(8, NULL, five_min, OCS_POLICY_FAIL);
	if (!o) {
		ok(0, "ocs_new");
		return;
	}
	ret = ocs_plan(o, next, 8, t0, &p, &err);
	ok(!ret && !p.noop && p.nr_changes == 4, "swap two pairs: 4 ports change (%u)",
	   p.nr_changes);
	ok(p.nr_changes == 4 &&
	   p.changes[0].port == 0 && p.changes[0].from == 0 && p.changes[0].to == 1 &&
	   p.changes[1].port == 1 && p.changes[1].from == 1 && p.changes[1].to == 0 &&
	   p.changes[2].port == 6 && p.changes[2].to == 7 &&
	   p.changes[3].port == 7 && p.changes[3].to == 6,
	   "only the changed ports, ascending, with old and new targets");
	ok(p.t_down_ps == t0, "links down at T");
	ok(p.t_up_ps == t0 + 300 * PS_PER_S && p.t_up_ps - p.t_down_ps == five_min,
	   "new circuits up at T + 5 min, exact in ps (%llu)", (unsigned long long)p.t_up_ps);
	ok(p.policy == OCS_POLICY_FAIL && p.delay_ps == five_min, "plan carries policy fail");
	for (i = 0; i < 8; i++)
		unchanged &= o->perm[i] == i;
	ok(unchanged, "planning changes nothing in the OCS");
	ok(!ocs_commit(o, &p) && o->perm[0] == 1 && o->perm[7] == 6,
	   "commit: the OCS takes the new permutation");
	ocs_plan_free(&p);

	ret = ocs_plan(o, next, 8, UINT64_MAX - 5, &p, &err);
	ok(!ret && p.noop && p.nr_changes == 0 && p.t_up_ps == p.t_down_ps,
	   "the same permutation again: a no-op, even at the end of time");
	ocs_plan_free(&p);

	o->policy = OCS_POLICY_HOLD;
	ret = ocs_plan(o, (const uint32_t[8]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8,
		       UINT64_MAX - 5, &p, &err);
	ok(ret == -EOVERFLOW && !p.changes &&
	   !strcmp(err.msg, "ocs ocs0: start 18446744073709551610 ps + delay 300000000000000 ps overflows the fabric clock"),
	   "T + delay past u64: -EOVERFLOW '%s'", err.msg);
	ret = ocs_plan(o, (const uint32_t[8]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8,
		       UINT64_MAX - five_min, &p, &err);
	ok(!ret && p.t_up_ps == UINT64_MAX && p.policy == OCS_POLICY_HOLD,
	   "T + delay exactly u64 max is fine; policy hold carried");
	ocs_plan_free(&p);

	o->reconfig_delay_ps = 2000000;	/* 2 us */
	ret = ocs_plan(o, (const uint32_t[8]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8, 0, &p, &err);
	ok(!ret && p.t_down_ps == 0 && p.t_up_ps == 2000000, "a 2 us delay at T = 0");
	ocs_plan_free(&p);
	ret = ocs_plan(o, (const uint32_t[8]){ 0, 1, 2, 3, 4, 5, 6, 6 }, 8, 0, &p, &err);
	ok(ret == -EINVAL && !p.changes && strstr(err.msg, "port 7 -> 6"),
	   "a plan for a non-permutation is refused: '%s'", err.msg);
	ocs_free(o);
}

static const char *ocs_yaml =
	"defaults:\n  link: {bandwidth: 50GB/s, latency: 2us, class: ocs}\n"
	"nodes:\n"
	"  - {name: x0, kind: endpoint}\n  - {name: x1, kind: endpoint}\n"
	"  - {name: x2, kind: endpoint}\n  - {name: y0, kind: endpoint}\n"
	"  - {name: y1, kind: endpoint}\n  - {name: y2, kind: endpoint}\n"
	"links:\n"
	"  - {from: x0, to: y0}\n  - {from: x1, to: y1}\n"
	"  - {from: x2, to: y2, class: ici}\n"
	"  - {from: x0, to: x1, class: ici}\n";

static void test_links(void)
{
	struct topo *t = load(ocs_yaml);
	struct topo_err err = { "" };
	struct ocs_end in[3], out[3];
	struct ocs_desc d = {
		.name = "ocs0", .nr_ports = 2, .reconfig_delay_ps = 1000,
		.in = in, .out = out,
	};
	struct ocs_link_plan lp;
	struct ocs_plan p;
	struct ocs *o;
	uint32_t i, x0, x1, y0, y1, good = 1;
	int ret;

	if (!t) {
		ok(0, "topology loads");
		return;
	}
	x0 = node_id(t, "x0");
	x1 = node_id(t, "x1");
	y0 = node_id(t, "y0");
	y1 = node_id(t, "y1");
	for (i = 0; i < 3; i++) {
		in[i] = (struct ocs_end){ node_id(t, (const char *[]){ "x0", "x1", "x2" }[i]), 0 };
		out[i] = (struct ocs_end){ node_id(t, (const char *[]){ "y0", "y1", "y2" }[i]), 0 };
	}
	if (ocs_new(&d, &o, &err)) {
		ok(0, "ocs_new: %s", err.msg);
		topo_free(t);
		return;
	}
	ok(!ocs_check_topo(t, o, &err), "the topology holds the OCS's circuits x0-y0, x1-y1");
	ocs_plan(o, (const uint32_t[2]){ 1, 0 }, 2, 5000, &p, &err);
	ret = ocs_plan_links(t, o, &p, &lp, &err);
	ok(!ret && lp.nr_down == 4 && lp.nr_up == 4,
	   "swap: 4 directed links down, 4 up (%u, %u)", lp.nr_down, lp.nr_up);
	if (lp.nr_down == 4 && lp.nr_up == 4) {
		const struct topo_link *l = t->links;

		ok(l[lp.down[0]].src_node == x0 && l[lp.down[0]].dst_node == y0 &&
		   l[lp.down[1]].src_node == y0 && l[lp.down[1]].dst_node == x0 &&
		   l[lp.down[2]].src_node == x1 && l[lp.down[2]].dst_node == y1 &&
		   l[lp.down[3]].src_node == y1 && l[lp.down[3]].dst_node == x1,
		   "down: both directions of x0-y0 and x1-y1");
		ok(lp.up[0].src_node == x0 && lp.up[0].dst_node == y1 &&
		   lp.up[1].src_node == y1 && lp.up[1].dst_node == x0 &&
		   lp.up[2].src_node == x1 && lp.up[2].dst_node == y0 &&
		   lp.up[3].src_node == y0 && lp.up[3].dst_node == x1 &&
		   lp.up[0].port == 0 && lp.up[2].port == 1,
		   "up: x0-y1 and x1-y0, both directions, tagged with their port");
		for (i = 0; i < 4; i++)
			good &= lp.up[i].src_port == 0 && lp.up[i].dst_port == 0 &&
				lp.up[i].spec.class == ICFAB_LINK_CLASS_OCS &&
				lp.up[i].spec.bandwidth == 50000000000ULL &&
				lp.up[i].spec.latency_ps == 2000000;
		ok(good, "new links on the same ports, with the old links' class, bandwidth, latency");
	}
	ocs_link_plan_free(&lp);
	ocs_plan_free(&p);

	ocs_plan(o, (const uint32_t[2]){ 0, 1 }, 2, 5000, &p, &err);
	ok(!ocs_plan_links(t, o, &p, &lp, &err) && p.noop && !lp.nr_down && !lp.nr_up,
	   "no-op plan: no links touched");
	ocs_link_plan_free(&lp);
	ocs_plan_free(&p);

	/* The description disagrees with the cabling. */
	o->perm[0] = 1;
	o->perm[1] = 0;
	ok(ocs_check_topo(t, o, &err) == -EINVAL &&
	   !strcmp(err.msg, "ocs ocs0: port 0: x0:0 is cabled to y0:0, not to output 1 (y1:0)"),
	   "wrong permutation for the topology: '%s'", err.msg);
	ocs_free(o);

	d.nr_ports = 3;
	ocs_new(&d, &o, &err);
	ok(o && ocs_check_topo(t, o, &err) == -EINVAL &&
	   !strcmp(err.msg, "ocs ocs0: port 2: link 4 (x2:0 -> y2:0) is class ici, not ocs"),
	   "a circuit on a non-OCS link: '%s'", err.msg);
	ocs_free(o);

	in[2] = in[0];
	refused(ocs_new(&d, &o, &err), -EINVAL, &err,
		"ocs ocs0: node 0 port 0 is cabled to two OCS ports");
	in[2] = (struct ocs_end){ 9, 0 };
	ocs_new(&d, &o, &err);
	ok(o && ocs_check_topo(t, o, &err) == -ENOENT &&
	   !strcmp(err.msg, "ocs ocs0: port 2: no node 9"), "unknown node: '%s'", err.msg);
	ocs_free(o);
	topo_free(t);
}

#ifndef TOPO_TEST_DIR
#define TOPO_TEST_DIR "tests"
#endif

/* An ocs: section in a topology file: cabling, circuits, a plan on it. */
static void test_file(void)
{
	static const uint32_t swap[2] = { 1, 0 };
	struct topo_err err = { "" };
	struct ocs_link_plan lp;
	struct ocs_plan plan;
	struct topo *t = NULL;
	struct ocs *o;
	int a, c, d, l;

	if (topo_load_file(TOPO_TEST_DIR "/good/ocs.yaml", &t, &err) ||
	    topo_route(t, &err)) {
		ok(0, "good/ocs.yaml: %s", err.msg);
		topo_free(t);
		return;
	}
	o = topo_find_ocs(t, "ocs0");
	ok(t->nr_ocs == 1 && o && o->nr_ports == 2 &&
	   o->reconfig_delay_ps == 10 * 1000000000ULL &&
	   o->policy == OCS_POLICY_HOLD, "the file's ocs0: 2 ports, 10ms, hold");
	if (!o) {
		topo_free(t);
		return;
	}
	ok(!ocs_check_topo(t, o, &err), "its circuits are in the topology%s%s",
	   err.msg[0] ? ": " : "", err.msg);
	a = topo_find_node(t, "a");
	c = topo_find_node(t, "c");
	d = topo_find_node(t, "d");
	l = topo_port_link(t, a, 1);
	ok(l >= 0 && t->links[l].dst_node == (uint32_t)c &&
	   t->links[l].class == ICFAB_LINK_CLASS_OCS &&
	   t->links[l].bandwidth == 25000000000ULL,
	   "identity: a:1 is cabled to c:1, class ocs, 25GB/s");
	ok(!ocs_plan(o, swap, 2, 1000, &plan, &err) && plan.nr_changes == 2 &&
	   plan.t_up_ps == 1000 + o->reconfig_delay_ps, "the swap: 2 changes, up at T + 10ms");
	ok(!ocs_plan_links(t, o, &plan, &lp, &err) && lp.nr_down == 4 &&
	   lp.nr_up == 4 && lp.down[0] == (uint32_t)l &&
	   lp.up[0].src_node == (uint32_t)a && lp.up[0].dst_node == (uint32_t)d &&
	   lp.up[0].dst_port == 1 && lp.up[1].src_node == (uint32_t)d,
	   "its links: a->c and c->a down, a->d and d->a up");
	ocs_link_plan_free(&lp);
	ocs_plan_free(&plan);
	topo_free(t);
}

int main(void)
{
	test_file();
	test_validation();
	test_plan();
	test_links();
	return done();
}
