// SPDX-License-Identifier: GPL-2.0
/*
 * The one JSON writer of icfab's userspace: icfabctl -j and icfabd --dump
 * --json write through it, so that escaping and layout are the same
 * everywhere. Compact, one document per json_init(); json_break() puts
 * the next value on a line of its own, for documents people also read.
 */
#include <inttypes.h>
#include <string.h>

#include <icfab/json.h>

void json_init(struct icfab_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

static void json_quoted(FILE *f, const char *s)
{
	const unsigned char *p;

	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

void json_break(struct icfab_json *j)
{
	j->line_break = true;
}

/* Comma, line break and key before a value at the current level. */
static void json_member(struct icfab_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (j->line_break)
		fputc('\n', j->f);
	j->line_break = false;
	if (key) {
		json_quoted(j->f, key);
		fputc(':', j->f);
	}
}

static void json_open(struct icfab_json *j, const char *key, char c)
{
	json_member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < (int)(sizeof(j->need_comma) / sizeof(j->need_comma[0])))
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct icfab_json *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		fputc('\n', j->f);
}

void json_begin_object(struct icfab_json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_end_object(struct icfab_json *j)
{
	json_close(j, '}');
}

void json_begin_array(struct icfab_json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_end_array(struct icfab_json *j)
{
	json_close(j, ']');
}

void json_u64(struct icfab_json *j, const char *key, uint64_t v)
{
	json_member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_s64(struct icfab_json *j, const char *key, int64_t v)
{
	json_member(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void json_fixed(struct icfab_json *j, const char *key, uint64_t v,
		unsigned int decimals)
{
	uint64_t scale = 1;

	for (unsigned int i = 0; i < decimals; i++)
		scale *= 10;
	json_member(j, key);
	fprintf(j->f, "%" PRIu64 ".%0*" PRIu64, v / scale, (int)decimals,
		v % scale);
}

void json_string(struct icfab_json *j, const char *key, const char *s)
{
	json_member(j, key);
	json_quoted(j->f, s);
}

void json_bool(struct icfab_json *j, const char *key, bool v)
{
	json_member(j, key);
	fputs(v ? "true" : "false", j->f);
}

/* Bytes as a string of hex digits. */
void json_hex(struct icfab_json *j, const char *key, const void *data,
	      size_t len)
{
	const unsigned char *p = data;
	size_t i;

	json_member(j, key);
	fputc('"', j->f);
	for (i = 0; i < len; i++)
		fprintf(j->f, "%02x", p[i]);
	fputc('"', j->f);
}
