// SPDX-License-Identifier: GPL-2.0
/*
 * The parser against corpora: every file in tests/bad/ must be rejected
 * for the reason it names in its first line,
 *
 *	# expect: LINE: SUBSTRING
 *
 * with the message starting "FILE:LINE: " and containing SUBSTRING (a
 * file rejected for another reason fails); every file in tests/good/
 * must load, check and route. Both go through the same steps as
 * "icfabd --check".
 */
#include <dirent.h>
#include <unistd.h>

#include "topo_test.h"

#ifndef TOPO_TEST_DIR
#define TOPO_TEST_DIR "tests"
#endif

static int run_check(const char *path, struct topo_err *err)
{
	struct icfab_limits lim;
	struct topo *t = NULL;
	int ret;

	topo_default_limits(&lim);
	err->msg[0] = '\0';
	ret = topo_load_file(path, &t, err);
	if (!ret)
		ret = topo_check(t, &lim, err);
	if (!ret)
		ret = topo_route(t, err);
	if (!ret)
		ret = topo_check(t, &lim, err);
	topo_free(t);
	return ret;
}

static int read_expect(const char *path, unsigned int *line, char *sub, size_t len)
{
	char buf[512], *p;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || sscanf(buf, "# expect: %u: ", line) != 1)
		return -1;
	p = strchr(strchr(buf, ':') + 1, ':') + 2;
	p[strcspn(p, "\n")] = '\0';
	snprintf(sub, len, "%s", p);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int yaml_file(const struct dirent *e)
{
	size_t n = strlen(e->d_name);

	return n > 5 && !strcmp(e->d_name + n - 5, ".yaml");
}

static void run_dir(const char *sub, bool bad)
{
	char dir[512], path[1024], want[256], prefix[1100];
	struct dirent **list;
	struct topo_err err;
	unsigned int line;
	int n, i;

	snprintf(dir, sizeof(dir), "%s/%s", TOPO_TEST_DIR, sub);
	n = scandir(dir, &list, yaml_file, by_name);
	ok(n > (bad ? 30 : 14), "%s: %d files", dir, n);
	for (i = 0; i < n; i++) {
		int ret;

		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		ret = run_check(path, &err);
		if (!bad) {
			ok(!ret, "good/%s accepted%s%s", list[i]->d_name,
			   ret ? ": " : "", ret ? err.msg : "");
		} else if (read_expect(path, &line, want, sizeof(want))) {
			ok(0, "bad/%s has no '# expect: LINE: TEXT' line", list[i]->d_name);
		} else {
			snprintf(prefix, sizeof(prefix), "%s:%u: ", path, line);
			ok(ret && !strncmp(err.msg, prefix, strlen(prefix)) &&
			   strstr(err.msg, want),
			   "bad/%s rejected at line %u for '%s'%s%s", list[i]->d_name,
			   line, want, ret ? "; got: " : ": accepted",
			   ret ? err.msg + strlen(dir) + 1 : "");
		}
		free(list[i]);
	}
	if (n >= 0)
		free(list);
}

/* A preset's own file, written out and read back, is the same fabric. */
static void run_preset_files(void)
{
	const struct topo_preset *p;
	struct topo_err err;
	size_t n, i;

	p = topo_presets(&n);
	for (i = 0; i < n; i++) {
		char path[] = "/tmp/icfab-preset-XXXXXX";
		struct topo *a = NULL, *b = NULL;
		int fd = mkstemp(path);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		bool same;

		if (f) {
			fputs(p[i].yaml, f);
			fclose(f);
		}
		same = f && !topo_load_preset(p[i].name, &a, &err) &&
		       !topo_load_file(path, &b, &err) &&
		       a->nr_nodes == b->nr_nodes && a->nr_links == b->nr_links &&
		       true;
		for (uint32_t l = 0; same && l < a->nr_links; l++)
			same = a->links[l].src_node == b->links[l].src_node &&
			       a->links[l].dst_port == b->links[l].dst_port &&
			       a->links[l].bandwidth == b->links[l].bandwidth &&
			       a->links[l].latency_ps == b->links[l].latency_ps &&
			       a->links[l].switching == b->links[l].switching &&
			       a->links[l].fj_per_bit == b->links[l].fj_per_bit &&
			       a->links[l].static_mw == b->links[l].static_mw &&
			       a->links[l].eff_permille ==
			       b->links[l].eff_permille &&
			       a->links[l].msg_overhead_ps ==
			       b->links[l].msg_overhead_ps;
		ok(same, "preset %s as a file loads to the same fabric", p[i].name);
		topo_free(a);
		topo_free(b);
		unlink(path);
	}
}

/*
 * switching: per fabric in defaults.link, per generator, per sub-block
 * (a leaf-spine's uplinks) and per link, each over the one before.
 */
static void run_switching(void)
{
	static const char yaml[] =
		"defaults: {link: {switching: cut-through}}\n"
		"topology:\n"
		"  switch: {endpoints: 8, radix: 4, bandwidth: 1GB/s,\n"
		"           uplink: {switching: store-and-forward}}\n"
		"nodes: [{name: host, kind: endpoint}]\n"
		"links:\n"
		"  - {from: host, to: ep0, bandwidth: 1GB/s}\n"
		"  - {from: host, to: ep1, bandwidth: 1GB/s,\n"
		"     switching: store-and-forward}\n";
	struct topo *t = load(yaml);
	unsigned int ct = 0, up_sf = 1, host_ep0 = 0, host_ep1 = 1;
	uint32_t host, i;

	ok(t != NULL, "switching: a file with every placement loads");
	if (!t)
		return;
	host = t->nr_nodes - 1;
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];
		const char *a = t->nodes[l->src_node].name;
		const char *b = t->nodes[l->dst_node].name;
		bool ep_leaf = !strncmp(a, "ep", 2) || !strncmp(b, "ep", 2);

		if (l->src_node == host || l->dst_node == host) {
			if (!strcmp(a, "ep0") || !strcmp(b, "ep0"))
				host_ep0 += l->switching == ICFAB_SWITCHING_CUT_THROUGH;
			else
				host_ep1 &= l->switching == ICFAB_SWITCHING_STORE_FORWARD;
		} else if (ep_leaf) {
			ct += l->switching == ICFAB_SWITCHING_CUT_THROUGH;
		} else {
			up_sf &= l->switching == ICFAB_SWITCHING_STORE_FORWARD;
		}
	}
	ok(ct == 16, "switching: the generator's endpoint links take defaults.link's cut-through (%u of 16)", ct);
	ok(up_sf, "switching: its uplinks take their own store-and-forward");
	ok(host_ep0 == 2, "switching: an explicit link without one takes the default (%u of 2)", host_ep0);
	ok(host_ep1, "switching: an explicit link's own mode wins");
	ok(!strcmp(topo_switching_name(ICFAB_SWITCHING_CUT_THROUGH), "cut-through") &&
	   topo_switching_parse("store-and-forward") == ICFAB_SWITCHING_STORE_FORWARD &&
	   topo_switching_parse("wormhole") < 0,
	   "switching: names parse and print both ways");
	topo_free(t);
}

/*
 * multipath: the generator's parallel cables take their own, an explicit
 * link takes defaults.link's, and the names go both ways.
 */
static void run_multipath(void)
{
	static const char yaml[] =
		"defaults: {link: {multipath: flow}}\n"
		"topology:\n"
		"  exchange: {tiles: 3, mode: direct, links_per_pair: 3,\n"
		"             bandwidth: 1GB/s, multipath: spray}\n"
		"nodes: [{name: host, kind: endpoint}]\n"
		"links:\n"
		"  - {from: host, to: tile0, bandwidth: 1GB/s}\n";
	struct topo *t = load(yaml);
	unsigned int spray = 0, flow = 0;
	uint32_t i;

	ok(t != NULL, "multipath: a file with a generator's and a link's loads");
	if (!t)
		return;
	for (i = 0; i < t->nr_links; i++) {
		spray += t->links[i].multipath == ICFAB_MULTIPATH_SPRAY;
		flow += t->links[i].multipath == ICFAB_MULTIPATH_FLOW;
	}
	ok(spray == 18 && flow == 2,
	   "multipath: 18 parallel cables spray, the host's 2 links take the default flow (%u, %u)",
	   spray, flow);
	ok(!strcmp(topo_multipath_name(ICFAB_MULTIPATH_SPRAY), "spray") &&
	   topo_multipath_parse("none") == ICFAB_MULTIPATH_NONE &&
	   topo_multipath_parse("adaptive") < 0,
	   "multipath: names parse and print both ways");
	topo_free(t);
}

/*
 * A figure goes where class goes: defaults.link, a generator, its
 * sub-blocks, an explicit link; each over the one before. One file puts
 * a figure in every place: two nodes of two GPUs (8 scale-up and 8
 * scale-out links), a host with a link to gpu0_0 that takes
 * defaults.link's and one to gpu1_0 with its own (2 links each way).
 */
enum placement {
	PLACED_OWN, PLACED_DEFAULT, PLACED_SCALE_UP, PLACED_SCALE_OUT,
	PLACED_OTHER, NR_PLACED
};

static const char placement_yaml[] =
	"defaults: {link: {%s}}\n"
	"topology:\n"
	"  hierarchical:\n"
	"    nodes: 2\n"
	"    per_node: 2\n"
	"    scale_up: {bandwidth: 100GB/s, class: nvlink, %s}\n"
	"    scale_out: {bandwidth: 50GB/s, class: nic, %s}\n"
	"nodes: [{name: host, kind: endpoint}]\n"
	"links:\n"
	"  - {from: host, to: gpu0_0, bandwidth: 1GB/s}\n"
	"  - {from: host, to: gpu1_0, bandwidth: 1GB/s, %s}\n";

static const unsigned int placed_links[PLACED_OTHER] = {
	[PLACED_OWN] = 2, [PLACED_DEFAULT] = 2,
	[PLACED_SCALE_UP] = 8, [PLACED_SCALE_OUT] = 8,
};

static enum placement placement_of(const struct topo *t,
				   const struct topo_link *l)
{
	uint32_t host = t->nr_nodes - 1;	/* the file's one explicit node */
	bool h = l->src_node == host || l->dst_node == host;
	bool g10 = !strcmp(t->nodes[l->src_node].name, "gpu1_0") ||
		   !strcmp(t->nodes[l->dst_node].name, "gpu1_0");

	if (h)
		return g10 ? PLACED_OWN : PLACED_DEFAULT;
	if (l->class == ICFAB_LINK_CLASS_NVLINK)
		return PLACED_SCALE_UP;
	if (l->class == ICFAB_LINK_CLASS_NIC)
		return PLACED_SCALE_OUT;
	return PLACED_OTHER;
}

/* The two figures of a link a case looks at. */
struct figures {
	uint64_t a, b;
};

struct placement_case {
	const char *what;
	const char *put[PLACED_OTHER];	/* the figures in each place */
	struct figures (*figures_of)(const struct topo_link *l);
	struct figures want[PLACED_OTHER];
	const char *says[PLACED_OTHER];	/* what a right link shows */
};

static void run_placement(const struct placement_case *pc)
{
	unsigned int n[NR_PLACED] = { 0 };
	char yaml[1024];
	struct topo *t;

	snprintf(yaml, sizeof(yaml), placement_yaml,
		 pc->put[PLACED_DEFAULT], pc->put[PLACED_SCALE_UP],
		 pc->put[PLACED_SCALE_OUT], pc->put[PLACED_OWN]);
	t = load(yaml);
	ok(t != NULL, "%s: a file with every placement loads", pc->what);
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];
		enum placement p = placement_of(t, l);
		struct figures f = pc->figures_of(l);

		n[p] += p == PLACED_OTHER ||
			(f.a == pc->want[p].a && f.b == pc->want[p].b);
	}
	for (unsigned int p = 0; p < PLACED_OTHER; p++)
		ok(n[p] == placed_links[p], "%s: %s (%u of %u)", pc->what,
		   pc->says[p], n[p], placed_links[p]);
	ok(!n[PLACED_OTHER], "%s: no other links (%u)", pc->what,
	   n[PLACED_OTHER]);
	topo_free(t);
}

static struct figures energy_of(const struct topo_link *l)
{
	return (struct figures){ l->fj_per_bit, l->static_mw };
}

static struct figures calibration_of(const struct topo_link *l)
{
	return (struct figures){ l->eff_permille, l->msg_overhead_ps };
}

static const struct placement_case placement_cases[] = {
	{ .what = "energy",	/* fJ/bit and mW */
	  .put = {
		[PLACED_DEFAULT] = "energy: 0.5pJ/b",
		[PLACED_SCALE_UP] = "energy: 5pJ/b",
		[PLACED_SCALE_OUT] = "energy: 15pJ/b, static_power: 1.5W",
		[PLACED_OWN] = "energy: 150fJ/bit",
	  },
	  .figures_of = energy_of,
	  .want = {
		[PLACED_OWN] = { 150, 0 }, [PLACED_DEFAULT] = { 500, 0 },
		[PLACED_SCALE_UP] = { 5000, 0 },
		[PLACED_SCALE_OUT] = { 15000, 1500 },
	  },
	  .says = {
		[PLACED_SCALE_UP] = "scale-up links take their block's 5 pJ/b",
		[PLACED_SCALE_OUT] = "scale-out links take 15 pJ/b and 1.5 W",
		[PLACED_DEFAULT] = "an explicit link without one takes defaults.link's",
		[PLACED_OWN] = "an explicit link's own figure wins",
	  } },
	/* 100% is the ideal link, stored as 0. */
	{ .what = "calibration",	/* permille and ps */
	  .put = {
		[PLACED_DEFAULT] = "message_overhead: 100ns",
		[PLACED_SCALE_UP] = "efficiency: 95.6%",
		[PLACED_SCALE_OUT] = "efficiency: 85%, message_overhead: 2us",
		[PLACED_OWN] = "efficiency: 100%, message_overhead: 0ns",
	  },
	  .figures_of = calibration_of,
	  .want = {
		[PLACED_OWN] = { 0, 0 }, [PLACED_DEFAULT] = { 0, 100000 },
		[PLACED_SCALE_UP] = { 956, 100000 },
		[PLACED_SCALE_OUT] = { 850, 2000000 },
	  },
	  .says = {
		[PLACED_SCALE_UP] = "scale-up links take 95.6% and defaults.link's 100 ns",
		[PLACED_SCALE_OUT] = "scale-out links take 85% and 2 us",
		[PLACED_DEFAULT] = "an explicit link without one takes defaults.link's",
		[PLACED_OWN] = "an explicit link's 100% and 0 ns win",
	  } },
};

int main(void)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(placement_cases); i++)
		run_placement(&placement_cases[i]);
	run_switching();
	run_multipath();
	run_dir("bad", true);
	run_dir("good", false);
	run_preset_files();
	return done();
}
