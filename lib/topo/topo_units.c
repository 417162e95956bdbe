// SPDX-License-Identifier: GPL-2.0
/*
 * Units the way people write them, parsed strictly: "50GB/s", "5.5 GB/s",
 * "400Gb/s", "200Gbps", "4B/cycle@1.1GHz", "80GiB", "624KB", "1.5us".
 *
 * Decimal prefixes are SI (1 KB = 1000 B), binary ones are IEC (1 KiB =
 * 1024 B); "B" is a byte and "b" a bit. Results must be whole bytes/s,
 * bytes or picoseconds: "0.5B" is rejected rather than silently rounded,
 * because a topology file is a specification, not a measurement.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <icfab/topo.h>

typedef unsigned __int128 u128;

struct unit {
	const char *name;
	uint64_t num, den;		/* value = number * num / den */
};

#define K1	1000ULL
#define M1	(K1 * K1)
#define G1	(M1 * K1)
#define T1	(G1 * K1)
#define P1	(T1 * K1)

static const struct unit bw_units[] = {
	{ "B/s", 1, 1 },
	{ "KB/s", K1, 1 }, { "kB/s", K1, 1 }, { "MB/s", M1, 1 },
	{ "GB/s", G1, 1 }, { "TB/s", T1, 1 }, { "PB/s", P1, 1 },
	{ "KiB/s", 1ULL << 10, 1 }, { "MiB/s", 1ULL << 20, 1 },
	{ "GiB/s", 1ULL << 30, 1 }, { "TiB/s", 1ULL << 40, 1 },
	{ "b/s", 1, 8 },
	{ "Kb/s", K1, 8 }, { "kb/s", K1, 8 }, { "Mb/s", M1, 8 },
	{ "Gb/s", G1, 8 }, { "Tb/s", T1, 8 }, { "Pb/s", P1, 8 },
	{ "bps", 1, 8 },
	{ "Kbps", K1, 8 }, { "kbps", K1, 8 }, { "Mbps", M1, 8 },
	{ "Gbps", G1, 8 }, { "Tbps", T1, 8 },
	{ NULL, 0, 0 }
};

static const struct unit size_units[] = {
	{ "B", 1, 1 },
	{ "KB", K1, 1 }, { "kB", K1, 1 }, { "MB", M1, 1 }, { "GB", G1, 1 },
	{ "TB", T1, 1 },
	{ "KiB", 1ULL << 10, 1 }, { "MiB", 1ULL << 20, 1 },
	{ "GiB", 1ULL << 30, 1 }, { "TiB", 1ULL << 40, 1 },
	{ NULL, 0, 0 }
};

static const struct unit time_units[] = {
	{ "ps", 1, 1 }, { "ns", K1, 1 }, { "us", M1, 1 }, { "\xc2\xb5s", M1, 1 },
	{ "ms", G1, 1 }, { "s", T1, 1 },
	{ NULL, 0, 0 }
};

/* Per cycle, before the '@'. */
static const struct unit cycle_units[] = {
	{ "B/cycle", 1, 1 }, { "b/cycle", 1, 8 }, { "bit/cycle", 1, 8 },
	{ NULL, 0, 0 }
};

static const struct unit hz_units[] = {
	{ "Hz", 1, 1 }, { "kHz", K1, 1 }, { "KHz", K1, 1 }, { "MHz", M1, 1 },
	{ "GHz", G1, 1 },
	{ NULL, 0, 0 }
};

/* Energy per bit, in fJ/bit (ICFAB_A_LINK_ENERGY_FJ_PER_BIT). */
static const struct unit energy_units[] = {
	{ "fJ/bit", 1, 1 }, { "fJ/b", 1, 1 },
	{ "pJ/bit", K1, 1 }, { "pJ/b", K1, 1 },
	{ "nJ/bit", M1, 1 }, { "nJ/b", M1, 1 },
	{ NULL, 0, 0 }
};

/* Power, in mW (ICFAB_A_LINK_STATIC_MW). */
static const struct unit power_units[] = {
	{ "mW", 1, 1 }, { "W", K1, 1 }, { "kW", M1, 1 },
	{ NULL, 0, 0 }
};

/* Efficiency, in permille of the bandwidth (ICFAB_A_LINK_EFFICIENCY_PERMILLE). */
static const struct unit percent_units[] = {
	{ "%", 10, 1 },
	{ NULL, 0, 0 }
};

/* A decimal: mantissa / 10^frac, digits only, mantissa within 64 bits. */
struct decimal {
	uint64_t mantissa;
	uint32_t frac;
};

static int parse_decimal(const char **sp, struct decimal *d, const char **why)
{
	const char *s = *sp;
	unsigned int digits = 0;
	bool point = false;

	d->mantissa = 0;
	d->frac = 0;
	if (*s == '-') {
		*why = "negative values are not allowed";
		return -ERANGE;
	}
	if (*s < '0' || *s > '9') {
		*why = "expected a number";
		return -EINVAL;
	}
	for (; (*s >= '0' && *s <= '9') || (*s == '.' && !point); s++) {
		if (*s == '.') {
			point = true;
			if (s[1] < '0' || s[1] > '9') {
				*why = "expected digits after the decimal point";
				return -EINVAL;
			}
			continue;
		}
		if (d->mantissa == 0 && *s == '0' && !point)
			continue;	/* leading zeros do not count */
		if (++digits > 20 ||
		    d->mantissa > (UINT64_MAX - (*s - '0')) / 10) {
			*why = "out of range";
			return -ERANGE;
		}
		d->mantissa = d->mantissa * 10 + (*s - '0');
		if (point)
			d->frac++;
	}
	*sp = s;
	return 0;
}

static u128 pow10_u128(uint32_t n)
{
	u128 v = 1;

	while (n--)
		v *= 10;
	return v;
}

static const struct unit *match_unit(const char **sp, const struct unit *units)
{
	const struct unit *best = NULL;
	size_t best_len = 0;

	/* Longest match, so that "b/cycle" is not taken for "b/c...". */
	for (; units->name; units++) {
		size_t n = strlen(units->name);

		if (!strncmp(*sp, units->name, n) && n > best_len) {
			best = units;
			best_len = n;
		}
	}
	if (best)
		*sp += best_len;
	return best;
}

static void skip_spaces(const char **sp)
{
	while (**sp == ' ')
		(*sp)++;
}

/* num/den as a whole number in range; what says "not a whole ..." */
static int to_u64(u128 num, u128 den, uint64_t *out, const char *what,
		  const char **why)
{
	if (num % den) {
		*why = what;
		return -ERANGE;
	}
	num /= den;
	if (num > UINT64_MAX) {
		*why = "out of range";
		return -ERANGE;
	}
	*out = (uint64_t)num;
	return 0;
}

static int parse_with_units(const char *s, const struct unit *units,
			    bool unit_optional, const char *what,
			    uint64_t *out, const char **why)
{
	const struct unit *u;
	struct decimal d;
	int ret;

	if (!s || !*s) {
		*why = "empty value";
		return -EINVAL;
	}
	ret = parse_decimal(&s, &d, why);
	if (ret)
		return ret;
	skip_spaces(&s);
	if (!*s && unit_optional)
		return to_u64(d.mantissa, pow10_u128(d.frac), out, what, why);
	if (!*s) {
		*why = "missing unit";
		return -EINVAL;
	}
	u = match_unit(&s, units);
	if (!u || *s) {
		*why = "unknown unit or trailing characters";
		return -EINVAL;
	}
	return to_u64((u128)d.mantissa * u->num, pow10_u128(d.frac) * u->den,
		      out, what, why);
}

/* "4B/cycle@1.1GHz": bytes (or bits) per cycle times a clock. */
static int parse_per_cycle(const char *s, uint64_t *out, const char **why)
{
	const struct unit *per, *hz;
	struct decimal a, f;
	u128 num, den;
	int ret;

	ret = parse_decimal(&s, &a, why);
	if (ret)
		return ret;
	skip_spaces(&s);
	per = match_unit(&s, cycle_units);
	skip_spaces(&s);
	if (!per || *s++ != '@') {
		*why = "expected <n>B/cycle@<f>GHz";
		return -EINVAL;
	}
	skip_spaces(&s);
	ret = parse_decimal(&s, &f, why);
	if (ret)
		return ret;
	skip_spaces(&s);
	hz = match_unit(&s, hz_units);
	if (!hz || *s) {
		*why = "unknown clock unit or trailing characters";
		return -EINVAL;
	}
	/* Both mantissas fit in 64 bits, so the product fits in 128. */
	num = (u128)a.mantissa * f.mantissa;
	if (num > ((u128)1 << 100) / hz->num) {
		*why = "out of range";
		return -ERANGE;
	}
	num *= hz->num;
	den = pow10_u128(a.frac + f.frac) * per->den;
	return to_u64(num, den, out, "not a whole number of bytes/s", why);
}

int topo_parse_bandwidth(const char *s, uint64_t *bytes_per_s, const char **why)
{
	uint64_t v;
	int ret;

	if (s && strstr(s, "/cycle"))
		ret = parse_per_cycle(s, &v, why);
	else
		ret = parse_with_units(s, bw_units, false,
				       "not a whole number of bytes/s", &v, why);
	if (ret)
		return ret;
	if (v == 0) {
		*why = "bandwidth must be greater than zero";
		return -ERANGE;
	}
	*bytes_per_s = v;
	return 0;
}

/* A plain integer is bytes. */
int topo_parse_size(const char *s, uint64_t *bytes, const char **why)
{
	return parse_with_units(s, size_units, true, "not a whole number of bytes",
				bytes, why);
}

int topo_parse_time(const char *s, uint64_t *ps, const char **why)
{
	return parse_with_units(s, time_units, false,
				"finer than a picosecond", ps, why);
}

int topo_parse_u32(const char *s, uint32_t *v, const char **why)
{
	uint64_t x = 0;

	if (!s || !*s) {
		*why = "empty value";
		return -EINVAL;
	}
	if (*s == '-') {
		*why = "negative values are not allowed";
		return -ERANGE;
	}
	for (; *s; s++) {
		if (*s < '0' || *s > '9') {
			*why = "expected a whole number";
			return -EINVAL;
		}
		x = x * 10 + (*s - '0');
		if (x > UINT32_MAX) {
			*why = "out of range";
			return -ERANGE;
		}
	}
	*v = x;
	return 0;
}

static bool is_pow10(uint64_t v)
{
	while (v >= 10 && v % 10 == 0)
		v /= 10;
	return v == 1;
}

/*
 * Exact formatting: the largest unit that leaves at most three decimals,
 * so that what is printed parses back to the same number.
 */
static char *fmt_exact(char *buf, size_t len, uint64_t v,
		       const struct unit *units, size_t n)
{
	size_t i;

	for (i = n; i-- > 0;) {
		uint64_t scale = units[i].num, whole = v / scale;
		uint64_t rem = v % scale, milli;
		char frac[8];

		if (!whole && i)
			continue;
		if (!rem) {
			snprintf(buf, len, "%llu%s", (unsigned long long)whole,
				 units[i].name);
			return buf;
		}
		if (!is_pow10(scale) || scale < 1000 || rem % (scale / 1000))
			continue;
		milli = rem / (scale / 1000);
		snprintf(frac, sizeof(frac), "%03u", (unsigned int)milli);
		while (frac[strlen(frac) - 1] == '0')
			frac[strlen(frac) - 1] = '\0';
		snprintf(buf, len, "%llu.%s%s", (unsigned long long)whole, frac,
			 units[i].name);
		return buf;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v, units[0].name);
	return buf;
}

char *topo_fmt_bandwidth(char *buf, size_t len, uint64_t bytes_per_s)
{
	static const struct unit u[] = {
		{ "B/s", 1, 1 }, { "KB/s", K1, 1 }, { "MB/s", M1, 1 },
		{ "GB/s", G1, 1 }, { "TB/s", T1, 1 },
	};

	return fmt_exact(buf, len, bytes_per_s, u, 5);
}

char *topo_fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const struct unit bin[] = {
		{ "B", 1, 1 }, { "KiB", 1ULL << 10, 1 }, { "MiB", 1ULL << 20, 1 },
		{ "GiB", 1ULL << 30, 1 }, { "TiB", 1ULL << 40, 1 },
	};
	static const struct unit dec[] = {
		{ "B", 1, 1 }, { "KB", K1, 1 }, { "MB", M1, 1 },
		{ "GB", G1, 1 }, { "TB", T1, 1 },
	};
	int i;

	/* Memory sizes are usually binary; fall back to SI when exact. */
	for (i = 4; i > 0; i--) {
		if (bytes && bytes % bin[i].num == 0)
			return fmt_exact(buf, len, bytes, bin, 5);
		if (bytes && bytes % dec[i].num == 0)
			return fmt_exact(buf, len, bytes, dec, 5);
	}
	return fmt_exact(buf, len, bytes, bin, 1);
}

char *topo_fmt_time(char *buf, size_t len, uint64_t ps)
{
	static const struct unit u[] = {
		{ "ps", 1, 1 }, { "ns", K1, 1 }, { "us", M1, 1 },
		{ "ms", G1, 1 }, { "s", T1, 1 },
	};

	return fmt_exact(buf, len, ps, u, 5);
}

/* A u64 from parse_with_units() that must also fit in 32 bits. */
static int parse_u32_with_units(const char *s, const struct unit *units,
				const char *what, uint32_t *out,
				const char **why)
{
	uint64_t v;
	int ret = parse_with_units(s, units, false, what, &v, why);

	if (ret)
		return ret;
	if (v > UINT32_MAX) {
		*why = "out of range";
		return -ERANGE;
	}
	*out = v;
	return 0;
}

int topo_parse_energy(const char *s, uint32_t *fj_per_bit, const char **why)
{
	return parse_u32_with_units(s, energy_units,
				    "finer than a femtojoule per bit",
				    fj_per_bit, why);
}

int topo_parse_power(const char *s, uint32_t *mw, const char **why)
{
	return parse_u32_with_units(s, power_units, "finer than a milliwatt",
				    mw, why);
}

char *topo_fmt_energy(char *buf, size_t len, uint32_t fj_per_bit)
{
	static const struct unit u[] = {
		{ "fJ/b", 1, 1 }, { "pJ/b", K1, 1 }, { "nJ/b", M1, 1 },
	};

	return fmt_exact(buf, len, fj_per_bit, u, 3);
}

char *topo_fmt_power(char *buf, size_t len, uint32_t mw)
{
	static const struct unit u[] = {
		{ "mW", 1, 1 }, { "W", K1, 1 }, { "kW", M1, 1 },
	};

	return fmt_exact(buf, len, mw, u, 3);
}

/* "95.6%": 1..1000 permille, and 1000 (all of it) is stored as 0. */
int topo_parse_efficiency(const char *s, uint32_t *permille, const char **why)
{
	uint64_t v;
	int ret = parse_with_units(s, percent_units, false,
				   "finer than a tenth of a percent", &v, why);

	if (ret)
		return ret;
	if (!v || v > 1000) {
		*why = "must be more than 0% and at most 100%";
		return -ERANGE;
	}
	*permille = v == 1000 ? 0 : (uint32_t)v;
	return 0;
}

/* A time of at most ICFAB_MSG_OVERHEAD_MAX_PS (1 s). */
int topo_parse_overhead(const char *s, uint64_t *ps, const char **why)
{
	int ret = topo_parse_time(s, ps, why);

	if (ret)
		return ret;
	if (*ps > ICFAB_MSG_OVERHEAD_MAX_PS) {
		*why = "at most 1s";
		return -ERANGE;
	}
	return 0;
}

/* "95.6%"; 0 is "100%". */
char *topo_fmt_efficiency(char *buf, size_t len, uint32_t permille)
{
	if (!permille)
		permille = 1000;
	if (permille % 10)
		snprintf(buf, len, "%u.%u%%", permille / 10, permille % 10);
	else
		snprintf(buf, len, "%u%%", permille / 10);
	return buf;
}
