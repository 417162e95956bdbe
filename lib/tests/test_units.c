// SPDX-License-Identifier: GPL-2.0
/* Unit parsing: what people write is accepted exactly, the rest refused. */
#include "topo_test.h"

struct good {
	const char *s;
	uint64_t v;
};

static const struct good good_bw[] = {
	{ "50GB/s", 50000000000ULL },
	{ "5.5 GB/s", 5500000000ULL },
	{ "5.5GB/s", 5500000000ULL },
	{ "400Gb/s", 50000000000ULL },
	{ "200Gbps", 25000000000ULL },
	{ "1TB/s", 1000000000000ULL },
	{ "1GiB/s", 1073741824ULL },
	{ "4B/cycle@1.1GHz", 4400000000ULL },
	{ "32b/cycle@1.1GHz", 4400000000ULL },
	{ "8 B/s", 8 },
	{ "0.125KB/s", 125 },
	{ "18446744073709551615B/s", UINT64_MAX },
};

static const char *const bad_bw[] = {
	"", "0GB/s", "0 B/s", "-5GB/s", "50", "50GB", "50GB/sx", "50 GB/s extra",
	"GB/s", ".5GB/s", "5.GB/s", "1e9B/s", "+5GB/s", "50gb/s", "1b/s",
	"20000000000TB/s", "18446744073709551616B/s", "99999999999999999999GB/s",
	"4B/cycle", "4B/cycle@", "4B/cycle@1.1", "4B/cycle@1.1GHzz", "0B/cycle@1GHz",
	"5,5GB/s", "50 GB /s",
};

static const struct good good_size[] = {
	{ "80GiB", 85899345920ULL },
	{ "624KB", 624000 },
	{ "624KiB", 638976 },
	{ "4KiB", 4096 },
	{ "4096", 4096 },
	{ "0", 0 },
	{ "1.5KiB", 1536 },
	{ "2 MB", 2000000 },
	{ "1TiB", 1099511627776ULL },
};

static const char *const bad_size[] = {
	"", "-1", "4K", "4k", "4KiBs", "0.5B", "0.5", "1.0001KB", "4 KiB x",
	"99999999999999999999", "20000000TB",
};

static const struct good good_time[] = {
	{ "500ns", 500000 },
	{ "1.5us", 1500000 },
	{ "2ms", 2000000000ULL },
	{ "30s", 30000000000000ULL },
	{ "1ns", 1000 },
	{ "250ps", 250 },
	{ "0ns", 0 },
	{ "1\xc2\xb5s", 1000000 },
	{ "0.001ns", 1 },
};

static const char *const bad_time[] = {
	"", "500", "-1ns", "1.5", "1.0005ns", "5 parsecs", "1nss", "1 ns 2",
	"99999999999s", "ns",
};

/* Energy per bit in fJ/bit, static power in mW: both 32 bits. */
static const struct good good_energy[] = {
	{ "5pJ/b", 5000 },
	{ "5 pJ/bit", 5000 },
	{ "0.15pJ/b", 150 },
	{ "150fJ/bit", 150 },
	{ "0pJ/b", 0 },
	{ "1.5nJ/b", 1500000 },
	{ "4294967295fJ/b", UINT32_MAX },
};

static const char *const bad_energy[] = {
	"", "-5pJ/b", "5", "5pJ", "5pj/b", "0.0001pJ/b", "5 pJ/b x", "pJ/b",
	"4294967296fJ/b", "5e3fJ/b", "5W",
};

static const struct good good_power[] = {
	{ "300mW", 300 },
	{ "1.5W", 1500 },
	{ "15 W", 15000 },
	{ "0W", 0 },
	{ "2kW", 2000000 },
};

static const char *const bad_power[] = {
	"", "-1W", "1.0005W", "15", "15w", "4294967296mW", "5pJ/b", "1 W/s",
};

/* Efficiency in permille, 100% stored as 0; overhead in ps, at most 1 s. */
static const struct good good_eff[] = {
	{ "95.6%", 956 },
	{ "80 %", 800 },
	{ "0.1%", 1 },
	{ "100%", 0 },
	{ "99.9%", 999 },
};

static const char *const bad_eff[] = {
	"", "0%", "0.05%", "100.1%", "120%", "0.95", "-5%", "95.6 percent",
	"%",
};

static const struct good good_ovh[] = {
	{ "2us", 2000000 },
	{ "0ns", 0 },
	{ "1s", 1000000000000ULL },
	{ "850 ps", 850 },
};

static const char *const bad_ovh[] = {
	"", "2", "-1us", "1.000000000001s", "2s", "1.5ps",
};

static int parse_eff64(const char *s, uint64_t *v, const char **why)
{
	uint32_t x;
	int ret = topo_parse_efficiency(s, &x, why);

	*v = x;
	return ret;
}

/* The 32-bit parsers, as the 64-bit ones for run_good()/run_bad(). */
static int parse_energy64(const char *s, uint64_t *v, const char **why)
{
	uint32_t x;
	int ret = topo_parse_energy(s, &x, why);

	*v = x;
	return ret;
}

static int parse_power64(const char *s, uint64_t *v, const char **why)
{
	uint32_t x;
	int ret = topo_parse_power(s, &x, why);

	*v = x;
	return ret;
}

typedef int (*parser)(const char *, uint64_t *, const char **);

static void run_good(const char *what, parser p, const struct good *g, size_t n)
{
	const char *why = NULL;
	uint64_t v;
	size_t i;

	for (i = 0; i < n; i++) {
		int ret = p(g[i].s, &v, &why);

		ok(!ret && v == g[i].v, "%s '%s' = %llu (got %d, %llu%s%s)", what,
		   g[i].s, (unsigned long long)g[i].v, ret,
		   ret ? 0ULL : (unsigned long long)v, ret ? ": " : "",
		   ret ? why : "");
	}
}

static void run_bad(const char *what, parser p, const char *const *b, size_t n)
{
	const char *why = NULL;
	uint64_t v;
	size_t i;

	for (i = 0; i < n; i++) {
		int ret = p(b[i], &v, &why);

		ok(ret < 0 && why && *why, "%s '%s' rejected (%s)", what, b[i],
		   ret < 0 ? why : "accepted");
	}
}

/* What the dump prints must parse back to the same value. */
static void run_roundtrip(void)
{
	static const uint64_t bws[] = {
		5500000000ULL, 50000000000ULL, 4400000000ULL, 1, 999, 1234567,
		450000000000ULL,
	};
	static const uint64_t times[] = { 1, 1000, 1500000, 250, 999999, 1000000000001ULL };
	static const uint64_t sizes[] = { 638976, 85899345920ULL, 624000, 1, 4096, 1000 };
	const char *why;
	char buf[64];
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(bws) / sizeof(bws[0]); i++) {
		topo_fmt_bandwidth(buf, sizeof(buf), bws[i]);
		ok(!topo_parse_bandwidth(buf, &v, &why) && v == bws[i],
		   "bandwidth %llu prints as '%s' and parses back",
		   (unsigned long long)bws[i], buf);
	}
	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		topo_fmt_time(buf, sizeof(buf), times[i]);
		ok(!topo_parse_time(buf, &v, &why) && v == times[i],
		   "time %llu ps prints as '%s' and parses back",
		   (unsigned long long)times[i], buf);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t e = (uint32_t)(sizes[i] % 1000000007), x;

		topo_fmt_energy(buf, sizeof(buf), e);
		ok(!topo_parse_energy(buf, &x, &why) && x == e,
		   "energy %u fJ/b prints as '%s' and parses back", e, buf);
		topo_fmt_power(buf, sizeof(buf), e);
		ok(!topo_parse_power(buf, &x, &why) && x == e,
		   "power %u mW prints as '%s' and parses back", e, buf);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		topo_fmt_size(buf, sizeof(buf), sizes[i]);
		ok(!topo_parse_size(buf, &v, &why) && v == sizes[i],
		   "size %llu prints as '%s' and parses back",
		   (unsigned long long)sizes[i], buf);
	}
	{
		unsigned int bad = 0;
		uint32_t p, x;

		for (p = 0; p < 1000; p++) {
			topo_fmt_efficiency(buf, sizeof(buf), p);
			bad += topo_parse_efficiency(buf, &x, &why) || x != p;
		}
		ok(!bad, "every efficiency, 0.1%% to 100%%, prints and parses back (%u wrong)",
		   bad);
	}
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	run_good("bandwidth", topo_parse_bandwidth, good_bw, N(good_bw));
	run_bad("bandwidth", topo_parse_bandwidth, bad_bw, N(bad_bw));
	run_good("size", topo_parse_size, good_size, N(good_size));
	run_bad("size", topo_parse_size, bad_size, N(bad_size));
	run_good("time", topo_parse_time, good_time, N(good_time));
	run_bad("time", topo_parse_time, bad_time, N(bad_time));
	run_good("energy", parse_energy64, good_energy, N(good_energy));
	run_bad("energy", parse_energy64, bad_energy, N(bad_energy));
	run_good("power", parse_power64, good_power, N(good_power));
	run_bad("power", parse_power64, bad_power, N(bad_power));
	run_good("efficiency", parse_eff64, good_eff, N(good_eff));
	run_bad("efficiency", parse_eff64, bad_eff, N(bad_eff));
	run_good("message_overhead", topo_parse_overhead, good_ovh,
		 N(good_ovh));
	run_bad("message_overhead", topo_parse_overhead, bad_ovh, N(bad_ovh));
	run_roundtrip();
	return done();
}
