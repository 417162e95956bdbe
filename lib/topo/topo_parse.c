// SPDX-License-Identifier: GPL-2.0
/*
 * Topology files (YAML, schema in lib/topo/TOPOLOGY.md).
 *
 * libyaml's document API keeps the start mark of every node, so every
 * message can name the line of the value it is about. The schema is
 * strict: unknown and duplicate keys are errors, because a misspelt
 * "bandwdith" that silently falls back to a default is the worst kind of
 * wrong result.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include <icfab/ocs.h>
#include <icfab/topo.h>

struct pctx {
	struct topo *t;
	yaml_document_t doc;
	const char *file;		/* interned in t */
	struct topo_err *err;
	struct topo_defaults defs;
};

static struct topo_src src_of(const struct pctx *c, const yaml_node_t *n)
{
	struct topo_src s = { c->file, n ? n->start_mark.line + 1 : 0 };

	return s;
}

static int perr(struct pctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct pctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	struct topo_src s = src_of(c, n);
	char msg[sizeof(c->err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return topo_errf(c->err, &s, "%s", msg);
}

static yaml_node_t *node_at(struct pctx *c, int index)
{
	return yaml_document_get_node(&c->doc, index);
}

static const char *scalar_of(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ?
		(const char *)n->data.scalar.value : NULL;
}

#define for_each_pair(c, map, p)					\
	for (p = (map)->data.mapping.pairs.start;			\
	     p < (map)->data.mapping.pairs.top; p++)

/*
 * A link's energy and calibration go wherever its class goes
 * (get_link_fields()), so a mapping that takes "class" takes these too.
 */
static const char *const energy_keys[] = {
	"energy", "static_power", "efficiency", "message_overhead", NULL
};

static bool is_energy_key(const char *const *keys, const char *key)
{
	const char *const *k;

	for (k = keys; *k && strcmp(*k, "class"); k++)
		;
	if (!*k)
		return false;
	for (k = energy_keys; *k && strcmp(*k, key); k++)
		;
	return *k;
}

/*
 * A mapping whose keys are all in keys[] (NULL-terminated), each at most
 * once. what names the mapping in messages ("topology.torus").
 */
static int check_map(struct pctx *c, yaml_node_t *map, const char *what,
		     const char *const *keys)
{
	yaml_node_pair_t *p, *q;
	const char *const *k;

	if (!map || map->type != YAML_MAPPING_NODE)
		return perr(c, map, "%s: expected a mapping of keys to values", what);
	for_each_pair(c, map, p) {
		yaml_node_t *kn = node_at(c, p->key);
		const char *key = scalar_of(kn);

		if (!key)
			return perr(c, kn, "%s: keys must be plain words", what);
		for (k = keys; *k && strcmp(*k, key); k++)
			;
		if (!*k && !is_energy_key(keys, key)) {
			char known[256] = "";
			size_t off = 0;

			for (k = keys; *k && off < sizeof(known); k++)
				off += snprintf(known + off, sizeof(known) - off,
						"%s%s", k == keys ? "" : ", ", *k);
			if (is_energy_key(keys, "energy") && off < sizeof(known))
				snprintf(known + off, sizeof(known) - off,
					 ", energy, static_power, efficiency, message_overhead");
			return perr(c, kn, "unknown key '%s' in %s (known: %s)",
				    key, what, known);
		}
		for (q = map->data.mapping.pairs.start; q < p; q++)
			if (!strcmp(scalar_of(node_at(c, q->key)), key))
				return perr(c, kn, "duplicate key '%s' in %s",
					    key, what);
	}
	return 0;
}

static yaml_node_t *map_get(struct pctx *c, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *p;

	for_each_pair(c, map, p)
		if (!strcmp(scalar_of(node_at(c, p->key)), key))
			return node_at(c, p->value);
	return NULL;
}

/* The value of key as a string; 0 and *v untouched when absent. */
static int get_str(struct pctx *c, yaml_node_t *map, const char *key,
		   const char **v)
{
	yaml_node_t *n = map_get(c, map, key);

	if (!n)
		return 0;
	if (!scalar_of(n) || !*scalar_of(n))
		return perr(c, n, "%s: expected a value", key);
	*v = scalar_of(n);
	return 0;
}

/* Two keys that what (a list's item) must have: "what: a and b are required". */
static int get_required_strs(struct pctx *c, yaml_node_t *map, const char *what,
			     const char *a, const char **va,
			     const char *b, const char **vb)
{
	int ret = get_str(c, map, a, va);

	if (!ret)
		ret = get_str(c, map, b, vb);
	if (!ret && (!*va || !*vb))
		return perr(c, map, "%s: %s and %s are required", what, a, b);
	return ret;
}

typedef int (*unit_parser)(const char *s, uint64_t *v, const char **why);

static int get_unit(struct pctx *c, yaml_node_t *map, const char *key,
		    uint64_t *v, unit_parser parse, const char *example)
{
	const char *s = NULL, *why = NULL;
	yaml_node_t *n = map_get(c, map, key);
	int ret = get_str(c, map, key, &s);

	if (ret || !s)
		return ret;
	if (parse(s, v, &why))
		return perr(c, n, "%s: '%s': %s (e.g. %s)", key, s, why, example);
	return 0;
}

typedef int (*unit32_parser)(const char *s, uint32_t *v, const char **why);

static int get_unit32(struct pctx *c, yaml_node_t *map, const char *key,
		      uint32_t *v, unit32_parser parse, const char *example)
{
	const char *s = NULL, *why = NULL;
	int ret = get_str(c, map, key, &s);

	if (ret || !s)
		return ret;
	if (parse(s, v, &why))
		return perr(c, map_get(c, map, key), "%s: '%s': %s (e.g. %s)",
			    key, s, why, example);
	return 0;
}

/* What the messages give as examples of each unit. */
#define BW_EXAMPLES		"50GB/s, 400Gb/s, 4B/cycle@1.1GHz"
#define SIZE_EXAMPLES		"80GiB, 624KB, 4096"
#define TIME_EXAMPLES		"500ns, 1.5us"
#define ENERGY_EXAMPLES		"5pJ/b, 150fJ/bit"

static int get_bw(struct pctx *c, yaml_node_t *map, const char *key, uint64_t *v)
{
	return get_unit(c, map, key, v, topo_parse_bandwidth, BW_EXAMPLES);
}

static int get_size(struct pctx *c, yaml_node_t *map, const char *key, uint64_t *v)
{
	return get_unit(c, map, key, v, topo_parse_size, SIZE_EXAMPLES);
}

static int get_time(struct pctx *c, yaml_node_t *map, const char *key, uint64_t *v)
{
	return get_unit(c, map, key, v, topo_parse_time, TIME_EXAMPLES);
}

static int get_u32(struct pctx *c, yaml_node_t *map, const char *key,
		   uint32_t *v, uint32_t min, uint32_t max)
{
	const char *s = NULL, *why = NULL;
	yaml_node_t *n = map_get(c, map, key);
	uint32_t x;
	int ret = get_str(c, map, key, &s);

	if (ret || !s)
		return ret;
	if (topo_parse_u32(s, &x, &why))
		return perr(c, n, "%s: '%s': %s", key, s, why);
	if (x < min || x > max)
		return perr(c, n, "%s: %u is out of range (%u..%u)", key, x, min, max);
	*v = x;
	return 0;
}

static int get_bool(struct pctx *c, yaml_node_t *map, const char *key, bool *v)
{
	const char *s = NULL;
	int ret = get_str(c, map, key, &s);

	if (ret || !s)
		return ret;
	if (!strcmp(s, "true"))
		*v = true;
	else if (!strcmp(s, "false"))
		*v = false;
	else
		return perr(c, map_get(c, map, key),
			    "%s: '%s': expected true or false", key, s);
	return 0;
}

/* One of a list of words; the index goes to *v. */
static int get_word(struct pctx *c, yaml_node_t *map, const char *key,
		    int *v, int (*parse)(const char *), const char *known)
{
	const char *s = NULL;
	int ret = get_str(c, map, key, &s), x;

	if (ret || !s)
		return ret;
	x = parse(s);
	if (x < 0)
		return perr(c, map_get(c, map, key), "%s: '%s': expected one of %s",
			    key, s, known);
	*v = x;
	return 0;
}

/* ---- fields by table ------------------------------------------------ */

/* How struct field reads its key, and the type of the member it fills. */
enum field_kind {
	FIELD_STR,		/* const char * */
	FIELD_BOOL,		/* bool */
	FIELD_U32,		/* uint32_t, min..max */
	FIELD_UNIT,		/* uint64_t, through unit */
	FIELD_UNIT32,		/* uint32_t, through unit32 */
	FIELD_WORD,		/* uint32_t, the index of one of a list of words */
};

/*
 * A key of a mapping and the member of a struct its value goes to. The
 * objects with many plain keys (generators, links' fields, nodes, tiers)
 * describe them in a table, read by get_fields() in order, so that the
 * key a message names is the first one at fault, as it always was.
 */
struct field {
	const char *key;
	enum field_kind kind;
	size_t off;			/* of the member, in the struct */
	uint32_t min, max;		/* FIELD_U32 */
	unit_parser unit;		/* FIELD_UNIT */
	unit32_parser unit32;		/* FIELD_UNIT32 */
	int (*word)(const char *);	/* FIELD_WORD */
	const char *examples;		/* FIELD_UNIT*: e.g.; FIELD_WORD: the words */
};

/* The member's offset; does not compile when the member is not @size bytes. */
#define FIELD_OFF(type, member, size)					\
	(offsetof(type, member) +					\
	 0 * sizeof(char[sizeof(((type *)0)->member) == (size) ? 1 : -1]))

#define FIELD(type, member, k, kd, size, ...)				\
	{ .key = k, .kind = kd, .off = FIELD_OFF(type, member, size),	\
	  __VA_ARGS__ }
#define STR_FIELD(type, member, k)					\
	FIELD(type, member, k, FIELD_STR, sizeof(const char *))
#define BOOL_FIELD(type, member, k)					\
	FIELD(type, member, k, FIELD_BOOL, sizeof(bool))
#define U32_FIELD(type, member, k, lo, hi)				\
	FIELD(type, member, k, FIELD_U32, sizeof(uint32_t), .min = lo, .max = hi)
#define UNIT_FIELD(type, member, k, parse, eg)				\
	FIELD(type, member, k, FIELD_UNIT, sizeof(uint64_t),	\
	      .unit = parse, .examples = eg)
#define UNIT32_FIELD(type, member, k, parse, eg)			\
	FIELD(type, member, k, FIELD_UNIT32, sizeof(uint32_t),	\
	      .unit32 = parse, .examples = eg)
#define WORD_FIELD(type, member, k, parse, words)			\
	FIELD(type, member, k, FIELD_WORD, sizeof(uint32_t),	\
	      .word = parse, .examples = words)
#define BW_FIELD(type, member, k)					\
	UNIT_FIELD(type, member, k, topo_parse_bandwidth, BW_EXAMPLES)
#define SIZE_FIELD(type, member, k)					\
	UNIT_FIELD(type, member, k, topo_parse_size, SIZE_EXAMPLES)
#define TIME_FIELD(type, member, k)					\
	UNIT_FIELD(type, member, k, topo_parse_time, TIME_EXAMPLES)
#define ENERGY_FIELD(type, member, k)					\
	UNIT32_FIELD(type, member, k, topo_parse_energy, ENERGY_EXAMPLES)

/* A word into a uint32_t member; *v is untouched when absent or wrong. */
static int get_word32(struct pctx *c, yaml_node_t *map, const char *key,
		      uint32_t *v, int (*parse)(const char *), const char *known)
{
	int x = *v, ret = get_word(c, map, key, &x, parse, known);

	*v = x;
	return ret;
}

/* The keys of fields[] (ending at a NULL key) of map into obj. */
static int get_fields(struct pctx *c, yaml_node_t *map, void *obj,
		      const struct field *fields)
{
	const struct field *f;
	int ret = 0;

	for (f = fields; !ret && f->key; f++) {
		void *v = (char *)obj + f->off;

		switch (f->kind) {
		case FIELD_STR:
			ret = get_str(c, map, f->key, v);
			break;
		case FIELD_BOOL:
			ret = get_bool(c, map, f->key, v);
			break;
		case FIELD_U32:
			ret = get_u32(c, map, f->key, v, f->min, f->max);
			break;
		case FIELD_UNIT:
			ret = get_unit(c, map, f->key, v, f->unit, f->examples);
			break;
		case FIELD_UNIT32:
			ret = get_unit32(c, map, f->key, v, f->unit32,
					 f->examples);
			break;
		case FIELD_WORD:
			ret = get_word32(c, map, f->key, v, f->word,
					 f->examples);
			break;
		}
	}
	return ret;
}

#define CLASSES "other, nvlink, pcie, nic, ici, ocs, mesh, ipu, ualink"
#define SWITCHING_MODES "store-and-forward, cut-through"
#define MULTIPATH_MODES "none, flow, spray"

static const struct field link_fields[] = {
	BW_FIELD(struct topo_link_spec, bandwidth, "bandwidth"),
	TIME_FIELD(struct topo_link_spec, latency_ps, "latency"),
	WORD_FIELD(struct topo_link_spec, class, "class", topo_class_parse,
		   CLASSES),
	WORD_FIELD(struct topo_link_spec, switching, "switching",
		   topo_switching_parse, SWITCHING_MODES),
	WORD_FIELD(struct topo_link_spec, multipath, "multipath",
		   topo_multipath_parse, MULTIPATH_MODES),
	ENERGY_FIELD(struct topo_link_spec, fj_per_bit, "energy"),
	UNIT32_FIELD(struct topo_link_spec, static_mw, "static_power",
		     topo_parse_power, "1.5W, 300mW"),
	UNIT32_FIELD(struct topo_link_spec, eff_permille, "efficiency",
		     topo_parse_efficiency, "95.6%, 80%"),
	UNIT_FIELD(struct topo_link_spec, msg_overhead_ps, "message_overhead",
		   topo_parse_overhead, "1.5us, 200ns"),
	{ .key = NULL }
};

/*
 * bandwidth, latency, class, switching, multipath, and the energy and
 * calibration of map, on spec.
 */
static int get_link_fields(struct pctx *c, yaml_node_t *map,
			   struct topo_link_spec *spec)
{
	return get_fields(c, map, spec, link_fields);
}

static int need_bandwidth(struct pctx *c, yaml_node_t *n, const char *what,
			  const struct topo_link_spec *spec)
{
	if (!spec->bandwidth)
		return perr(c, n, "%s: no bandwidth (give one here or in defaults.link)",
			    what);
	return 0;
}

/*
 * A sub-mapping {bandwidth, latency, class, switching, multipath};
 * absent fields keep *spec.
 */
static int get_link_block(struct pctx *c, yaml_node_t *map, const char *key,
			  const char *what, struct topo_link_spec *spec)
{
	static const char *const keys[] = { "bandwidth", "latency", "class", "switching", "multipath", NULL };
	yaml_node_t *n = map_get(c, map, key);
	char path[96];
	int ret;

	if (!n)
		return 0;
	snprintf(path, sizeof(path), "%s.%s", what, key);
	ret = check_map(c, n, path, keys);
	if (!ret)
		ret = get_link_fields(c, n, spec);
	if (!ret)
		ret = need_bandwidth(c, n, path, spec);
	return ret;
}

/* dims: [4, 4, 4] */
static int get_dims(struct pctx *c, yaml_node_t *map, const char *key,
		    uint32_t *ndims, uint32_t *size, bool required)
{
	yaml_node_t *n = map_get(c, map, key);
	yaml_node_item_t *it;
	const char *why;

	if (!n) {
		if (required)
			return perr(c, map, "%s: required", key);
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return perr(c, n, "%s: expected a list such as [4, 4, 4]", key);
	*ndims = 0;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node_at(c, *it);

		if (*ndims == TOPO_MAX_DIMS)
			return perr(c, e, "%s: at most %d dimensions", key, TOPO_MAX_DIMS);
		if (!scalar_of(e) || topo_parse_u32(scalar_of(e), &size[*ndims], &why))
			return perr(c, e, "%s: '%s' is not a size", key,
				    scalar_of(e) ? scalar_of(e) : "");
		if (!size[*ndims])
			return perr(c, e, "%s: a dimension of size 0", key);
		(*ndims)++;
	}
	if (!*ndims)
		return perr(c, n, "%s: at least one dimension", key);
	return 0;
}

/* ---- fabric and defaults ------------------------------------------- */

static int parse_fabric(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"name", "segment_size", "time_mode", "dilation", NULL
	};
	const char *name = NULL, *mode = NULL;
	uint64_t seg = c->t->segment_size;
	int ret;

	ret = check_map(c, n, "fabric", keys);
	c->t->src = src_of(c, n);
	if (!ret)
		ret = get_str(c, n, "name", &name);
	if (!ret && name && strlen(name) >= ICFAB_NAME_MAX)
		return perr(c, map_get(c, n, "name"), "name: at most %d characters",
			    ICFAB_NAME_MAX - 1);
	if (!ret)
		ret = get_size(c, n, "segment_size", &seg);
	if (!ret && seg > UINT32_MAX)
		return perr(c, map_get(c, n, "segment_size"),
			    "segment_size: too large");
	if (!ret)
		ret = get_str(c, n, "time_mode", &mode);
	if (!ret && mode) {
		if (!strcmp(mode, "virtual"))
			c->t->time_mode = ICFAB_TIME_VIRTUAL;
		else if (!strcmp(mode, "paced"))
			c->t->time_mode = ICFAB_TIME_PACED;
		else
			return perr(c, map_get(c, n, "time_mode"),
				    "time_mode: '%s': expected virtual or paced", mode);
	}
	if (!ret)
		ret = get_u32(c, n, "dilation", &c->t->dilation, 1, UINT32_MAX);
	if (ret)
		return ret;
	if (name)
		strcpy(c->t->name, name);
	c->t->segment_size = seg;
	return 0;
}

static const struct field default_node_fields[] = {
	SIZE_FIELD(struct topo_defaults, mem_bytes, "memory"),
	U32_FIELD(struct topo_defaults, dma_engines, "dma_engines", 1, 1024),
	{ .key = NULL }
};

static const struct field default_switch_fields[] = {
	U32_FIELD(struct topo_defaults, colors, "colors", 0, UINT32_MAX),
	{ .key = NULL }
};

static const char *const default_ep_keys[] = { "memory", "dma_engines", NULL };
static const char *const default_sw_keys[] = { "colors", NULL };
static const char *const default_link_keys[] = {
	"bandwidth", "latency", "class", "switching", "multipath", NULL
};

/* A mapping under defaults: its keys, and its fields in struct topo_defaults. */
struct defaults_block {
	const char *key, *what;
	const char *const *keys;
	const struct field *fields;
	size_t off;			/* of the struct the fields are in */
};

/* In this order. */
static const struct defaults_block defaults_blocks[] = {
	{ "endpoint", "defaults.endpoint", default_ep_keys,
	  default_node_fields, 0 },
	{ "switch", "defaults.switch", default_sw_keys,
	  default_switch_fields, 0 },
	{ "link", "defaults.link", default_link_keys, link_fields,
	  offsetof(struct topo_defaults, link) },
	{ .key = NULL }
};

static int parse_defaults(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = { "endpoint", "switch", "link", NULL };
	const struct defaults_block *b;
	yaml_node_t *sub;
	int ret = check_map(c, n, "defaults", keys);

	for (b = defaults_blocks; !ret && b->key; b++) {
		sub = map_get(c, n, b->key);
		if (sub)
			ret = check_map(c, sub, b->what, b->keys);
		if (sub && !ret)
			ret = get_fields(c, sub, (char *)&c->defs + b->off,
					 b->fields);
	}
	return ret;
}

/* ---- generators ---------------------------------------------------- */

/* The generator's own bandwidth/latency/class, over defaults.link. */
static int gen_link(struct pctx *c, yaml_node_t *n, const char *what,
		    struct topo_link_spec *spec)
{
	int ret;

	*spec = c->defs.link;
	ret = get_link_fields(c, n, spec);
	if (!ret)
		ret = need_bandwidth(c, n, what, spec);
	return ret;
}

/* After dims (or a ring's nodes). */
static const struct field grid_fields[] = {
	STR_FIELD(struct topo_gen_grid, name, "name"),
	BOOL_FIELD(struct topo_gen_grid, routers, "routers"),
	STR_FIELD(struct topo_gen_grid, router_name, "router_name"),
	{ .key = NULL }
};

static int parse_grid(struct pctx *c, yaml_node_t *key, yaml_node_t *n,
		      const char *gen)
{
	static const char *const mesh_keys[] = {
		"dims", "name", "routers", "router_name", "bandwidth",
		"latency", "class", "switching", "multipath", "local", NULL
	};
	static const char *const torus_keys[] = {
		"dims", "name", "routers", "router_name", "bandwidth",
		"latency", "class", "switching", "multipath", "local", "blocks", "block_link", NULL
	};
	static const char *const ring_keys[] = {
		"nodes", "name", "bandwidth", "latency", "class", "switching", "multipath", NULL
	};
	static const char *const sm_keys[] = {
		"dims", "variant", "name", "routers", "router_name",
		"bandwidth", "latency", "class", "switching", "multipath", "local", "boundary", NULL
	};
	bool ring = !strcmp(gen, "ring"), sm = !strcmp(gen, "supermesh");
	struct topo_gen_grid g = {
		.router_name = "rt",
		.torus = ring || !strcmp(gen, "torus"),
	};
	struct topo_src src = src_of(c, key);
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "topology.%s", gen);
	ret = check_map(c, n, what, ring ? ring_keys : sm ? sm_keys :
			g.torus ? torus_keys : mesh_keys);
	if (ret)
		return ret;
	g.name = ring ? "n" : sm ? "chiplet" : g.torus ? "chip" : "pe";
	if (ring) {
		g.ndims = 1;
		ret = get_u32(c, n, "nodes", &g.size[0], 1, UINT32_MAX);
		if (!ret && !map_get(c, n, "nodes"))
			return perr(c, n, "nodes: required");
	} else {
		ret = get_dims(c, n, "dims", &g.ndims, g.size, true);
	}
	if (!ret)
		ret = get_fields(c, n, &g, grid_fields);
	if (!ret)
		ret = gen_link(c, n, what, &g.link);
	if (ret)
		return ret;
	g.local = g.block_link = g.boundary = g.link;
	ret = get_link_block(c, n, "local", what, &g.local);
	if (!ret)
		ret = get_link_block(c, n, "block_link", what, &g.block_link);
	if (!ret)
		ret = get_link_block(c, n, "boundary", what, &g.boundary);
	if (!ret) {
		uint32_t nb = 0;

		ret = get_dims(c, n, "blocks", &nb, g.block, false);
		if (!ret && nb && nb != g.ndims)
			return perr(c, map_get(c, n, "blocks"),
				    "blocks: %u dimensions, but dims has %u", nb, g.ndims);
	}
	if (!ret && sm) {
		const char *v = NULL;

		ret = get_str(c, n, "variant", &v);
		if (!ret && !v)
			return perr(c, n, "variant: required (bi or alter)");
		if (!ret && !strcmp(v, "bi"))
			g.supermesh = TOPO_SUPERMESH_BI;
		else if (!ret && !strcmp(v, "alter"))
			g.supermesh = TOPO_SUPERMESH_ALTER;
		else if (!ret)
			return perr(c, map_get(c, n, "variant"),
				    "variant: '%s': expected bi or alter", v);
	}
	if (ret)
		return ret;
	return topo_gen_grid(c->t, &g, &c->defs, &src, c->err);
}

/*
 * What the generators with one required count (switch's endpoints,
 * exchange's tiles) start with: their keys, the count, their fields
 * into obj and their links over defaults.link.
 */
static int gen_fields(struct pctx *c, yaml_node_t *n, const char *what,
		      const char *const *keys, const char *required, void *obj,
		      const struct field *fields, struct topo_link_spec *link)
{
	int ret = check_map(c, n, what, keys);

	if (!ret && !map_get(c, n, required))
		return perr(c, n, "%s: required", required);
	if (!ret)
		ret = get_fields(c, n, obj, fields);
	if (!ret)
		ret = gen_link(c, n, what, link);
	return ret;
}

static const struct field switch_fields[] = {
	U32_FIELD(struct topo_gen_switch, endpoints, "endpoints", 1, UINT32_MAX),
	STR_FIELD(struct topo_gen_switch, name, "name"),
	STR_FIELD(struct topo_gen_switch, switch_name, "switch_name"),
	U32_FIELD(struct topo_gen_switch, radix, "radix", 2,
		  ICFAB_ROUTE_NONE - 1),
	U32_FIELD(struct topo_gen_switch, links_per_endpoint,
		  "links_per_endpoint", 1, 64),
	{ .key = NULL }
};

static int parse_switch(struct pctx *c, yaml_node_t *key, yaml_node_t *n)
{
	static const char *const keys[] = {
		"endpoints", "name", "switch_name", "radix",
		"links_per_endpoint", "bandwidth", "latency", "class", "switching", "multipath",
		"uplink", NULL
	};
	struct topo_gen_switch g = { .name = "ep", .switch_name = "sw" };
	struct topo_src src = src_of(c, key);
	int ret;

	ret = gen_fields(c, n, "topology.switch", keys, "endpoints", &g,
			 switch_fields, &g.link);
	if (ret)
		return ret;
	g.uplink = g.link;
	ret = get_link_block(c, n, "uplink", "topology.switch", &g.uplink);
	if (ret)
		return ret;
	return topo_gen_switch(c->t, &g, &c->defs, &src, c->err);
}

/* Up to this many tiles, mode: auto wires every pair directly. */
#define EXCHANGE_DIRECT_MAX	64

/* topology.exchange's values: the generator's, and its mode. */
struct exchange_args {
	struct topo_gen_exchange g;
	const char *mode;		/* auto, direct or crossbar */
};

static const struct field exchange_fields[] = {
	U32_FIELD(struct exchange_args, g.tiles, "tiles", 2, UINT32_MAX),
	STR_FIELD(struct exchange_args, g.name, "name"),
	STR_FIELD(struct exchange_args, mode, "mode"),
	U32_FIELD(struct exchange_args, g.links_per_pair, "links_per_pair",
		  1, 64),
	{ .key = NULL }
};

static int parse_exchange(struct pctx *c, yaml_node_t *key, yaml_node_t *n)
{
	static const char *const keys[] = {
		"tiles", "name", "mode", "links_per_pair", "bandwidth",
		"latency", "class", "switching", "multipath", NULL
	};
	struct exchange_args a = { .g.name = "tile", .mode = "auto" };
	struct topo_gen_exchange *g = &a.g;
	struct topo_src src = src_of(c, key);
	const char *mode;
	int ret;

	ret = gen_fields(c, n, "topology.exchange", keys, "tiles", &a,
			 exchange_fields, &g->link);
	if (ret)
		return ret;
	mode = a.mode;
	if (!strcmp(mode, "auto"))
		g->crossbar = g->tiles > EXCHANGE_DIRECT_MAX;
	else if (!strcmp(mode, "crossbar"))
		g->crossbar = true;
	else if (strcmp(mode, "direct"))
		return perr(c, map_get(c, n, "mode"),
			    "mode: '%s': expected auto, direct or crossbar", mode);
	if (g->crossbar && g->links_per_pair > 1)
		return perr(c, map_get(c, n, "links_per_pair"),
			    "links_per_pair: only with mode: direct");
	return topo_gen_exchange(c->t, g, &c->defs, &src, c->err);
}

static const struct field hier_fields[] = {
	U32_FIELD(struct topo_gen_hier, nodes, "nodes", 1, UINT32_MAX),
	U32_FIELD(struct topo_gen_hier, per_node, "per_node", 1, UINT32_MAX),
	STR_FIELD(struct topo_gen_hier, name, "name"),
	STR_FIELD(struct topo_gen_hier, switch_name, "switch_name"),
	U32_FIELD(struct topo_gen_hier, radix, "radix", 2, ICFAB_ROUTE_NONE - 1),
	{ .key = NULL }
};

static int parse_hier(struct pctx *c, yaml_node_t *key, yaml_node_t *n)
{
	static const char *const keys[] = {
		"nodes", "per_node", "name", "switch_name", "radix",
		"scale_up", "scale_out", "uplink", NULL
	};
	struct topo_gen_hier g = { .name = "gpu", .switch_name = "nvsw" };
	struct topo_src src = src_of(c, key);
	const char *what = "topology.hierarchical";
	int ret;

	ret = check_map(c, n, what, keys);
	if (!ret && (!map_get(c, n, "nodes") || !map_get(c, n, "per_node")))
		return perr(c, n, "nodes and per_node: required");
	if (!ret && !map_get(c, n, "scale_out") && !c->defs.link.bandwidth)
		return perr(c, n, "scale_out: required");
	if (!ret)
		ret = get_fields(c, n, &g, hier_fields);
	if (ret)
		return ret;
	g.scale_up = g.scale_out = c->defs.link;
	ret = get_link_block(c, n, "scale_up", what, &g.scale_up);
	if (!ret)
		ret = get_link_block(c, n, "scale_out", what, &g.scale_out);
	if (!ret && g.per_node > 1)
		ret = need_bandwidth(c, n, "topology.hierarchical.scale_up",
				     &g.scale_up);
	if (!ret)
		ret = need_bandwidth(c, n, "topology.hierarchical.scale_out",
				     &g.scale_out);
	g.uplink = g.scale_out;
	if (!ret)
		ret = get_link_block(c, n, "uplink", what, &g.uplink);
	if (ret)
		return ret;
	return topo_gen_hier(c->t, &g, &c->defs, &src, c->err);
}

static int parse_topology(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"switch", "ring", "mesh", "torus", "supermesh", "exchange",
		"hierarchical", NULL
	};
	yaml_node_t *key, *val;
	const char *gen;
	int ret;

	ret = check_map(c, n, "topology", keys);
	if (ret)
		return ret;
	if (n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1)
		return perr(c, n, "topology: exactly one generator (switch, ring, mesh, torus, supermesh, exchange or hierarchical)");
	key = node_at(c, n->data.mapping.pairs.start->key);
	val = node_at(c, n->data.mapping.pairs.start->value);
	gen = scalar_of(key);
	if (!strcmp(gen, "switch"))
		return parse_switch(c, key, val);
	if (!strcmp(gen, "exchange"))
		return parse_exchange(c, key, val);
	if (!strcmp(gen, "hierarchical"))
		return parse_hier(c, key, val);
	return parse_grid(c, key, val, gen);
}

/* ---- explicit nodes and links -------------------------------------- */

/* Over the defaults, once the node exists. */
static const struct field node_fields[] = {
	SIZE_FIELD(struct topo_node, mem_bytes, "memory"),
	U32_FIELD(struct topo_node, dma_engines, "dma_engines", 1, 1024),
	U32_FIELD(struct topo_node, colors, "colors", 0, UINT32_MAX),
	{ .key = NULL }
};

static int parse_node(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"name", "kind", "ports", "memory", "dma_engines", "colors", NULL
	};
	const char *name = NULL, *kind = NULL;
	struct topo_src src = src_of(c, n);
	struct topo_node *node;
	uint32_t k, ports = 0;
	int ret, id;

	ret = check_map(c, n, "nodes[]", keys);
	if (!ret)
		ret = get_required_strs(c, n, "nodes[]", "name", &name,
					"kind", &kind);
	if (ret)
		return ret;
	if (!strcmp(kind, "endpoint"))
		k = ICFAB_NODE_ENDPOINT;
	else if (!strcmp(kind, "switch"))
		k = ICFAB_NODE_SWITCH;
	else
		return perr(c, map_get(c, n, "kind"),
			    "kind: '%s': expected endpoint or switch", kind);
	if (k == ICFAB_NODE_SWITCH &&
	    (map_get(c, n, "memory") || map_get(c, n, "dma_engines")))
		return perr(c, n, "node '%s': memory and dma_engines are for endpoints", name);
	if (k == ICFAB_NODE_ENDPOINT && map_get(c, n, "colors"))
		return perr(c, map_get(c, n, "colors"),
			    "node '%s': colors are for switches", name);
	ret = get_u32(c, n, "ports", &ports, 1, ICFAB_ROUTE_NONE - 1);
	if (ret)
		return ret;
	id = topo_add_node(c->t, name, k, &c->defs, &src, c->err);
	if (id < 0)
		return id;
	node = &c->t->nodes[id];
	if (ports) {
		node->nr_ports = ports;
		node->ports_fixed = true;
	}
	return get_fields(c, n, node, node_fields);
}

/* "name" (next free port) or "name:port". */
static int link_end(struct pctx *c, yaml_node_t *link, const char *key,
		    uint32_t *node, uint32_t *port)
{
	yaml_node_t *n = map_get(c, link, key);
	struct topo_src src = src_of(c, n);
	char name[ICFAB_NAME_MAX + 16];
	const char *s = scalar_of(n), *colon, *why;
	int id, p;

	if (!n)
		return perr(c, link, "links[]: '%s' is required", key);
	if (!s || !*s || strlen(s) >= sizeof(name))
		return perr(c, n, "%s: expected a node name or name:port", key);
	strcpy(name, s);
	colon = strchr(s, ':');
	if (colon)
		name[colon - s] = '\0';
	id = topo_find_node(c->t, name);
	if (id < 0)
		return perr(c, n, "%s: no node named '%s'", key, name);
	*node = id;
	if (!colon) {
		p = topo_alloc_port(c->t, id, &src, c->err);
	} else {
		if (topo_parse_u32(colon + 1, port, &why))
			return perr(c, n, "%s: port '%s': %s", key, colon + 1, why);
		p = topo_use_port(c->t, id, *port, &src, c->err);
	}
	if (p < 0)
		return p;
	*port = p;
	return 0;
}

static int parse_link(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"from", "to", "bandwidth", "latency", "class", "switching", "multipath", "duplex",
		"state", "bw_permille", NULL
	};
	struct topo_link_spec spec = c->defs.link;
	struct topo_src src = src_of(c, n);
	uint32_t a, pa, b, pb, permille = 0;
	int ret, state = ICFAB_LINK_UP, ab, ba = -1;
	bool duplex = true;

	ret = check_map(c, n, "links[]", keys);
	if (!ret)
		ret = get_link_fields(c, n, &spec);
	if (!ret)
		ret = need_bandwidth(c, n, "links[]", &spec);
	if (!ret)
		ret = get_bool(c, n, "duplex", &duplex);
	if (!ret)
		ret = get_word(c, n, "state", &state, topo_state_parse,
			       "up, down, degraded");
	if (!ret)
		ret = get_u32(c, n, "bw_permille", &permille, 1, 999);
	if (ret)
		return ret;
	if ((state == ICFAB_LINK_DEGRADED) != !!permille)
		return perr(c, n, "links[]: bw_permille (1..999) goes with state: degraded, and only with it");
	ret = link_end(c, n, "from", &a, &pa);
	if (!ret)
		ret = link_end(c, n, "to", &b, &pb);
	if (ret)
		return ret;
	if (a == b)
		return perr(c, n, "links[]: a link from node '%s' to itself",
			    c->t->nodes[a].name);
	ab = topo_add_link(c->t, a, pa, b, pb, &spec, &src, c->err);
	if (ab < 0)
		return ab;
	if (duplex) {
		ba = topo_add_link(c->t, b, pb, a, pa, &spec, &src, c->err);
		if (ba < 0)
			return ba;
		c->t->links[ab].peer = ba;
		c->t->links[ba].peer = ab;
		topo_link_set_state(c->t, ba, state, permille);
	}
	topo_link_set_state(c->t, ab, state, permille);
	return 0;
}

static int parse_list(struct pctx *c, yaml_node_t *n, const char *what,
		      int (*one)(struct pctx *c, yaml_node_t *n))
{
	yaml_node_item_t *it;
	int ret;

	if (n->type != YAML_SEQUENCE_NODE)
		return perr(c, n, "%s: expected a list", what);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		ret = one(c, node_at(c, *it));
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- optical circuit switches -------------------------------------- */

/* A list of "node:port" (port required) into ends[nr]. */
static int ocs_ends(struct pctx *c, yaml_node_t *ocs, const char *name,
		    const char *key, uint32_t nr, struct ocs_end *ends)
{
	yaml_node_t *n = map_get(c, ocs, key);
	yaml_node_item_t *it;
	uint32_t i = 0;

	if (!n)
		return perr(c, ocs, "ocs %s: '%s' (the cabling of its %s ports) is required",
			    name, key, !strcmp(key, "in") ? "input" : "output");
	if (n->type != YAML_SEQUENCE_NODE)
		return perr(c, n, "ocs %s: %s: expected a list of node:port", name, key);
	if ((uint32_t)(n->data.sequence.items.top - n->data.sequence.items.start) != nr)
		return perr(c, n, "ocs %s: %s: %u entries, the OCS has %u ports", name,
			    key, (uint32_t)(n->data.sequence.items.top -
					    n->data.sequence.items.start), nr);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *e = node_at(c, *it);
		struct topo_src src = src_of(c, e);
		char nname[ICFAB_NAME_MAX + 16];
		const char *s = scalar_of(e), *colon, *why;
		uint32_t port;
		int id, p;

		if (!s || !(colon = strchr(s, ':')) || strlen(s) >= sizeof(nname))
			return perr(c, e, "ocs %s: %s[%u]: expected node:port", name,
				    key, i);
		strcpy(nname, s);
		nname[colon - s] = '\0';
		id = topo_find_node(c->t, nname);
		if (id < 0)
			return perr(c, e, "ocs %s: %s[%u]: no node named '%s'", name,
				    key, i, nname);
		if (topo_parse_u32(colon + 1, &port, &why))
			return perr(c, e, "ocs %s: %s[%u]: port '%s': %s", name, key,
				    i, colon + 1, why);
		p = topo_use_port(c->t, id, port, &src, c->err);
		if (p < 0)
			return p;
		ends[i] = (struct ocs_end){ .node = id, .port = port };
	}
	return 0;
}

static int ocs_perm(struct pctx *c, yaml_node_t *n, const char *name,
		    uint32_t nr, uint32_t *perm)
{
	yaml_node_item_t *it;
	uint32_t i = 0;
	const char *why;

	if (n->type != YAML_SEQUENCE_NODE)
		return perr(c, n, "ocs %s: permutation: expected a list of output ports",
			    name);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *e = node_at(c, *it);

		if (i == nr)
			return perr(c, n, "ocs %s: the permutation has more than %u entries, the OCS has %u ports",
				    name, nr, nr);
		if (!scalar_of(e) || topo_parse_u32(scalar_of(e), &perm[i], &why))
			return perr(c, e, "ocs %s: permutation[%u]: expected an output port",
				    name, i);
	}
	if (i != nr)
		return perr(c, n, "ocs %s: the permutation has %u entries, the OCS has %u ports",
			    name, i, nr);
	return 0;
}

/*
 * One OCS: its ports are cabled to node ports (in[i], out[j]); its
 * permutation makes the duplex class-ocs links in[i] <-> out[perm[i]].
 */
static int parse_ocs(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"name", "ports", "delay", "policy", "permutation", "in", "out",
		"bandwidth", "latency", NULL
	};
	struct topo_link_spec spec = c->defs.link;
	struct topo_src src = src_of(c, n);
	struct ocs_end *in = NULL, *out = NULL;
	struct ocs_desc d = { .policy = OCS_POLICY_HOLD };
	const char *name = NULL;
	uint32_t *perm = NULL, ports = 0, i;
	struct topo_err oerr = { "" };
	yaml_node_t *pn;
	struct ocs *o;
	int ret, policy = OCS_POLICY_HOLD;

	ret = check_map(c, n, "ocs[]", keys);
	if (!ret)
		ret = get_str(c, n, "name", &name);
	if (!ret && !name)
		return perr(c, n, "ocs[]: name is required");
	if (!ret && (strlen(name) >= ICFAB_NAME_MAX || strchr(name, ' ')))
		return perr(c, map_get(c, n, "name"),
			    "ocs[]: name '%s': 1..%d characters without spaces",
			    name, ICFAB_NAME_MAX - 1);
	if (!ret && topo_find_ocs(c->t, name))
		return perr(c, map_get(c, n, "name"), "ocs %s: defined twice", name);
	if (!ret && !map_get(c, n, "ports"))
		return perr(c, n, "ocs %s: ports is required", name);
	if (!ret)
		ret = get_u32(c, n, "ports", &ports, 1, 65536);
	if (!ret)
		ret = get_time(c, n, "delay", &d.reconfig_delay_ps);
	if (!ret)
		ret = get_word(c, n, "policy", &policy, ocs_policy_parse,
			       "hold, fail");
	if (!ret)
		ret = get_bw(c, n, "bandwidth", &spec.bandwidth);
	if (!ret)
		ret = get_time(c, n, "latency", &spec.latency_ps);
	if (!ret)
		ret = need_bandwidth(c, n, "ocs[]", &spec);
	if (ret)
		return ret;
	spec.class = ICFAB_LINK_CLASS_OCS;

	in = calloc(ports, sizeof(*in));
	out = calloc(ports, sizeof(*out));
	perm = calloc(ports, sizeof(*perm));
	if (!in || !out || !perm) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ports; i++)
		perm[i] = i;
	pn = map_get(c, n, "permutation");
	if (pn && (ret = ocs_perm(c, pn, name, ports, perm)))
		goto out;
	ret = ocs_ends(c, n, name, "in", ports, in);
	if (!ret)
		ret = ocs_ends(c, n, name, "out", ports, out);
	if (ret)
		goto out;

	d.name = name;
	d.nr_ports = ports;
	d.perm = perm;
	d.policy = policy;
	d.in = in;
	d.out = out;
	ret = ocs_new(&d, &o, &oerr);
	if (ret) {
		ret = perr(c, pn && strstr(oerr.msg, "->") ? pn : n, "%s", oerr.msg);
		goto out;
	}
	ret = topo_add_ocs(c->t, o);
	if (ret) {
		ocs_free(o);
		goto out;
	}
	for (i = 0; i < ports; i++) {
		const struct ocs_end *a = &in[i], *b = &out[perm[i]];
		int ab, ba;

		if (a->node == b->node) {
			ret = perr(c, n, "ocs %s: port %u joins node '%s' to itself",
				   name, i, c->t->nodes[a->node].name);
			goto out;
		}
		ab = topo_add_link(c->t, a->node, a->port, b->node, b->port,
				   &spec, &src, c->err);
		if (ab < 0) {
			ret = ab;
			goto out;
		}
		ba = topo_add_link(c->t, b->node, b->port, a->node, a->port,
				   &spec, &src, c->err);
		if (ba < 0) {
			ret = ba;
			goto out;
		}
		c->t->links[ab].peer = ba;
		c->t->links[ba].peer = ab;
	}
out:
	free(in);
	free(out);
	free(perm);
	return ret;
}

/* ---- memory tiers -------------------------------------------------- */

/* tier.shared_by: "all" (every endpoint) or a list of endpoint names. */
static int tier_shared(struct pctx *c, yaml_node_t *n, uint32_t idx,
		       const char *kind)
{
	yaml_node_item_t *it;
	uint32_t i;
	int id, ret;

	if (scalar_of(n) && !strcmp(scalar_of(n), "all")) {
		for (i = 0; i < c->t->nr_nodes; i++) {
			if (c->t->nodes[i].kind != ICFAB_NODE_ENDPOINT)
				continue;
			ret = topo_share_tier(c->t, i, idx);
			if (ret == -EEXIST)
				return perr(c, n, "tiers[]: shared_by: endpoint '%s' already has a %s tier",
					    c->t->nodes[i].name, kind);
			if (ret)
				return perr(c, n, "tiers[]: shared_by: %s", strerror(-ret));
		}
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return perr(c, n, "tiers[]: shared_by: expected all or a list of endpoints");
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node_at(c, *it);
		const char *name = scalar_of(e);

		id = name ? topo_find_node(c->t, name) : -1;
		if (id < 0)
			return perr(c, e, "tiers[]: shared_by: no node named '%s'",
				    name ? name : "");
		ret = topo_share_tier(c->t, id, idx);
		if (ret == -EINVAL)
			return perr(c, e, "tiers[]: shared_by: '%s' is a switch; only endpoints have tiers",
				    name);
		if (ret)
			return perr(c, e, "tiers[]: shared_by: endpoint '%s' already has a %s tier",
				    name, kind);
	}
	return 0;
}

/*
 * One tier: {kind, at, capacity, bandwidth, latency, energy, shared_by}.
 * at names its home endpoint, or is "each": every endpoint gets one.
 */
static const struct field tier_fields[] = {
	SIZE_FIELD(struct topo_tier, bytes, "capacity"),
	BW_FIELD(struct topo_tier, bandwidth, "bandwidth"),
	TIME_FIELD(struct topo_tier, latency_ps, "latency"),
	ENERGY_FIELD(struct topo_tier, fj_per_bit, "energy"),
	{ .key = NULL }
};

static int parse_tier(struct pctx *c, yaml_node_t *n)
{
	static const char *const keys[] = {
		"kind", "at", "capacity", "bandwidth", "latency", "energy",
		"shared_by", NULL
	};
	struct topo_tier tier = { .src = src_of(c, n) };
	const char *kind = NULL, *at = NULL;
	yaml_node_t *shared;
	uint32_t i;
	int k, ret, id = -1;

	ret = check_map(c, n, "tiers[]", keys);
	if (!ret)
		ret = get_required_strs(c, n, "tiers[]", "kind", &kind, "at", &at);
	if (ret)
		return ret;
	k = topo_tier_parse(kind);
	if (k < 0)
		return perr(c, map_get(c, n, "kind"),
			    "tiers[]: kind: '%s': expected sram, hbm or ddr", kind);
	tier.kind = k;
	ret = get_fields(c, n, &tier, tier_fields);
	if (ret)
		return ret;
	if (!tier.bytes)
		return perr(c, map_get(c, n, "capacity") ?: n,
			    "tiers[]: a %s tier needs a capacity above 0", kind);
	if (!tier.bandwidth)
		return perr(c, map_get(c, n, "bandwidth") ?: n,
			    "tiers[]: a %s tier needs a bandwidth above 0", kind);
	shared = map_get(c, n, "shared_by");
	if (strcmp(at, "each")) {
		id = topo_find_node(c->t, at);
		if (id < 0)
			return perr(c, map_get(c, n, "at"),
				    "tiers[]: at: no node named '%s'", at);
	} else if (shared) {
		return perr(c, shared, "tiers[]: shared_by goes with a named home, not at: each");
	}
	for (i = 0; i < c->t->nr_nodes; i++) {
		if (id >= 0 ? i != (uint32_t)id :
			      c->t->nodes[i].kind != ICFAB_NODE_ENDPOINT)
			continue;
		tier.home = i;
		ret = topo_add_tier(c->t, &tier);
		if (ret == -EINVAL)
			return perr(c, map_get(c, n, "at"),
				    "tiers[]: at: '%s' is a switch; only endpoints have tiers",
				    c->t->nodes[i].name);
		if (ret == -EEXIST)
			return perr(c, n, "tiers[]: endpoint '%s' already has a %s tier",
				    c->t->nodes[i].name, kind);
		if (ret < 0)
			return perr(c, n, "tiers[]: %s", strerror(-ret));
		if (shared) {
			ret = tier_shared(c, shared, ret, kind);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int parse_routing(struct pctx *c, yaml_node_t *n)
{
	const char *s = scalar_of(n);
	int r = s ? topo_routing_parse(s) : -EINVAL;

	if (r < 0)
		return perr(c, n, "routing: '%s': expected auto, dor, shortest or updown",
			    s ? s : "");
	if (r == TOPO_ROUTING_DOR && !c->t->grid)
		return perr(c, n, "routing: dor needs a ring, mesh, torus or supermesh generator");
	c->t->routing = r;
	return 0;
}

/* ecmp: none, flow or spray: next-hop sets over equal-cost neighbours. */
static int parse_ecmp(struct pctx *c, yaml_node_t *n)
{
	const char *s = scalar_of(n);
	int m = s ? topo_multipath_parse(s) : -EINVAL;

	if (m < 0)
		return perr(c, n, "ecmp: '%s': expected none, flow or spray",
			    s ? s : "");
	c->t->ecmp = (uint32_t)m;
	c->t->ecmp_src = src_of(c, n);
	return 0;
}

static int parse_root(struct pctx *c, yaml_node_t *root)
{
	static const char *const keys[] = {
		"fabric", "defaults", "topology", "nodes", "links", "ocs",
		"tiers", "routing", "ecmp", NULL
	};
	/*
	 * In dependency order, whatever the order in the file; tiers after
	 * every link, as tier ports are numbered after them. A list's
	 * items go one by one to item.
	 */
	static const struct {
		const char *key;
		int (*parse)(struct pctx *c, yaml_node_t *n);
		int (*item)(struct pctx *c, yaml_node_t *n);
	} sections[] = {
		{ "fabric", parse_fabric, NULL },
		{ "defaults", parse_defaults, NULL },
		{ "topology", parse_topology, NULL },
		{ "nodes", NULL, parse_node },
		{ "links", NULL, parse_link },
		{ "ocs", NULL, parse_ocs },
		{ "tiers", NULL, parse_tier },
		{ "routing", parse_routing, NULL },
		{ "ecmp", parse_ecmp, NULL },
	};
	yaml_node_t *n;
	size_t i;
	int ret;

	ret = check_map(c, root, "the topology file", keys);
	for (i = 0; !ret && i < sizeof(sections) / sizeof(sections[0]); i++) {
		n = map_get(c, root, sections[i].key);
		if (n && sections[i].item)
			ret = parse_list(c, n, sections[i].key, sections[i].item);
		else if (n)
			ret = sections[i].parse(c, n);
	}
	if (ret)
		return ret;
	if (!c->t->nr_nodes)
		return perr(c, root, "no nodes: give a topology: generator or a nodes: list");
	return 0;
}

static int yaml_error(struct pctx *c, yaml_parser_t *p)
{
	struct topo_src s = { c->file, p->problem_mark.line + 1 };

	if (p->error == YAML_MEMORY_ERROR)
		return -ENOMEM;
	return topo_errf(c->err, &s, "YAML syntax: %s%s%s",
			 p->problem ? p->problem : "error",
			 p->context ? " " : "", p->context ? p->context : "");
}

int topo_load_string(const char *text, size_t len, const char *file,
		     struct topo **tp, struct topo_err *err)
{
	struct pctx c = { .err = err };
	yaml_parser_t parser;
	yaml_node_t *root;
	int ret;

	c.t = topo_new();
	if (!c.t)
		return -ENOMEM;
	topo_defaults_init(&c.defs);
	c.file = topo_intern_file(c.t, file);
	c.t->src.file = c.file;
	c.t->src.line = 1;
	if (!c.file || !yaml_parser_initialize(&parser)) {
		topo_free(c.t);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &c.doc)) {
		ret = yaml_error(&c, &parser);
		goto out_parser;
	}
	root = yaml_document_get_root_node(&c.doc);
	if (!root) {
		struct topo_src s = { c.file, 1 };

		ret = topo_errf(err, &s, "empty topology file");
	} else {
		ret = parse_root(&c, root);
	}
	yaml_document_delete(&c.doc);
	if (ret)
		goto out_parser;

	/* A second document would be silently ignored: refuse it. */
	if (!yaml_parser_load(&parser, &c.doc)) {
		ret = yaml_error(&c, &parser);
		goto out_parser;
	}
	root = yaml_document_get_root_node(&c.doc);
	if (root)
		ret = perr(&c, root, "only one YAML document per topology file");
	yaml_document_delete(&c.doc);
out_parser:
	yaml_parser_delete(&parser);
	if (ret) {
		topo_free(c.t);
		return ret;
	}
	*tp = c.t;
	return 0;
}

int topo_load_file(const char *path, struct topo **tp, struct topo_err *err)
{
	struct topo_src s = { path, 0 };
	size_t len = 0, cap = 0, n;
	char *buf = NULL, *nbuf;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		topo_errf(err, &s, "cannot open: %s", strerror(-ret));
		return ret;
	}
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 16384;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	if (ferror(f)) {
		topo_errf(err, &s, "read error");
		ret = -EIO;
	} else {
		ret = topo_load_string(buf, len, path, tp, err);
	}
	fclose(f);
	free(buf);
	return ret;
}
